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

import contextlib
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.cluster.harness import ManagedProcess
from tests.e2e.conftest import NodeFactory, PySchedulerProcess
from tests.e2e.kube import JSON, get_pod, list_pods, pod_manifest, request_json, status_condition, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

UPSTREAM = "default-scheduler"
OURS = "pyscheduler"
SCHEDULERS = (UPSTREAM, OURS)
DRIVER = "gpu.example.com"
RESOURCE = "/apis/resource.k8s.io/v1"
MERGE_PATCH = "application/merge-patch+json"
FINALIZER = "resource.kubernetes.io/delete-protection"
NOT_HELPFUL = "Preemption is not helpful for scheduling."


def assert_same_outcomes(outcomes: dict[str, dict[str, Any]]) -> None:
    """pyscheduler's outcome equals upstream's, messages byte for byte."""
    ours, upstream = outcomes[OURS], outcomes[UPSTREAM]
    assert ours.keys() == upstream.keys(), outcomes
    for key, value in ours.items():
        assert value == upstream[key], f"{key}:\n  upstream:    {upstream[key]!r}\n  pyscheduler: {value!r}"


@dataclass
class Run:
    """One scheduler's run of a scenario: its namespace, the nodes, and the cluster-scoped objects it made."""

    api: ApiClient
    scheduler: str
    namespace: str
    nodes: list[str]
    cluster_scoped: list[str] = field(default_factory=list)

    async def create(self, path: str, body: JSON, *, cluster_scoped: bool = False) -> JSON:
        created = await request_json(self.api, "POST", path, body=body)
        if cluster_scoped:
            self.cluster_scoped.append(f"{path}/{created['metadata']['name']}")
        return created

    async def device_class(self, name: str, *selectors: str, extended_resource_name: str | None = None) -> None:
        spec: JSON = {"selectors": [{"cel": {"expression": e}} for e in selectors]}
        if extended_resource_name is not None:
            spec["extendedResourceName"] = extended_resource_name
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}
        await self.create(f"{RESOURCE}/deviceclasses", body, cluster_scoped=True)

    async def slice(self, node: str, *devices: JSON) -> None:
        """A ResourceSlice of DRIVER publishing `devices` for `node` (one pool named after the node)."""
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRIVER}"},
            "spec": {
                "driver": DRIVER,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": list(devices),
            },
        }
        await self.create(f"{RESOURCE}/resourceslices", body, cluster_scoped=True)

    async def claim(self, name: str, *requests: JSON, template: bool = False) -> None:
        spec = {"devices": {"requests": list(requests)}}
        if template:
            body = {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": name},
                "spec": {"spec": spec},
            }
            await self.create(f"{RESOURCE}/namespaces/{self.namespace}/resourceclaimtemplates", body)
            return
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name}, "spec": spec}
        await self.create(f"{RESOURCE}/namespaces/{self.namespace}/resourceclaims", body)

    async def pod(self, name: str, claims: dict[str, str] | None = None, *, templates: bool = False, **kw: Any) -> None:
        """A pod using `claims` (entry name -> claim or template name) in its container."""
        spec: JSON = dict(kw.pop("spec", None) or {})
        if claims:
            key = "resourceClaimTemplateName" if templates else "resourceClaimName"
            spec["resourceClaims"] = [{"name": entry, key: target} for entry, target in claims.items()]
        manifest = pod_manifest(name, scheduler_name=self.scheduler, spec=spec, **kw)
        if claims:
            manifest["spec"]["containers"][0].setdefault("resources", {})["claims"] = [{"name": e} for e in claims]
        await self.create(f"/api/v1/namespaces/{self.namespace}/pods", manifest)

    async def get_claim(self, name: str) -> JSON:
        return await request_json(self.api, "GET", f"{RESOURCE}/namespaces/{self.namespace}/resourceclaims/{name}")

    async def wait_bound(self, name: str, within: float = 90) -> str:
        async def bound() -> str | None:
            pod = await get_pod(self.api, self.namespace, name)
            return pod["spec"].get("nodeName") or None

        node = await wait_for(bound, what=f"{self.scheduler} to bind {self.namespace}/{name}", within=within)
        return f"n{self.nodes.index(node) + 1}"

    async def wait_message(self, name: str, within: float = 90) -> str:
        """The PodScheduled=False message; the pod must stay unbound."""

        async def probe() -> str | None:
            pod = await get_pod(self.api, self.namespace, name)
            assert not pod["spec"].get("nodeName"), f"{self.scheduler} bound {name} to {pod['spec']['nodeName']}"
            cond = status_condition(pod, "PodScheduled")
            if cond and cond.get("status") == "False" and cond.get("message"):
                return str(cond["message"])
            return None

        return await wait_for(probe, what=f"PodScheduled=False on {self.namespace}/{name}", within=within)

    async def allocation(self, claim_name: str) -> JSON:
        """What a bound pod's claim records: devices, node selector (as n1..n3), reservations, finalizer."""

        async def allocated() -> JSON | None:
            claim = await self.get_claim(claim_name)
            status = claim.get("status") or {}
            return claim if status.get("allocation") and status.get("reservedFor") else None

        claim = await wait_for(allocated, what=f"claim {self.namespace}/{claim_name} to be allocated", within=60)
        allocation = claim["status"]["allocation"]
        results = [
            {k: r[k] for k in ("request", "driver", "pool", "device") if k in r}
            for r in allocation["devices"]["results"]
        ]
        for r in results:  # pool names are node names: compare them as n1..n3
            r["pool"] = f"n{self.nodes.index(r['pool']) + 1}" if r["pool"] in self.nodes else r["pool"]
        terms = (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
        selected = [
            [f"n{self.nodes.index(v) + 1}" for v in expr["values"]]
            for t in terms
            for expr in t.get("matchFields") or []
        ]
        return {
            "results": results,
            "nodeSelector": selected,
            "reservedFor": sorted(r["name"] for r in claim["status"]["reservedFor"]),
            "finalizer": FINALIZER in (claim["metadata"].get("finalizers") or []),
            "allocationTimestamp": bool(allocation.get("allocationTimestamp")),
        }

    async def cleanup(self) -> None:
        """Delete the pods, then the claims (their finalizers dropped: no driver releases them), the namespace
        and the cluster-scoped objects."""
        with contextlib.suppress(ApiException):
            await request_json(
                self.api, "DELETE", f"/api/v1/namespaces/{self.namespace}/pods", query={"gracePeriodSeconds": 0}
            )

        async def no_pods() -> bool:
            return not await list_pods(self.api, self.namespace)

        await wait_for(no_pods, what=f"the pods of {self.namespace} to be deleted", within=60)
        with contextlib.suppress(ApiException):
            claims = await request_json(self.api, "GET", f"{RESOURCE}/namespaces/{self.namespace}/resourceclaims")
            for claim in claims["items"]:
                path = f"{RESOURCE}/namespaces/{self.namespace}/resourceclaims/{claim['metadata']['name']}"
                with contextlib.suppress(ApiException):
                    await request_json(
                        self.api, "PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH
                    )
                with contextlib.suppress(ApiException):
                    await request_json(self.api, "DELETE", path)
        with contextlib.suppress(ApiException):
            await request_json(self.api, "DELETE", f"/api/v1/namespaces/{self.namespace}")
        for path in reversed(self.cluster_scoped):
            with contextlib.suppress(ApiException):
                await request_json(self.api, "DELETE", path)

        async def gone() -> bool:
            for path in self.cluster_scoped:
                try:
                    await request_json(self.api, "GET", path)
                except ApiException as e:
                    if e.status == 404:
                        continue
                    raise
                return False
            return True

        await wait_for(gone, what="the run's DeviceClasses and ResourceSlices to be deleted", within=30)


@contextlib.asynccontextmanager
async def run_for(api: ApiClient, scheduler: str, prefix: str, nodes: list[str]) -> AsyncIterator[Run]:
    short = "up" if scheduler == UPSTREAM else "py"
    namespace = f"{prefix}-{short}-{secrets.token_hex(2)}"
    await request_json(
        api,
        "POST",
        "/api/v1/namespaces",
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
    )

    async def default_sa() -> bool:
        try:
            await request_json(api, "GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
        except ApiException as e:
            if e.status == 404:
                return False
            raise
        return True

    await wait_for(default_sa, what=f"ServiceAccount {namespace}/default")
    run = Run(api, scheduler, namespace, nodes)
    try:
        yield run
    finally:
        await run.cleanup()


Scenario = Callable[[Run], Awaitable[dict[str, Any]]]


async def compare(api: ApiClient, prefix: str, nodes: list[str], scenario: Scenario) -> dict[str, dict[str, Any]]:
    """The scenario with each scheduler (upstream first); both outcomes."""
    outcomes: dict[str, dict[str, Any]] = {}
    for scheduler in SCHEDULERS:
        async with run_for(api, scheduler, prefix, nodes) as run:
            outcomes[scheduler] = await scenario(run)
    print(json.dumps(outcomes, indent=2, sort_keys=True))
    return outcomes


@pytest.fixture
def prefix() -> str:
    return f"dra-{secrets.token_hex(2)}"


@pytest.fixture
async def nodes3(create_node: NodeFactory, prefix: str) -> list[str]:
    names = [f"{prefix}-n1", f"{prefix}-n2", f"{prefix}-n3"]
    for name in names:
        await create_node(name)
    return names


GPU_CLASS_SELECTOR = f'device.driver == "{DRIVER}"'


def gpu(name: str, model: str = "a100", memory: str = "40Gi") -> JSON:
    return {"name": name, "attributes": {"model": {"string": model}}, "capacity": {"memory": {"value": memory}}}


def exactly(name: str, device_class: str = DRIVER, *selectors: str, count: int = 1) -> JSON:
    request: JSON = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}
    if selectors:
        request["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": request}


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
