"""The fault proxy (tests/faults/proxy.py) in front of the real kube-apiserver: each fault does what it says.

The fault suite and the regression tests of the fault run rely on it, so its faults are proven here first:
requests pass; a cut ends a watch stream; a storm answers 429 without reaching the API server; a lost reply
leaves the request committed; a partition makes requests time out; a stall holds bytes and delivers them; a
lag holds a watch's events until it catches up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio.client import ApiClient

from scheduler.adapters.cluster.client import ApiError, KubeClient, pod_path
from scheduler.adapters.cluster.streaming import open_watch
from tests.cluster.harness import ControlPlane
from tests.e2e.conftest import NodeFactory, PodFactory
from tests.e2e.kube import get_pod
from tests.faults.proxy import FaultProxy, is_binding, is_pod_watch, proxy_for, write_kubeconfig

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


@pytest.fixture
async def proxy(control_plane: ControlPlane) -> AsyncIterator[FaultProxy]:
    fault_proxy = await proxy_for(control_plane.server, control_plane.work_dir / "pki").start()
    try:
        yield fault_proxy
    finally:
        await fault_proxy.stop()


@pytest.fixture
async def proxied(control_plane: ControlPlane, proxy: FaultProxy, tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A KubeClient (few retries, short timeouts) that reaches the API server through the proxy."""
    kubeconfig = write_kubeconfig(tmp_path / "proxied.kubeconfig", proxy.url, control_plane.token)
    client = await KubeClient.create(str(kubeconfig), qps=0, burst=100, request_timeout=3.0, max_retries=1)
    try:
        yield client
    finally:
        await client.close()


async def test_requests_pass_and_a_cut_ends_a_watch_stream(
    proxy: FaultProxy, proxied: KubeClient, namespace: str
) -> None:
    """A GET answers through the proxy; cut() aborts an open watch stream (the client sees an error)."""
    doc = await proxied.request("GET", f"/api/v1/namespaces/{namespace}")
    assert doc["metadata"]["name"] == namespace
    ended: BaseException | None = None
    async with open_watch(proxied, f"/api/v1/namespaces/{namespace}/pods", "0", read_timeout=30) as lines:
        reader = asyncio.ensure_future(_drain(lines))
        await asyncio.sleep(0.5)
        assert proxy.cut() >= 1
        try:
            await asyncio.wait_for(reader, 10)
        except (aiohttp.ClientError, ConnectionError) as exc:
            ended = exc
    assert ended is not None or reader.done(), "the stream ended with the cut"
    assert proxy.stats.cut_connections >= 1


async def _drain(lines: object) -> None:
    async for _ in lines:  # type: ignore[attr-defined]
        pass


async def test_a_storm_answers_locally(proxy: FaultProxy, proxied: KubeClient, namespace: str) -> None:
    """storm(429): every request gets 429 from the proxy (never forwarded) until it ends."""
    proxy.storm(429, 3.0)
    with pytest.raises(ApiError) as err:
        await proxied.request("GET", f"/api/v1/namespaces/{namespace}", retry="never")
    assert err.value.status == 429
    assert proxy.stats.stormed_requests >= 1
    await asyncio.sleep(3.2)
    doc = await proxied.request("GET", f"/api/v1/namespaces/{namespace}")
    assert doc["metadata"]["name"] == namespace


async def test_a_lost_reply_still_commits_the_request(
    proxy: FaultProxy,
    proxied: KubeClient,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """lose_replies(binding): the bind lands on the API server, the client gets a transport error."""
    node = f"{namespace}-n"
    await create_node(node)
    await create_pod("p")
    proxy.lose_replies(is_binding, 1)
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"name": node}}
    with pytest.raises(ApiError) as err:
        await proxied.request("POST", pod_path(namespace, "p", "binding"), body=binding, retry="never")
    assert err.value.status == 0, "no answer reached the client"
    assert proxy.stats.lost_replies == 1
    assert (await get_pod(api_client, namespace, "p"))["spec"]["nodeName"] == node


async def test_a_partition_times_requests_out_until_healed(
    proxy: FaultProxy, proxied: KubeClient, namespace: str
) -> None:
    """partition(): a request through an open connection and through a new one both time out; heal()
    lets new connections through again."""
    await proxied.request("GET", f"/api/v1/namespaces/{namespace}")  # an open, pooled connection
    proxy.partition()
    with pytest.raises(ApiError) as err:
        await proxied.request("GET", f"/api/v1/namespaces/{namespace}", request_timeout=2.0)
    assert err.value.status == 0
    proxy.heal()
    doc = await proxied.request("GET", f"/api/v1/namespaces/{namespace}")
    assert doc["metadata"]["name"] == namespace


async def test_a_stall_holds_the_bytes_and_delivers_them(
    proxy: FaultProxy, proxied: KubeClient, namespace: str
) -> None:
    """stall(): a request waits while stalled and completes after resume() (nothing lost)."""
    await proxied.request("GET", f"/api/v1/namespaces/{namespace}")
    proxy.stall()
    pending = asyncio.ensure_future(proxied.request("GET", f"/api/v1/namespaces/{namespace}", request_timeout=20.0))
    await asyncio.sleep(1.0)
    assert not pending.done(), "held while stalled"
    proxy.resume()
    doc = await asyncio.wait_for(pending, 20)
    assert doc["metadata"]["name"] == namespace
    with contextlib.suppress(Exception):
        pending.cancel()


async def test_a_lag_holds_a_watch_until_it_catches_up(
    proxy: FaultProxy, proxied: KubeClient, namespace: str, create_pod: PodFactory
) -> None:
    """lag(pod watch): the event of a pod created meanwhile is held (the watch stays open, nothing is lost)
    and arrives on catch_up()."""
    rv = (await proxied.request("GET", f"/api/v1/namespaces/{namespace}/pods"))["metadata"]["resourceVersion"]
    async with open_watch(proxied, f"/api/v1/namespaces/{namespace}/pods", rv, read_timeout=30) as lines:
        first = asyncio.ensure_future(_first_event(lines))
        await asyncio.sleep(0.5)  # the watch request has reached the proxy
        proxy.lag(is_pod_watch)
        await create_pod("p")
        await asyncio.sleep(1.0)
        assert not first.done(), "held while lagging"
        assert proxy.stats.lagged_connections == 1
        proxy.catch_up()
        event = await asyncio.wait_for(first, 10)
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "p"


async def _first_event(lines: object) -> dict[str, Any]:
    async for line in lines:  # type: ignore[attr-defined]
        if line.strip():
            event: dict[str, Any] = json.loads(line)
            if event["type"] != "BOOKMARK":
                return event
    raise AssertionError("the watch ended without an event")
