"""The node-watch gate: /readyz and the first scheduling cycle wait until kopf's node watch has LISTed.

Our node LIST and kopf's are two requests; a node created after /readyz said ok must not depend on kopf still
getting there (CI saw a pod tried against an empty node set: "no nodes available to schedule pods"). No API
server: kopf's watcher task is stood in for by a task with its name, its events by its registered handler.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from scheduler.adapters.cluster.client import KubeClient
from scheduler.adapters.cluster.run import Health
from scheduler.adapters.cluster.watch import ClusterWatcher
from scheduler.adapters.cluster.writer import ClusterWriter
from scheduler.core.profile import build_scheduler, default_config
from scheduler.testing import make_node

POLL, SETTLE, FALLBACK = 0.01, 0.05, 0.5


@pytest.fixture
async def watcher() -> AsyncIterator[ClusterWatcher]:
    kube = KubeClient(Configuration(host="https://127.0.0.1:9"), qps=0, burst=1)  # never contacted
    try:
        yield ClusterWatcher(build_scheduler(ClusterWriter(kube), default_config()), kube)
    finally:
        await kube.close()


async def _kopf_watcher(stop: asyncio.Event) -> asyncio.Task[bool]:
    """A stand-in for kopf's node watcher task: the gate finds kopf's by this name."""
    return asyncio.get_running_loop().create_task(stop.wait(), name="watcher for nodes.v1@None")


async def _node_handler_event(watcher: ClusterWatcher, name: str) -> None:
    """Deliver one node event the way kopf does: through the handler registered for nodes."""
    (handler,) = [h for h in watcher.registry._watching.get_all_handlers() if h.id == "pyscheduler-nodes"]
    fn: Any = handler.fn  # kopf types it as a sync-or-async callable of its own kwargs
    await fn(type=None, event={"type": None, "object": make_node(name).obj()})


def _ready_failure(watcher: ClusterWatcher) -> str | None:
    health = Health(watcher.scheduler, watcher, watch_stale=3600)
    return health.ready_checks()["informer-sync"]


async def test_an_empty_listing_opens_the_gate_only_after_kopfs_watcher_and_login(watcher: ClusterWatcher) -> None:
    watcher.synced.set()
    watcher.stats.initial_nodes = 0
    stop = asyncio.Event()
    gate = asyncio.create_task(watcher.await_node_watch(stop, poll=POLL, settle=SETTLE, fallback=10.0))
    await asyncio.sleep(5 * SETTLE)
    assert not watcher.node_watch_live.is_set(), "opened before kopf's node watcher existed"
    assert _ready_failure(watcher) == "caches not synced yet: node watch"
    kopf_task = await _kopf_watcher(stop)
    await asyncio.sleep(5 * SETTLE)
    assert not watcher.node_watch_live.is_set(), "opened before kopf had credentials (its LIST waits for them)"
    watcher.kopf_logged_in = watcher.clock()
    assert await asyncio.wait_for(gate, 5) is False
    assert watcher.node_watch_live.is_set()
    assert _ready_failure(watcher) is None
    stop.set()
    await kopf_task


async def test_listed_nodes_keep_the_gate_shut_until_kopf_delivers_one(watcher: ClusterWatcher) -> None:
    watcher.synced.set()
    watcher.stats.initial_nodes = 3
    stop = asyncio.Event()
    kopf_task = await _kopf_watcher(stop)
    gate = asyncio.create_task(watcher.await_node_watch(stop, poll=POLL, settle=SETTLE, fallback=10.0))
    await asyncio.sleep(5 * SETTLE)  # longer than the settle an empty listing gets
    assert not watcher.node_watch_live.is_set()
    await _node_handler_event(watcher, "n1")
    assert await asyncio.wait_for(gate, 5) is False
    assert watcher.scheduler.cache.get_node("n1") is not None, "the handler must still apply the event"
    stop.set()
    await kopf_task


async def test_the_gate_never_waits_forever(watcher: ClusterWatcher, caplog: pytest.LogCaptureFixture) -> None:
    """Listed nodes all deleted before kopf's LIST: no event ever comes; the gate opens after `fallback`, logged."""
    watcher.synced.set()
    watcher.stats.initial_nodes = 2
    stop = asyncio.Event()
    kopf_task = await _kopf_watcher(stop)
    assert await asyncio.wait_for(watcher.await_node_watch(stop, poll=POLL, fallback=FALLBACK), 5) is False
    assert watcher.node_watch_live.is_set()
    assert "kopf's node watch delivered no event" in caplog.text
    stop.set()
    await kopf_task


async def test_the_gate_opens_after_the_fallback_even_without_kopfs_watcher(
    watcher: ClusterWatcher, caplog: pytest.LogCaptureFixture
) -> None:
    """No watcher task at all (kopf renamed it, or it never started): readiness does not wait forever (the
    watchdog is what ends such a process)."""
    watcher.synced.set()
    watcher.stats.initial_nodes = 0
    stop = asyncio.Event()
    assert await asyncio.wait_for(watcher.await_node_watch(stop, poll=POLL, fallback=FALLBACK), 5) is False
    assert watcher.node_watch_live.is_set()
    (record,) = [r for r in caplog.records if "kopf's node watch delivered no event" in r.getMessage()]
    assert record.__dict__["watcherRunning"] is False


async def test_stop_ends_the_wait(watcher: ClusterWatcher) -> None:
    watcher.synced.set()
    stop = asyncio.Event()
    gate = asyncio.create_task(watcher.await_node_watch(stop, poll=POLL))
    await asyncio.sleep(3 * POLL)
    stop.set()
    assert await asyncio.wait_for(gate, 5) is True
    assert not watcher.node_watch_live.is_set()


async def test_kopfs_login_is_recorded(watcher: ClusterWatcher) -> None:
    """The gate's anchor for an empty listing: the time kopf got its credentials from our login handler."""
    (handler,) = [h for h in watcher.registry._activities.get_all_handlers() if h.id == "pyscheduler-login"]
    fn: Any = handler.fn
    assert watcher.kopf_logged_in == 0
    info = await fn()
    assert info.server == "https://127.0.0.1:9"
    assert watcher.kopf_logged_in > 0
