"""Live proofs for docs/feature-gates.md, against kube-scheduler v1.37.2 on the same objects.

DRAExtendedResource (GA): a DeviceClass with `spec.extendedResourceName` lets a pod's plain extended resource
request be served by DRA devices on nodes whose allocatable lacks it. Where a device plugin advertises the
resource both schedulers place the pod there; a request too large for that node is left to DynamicResources
on the node without it, which has no devices of the class: both leave the pod Pending with the same message
(`1 Insufficient ..., 1 cannot allocate all claims`). tests/e2e/test_dra.py shows such a pod bound to DRA
devices.
"""

from __future__ import annotations

import contextlib

import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.cluster.harness import ManagedProcess
from tests.e2e.conftest import NodeFactory, PodFactory, PySchedulerProcess
from tests.e2e.kube import request_json, unschedulable_message, wait_for_pod_bound

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

SCHEDULERS = {"up": "default-scheduler", "py": "pyscheduler"}


async def test_dra_backed_extended_resources_are_never_misplaced(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """Device-plugin node: both bind there. Too much for it: both leave the pod Pending, trying DRA on the other
    node, with the same message."""
    resource = "example.com/dra-gpu"
    device_class = "audit-dra-gpu"
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": device_class},
        "spec": {
            "extendedResourceName": resource,
            "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
        },
    }
    await request_json(api_client, "POST", "/apis/resource.k8s.io/v1/deviceclasses", body=body)
    try:
        plugin_node = "audit-device-plugin"
        await create_node(plugin_node, extended={resource: 2})
        await create_node("audit-dra-only")
        for suffix, scheduler_name in SCHEDULERS.items():
            await create_pod(f"fits-{suffix}", scheduler_name=scheduler_name,
                             requests={resource: "1"}, limits={resource: "1"})
            await create_pod(f"too-many-{suffix}", scheduler_name=scheduler_name,
                             requests={resource: "3"}, limits={resource: "3"})
        for suffix in SCHEDULERS:
            bound = await wait_for_pod_bound(api_client, namespace, f"fits-{suffix}")
            assert bound["spec"]["nodeName"] == plugin_node, f"{suffix}: the only node advertising {resource}"
        upstream = await unschedulable_message(api_client, namespace, "too-many-up", prefix="0/2 nodes")
        ours = await unschedulable_message(api_client, namespace, "too-many-py", prefix="0/2 nodes")
        print(f"upstream: {upstream}\npyscheduler: {ours}")
        assert "1 cannot allocate all claims" in upstream and f"1 Insufficient {resource}" in upstream
        assert ours == upstream
    finally:
        with contextlib.suppress(ApiException):
            await request_json(api_client, "DELETE", f"/apis/resource.k8s.io/v1/deviceclasses/{device_class}")
