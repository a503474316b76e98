"""PodWatch against a real kube-apiserver: pods reach the cache through the plain WATCH stream, and an
ERROR 410 line (resourceVersion expired) leads to a relist, after which the watch resumes from its RV.

kopf is never started here, so the stream is the only way a pod created after the initial LIST can reach
the scheduler's cache. The 410 is fed as a fake line: this API server does not compact its history within
a test (watching from resourceVersion "1" simply replays it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes_asyncio.client import ApiClient

from scheduler.adapters.cluster import reflector
from scheduler.adapters.cluster.client import KubeClient
from scheduler.adapters.cluster.pod_watch import PodWatch
from scheduler.adapters.cluster.streaming import ResourceExpiredError
from scheduler.adapters.cluster.watch import ClusterWatcher
from scheduler.adapters.cluster.writer import ClusterWriter
from scheduler.core.profile import build_scheduler, default_config
from tests.e2e.conftest import NodeFactory, PodFactory
from tests.e2e.kube import wait_for_pod_bound

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]


@contextlib.asynccontextmanager
async def _watching(kubeconfig: Path, *, schedule: bool) -> AsyncIterator[PodWatch]:
    """An in-process ClusterWatcher (initial LIST done, no kopf) with a running PodWatch (and scheduler)."""
    client = await KubeClient.create(str(kubeconfig), qps=50, burst=100)
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    writer = ClusterWriter(client)
    try:
        scheduler = build_scheduler(writer, default_config())
        watcher = ClusterWatcher(scheduler, client, writer)
        await watcher.initial_sync()
        assert watcher.pods_resource_version, "the initial LIST remembers the pods' resourceVersion"
        pod_watch = PodWatch(watcher)
        tasks.append(asyncio.create_task(pod_watch.run(stop)))
        if schedule:
            tasks.extend(writer.start())
            tasks.append(asyncio.create_task(scheduler.run(stop)))
        yield pod_watch
        for task in tasks:
            assert not task.done(), f"a task ended early: {task!r}"
    finally:
        stop.set()
        await asyncio.sleep(0)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await client.close()


async def test_pods_created_after_startup_are_scheduled_via_the_stream(
    kubeconfig: Path, api_client: ApiClient, namespace: str, create_node: NodeFactory, create_pod: PodFactory
) -> None:
    await create_node(f"{namespace}-n", cpu="4")
    async with _watching(kubeconfig, schedule=True) as pod_watch:
        start_rv = pod_watch.resource_version
        for i in range(3):
            await create_pod(f"p{i}", requests={"cpu": "100m"})
        for i in range(3):
            pod = await wait_for_pod_bound(api_client, namespace, f"p{i}")
            assert pod["spec"]["nodeName"] == f"{namespace}-n"
        stats = pod_watch.watcher.stats
        # The GETs above may see the last bind before the stream delivers it: give the stream a moment.
        deadline = time.monotonic() + 15
        while stats.events.get("pods:MODIFIED", 0) < 3 and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        assert stats.events.get("pods:ADDED", 0) >= 3
        assert stats.events.get("pods:MODIFIED", 0) >= 3, "the binds came back through the stream"
        assert pod_watch.resource_version != start_rv
        assert pod_watch.relists == 0


async def test_a_410_error_line_triggers_a_relist(kubeconfig: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The line handling: a BOOKMARK moves the resourceVersion; an ERROR 410 line makes `run` relist."""
    client = await KubeClient.create(str(kubeconfig), qps=50, burst=100)
    try:
        watcher = ClusterWatcher(build_scheduler(ClusterWriter(client), default_config()), client)
        await watcher.initial_sync()
        pod_watch = PodWatch(watcher)
        pod_watch.resource_version = "100"

        async def lines(*events: object) -> AsyncIterator[bytes]:
            for event in events:
                yield json.dumps(event).encode() + b"\n"

        bookmark = {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "150"}}}
        gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}}
        with pytest.raises(ResourceExpiredError):
            await pod_watch.consume(lines(bookmark, gone))
        assert pod_watch.resource_version == "150"

        stop = asyncio.Event()
        opened: list[str] = []

        @contextlib.asynccontextmanager
        async def fake_open(_c: KubeClient, _p: str, rv: str, **_: object) -> AsyncIterator[AsyncIterator[bytes]]:
            opened.append(rv)
            if len(opened) > 1:
                stop.set()
                yield lines()
            else:
                yield lines(bookmark, gone)

        monkeypatch.setattr(reflector, "open_watch", fake_open)
        await asyncio.wait_for(pod_watch.run(stop), 30)
        assert pod_watch.relists == 1
        assert opened == ["150", watcher.pods_resource_version], "reconnected from the relist's resourceVersion"
    finally:
        await client.close()
