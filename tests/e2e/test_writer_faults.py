"""Regression tests of the fault run's defects 2-4 on a real kube-apiserver (writes through the fault proxy).

2. A bound pod kept `PodScheduled=False`: a failure report queued (or landing) after the bind.
3. A lost bind reply was taken for another scheduler's bind: the retry on another node got 409 "already
   assigned" and the pod was dropped (no Scheduled event, not counted, missing from the cache).
4. A retried event POST whose first attempt landed got 409 AlreadyExists, counted as a write error.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from scheduler.adapters.cluster.client import KubeClient
from scheduler.adapters.cluster.writer import ClusterWriter
from scheduler.core.profile import build_scheduler, default_config
from scheduler.core.scheduler import Scheduler
from scheduler.framework.types import parse_pod
from tests.cluster.harness import ControlPlane
from tests.e2e.conftest import NodeFactory, PodFactory, list_events
from tests.e2e.kube import JSON, bind_pod, get_pod, status_condition, wait_for
from tests.faults.proxy import FaultProxy, is_binding, is_event_post, proxy_for, write_kubeconfig

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


@dataclass
class Proxied:
    proxy: FaultProxy
    client: KubeClient
    writer: ClusterWriter


@pytest.fixture
async def proxied(control_plane: ControlPlane, tmp_path: Path) -> AsyncIterator[Proxied]:
    """A ClusterWriter (workers not started) whose client reaches the API server through the fault proxy."""
    proxy = await proxy_for(control_plane.server, control_plane.work_dir / "pki").start()
    kubeconfig = write_kubeconfig(tmp_path / "proxied.kubeconfig", proxy.url, control_plane.token)
    client = await KubeClient.create(str(kubeconfig), qps=0, burst=100, request_timeout=5.0)
    writer = ClusterWriter(client)
    try:
        yield Proxied(proxy, client, writer)
    finally:
        await writer.close(2.0)
        await client.close()
        await proxy.stop()


def _scheduled_condition(pod: JSON) -> tuple[Any, Any, Any]:
    cond = status_condition(pod, "PodScheduled") or {}
    return cond.get("status"), cond.get("reason"), cond.get("message")


async def test_a_queued_failure_report_is_dropped_when_the_pod_binds(
    proxied: Proxied, api_client: ApiClient, namespace: str, create_node: NodeFactory, create_pod: PodFactory
) -> None:
    """Defect 2: the failure of an earlier attempt is still queued when a later attempt binds: the bind
    supersedes it, nothing writes False afterwards, the pod reads PodScheduled=True."""
    node = f"{namespace}-n"
    await create_node(node)
    pod = parse_pod(await create_pod("p"))
    writer = proxied.writer
    writer.record_failure(pod, "SchedulerError", 'running Bind plugin "DefaultBinder": connection reset by peer')
    await writer.bind(pod, node)
    writer.start()
    assert await writer.flush(20)
    got = await get_pod(api_client, namespace, "p")
    assert got["spec"]["nodeName"] == node
    assert _scheduled_condition(got) == ("True", None, None)
    assert writer.stats.status_superseded == 1 and writer.stats.status_patched == 0


async def test_a_failure_report_landing_after_the_bind_is_put_back(
    proxied: Proxied, api_client: ApiClient, namespace: str, create_node: NodeFactory, create_pod: PodFactory
) -> None:
    """Defect 2, the other order: the pod got bound (here by a bind whose reply we never saw) before our
    False patch reached the API server; the PATCH answer shows the pod bound and the writer restores True."""
    node = f"{namespace}-n"
    await create_node(node)
    pod = parse_pod(await create_pod("p"))
    await bind_pod(api_client, namespace, "p", node)  # landed first; we believe the bind failed
    writer = proxied.writer
    writer.start()
    writer.record_failure(pod, "SchedulerError", 'running Bind plugin "DefaultBinder": connection reset by peer')
    assert await writer.flush(20)
    got = await get_pod(api_client, namespace, "p")
    assert _scheduled_condition(got) == ("True", None, None)
    assert writer.stats.status_patched == 1 and writer.stats.status_restored == 1


async def test_a_lost_bind_reply_is_recorded_as_our_binding(
    proxied: Proxied, api_client: ApiClient, namespace: str, create_node: NodeFactory, create_pod: PodFactory
) -> None:
    """Defect 3 (and 2): the first bind lands but every reply to it and its retries is lost; the next
    attempt goes to another node and gets 409 "already assigned". The pod counts as bound where the API
    says, with a Scheduled event naming that node, held there by the cache, and PodScheduled=True."""
    nodes = [f"{namespace}-a", f"{namespace}-b"]
    node_objs = {n: await create_node(n, cpu="2") for n in nodes}
    created = await create_pod("p", requests={"cpu": "1"})
    uid = created["metadata"]["uid"]
    writer = proxied.writer
    scheduler: Scheduler = build_scheduler(writer, default_config())
    for obj in node_objs.values():
        scheduler.events.on_node_event(None, obj)
    scheduler.events.on_pod_event(None, created)  # no watch runs: the scheduler learns nothing else
    writer.start()
    stop = asyncio.Event()
    loop = asyncio.create_task(scheduler.run(stop))
    try:
        proxied.proxy.lose_replies(is_binding, 1 + proxied.client.max_retries)

        async def first_attempt_failed() -> bool:
            return uid in scheduler.last_failure

        await wait_for(first_attempt_failed, what="the first bind to fail", within=60)
        landed = (await get_pod(api_client, namespace, "p"))["spec"]["nodeName"]
        assert landed in nodes, "the lost bind was committed"
        other = next(n for n in nodes if n != landed)
        cordoned = dict(node_objs[landed], spec={**node_objs[landed].get("spec", {}), "unschedulable": True})
        scheduler.events.on_node_event("MODIFIED", cordoned)  # so the next attempt picks the other node

        async def bound() -> bool:
            return scheduler.bound_count == 1

        await wait_for(bound, what="the pod to count as bound", within=60)
        assert await writer.flush(20)
    finally:
        stop.set()
        await asyncio.wait_for(loop, 30)
    assert proxied.proxy.stats.lost_replies == 1 + proxied.client.max_retries
    assert writer.stats.binds_landed == 1 and writer.stats.bind_conflicts == 0
    held = scheduler.cache.get_pod(uid)
    assert held is not None and held.node_name == landed
    info = scheduler.cache.get_node(other)
    assert info is not None and info.requested.milli_cpu == 0
    assert uid not in scheduler.pending and uid not in scheduler.queue
    notes = [e["note"] for e in await list_events(api_client, namespace) if e["reason"] == "Scheduled"]
    assert notes == [f"Successfully assigned {namespace}/p to {landed}"]
    got = await get_pod(api_client, namespace, "p")
    assert _scheduled_condition(got) == ("True", None, None), "the SchedulerError report was put back"


async def test_a_retried_event_post_whose_first_attempt_landed_is_success(
    proxied: Proxied, api_client: ApiClient, namespace: str, create_node: NodeFactory, create_pod: PodFactory
) -> None:
    """Defect 4: the reply to an event POST is lost, the retry gets 409 AlreadyExists: written, no error."""
    node = f"{namespace}-n"
    await create_node(node)
    pod = parse_pod(await create_pod("p", node_name=node))
    writer = proxied.writer
    proxied.proxy.lose_replies(is_event_post, 1)
    writer.start()
    writer.record_scheduled(pod, node)
    assert await writer.flush(20)
    assert proxied.proxy.stats.lost_replies == 1
    assert writer.stats.write_errors == 0 and writer.stats.events_written == 1
    events = [e for e in await list_events(api_client, namespace) if e["reason"] == "Scheduled"]
    assert len(events) == 1
