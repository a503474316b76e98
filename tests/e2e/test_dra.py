"""DynamicResources on the real control plane: each scenario is played twice on the same three nodes, once for
the upstream kube-scheduler binary and once for pyscheduler, with objects of the same names (the DeviceClass,
the ResourceSlices the test publishes itself, as a DRA driver would; no kubelet or driver runs), and the two
outcomes must be equal: the node each pod got, the devices written into its claims' status.allocation, the
reservations, and the PodScheduled message of a pod left Pending, byte for byte.

kube-controller-manager's resourceclaim controller makes the claims of ResourceClaimTemplates (and records
them in the pod's status). The runs happen one after the other; the cluster-scoped objects are deleted in
between, so each scheduler sees only its own run's devices and claims.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from tests.cluster.harness import ManagedProcess
from tests.e2e.conftest import NodeFactory, PySchedulerProcess
from tests.e2e.dra import (
    DRIVER,
    GPU_CLASS_SELECTOR,
    NOT_HELPFUL,
    OURS,
    Run,
    compare,
    exactly,
    gpu,
)
from tests.e2e.kube import JSON, assert_same_outcomes, get_pod, status_condition, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


@pytest.fixture
def prefix() -> str:
    return f"dra-{secrets.token_hex(2)}"


@pytest.fixture
async def nodes3(create_node: NodeFactory, prefix: str) -> list[str]:
    names = [f"{prefix}-n1", f"{prefix}-n2", f"{prefix}-n3"]
    for name in names:
        await create_node(name)
    return names


# --------------------------------------------------------------------------------------------- scenarios


async def test_one_device(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    prefix: str,
    nodes3: list[str],
) -> None:
    """The issue's story: DeviceClass gpu.example.com, two devices on n2, a claim for one: the pod binds to n2
    and the claim's status.allocation names the same device, finalizer and reservation included."""

    async def scenario(run: Run) -> dict[str, Any]:
        await run.device_class(DRIVER, GPU_CLASS_SELECTOR)
        await run.slice(run.nodes[1], gpu("gpu-0"), gpu("gpu-1", "h100", "80Gi"))
        await run.claim("gpu", exactly("gpu"))
        await run.pod("trainer", {"gpu": "gpu"})
        return {"node": await run.wait_bound("trainer"), "claim": await run.allocation("gpu")}

    outcomes = await compare(api_client, prefix, nodes3, scenario)
    assert_same_outcomes(outcomes)
    assert outcomes[OURS] == {
        "node": "n2",
        "claim": {
            "results": [{"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}],
            "nodeSelector": [["n2"]],
            "reservedFor": ["trainer"],
            "finalizer": True,
            "allocationTimestamp": True,
        },
    }


async def test_a_claim_nothing_satisfies(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    prefix: str,
    nodes3: list[str],
) -> None:
    """A selector no device matches: UnschedulableAndUnresolvable on every node, the same whole message; and a
    claim asking for more devices than any node has."""

    async def scenario(run: Run) -> dict[str, Any]:
        await run.device_class(DRIVER, GPU_CLASS_SELECTOR)
        await run.slice(run.nodes[1], gpu("gpu-0"), gpu("gpu-1", "h100", "80Gi"))
        await run.claim("b200", exactly("gpu", DRIVER, f'device.attributes["{DRIVER}"].model == "b200"'))
        await run.claim("three", exactly("gpu", count=3))
        await run.pod("wants-b200", {"gpu": "b200"})
        await run.pod("wants-three", {"gpu": "three"})
        return {"b200": await run.wait_message("wants-b200"), "three": await run.wait_message("wants-three")}

    outcomes = await compare(api_client, prefix, nodes3, scenario)
    assert_same_outcomes(outcomes)
    expected = (
        f"0/3 nodes are available: 3 cannot allocate all claims. preemption: 0/3 nodes are available: 3 {NOT_HELPFUL}"
    )
    assert outcomes[OURS] == {"b200": expected, "three": expected}


async def test_a_claim_template(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    prefix: str,
    nodes3: list[str],
) -> None:
    """A pod asking for a ResourceClaimTemplate: the controller makes its claim (named after pod and entry,
    recorded in the pod's status), the pod waits for it, then binds where the devices are; two such pods take
    one device each."""

    async def scenario(run: Run) -> dict[str, Any]:
        await run.device_class(DRIVER, GPU_CLASS_SELECTOR)
        await run.slice(run.nodes[2], gpu("gpu-0"), gpu("gpu-1"))
        await run.claim("one-gpu", exactly("gpu"), template=True)
        out: dict[str, Any] = {}
        for name in ("worker-a", "worker-b"):
            await run.pod(name, {"gpu": "one-gpu"}, templates=True)
            out[name] = await run.wait_bound(name)
            pod = await get_pod(run.api, run.namespace, name)
            [status] = pod["status"]["resourceClaimStatuses"]
            assert status["resourceClaimName"].startswith(f"{name}-gpu-")
            allocation = await run.allocation(status["resourceClaimName"])
            out[f"{name}-devices"] = allocation["results"]
        return out

    outcomes = await compare(api_client, prefix, nodes3, scenario)
    assert_same_outcomes(outcomes)
    assert outcomes[OURS]["worker-a"] == outcomes[OURS]["worker-b"] == "n3"
    devices = {outcomes[OURS][f"{n}-devices"][0]["device"] for n in ("worker-a", "worker-b")}
    assert devices == {"gpu-0", "gpu-1"}


async def test_a_claim_shared_by_two_pods(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    prefix: str,
    nodes3: list[str],
) -> None:
    """Two pods naming one claim: the first allocates it, the second reserves it too and lands on the same node
    (the allocation's node selector), with the device allocated once. Two nodes have a device and score the
    same, so which one the first pod gets is each scheduler's random tie-break: the outcome compares where the
    second pod goes relative to the first."""

    async def scenario(run: Run) -> dict[str, Any]:
        await run.device_class(DRIVER, GPU_CLASS_SELECTOR)
        await run.slice(run.nodes[0], gpu("gpu-0"))
        await run.slice(run.nodes[2], gpu("gpu-0"))
        await run.claim("shared", exactly("gpu"))
        await run.pod("first", {"gpu": "shared"})
        first = await run.wait_bound("first")
        await run.pod("second", {"gpu": "shared"})
        second = await run.wait_bound("second")

        async def both_reserved() -> JSON | None:
            allocation = await run.allocation("shared")
            return allocation if len(allocation["reservedFor"]) == 2 else None

        claim = await wait_for(both_reserved, what="both pods in reservedFor", within=30)
        assert first in ("n1", "n3") and claim["nodeSelector"] == [[first]]
        for result in claim["results"]:
            result["pool"] = "first's node" if result["pool"] == first else result["pool"]
        claim["nodeSelector"] = "first's node"
        return {"second with first": second == first, "claim": claim}

    outcomes = await compare(api_client, prefix, nodes3, scenario)
    assert_same_outcomes(outcomes)
    assert outcomes[OURS]["second with first"] is True
    assert outcomes[OURS]["claim"]["reservedFor"] == ["first", "second"]
    assert [r["device"] for r in outcomes[OURS]["claim"]["results"]] == ["gpu-0"]


async def test_an_extended_resource_backed_by_dra(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    prefix: str,
    nodes3: list[str],
) -> None:
    """A pod asking `example.com/gpu: 1`, which no node has allocatable of, while a DeviceClass names that
    extended resource: it binds where the class's devices are, to a claim the scheduler creates for it (owned
    by the pod, recorded in its status.extendedResourceClaimStatus with the container's request mapping)."""

    async def scenario(run: Run) -> dict[str, Any]:
        await run.device_class(DRIVER, GPU_CLASS_SELECTOR, extended_resource_name="example.com/gpu")
        await run.slice(run.nodes[1], gpu("gpu-0"), gpu("gpu-1"))
        await run.pod("legacy", requests={"example.com/gpu": "1"}, limits={"example.com/gpu": "1"})
        node = await run.wait_bound("legacy")

        async def recorded() -> JSON | None:
            pod = await get_pod(run.api, run.namespace, "legacy")
            status: JSON | None = pod["status"].get("extendedResourceClaimStatus")
            return status

        status = await wait_for(recorded, what="the pod's extendedResourceClaimStatus", within=30)
        claim_name = status["resourceClaimName"]
        assert claim_name.startswith("legacy-extended-resources-"), claim_name
        claim = await run.get_claim(claim_name)
        owner = claim["metadata"]["ownerReferences"][0]
        return {
            "node": node,
            "mappings": status["requestMappings"],
            "annotations": claim["metadata"].get("annotations"),
            "owner": (owner["kind"], owner["name"], owner.get("controller")),
            "requests": claim["spec"]["devices"]["requests"],
            "claim": await run.allocation(claim_name),
        }

    outcomes = await compare(api_client, prefix, nodes3, scenario)
    assert_same_outcomes(outcomes)
    assert outcomes[OURS]["node"] == "n2"
    assert outcomes[OURS]["mappings"] == [
        {"containerName": "main", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
    ]
    assert outcomes[OURS]["claim"]["results"] == [
        {"request": "container-0-request-0", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}
    ]


async def test_first_available_prefers_the_first_subrequest(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    prefix: str,
    nodes3: list[str],
) -> None:
    """A prioritized list [h100, a100]: n1 offers only an A100, n3 an H100, so only DynamicResources' Score
    (8 for the first subrequest against 7) separates them: both schedulers pick n3 and allocate gpu/h100."""

    async def scenario(run: Run) -> dict[str, Any]:
        await run.device_class(DRIVER, GPU_CLASS_SELECTOR)
        await run.device_class("h100.example.com", GPU_CLASS_SELECTOR, f'device.attributes["{DRIVER}"].model == "h100"')
        await run.device_class("a100.example.com", GPU_CLASS_SELECTOR, f'device.attributes["{DRIVER}"].model == "a100"')
        await run.slice(run.nodes[0], gpu("gpu-0", "a100"))
        await run.slice(run.nodes[2], gpu("gpu-0", "h100", "80Gi"))
        subrequests = [
            {"name": "h100", "deviceClassName": "h100.example.com", "allocationMode": "ExactCount", "count": 1},
            {"name": "a100", "deviceClassName": "a100.example.com", "allocationMode": "ExactCount", "count": 1},
        ]
        await run.claim("gpu", {"name": "gpu", "firstAvailable": subrequests})
        await run.pod("picky", {"gpu": "gpu"})
        return {"node": await run.wait_bound("picky"), "claim": await run.allocation("gpu")}

    outcomes = await compare(api_client, prefix, nodes3, scenario)
    assert_same_outcomes(outcomes)
    assert outcomes[OURS]["node"] == "n3"
    assert outcomes[OURS]["claim"]["results"] == [
        {"request": "gpu/h100", "driver": DRIVER, "pool": "n3", "device": "gpu-0"}
    ]


async def test_a_pod_waits_for_its_claim_and_a_class(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    prefix: str,
    nodes3: list[str],
) -> None:
    """A claim that does not exist yet keeps the pod out of scheduling (PreEnqueue: no condition, no event); a
    request naming a class that does not exist is reported (same message); creating them lets both bind."""

    async def scenario(run: Run) -> dict[str, Any]:
        await run.slice(run.nodes[0], gpu("gpu-0"), gpu("gpu-1"))
        await run.claim("no-class", exactly("gpu", "missing.example.com"))
        await run.pod("early", {"gpu": "later"})
        await run.pod("classless", {"gpu": "no-class"})
        message = await run.wait_message("classless")
        pod = await get_pod(run.api, run.namespace, "early")
        assert not pod["spec"].get("nodeName") and status_condition(pod, "PodScheduled") is None
        await run.device_class(DRIVER, GPU_CLASS_SELECTOR)
        await run.device_class("missing.example.com", GPU_CLASS_SELECTOR)
        await run.claim("later", exactly("gpu"))
        return {"classless": message, "early": await run.wait_bound("early"), "late": await run.wait_bound("classless")}

    outcomes = await compare(api_client, prefix, nodes3, scenario)
    assert_same_outcomes(outcomes)
    assert outcomes[OURS]["classless"] == (
        "0/3 nodes are available: request gpu: device class missing.example.com does not exist. "
        f"preemption: 0/3 nodes are available: 3 {NOT_HELPFUL}"
    )
