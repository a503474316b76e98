"""NodeDeclaredFeatures against the upstream binary (issue 19): same nodes chosen, same words, same requeue.

Three nodes whose status the test PATCHes as a kubelet would; only the first declares
RestartAllContainersOnContainerExits. A pod with a RestartAllContainers restart rule is created once for
kube-scheduler v1.37.2 and once for pyscheduler: both must bind it to that node. A copy pinned to the second
node by nodeSelector must stay Pending under both with the same PodScheduled message and FailedScheduling
note, byte for byte. When the pinned node then declares the feature (a status PATCH: UpdateNodeDeclaredFeature),
both schedulers must retry the copy and bind it there.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from tests.cluster.harness import ManagedProcess
from tests.e2e.conftest import NodeFactory, PodFactory, PySchedulerProcess
from tests.e2e.kube import (
    JSON,
    PAUSE_IMAGE,
    failed_scheduling_note,
    get_pod,
    request_json,
    status_condition,
    unschedulable_message,
    wait_for_pod_bound,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

FEATURE = "RestartAllContainersOnContainerExits"
HOSTNAME = "kubernetes.io/hostname"
SCHEDULERS = {"up": "default-scheduler", "py": "pyscheduler"}
# Measured with kube-scheduler v1.37.2 (wave3.md); the test also compares with the binary's own words.
PINNED_MESSAGE = (
    "0/3 nodes are available: 1 node(s) didn't match Pod's required features, 2 node(s) didn't match Pod's node "
    "affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)


def _restarting_spec(node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    """restartPolicy Never and one container that restarts the whole pod on exit code 42: what the API
    server of v1.37 accepts (the container must state its own restartPolicy to carry rules)."""
    container: JSON = {
        "name": "main",
        "image": PAUSE_IMAGE,
        "restartPolicy": "Never",
        "restartPolicyRules": [{"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}],
    }
    spec: JSON = {"restartPolicy": "Never", "containers": [container]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return spec


async def _declare(api_client: ApiClient, node: str, *features: str) -> None:
    """PATCH the node's status.declaredFeatures, as its kubelet publishes them (sorted)."""
    await request_json(
        api_client,
        "PATCH",
        f"/api/v1/nodes/{node}/status",
        body={"status": {"declaredFeatures": sorted(features)}},
        content_type="application/merge-patch+json",
    )


async def test_declared_features_story_equals_upstream_kube_scheduler(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """Issue 19 under both schedulers: placement, message, note, and the retry when the node declares it."""
    n1, n2, n3 = (f"{namespace}-n{i}" for i in (1, 2, 3))
    for name in (n1, n2, n3):
        await create_node(name)
    await _declare(api_client, n1, FEATURE)
    for suffix, scheduler_name in SCHEDULERS.items():
        await create_pod(f"restarter-{suffix}", scheduler_name=scheduler_name, spec=_restarting_spec())
        await create_pod(
            f"pinned-{suffix}", scheduler_name=scheduler_name, spec=_restarting_spec({HOSTNAME: n2})
        )
    for suffix in SCHEDULERS:
        pod = await wait_for_pod_bound(api_client, namespace, f"restarter-{suffix}")
        assert pod["spec"]["nodeName"] == n1, f"{suffix}: bound to {pod['spec']['nodeName']}, only {n1} declares it"
    messages = {
        s: await unschedulable_message(api_client, namespace, f"pinned-{s}", prefix="0/3 nodes") for s in SCHEDULERS
    }
    notes = {s: await failed_scheduling_note(api_client, namespace, f"pinned-{s}") for s in SCHEDULERS}
    print(f"upstream: {messages['up']}\npyscheduler: {messages['py']}")
    assert messages["py"] == messages["up"], messages
    assert notes["py"] == notes["up"], notes
    assert messages["py"] == notes["py"] == PINNED_MESSAGE
    conditions = {s: status_condition(await get_pod(api_client, namespace, f"pinned-{s}"), "PodScheduled")
                  for s in SCHEDULERS}
    # PodObservedGenerationTracking (GA): both report the generation of the spec they evaluated.
    assert {s: (c or {}).get("observedGeneration") for s, c in conditions.items()} == {"up": 1, "py": 1}
    await _declare(api_client, n2, FEATURE)
    for suffix in SCHEDULERS:
        pod = await wait_for_pod_bound(api_client, namespace, f"pinned-{suffix}", within=60)
        assert pod["spec"]["nodeName"] == n2
