"""ClusterWriter bookkeeping that needs no API server: what it queues, supersedes, orders and forgets.

The writes themselves (binds, patches, events against a real kube-apiserver, with lost replies) are proven in
tests/e2e/test_writer_faults.py; these tests never start the workers, so nothing is sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio.client import Configuration

from scheduler.adapters.cluster.client import KubeClient
from scheduler.adapters.cluster.writer import EVENT_SERIES_FINISH, ClusterWriter
from scheduler.core.clock import FakeClock
from scheduler.testing import make_pod

EMPTY = {
    "queued_events": 0,
    "queued_status": 0,
    "status_in_flight": 0,
    "event_cache": 0,
    "event_cache_pods": 0,
    "conditions": 0,
}


@pytest.fixture
async def writer() -> AsyncIterator[ClusterWriter]:
    client = KubeClient(Configuration(host="https://127.0.0.1:9"), qps=0, burst=1)  # never contacted
    try:
        yield ClusterWriter(client, hostname="test", clock=FakeClock())
    finally:
        await client.close()


def _drain(writer: ClusterWriter) -> list[str]:
    """Take every queued write as a worker would (without sending it); returns their kinds."""
    kinds: list[str] = []
    while (write := writer._next()) is not None:
        kinds.append(write.kind)
    return kinds


async def test_forget_pod_drops_its_queued_report_and_everything_remembered(writer: ClusterWriter) -> None:
    """Bound or deleted: the queued PodScheduled=False is superseded, the condition and event entries go."""
    assert writer.state_sizes() == EMPTY
    pods = [make_pod(f"p{i}").uid(f"u{i}").info() for i in range(5)]
    for pod in pods:
        writer.record_failure(pod, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.")
    sizes = writer.state_sizes()
    kept = ("queued_status", "conditions", "event_cache", "event_cache_pods")
    assert [sizes[k] for k in kept] == [5, 5, 5, 5]
    for pod in pods:
        writer.forget_pod(pod.uid)
    assert writer.stats.status_superseded == 5
    assert _drain(writer) == ["event"] * 5, "events already queued are still written; no status patch is"
    assert writer.state_sizes() == EMPTY


async def test_forget_pod_writes_the_final_count_of_an_unfinished_series(writer: ClusterWriter) -> None:
    """An isomorphic failure repeated after its series was written: forgetting the pod writes the last count."""
    pod = make_pod("p").uid("u").info()
    for _ in range(3):
        writer.record_failure(pod, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.")
    assert _drain(writer) == ["status", "event", "series"]  # count 2 is written at once, count 3 waits
    writer.forget_pod(pod.uid)
    queued = writer._next()
    assert queued is not None and queued.kind == "series" and queued.body["series"]["count"] == 3
    assert writer.state_sizes() == EMPTY


async def test_series_maintenance_keeps_the_index_in_step(writer: ClusterWriter) -> None:
    """Entries finished by maintain_series also leave the per-pod index (no dangling keys)."""
    clock = writer._clock
    assert isinstance(clock, FakeClock)
    for i in range(3):
        writer.record_scheduled(make_pod(f"p{i}").uid(f"u{i}").info(), "n1")
    assert writer.state_sizes()["event_cache_pods"] == 3
    clock.advance(EVENT_SERIES_FINISH + 1)
    writer.maintain_series()
    _drain(writer)
    assert writer.state_sizes() == EMPTY


async def test_one_status_patch_per_pod_at_a_time(writer: ClusterWriter) -> None:
    """While a pod's patch is in flight its next one waits, so an older report never lands after a newer one."""
    a, b = make_pod("a").uid("a").info(), make_pod("b").uid("b").info()
    writer.record_failure(a, "Unschedulable", "first")
    first = writer._next()
    assert first is not None and first.kind == "status" and first.uid == "a"
    writer._status_in_flight["a"] = asyncio.Event()  # a worker is sending it
    writer.record_failure(a, "Unschedulable", "second")
    writer.record_failure(b, "Unschedulable", "other pod")
    second = writer._next()
    assert second is not None and second.uid == "b", "a's newer patch waits for the one in flight"
    del writer._status_in_flight["a"]
    third = writer._next()
    assert third is not None and third.uid == "a" and third.body["status"]["conditions"][0]["message"] == "second"


async def test_a_queued_write_wakes_one_idle_worker_not_all(writer: ClusterWriter) -> None:
    """Eight idle workers and one event: one wakes for it, seven stay asleep (no worker per event and per worker)."""
    woken: list[int] = []

    async def perform(write: object) -> None:
        woken.append(1)

    writer._perform = perform  # type: ignore[method-assign]  # nothing is sent
    tasks = writer.start()
    try:
        for _ in range(3):
            await asyncio.sleep(0)
        assert len(writer._sleeping) == 8
        writer.record_scheduled(make_pod("a").uid("a").info(), "node-1")
        for _ in range(5):
            await asyncio.sleep(0)
        assert woken == [1]
        assert sum(1 for w in writer._sleeping if not w.done()) == 8  # the woken one went back to sleep
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
