"""Regression tests of the fault run's defects 2-5 on a real kube-apiserver (writes through the fault proxy).

2. A bound pod kept `PodScheduled=False`: a failure report queued (or landing) after the bind.
3. A lost bind reply was taken for another scheduler's bind: the retry on another node got 409 "already
   assigned" and the pod was dropped (no Scheduled event, not counted, missing from the cache).
4. A retried event POST whose first attempt landed got 409 AlreadyExists, counted as a write error.
5. A node over-committed under an error storm: a bind landed unanswered, the pod's room was given away at
   once and filled by another pod before the (equally cut) watch told the cache. The same fault against the
   upstream binary shows kube-scheduler v1.37.2 over-commits too (it forgets the pod on any bind error);
   pyscheduler keeps the room until the watch or a read says where the pod is.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from scheduler.adapters.cluster.client import KubeClient
from scheduler.adapters.cluster.writer import ClusterWriter
from scheduler.core.api import BindOutcomeUnknownError
from scheduler.core.profile import build_scheduler, default_config
from scheduler.core.scheduler import Scheduler
from scheduler.framework.types import parse_pod
from tests.cluster.harness import ControlPlane
from tests.e2e.conftest import NodeFactory, PodFactory, list_events, wait_for_event
from tests.e2e.kube import JSON, bind_pod, get_pod, list_pods, request_json, status_condition, wait_for
from tests.faults.proxy import FaultProxy, is_binding, is_event_post, is_pod_watch, proxy_for, write_kubeconfig
from tests.faults.suite import in_thread

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

STORM_SECONDS = 8.0  # longer than a bind's retries with Retry-After: 1 (about 4.5 s)


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


@contextlib.asynccontextmanager
async def scheduling(scheduler: Scheduler, writer: ClusterWriter) -> AsyncIterator[None]:
    """The writer's workers and the scheduler's loop run inside; on exit the loop stops (binds drained)."""
    writer.start()
    stop = asyncio.Event()
    loop = asyncio.create_task(scheduler.run(stop))
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(loop, 30)


def _bound_count(scheduler: Scheduler, count: int) -> Callable[[], Awaitable[bool]]:
    """A wait_for probe: the scheduler has counted `count` pods bound."""

    async def probe() -> bool:
        return scheduler.bound_count == count

    return probe


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
    """Defect 3 (and 5): the first bind lands but every reply to it and its retries is lost. The binding cycle
    keeps the pod's room and reads the pod: bound where it landed, counted as ours with one Scheduled event
    naming that node, no FailedScheduling, no attempt on the other node, PodScheduled=True."""
    nodes = [f"{namespace}-a", f"{namespace}-b"]
    node_objs = {n: await create_node(n, cpu="2") for n in nodes}
    created = await create_pod("p", requests={"cpu": "1"})
    uid = created["metadata"]["uid"]
    writer = proxied.writer
    scheduler: Scheduler = build_scheduler(writer, default_config())
    for obj in node_objs.values():
        scheduler.events.on_node_event(None, obj)
    scheduler.events.on_pod_event(None, created)  # no watch runs: the scheduler learns nothing else
    async with scheduling(scheduler, writer):
        proxied.proxy.lose_replies(is_binding, 1 + proxied.client.max_retries)
        await wait_for(_bound_count(scheduler, 1), what="the pod to count as bound", within=60)
        assert await writer.flush(20)
    landed = (await get_pod(api_client, namespace, "p"))["spec"]["nodeName"]
    assert landed in nodes, "the lost bind was committed"
    assert proxied.proxy.stats.lost_replies == 1 + proxied.client.max_retries
    assert writer.stats.bind_errors == 1 and writer.stats.bind_conflicts == 0
    held = scheduler.cache.get_pod(uid)
    assert held is not None and held.node_name == landed
    info = scheduler.cache.get_node(next(n for n in nodes if n != landed))
    assert info is not None and info.requested.milli_cpu == 0
    assert uid not in scheduler.pending and uid not in scheduler.queue and uid not in scheduler.last_failure
    events = [(e["reason"], e["note"]) for e in await list_events(api_client, namespace)]
    assert events == [("Scheduled", f"Successfully assigned {namespace}/p to {landed}")]
    got = await get_pod(api_client, namespace, "p")
    assert _scheduled_condition(got) == ("True", None, None)


async def test_a_cut_bind_retried_into_429s_is_an_unknown_outcome(
    proxied: Proxied, api_client: ApiClient, namespace: str, create_node: NodeFactory, create_pod: PodFactory
) -> None:
    """Defect 5, the client half: the first attempt of a bind lands and its connection is cut, every retry
    meets a 429 (the error storm). The last answer is a 429, yet the bind may have landed: the writer raises
    BindOutcomeUnknownError (a plain BindError before, which gave the pod's room away), and the read after
    the storm finds the pod bound there."""
    node = f"{namespace}-n"
    await create_node(node)
    pod = parse_pod(await create_pod("p"))
    proxy = proxied.proxy
    proxy.lose_replies(is_binding, 1, then=lambda: proxy.storm(429, STORM_SECONDS))
    with pytest.raises(BindOutcomeUnknownError):
        await proxied.writer.bind(pod, node)
    assert proxy.stats.lost_replies == 1 and proxy.stats.stormed_requests == proxied.client.max_retries
    assert (await get_pod(api_client, namespace, "p"))["spec"]["nodeName"] == node, "it landed"

    async def read_after_the_storm() -> str | None:
        with contextlib.suppress(BindOutcomeUnknownError):
            return await proxied.writer.bound_node(pod)
        return None

    assert await wait_for(read_after_the_storm, what="a read of p after the storm", within=30) == node


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


@dataclass
class RoomFault:
    """Node n (1 cpu) and two 600m pods: p (bound first) and q (kept out by a nodeSelector until n gets the
    label open=yes). Every reply to p's binding and to reads of p is lost while `losing`."""

    node: str
    losing: bool = True

    def p_binding(self, method: str, path: str) -> bool:
        return is_binding(method, path) and path.split("?")[0].split("/")[-2] == "p"

    def p_read(self, method: str, path: str) -> bool:
        return self.losing and method == "GET" and path.split("?")[0].endswith("/pods/p")


async def _room_fault(
    proxy: FaultProxy, namespace: str, create_node: NodeFactory, create_pod: PodFactory, scheduler_name: str
) -> tuple[RoomFault, JSON, JSON, JSON]:
    """The fault of defect 5: p's bind lands unanswered, and the pod watch lags from just before it (its
    events, p's binding first, are held back), as the storm's cut watch did. Returns the fault, the node, p
    and q as created."""
    fault = RoomFault(f"{namespace}-n")
    node = await create_node(fault.node, cpu="1")
    q = await create_pod("q", scheduler_name=scheduler_name, requests={"cpu": "600m"}, node_selector={"open": "yes"})
    proxy.lose_replies(fault.p_binding, 100, before=lambda: proxy.lag(is_pod_watch))
    proxy.lose_replies(fault.p_read, 1000)
    selector = {"kubernetes.io/hostname": fault.node}
    p = await create_pod("p", scheduler_name=scheduler_name, requests={"cpu": "600m"}, node_selector=selector)
    return fault, node, p, q


async def _open(api_client: ApiClient, node: str) -> JSON:
    """Label n open=yes (straight to the API server: node watches are not held)."""
    body = {"metadata": {"labels": {"open": "yes"}}}
    answer: JSON = await request_json(
        api_client, "PATCH", f"/api/v1/nodes/{node}", body=body, content_type="application/merge-patch+json"
    )
    return answer


async def _on(api_client: ApiClient, namespace: str, node: str) -> list[str]:
    """The names of the namespace's pods the API server shows bound to `node`."""
    pods = await list_pods(api_client, namespace)
    return sorted(p["metadata"]["name"] for p in pods if p["spec"].get("nodeName") == node)


async def test_kube_scheduler_binds_another_pod_into_the_room_of_an_unanswered_bind(
    control_plane: ControlPlane,
    proxied: Proxied,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
    tmp_path: Path,
) -> None:
    """Defect 5 against the upstream binary (evidence, not a goal): kube-scheduler forgets p on its failed
    bind, and while its pod watch lags it binds q into the room p holds: 1200m on a 1000m node."""
    kubeconfig = write_kubeconfig(tmp_path / "upstream.kubeconfig", proxied.proxy.url, control_plane.token)
    # In a thread: the readiness wait blocks, and the proxy it reaches the API server through runs on this loop.
    await in_thread(lambda: control_plane.start_kube_scheduler(kubeconfig=kubeconfig))
    try:
        fault, _, _, _ = await _room_fault(proxied.proxy, namespace, create_node, create_pod, "default-scheduler")
        await wait_for_event(api_client, namespace, "p", "FailedScheduling")  # its bind "failed": p is forgotten
        assert await _on(api_client, namespace, fault.node) == ["p"], "p's bind landed"
        await _open(api_client, fault.node)

        async def both() -> list[str] | None:
            on = await _on(api_client, namespace, fault.node)
            return on if len(on) == 2 else None

        assert await wait_for(both, what="kube-scheduler to bind q next to p", within=60) == ["p", "q"]
        assert proxied.proxy.stats.lagged_connections >= 1
    finally:
        proxied.proxy.catch_up()
        control_plane.stop_process("kube-scheduler")


async def test_pyscheduler_keeps_the_room_of_an_unanswered_bind(
    proxied: Proxied, api_client: ApiClient, namespace: str, create_node: NodeFactory, create_pod: PodFactory
) -> None:
    """Defect 5: the same fault against pyscheduler (fed by hand: its watch lags for good). p's room stays
    taken while p cannot be read, so q is Unschedulable on n (Insufficient cpu), and once p can be read it
    counts as bound there (one Scheduled event): n never holds more than it has."""
    writer = proxied.writer
    scheduler: Scheduler = build_scheduler(writer, default_config())
    fault, node, p, q = await _room_fault(proxied.proxy, namespace, create_node, create_pod, "pyscheduler")
    scheduler.events.on_node_event(None, node)
    scheduler.events.on_pod_event(None, q)
    scheduler.events.on_pod_event(None, p)
    async with scheduling(scheduler, writer):

        async def p_in_doubt() -> bool:
            return p["metadata"]["uid"] in scheduler.resolving and proxied.proxy.stats.lost_replies > 1

        await wait_for(p_in_doubt, what="p's binding to be in doubt (its read unanswered)", within=60)
        assert await _on(api_client, namespace, fault.node) == ["p"], "p's bind landed"
        scheduler.events.on_node_event("MODIFIED", await _open(api_client, fault.node))

        async def q_rejected() -> str | None:
            failure = scheduler.last_failure.get(q["metadata"]["uid"])
            return failure[1] if failure is not None and "cpu" in failure[1] else None

        message = await wait_for(q_rejected, what="q's attempt on the opened node", within=60)
        assert message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
        assert await _on(api_client, namespace, fault.node) == ["p"], "q must not take p's room"
        fault.losing = False  # p can be read again
        await wait_for(_bound_count(scheduler, 1), what="p to count as bound", within=60)
        assert await writer.flush(20)
    assert await _on(api_client, namespace, fault.node) == ["p"]
    events = await list_events(api_client, namespace)
    notes = [(e["reason"], e["note"]) for e in events if e["regarding"]["name"] == "p"]
    assert notes == [("Scheduled", f"Successfully assigned {namespace}/p to {fault.node}")]
    info = scheduler.cache.get_node(fault.node)
    assert info is not None and info.requested.milli_cpu == 600
