"""A bind that got no answer keeps the pod's room on its node until the watch or a read says where the pod is.

The fault suite's error storm over-committed a node (14 pods of 150m on 2000m): a bind landed, its reply was
cut, its retries met 429s; the binding cycle forgot the pod at once, and the watch, cut by the same storm, told
the cache only after other pods had been bound into the room the lost pod held. These tests replay that
sequence on the in-memory cluster, with the reply, the watch and the read each under the test's control.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from scheduler.adapters.memory import MemoryCluster
from scheduler.core.api import BindOutcomeUnknownError
from scheduler.core.clock import FakeClock
from scheduler.core.event_handlers import MODIFIED
from scheduler.core.profile import build_scheduler
from scheduler.core.scheduler import Scheduler
from scheduler.framework.types import PodInfo
from scheduler.testing import make_node, make_pod

JSON = dict[str, Any]
NO_VICTIMS = " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
UNANSWERED = 'running Bind plugin "DefaultBinder": connection reset by peer'


class StormCluster(MemoryCluster):
    """While `storm` is set, binds get no answer (BindOutcomeUnknownError) and commit when `lands`; the watch
    events of those bindings wait in `lagging` until `catch_up()`; reads of a pod wait for `readable`."""

    def __init__(self, *, lands: bool) -> None:
        super().__init__()
        self.lands = lands
        self.storm = True
        self.lagging: list[JSON] = []
        self.readable = asyncio.Event()
        self.reads = 0

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        if not self.storm:
            await super().bind(pod, node_name)
            return
        if self.lands:
            obj = self.pods[pod.uid]
            obj["spec"]["nodeName"] = node_name  # committed; the reply and the watch event are lost for now
            self.bindings.append((pod.key, node_name))
            self.lagging.append(obj)
        raise BindOutcomeUnknownError("connection reset by peer")

    async def bound_node(self, pod: PodInfo) -> str:
        self.reads += 1
        await self.readable.wait()
        return await super().bound_node(pod)

    def catch_up(self) -> None:
        """The watch delivers the bindings it held back."""
        assert self.scheduler is not None
        for obj in self.lagging:
            self.scheduler.events.on_pod_event(MODIFIED, obj)
        self.lagging.clear()


@dataclass
class Live:
    """A scheduler running its loop (`Scheduler.run`) over a StormCluster, with a fake clock for backoffs."""

    cluster: StormCluster
    scheduler: Scheduler
    clock: FakeClock
    stop: asyncio.Event
    task: asyncio.Task[None]

    def pod(self, name: str, cpu: str) -> JSON:
        obj = make_pod(name).uid(name).req(cpu=cpu).obj()
        self.cluster.apply_pod(obj)
        return obj

    def notes(self, name: str) -> list[tuple[str, str]]:
        return [(e.reason, e.note) for e in self.cluster.events if e.name == name]

    def requested(self, node: str) -> int:
        info = self.scheduler.cache.get_node(node)
        assert info is not None
        return info.requested.milli_cpu

    def api_pods_on(self, node: str) -> list[str]:
        return sorted(p["metadata"]["name"] for p in self.cluster.pods.values() if p["spec"].get("nodeName") == node)


async def until(predicate: Callable[[], bool], what: str, within: float = 5.0) -> None:
    """Poll the running loop until `predicate` holds (bounded: a broken fix fails here, it does not hang)."""
    deadline = asyncio.get_running_loop().time() + within
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)


@contextlib.asynccontextmanager
async def running(*, lands: bool) -> AsyncIterator[Live]:
    """A StormCluster and its scheduler's loop, stopped (and every hanging read released) on exit."""
    cluster = StormCluster(lands=lands)
    clock = FakeClock()
    scheduler = build_scheduler(cluster, None, clock=clock, seed=0)
    cluster.attach(scheduler)
    stop = asyncio.Event()
    task = asyncio.create_task(scheduler.run(stop))
    try:
        yield Live(cluster, scheduler, clock, stop, task)
    finally:
        cluster.readable.set()
        stop.set()
        await asyncio.wait_for(task, 5)


@pytest.fixture(params=[True, False], ids=["lands", "does-not-land"])
async def live(request: pytest.FixtureRequest) -> AsyncIterator[Live]:
    """A live scheduler whose binds get no answer, and land or not."""
    async with running(lands=request.param) as env:
        yield env


@pytest.fixture
async def storm() -> AsyncIterator[Live]:
    """A live scheduler whose binds land but get no answer (the storm's case)."""
    async with running(lands=True) as env:
        yield env


async def test_the_room_of_an_unanswered_bind_is_not_given_to_another_pod(storm: Live) -> None:
    """The field failure: p's bind lands unanswered and the watch lags; q, which fits only in p's room, must
    not be bound there (before the fix q was bound and the node held both: over-committed)."""
    storm.cluster.apply_node(make_node("n").capacity(cpu="1").obj())
    storm.pod("p", "600m")
    await until(lambda: storm.cluster.bindings == [("default/p", "n")], "p's bind to land (unanswered)")
    storm.cluster.storm = False  # binds are answered again; the watch still lags, p cannot be read yet
    storm.pod("q", "600m")
    await until(lambda: bool(storm.notes("q")) or storm.api_pods_on("n") != ["p"], "q's attempt to finish")
    assert storm.api_pods_on("n") == ["p"], "q was bound into the room p holds: node over-committed"
    assert storm.notes("q") == [("FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu." + NO_VICTIMS)]
    assert storm.requested("n") == 600 and storm.scheduler.cache.is_assumed("p"), "p keeps its room meanwhile"
    assert storm.notes("p") == [], "nothing is reported while p's outcome is unknown"
    storm.cluster.readable.set()  # the read answers: p is bound on n
    await until(lambda: bool(storm.notes("p")), "p's binding to be reported")
    assert storm.notes("p") == [("Scheduled", "Successfully assigned default/p to n")], "p's bind landed: ours"
    assert storm.scheduler.bound_count == 1 and "p" not in storm.scheduler.pending
    storm.cluster.catch_up()
    held = storm.scheduler.cache.get_pod("p")
    assert held is not None and held.node_name == "n" and not storm.scheduler.cache.is_assumed("p")
    assert storm.requested("n") == 600
    assert storm.scheduler.resolving == {} and storm.scheduler.unconfirmed_binds == {}


async def test_the_room_is_held_until_the_read_answers_then_released_only_if_unbound(live: Live) -> None:
    """While p cannot be read its room stays taken, landed or not; the read then decides: landed -> bound, one
    Scheduled event, no second bind; not landed -> the room is released and p is retried after its backoff,
    with the FailedScheduling kube-scheduler reports for a failed bind."""
    live.cluster.apply_node(make_node("n").capacity(cpu="1").obj())
    live.pod("p", "600m")
    await until(lambda: live.cluster.reads == 1, "p to be read")
    assert live.requested("n") == 600 and live.scheduler.cache.is_assumed("p")
    assert live.notes("p") == [], "nothing is reported while the outcome is unknown"
    live.cluster.storm = False
    live.cluster.readable.set()
    if live.cluster.lands:
        await until(lambda: live.scheduler.bound_count == 1, "p to count as bound")
        assert live.notes("p") == [("Scheduled", "Successfully assigned default/p to n")]
        assert live.cluster.bindings == [("default/p", "n")], "not bound a second time"
    else:
        await until(lambda: bool(live.notes("p")), "p's failure to be reported")
        assert live.notes("p") == [("FailedScheduling", UNANSWERED)]
        assert live.requested("n") == 0, "unbound after all: the room is free again"
        assert "p" in live.scheduler.unconfirmed_binds, "a late landing would still be recognised as ours"
        live.clock.advance(2.0)  # past the 1 s backoff
        live.scheduler.notify()
        await until(lambda: live.scheduler.bound_count == 1, "p's retry to bind")
        assert [reason for reason, _ in live.notes("p")] == ["FailedScheduling", "Scheduled"]
        assert live.cluster.bindings == [("default/p", "n")]
    assert live.api_pods_on("n") == ["p"] and live.requested("n") == 600
    assert live.scheduler.resolving == {}


@pytest.mark.parametrize(
    ("watch_node", "bound", "events"),
    [
        pytest.param("a", 1, [("Scheduled", "Successfully assigned default/p to a")], id="bound-where-we-bound"),
        pytest.param("b", 0, [], id="bound-elsewhere-by-someone-else"),
    ],
)
async def test_the_watch_resolves_an_unanswered_bind_before_any_read(
    storm: Live, watch_node: str, bound: int, events: list[tuple[str, str]]
) -> None:
    """The watch shows p bound while the read still hangs: on our node it is our binding (reported once, no
    second bind); on another node it is someone else's (p leaves the queue, nothing reported); either way the
    cache holds p where the API says and our node's room is released only in the second case."""
    storm.cluster.apply_node(make_node("a").capacity(cpu="1").obj())
    storm.cluster.apply_node(make_node("b").capacity(cpu="1").unschedulable().obj())
    storm.pod("p", "600m")
    await until(lambda: "p" in storm.scheduler.resolving, "p's binding cycle to wait")
    obj = storm.cluster.pods["p"]
    obj["spec"]["nodeName"] = watch_node
    storm.cluster.lagging.clear()
    storm.scheduler.events.on_pod_event(MODIFIED, obj)
    await until(lambda: "p" not in storm.scheduler.resolving, "the watch to resolve p's binding")
    await storm.scheduler.drain()
    assert storm.scheduler.bound_count == bound and storm.notes("p") == events
    assert storm.cluster.bindings == [("default/p", "a")], "no second bind"
    held = storm.scheduler.cache.get_pod("p")
    assert held is not None and held.node_name == watch_node and not storm.scheduler.cache.is_assumed("p")
    assert storm.requested(watch_node) == 600 and storm.requested("b" if watch_node == "a" else "a") == 0
    assert "p" not in storm.scheduler.pending and "p" not in storm.scheduler.queue


async def test_a_pod_deleted_while_its_binding_is_in_doubt_leaves_nothing(storm: Live) -> None:
    """Deleted while the read hangs: the binding cycle ends at once, the room and every per-pod entry go."""
    storm.cluster.apply_node(make_node("n").capacity(cpu="1").obj())
    baseline = storm.scheduler.state_sizes()
    del baseline["snapshot_nodes"]  # filled by the first cycle
    storm.pod("p", "600m")
    await until(lambda: "p" in storm.scheduler.resolving, "p's binding cycle to wait")
    storm.cluster.delete_pod("p")
    await until(lambda: "p" not in storm.scheduler.resolving, "the deletion to end p's binding cycle")
    await storm.scheduler.drain()
    assert storm.notes("p") == [] and storm.requested("n") == 0
    sizes = storm.scheduler.state_sizes()
    del sizes["snapshot_nodes"]
    assert sizes == baseline


async def test_stopping_gives_up_a_binding_in_doubt(storm: Live) -> None:
    """The scheduler stops while a read hangs: the binding cycle gives up (no hang) and reports the failed
    bind, as before the fix."""
    storm.cluster.apply_node(make_node("n").obj())
    storm.pod("p", "100m")
    await until(lambda: "p" in storm.scheduler.resolving, "p's binding cycle to wait")
    storm.stop.set()
    await asyncio.wait_for(storm.task, 5)
    assert storm.scheduler.resolving == {} and storm.scheduler.stopping
    assert storm.notes("p") == [("FailedScheduling", UNANSWERED)]
