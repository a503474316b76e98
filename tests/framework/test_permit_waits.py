"""Permit WAIT on the scheduler's clock: per-plugin deadlines, upstream's timeout message with Go's duration
text, pods parked at Permit that never block the rest, and no real waiting on a fake clock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from scheduler.framework import Code, CycleState, Handle, PermitPlugin, PodInfo, Status
from scheduler.framework.go_duration import format_nanoseconds, format_seconds
from scheduler.framework.runtime import WaitingPod
from scheduler.testing import SchedulerHarness, configuration, make_node, make_pod

WAITS = "example.com/waits"  # label: seconds this pod asks to wait at Permit


@pytest.mark.parametrize(
    ("ns", "text"),
    # Printed by Go 1.x's fmt.Printf("%v", time.Duration(ns)) for each value.
    [
        pytest.param(0, "0s", id="zero"),
        pytest.param(1, "1ns", id="ns"),
        pytest.param(999, "999ns", id="ns-max"),
        pytest.param(1000, "1µs", id="us"),
        pytest.param(1500, "1.5µs", id="us-frac"),
        pytest.param(999_999, "999.999µs", id="us-max"),
        pytest.param(1_000_000, "1ms", id="ms"),
        pytest.param(1_500_000, "1.5ms", id="ms-frac"),
        pytest.param(50_000_000, "50ms", id="50ms"),
        pytest.param(250_000_000, "250ms", id="250ms"),
        pytest.param(999_999_999, "999.999999ms", id="ms-max"),
        pytest.param(1_000_000_000, "1s", id="1s"),
        pytest.param(1_000_000_001, "1.000000001s", id="1s-1ns"),
        pytest.param(1_500_000_000, "1.5s", id="1.5s"),
        pytest.param(59_000_000_000, "59s", id="59s"),
        pytest.param(60_000_000_000, "1m0s", id="1m"),
        pytest.param(61_000_000_000, "1m1s", id="61s"),
        pytest.param(900_000_000_000, "15m0s", id="max-permit"),
        pytest.param(3_599_000_000_000, "59m59s", id="59m59s"),
        pytest.param(3_600_000_000_000, "1h0m0s", id="1h"),
        pytest.param(5_400_000_000_000, "1h30m0s", id="90m"),
        pytest.param(90_061_001_000_000, "25h1m1.001s", id="days"),
        pytest.param(-2_000_000_000, "-2s", id="negative"),
    ],
)
def test_durations_print_as_go_prints_them(ns: int, text: str) -> None:
    """time.Duration's %v, byte for byte (the values came from running Go)."""
    assert format_nanoseconds(ns) == text


def test_seconds_round_to_nanoseconds() -> None:
    """A plugin's float timeout becomes a whole number of nanoseconds first, as a Go Duration is."""
    assert (format_seconds(0.05), format_seconds(90), format_seconds(1 / 3)) == ("50ms", "1m30s", "333.333333ms")


async def test_each_plugin_has_its_own_deadline_and_the_earliest_pending_one_rejects() -> None:
    """Two plugins wait 10 s and 30 s: nothing at 9 s; at 10 s the 10 s plugin's timeout rejects, unless it
    allowed the pod already, in which case the 30 s one rejects at 30 s."""
    pod = make_pod("w").info()
    waiting = WaitingPod(pod, {"Short": 10.0, "Long": 30.0}, now=100.0)
    assert waiting.next_deadline() == 110.0
    assert not waiting.expire(109.0)
    assert waiting.expire(110.0)
    assert await waiting.wait() == Status(
        Code.UNSCHEDULABLE, ("rejected due to timeout after waiting 10s at plugin Short",), "Short"
    )
    allowed = WaitingPod(pod, {"Short": 10.0, "Long": 30.0}, now=100.0)
    allowed.allow("Short")
    assert allowed.next_deadline() == 130.0 and not allowed.expire(110.0)
    assert allowed.expire(130.0)
    status = await allowed.wait()
    assert status is not None and status.reasons == ("rejected due to timeout after waiting 30s at plugin Long",)


@pytest.mark.parametrize(
    ("decide", "then_reject"),
    [
        pytest.param(lambda w: w.allow("P"), False, id="allowed"),
        pytest.param(lambda w: w.reject("P", "no"), False, id="rejected"),
        pytest.param(lambda w: w.expire(1e9), False, id="timed-out"),
    ],
)
def test_a_decided_wait_ignores_later_outcomes(decide: Any, then_reject: bool) -> None:
    """The first outcome wins, as upstream's one-slot channel: a later reject or preempt returns False."""
    waiting = WaitingPod(make_pod("w").info(), {"P": 5.0})
    decide(waiting)
    assert waiting.done and waiting.next_deadline() is None
    assert waiting.reject("P", "late") is then_reject
    assert waiting.preempt("DefaultPreemption", "preempted") is then_reject


class Waits(PermitPlugin):
    """Permit WAIT for the seconds in the pod's label; pods without it pass."""

    name: ClassVar[str] = "Waits"

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.handle = handle

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        seconds = pod.labels.get(WAITS)
        return (None, 0.0) if seconds is None else (Status(Code.WAIT), float(seconds))


def harness() -> SchedulerHarness:
    h = SchedulerHarness(configuration({"multiPoint": {"enabled": [{"name": "Waits"}]}}), plugins=[Waits])
    h.add(make_node("n1"))
    return h


async def test_a_parked_pod_never_blocks_the_others_and_its_timeout_takes_no_real_time() -> None:
    """A pod waiting 15 min (the cap) at Permit: the pods after it bind at once; the wait then times out on
    the fake clock within a fraction of a second of real time, with upstream's message."""
    h = harness()
    parked = h.add_pod(make_pod("parked").label(WAITS, "3600"))
    others = [h.add_pod(make_pod(f"p{i}")) for i in range(3)]
    await h.settle(expire_permits=False)
    assert [h.node_of(p) for p in others] == ["n1"] * 3 and h.node_of(parked) is None
    assert [w.pod.name for w in h.waiting()] == ["parked"] and h.clock() == 0.0
    start = time.perf_counter()
    await h.settle()
    print(f"\na 15 min Permit wait timed out on the fake clock in {(time.perf_counter() - start) * 1000:.1f} ms")
    assert h.clock() == 900.0, "capped at upstream's 15 minutes"
    want = "0/1 nodes are available: 1 rejected due to timeout after waiting 15m0s at plugin Waits."
    assert h.message(parked) == want
    assert h.scheduler.queue.queue_of(parked["metadata"]["uid"]) == "unschedulable", "requeued, not dropped"


async def test_without_expiry_the_clock_stops_short_of_a_permit_deadline() -> None:
    """settle(expire_permits=False) (simulate between two objects) never moves the clock past a Permit
    deadline, even for a backoff that ends later."""
    h = harness()
    h.add_pod(make_pod("parked").label(WAITS, "5"))
    await h.settle(expire_permits=False)
    assert h.clock() < 5.0 and len(h.waiting()) == 1


async def test_a_pod_deleted_while_parked_gives_its_node_back_at_once() -> None:
    """Upstream's RejectWaitingPod("removed") on deletion: the assumed pod leaves the cache at once."""
    h = harness()
    parked = h.add_pod(make_pod("parked").label(WAITS, "60").req(cpu="1"))
    await h.settle(expire_permits=False)
    assert h.scheduler.cache.assumed_count() == 1
    h.delete(parked)
    await h.settle(expire_permits=False)
    assert h.scheduler.cache.assumed_count() == 0 and h.waiting() == []


async def test_shutdown_cancels_pods_parked_at_permit_without_writing() -> None:
    """drain() on shutdown: a parked binding cycle is cancelled (unreserved, forgotten, no event), rather
    than holding the shutdown until its deadline."""
    h = harness()
    parked = h.add_pod(make_pod("parked").label(WAITS, "600"))
    await h.settle(expire_permits=False)
    events_before = len(h.cluster.events)
    await asyncio.wait_for(h.scheduler.drain(), 5)
    assert h.scheduler.cache.assumed_count() == 0 and h.node_of(parked) is None
    assert len(h.cluster.events) == events_before
