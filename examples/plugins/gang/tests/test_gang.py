"""Gang through pyscheduler's real scheduler in memory (scheduler.testing's harness, simulate's path: no API
server, a fake clock), using only the public face: scheduler.framework and scheduler.testing.

The fake clock is what makes a 60 s Permit timeout take no real time: the run-time of the timeout story is
printed (pytest -s shows it) rather than asserted.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from pyscheduler_gang import NAME_LABEL, SIZE_LABEL, Gang

from scheduler.testing import PodBuilder, SchedulerHarness, configuration, make_node, make_pod

NO_VICTIMS = " preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."


def harness(args: dict[str, Any] | None = None) -> SchedulerHarness:
    """The scheduler with Gang in place of PrioritySort."""
    plugins = {"multiPoint": {"enabled": [{"name": "Gang"}]}, "queueSort": {"disabled": [{"name": "PrioritySort"}]}}
    return SchedulerHarness(configuration(plugins, {"Gang": args or {}}), plugins=[Gang])


def member(name: str, gang: str = "train", size: int = 3, cpu: str = "1") -> PodBuilder:
    return make_pod(name).uid(name).label(NAME_LABEL, gang).label(SIZE_LABEL, str(size)).req(cpu=cpu)


def nodes(h: SchedulerHarness, count: int, cpu: str = "1") -> None:
    h.add(*(make_node(f"n{i}").capacity(cpu=cpu) for i in range(count)))


async def test_members_are_held_until_the_gang_exists_then_bind_together() -> None:
    """Two of three members: both held at PreEnqueue (nothing tried, nothing bound); the third arrives and
    all three bind, one per node."""
    h = harness()
    nodes(h, 3)
    first = [h.add_pod(member(f"train-{i}")) for i in range(2)]
    await h.settle()
    assert [h.node_of(p) for p in first] == [None, None]
    assert h.scheduler.queue.pending()["gated"] == 2 and h.scheduler.attempts == 0
    last = h.add_pod(member("train-2"))
    await h.settle()
    assert sorted(str(h.node_of(p)) for p in [*first, last]) == ["n0", "n1", "n2"]


async def test_placed_members_wait_at_permit_until_the_last_one_is_placed() -> None:
    """All three exist but only two fit: those two wait at Permit, reserved and unbound; a new node lets the
    third be placed and then all three bind."""
    h = harness()
    nodes(h, 2)
    pods = [h.add_pod(member(f"train-{i}")) for i in range(3)]
    await h.settle(expire_permits=False)
    waiting = sorted(w.pod.name for w in h.waiting())
    assert len(waiting) == 2 and [h.node_of(p) for p in pods] == [None, None, None]
    [left_out] = {"train-0", "train-1", "train-2"} - set(waiting)
    assert h.message(left_out) == "0/2 nodes are available: 2 Insufficient cpu." + NO_VICTIMS
    h.add(make_node("n2").capacity(cpu="1"))
    await h.settle(expire_permits=False)
    assert sorted(str(h.node_of(p)) for p in pods) == ["n0", "n1", "n2"]
    assert h.waiting() == []


async def test_a_short_gang_times_out_all_rejected_and_requeued_nothing_bound() -> None:
    """Only two of three fit for good: at the timeout (60 s on the fake clock) both waiting members are
    rejected with upstream's message and requeued; no member is ever bound, and they keep being retried."""
    h = harness({"timeoutSeconds": 60})
    nodes(h, 2)
    pods = [h.add_pod(member(f"train-{i}")) for i in range(3)]
    start = time.perf_counter()
    await h.settle(expire_permits=False)
    waiting = [w.pod.name for w in h.waiting()]
    await h.advance(60)
    took = time.perf_counter() - start
    print(f"\nshort gang: 60 s Permit timeout on the fake clock took {took * 1000:.1f} ms of real time")
    timeout = "0/1 nodes are available: 1 rejected due to timeout after waiting 1m0s at plugin Gang."
    assert len(waiting) == 2 and all(timeout in h.notes(name) for name in waiting)
    assert h.cluster.bindings == [], "nothing half-bound"
    assert {p["metadata"]["uid"] for p in pods} <= set(h.scheduler.pending), "all still queued for a retry"


async def test_a_member_that_gives_up_its_node_releases_the_others() -> None:
    """A waiting member deleted: it is rejected at Permit ("removed"), and its Unreserve rejects the other
    waiting member at once, naming it: nobody holds a node for a gang that cannot form."""
    h = harness()
    nodes(h, 2)
    for i in range(3):
        h.add(member(f"train-{i}"))
    await h.settle(expire_permits=False)
    gone, other = sorted(w.pod.name for w in h.waiting())
    h.delete(h.cluster.pods[gone])
    await h.settle(expire_permits=False)
    released = f"0/1 nodes are available: 1 gang default/train: member default/{gone} was not placed."
    assert released in h.notes(other)
    assert h.cluster.bindings == []


async def test_queue_sort_keeps_a_gangs_members_together() -> None:
    """Members of two interleaved gangs (and a plain pod) are popped gang by gang, higher priority first."""
    h = harness()
    nodes(h, 5, cpu="10")
    h.add(member("a-0", "a", 2), member("b-0", "b", 2), member("a-1", "a", 2), member("b-1", "b", 2))
    h.add(make_pod("urgent").uid("urgent").priority(10).req(cpu="1"))
    await h.settle()
    order = [key.split("/")[1] for key, _ in h.cluster.bindings]
    assert order[0] == "urgent"
    assert sorted(order[1:3]) == ["a-0", "a-1"] and sorted(order[3:]) == ["b-0", "b-1"]


@pytest.mark.parametrize(
    ("label", "message"),
    [
        pytest.param("three", "label gang.example.com/size: must be a positive integer, got 'three'", id="word"),
        pytest.param("0", "label gang.example.com/size: must be a positive integer, got '0'", id="zero"),
    ],
)
async def test_a_bad_size_label_holds_the_pod_saying_why(label: str, message: str) -> None:
    """A member with a malformed size is held at PreEnqueue with a message naming the label."""
    h = harness()
    nodes(h, 1)
    h.add(make_pod("odd").uid("odd").label(NAME_LABEL, "x").label(SIZE_LABEL, label))
    await h.settle()
    [gated] = h.scheduler.queue.gated_pods()
    assert (gated.gating_plugin, gated.gating_message) == ("Gang", message)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param({"timeoutSecond": 5}, "unknown field 'timeoutSecond'", id="typo"),
        pytest.param({"timeoutSeconds": 0}, "timeoutSeconds: must be a number > 0, got 0", id="zero"),
    ],
)
def test_bad_args_name_the_field(args: dict[str, Any], message: str) -> None:
    """Bad pluginConfig args stop the configuration with the field's path."""
    with pytest.raises(ValueError, match=rf"profiles\[0\]\.pluginConfig\[0\]\.args: {message}"):
        harness(args)
