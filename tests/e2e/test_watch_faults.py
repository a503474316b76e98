"""Regression test of the fault run's defect 1 on a real kube-apiserver: cuts of a healthy pod watch.

The fault run cut the connection of a pod watch that kept delivering events six times; the watch waited 0.5,
1, 2, 4, 8 and 10 s before reconnecting (its backoff was reset only when a stream ended normally), binds
stalled meanwhile, and the next resync reported that lag as drift. Here the watch runs in-process through
the fault proxy, each round creates a pod, waits until the scheduler bound it (the bind comes back through
the stream), then cuts every connection: the watch must reconnect at once every time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from kubernetes_asyncio.client import ApiClient

from scheduler.adapters.cluster.client import KubeClient
from scheduler.adapters.cluster.pod_watch import PodWatch
from scheduler.adapters.cluster.watch import ClusterWatcher
from scheduler.adapters.cluster.writer import ClusterWriter
from scheduler.core.profile import build_scheduler, default_config
from tests.cluster.harness import ControlPlane
from tests.e2e.conftest import NodeFactory, PodFactory
from tests.e2e.kube import wait_for, wait_for_pod_bound
from tests.faults.proxy import proxy_for, write_kubeconfig

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

CUTS = 6


async def test_cuts_of_a_healthy_pod_watch_reconnect_at_once(
    control_plane: ControlPlane,
    tmp_path: Path,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    await create_node(f"{namespace}-n", cpu="8")
    proxy = await proxy_for(control_plane.server, control_plane.work_dir / "pki").start()
    kubeconfig = write_kubeconfig(tmp_path / "proxied.kubeconfig", proxy.url, control_plane.token)
    client = await KubeClient.create(str(kubeconfig), qps=50, burst=100)
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    try:
        writer = ClusterWriter(client)
        scheduler = build_scheduler(writer, default_config())
        watcher = ClusterWatcher(scheduler, client, writer)
        await watcher.initial_sync()
        pod_watch = PodWatch(watcher)
        tasks = [asyncio.create_task(pod_watch.run(stop)), asyncio.create_task(scheduler.run(stop)), *writer.start()]
        for i in range(CUTS):
            await create_pod(f"p{i}", requests={"cpu": "100m"})
            await wait_for_pod_bound(api_client, namespace, f"p{i}", within=60)

            async def confirmed(uid: str = f"p{i}") -> bool:  # the bind came back through the stream
                held = scheduler.cache.dump()["nodes"].get(f"{namespace}-n", {}).get("pods", [])
                return f"{namespace}/{uid}" in held and not scheduler.cache.assumed_count()

            await wait_for(confirmed, what=f"p{i} confirmed by the watch", within=60)
            before = pod_watch.reconnects
            assert proxy.cut() >= 1

            async def reconnected(before: int = before) -> bool:
                return pod_watch.reconnects > before

            await wait_for(reconnected, what="a reconnect", within=30)
        await create_pod("last", requests={"cpu": "100m"})
        await wait_for_pod_bound(api_client, namespace, "last", within=60)
        for task in tasks:
            assert not task.done(), f"a task ended early: {task!r}"
        print(f"{CUTS} cuts: {pod_watch.reconnects} reconnects, {pod_watch.backoffs} of them waited")
        assert pod_watch.reconnects >= CUTS
        assert pod_watch.backoffs == 0, "every cut stream had delivered events: no reconnect may wait"
        assert pod_watch.relists == 0
    finally:
        stop.set()
        await asyncio.sleep(0)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await client.close()
        await proxy.stop()
