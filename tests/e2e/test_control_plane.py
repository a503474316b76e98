"""The e2e control plane acts as a real cluster: bindings, conflicts, controllers, the upstream scheduler."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.cluster.harness import ManagedProcess
from tests.e2e.conftest import NodeFactory, PodFactory
from tests.e2e.kube import (
    JSON,
    ZONE_LABEL,
    bind_pod,
    get_pod,
    list_pods,
    request_json,
    status_condition,
    wait_for,
    wait_for_pod_bound,
)

pytestmark = pytest.mark.e2e


async def test_binding_sets_node_name(
    api_client: ApiClient, namespace: str, create_node: NodeFactory, create_pod: PodFactory
) -> None:
    """A pods/binding POST puts the node into spec.nodeName and marks the pod PodScheduled=True."""
    node = await create_node("e2e-bind-node", zone="zone-a", cpu="2", memory="8Gi")
    assert node["metadata"]["labels"][ZONE_LABEL] == "zone-a"
    assert node["status"]["allocatable"]["cpu"] == "2"
    ready = status_condition(node, "Ready")
    assert ready is not None and ready["status"] == "True"
    assert not node["spec"].get("taints")  # no not-ready taint on a Ready node, as after a kubelet's report
    pod = await create_pod("bind-me", requests={"cpu": "100m", "memory": "500Mi"})
    assert not pod["spec"].get("nodeName")

    status = await bind_pod(api_client, namespace, "bind-me", "e2e-bind-node")

    assert status["kind"] == "Status" and status["status"] == "Success"
    bound = await get_pod(api_client, namespace, "bind-me")
    assert bound["spec"]["nodeName"] == "e2e-bind-node"
    scheduled = status_condition(bound, "PodScheduled")
    assert scheduled is not None and scheduled["status"] == "True"


async def test_second_binding_is_a_conflict(
    api_client: ApiClient, namespace: str, create_node: NodeFactory, create_pod: PodFactory
) -> None:
    """Binding an already bound pod again is refused with HTTP 409 and leaves the first binding in place."""
    await create_node("e2e-first")
    await create_node("e2e-second")
    await create_pod("bound-twice")
    await bind_pod(api_client, namespace, "bound-twice", "e2e-first")

    with pytest.raises(ApiException) as refused:
        await bind_pod(api_client, namespace, "bound-twice", "e2e-second")

    assert refused.value.status == 409
    assert (await get_pod(api_client, namespace, "bound-twice"))["spec"]["nodeName"] == "e2e-first"


async def test_deployment_creates_pods_through_controller_manager(
    api_client: ApiClient, namespace: str
) -> None:
    """kube-controller-manager turns a Deployment into a ReplicaSet and pods, left pending for pyscheduler."""
    labels = {"app": "web"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "schedulerName": "pyscheduler",
                    "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
                },
            },
        },
    }
    await request_json(
        api_client, "POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", body=deployment
    )

    async def two_pods() -> list[JSON] | None:
        pods = await list_pods(api_client, namespace, "app=web")
        return pods if len(pods) == 2 else None

    pods = await wait_for(two_pods, what="the Deployment's 2 pods", within=60)
    owners = {ref["kind"] for pod in pods for ref in pod["metadata"].get("ownerReferences", [])}
    assert owners == {"ReplicaSet"}
    assert all(pod["spec"]["schedulerName"] == "pyscheduler" for pod in pods)
    assert all(not pod["spec"].get("nodeName") for pod in pods)
    # The ServiceAccount admission plugin ran: the pods got the namespace's default service account.
    assert all(pod["spec"].get("serviceAccountName") == "default" for pod in pods)


async def test_upstream_kube_scheduler_binds_default_scheduler_pods(
    api_client: ApiClient,
    namespace: str,
    kube_scheduler: ManagedProcess,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """The upstream kube-scheduler binds a default-scheduler pod to the only schedulable node, not others'."""
    await create_node("e2e-cordoned", unschedulable=True)
    await create_node("e2e-tainted", taints=[{"key": "dedicated", "value": "other", "effect": "NoSchedule"}])
    await create_node("e2e-open")
    await create_pod("for-kube-scheduler", scheduler_name="default-scheduler", requests={"cpu": "100m"})
    await create_pod("for-pyscheduler", requests={"cpu": "100m"})

    bound = await wait_for_pod_bound(api_client, namespace, "for-kube-scheduler", within=60)

    assert bound["spec"]["nodeName"] == "e2e-open"
    assert kube_scheduler.running()
    # kube-scheduler leaves pods that name another scheduler alone.
    await asyncio.sleep(1.0)
    assert not (await get_pod(api_client, namespace, "for-pyscheduler"))["spec"].get("nodeName")


async def test_upstream_kube_scheduler_reports_unschedulable(
    api_client: ApiClient,
    namespace: str,
    kube_scheduler: ManagedProcess,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """A pod that fits nowhere gets PodScheduled=False/Unschedulable with kube-scheduler's summary message."""
    await create_node("e2e-small-1", cpu="1")
    await create_node("e2e-small-2", cpu="1")
    await create_pod("too-big", scheduler_name="default-scheduler", requests={"cpu": "2"})

    async def unschedulable() -> JSON | None:
        condition = status_condition(await get_pod(api_client, namespace, "too-big"), "PodScheduled")
        return condition if condition and condition.get("reason") == "Unschedulable" else None

    condition = await wait_for(unschedulable, what="PodScheduled=False/Unschedulable", within=60)

    assert condition["status"] == "False"
    assert condition["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
