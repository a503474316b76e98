"""No leaks: every per-pod and per-node structure returns to its baseline size once its pods and nodes are gone.

Churn of every kind of pod the scheduler keeps state for: bound, unschedulable, unparsable, refused by the
fail-closed guard, finished (Succeeded) instead of deleted, deleted while its bind is in flight, and removed
by a resync (a watch gap: no DELETED event). The baseline is `Scheduler.state_sizes()` with the nodes alone.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.adapters.memory import MemoryCluster
from scheduler.core import event_handlers
from scheduler.core.api import BindOutcomeUnknownError
from scheduler.core.unsupported import Finding
from scheduler.framework.types import PodInfo
from scheduler.testing import SchedulerHarness, make_node, make_pod

JSON = dict[str, Any]
REFUSE_LABEL = "test.pyscheduler.io/refuse"


def _refuse_labelled(pod: PodInfo, upstream: Any, implemented: Any) -> list[Finding]:
    """A fail-closed guard that refuses pods by label, so the refusal path is exercised whichever plugins exist."""
    if REFUSE_LABEL in pod.labels:
        return [Finding("testFeature", "TestPlugin", "metadata.labels")]
    return []


@pytest.fixture(autouse=True)
def label_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_handlers, "find_unsupported", _refuse_labelled)


def state_sizes(env: SchedulerHarness) -> dict[str, int]:
    """state_sizes() as the next cycle sees them (the snapshot catches up with the cache every cycle)."""
    env.scheduler.cache.update_snapshot(env.scheduler.snapshot)
    return env.scheduler.state_sizes()


def _round(env: SchedulerHarness, r: int) -> list[JSON]:
    """One round of pods of every kind; returns the objects."""
    pods: list[JSON] = []
    for i in range(6):
        pods.append(make_pod(f"ok-{r}-{i}").uid(f"ok-{r}-{i}").req(cpu="100m").obj())
    for i in range(3):
        pods.append(make_pod(f"big-{r}-{i}").uid(f"big-{r}-{i}").req(cpu="64").obj())
    for i in range(2):
        pods.append(make_pod(f"bad-{r}-{i}").uid(f"bad-{r}-{i}").req(cpu="lots").obj())
    for i in range(2):
        pods.append(make_pod(f"refused-{r}-{i}").uid(f"refused-{r}-{i}").label(REFUSE_LABEL, "yes").obj())
    for obj in pods:
        env.cluster.apply_pod(obj)
    return pods


async def test_churn_of_every_kind_of_pod_returns_to_baseline() -> None:
    """Create and delete rounds of bound, unschedulable, unparsable and refused pods: every size is back."""
    env = SchedulerHarness(seed=1)
    for n in ("n1", "n2", "n3"):
        env.cluster.apply_node(make_node(n).capacity(cpu="2").zone(f"z{n}").obj())
    await env.settle()
    baseline = state_sizes(env)
    assert baseline["cache_tree_nodes"] == 3 and baseline["pending"] == 0
    for r in range(4):
        pods = _round(env, r)
        await env.settle()
        sizes = state_sizes(env)
        assert sizes["cache_pods"] == 6 and sizes["pending"] == 3  # the big ones wait for room
        assert sizes["parse_failures"] == 2 and sizes["unsupported"] == 2 and sizes["last_failure"] == 7
        for i, obj in enumerate(pods):
            uid = obj["metadata"]["uid"]
            if i % 4 == 0 and env.cluster.node_of(uid):  # some bound pods finish instead of being deleted
                done = dict(obj, status={"phase": "Succeeded"})
                env.cluster.apply_pod(done)
            env.cluster.delete_pod(uid)
        await env.settle()
        assert state_sizes(env) == baseline, f"round {r}"
        assert env.cluster.conditions == {}, "the in-memory API forgets deleted pods' conditions"


async def test_nodes_and_their_pods_leave_no_placeholder() -> None:
    """A node deleted before its pods (placeholder NodeInfo), then the pods: back to the empty baseline."""
    env = SchedulerHarness(seed=1)
    baseline = state_sizes(env)
    for round_ in range(3):
        names = [f"n{round_}-{i}" for i in range(3)]
        for i, n in enumerate(names):
            env.cluster.apply_node(make_node(n).zone(f"zone-{i}").image(f"img-{n}", 1000).obj())
        pods = [make_pod(f"p{round_}-{i}").uid(f"p{round_}-{i}").req(cpu="100m").obj() for i in range(6)]
        for obj in pods:
            env.cluster.apply_pod(obj)
        await env.settle()
        assert state_sizes(env)["cache_pods"] == 6
        for n in names:
            env.cluster.delete_node(n)
        assert state_sizes(env)["cache_node_infos"] > 0, "placeholders hold the pods of deleted nodes"
        for obj in pods:
            env.cluster.delete_pod(obj["metadata"]["uid"])
        await env.settle()
        assert state_sizes(env) == baseline


class GatedBindCluster(MemoryCluster):
    """Binds wait until `release` is set, so a test can delete a pod while its bind is in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.started = asyncio.Event()

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        self.started.set()
        await self.release.wait()
        await super().bind(pod, node_name)


async def test_pod_deleted_while_binding_leaves_nothing() -> None:
    """Deleted during its bind (the bind then gets 404): no queue, cache or per-pod entry survives."""
    cluster = GatedBindCluster()
    env = SchedulerHarness(cluster=cluster, seed=1)
    env.cluster.apply_node(make_node("n1").obj())
    baseline = state_sizes(env)
    stop = asyncio.Event()
    loop_task = asyncio.create_task(env.scheduler.run(stop))
    obj = make_pod("p").uid("p").obj()
    env.cluster.apply_pod(obj)
    await asyncio.wait_for(cluster.started.wait(), 5)
    assert env.scheduler.cache.is_assumed("p")
    env.cluster.delete_pod("p")
    cluster.release.set()
    await asyncio.wait_for(env.scheduler.drain(), 5)
    stop.set()
    await asyncio.wait_for(loop_task, 5)
    assert cluster.bindings == []
    assert state_sizes(env) == baseline


async def test_pods_gone_during_a_watch_gap_are_forgotten_by_resync() -> None:
    """Pods deleted with no DELETED event (a watch gap): the next resync drops every trace of them."""
    env = SchedulerHarness(seed=1)
    node = make_node("n1").capacity(cpu="1").obj()
    env.cluster.apply_node(node)
    await env.settle()
    baseline = state_sizes(env)
    pods = [
        make_pod("bound").uid("bound").req(cpu="500m").obj(),
        make_pod("big").uid("big").req(cpu="4").obj(),
        make_pod("bad").uid("bad").req(cpu="lots").obj(),
        make_pod("refused").uid("refused").label(REFUSE_LABEL, "yes").obj(),
    ]
    for obj in pods:
        env.cluster.apply_pod(obj)
    await env.settle()
    assert state_sizes(env) != baseline
    env.cluster.pods.clear()  # gone from the API; the watch never said so
    env.scheduler.events.resync([node], [])
    await env.settle()
    assert state_sizes(env) == baseline


class UnansweredBindCluster(MemoryCluster):
    """Every bind gets no answer (and does not land)."""

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        raise BindOutcomeUnknownError("connection reset by peer")


async def test_pod_deleted_after_an_unanswered_bind_leaves_nothing() -> None:
    """The attempt kept to recognise a late-landing bind goes with the pod."""
    env = SchedulerHarness(cluster=UnansweredBindCluster(), seed=1)
    env.cluster.apply_node(make_node("n1").obj())
    await env.settle()
    baseline = state_sizes(env)
    env.cluster.apply_pod(make_pod("p").uid("p").obj())
    await env.scheduler.run_until_idle()
    assert state_sizes(env)["unconfirmed_binds"] == 1
    env.cluster.delete_pod("p")
    await env.settle()
    assert state_sizes(env) == baseline
