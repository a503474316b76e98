"""Fail closed: pods using fields pyscheduler does not evaluate are never bound, and are told why.

The list is empty since DynamicResources landed (spec.resourceClaims was its last entry), so the guard's
machinery is exercised with an entry of the test's own (an upstream plugin pyscheduler lacks), installed in
place of the list; and a pod with resource claims is shown to be no longer refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.adapters.memory import MemoryCluster
from scheduler.config.load import load_config
from scheduler.core import unsupported
from scheduler.core.clock import FakeClock
from scheduler.core.explain import explain_pod
from scheduler.core.profile import build_scheduler
from scheduler.core.unsupported import UNSUPPORTED, UnsupportedFeature, find_unsupported
from scheduler.framework.observer import Observer
from scheduler.framework.types import PodInfo
from scheduler.plugins.registry import REGISTRY, implements, parse_plugin_args
from scheduler.testing import make_node, make_pod

JSON = dict[str, Any]
LACKING = "GangScheduling"  # an upstream plugin pyscheduler does not have
FIELD = "metadata.labels[gang]"


def _uses_gang(pod: PodInfo) -> str | None:
    return FIELD if "gang" in pod.labels else None


ENTRY = UnsupportedFeature("gang", LACKING, _uses_gang)


@pytest.fixture
def guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The guard refuses pods labelled `gang` for want of GangScheduling."""
    assert LACKING not in REGISTRY
    monkeypatch.setattr(unsupported, "UNSUPPORTED", (ENTRY,))
    yield


class CountingObserver(Observer):
    def __init__(self) -> None:
        self.unsupported: list[str] = []

    def unsupported_pod(self, feature: str) -> None:
        self.unsupported.append(feature)


def env(config: JSON | None = None) -> tuple[MemoryCluster, Any, FakeClock, CountingObserver]:
    cluster = MemoryCluster()
    clock = FakeClock()
    observer = CountingObserver()
    cfg = load_config(config, REGISTRY.keys(), parse_plugin_args, implements=implements) if config else None
    sched = build_scheduler(cluster, cfg, clock=clock, seed=0, observer=observer)
    cluster.attach(sched)
    cluster.apply_node(make_node("n1").obj())
    return cluster, sched, clock, observer


def test_no_default_plugin_is_missing_any_more() -> None:
    """Every entry's plugin is missing from pyscheduler: none is left since DynamicResources landed."""
    assert UNSUPPORTED == ()


async def test_a_pod_with_resource_claims_is_no_longer_refused() -> None:
    """spec.resourceClaims goes to DynamicResources: waiting for its claim (PreEnqueue), never refused."""
    cluster, sched, clock, observer = env()
    obj = make_pod("p").resource_claim("gpu").obj()
    cluster.apply_pod(obj)
    await sched.run_until_idle(advance=clock.advance_to)
    assert sched.unsupported == {} and observer.unsupported == []
    [gated] = sched.queue.gated_pods()
    assert (gated.gating_plugin, gated.gating_message) == (
        "DynamicResources",
        'pod "default/p": ResourceClaim not created yet',
    )


@pytest.mark.usefixtures("guard")
async def test_pod_using_an_unsupported_field_is_not_bound() -> None:
    """Not bound; FailedScheduling naming the field and plugin; PodScheduled=False Unschedulable; counted."""
    cluster, sched, clock, observer = env()
    obj = make_pod("p").label("gang", "a").obj()
    cluster.apply_pod(obj)
    await sched.run_until_idle(advance=clock.advance_to)
    uid = obj["metadata"]["uid"]
    assert cluster.node_of(uid) is None
    assert cluster.bindings == []
    [event] = [e for e in cluster.events if e.name == "p"]
    assert (event.type, event.reason, event.action) == ("Warning", "FailedScheduling", "Scheduling")
    assert event.note.startswith(f"pyscheduler does not support {FIELD} (upstream plugin {LACKING}) yet")
    cond = cluster.conditions[uid]
    assert (cond.type, cond.status, cond.reason) == ("PodScheduled", "False", "Unschedulable")
    assert cond.message == event.note
    assert observer.unsupported == ["gang"]
    assert sched.attempts == 0  # never entered a scheduling cycle
    assert [p.key for p in sched.unsupported_pods()] == ["default/p"]


@pytest.mark.usefixtures("guard")
async def test_report_is_written_once_and_state_is_cleaned_on_delete() -> None:
    """An identical re-delivery (resync, no-op update) writes nothing again; deleting forgets the pod."""
    cluster, sched, _, observer = env()
    obj = make_pod("p").label("gang", "a").obj()
    cluster.apply_pod(obj)
    cluster.apply_pod(obj)
    sched.events.resync([], [obj])
    assert len(cluster.events) == 1 and observer.unsupported == ["gang"]
    cluster.delete_pod(obj["metadata"]["uid"])
    assert sched.unsupported == {} and sched.last_failure == {}


@pytest.mark.usefixtures("guard")
async def test_pod_updated_to_drop_the_field_is_scheduled() -> None:
    """The guard re-checks on update: without the field the pod enters the queue and binds."""
    cluster, sched, clock, _ = env()
    obj = make_pod("p").label("gang", "a").obj()
    cluster.apply_pod(obj)
    await sched.run_until_idle(advance=clock.advance_to)
    del obj["metadata"]["labels"]["gang"]
    cluster.apply_pod(obj)
    await sched.run_until_idle(advance=clock.advance_to)
    assert cluster.node_of(obj["metadata"]["uid"]) == "n1"
    assert sched.unsupported == {}


@pytest.mark.usefixtures("guard")
async def test_profile_disabling_the_upstream_plugin_opts_out() -> None:
    """kube-scheduler would not evaluate the field with the plugin disabled: neither do we."""
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "pyscheduler", "plugins": {"multiPoint": {"disabled": [{"name": LACKING}]}}}],
    }
    cluster, sched, clock, observer = env(config)
    obj = make_pod("p").label("gang", "a").obj()
    cluster.apply_pod(obj)
    await sched.run_until_idle(advance=clock.advance_to)
    assert cluster.node_of(obj["metadata"]["uid"]) == "n1"
    assert observer.unsupported == []


def test_find_unsupported_skips_implemented_plugins() -> None:
    """An entry stops applying once its plugin is implemented and enabled."""
    pod = make_pod("p").label("gang", "a").info()
    assert find_unsupported(pod, {LACKING}, set(), (ENTRY,))[0].field == FIELD
    assert find_unsupported(pod, {LACKING}, {LACKING}, (ENTRY,)) == []
    assert find_unsupported(pod, set(), set(), (ENTRY,)) == []


@pytest.mark.usefixtures("guard")
async def test_explain_reports_the_refusal() -> None:
    """explain/simulate --explain show the guard's message and no best node."""
    _, sched, _, _ = env()
    pod = make_pod("p").label("gang", "a").info()
    expl = explain_pod(sched.profiles["pyscheduler"], pod, sched.cache.fresh_snapshot())
    assert expl.unsupported == [f"{FIELD} (upstream plugin {LACKING})"]
    assert expl.message.startswith(f"pyscheduler does not support {FIELD}")
    assert expl.best == []
    assert [v.node for v in expl.nodes if v.feasible] == ["n1"]
