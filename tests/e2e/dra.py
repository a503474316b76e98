"""What the DRA e2e tests share: a Run (one scheduler's play of a scenario in its own namespace, the objects it
made, deleted afterwards), the comparison of the two schedulers' outcomes, and builders of DRA objects.

Outcomes are normalized so that equal means equal to the user: node names become n1, n2, ... (pools are named
after nodes), the run's namespace becomes NS, a consumable-capacity share's random shareID and the
allocationTimestamp become whether they are there.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.e2e.kube import (
    JSON,
    get_pod,
    list_pods,
    pod_manifest,
    request_json,
    scheduling_failure_message,
    wait_for,
)

UPSTREAM = "default-scheduler"
OURS = "pyscheduler"
SCHEDULERS = (UPSTREAM, OURS)
DRIVER = "gpu.example.com"
RESOURCE = "/apis/resource.k8s.io/v1"
MERGE_PATCH = "application/merge-patch+json"
FINALIZER = "resource.kubernetes.io/delete-protection"
NOT_HELPFUL = "Preemption is not helpful for scheduling."


@dataclass
class Run:
    """One scheduler's run of a scenario: its namespace, the nodes, and the cluster-scoped objects it made."""

    api: ApiClient
    scheduler: str
    namespace: str
    nodes: list[str]
    driver: str = DRIVER
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

    async def slice(
        self, node: str, *devices: JSON, part: str = "", slices: int = 1, shared_counters: list[JSON] | None = None
    ) -> None:
        """A ResourceSlice of the run's driver publishing `devices` (or `shared_counters`) for `node`, in the pool
        named after the node, which has `slices` slices (`part` tells this one's name apart)."""
        spec: JSON = {
            "driver": self.driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": slices},
        }
        if shared_counters is not None:
            spec["sharedCounters"] = shared_counters
        else:
            spec["devices"] = list(devices)
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{self.driver}{part}"},
            "spec": spec,
        }
        await self.create(f"{RESOURCE}/resourceslices", body, cluster_scoped=True)

    async def taint_rule(self, name: str, device: str, node: str, taint: JSON) -> None:
        """A DeviceTaintRule putting `taint` on the run's driver's `device` in `node`'s pool."""
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceTaintRule",
            "metadata": {"name": name},
            "spec": {"deviceSelector": {"driver": self.driver, "pool": node, "device": device}, "taint": taint},
        }
        await self.create(f"{RESOURCE}/devicetaintrules", body, cluster_scoped=True)

    async def claim(
        self, name: str, *requests: JSON, template: bool = False, constraints: list[JSON] | None = None
    ) -> None:
        spec: JSON = {"devices": {"requests": list(requests)}}
        if constraints:
            spec["devices"]["constraints"] = constraints
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

    def claim_path(self, name: str) -> str:
        return f"{RESOURCE}/namespaces/{self.namespace}/resourceclaims/{name}"

    async def get_claim(self, name: str) -> JSON:
        return await request_json(self.api, "GET", self.claim_path(name))

    async def put_claim_status(self, name: str, mutate: Callable[[JSON], None]) -> JSON:
        """Rewrites the claim's status as a driver or another scheduler would (`mutate` changes a fresh copy)."""
        claim = await self.get_claim(name)
        mutate(claim.setdefault("status", {}))
        return await request_json(self.api, "PUT", self.claim_path(name) + "/status", body=claim)

    def normalize(self, value: Any) -> Any:
        """`value` with node names as n1.., the namespace as NS, shareIDs and allocationTimestamp as present."""
        if isinstance(value, str):
            if value in self.nodes:
                return f"n{self.nodes.index(value) + 1}"
            text = value.replace(self.namespace, "NS")
            for i, node in sorted(enumerate(self.nodes), key=lambda p: -len(p[1])):
                text = text.replace(node, f"n{i + 1}")
            return text
        if isinstance(value, list):
            return [self.normalize(v) for v in value]
        if isinstance(value, Mapping):
            out = {}
            for k, v in value.items():
                if k in ("shareID", "allocationTimestamp", "lastTransitionTime"):
                    out[k] = bool(v)
                else:
                    out[k] = self.normalize(v)
            return out
        return value

    async def status_allocation(self, claim_name: str) -> JSON:
        """The claim's status.allocation, whole (normalized), once it is reserved for a pod."""

        async def allocated() -> JSON | None:
            claim = await self.get_claim(claim_name)
            status = claim.get("status") or {}
            return claim if status.get("allocation") and status.get("reservedFor") else None

        claim = await wait_for(allocated, what=f"claim {self.namespace}/{claim_name} to be allocated", within=60)
        normalized: JSON = self.normalize(claim["status"]["allocation"])
        return normalized

    async def events(self, pod: str) -> list[list[str]]:
        """The pod's distinct events (type, reason, note normalized), in order of first appearance."""
        answer = await request_json(self.api, "GET", f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events")
        items = sorted(answer["items"], key=lambda e: (e.get("eventTime") or "", e["metadata"]["name"]))
        seen: list[list[str]] = []
        for event in items:
            if event["regarding"].get("name") != pod:
                continue
            entry = [event.get("type", ""), event.get("reason", ""), self.normalize(event.get("note", ""))]
            if entry not in seen:
                seen.append(entry)
        return seen

    async def wait_event(self, pod: str, reason: str, within: float = 60, note: str = "") -> None:
        """Until the pod has a `reason` event (whose note contains `note`)."""

        async def probe() -> bool:
            return any(e[1] == reason and note in e[2] for e in await self.events(pod))

        await wait_for(probe, what=f"a {reason} event for {self.namespace}/{pod}", within=within)

    async def wait_bound(self, name: str, within: float = 90) -> str:
        async def bound() -> str | None:
            pod = await get_pod(self.api, self.namespace, name)
            return pod["spec"].get("nodeName") or None

        node = await wait_for(bound, what=f"{self.scheduler} to bind {self.namespace}/{name}", within=within)
        return f"n{self.nodes.index(node) + 1}"

    async def wait_message(self, name: str, within: float = 90) -> str:
        """The PodScheduled=False message; the pod must stay unbound."""
        return await scheduling_failure_message(
            self.api, self.namespace, name, scheduler=self.scheduler, within=within
        )

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
async def run_for(
    api: ApiClient,
    scheduler: str,
    prefix: str,
    nodes: list[str],
    *,
    driver: str = DRIVER,
    labels: Mapping[str, str] | None = None,
) -> AsyncIterator[Run]:
    """A fresh namespace (with `labels`) for `scheduler`'s run; everything the run made is deleted after it."""
    short = "up" if scheduler == UPSTREAM else "py"
    namespace = f"{prefix}-{short}-{secrets.token_hex(2)}"
    metadata: JSON = {"name": namespace, "labels": dict(labels or {})}
    await request_json(
        api, "POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}
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
    run = Run(api, scheduler, namespace, nodes, driver)
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


GPU_CLASS_SELECTOR = f'device.driver == "{DRIVER}"'


def gpu(name: str, model: str = "a100", memory: str = "40Gi") -> JSON:
    return {"name": name, "attributes": {"model": {"string": model}}, "capacity": {"memory": {"value": memory}}}


def exactly(name: str, device_class: str = DRIVER, *selectors: str, count: int = 1, **extra: Any) -> JSON:
    """A request for `count` devices of `device_class` (`extra`: tolerations, adminAccess, capacity...)."""
    request: JSON = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count, **extra}
    if selectors:
        request["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": request}


