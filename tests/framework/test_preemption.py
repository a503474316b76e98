"""Preemption machinery (upstream framework/preemption): PDB violation (util_test.go
TestFilterVictimsWithPDBViolation), start times and importance (TestMoreImportantVictim), and the asynchronous
Executor (executor_test.go: API calls per victim, the last victim, failures, in-memory preemption, lower-priority
nominations), on a real Scheduler over an in-memory cluster whose API calls are recorded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.adapters.memory import MemoryCluster
from scheduler.backend.queue.nominator import NominatingInfo
from scheduler.core.profile import build_scheduler
from scheduler.core.scheduler import Scheduler
from scheduler.framework.observer import Observer
from scheduler.framework.preemption import (
    Candidate,
    Executor,
    PreemptionHandle,
    filter_victims_with_pdb_violation,
    importance_key,
    start_times,
)
from scheduler.framework.runtime import WaitingPod
from scheduler.framework.types import PodInfo
from scheduler.testing import make_node, make_pod

JSON = dict[str, Any]


def _pod(name: str, **labels: str) -> PodInfo:
    return make_pod(name).uid(name).labels(**labels).info()


def _pdb(selector: JSON | None, allowed: int, disrupted: Sequence[str] = (), namespace: str = "default") -> JSON:
    return {
        "metadata": {"name": "pdb", "namespace": namespace},
        "spec": {"selector": selector},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": {p: "t" for p in disrupted}},
    }


FOO = {"matchLabels": {"app": "foo"}}


@pytest.mark.parametrize(
    ("victims", "pdbs", "violating", "non_violating"),
    [
        pytest.param([], [], [], [], id="no victims, no PDBs"),
        pytest.param([_pod("p1", app="foo")], [_pdb({"matchLabels": {"app": "bar"}}, 0)], [], ["p1"], id="no match"),
        pytest.param([_pod("p1", app="foo")], [_pdb(FOO, 1)], [], ["p1"], id="adequate DisruptionsAllowed"),
        pytest.param([_pod("p1", app="foo")], [_pdb(FOO, 0)], ["p1"], [], id="no DisruptionsAllowed"),
        pytest.param(
            [_pod("p1", app="foo"), _pod("p2", app="foo")],
            [_pdb(FOO, 1)],
            ["p2"],
            ["p1"],
            id="multiple victims matching the same PDB: the budget is spent in order",
        ),
        pytest.param([_pod("p1", app="foo")], [_pdb(FOO, 0, ["p1"])], [], ["p1"], id="pod in DisruptedPods is ignored"),
        pytest.param([_pod("p1", app="foo")], [_pdb({}, 0)], [], ["p1"], id="PDB with empty selector matches nothing"),
        pytest.param([_pod("p1", app="foo")], [_pdb(None, 0)], [], ["p1"], id="PDB with no selector matches nothing"),
        pytest.param(
            [_pod("p1", app="foo")], [_pdb(FOO, 0, namespace="other")], [], ["p1"], id="PDB of another namespace"
        ),
        pytest.param(
            [_pod("p1", app="foo", tier="backend")],
            [_pdb(FOO, 1), _pdb({"matchLabels": {"tier": "backend"}}, 0)],
            ["p1"],
            [],
            id="multiple PDBs",
        ),
        pytest.param([_pod("p1")], [_pdb({}, 0)], [], ["p1"], id="a pod without labels never violates"),
        pytest.param(
            [_pod("p1", app="foo")],
            [_pdb({"matchExpressions": [{"key": "app", "operator": "Bogus"}]}, 0)],
            [],
            ["p1"],
            id="invalid selector matches nothing",
        ),
    ],
)
def test_filter_victims_with_pdb_violation(
    victims: list[PodInfo], pdbs: list[JSON], violating: list[str], non_violating: list[str]
) -> None:
    got_violating, got_non = filter_victims_with_pdb_violation(victims, pdbs)
    assert [(v.name, n) for v, n in got_violating] == [(name, 1) for name in violating]
    assert [v.name for v in got_non] == non_violating


def test_importance_priority_then_start_time_then_now_in_node_order() -> None:
    """MoreImportantVictim for pods: higher priority, then earlier start; pods that have not started count as
    starting now, in node order (upstream reads the clock once per victim)."""
    old = make_pod("old").uid("old").priority(5).start_time("2020-01-01T00:00:00Z").info()
    new = make_pod("new").uid("new").priority(5).start_time("2024-01-01T00:00:00Z").info()
    first, second = make_pod("a").uid("a").priority(5).info(), make_pod("b").uid("b").priority(5).info()
    high = make_pod("high").uid("high").priority(9).info()
    pods = [second, new, first, old, high]
    starts = start_times(pods, now_ns=2_000_000_000 * 10**9)
    ranked = sorted(pods, key=lambda p: importance_key(p, starts))
    assert [p.name for p in ranked] == ["high", "old", "new", "b", "a"]


# --------------------------------------------------------------------------------------------- Executor


class RecordingCluster(MemoryCluster):
    """MemoryCluster that records the preemption API calls in order and can fail some of them."""

    def __init__(self, fail_delete: Sequence[str] = ()) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []
        self.fail_delete = set(fail_delete)

    async def patch_disruption_target(self, victim: PodInfo, message: str) -> bool:
        self.calls.append(("condition", victim.name))
        return await super().patch_disruption_target(victim, message)

    async def delete_preempted_pod(self, victim: PodInfo) -> bool:
        self.calls.append(("delete", victim.name))
        if victim.name in self.fail_delete:
            raise RuntimeError(f"injected failure deleting {victim.name}")
        return await super().delete_preempted_pod(victim)

    async def clear_nominated_node_name(self, pod: PodInfo) -> None:
        self.calls.append(("clear-nomination", pod.name))
        await super().clear_nominated_node_name(pod)


class Observed(Observer):
    """Records the preemption metrics hooks."""

    def __init__(self) -> None:
        self.victims: list[int] = []
        self.goroutines: list[str] = []

    def preemption_victims(self, count: int) -> None:
        self.victims.append(count)

    def preemption_goroutine(self, result: str, seconds: float) -> None:
        self.goroutines.append(result)


def _setup(cluster: RecordingCluster) -> tuple[Executor, Scheduler, Observed]:
    seen = Observed()
    sched = build_scheduler(cluster, seed=0, observer=seen)
    cluster.attach(sched)
    cluster.apply_node(make_node("n1").obj())
    handle: PreemptionHandle = sched.handle()
    return Executor(handle, "DefaultPreemption"), sched, seen


def _victim(cluster: MemoryCluster, name: str, *, terminating: bool = False) -> PodInfo:
    b = make_pod(name).uid(name).priority(1).node("n1")
    if terminating:
        b.terminating()
    obj = b.obj()
    cluster.apply_pod(obj)
    return b.info()


PREEMPTOR = make_pod("boss").uid("boss-uid").priority(1000).info()


async def test_victims_get_condition_then_delete_then_event_and_the_preemptor_is_held_meanwhile() -> None:
    cluster = RecordingCluster()
    executor, sched, seen = _setup(cluster)
    victims = [_victim(cluster, "v1"), _victim(cluster, "v2")]
    executor.actuate(Candidate("n1", victims), PREEMPTOR)
    assert executor.is_pod_running_preemption("boss-uid"), "held from the moment the task is started"
    await sched.drain()
    assert cluster.calls == [("condition", "v1"), ("delete", "v1"), ("condition", "v2"), ("delete", "v2")]
    assert not executor.is_pod_running_preemption("boss-uid")
    events = [(e.name, e.reason, e.action, e.note, e.reporting_controller) for e in cluster.events]
    assert events == [
        (v, "Preempted", "Preempting", "Preempted by pod boss-uid on node n1", "pyscheduler") for v in ("v1", "v2")
    ]
    assert [(e.victim, e.preemptor, e.node) for e in cluster.evictions] == [
        ("default/v1", "default/boss", "n1"),
        ("default/v2", "default/boss", "n1"),
    ]
    assert seen.victims == [2] and seen.goroutines == ["success"]


async def test_terminating_victims_need_no_call_and_start_no_task() -> None:
    cluster = RecordingCluster()
    executor, sched, seen = _setup(cluster)
    executor.actuate(Candidate("n1", [_victim(cluster, "v1", terminating=True)]), PREEMPTOR)
    assert not executor.is_pod_running_preemption("boss-uid")
    await sched.drain()
    assert cluster.calls == [] and seen.victims == [1] and seen.goroutines == []


async def test_a_failed_victim_skips_the_last_one_and_activates_the_preemptor() -> None:
    cluster = RecordingCluster(fail_delete=["v1"])
    executor, sched, seen = _setup(cluster)
    activated: list[str] = []
    sched.activate = lambda uids: activated.extend(uids)  # type: ignore[method-assign]
    victims = [_victim(cluster, "v1"), _victim(cluster, "v2")]
    executor.actuate(Candidate("n1", victims), PREEMPTOR)
    await sched.drain()
    assert cluster.calls == [("condition", "v1"), ("delete", "v1")], "the last victim is not preempted"
    assert seen.goroutines == ["error"] and activated == ["boss-uid"]
    assert [e.name for e in cluster.events] == []


async def test_lower_priority_nominees_of_the_node_lose_their_nomination_first() -> None:
    cluster = RecordingCluster()
    executor, sched, _ = _setup(cluster)
    for name, priority, nominated in (("low", 10, "n1"), ("peer", 1000, "n1"), ("memory-only", 10, "")):
        obj = make_pod(name).uid(name).priority(priority).obj()
        if nominated:
            obj["status"]["nominatedNodeName"] = nominated
        cluster.apply_pod(obj)
    sched.nominator.add(sched.pending["memory-only"], NominatingInfo("n1"))
    executor.actuate(Candidate("n1", [_victim(cluster, "v1")]), PREEMPTOR)
    await sched.drain()
    # Only lower-priority nominees whose status carries the nomination are patched (as upstream).
    assert cluster.calls[0] == ("clear-nomination", "low")
    assert ("clear-nomination", "peer") not in cluster.calls
    assert ("clear-nomination", "memory-only") not in cluster.calls
    assert "nominatedNodeName" not in cluster.pods["low"]["status"]
    assert sched.nominator.node_of("low") is None, "the API change reached the nominator"


async def test_a_victim_waiting_at_permit_is_rejected_in_memory() -> None:
    cluster = RecordingCluster()
    executor, sched, _ = _setup(cluster)
    victim = _victim(cluster, "v1")
    waiting = WaitingPod(victim, {"SomePermit": 60.0})
    sched.profiles["pyscheduler"].waiting_pods[victim.uid] = waiting
    activated: list[str] = []
    sched.activate = lambda uids: activated.extend(uids)  # type: ignore[method-assign]
    executor.actuate(Candidate("n1", [victim]), PREEMPTOR)
    await sched.drain()
    status = await waiting.wait()
    assert status is not None and (status.plugin, status.reasons) == ("DefaultPreemption", ("preempted",))
    assert cluster.calls == [], "no API call for a pod that was never bound"
    assert [e.note for e in cluster.events] == ["Preempted by pod boss-uid on node n1 (in kube-scheduler memory)."]
    assert activated == ["boss-uid"], "no deletion event will come: the preemptor is activated"
