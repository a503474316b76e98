"""A periodic resync tells watch lag from drift: differences the watches resolve within the grace period are
lag (neither repaired from the LIST nor counted); those still as they were at LIST time are drift.

The in-memory cluster plays the API server; "the watch" is whatever the test delivers through the
scheduler's event handlers, so a test can hold events back (lag) or drop them (drift).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.framework.observer import Observer
from scheduler.testing import SchedulerHarness, make_node, make_pod

JSON = dict[str, Any]


class DriftCounter(Observer):
    def __init__(self) -> None:
        self.drift: dict[str, int] = {}

    def cache_drift(self, kind: str, count: int) -> None:
        self.drift[kind] = self.drift.get(kind, 0) + count


def _nothing_deleted(resource: str, key: str) -> bool:
    return False


def harness() -> tuple[SchedulerHarness, DriftCounter]:
    """The public harness (default profile) and the drift it counts."""
    drift = DriftCounter()
    return SchedulerHarness(observer=drift), drift


def listed(env: SchedulerHarness) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """A fresh LIST of nodes and pods: what the in-memory API server holds (the watch may not have said)."""
    return list(env.cluster.nodes.values()), list(env.cluster.pods.values())


async def test_differences_the_watch_delivers_within_the_grace_are_lag() -> None:
    """Pod deleted, pod created bound and node added behind the watch's back; the watch delivers them after
    the LIST: nothing is drift, nothing counted."""
    env, drift = harness()
    env.cluster.apply_node(make_node("n1").obj())
    gone = make_pod("gone").uid("gone").node("n1").obj()
    env.cluster.apply_pod(gone)
    late_pod = make_pod("late").uid("late").node("n1").obj()
    late_node = make_node("n2").obj()
    # The API has these changes; the watch has not delivered them yet.
    del env.cluster.pods["gone"]
    env.cluster.pods["late"] = late_pod
    env.cluster.nodes["n2"] = late_node
    suspects = env.scheduler.events.resync_suspects(*listed(env))
    assert set(suspects.pods) == {"gone", "late"} and set(suspects.nodes) == {"n2"}
    assert env.scheduler.cache.get_pod("gone") is not None, "nothing is applied before the grace ends"
    # The watch catches up.
    env.scheduler.events.on_pod_event("DELETED", gone)
    env.scheduler.events.on_pod_event("ADDED", late_pod)
    env.scheduler.events.on_node_event("ADDED", late_node)
    assert env.scheduler.events.settle(suspects, _nothing_deleted) == {}
    assert drift.drift == {}


async def test_differences_the_watch_never_delivers_are_drift() -> None:
    """The same changes with the events lost: repaired and counted as drift when the grace ends."""
    env, drift = harness()
    env.cluster.apply_node(make_node("n1").capacity(cpu="2").obj())
    gone = make_pod("gone").uid("gone").req(cpu="2").node("n1").obj()
    env.cluster.apply_pod(gone)
    del env.cluster.pods["gone"]
    env.cluster.pods["late"] = make_pod("late").uid("late").node("n1").obj()
    env.cluster.nodes["n2"] = make_node("n2").obj()
    waiting = make_pod("waiting").uid("waiting").req(cpu="1").obj()
    env.cluster.apply_pod(waiting)
    await env.settle()
    assert env.cluster.node_of("waiting") is None, "n1 looks full while the cache holds the deleted pod"
    suspects = env.scheduler.events.resync_suspects(*listed(env))
    repaired = env.scheduler.events.settle(suspects, _nothing_deleted)
    assert repaired == {"extra_pods": 1, "missing_pods": 1, "missing_nodes": 1}
    assert drift.drift == repaired
    assert env.scheduler.cache.get_pod("gone") is None and env.scheduler.cache.get_node("n2") is not None
    await env.settle()
    assert env.cluster.node_of("waiting") is not None, "the repaired cache frees the room"


async def test_a_deletion_seen_during_the_grace_is_not_undone() -> None:
    """A pod the LIST showed but the watch deleted afterwards is not brought back from the (older) LIST."""
    env, _drift = harness()
    env.cluster.apply_node(make_node("n1").obj())
    fresh = make_pod("fresh").uid("fresh").node("n1").obj()
    env.cluster.pods["fresh"] = fresh  # created; the watch is late
    suspects = env.scheduler.events.resync_suspects(*listed(env))
    assert "fresh" in suspects.pods
    env.cluster.pods.clear()  # then deleted; the watch delivers only the deletion
    env.scheduler.events.on_pod_event("DELETED", fresh)
    assert env.scheduler.events.settle(suspects, lambda resource, key: (resource, key) == ("pods", "fresh")) == {}
    assert env.scheduler.cache.get_pod("fresh") is None


async def test_pending_pod_bound_by_another_scheduler_during_a_watch_gap() -> None:
    """A pending pod the LIST shows bound elsewhere leaves the queue and enters the cache, counted once."""
    env, _drift = harness()
    env.cluster.apply_node(make_node("n1").capacity(cpu="1").obj())
    obj = make_pod("p").uid("p").req(cpu="4").obj()
    env.cluster.apply_pod(obj)
    await env.settle()
    assert "p" in env.scheduler.pending
    env.cluster.pods["p"] = make_pod("p").uid("p").req(cpu="4").node("n1").obj()  # bound by someone; event lost
    suspects = env.scheduler.events.resync_suspects(*listed(env))
    repaired = env.scheduler.events.settle(suspects, _nothing_deleted)
    assert repaired == {"missing_pods": 1}
    assert "p" not in env.scheduler.pending and "p" not in env.scheduler.queue
    held = env.scheduler.cache.get_pod("p")
    assert held is not None and held.node_name == "n1"


@pytest.mark.parametrize("lag_aware", [pytest.param(True, id="periodic"), pytest.param(False, id="after-410")])
async def test_own_binding_in_flight_is_neither_drift_nor_forgotten(lag_aware: bool) -> None:
    """A LIST that already shows our in-flight bind confirms the assumed pod; nothing is counted or dropped."""
    env, drift = harness()
    node = make_node("n1").obj()
    env.cluster.apply_node(node)
    pod = make_pod("p").uid("p").info()
    env.scheduler.pending["p"] = pod  # popped and assumed by a scheduling cycle; its bind is in flight
    env.scheduler.cache.assume_pod(pod, "n1")
    listed = make_pod("p").uid("p").node("n1").obj()
    if lag_aware:
        assert len(env.scheduler.events.resync_suspects([node], [listed])) == 0
    else:
        assert not any(env.scheduler.events.resync([node], [listed]).values())
    held = env.scheduler.cache.get_pod("p")
    assert not env.scheduler.cache.is_assumed("p") and held is not None and held.node_name == "n1"
    assert "p" in env.scheduler.pending, "the binding cycle, not the resync, finishes its own pod"
    assert drift.drift == {}


async def test_an_older_unbound_version_never_requeues_a_bound_pod() -> None:
    """A lagging watch replaying a pod's unbound past after the cache holds it bound: ignored."""
    env, _drift = harness()
    env.cluster.apply_node(make_node("n1").obj())
    unbound = make_pod("p").uid("p").obj()
    bound = make_pod("p").uid("p").node("n1").obj()
    env.scheduler.events.on_pod_event("MODIFIED", bound)
    env.scheduler.events.on_pod_event("MODIFIED", unbound)
    assert "p" not in env.scheduler.pending and "p" not in env.scheduler.queue
    held = env.scheduler.cache.get_pod("p")
    assert held is not None and held.node_name == "n1"


async def test_a_pod_created_and_bound_while_the_list_was_in_flight_is_no_suspect() -> None:
    """The error-storm over-commit: a slow LIST was requested before p existed; p was then created, bound and
    confirmed by the watch. Without the touched set p, absent from the LIST, became a suspect and, after the
    grace (no newer event for it), was dropped from the cache: its cpu looked free and q over-committed n1."""
    env, _drift = harness()
    node = make_node("n1").capacity(cpu="1").obj()
    env.cluster.apply_node(node)
    env.cluster.apply_pod(make_pod("p").uid("p").req(cpu="600m").obj())
    await env.settle()
    assert env.cluster.bindings == [("default/p", "n1")]
    assert len(env.scheduler.events.resync_suspects([node], [])) == 1  # what the old code saw
    suspects = env.scheduler.events.resync_suspects([node], [], lambda resource, key: (resource, key) == ("pods", "p"))
    assert len(suspects) == 0
    assert env.scheduler.events.settle(suspects, _nothing_deleted) == {}
    held = env.scheduler.cache.get_pod("p")
    assert held is not None and held.node_name == "n1"
    env.cluster.apply_pod(make_pod("q").uid("q").req(cpu="600m").obj())
    await env.settle()
    assert env.cluster.bindings == [("default/p", "n1")], "q must not fit beside p"


async def test_a_stale_list_never_requeues_a_pod_the_cache_holds() -> None:
    """A LIST that shows a pod unbound never queues it again while the cache holds it bound (nodeName is
    immutable), with or without the touched set."""
    env, _drift = harness()
    node = make_node("n1").obj()
    env.cluster.apply_node(node)
    stale = make_pod("p").uid("p").obj()
    env.cluster.apply_pod(stale)
    await env.settle()
    assert len(env.scheduler.events.resync_suspects([node], [stale])) == 0
    assert "p" not in env.scheduler.pending and "p" not in env.scheduler.queue
