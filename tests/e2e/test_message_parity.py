"""Message parity: pyscheduler's FailedScheduling text equals upstream kube-scheduler's, byte for byte.

The upstream kube-scheduler binary built from the same release runs next to pyscheduler on the same API
server. Every shape below is created twice on the same nodes, once for each scheduler; the PodScheduled
condition message (the full message) and the FailedScheduling event note must be equal, whole: including
DefaultPreemption's ` preemption: ...` suffix (no victims found, not helpful on Unresolvable nodes, policy
Never, PreFilter rejections where no node can help). Every pod here has priority 0 or cannot preempt, so
neither scheduler evicts anything (tests/e2e/test_preemption_parity.py covers preemptions that happen).
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from tests.cluster.harness import ManagedProcess
from tests.e2e.conftest import NodeFactory, PodFactory, PriorityClassFactory, PySchedulerProcess
from tests.e2e.kube import (
    JSON,
    failed_scheduling_note,
    request_json,
    unschedulable_message,
    wait_for,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


def _expr(key: str, op: str, values: list[str] | None = None) -> JSON:
    out: JSON = {"key": key, "operator": op}
    if values is not None:
        out["values"] = values
    return out


def _required(*terms: list[JSON], fields: list[JSON] | None = None) -> JSON:
    node_terms: list[JSON] = [{"matchExpressions": t} for t in terms]
    if fields is not None:
        node_terms.append({"matchFields": fields})
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": node_terms}}}


GPU_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}

# name -> keyword arguments of the pod factory. Every shape is unschedulable on the nodes of the test.
SHAPES: dict[str, dict[str, Any]] = {
    "cpu": {"requests": {"cpu": "3"}},
    "memory": {"requests": {"memory": "10Gi"}, "tolerations": [GPU_TOLERATION]},
    "ephemeral-storage": {"requests": {"ephemeral-storage": "200Gi"}},
    "cpu-and-memory": {"requests": {"cpu": "1500m", "memory": "5Gi"}, "tolerations": [GPU_TOLERATION]},
    "extended-resource": {
        "requests": {"example.com/gpu": "3"},
        "limits": {"example.com/gpu": "3"},
        "tolerations": [GPU_TOLERATION],
    },
    "host-port": {"ports": [{"containerPort": 8080, "hostPort": 8080}], "node_selector": {"disk": "ssd"}},
    "host-network-coredns": {
        "host_network": True,
        "ports": [
            {"containerPort": 53, "protocol": "UDP", "name": "dns"},
            {"containerPort": 53, "protocol": "TCP", "name": "dns-tcp"},
            {"containerPort": 9153, "protocol": "TCP", "name": "metrics"},
            {"containerPort": 8080, "protocol": "TCP", "name": "health"},
        ],
        "affinity": _required(fields=[_expr("metadata.name", "In", ["parity-n1"])]),
    },
    "node-selector": {"node_selector": {"disk": "nvme"}},
    "affinity-in-not-in": {"affinity": _required([_expr("disk", "NotIn", ["ssd", "hdd"])])},
    "affinity-gt": {"affinity": _required([_expr("gen", "Gt", ["9"])])},
    "affinity-lt-or-does-not-exist": {
        "affinity": _required([_expr("gen", "Lt", ["1"])], [_expr("disk", "DoesNotExist")])
    },
    "affinity-exists": {"affinity": _required([_expr("accelerator", "Exists")])},
    "taint": {"node_selector": {"disk": "hdd"}},
    "toleration-wrong-value": {
        "node_selector": {"disk": "hdd"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "cpu", "effect": "NoSchedule"}],
    },
    "cordoned": {"node_selector": {"gen": "4"}},
    "too-many-pods": {"affinity": _required(fields=[_expr("metadata.name", "In", ["parity-n4"])])},
    "pinned-to-missing-node": {"affinity": _required(fields=[_expr("metadata.name", "In", ["no-such-node"])])},
    "mixed-everything": {
        "requests": {"cpu": "2", "memory": "1Gi", "ephemeral-storage": "200Gi", "example.com/gpu": "3"},
        "limits": {"example.com/gpu": "3"},
        "tolerations": [GPU_TOLERATION],
    },
}


async def _cluster(create_node: NodeFactory, create_pod: PodFactory) -> None:
    """Four nodes, each out for a different reason, and bound pods that occupy them."""
    await create_node("parity-n1", zone="z1", region="r", cpu="2", memory="4Gi", labels={"disk": "ssd", "gen": "3"})
    await create_node(
        "parity-n2",
        zone="z2",
        region="r",
        cpu="2",
        memory="4Gi",
        labels={"disk": "hdd", "gen": "5"},
        taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
        extended={"example.com/gpu": "2"},
    )
    await create_node(
        "parity-n3",
        zone="z2",
        region="r",
        cpu="2",
        memory="4Gi",
        labels={"disk": "ssd", "gen": "4"},
        unschedulable=True,
    )
    await create_node("parity-n4", zone="z3", region="r", cpu="2", memory="4Gi", pods=1, labels={"gen": "2"})
    # Bound by nobody's scheduler: they occupy nodes for both schedulers alike.
    await create_pod(
        "holder-n1",
        scheduler_name="nobody",
        node_name="parity-n1",
        requests={"cpu": "1", "memory": "512Mi"},
        ports=[
            {"containerPort": 8080, "hostPort": 8080},
            {"containerPort": 53, "hostPort": 53, "hostIP": "10.0.0.10", "protocol": "UDP"},
        ],
    )
    await create_pod("holder-n4", scheduler_name="nobody", node_name="parity-n4", requests={"cpu": "100m"})


async def test_failure_messages_equal_upstream_kube_scheduler(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
    create_priority_class: PriorityClassFactory,
) -> None:
    """For every unschedulable shape, condition message and event note equal upstream's, whole."""
    await _cluster(create_node, create_pod)
    # A pod of high priority whose class forbids preempting: "preemption: not eligible ..." (it evicts nothing).
    never = await create_priority_class("parity-never", 1000, preemption_policy="Never")
    shapes = {**SHAPES, "policy-never": {"requests": {"cpu": "1500m"}, "spec": {"priorityClassName": never}}}
    for shape, kwargs in shapes.items():
        await create_pod(f"{shape}-up", scheduler_name="default-scheduler", **kwargs)
        await create_pod(f"{shape}-py", scheduler_name="pyscheduler", **kwargs)
    mismatches = []
    for shape in shapes:
        upstream = await unschedulable_message(api_client, namespace, f"{shape}-up", prefix="0/4 nodes are available: ")
        ours = await unschedulable_message(api_client, namespace, f"{shape}-py", prefix="0/4 nodes are available: ")
        if upstream != ours:
            mismatches.append(f"{shape}:\n  upstream:    {upstream}\n  pyscheduler: {ours}")
        up_note = await failed_scheduling_note(api_client, namespace, f"{shape}-up")
        our_note = await failed_scheduling_note(api_client, namespace, f"{shape}-py")
        if up_note != our_note:
            mismatches.append(f"{shape} (event note):\n  upstream:    {up_note}\n  pyscheduler: {our_note}")
    for shape in shapes:
        print(f"{shape}: {await unschedulable_message(api_client, namespace, f'{shape}-py')}")
    assert not mismatches, "\n".join(mismatches)
    assert len(shapes) >= 12
    suffixes = {
        shape: (await unschedulable_message(api_client, namespace, f"{shape}-py")).split(" preemption: ", 1)[1:]
        for shape in shapes
    }
    assert all(suffixes.values()), f"every shape's message ends with upstream's preemption suffix: {suffixes}"


async def _event(api_client: ApiClient, namespace: str, name: str, reason: str) -> JSON:
    async def probe() -> JSON | None:
        answer = await request_json(api_client, "GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
        for event in answer["items"]:
            if event.get("reason") == reason and event["regarding"].get("name") == name:
                return dict(event)
        return None

    return await wait_for(probe, what=f"a {reason} event for {namespace}/{name}", within=60)


async def test_scheduled_event_equals_upstream_kube_scheduler(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """A bound pod's Scheduled event has upstream's type, reason, action and note, reported by its scheduler."""
    await create_node("parity-ok", zone="z1", region="r")
    for suffix, scheduler_name in (("up", "default-scheduler"), ("py", "pyscheduler")):
        await create_pod(f"ok-{suffix}", scheduler_name=scheduler_name, requests={"cpu": "100m"})
    for suffix, scheduler_name in (("up", "default-scheduler"), ("py", "pyscheduler")):
        event = await _event(api_client, namespace, f"ok-{suffix}", "Scheduled")
        assert event["type"] == "Normal"
        assert event["action"] == "Binding"
        assert event["note"] == f"Successfully assigned {namespace}/ok-{suffix} to parity-ok"
        assert event["reportingController"] == scheduler_name
        assert event["reportingInstance"].startswith(f"{scheduler_name}-")
