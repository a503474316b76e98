"""SchedulingQueue: ordering, backoff, event-driven moves, leftover flush, gating, in-flight requeue."""

from __future__ import annotations

import collections
import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.backend.queue.scheduling_queue import (
    ACTIVE,
    BACKOFF,
    GATED,
    IN_FLIGHT,
    UNSCHEDULABLE,
    SchedulingQueue,
    event_label,
)
from scheduler.framework.interface import (
    EVENT_UNSCHEDULABLE_TIMEOUT,
    NODE,
    ActionType,
    ClusterEvent,
)
from scheduler.framework.status import Status, unresolvable
from scheduler.framework.types import PodInfo, QueuedPodInfo
from scheduler.testing import make_pod


class FakeClock:
    """A clock tests move by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def sort_key(priority: int, timestamp: float, seq: int) -> tuple[Any, ...]:
    """PrioritySort's key: higher priority first, then earlier timestamp, then arrival."""
    return (-priority, timestamp, seq)


def gates(pod: PodInfo) -> Status | None:
    """A PreEnqueue check like the SchedulingGates plugin."""
    if pod.scheduling_gates:
        return unresolvable(f"waiting for scheduling gate(s): {', '.join(pod.scheduling_gates)}",
                            plugin="SchedulingGates")  # fmt: skip
    return None


def new_queue(clock: FakeClock, **kwargs: Any) -> SchedulingQueue:
    return SchedulingQueue(sort_key, clock, pre_enqueue=gates, **kwargs)


def pod(name: str, priority: int = 0, cpu: str = "100m", gated: bool = False) -> PodInfo:
    info = make_pod(name).uid(name).priority(priority).req(cpu=cpu).info()
    if gated:
        info.scheduling_gates = ("example.com/gate",)
    return info


def fail(q: SchedulingQueue, *plugins: str) -> tuple[QueuedPodInfo, str | None]:
    """Pop the head and report it unschedulable by plugins (an Error when none); return it and its queue."""
    qpi = q.pop()
    assert qpi is not None
    cycle = q.scheduling_cycle
    qpi.unschedulable_plugins = set(plugins)
    return qpi, q.add_unschedulable_if_not_present(qpi, cycle)


FIT_EVENTS = {"NodeResourcesFit": [ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)]}


# ---------------------------------------------------------------------------------------------------------
# Ordering


@pytest.mark.parametrize(
    ("priorities", "expected"),
    [
        pytest.param([0, 10, 5], ["p1", "p2", "p0"], id="higher-priority-first"),
        pytest.param([-5, 0], ["p1", "p0"], id="negative-priority-last"),
        pytest.param([3, 3, 3], ["p0", "p1", "p2"], id="fifo-same-timestamp"),
    ],
)
def test_pop_order_by_priority_then_fifo(priorities: list[int], expected: list[str]) -> None:
    """Pods pop by priority, then in arrival order."""
    clock = FakeClock()
    q = new_queue(clock)
    for i, prio in enumerate(priorities):
        q.add(pod(f"p{i}", prio))
    popped = []
    while (qpi := q.pop()) is not None:
        popped.append(qpi.pod.name)
    assert popped == expected


def test_fifo_within_priority_uses_enqueue_time() -> None:
    """Among equal priorities, the earlier enqueue time pops first even if re-sorted later."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("late-high", 1))
    clock.advance(1)
    q.add(pod("a"))
    clock.advance(1)
    q.add(pod("b"))
    q.update(pod("late-high", 1), pod("late-high", 0))  # priority drop re-sorts it by its old timestamp
    assert [q.pop().pod.name for _ in range(3)] == ["late-high", "a", "b"]  # type: ignore[union-attr]


def test_priority_raise_reorders_active_queue() -> None:
    """Raising a queued pod's priority moves it to the head."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    q.add(pod("b"))
    assert q.update(pod("b"), pod("b", 100)) == ACTIVE
    head = q.pop()
    assert head is not None and head.pod.name == "b" and head.pod.priority == 100
    assert q.pending()[ACTIVE] == 1


def test_pop_marks_in_flight_and_counts_attempts() -> None:
    """pop() bumps attempts and the scheduling cycle and tracks the pod as in flight until done."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    qpi = q.pop()
    assert qpi is not None and qpi.attempts == 1 and q.scheduling_cycle == 1
    assert qpi.initial_attempt_timestamp == clock.now
    assert q.queue_of("a") == IN_FLIGHT and "a" in q and q.get("a") is qpi
    assert q.pop() is None
    q.done("a")
    assert "a" not in q and q.get("a") is None


# ---------------------------------------------------------------------------------------------------------
# Backoff


def test_backoff_doubles_and_caps() -> None:
    """Consecutive failures back off 1, 2, 4, 8, 10, 10 s."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    waits = []
    for _ in range(6):
        _, where = fail(q)  # Error: always backoff
        assert where == BACKOFF
        wake = q.next_wakeup()
        assert wake is not None
        waits.append(wake - clock.now)
        clock.now = wake - 0.001
        assert q.flush_backoff_completed() == 0, "not before the backoff expires"
        clock.now = wake
        assert q.flush_backoff_completed() == 1
    assert waits == [1, 2, 4, 8, 10, 10]
    assert q.next_wakeup() is None


@pytest.mark.parametrize(
    ("initial", "maximum", "attempts", "expected"),
    [
        pytest.param(1.0, 10.0, 0, 0.0, id="never-attempted"),
        pytest.param(1.0, 10.0, 1, 1.0, id="first"),
        pytest.param(0.5, 3.0, 3, 2.0, id="custom-initial"),
        pytest.param(0.5, 3.0, 4, 3.0, id="custom-cap"),
        pytest.param(1.0, 10.0, 500, 10.0, id="huge-attempt-count"),
    ],
)
def test_backoff_duration(initial: float, maximum: float, attempts: int, expected: float) -> None:
    """backoff = initial * 2^(attempts-1) capped at max, 0 before any attempt."""
    q = SchedulingQueue(sort_key, FakeClock(), initial_backoff=initial, max_backoff=maximum)
    assert q.backoff_duration(QueuedPodInfo(pod("a"), 0.0, attempts=attempts)) == expected


# ---------------------------------------------------------------------------------------------------------
# Unschedulable pods and cluster events


@pytest.mark.parametrize(
    ("event", "moves"),
    [
        pytest.param(ClusterEvent(NODE, ActionType.ADD), True, id="node-add-registered"),
        pytest.param(ClusterEvent(NODE, ActionType.UPDATE_NODE_ALLOCATABLE), True, id="alloc-registered"),
        pytest.param(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL), False, id="label-not-registered"),
        pytest.param(ClusterEvent("AssignedPod", ActionType.ADD), False, id="other-resource"),
        pytest.param(EVENT_UNSCHEDULABLE_TIMEOUT, True, id="wildcard-moves-all"),
    ],
)
def test_move_only_on_event_the_rejecting_plugin_registered(event: ClusterEvent, moves: bool) -> None:
    """An unschedulable pod moves only for events its rejecting plugin registered."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    _, where = fail(q, "NodeResourcesFit")
    assert where == UNSCHEDULABLE
    assert [p.uid for p in q.unschedulable_pods()] == ["a"] and q.gated_pods() == []
    assert q.move_all_to_active_or_backoff(event, FIT_EVENTS) == int(moves)
    assert q.queue_of("a") == (BACKOFF if moves else UNSCHEDULABLE)  # just failed: still backing off


def test_moved_pod_skips_backoff_once_expired() -> None:
    """A pod moved after its backoff elapsed goes straight to activeQ and is counted there."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    fail(q, "NodeResourcesFit")
    clock.advance(5)
    q.move_all_to_active_or_backoff(ClusterEvent(NODE, ActionType.ADD), FIT_EVENTS)
    assert q.queue_of("a") == ACTIVE
    assert q.incoming[(ACTIVE, "NodeAdd")] == 1


def test_plugin_without_registered_events_moves_on_any_event() -> None:
    """A rejecting plugin absent from the event map is treated as interested in every event."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    fail(q, "SomeOutOfTreePlugin")
    assert q.move_all_to_active_or_backoff(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL), FIT_EVENTS) == 1


def test_unschedulable_leftover_flushed_after_five_minutes() -> None:
    """Pods parked more than 5 min move on the leftover flush; exactly 5 min is not enough."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    fail(q, "NodeResourcesFit")
    clock.advance(300)
    assert q.flush_unschedulable_leftover() == 0
    clock.advance(0.001)
    assert q.flush_unschedulable_leftover() == 1
    assert q.queue_of("a") == ACTIVE
    assert q.incoming[(ACTIVE, "UnschedulableTimeout")] == 1


@pytest.mark.parametrize(
    ("event_during_cycle", "plugins", "expected"),
    [
        pytest.param(False, ("NodeResourcesFit",), UNSCHEDULABLE, id="no-event-parks"),
        pytest.param(True, ("NodeResourcesFit",), BACKOFF, id="event-in-flight-backs-off"),
        pytest.param(False, (), BACKOFF, id="error-backs-off"),
    ],
)
def test_requeue_after_failure(event_during_cycle: bool, plugins: tuple[str, ...], expected: str) -> None:
    """A move request during the pod's cycle or an Error sends it to backoffQ, else unschedulable."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    # An event before the pop does not count as a move request for this cycle.
    q.move_all_to_active_or_backoff(ClusterEvent(NODE, ActionType.ADD), FIT_EVENTS)
    qpi = q.pop()
    assert qpi is not None
    cycle = q.scheduling_cycle
    if event_during_cycle:
        q.move_all_to_active_or_backoff(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL), FIT_EVENTS)
    qpi.unschedulable_plugins = set(plugins)
    assert q.add_unschedulable_if_not_present(qpi, cycle) == expected
    assert q.queue_of("a") == expected
    assert q.incoming[(expected, "ScheduleAttemptFailure")] == 1


# ---------------------------------------------------------------------------------------------------------
# Pod updates and deletes


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param("status", UNSCHEDULABLE, id="status-only-stays"),
        pytest.param("spec", BACKOFF, id="spec-change-moves"),
        pytest.param("labels", BACKOFF, id="label-change-moves"),
    ],
)
def test_update_of_unschedulable_pod(change: str, expected: str) -> None:
    """An unschedulable pod leaves only when its spec or labels changed."""
    clock = FakeClock()
    q = new_queue(clock)
    old = pod("a")
    q.add(old)
    fail(q, "NodeResourcesFit")
    if change == "status":
        new = dataclasses.replace(old, resource_version="2", nominated_node_name="")
    elif change == "spec":
        new = make_pod("a").uid("a").req(cpu="50m").info()
    else:
        new = dataclasses.replace(old, labels={"app": "x"})
    assert q.update(old, new) == expected
    qpi = q.get("a")
    assert qpi is not None and qpi.pod is new


def test_update_while_in_flight_is_applied_at_requeue() -> None:
    """A spec update that arrives while the pod is scheduled is kept and sends it to backoffQ."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a"))
    qpi = q.pop()
    assert qpi is not None
    cycle = q.scheduling_cycle
    newer = make_pod("a").uid("a").req(cpu="10m").info()
    assert q.update(qpi.pod, newer) == IN_FLIGHT
    qpi.unschedulable_plugins = {"NodeResourcesFit"}
    assert q.add_unschedulable_if_not_present(qpi, cycle) == BACKOFF
    assert qpi.pod is newer


@pytest.mark.parametrize(
    "where",
    [
        pytest.param(ACTIVE, id="active"),
        pytest.param(BACKOFF, id="backoff"),
        pytest.param(UNSCHEDULABLE, id="unschedulable"),
        pytest.param(GATED, id="gated"),
        pytest.param(IN_FLIGHT, id="in-flight"),
    ],
)
def test_delete_from_every_queue(where: str) -> None:
    """A deleted (or bound elsewhere) pod leaves whichever queue holds it and is never requeued."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a", gated=where == GATED))
    qpi = None
    if where in (BACKOFF, UNSCHEDULABLE):
        fail(q, *(("NodeResourcesFit",) if where == UNSCHEDULABLE else ()))
    elif where == IN_FLIGHT:
        qpi = q.pop()
    assert q.queue_of("a") == where
    assert q.delete("a")
    assert not q.delete("a"), "a second delete finds nothing (also while the pod is in flight)"
    assert "a" not in q and sum(q.pending().values()) == 0
    if qpi is not None:
        assert q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle) is None
        assert "a" not in q
    assert not q.delete("a")


# ---------------------------------------------------------------------------------------------------------
# Gated pods


def test_gated_pod_waits_until_gates_removed() -> None:
    """A PreEnqueue-rejected pod is gated (never popped) until an update clears its gates."""
    clock = FakeClock()
    q = new_queue(clock)
    gated = pod("a", gated=True)
    assert q.add(gated) == GATED
    assert q.pending() == {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 1}
    assert q.pop() is None
    assert [p.uid for p in q.gated_pods()] == ["a"] and q.unschedulable_pods() == []
    qpi = q.get("a")
    assert qpi is not None and qpi.gated and qpi.gating_plugin == "SchedulingGates"
    assert q.move_all_to_active_or_backoff(ClusterEvent(NODE, ActionType.ADD), FIT_EVENTS) == 0
    assert q.update(gated, pod("a", gated=True)) == GATED
    assert q.update(gated, pod("a")) == ACTIVE
    assert q.incoming == {(UNSCHEDULABLE, "UnscheduledPodAdd"): 1, (ACTIVE, "UnscheduledPodUpdate"): 1}
    popped = q.pop()
    assert popped is not None and not popped.gated and popped.attempts == 1


# ---------------------------------------------------------------------------------------------------------
# Introspection


def test_dump_and_event_label() -> None:
    """dump() is JSON-able and lists active pods in pop order; event labels follow upstream's Label()."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("low"))
    q.add(pod("high", 5))
    q.add(pod("g", gated=True))
    dumped = json.loads(json.dumps(q.dump()))
    assert [p["pod"] for p in dumped[ACTIVE]] == ["default/high", "default/low"]
    assert dumped[GATED][0]["gating_plugin"] == "SchedulingGates"
    assert event_label(ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT)) == "NodeUpdateNodeTaint"
    assert event_label(EVENT_UNSCHEDULABLE_TIMEOUT) == "UnschedulableTimeout"


# ---------------------------------------------------------------------------------------------------------
# Property: every added, not deleted, not bound pod is in exactly one place.

UIDS = [f"u{i}" for i in range(8)]
PLUGINS = ["NodeResourcesFit", "TaintToleration", ""]

queue_op = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(UIDS), st.integers(0, 3), st.booleans()),
    st.tuples(st.just("update"), st.sampled_from(UIDS), st.integers(0, 3), st.booleans()),
    st.tuples(st.just("delete"), st.sampled_from(UIDS), st.just(0), st.just(False)),
    st.tuples(st.just("pop_fail"), st.sampled_from(PLUGINS), st.just(0), st.booleans()),
    st.tuples(st.just("pop_bind"), st.just(""), st.just(0), st.just(False)),
    st.tuples(st.just("pop_hold"), st.just(""), st.just(0), st.just(False)),
    st.tuples(st.just("finish_held"), st.sampled_from(PLUGINS), st.just(0), st.just(False)),
    st.tuples(st.just("event"), st.sampled_from(["add", "label", "timeout"]), st.just(0), st.just(False)),
    st.tuples(st.just("tick"), st.just(""), st.integers(0, 400), st.just(False)),
)

EVENTS = {
    "add": ClusterEvent(NODE, ActionType.ADD),
    "label": ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL),
    "timeout": EVENT_UNSCHEDULABLE_TIMEOUT,
}
PLUGIN_EVENTS = {**FIT_EVENTS, "TaintToleration": [ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT)]}


@settings(max_examples=300, deadline=None)
@given(st.lists(queue_op, max_size=60))
def test_property_every_live_pod_in_exactly_one_queue(ops: list[tuple[str, str, int, bool]]) -> None:
    """Across random adds/updates/deletes/pops/failures/events/ticks, each live pod sits in exactly one
    queue (or is in flight), pending() agrees, nothing else is queued, and pop respects priority."""
    clock = FakeClock()
    q = new_queue(clock)
    live: set[str] = set()
    held: list[tuple[QueuedPodInfo, int]] = []  # popped, attempt still running

    def pop() -> QueuedPodInfo | None:
        best = max((qq["priority"] for qq in q.dump()[ACTIVE]), default=None)
        qpi = q.pop()
        assert (qpi is None) == (best is None)
        if qpi is not None:
            assert qpi.pod.priority == best
        return qpi

    def requeue(qpi: QueuedPodInfo, cycle: int, plugin: str) -> None:
        qpi.unschedulable_plugins = {plugin} if plugin else set()
        where = q.add_unschedulable_if_not_present(qpi, cycle)
        assert (where is None) == (qpi.uid not in live)

    deleted: set[str] = set()  # uids are never reused once a pod is deleted
    for kind, arg, num, flag in ops:
        if kind in ("add", "update") and arg not in deleted:
            new = pod(arg, priority=num, cpu=f"{100 + num}m", gated=flag)
            current = q.get(arg)
            if kind == "add" or current is None:
                q.add(new)
            else:
                q.update(current.pod, new)
            live.add(arg)
        elif kind == "delete":
            assert q.delete(arg) == (arg in live)
            live.discard(arg)
            deleted.add(arg)
        elif kind == "pop_fail" and (qpi := pop()) is not None:
            cycle = q.scheduling_cycle
            if flag:
                q.move_all_to_active_or_backoff(EVENTS["label"], PLUGIN_EVENTS)
            requeue(qpi, cycle, arg)
        elif kind == "pop_bind" and (qpi := pop()) is not None:
            q.done(qpi.uid)
            live.discard(qpi.uid)
            deleted.add(qpi.uid)
        elif kind == "pop_hold" and (qpi := pop()) is not None:
            held.append((qpi, q.scheduling_cycle))
        elif kind == "finish_held" and held:
            qpi, cycle = held.pop(0)
            requeue(qpi, cycle, arg)
        elif kind == "event":
            q.move_all_to_active_or_backoff(EVENTS[arg], PLUGIN_EVENTS)
        elif kind == "tick":
            clock.advance(num)
            q.flush_backoff_completed()
            q.flush_unschedulable_leftover()

        dumped = q.dump()
        places = collections.Counter(
            p["uid"] for name in (ACTIVE, BACKOFF, UNSCHEDULABLE, GATED, IN_FLIGHT) for p in dumped[name]
        )
        assert places == collections.Counter(live), "each live pod exactly once, nothing else"
        in_flight = {qpi.uid for qpi, _ in held if qpi.uid in live}
        assert sum(q.pending().values()) == len(live - in_flight)
        for uid in live:
            assert uid in q
            qpi = q.get(uid)
            assert qpi is not None and qpi.gated == (q.queue_of(uid) == GATED)
