"""The field stories of mission.md on a real control plane (kube-apiserver + kube-controller-manager).

Story 1: a DaemonSet created by the real DaemonSet controller over nodes in two zones that joined at
different times gets every pod bound, one per node, including a node that joins afterwards.
Story 2: a hostNetwork CoreDNS-like pod cannot land where another pod declares one of its ports, and the
message says so in upstream's words; the same pod binds on a free node.
"""

from __future__ import annotations

import pytest
from kubernetes_asyncio.client import ApiClient

from tests.e2e.conftest import NodeFactory, PodFactory, PySchedulerProcess
from tests.e2e.kube import JSON, get_pod, list_pods, request_json, status_condition, wait_for, wait_for_pod_bound

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


def _daemonset(name: str) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "schedulerName": "pyscheduler",
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "exporter",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}},
                        }
                    ],
                },
            },
        },
    }


async def _daemon_pods_by_node(api_client: ApiClient, namespace: str, expected: int) -> dict[str, str] | None:
    pods = await list_pods(api_client, namespace, label_selector="app=node-exporter")
    placed = {p["spec"]["nodeName"]: p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")}
    return placed if len(pods) == expected and len(placed) == expected else None


async def test_daemonset_over_zones_joined_at_different_times_binds_every_pod(
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """Story 1: 3 masters (zone 200002), a sync, a worker (zone 200004) joins, a DaemonSet: all bound."""
    for i in (1, 2, 3):
        await create_node(f"ss-stg-ma-0{i}", region="sh", zone="200002")
    # One scheduling cycle while only the masters exist: the snapshot is synced before the worker joins.
    await create_pod("first-sync", requests={"cpu": "100m"})
    await wait_for_pod_bound(api_client, namespace, "first-sync")
    await create_node("ss-stg-test-01", region="sh", zone="200004")
    await request_json(
        api_client, "POST", f"/apis/apps/v1/namespaces/{namespace}/daemonsets", body=_daemonset("node-exporter")
    )

    async def four() -> dict[str, str] | None:
        return await _daemon_pods_by_node(api_client, namespace, 4)

    placed = await wait_for(four, what="4 DaemonSet pods bound", within=60)
    assert sorted(placed) == ["ss-stg-ma-01", "ss-stg-ma-02", "ss-stg-ma-03", "ss-stg-test-01"]

    await create_node("ss-stg-test-02", region="sh", zone="200004")

    async def five() -> dict[str, str] | None:
        return await _daemon_pods_by_node(api_client, namespace, 5)

    placed = await wait_for(five, what="the DaemonSet pod of a node that joined later", within=60)
    assert "ss-stg-test-02" in placed


async def test_host_port_story_names_the_conflict_in_upstream_words(
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """Story 2: declared host ports, not sockets, block a hostNetwork CoreDNS pod; a free node takes it."""
    await create_node("dns-busy", zone="a")
    await create_node("dns-free", zone="a")
    await create_pod(
        "node-local-dns",
        scheduler_name="nobody",
        node_name="dns-busy",
        ports=[{"containerPort": 53, "hostPort": 53, "hostIP": "169.254.20.10", "protocol": "UDP"}],
    )
    ports = [
        {"containerPort": 53, "protocol": "UDP", "name": "dns"},
        {"containerPort": 53, "protocol": "TCP", "name": "dns-tcp"},
        {"containerPort": 9153, "protocol": "TCP", "name": "metrics"},
        {"containerPort": 8080, "protocol": "TCP", "name": "health"},
    ]

    def pinned(node: str) -> JSON:
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}

    await create_pod("coredns-busy", host_network=True, ports=ports, affinity=pinned("dns-busy"))
    await create_pod("coredns-free", host_network=True, ports=ports, affinity=pinned("dns-free"))
    bound = await wait_for_pod_bound(api_client, namespace, "coredns-free")
    assert bound["spec"]["nodeName"] == "dns-free"
    # The API defaulted hostPort to containerPort for the hostNetwork pod.
    assert bound["spec"]["containers"][0]["ports"][0]["hostPort"] == 53

    async def rejected() -> str | None:
        pod = await get_pod(api_client, namespace, "coredns-busy")
        cond = status_condition(pod, "PodScheduled")
        return str(cond["message"]) if cond and cond.get("status") == "False" else None

    message = await wait_for(rejected, what="coredns-busy to be reported unschedulable", within=30)
    assert message == (
        "0/2 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
        "1 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption: 0/2 nodes are available: "
        "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    )
