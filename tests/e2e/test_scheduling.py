"""pyscheduler against a real kube-apiserver: binding, events, conditions, foreign pods, cache convergence.

Most tests run `python -m scheduler run --kubeconfig ...` as a subprocess (as in production) and stop it with
SIGTERM, asserting a clean exit (code 0). The convergence test drives the cluster adapter in-process with its
watches deliberately not running, so a deletion is guaranteed to be missed and only the resync LIST can
repair it. Nothing is mocked: every read and write goes to the API server.
"""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from scheduler.adapters.cluster.client import KubeClient
from scheduler.adapters.cluster.watch import ClusterWatcher
from scheduler.adapters.cluster.writer import ClusterWriter
from scheduler.core.profile import build_scheduler, default_config
from tests.e2e.conftest import NodeFactory, PodFactory, PySchedulerProcess, list_events, wait_for_event
from tests.e2e.kube import (
    JSON,
    get_pod,
    request_json,
    status_condition,
    wait_for,
    wait_for_pod_bound,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

SCHEDULER_NAME = "pyscheduler"


# --------------------------------------------------------------------------------------------- (a)


async def test_pods_are_bound_with_scheduled_events(
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """Pods naming pyscheduler get bound, each with upstream's `Scheduled` event, reported as pyscheduler."""
    for i in range(3):
        await create_node(f"{namespace}-n{i}", cpu="8", memory="32Gi")
    count = 30
    start = time.monotonic()
    created = await asyncio.gather(
        *(create_pod(f"p{i}", requests={"cpu": "100m", "memory": "64Mi"}) for i in range(count))
    )
    bound = await asyncio.gather(*(wait_for_pod_bound(api_client, namespace, f"p{i}") for i in range(count)))
    elapsed = time.monotonic() - start
    print(f"{count} pods created and bound in {elapsed:.2f} s ({count / elapsed:.1f} pods/s end to end)")
    nodes = {p["spec"]["nodeName"] for p in bound}
    assert nodes <= {f"{namespace}-n{i}" for i in range(3)}
    assert len(nodes) == 3, "LeastAllocated/BalancedAllocation should spread equal pods over equal nodes"

    pod = bound[0]
    uid = created[0]["metadata"]["uid"]
    event = await wait_for_event(api_client, namespace, "p0", "Scheduled")
    assert event["note"] == f"Successfully assigned {namespace}/p0 to {pod['spec']['nodeName']}"
    assert event["type"] == "Normal"
    assert event["action"] == "Binding"
    assert event["reportingController"] == SCHEDULER_NAME
    assert event["reportingInstance"] == f"{SCHEDULER_NAME}-{socket.gethostname()}"
    assert event["regarding"]["kind"] == "Pod"
    assert event["regarding"]["uid"] == uid
    # The API server sets PodScheduled=True when it accepts the binding.
    condition = status_condition(await get_pod(api_client, namespace, "p0"), "PodScheduled")
    assert condition is not None and condition["status"] == "True"

    async def all_events() -> bool:
        events = await list_events(api_client, namespace)
        return sum(1 for e in events if e.get("reason") == "Scheduled") >= count

    await wait_for(all_events, what="a Scheduled event per pod", within=20)

    # HTTPS; the admin (system:masters) reads everything, health checks need no token.
    for path in ("/livez", "/healthz", "/readyz", "/metrics", "/configz"):
        status, body = await pyscheduler.request("GET", path)
        assert status == 200, (path, body)
    for path in ("/livez", "/healthz", "/readyz"):
        assert (await pyscheduler.request("GET", path, token=""))[0] == 200, path
    _, configz = await pyscheduler.request("GET", "/configz")
    assert '"schedulerName": "pyscheduler"' in configz or '"scheduler_name": "pyscheduler"' in configz


# --------------------------------------------------------------------------------------------- (b)


async def test_pods_of_other_schedulers_occupy_nodes(
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """A pod bound by someone else (spec.nodeName) fills its node: ours goes elsewhere or stays pending."""
    full, free = f"{namespace}-full", f"{namespace}-free"
    await create_node(full, cpu="2")
    await create_node(free, cpu="4")
    await create_pod("foreign", scheduler_name="other-scheduler", node_name=full, requests={"cpu": "2"})

    await create_pod("fits", requests={"cpu": "1"})
    pod = await wait_for_pod_bound(api_client, namespace, "fits")
    assert pod["spec"]["nodeName"] == free

    await create_pod("too-big", requests={"cpu": "4"})
    event = await wait_for_event(api_client, namespace, "too-big", "FailedScheduling")
    # 4 cpus exceed the full node's allocatable (Unresolvable); on the free one only an equal-priority pod runs.
    assert event["note"] == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
        "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    )
    assert not (await get_pod(api_client, namespace, "too-big"))["spec"].get("nodeName")


# --------------------------------------------------------------------------------------------- (c)


async def test_unschedulable_pod_gets_event_and_condition(
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """FailedScheduling (events.k8s.io) with the exact FitError message and PodScheduled=False/Unschedulable."""
    await create_node(f"{namespace}-a", cpu="1", labels={"e2e/zone": "a"})
    await create_node(f"{namespace}-b", cpu="8", labels={"e2e/zone": "b"})
    created = await create_pod("stuck", requests={"cpu": "2"}, node_selector={"e2e/zone": "a"})
    # Node a: big enough in selector only; node b: big enough, wrong zone. Reasons sort as plain strings.
    expected = (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )

    event = await wait_for_event(api_client, namespace, "stuck", "FailedScheduling")
    assert event["note"] == expected
    assert event["type"] == "Warning"
    assert event["action"] == "Scheduling"
    assert event["reportingController"] == SCHEDULER_NAME
    assert event["regarding"]["uid"] == created["metadata"]["uid"]

    async def condition() -> JSON | None:
        return status_condition(await get_pod(api_client, namespace, "stuck"), "PodScheduled")

    cond = await wait_for(condition, what="the PodScheduled condition")
    assert cond["status"] == "False"
    assert cond["reason"] == "Unschedulable"
    assert cond["message"] == expected
    assert cond.get("lastTransitionTime")


async def test_long_message_is_truncated_in_the_event_but_not_in_the_condition(
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """An event note is cut to 1024 bytes ending in " ..."; the condition keeps the whole message."""
    await create_node(f"{namespace}-a", cpu="1")
    resources = {"cpu": "2", **{f"example.com/r{i:03d}-{'x' * 30}": "1" for i in range(30)}}
    await create_pod("huge", requests=resources, limits={k: v for k, v in resources.items() if k != "cpu"})
    event = await wait_for_event(api_client, namespace, "huge", "FailedScheduling")
    note: str = event["note"]

    async def condition() -> JSON | None:
        return status_condition(await get_pod(api_client, namespace, "huge"), "PodScheduled")

    cond = await wait_for(condition, what="the PodScheduled condition")
    message: str = cond["message"]
    assert len(message.encode()) > 1024
    assert len(note.encode()) == 1024 and note.endswith(" ...")
    assert message.startswith(note[: -len(" ...")])


# --------------------------------------------------------------------------------------------- (e)


async def test_resync_repairs_a_deletion_the_watch_missed(
    kubeconfig: Path,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """With the watches down, a deleted pod and an added node are invisible until the resync LIST."""
    node = f"{namespace}-n"
    await create_node(node, cpu="4")
    foreign = await create_pod("foreign", scheduler_name="other-scheduler", node_name=node, requests={"cpu": "3"})
    uid = foreign["metadata"]["uid"]

    client = await KubeClient.create(str(kubeconfig), qps=50, burst=100)
    try:
        writer = ClusterWriter(client)
        scheduler = build_scheduler(writer, default_config())
        # kopf is never started: the watch is "down", so nothing resolves the differences within the grace.
        watcher = ClusterWatcher(scheduler, client, writer, lag_grace=1.0)
        await watcher.initial_sync()
        assert scheduler.cache.get_pod(uid) is not None
        info = scheduler.cache.get_node(node)
        assert info is not None and info.requested.milli_cpu == 3000

        await request_json(
            api_client,
            "DELETE",
            f"/api/v1/namespaces/{namespace}/pods/foreign",
            query={"gracePeriodSeconds": 0},
        )
        late = f"{namespace}-late"
        await create_node(late, cpu="2")
        assert scheduler.cache.get_pod(uid) is not None, "nothing told the cache yet"

        start = time.monotonic()
        drift = await watcher.resync()
        print(f"resync LIST+reconcile took {time.monotonic() - start:.3f} s; drift {drift}")
        assert drift.get("extra_pods") == 1
        assert drift.get("missing_nodes") == 1
        assert scheduler.cache.get_pod(uid) is None
        info = scheduler.cache.get_node(node)
        assert info is not None and info.requested.milli_cpu == 0
        assert scheduler.cache.get_node(late) is not None
        assert watcher.stats.drift_total == {"extra_pods": 1, "missing_nodes": 1}

        assert await watcher.resync() == {}, "a second resync finds nothing to repair"
    finally:
        await client.close()


async def test_list_overlay_keeps_events_that_arrive_during_the_list(
    kubeconfig: Path, namespace: str, create_node: NodeFactory
) -> None:
    """A watch event applied while the resync LIST is in flight is not rolled back by the older snapshot."""
    node = f"{namespace}-n"
    await create_node(node, cpu="4")
    client = await KubeClient.create(str(kubeconfig), qps=50, burst=100)
    try:
        scheduler = build_scheduler(ClusterWriter(client), default_config())
        watcher = ClusterWatcher(scheduler, client)
        await watcher.initial_sync()
        ghost: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            # An event that arrives while the LIST is in flight is newer than the LIST.
            "metadata": {"name": "ghost", "namespace": namespace, "uid": "ghost-uid", "resourceVersion": "99999999999"},
            "spec": {"nodeName": node, "schedulerName": "x", "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running"},
        }

        async def event_during_list() -> None:
            await asyncio.sleep(0)  # the LIST requests are in flight now
            watcher.dispatch("pods", "ADDED", ghost)

        drift, _ = await asyncio.gather(watcher.resync(), event_during_list())
        assert scheduler.cache.get_pod("ghost-uid") is not None, "the LIST snapshot rolled back a newer event"
        assert "extra_pods" not in drift
    finally:
        await client.close()
