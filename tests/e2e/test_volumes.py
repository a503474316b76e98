"""Pods with storage on the real control plane, each scenario run once by the upstream kube-scheduler binary and
once by pyscheduler on the same kinds of objects, with kube-controller-manager's PV controller binding claims
and a provisioner in the test doing what an external provisioner does (it watches claims that carry the
scheduler's `volume.kubernetes.io/selected-node` and creates a PV with node affinity to that node).

Every scenario compares the outcomes (same node or same feasible set, the same whole PodScheduled message:
DefaultPreemption's ` preemption: ...` part included, and after a PreFilter rejection the ` not found` of
upstream's DynamicResources PostFilter, which fails for want of the state its skipped PreFilter would have
written) and, all along, checks two invariants
with a monitor sampling the API: no pod is bound while a claim it uses is not fully bound, and no PV is bound to
two claims.

The two runs of a scenario happen one after the other in their own namespaces on the same nodes, with their
own StorageClasses and PVs (names carry the run), so neither scheduler ever sees the other's volumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.cluster.harness import ControlPlane, ManagedProcess
from tests.e2e.conftest import NodeFactory, PySchedulerProcess, StartPyScheduler
from tests.e2e.kube import (
    JSON,
    assert_same_outcomes,
    get_pod,
    list_pods,
    pod_manifest,
    request_json,
    scheduling_failure_message,
    status_condition,
    wait_for,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

UPSTREAM = "default-scheduler"
OURS = "pyscheduler"
SCHEDULERS = (UPSTREAM, OURS)
NOT_HELPFUL = "Preemption is not helpful for scheduling."
NO_VICTIMS = "No preemption victims found for incoming pod"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
MERGE_PATCH = "application/merge-patch+json"


# --------------------------------------------------------------------------------------------- objects


@dataclass
class Run:
    """One scheduler's run of a scenario: its namespace and a tag naming its cluster-scoped objects."""

    api: ApiClient
    scheduler: str
    namespace: str
    tag: str
    cluster_scoped: list[str] = field(default_factory=list)  # API paths to delete afterwards

    async def create(self, path: str, body: JSON, *, cluster_scoped: bool = False) -> JSON:
        created = await request_json(self.api, "POST", path, body=body)
        if cluster_scoped:
            self.cluster_scoped.append(f"{path}/{created['metadata']['name']}")
        return created

    async def storage_class(
        self, name: str, *, mode: str = "WaitForFirstConsumer", provisioner: str = "kubernetes.io/no-provisioner"
    ) -> str:
        full = f"{self.tag}-{name}"
        body = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": full},
            "provisioner": provisioner,
            "volumeBindingMode": mode,
            "reclaimPolicy": "Retain",
        }
        await self.create("/apis/storage.k8s.io/v1/storageclasses", body, cluster_scoped=True)
        return full

    async def pv(
        self,
        name: str,
        storage_class: str,
        *,
        capacity: str = "10Gi",
        node: str | None = None,
        labels: Mapping[str, str] | None = None,
        access_modes: tuple[str, ...] = ("ReadWriteOnce",),
        csi_driver: str | None = None,
    ) -> str:
        full = f"{self.tag}-{name}"
        spec: JSON = {
            "capacity": {"storage": capacity},
            "accessModes": list(access_modes),
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": storage_class,
            "volumeMode": "Filesystem",
        }
        if csi_driver is not None:
            spec["csi"] = {"driver": csi_driver, "volumeHandle": full}
        elif node is not None:
            spec["local"] = {"path": f"/mnt/{full}"}
        else:
            spec["hostPath"] = {"path": f"/tmp/{full}"}
        if node is not None:
            term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": full, "labels": dict(labels or {})},
            "spec": spec,
        }
        await self.create("/api/v1/persistentvolumes", body, cluster_scoped=True)
        return full

    async def pvc(
        self, name: str, storage_class: str, *, request: str = "1Gi", access_modes: tuple[str, ...] = ("ReadWriteOnce",)
    ) -> JSON:
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": list(access_modes),
                "resources": {"requests": {"storage": request}},
                "storageClassName": storage_class,
            },
        }
        return await self.create(f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims", body)

    async def pod(self, name: str, claims: tuple[str, ...] = (), **kwargs: Any) -> JSON:
        spec: JSON = dict(kwargs.pop("spec", None) or {})
        spec["volumes"] = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
        manifest = pod_manifest(name, scheduler_name=self.scheduler, spec=spec, **kwargs)
        return await self.create(f"/api/v1/namespaces/{self.namespace}/pods", manifest)

    async def claim(self, name: str) -> JSON:
        return await request_json(self.api, "GET", f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims/{name}")

    async def wait_claim_bound(self, name: str, within: float = 60) -> JSON:
        async def bound() -> JSON | None:
            pvc = await self.claim(name)
            ok = pvc["spec"].get("volumeName") and BIND_COMPLETED in (pvc["metadata"].get("annotations") or {})
            return pvc if ok else None

        return await wait_for(bound, what=f"claim {self.namespace}/{name} to be bound", within=within)

    async def wait_bound(self, name: str, within: float = 90) -> str:
        async def bound() -> str | None:
            pod = await get_pod(self.api, self.namespace, name)
            return pod["spec"].get("nodeName") or None

        return await wait_for(bound, what=f"{self.scheduler} to bind {self.namespace}/{name}", within=within)

    async def wait_message(self, name: str, within: float = 90) -> str:
        """The PodScheduled=False message; the pod must stay unbound."""
        return await scheduling_failure_message(
            self.api, self.namespace, name, scheduler=self.scheduler, within=within
        )

    async def cleanup(self) -> None:
        """Unblock and delete what the run created: claims' and PVs' protection finalizers (no protection
        controllers run here) are dropped first."""
        with contextlib.suppress(ApiException):
            answer = await request_json(self.api, "GET", f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims")
            for pvc in answer["items"]:
                path = f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims/{pvc['metadata']['name']}"
                with contextlib.suppress(ApiException):
                    await request_json(
                        self.api, "PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH
                    )
        await delete_namespace(self.api, self.namespace)
        for path in reversed(self.cluster_scoped):
            with contextlib.suppress(ApiException):
                await request_json(
                    self.api, "PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH
                )
            with contextlib.suppress(ApiException):
                await request_json(self.api, "DELETE", path)


async def delete_namespace(api: ApiClient, name: str) -> None:
    """Delete the namespace and force-delete its pods (no kubelet confirms a graceful delete)."""
    with contextlib.suppress(ApiException):
        await request_json(api, "DELETE", f"/api/v1/namespaces/{name}")

    async def no_pods_left() -> bool:
        if not await list_pods(api, name):
            return True
        await request_json(api, "DELETE", f"/api/v1/namespaces/{name}/pods", query={"gracePeriodSeconds": 0})
        return False

    await wait_for(no_pods_left, what=f"the pods of namespace {name} to be deleted", within=60)


@contextlib.asynccontextmanager
async def run_for(api: ApiClient, control_plane: ControlPlane, scheduler: str, prefix: str) -> AsyncIterator[Run]:
    """A fresh namespace (with its default ServiceAccount) for one scheduler's run; cleaned up afterwards."""
    short = "up" if scheduler == UPSTREAM else "py"
    namespace = f"{prefix}-{short}-{secrets.token_hex(2)}"
    await request_json(
        api,
        "POST",
        "/api/v1/namespaces",
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
    )

    async def sa() -> bool:
        try:
            await request_json(api, "GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
        except ApiException as e:
            if e.status == 404:
                return False
            raise
        return True

    await wait_for(sa, what=f"ServiceAccount {namespace}/default")
    run = Run(api, scheduler, namespace, namespace)
    try:
        async with Invariants(api, namespace) as invariants:
            yield run
            await invariants.check()  # only when the scenario itself passed: its own failure says more
    finally:
        await run.cleanup()


# --------------------------------------------------------------------------------------------- invariants


def pod_claims(pod: Mapping[str, Any]) -> list[str]:
    out = []
    for vol in pod["spec"].get("volumes") or []:
        if vol.get("persistentVolumeClaim"):
            out.append(vol["persistentVolumeClaim"]["claimName"])
        elif vol.get("ephemeral") is not None:
            out.append(f"{pod['metadata']['name']}-{vol['name']}")
    return out


class Invariants:
    """Samples pods, then claims, then PVs of a namespace while a scenario runs (pods first: a claim never goes
    from bound back to unbound, so a pod seen bound must see its claims bound in the later read)."""

    def __init__(self, api: ApiClient, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.violations: list[str] = []
        self.samples = 0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Invariants:
        self._task = asyncio.get_running_loop().create_task(self._loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(ApiException, aiohttp.ClientError, TimeoutError):
                await self.sample()
            await asyncio.sleep(0.25)

    async def sample(self) -> None:
        pods = await list_pods(self.api, self.namespace)
        claims = (await request_json(self.api, "GET", f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims"))[
            "items"
        ]
        pvs = (await request_json(self.api, "GET", "/api/v1/persistentvolumes"))["items"]
        self.samples += 1
        by_name = {c["metadata"]["name"]: c for c in claims}
        for pod in pods:
            node = pod["spec"].get("nodeName")
            if not node:
                continue
            for claim in pod_claims(pod):
                pvc = by_name.get(claim)
                bound = bool(
                    pvc
                    and pvc["spec"].get("volumeName")
                    and BIND_COMPLETED in (pvc["metadata"].get("annotations") or {})
                )
                if not bound:
                    self.violations.append(f"pod {pod['metadata']['name']} bound to {node} with claim {claim} unbound")
        seen: dict[str, str] = {}
        for pvc in claims:
            volume = pvc["spec"].get("volumeName")
            if volume:
                if volume in seen:
                    self.violations.append(
                        f"PV {volume} is the volume of claims {seen[volume]} and {pvc['metadata']['name']}"
                    )
                seen[volume] = pvc["metadata"]["name"]
        for pv in pvs:
            ref = pv["spec"].get("claimRef") or {}
            volume_name = pv["metadata"]["name"]
            if ref.get("namespace") == self.namespace and volume_name in seen and seen[volume_name] != ref.get("name"):
                self.violations.append(f"PV {volume_name} claimRef {ref.get('name')} but bound by {seen[volume_name]}")

    async def check(self) -> None:
        await self.sample()
        assert self.samples >= 2
        assert not self.violations, "\n".join(sorted(set(self.violations)))


# --------------------------------------------------------------------------------------------- provisioner


class Provisioner:
    """What an external provisioner does: for a claim of its class that carries the selected-node annotation and
    no volume yet, create a PV pre-bound to the claim, with node affinity to that node (after `delay` seconds;
    never while `answering` is False). The PV controller then binds the claim."""

    def __init__(self, api: ApiClient, name: str, *, delay: float = 0.0, answering: bool = True) -> None:
        self.api = api
        self.name = name
        self.delay = delay
        self.answering = answering
        self.first_seen: dict[str, float] = {}
        self.provisioned: list[str] = []
        self.selected: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Provisioner:
        self._task = asyncio.get_running_loop().create_task(self._loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _classes(self) -> set[str]:
        answer = await request_json(self.api, "GET", "/apis/storage.k8s.io/v1/storageclasses")
        return {c["metadata"]["name"] for c in answer["items"] if c.get("provisioner") == self.name}

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(ApiException, aiohttp.ClientError, TimeoutError):
                await self.step()
            await asyncio.sleep(0.2)

    async def step(self) -> None:
        classes = await self._classes()
        claims = (await request_json(self.api, "GET", "/api/v1/persistentvolumeclaims"))["items"]
        now = time.monotonic()
        for pvc in claims:
            meta, spec = pvc["metadata"], pvc["spec"]
            node = (meta.get("annotations") or {}).get(SELECTED_NODE)
            if spec.get("storageClassName") not in classes or not node or spec.get("volumeName"):
                continue
            uid = meta["uid"]
            self.selected[f"{meta['namespace']}/{meta['name']}"] = node
            first = self.first_seen.setdefault(uid, now)
            if not self.answering or now - first < self.delay or f"pvc-{uid}" in self.provisioned:
                continue
            await self.provision(pvc, node)

    async def provision(self, pvc: JSON, node: str) -> None:
        meta, spec = pvc["metadata"], pvc["spec"]
        name = f"pvc-{meta['uid']}"
        term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {PROVISIONED_BY: self.name}},
            "spec": {
                "capacity": {"storage": spec["resources"]["requests"]["storage"]},
                "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": spec["storageClassName"],
                "volumeMode": spec.get("volumeMode") or "Filesystem",
                "claimRef": {
                    "kind": "PersistentVolumeClaim",
                    "apiVersion": "v1",
                    "namespace": meta["namespace"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
                "csi": {"driver": self.name, "volumeHandle": name},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
            },
        }
        try:
            await request_json(self.api, "POST", "/api/v1/persistentvolumes", body=body)
        except ApiException as e:
            if e.status != 409:
                raise
        self.provisioned.append(name)

    async def cleanup(self) -> None:
        for name in self.provisioned:
            path = f"/api/v1/persistentvolumes/{name}"
            with contextlib.suppress(ApiException):
                await request_json(
                    self.api, "PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH
                )
            with contextlib.suppress(ApiException):
                await request_json(self.api, "DELETE", path)


# --------------------------------------------------------------------------------------------- fixtures


@pytest.fixture
def prefix() -> str:
    """A short unique prefix for this test's namespaces and cluster-scoped objects."""
    return f"vol-{secrets.token_hex(2)}"


@pytest.fixture
async def nodes3(create_node: NodeFactory, prefix: str) -> list[str]:
    """Three plain nodes: n1 in zone a, n2 and n3 in zone b."""
    names = [f"{prefix}-n1", f"{prefix}-n2", f"{prefix}-n3"]
    for name, zone in zip(names, ("zone-a", "zone-b", "zone-b"), strict=True):
        await create_node(name, zone=zone, region="r1")
    return names


Scenario = Callable[[Run, list[str]], Awaitable[dict[str, Any]]]


async def compare(
    api: ApiClient, control_plane: ControlPlane, prefix: str, nodes: list[str], scenario: Scenario
) -> dict[str, dict[str, Any]]:
    """Run the scenario with each scheduler (upstream first) and return both outcomes."""
    outcomes: dict[str, dict[str, Any]] = {}
    for scheduler in SCHEDULERS:
        async with run_for(api, control_plane, scheduler, prefix) as run:
            outcomes[scheduler] = await scenario(run, nodes)
    print(json.dumps(outcomes, indent=2, sort_keys=True))
    return outcomes


# --------------------------------------------------------------------------------------------- scenarios


async def test_static_local_pvs_wait_for_first_consumer(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    control_plane: ControlPlane,
    prefix: str,
    nodes3: list[str],
) -> None:
    """Local PVs with node affinity, WaitForFirstConsumer class: the pod lands where a big-enough PV is, the
    PV and the claim end bound to each other; a second claim finds no PV anywhere (same message)."""

    async def scenario(run: Run, nodes: list[str]) -> dict[str, Any]:
        sc = await run.storage_class("local")
        pv_big = await run.pv("pv-big", sc, capacity="10Gi", node=nodes[1])
        await run.pv("pv-small", sc, capacity="1Gi", node=nodes[2])
        await run.pvc("data", sc, request="5Gi")
        await run.pod("db", ("data",))
        node = await run.wait_bound("db")
        claim = await run.wait_claim_bound("data")
        pv = await request_json(run.api, "GET", f"/api/v1/persistentvolumes/{pv_big}")
        assert claim["spec"]["volumeName"] == pv_big
        assert (pv["spec"]["claimRef"]["name"], pv["spec"]["claimRef"]["uid"]) == ("data", claim["metadata"]["uid"])
        assert pv["status"]["phase"] == "Bound"
        await run.pvc("data2", sc, request="5Gi")
        await run.pod("db2", ("data2",))
        return {"db": nodes.index(node), "db2": await run.wait_message("db2")}

    outcomes = await compare(api_client, control_plane, prefix, nodes3, scenario)
    assert_same_outcomes(outcomes)
    assert outcomes[OURS]["db"] == 1
    assert (
        outcomes[OURS]["db2"] == "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind."
        f" preemption: 0/3 nodes are available: 3 {NOT_HELPFUL}"
    )


async def test_volume_binding_score_prefers_the_least_utilized_static_pv(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    control_plane: ControlPlane,
    prefix: str,
    nodes3: list[str],
) -> None:
    """VolumeBinding's Score (StorageCapacityScoring, default shape): a 5Gi claim matches a 6Gi, a 20Gi and an
    8Gi local PV on three otherwise identical nodes (utilization 83/25/62 %: scores 17/75/38), so only that
    score separates the nodes; both schedulers pick the node of the 20Gi PV and bind it to the claim."""

    async def scenario(run: Run, nodes: list[str]) -> dict[str, Any]:
        sc = await run.storage_class("local")
        pvs = [
            await run.pv(f"pv-{size.lower()}", sc, capacity=size, node=node)
            for size, node in zip(("6Gi", "20Gi", "8Gi"), nodes, strict=True)
        ]
        await run.pvc("data", sc, request="5Gi")
        await run.pod("db", ("data",))
        node = await run.wait_bound("db")
        claim = await run.wait_claim_bound("data")
        return {"db": nodes.index(node), "pv": pvs.index(claim["spec"]["volumeName"])}

    outcomes = await compare(api_client, control_plane, prefix, nodes3, scenario)
    assert_same_outcomes(outcomes)
    assert outcomes[OURS] == {"db": 1, "pv": 1}


async def test_pod_waiting_for_its_claim_schedules_when_it_appears(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    control_plane: ControlPlane,
    prefix: str,
    nodes3: list[str],
) -> None:
    """A pod created before its claim gets the lister's not-found text; creating the claim (a PV-controller-
    bound Immediate claim) requeues it at once and it is bound."""

    async def scenario(run: Run, nodes: list[str]) -> dict[str, Any]:
        sc = await run.storage_class("late", mode="Immediate")
        await run.pod("early", ("late",))
        message = await run.wait_message("early")
        await run.pv("pv", sc)
        await run.pvc("late", sc)
        node = await run.wait_bound("early")
        await run.wait_claim_bound("late")
        return {"message": message, "bound": node in nodes}

    outcomes = await compare(api_client, control_plane, prefix, nodes3, scenario)
    assert_same_outcomes(outcomes)
    assert outcomes[OURS] == {
        "message": '0/3 nodes are available: persistentvolumeclaim "late" not found. not found',
        "bound": True,
    }


async def test_dynamic_provisioning_with_a_quick_and_a_slow_provisioner(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    control_plane: ControlPlane,
    prefix: str,
    nodes3: list[str],
) -> None:
    """Claims of provisioning WaitForFirstConsumer classes: the scheduler writes selected-node, the provisioner
    creates a PV on that node (one after a 4 s delay), the PV controller binds, then the pod is bound there."""

    async def scenario(run: Run, nodes: list[str]) -> dict[str, Any]:
        quick_name, slow_name = f"{run.tag}.quick.e2e.pyscheduler.io", f"{run.tag}.slow.e2e.pyscheduler.io"
        async with (
            Provisioner(run.api, quick_name) as quick,
            Provisioner(run.api, slow_name, delay=4.0) as slow,
        ):
            try:
                fast_sc = await run.storage_class("quick", provisioner=quick_name)
                slow_sc = await run.storage_class("slow", provisioner=slow_name)
                await run.pvc("q", fast_sc, request="2Gi")
                await run.pvc("s", slow_sc, request="3Gi")
                await run.pod("quick", ("q",))
                await run.pod("slow", ("s",))
                out: dict[str, Any] = {}
                for pod_name, claim_name, provisioner in (("quick", "q", quick), ("slow", "s", slow)):
                    node = await run.wait_bound(pod_name, within=120)
                    claim = await run.wait_claim_bound(claim_name)
                    assert claim["metadata"]["annotations"][SELECTED_NODE] == node
                    pv = await request_json(run.api, "GET", f"/api/v1/persistentvolumes/{claim['spec']['volumeName']}")
                    assert pv["metadata"]["annotations"][PROVISIONED_BY] == provisioner.name
                    values = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
                    assert values["values"] == [node]
                    assert provisioner.provisioned == [pv["metadata"]["name"]]  # exactly one PV for the claim
                    out[pod_name] = node in nodes
                return out
            finally:
                await quick.cleanup()
                await slow.cleanup()

    outcomes = await compare(api_client, control_plane, prefix, nodes3, scenario)
    assert outcomes[OURS] == outcomes[UPSTREAM] == {"quick": True, "slow": True}


async def test_zonal_pv(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    control_plane: ControlPlane,
    prefix: str,
    nodes3: list[str],
) -> None:
    """A bound PV labelled with zone a: the pod goes to zone a; a pod held to zone b is rejected by VolumeZone."""

    async def scenario(run: Run, nodes: list[str]) -> dict[str, Any]:
        sc = await run.storage_class("zonal", mode="Immediate")
        await run.pv("pv-a", sc, labels={ZONE: "zone-a"})
        await run.pvc("data", sc)
        await run.wait_claim_bound("data")
        await run.pod("zonal", ("data",))
        node = await run.wait_bound("zonal")
        await run.pod("zone-b", ("data",), node_selector={ZONE: "zone-b"})
        return {"zonal": nodes.index(node), "zone-b": await run.wait_message("zone-b")}

    outcomes = await compare(api_client, control_plane, prefix, nodes3, scenario)
    assert_same_outcomes(outcomes)
    assert outcomes[OURS]["zonal"] == 0
    assert outcomes[OURS]["zone-b"] == (
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "2 node(s) had no available volume zone."
        f" preemption: 0/3 nodes are available: 3 {NOT_HELPFUL}"
    )


async def test_read_write_once_pod_claim_used_by_two_pods(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    control_plane: ControlPlane,
    prefix: str,
    nodes3: list[str],
) -> None:
    """The second pod using a ReadWriteOncePod claim is rejected on every node with upstream's words."""

    async def scenario(run: Run, nodes: list[str]) -> dict[str, Any]:
        sc = await run.storage_class("solo", mode="Immediate")
        await run.pv("pv", sc, access_modes=("ReadWriteOncePod",))
        await run.pvc("solo", sc, access_modes=("ReadWriteOncePod",))
        await run.wait_claim_bound("solo")
        await run.pod("owner", ("solo",))
        node = await run.wait_bound("owner")
        await run.pod("second", ("solo",))
        return {"owner": node in nodes, "second": await run.wait_message("second")}

    outcomes = await compare(api_client, control_plane, prefix, nodes3, scenario)
    assert_same_outcomes(outcomes)
    assert outcomes[OURS]["second"] == (
        "0/3 nodes are available: 3 node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod "
        "access mode already in-use by another pod."
        f" preemption: 0/3 nodes are available: 3 {NO_VICTIMS}."
    )


async def test_csi_driver_limit_reached_on_one_node(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    control_plane: ControlPlane,
    prefix: str,
    nodes3: list[str],
) -> None:
    """n1's CSINode allows one volume of the driver and holds one: a pod held to n1 exceeds the limit, a free
    pod avoids n1."""
    driver = f"{prefix}.csi.e2e.pyscheduler.io"
    csi_nodes = []
    for node, count in zip(nodes3, (1, 5, 5), strict=True):
        body = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": node},
            "spec": {"drivers": [{"name": driver, "nodeID": node, "allocatable": {"count": count}}]},
        }
        await request_json(api_client, "POST", "/apis/storage.k8s.io/v1/csinodes", body=body)
        csi_nodes.append(node)

    async def scenario(run: Run, nodes: list[str]) -> dict[str, Any]:
        sc = await run.storage_class("csi", mode="Immediate")
        for claim in ("held", "pinned", "free"):
            await run.pv(f"pv-{claim}", sc, csi_driver=driver)
            await run.pvc(claim, sc)
            await run.wait_claim_bound(claim)
        on_n1 = {HOSTNAME: nodes[0]}
        await run.pod("holder", ("held",), node_selector=on_n1)
        await run.wait_bound("holder")
        await run.pod("pinned", ("pinned",), node_selector=on_n1)
        message = await run.wait_message("pinned")
        await run.pod("free", ("free",))
        node = await run.wait_bound("free")
        return {"pinned": message, "free-avoids-n1": node != nodes[0]}

    try:
        outcomes = await compare(api_client, control_plane, prefix, nodes3, scenario)
    finally:
        for node in csi_nodes:
            with contextlib.suppress(ApiException):
                await request_json(api_client, "DELETE", f"/apis/storage.k8s.io/v1/csinodes/{node}")
    assert_same_outcomes(outcomes)
    assert outcomes[OURS] == {
        "pinned": "0/3 nodes are available: 1 node(s) exceed max volume count, "
        "2 node(s) didn't match Pod's node affinity/selector."
        f" preemption: 0/3 nodes are available: 1 {NO_VICTIMS}, 2 {NOT_HELPFUL}",
        "free-avoids-n1": True,
    }


async def test_statefulset_with_volume_claim_templates(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    control_plane: ControlPlane,
    prefix: str,
    nodes3: list[str],
) -> None:
    """A StatefulSet of 3 replicas (created by kube-controller-manager's statefulset controller) with a
    volumeClaimTemplate on a WaitForFirstConsumer class and one local PV per node: all three pods bound, their
    claims bound, on three distinct nodes. Distinct nodes come from the PVs' node affinity: InterPodAffinity
    (anti-affinity) is not in this branch yet."""

    async def scenario(run: Run, nodes: list[str]) -> dict[str, Any]:
        sc = await run.storage_class("sts")
        for i, node in enumerate(nodes):
            await run.pv(f"pv-{i}", sc, capacity="1Gi", node=node)
        template = pod_manifest("unused", scheduler_name=run.scheduler)
        template_spec = template["spec"]
        template_spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        sts = {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 3,
                "serviceName": "web",
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": template_spec},
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "storageClassName": sc,
                            "resources": {"requests": {"storage": "1Gi"}},
                        },
                    }
                ],
            },
        }
        await run.create(f"/apis/apps/v1/namespaces/{run.namespace}/statefulsets", sts)
        placed = {}
        for i in range(3):
            pod = f"web-{i}"
            await wait_for(functools.partial(_exists, run, pod), what=f"the statefulset controller to create {pod}")
            placed[pod] = await run.wait_bound(pod, within=120)
            await run.wait_claim_bound(f"data-web-{i}")
        return {"distinct-nodes": sorted(nodes.index(n) for n in placed.values()), "bound": len(placed)}

    outcomes = await compare(api_client, control_plane, prefix, nodes3, scenario)
    assert outcomes[OURS] == outcomes[UPSTREAM] == {"distinct-nodes": [0, 1, 2], "bound": 3}


async def _exists(run: Run, pod: str) -> bool:
    try:
        await get_pod(run.api, run.namespace, pod)
    except ApiException as e:
        if e.status == 404:
            return False
        raise
    return True


# --------------------------------------------------------------------------------------------- bind timeout


def _bind_timeout_profile(scheduler: str, seconds: int) -> JSON:
    return {
        "schedulerName": scheduler,
        "pluginConfig": [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": seconds}}],
    }


def _config_with(tmp_path: Path, profile: JSON) -> Path:
    """A single-replica KubeSchedulerConfiguration with one profile of our choosing."""
    import yaml

    config = tmp_path / "pyscheduler-volumes.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
                "profiles": [profile],
            }
        )
    )
    return config


async def test_provisioner_that_never_answers_times_out_and_the_pod_is_retried(
    api_client: ApiClient,
    control_plane: ControlPlane,
    kubeconfig: Path,
    tmp_path: Path,
    prefix: str,
    nodes3: list[str],
    start_pyscheduler: StartPyScheduler,
) -> None:
    """bindTimeoutSeconds=3 and a provisioner that does not answer: the binding fails with upstream's PreBind
    error (SchedulerError), the pod stays unbound; once the provisioner answers, the retried pod binds. Nothing
    leaks: one PV for the claim, and pyscheduler holds no assumed pod."""
    timeout = 3
    control_plane.start_kube_scheduler(profiles=[_bind_timeout_profile(UPSTREAM, timeout)])
    try:
        ours = await start_pyscheduler(
            "--enable-debug-handlers", config=_config_with(tmp_path, _bind_timeout_profile(OURS, timeout))
        )

        async def scenario(run: Run, nodes: list[str]) -> dict[str, Any]:
            name = f"{run.tag}.mute.e2e.pyscheduler.io"
            async with Provisioner(run.api, name, answering=False) as mute:
                try:
                    sc = await run.storage_class("mute", provisioner=name)
                    await run.pvc("data", sc)
                    await run.pod("db", ("data",))

                    async def failed() -> str | None:
                        pod = await get_pod(run.api, run.namespace, "db")
                        assert not pod["spec"].get("nodeName")
                        cond = status_condition(pod, "PodScheduled")
                        if cond and cond.get("reason") == "SchedulerError":
                            return str(cond["message"])
                        return None

                    message = await wait_for(failed, what="the binding to time out", within=120)
                    assert mute.provisioned == []
                    mute.answering = True  # the retried attempt's claim gets its PV now
                    node = await run.wait_bound("db", within=120)
                    claim = await run.wait_claim_bound("data")
                    assert claim["metadata"]["annotations"][SELECTED_NODE] == node
                    assert len(mute.provisioned) == 1
                    return {"message": message, "bound": node in nodes}
                finally:
                    await mute.cleanup()

        outcomes = await compare(api_client, control_plane, prefix, nodes3, scenario)
        status, body = await ours.request("GET", "/debug/cache")
        assert status == 200, body
        assert json.loads(body)["assumed_pods"] == []
    finally:
        control_plane.stop_process("kube-scheduler")
    assert (
        outcomes[OURS]
        == outcomes[UPSTREAM]
        == {
            "message": 'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded',
            "bound": True,
        }
    )
