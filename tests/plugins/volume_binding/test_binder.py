"""VolumeBinding's binder, ported from upstream volumebinding/binder_test.go (v1.37): FindPodVolumes without
and with provisioning and with CSI migration, AssumePodVolumes, RevertAssumedPodVolumes, bindAPIUpdate,
checkBindings (also with CSI migration), BindPodVolumes, FindAssumeVolumes and TestCapacity; the fixtures
(makeTestPVC, makeTestPV, the storage classes of newTestBinder) are the same.

`FakeAPI` plays upstream's fake clientset + volume reactor: an API store with resourceVersion conflicts whose
writes reach the informer store (the object store plugins read) at once, as a watch would deliver them."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.core.api import WriteError
from scheduler.framework.objects import object_key
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo, NodeRecord
from scheduler.plugins.volume_binding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    BindingInfo,
    DynamicProvision,
    PodVolumes,
    VolumeBinder,
)
from scheduler.storage import volume as st
from scheduler.testing import StaticHandle, make_pod

JSON = dict[str, Any]

PROVISIONER = "test-provisioner"
WAIT = "waitClass"
IMMEDIATE = "immediateClass"
WAIT_PROV = "waitClassWithProvisioner"
TOPO_MISMATCH = "topoMismatchClass"
NODE_KEY = "nodeKey"

UNBOUND, PREBOUND, BOUND, SELECTED_NODE = range(4)


def make_pvc(name: str, size: str, node: str, state: int, pv_name: str, rv: str, cls: str | None) -> JSON:
    spec: JSON = {"resources": {"requests": {"storage": size}}, "volumeMode": "Filesystem"}
    if cls is not None:
        spec["storageClassName"] = cls
    meta: JSON = {"name": name, "namespace": "testns", "uid": "pvc-uid", "resourceVersion": rv}
    if state == SELECTED_NODE:
        meta["annotations"] = {st.ANN_SELECTED_NODE: node}
    if state == BOUND:
        meta["annotations"] = {st.ANN_BIND_COMPLETED: "yes"}
    if state in (BOUND, PREBOUND):
        spec["volumeName"] = pv_name
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def make_pv(name: str, node: str, capacity: str, rv: str, bound_to: JSON | None, cls: str) -> JSON:
    spec: JSON = {"capacity": {"storage": capacity}, "storageClassName": cls, "volumeMode": "Filesystem"}
    meta: JSON = {"name": name, "resourceVersion": rv}
    if node:
        expr = {"key": NODE_KEY, "operator": "In", "values": [node]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}
    if bound_to is not None:
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "resourceVersion": bound_to["metadata"]["resourceVersion"],
            "name": bound_to["metadata"]["name"],
            "namespace": "testns",
            "uid": "pvc-uid",
        }
        meta["annotations"] = {st.ANN_BOUND_BY_CONTROLLER: "yes"}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Available"},
    }


unbound_pvc = make_pvc("unbound-pvc", "1G", "", UNBOUND, "", "1", WAIT)
unbound_pvc2 = make_pvc("unbound-pvc2", "5G", "", UNBOUND, "", "1", WAIT)
prebound_pvc = make_pvc("prebound-pvc", "1G", "", PREBOUND, "pv-node1a", "1", WAIT)
prebound_pvc_node1a = make_pvc("unbound-pvc", "1G", "", PREBOUND, "pv-node1a", "1", WAIT)
bound_pvc = make_pvc("bound-pvc", "1G", "", BOUND, "pv-bound", "1", WAIT)
bound_pvc_node1a = make_pvc("unbound-pvc", "1G", "", BOUND, "pv-node1a", "1", WAIT)
immediate_unbound_pvc = make_pvc("immediate-unbound-pvc", "1G", "", UNBOUND, "", "1", IMMEDIATE)
immediate_bound_pvc = make_pvc("immediate-bound-pvc", "1G", "", BOUND, "pv-bound-immediate", "1", IMMEDIATE)
provisioned_pvc = make_pvc("provisioned-pvc", "1Gi", "", UNBOUND, "", "1", WAIT_PROV)
provisioned_pvc2 = make_pvc("provisioned-pvc2", "1Gi", "", UNBOUND, "", "1", WAIT_PROV)
provisioned_pvc_higher = make_pvc("provisioned-pvc2", "1Gi", "", UNBOUND, "", "2", WAIT_PROV)
provisioned_pvc_bound = make_pvc("provisioned-pvc", "1Gi", "", BOUND, "pv-bound", "1", WAIT_PROV)
no_provisioner_pvc = make_pvc("no-provisioner-pvc", "1Gi", "", UNBOUND, "", "1", WAIT)
topo_mismatch_pvc = make_pvc("topo-mismatch-pvc", "1Gi", "", UNBOUND, "", "1", TOPO_MISMATCH)
selected_node_pvc = make_pvc("provisioned-pvc", "1Gi", "node1", SELECTED_NODE, "", "1", WAIT_PROV)
bound_migration_pvc = make_pvc("pvc-migration-bound", "1G", "", BOUND, "pv-migration-bound", "1", WAIT)
prov_migration_pvc_bound = make_pvc("pvc-migration-provisioned", "1Gi", "", BOUND, "pv-migration-bound", "1", WAIT_PROV)


def generic_pvc(owned: bool) -> JSON:
    pvc = make_pvc("test-pod-test-volume", "1G", "", BOUND, "pv-bound", "1", IMMEDIATE)
    if owned:
        pvc["metadata"]["ownerReferences"] = [{"name": "test-pod", "uid": "test-pod-uid", "controller": True}]
    return pvc


conflicting_generic_pvc = generic_pvc(False)
correct_generic_pvc = generic_pvc(True)
pv_bound_generic = make_pv("pv-bound", "node1", "1G", "1", correct_generic_pvc, WAIT)

pv_node1a = make_pv("pv-node1a", "node1", "5G", "1", None, WAIT)
pv_node1b = make_pv("pv-node1b", "node1", "10G", "1", None, WAIT)
pv_node1c = make_pv("pv-node1b", "node1", "5G", "1", None, WAIT)
pv_node2 = make_pv("pv-node2", "node2", "1G", "1", None, WAIT)
pv_bound = make_pv("pv-bound", "node1", "1G", "1", bound_pvc, WAIT)
pv_node1a_bound = make_pv("pv-node1a", "node1", "5G", "1", unbound_pvc, WAIT)
pv_node1b_bound = make_pv("pv-node1b", "node1", "10G", "1", unbound_pvc2, WAIT)
pv_node1b_bound_higher = make_pv("pv-node1b", "node1", "10G", "2", unbound_pvc2, WAIT)
pv_bound_immediate = make_pv("pv-bound-immediate", "node1", "1G", "1", immediate_bound_pvc, IMMEDIATE)
pv_bound_immediate_node2 = make_pv("pv-bound-immediate", "node2", "1G", "1", immediate_bound_pvc, IMMEDIATE)

ZONE1_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": "us-east-1",
    "failure-domain.beta.kubernetes.io/region": "us-east-1a",
}


def migration_pv(pvc: JSON, migrated: bool) -> JSON:
    pv = make_pv("pv-migration-bound", "node1", "1G", "1", pvc, WAIT)
    del pv["spec"]["nodeAffinity"]  # written by the CSI translation
    pv["metadata"]["labels"] = dict(ZONE1_LABELS)
    if migrated:
        pv["spec"]["gcePersistentDisk"] = {"pdName": "test-disk", "fsType": "ext4", "partition": 0, "readOnly": False}
    else:
        pv["spec"]["rbd"] = {"image": "test-disk"}
    return pv


migration_pv_bound = migration_pv(bound_migration_pvc, True)
migration_pv_bound_to_unbound = migration_pv(unbound_pvc, True)
nonmigration_pv_bound_to_unbound = migration_pv(unbound_pvc, False)


def node(name: str, **labels: str) -> NodeInfo:
    return NodeInfo(name, NodeRecord(name, labels={"kubernetes.io/hostname": name, **labels}))


node1 = node("node1", nodeKey="node1")
node2 = node("node2", nodeKey="node2")
node1_no_labels = node("node1")
node1_zone1 = node("node1", **{"topology.gke.io/zone": "us-east-1"})
node1_zone2 = node("node1", **{"topology.gke.io/zone": "us-east-2"})


def csi_node(name: str, migrated: str) -> JSON:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name, "annotations": {st.MIGRATED_PLUGINS_ANNOTATION: migrated}},
        "spec": {},
    }


csi_node1_migrated = csi_node("node1", "kubernetes.io/gce-pd")
csi_node1_not_migrated = csi_node("node1", "")


def csi_driver(name: str, capacity: bool) -> JSON:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"storageCapacity": capacity},
    }


def make_capacity(name: str, cls: str, n: NodeInfo | None, capacity: str, max_size: str) -> JSON:
    topology: JSON = {}
    if n is not None and n.node is not None:
        topology["matchLabels"] = {NODE_KEY: n.node.labels[NODE_KEY]}
    obj: JSON = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "default"},
        "storageClassName": cls,
        "nodeTopology": topology,
    }
    if capacity:
        obj["capacity"] = capacity
    if max_size:
        obj["maximumVolumeSize"] = max_size
    return obj


def storage_classes() -> list[JSON]:
    def sc(name: str, mode: str, provisioner: str = "", topologies: list[str] | None = None) -> JSON:
        obj: JSON = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "volumeBindingMode": mode,
        }
        if provisioner:
            obj["provisioner"] = provisioner
        if topologies is not None:
            obj["allowedTopologies"] = [{"matchLabelExpressions": [{"key": NODE_KEY, "values": topologies}]}]
        return obj

    return [
        sc(WAIT_PROV, "WaitForFirstConsumer", PROVISIONER, ["node1", "reference-value"]),
        sc(IMMEDIATE, "Immediate"),
        sc(WAIT, "WaitForFirstConsumer", "kubernetes.io/no-provisioner"),
        sc(TOPO_MISMATCH, "WaitForFirstConsumer", PROVISIONER, ["reference-value"]),
    ]


# ---------------------------------------------------------------------------------------------------------
# The test environment


class FakeAPI:
    """The API server's copy of PVs/PVCs: updates conflict on a stale resourceVersion; accepted writes reach
    the informer store at once."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.objects: dict[tuple[str, str, str], JSON] = {}
        self.writes: list[JSON] = []

    def add(self, obj: JSON) -> None:
        ns, name = object_key(obj)
        self.objects[(obj["kind"], ns, name)] = copy.deepcopy(obj)

    async def _update(self, kind: str, obj: Mapping[str, Any]) -> JSON:
        ns, name = object_key(dict(obj))
        stored = self.objects.get((kind, ns, name))
        if stored is None:
            raise WriteError(f'{kind.lower()}s "{name}" not found')
        if st.resource_version(stored) != st.resource_version(obj):
            raise WriteError(f'Operation cannot be fulfilled on {kind.lower()}s "{name}": the object has been modified')
        new = copy.deepcopy(dict(obj))
        new["metadata"]["resourceVersion"] = str(int(st.resource_version(stored) or "0") + 1)
        self.objects[(kind, ns, name)] = new
        self.writes.append(new)
        self.env.informer_put(new)
        return copy.deepcopy(new)

    async def update_persistent_volume(self, pv: Mapping[str, Any]) -> JSON:
        return await self._update("PersistentVolume", pv)

    async def update_persistent_volume_claim(self, pvc: Mapping[str, Any]) -> JSON:
        return await self._update("PersistentVolumeClaim", pvc)


class BinderHandle(StaticHandle):
    def __init__(self, env: Env) -> None:
        super().__init__(Snapshot())
        self.env = env
        self.pod_alive = True

    @property
    def volume_writer(self) -> FakeAPI:
        return self.env.api

    def pod_exists(self, uid: str) -> bool:
        return self.pod_alive


@dataclass
class Env:
    handle: BinderHandle = field(init=False)
    api: FakeAPI = field(init=False)
    binder: VolumeBinder = field(init=False)

    def __post_init__(self) -> None:
        self.handle = BinderHandle(self)
        self.api = FakeAPI(self)
        self.binder = VolumeBinder(self.handle, 1.0, check_period=0.05)
        for obj in storage_classes():
            self.informer_put(obj)

    def informer_put(self, obj: JSON) -> None:
        self.handle.cluster_objects.apply(obj["kind"], None, copy.deepcopy(obj))

    def informer_delete(self, obj: JSON) -> None:
        self.handle.cluster_objects.apply(obj["kind"], "DELETED", obj)

    def init(self, cached: list[JSON], api: list[JSON] | None = None) -> None:
        for obj in cached:
            self.informer_put(obj)
        for obj in cached if api is None else api:
            self.api.add(obj)

    def nodes(self, *infos: NodeInfo) -> None:
        self.handle._snapshot = Snapshot.from_node_infos(list(infos))


def pod_with(claims: list[JSON], name: str = "test-pod") -> Any:
    b = make_pod(name, "testns").uid(f"{name}-uid").node("node1")
    for i, pvc in enumerate(claims):
        b.volume(f"vol{i}", persistentVolumeClaim={"claimName": pvc["metadata"]["name"]})
    return b.info()


def find(env: Env, pod: Any, n: NodeInfo) -> tuple[PodVolumes, list[str]]:
    """findPodVolumes of binder_test.go: GetPodVolumeClaims, unbound immediate claims are an error, then Find."""
    claims = env.binder.get_pod_volume_claims(pod)
    if claims.unbound_claims_immediate:
        raise st.StorageError("pod has unbound immediate PersistentVolumeClaims")
    return env.binder.find_pod_volumes(pod, claims, n)


def binding_names(bindings: list[BindingInfo]) -> list[tuple[str, str]]:
    return [(b.pvc["metadata"]["name"], b.pv["metadata"]["name"]) for b in bindings]


# ---------------------------------------------------------------------------------------------------------
# FindPodVolumes

WITHOUT_PROVISIONING: dict[
    str, tuple[list[JSON], list[JSON], list[JSON] | None, Any, list[tuple[str, str]], list[str], bool]
] = {
    # name: (pvs, pod PVCs, cache PVCs (None: pod PVCs), pod (None: from PVCs), bindings, reasons, should fail)
    "no-volumes": ([], [], None, "none", [], [], False),
    "no-pvcs": ([], [], None, "emptydir", [], [], False),
    "pvc-not-found": ([], [bound_pvc], [], None, [], [], True),
    "bound-pvc": ([pv_bound], [bound_pvc], None, None, [], [], False),
    "bound-pvc,pv-not-exists": ([], [bound_pvc], None, None, [], [ERR_REASON_PV_NOT_EXIST], False),
    "prebound-pvc": ([pv_node1a_bound], [prebound_pvc], None, None, [], [], True),
    "unbound-pvc,pv-same-node": (
        [pv_node2, pv_node1a, pv_node1b],
        [unbound_pvc],
        None,
        None,
        [("unbound-pvc", "pv-node1a")],
        [],
        False,
    ),
    "unbound-pvc,pv-different-node": ([pv_node2], [unbound_pvc], None, None, [], [ERR_REASON_BIND_CONFLICT], False),
    "two-unbound-pvcs": (
        [pv_node1a, pv_node1b],
        [unbound_pvc, unbound_pvc2],
        None,
        None,
        [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")],
        [],
        False,
    ),
    "two-unbound-pvcs,order-by-size": (
        [pv_node1a, pv_node1b],
        [unbound_pvc2, unbound_pvc],
        None,
        None,
        [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")],
        [],
        False,
    ),
    "two-unbound-pvcs,partial-match": (
        [pv_node1a],
        [unbound_pvc, unbound_pvc2],
        None,
        None,
        [("unbound-pvc", "pv-node1a")],
        [ERR_REASON_BIND_CONFLICT],
        False,
    ),
    "one-bound,one-unbound": (
        [pv_bound, pv_node1a],
        [unbound_pvc, bound_pvc],
        None,
        None,
        [("unbound-pvc", "pv-node1a")],
        [],
        False,
    ),
    "one-bound,one-unbound,no-match": (
        [pv_bound, pv_node2],
        [unbound_pvc, bound_pvc],
        None,
        None,
        [],
        [ERR_REASON_BIND_CONFLICT],
        False,
    ),
    "one-prebound,one-unbound": ([pv_node1a, pv_node1b], [unbound_pvc, prebound_pvc], None, None, [], [], True),
    "immediate-bound-pvc": ([pv_bound_immediate], [immediate_bound_pvc], None, None, [], [], False),
    "immediate-bound-pvc-wrong-node": (
        [pv_bound_immediate_node2],
        [immediate_bound_pvc],
        None,
        None,
        [],
        [ERR_REASON_NODE_CONFLICT],
        False,
    ),
    "immediate-unbound-pvc": ([], [immediate_unbound_pvc], None, None, [], [], True),
    "immediate-unbound-pvc,delayed-mode-bound": (
        [pv_bound],
        [immediate_unbound_pvc, bound_pvc],
        None,
        None,
        [],
        [],
        True,
    ),
    "immediate-unbound-pvc,delayed-mode-unbound": ([], [immediate_unbound_pvc, unbound_pvc], None, None, [], [], True),
    "generic-ephemeral,no-pvc": ([], [], None, "ephemeral:no-such-pvc", [], [], True),
    "generic-ephemeral,with-pvc": (
        [pv_bound_generic],
        [],
        [correct_generic_pvc],
        "ephemeral:test-volume",
        [],
        [],
        False,
    ),
    "generic-ephemeral,wrong-pvc": (
        [pv_bound_generic],
        [],
        [conflicting_generic_pvc],
        "ephemeral:test-volume",
        [],
        [],
        True,
    ),
}
DRIVERS = {
    "no CSIDriver": None,
    "CSIDriver with capacity tracking": csi_driver(PROVISIONER, True),
    "CSIDriver without capacity tracking": csi_driver(PROVISIONER, False),
}


def _scenario_pod(kind: Any, claims: list[JSON]) -> Any:
    if kind is None:
        return pod_with(claims)
    b = make_pod("test-pod", "testns").uid("test-pod-uid").node("node1")
    if kind == "emptydir":
        b.volume("scratch", emptyDir={})
    elif isinstance(kind, str) and kind.startswith("ephemeral:"):
        b.volume(kind.split(":", 1)[1], ephemeral={})
    return b.info()


@pytest.mark.parametrize("driver", [pytest.param(d, id=k) for k, d in DRIVERS.items()])
@pytest.mark.parametrize("name", list(WITHOUT_PROVISIONING))
def test_find_pod_volumes_without_provisioning(name: str, driver: JSON | None) -> None:
    """Bound claims' PV affinity, static matching (smallest PV, by request size), immediate claims, ephemeral."""
    pvs, pod_pvcs, cache_pvcs, pod_kind, want_bindings, want_reasons, should_fail = WITHOUT_PROVISIONING[name]
    env = Env()
    env.init(pvs)
    if driver is not None:
        env.informer_put(driver)
    env.init(pod_pvcs if cache_pvcs is None else cache_pvcs)
    pod = _scenario_pod(pod_kind, pod_pvcs)
    try:
        volumes, reasons = find(env, pod, node1)
    except st.StorageError:
        assert should_fail
        return
    assert not should_fail
    assert sorted(reasons) == sorted(want_reasons)
    assert binding_names(volumes.static_bindings) == want_bindings
    assert volumes.dynamic_provisions == []


WITH_PROVISIONING: dict[str, tuple[list[JSON], list[JSON], list[tuple[str, str]], list[str], list[str], bool, bool]] = {
    # name: (pvs, pod PVCs, bindings, provisions (claim names), reasons, should fail, needs capacity)
    "one-provisioned": ([], [provisioned_pvc], [], ["provisioned-pvc"], [], False, True),
    "two-unbound-pvcs,one-matched,one-provisioned": (
        [pv_node1a],
        [unbound_pvc, provisioned_pvc],
        [("unbound-pvc", "pv-node1a")],
        ["provisioned-pvc"],
        [],
        False,
        True,
    ),
    "one-bound,one-provisioned": ([pv_bound], [bound_pvc, provisioned_pvc], [], ["provisioned-pvc"], [], False, True),
    "one-binding,one-selected-node": (
        [pv_bound],
        [bound_pvc, selected_node_pvc],
        [],
        ["provisioned-pvc"],
        [],
        False,
        True,
    ),
    "immediate-unbound-pvc": ([], [immediate_unbound_pvc], [], [], [], True, False),
    "one-immediate-bound,one-provisioned": (
        [pv_bound_immediate],
        [immediate_bound_pvc, provisioned_pvc],
        [],
        ["provisioned-pvc"],
        [],
        False,
        True,
    ),
    "invalid-provisioner": ([], [no_provisioner_pvc], [], [], [ERR_REASON_BIND_CONFLICT], False, False),
    "volume-topology-unsatisfied": ([], [topo_mismatch_pvc], [], [], [ERR_REASON_BIND_CONFLICT], False, False),
}


@pytest.mark.parametrize("driver", [pytest.param(d, id=k) for k, d in DRIVERS.items()])
@pytest.mark.parametrize("name", list(WITH_PROVISIONING))
def test_find_pod_volumes_with_provisioning(name: str, driver: JSON | None) -> None:
    """Claims without a static PV are provisioned when the class allows it on the node; with a capacity-
    tracking driver and no CSIStorageCapacity, `did not have enough free storage`."""
    pvs, pod_pvcs, want_bindings, want_provisions, want_reasons, should_fail, needs_capacity = WITH_PROVISIONING[name]
    env = Env()
    env.init(pvs)
    if driver is not None:
        env.informer_put(driver)
    env.init(pod_pvcs)
    pod = pod_with(pod_pvcs)
    try:
        volumes, reasons = find(env, pod, node1)
    except st.StorageError:
        assert should_fail
        return
    assert not should_fail
    expected_reasons = list(want_reasons)
    if needs_capacity and driver is not None and driver["spec"]["storageCapacity"]:
        expected_reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        want_provisions = []
    assert sorted(reasons) == sorted(expected_reasons)
    assert binding_names(volumes.static_bindings) == want_bindings
    assert [p.pvc["metadata"]["name"] for p in volumes.dynamic_provisions] == want_provisions


@pytest.mark.parametrize(
    ("node_info", "csi_nodes", "reasons"),
    [
        pytest.param(node1_zone1, [csi_node1_migrated], [], id="pvc-bound"),
        pytest.param(node1_zone1, [csi_node1_not_migrated], [], id="pvc-bound,csinode-not-migrated"),
        pytest.param(node1_zone1, [], [], id="pvc-bound,missing-csinode"),
        pytest.param(node1_zone2, [csi_node1_migrated], [ERR_REASON_NODE_CONFLICT], id="pvc-bound,node-different-zone"),
    ],
)
def test_find_pod_volumes_with_csi_migration(node_info: NodeInfo, csi_nodes: list[JSON], reasons: list[str]) -> None:
    """A bound in-tree GCE PD PV is checked with its translated affinity (topology.gke.io/zone) where the
    node's CSINode lists the plugin as migrated."""
    env = Env()
    env.init([migration_pv_bound, bound_migration_pvc, *csi_nodes])
    _, got = find(env, pod_with([bound_migration_pvc]), node_info)
    assert got == reasons


# ---------------------------------------------------------------------------------------------------------
# AssumePodVolumes / RevertAssumedPodVolumes


def _provision_ann(pvc: JSON) -> JSON:
    out = copy.deepcopy(pvc)
    out["metadata"].setdefault("annotations", {})[st.ANN_SELECTED_NODE] = "node1"
    return out


ASSUME: dict[
    str, tuple[list[JSON], list[JSON], list[tuple[JSON, JSON]], list[JSON], bool, bool, list[JSON], list[JSON]]
] = {
    # name: (pod PVCs, PVs, bindings (pvc, pv), provisions, should fail, all bound, expected PVs, expected PVCs)
    "all-bound": ([bound_pvc], [pv_bound], [], [], False, True, [], []),
    "one-binding": ([unbound_pvc], [pv_node1a], [(unbound_pvc, pv_node1a)], [], False, False, [pv_node1a_bound], []),
    "two-bindings": (
        [unbound_pvc, unbound_pvc2],
        [pv_node1a, pv_node1b],
        [(unbound_pvc, pv_node1a), (unbound_pvc2, pv_node1b)],
        [],
        False,
        False,
        [pv_node1a_bound, pv_node1b_bound],
        [],
    ),
    "pv-already-bound": (
        [unbound_pvc],
        [pv_node1a_bound],
        [(unbound_pvc, pv_node1a_bound)],
        [],
        False,
        False,
        [pv_node1a_bound],
        [],
    ),
    "tmpupdate-failed": (
        [unbound_pvc],
        [pv_node1a],
        [(unbound_pvc, pv_node1a), (unbound_pvc2, pv_node1b)],
        [],
        True,
        False,
        [],
        [],
    ),
    "one-binding, one-pvc-provisioned": (
        [unbound_pvc, provisioned_pvc],
        [pv_node1a],
        [(unbound_pvc, pv_node1a)],
        [provisioned_pvc],
        False,
        False,
        [pv_node1a_bound],
        [selected_node_pvc],
    ),
    "one-binding, one-provision-tmpupdate-failed": (
        [unbound_pvc, provisioned_pvc_higher],
        [pv_node1a],
        [(unbound_pvc, pv_node1a)],
        [provisioned_pvc2],
        True,
        False,
        [],
        [],
    ),
}


def _spec_and_claim(obj: JSON) -> tuple[Any, Any]:
    return obj["spec"].get("claimRef"), obj["metadata"].get("annotations")


@pytest.mark.parametrize("name", list(ASSUME))
def test_assume_pod_volumes(name: str) -> None:
    """Static PVs get claimRef + bound-by-controller, claims get selected-node, in the caches only; a stale
    object fails the assumption and leaves the caches as they were."""
    pod_pvcs, pvs, bindings, provisions, should_fail, want_all_bound, want_pvs, want_pvcs = ASSUME[name]
    env = Env()
    env.init(pod_pvcs)
    env.init(pvs)
    volumes = PodVolumes(
        [BindingInfo(copy.deepcopy(c), copy.deepcopy(v)) for c, v in bindings],
        [DynamicProvision(copy.deepcopy(p)) for p in provisions],
    )
    pod = pod_with(pod_pvcs)
    try:
        all_bound = env.binder.assume_pod_volumes(pod, "node1", volumes)
    except st.StorageError:
        assert should_fail
        # validateCacheRestored: nothing stays assumed, the caches show the stored objects
        for _, pv in bindings:
            if env.handle.objects.get("PersistentVolume", "", st.name_of(pv)) is not None:
                assert env.binder.pv_cache.get(st.name_of(pv)) is env.binder.pv_cache.get_api_obj(st.name_of(pv))
        assert env.binder.pv_cache.assumed_count() == 0
        assert env.binder.pvc_cache.assumed_count() == 0
        return
    assert not should_fail
    assert all_bound == want_all_bound
    for want in want_pvs:  # validateAssume: the cache holds the pre-bound PV
        got = env.binder.pv_cache.get(want["metadata"]["name"])
        assert _spec_and_claim(got) == _spec_and_claim(want)
    for want in want_pvcs:
        got = env.binder.pvc_cache.get(st.key_of(want))
        assert got["metadata"]["annotations"] == want["metadata"]["annotations"]
    if not want_all_bound:
        assert [st.name_of(b.pv) for b in volumes.static_bindings] == [st.name_of(p) for p in want_pvs]
        assert [st.annotations_of(p.pvc).get(st.ANN_SELECTED_NODE) for p in volumes.dynamic_provisions] == [
            "node1" for _ in want_pvcs
        ]


def test_revert_assumed_pod_volumes() -> None:
    """RevertAssumedPodVolumes drops exactly the assumptions AssumePodVolumes made."""
    env = Env()
    env.init([unbound_pvc, provisioned_pvc, pv_node1a])
    volumes = PodVolumes([BindingInfo(unbound_pvc, pv_node1a)], [DynamicProvision(provisioned_pvc)])
    pod = pod_with([unbound_pvc, provisioned_pvc])
    assert env.binder.assume_pod_volumes(pod, "node1", volumes) is False
    assert env.binder.pv_cache.get("pv-node1a")["spec"]["claimRef"]["name"] == "unbound-pvc"
    assert st.ANN_SELECTED_NODE in st.annotations_of(env.binder.pvc_cache.get("testns/provisioned-pvc"))
    env.binder.revert_assumed_pod_volumes(volumes)
    assert "claimRef" not in env.binder.pv_cache.get("pv-node1a")["spec"]
    assert st.ANN_SELECTED_NODE not in st.annotations_of(env.binder.pvc_cache.get("testns/provisioned-pvc"))
    assert env.binder.pv_cache.assumed_count() == env.binder.pvc_cache.assumed_count() == 0


def test_find_assume_volumes() -> None:
    """After assuming, finding again for the same pod and node returns the PV it assumed (50 times)."""
    env = Env()
    env.init([pv_node2, pv_node1a, pv_node1c, unbound_pvc])
    pod = pod_with([unbound_pvc])
    volumes, reasons = find(env, pod, node1)
    assert reasons == []
    assert env.binder.assume_pod_volumes(pod, "node1", volumes) is False
    chosen = binding_names(volumes.static_bindings)
    for _ in range(50):
        again, reasons = find(env, pod, node1)
        assert reasons == []
        assert binding_names(again.static_bindings) == chosen


def test_assumed_pv_is_not_offered_to_another_claim() -> None:
    """A PV assumed for one pod's claim is pre-bound in the cache: another claim's next cycle skips it."""
    env = Env()
    other = make_pvc("other-pvc", "1G", "", UNBOUND, "", "1", WAIT)
    env.init([pv_node1a, unbound_pvc, other])
    pod = pod_with([unbound_pvc])
    volumes, _ = find(env, pod, node1)
    env.binder.assume_pod_volumes(pod, "node1", volumes)
    _, reasons = find(env, pod_with([other], name="other-pod"), node1)
    assert reasons == [ERR_REASON_BIND_CONFLICT]


# ---------------------------------------------------------------------------------------------------------
# bindAPIUpdate


def _binding(pvc: JSON, pv: JSON) -> BindingInfo:
    return BindingInfo(copy.deepcopy(pvc), copy.deepcopy(pv))


BIND_API: dict[str, tuple[Any, ...]] = {
    # name: (bindings, cached PVs, API PVs, provisioned PVCs, cached PVCs, API PVCs, should fail,
    #        expected API PVs (claimRef names), expected API PVCs (selected-node))
    "nothing-to-bind-empty": ([], [], None, [], [], None, False, [], []),
    "one-binding": (
        [(unbound_pvc, pv_node1a_bound)],
        [pv_node1a],
        None,
        [],
        [],
        None,
        False,
        [("pv-node1a", "unbound-pvc")],
        [],
    ),
    "two-bindings": (
        [(unbound_pvc, pv_node1a_bound), (unbound_pvc2, pv_node1b_bound)],
        [pv_node1a, pv_node1b],
        None,
        [],
        [],
        None,
        False,
        [("pv-node1a", "unbound-pvc"), ("pv-node1b", "unbound-pvc2")],
        [],
    ),
    "api-already-updated": (
        [(unbound_pvc, pv_node1a_bound)],
        [pv_node1a_bound],
        None,
        [],
        [],
        None,
        False,
        [("pv-node1a", "unbound-pvc")],
        [],
    ),
    "api-update-failed": (
        [(unbound_pvc, pv_node1a_bound), (unbound_pvc2, pv_node1b_bound)],
        [pv_node1a, pv_node1b],
        [pv_node1a, pv_node1b_bound_higher],
        [],
        [],
        None,
        True,
        [("pv-node1a", "unbound-pvc"), ("pv-node1b", "unbound-pvc2")],
        [],
    ),
    "one-provisioned-pvc": (
        [],
        [],
        None,
        [_provision_ann(provisioned_pvc)],
        [provisioned_pvc],
        None,
        False,
        [],
        [("provisioned-pvc", "node1")],
    ),
    "provision-api-update-failed": (
        [],
        [],
        None,
        [_provision_ann(provisioned_pvc), _provision_ann(provisioned_pvc2)],
        [provisioned_pvc, provisioned_pvc2],
        [provisioned_pvc, provisioned_pvc_higher],
        True,
        [],
        [("provisioned-pvc", "node1"), ("provisioned-pvc2", None)],
    ),
    "binding-succeed, provision-api-update-failed": (
        [(unbound_pvc, pv_node1a_bound)],
        [pv_node1a],
        None,
        [_provision_ann(provisioned_pvc), _provision_ann(provisioned_pvc2)],
        [provisioned_pvc, provisioned_pvc2],
        [provisioned_pvc, provisioned_pvc_higher],
        True,
        [("pv-node1a", "unbound-pvc")],
        [("provisioned-pvc", "node1"), ("provisioned-pvc2", None)],
    ),
}


@pytest.mark.parametrize("name", list(BIND_API))
async def test_bind_api_update(name: str) -> None:
    """PVs are PUT first, then claims; the first conflict stops and unwritten assumptions are dropped."""
    bindings_raw, cached_pvs, api_pvs, provisioned, cached_pvcs, api_pvcs, should_fail, want_pvs, want_pvcs = BIND_API[
        name
    ]
    env = Env()
    env.init(cached_pvs, api_pvs)
    env.init(cached_pvcs, api_pvcs)
    bindings = [_binding(c, v) for c, v in bindings_raw]
    claims = [copy.deepcopy(p) for p in provisioned]
    for b in bindings:
        env.binder.pv_cache.assume(b.pv)
    for c in claims:
        env.binder.pvc_cache.assume(c)
    try:
        await env.binder._bind_api_update(pod_with([]), bindings, claims)
    except WriteError:
        assert should_fail
    else:
        assert not should_fail
    for pv_name, claim_name in want_pvs:
        api_pv = env.api.objects[("PersistentVolume", "", pv_name)]
        assert api_pv["spec"]["claimRef"]["name"] == claim_name
    for pvc_name, selected in want_pvcs:
        api_pvc = env.api.objects[("PersistentVolumeClaim", "testns", pvc_name)]
        assert st.annotations_of(api_pvc).get(st.ANN_SELECTED_NODE) == selected
        # validateProvision: the cache shows what the API holds (written) or the restored original (not written)
        cached = env.binder.pvc_cache.get(f"testns/{pvc_name}")
        assert st.annotations_of(cached).get(st.ANN_SELECTED_NODE) == (
            selected if pvc_name == "provisioned-pvc" else None
        )


# ---------------------------------------------------------------------------------------------------------
# checkBindings


def _empty_annotations(pvc: JSON) -> JSON:
    out = copy.deepcopy(pvc)
    out["metadata"]["annotations"] = {}
    return out


def _selected(pvc: JSON, n: str) -> JSON:
    out = copy.deepcopy(pvc)
    out["metadata"].setdefault("annotations", {})[st.ANN_SELECTED_NODE] = n
    return out


def _no_claim_uid(pv: JSON) -> JSON:
    out = copy.deepcopy(pv)
    out["spec"]["claimRef"]["uid"] = ""
    return out


CHECK: dict[str, tuple[Any, ...]] = {
    # name: (init PVs, init PVCs, bindings, provisioned PVCs, API PVs, API PVCs, delete PVs, delete PVCs,
    #        should fail, expected bound)
    "nothing-to-bind": ([], [], [], [], [], [], False, False, False, True),
    "binding-bound": (
        [pv_node1a_bound],
        [bound_pvc_node1a],
        [(unbound_pvc, pv_node1a_bound)],
        [],
        [],
        [],
        False,
        False,
        False,
        True,
    ),
    "binding-prebound": (
        [pv_node1a_bound],
        [prebound_pvc_node1a],
        [(unbound_pvc, pv_node1a_bound)],
        [],
        [],
        [],
        False,
        False,
        False,
        False,
    ),
    "binding-unbound": (
        [pv_node1a_bound],
        [unbound_pvc],
        [(unbound_pvc, pv_node1a_bound)],
        [],
        [],
        [],
        False,
        False,
        False,
        False,
    ),
    "binding-pvc-not-exists": (
        [pv_node1a_bound],
        [],
        [(unbound_pvc, pv_node1a_bound)],
        [],
        [],
        [],
        False,
        False,
        True,
        False,
    ),
    "binding-pv-not-exists": (
        [pv_node1a_bound],
        [bound_pvc_node1a],
        [(unbound_pvc, pv_node1a_bound)],
        [],
        [],
        [],
        True,
        False,
        True,
        False,
    ),
    "binding-claimref-nil": (
        [pv_node1a],
        [bound_pvc_node1a],
        [(unbound_pvc, pv_node1a_bound)],
        [],
        [pv_node1a],
        [bound_pvc_node1a],
        False,
        False,
        True,
        False,
    ),
    "binding-claimref-uid-empty": (
        [pv_node1a_bound],
        [bound_pvc_node1a],
        [(unbound_pvc, pv_node1a_bound)],
        [],
        [_no_claim_uid(pv_node1a_bound)],
        [bound_pvc_node1a],
        False,
        False,
        True,
        False,
    ),
    "binding-one-bound,one-unbound": (
        [pv_node1a_bound, pv_node1b_bound],
        [bound_pvc_node1a, unbound_pvc2],
        [(unbound_pvc, pv_node1a_bound), (unbound_pvc2, pv_node1b_bound)],
        [],
        [],
        [],
        False,
        False,
        False,
        False,
    ),
    "provisioning-pvc-bound": (
        [pv_bound],
        [provisioned_pvc_bound],
        [],
        [_provision_ann(provisioned_pvc)],
        [],
        [_provision_ann(provisioned_pvc_bound)],
        False,
        False,
        False,
        True,
    ),
    "provisioning-pvc-unbound": (
        [],
        [_provision_ann(provisioned_pvc)],
        [],
        [_provision_ann(provisioned_pvc)],
        [],
        [],
        False,
        False,
        False,
        False,
    ),
    "provisioning-pvc-not-exists": (
        [],
        [provisioned_pvc],
        [],
        [_provision_ann(provisioned_pvc)],
        [],
        [],
        False,
        True,
        True,
        False,
    ),
    "provisioning-pvc-annotations-nil": (
        [],
        [provisioned_pvc],
        [],
        [_provision_ann(provisioned_pvc)],
        [],
        [provisioned_pvc],
        False,
        False,
        True,
        False,
    ),
    "provisioning-pvc-selected-node-dropped": (
        [],
        [provisioned_pvc],
        [],
        [_provision_ann(provisioned_pvc)],
        [],
        [_empty_annotations(provisioned_pvc)],
        False,
        False,
        True,
        False,
    ),
    "provisioning-pvc-selected-node-wrong-node": (
        [],
        [provisioned_pvc],
        [],
        [_provision_ann(provisioned_pvc)],
        [],
        [_selected(provisioned_pvc, "wrong-node")],
        False,
        False,
        True,
        False,
    ),
    "binding-bound-provisioning-unbound": (
        [pv_node1a_bound],
        [bound_pvc_node1a, _provision_ann(provisioned_pvc)],
        [(unbound_pvc, pv_node1a_bound)],
        [_provision_ann(provisioned_pvc)],
        [],
        [],
        False,
        False,
        False,
        False,
    ),
    "tolerate-provisioning-pvc-bound-pv-not-found": (
        [pv_node1a],
        [provisioned_pvc],
        [],
        [_provision_ann(provisioned_pvc)],
        [],
        [_provision_ann(provisioned_pvc_bound)],
        True,
        False,
        False,
        False,
    ),
}


async def _api_update(env: Env, objs: list[JSON]) -> list[JSON]:
    """updateVolumes/updateClaims: write through the API (the informer sees it) and return the stored objects."""
    out = []
    for obj in objs:
        env.api.add({**obj, "metadata": {**obj["metadata"], "resourceVersion": "1"}})
        writer = (
            env.api.update_persistent_volume
            if obj["kind"] == "PersistentVolume"
            else env.api.update_persistent_volume_claim
        )
        stored = await writer({**obj, "metadata": {**obj["metadata"], "resourceVersion": "1"}})
        out.append(stored)
    return out


@pytest.mark.parametrize("name", list(CHECK))
async def test_check_bindings(name: str) -> None:
    """True once every claim is fully bound; an error when a PV/claim vanished, the claimRef was reset, or the
    selected-node annotation was dropped or changed (the provisioner asks for rescheduling)."""
    init_pvs, init_pvcs, bindings_raw, provisioned, api_pvs, api_pvcs, del_pvs, del_pvcs, should_fail, want = CHECK[
        name
    ]
    env = Env()
    env.nodes(node1)
    env.init(init_pvs, [])
    env.init(init_pvcs, [])
    bindings = [_binding(c, v) for c, v in bindings_raw]
    claims = [copy.deepcopy(p) for p in provisioned]
    for b in bindings:
        env.binder.pv_cache.assume(b.pv)
    for c in claims:
        env.binder.pvc_cache.assume(c)
    if del_pvs:
        for pv in init_pvs:
            env.informer_delete(pv)
    else:
        await _api_update(env, api_pvs)
    if del_pvcs:
        for pvc in init_pvcs:
            env.informer_delete(pvc)
    else:
        await _api_update(env, api_pvcs)
    try:
        bound = env.binder.check_bindings(pod_with([]), bindings, claims)
    except st.StorageError:
        assert should_fail
        return
    assert not should_fail
    assert bound == want


@pytest.mark.parametrize(
    (
        "init_pvs",
        "init_pvcs",
        "node_info",
        "csi_nodes",
        "bindings_raw",
        "provisioned",
        "api_pvcs",
        "should_fail",
        "want",
    ),
    [
        pytest.param(
            [migration_pv_bound],
            [prov_migration_pvc_bound],
            node1_zone1,
            [csi_node1_migrated],
            [],
            [_provision_ann(prov_migration_pvc_bound)],
            [_provision_ann(prov_migration_pvc_bound)],
            False,
            True,
            id="provisioning-pvc-bound",
        ),
        pytest.param(
            [migration_pv_bound_to_unbound],
            [unbound_pvc],
            node1_zone1,
            [csi_node1_migrated],
            [(unbound_pvc, migration_pv_bound_to_unbound)],
            [],
            [],
            False,
            False,
            id="binding-node-pv-same-zone",
        ),
        pytest.param(
            [migration_pv_bound_to_unbound],
            [unbound_pvc],
            node1_zone1,
            [],
            [(unbound_pvc, migration_pv_bound_to_unbound)],
            [],
            [],
            False,
            False,
            id="binding-without-csinode",
        ),
        pytest.param(
            [migration_pv_bound_to_unbound],
            [unbound_pvc],
            node1_zone1,
            [csi_node1_not_migrated],
            [(unbound_pvc, migration_pv_bound_to_unbound)],
            [],
            [],
            False,
            False,
            id="binding-non-migrated-plugin",
        ),
        pytest.param(
            [migration_pv_bound_to_unbound],
            [unbound_pvc],
            node1_zone2,
            [csi_node1_migrated],
            [(unbound_pvc, migration_pv_bound_to_unbound)],
            [],
            [],
            True,
            False,
            id="binding-node-pv-in-different-zones",
        ),
        pytest.param(
            [nonmigration_pv_bound_to_unbound],
            [unbound_pvc],
            node1_zone2,
            [csi_node1_migrated],
            [(unbound_pvc, nonmigration_pv_bound_to_unbound)],
            [],
            [],
            False,
            False,
            id="binding-node-pv-different-zones-migration-off",
        ),
    ],
)
async def test_check_bindings_with_csi_migration(
    init_pvs: list[JSON],
    init_pvcs: list[JSON],
    node_info: NodeInfo,
    csi_nodes: list[JSON],
    bindings_raw: list[tuple[JSON, JSON]],
    provisioned: list[JSON],
    api_pvcs: list[JSON],
    should_fail: bool,
    want: bool,
) -> None:
    """checkBindings checks the translated node affinity of migrated in-tree PVs."""
    env = Env()
    env.nodes(node_info)
    env.init(init_pvs + init_pvcs + csi_nodes, [])
    bindings = [_binding(c, v) for c, v in bindings_raw]
    claims = [copy.deepcopy(p) for p in provisioned]
    for b in bindings:
        env.binder.pv_cache.assume(b.pv)
    for c in claims:
        env.binder.pvc_cache.assume(c)
    await _api_update(env, api_pvcs)
    try:
        bound = env.binder.check_bindings(pod_with([]), bindings, claims)
    except st.StorageError:
        assert should_fail
        return
    assert not should_fail
    assert bound == want


# ---------------------------------------------------------------------------------------------------------
# BindPodVolumes


def _fully_bind(env: Env, pvc: JSON, pv_name: str) -> None:
    """What the PV controller does to the claim: volumeName + bind-completed (through the API)."""
    ns, name = object_key(pvc)
    current = copy.deepcopy(env.api.objects[("PersistentVolumeClaim", ns, name)])
    current["spec"]["volumeName"] = pv_name
    current["metadata"].setdefault("annotations", {})[st.ANN_BIND_COMPLETED] = "yes"
    asyncio.get_running_loop().create_task(env.api.update_persistent_volume_claim(current))


def _delay_static(env: Env) -> None:
    _fully_bind(env, unbound_pvc, "pv-node1a")


def _delay_dynamic(env: Env) -> None:
    current = env.api.objects[("PersistentVolumeClaim", "testns", "provisioned-pvc")]
    dynamic = make_pv("dynamic-pv", "node1", "1G", "1", current, WAIT)
    env.api.add(dynamic)
    env.informer_put(dynamic)
    _fully_bind(env, provisioned_pvc, "dynamic-pv")


def _delay_pod_deleted(env: Env) -> None:
    env.handle.pod_alive = False


def _delay_delete_claim(env: Env) -> None:
    env.informer_delete(unbound_pvc)


def _delay_bind_elsewhere(env: Env) -> None:
    _fully_bind(env, selected_node_pvc, "pv-node2")


BIND: dict[str, tuple[Any, ...]] = {
    # name: (nodes, init PVs, init PVCs, binding, claim to provision, API PV, API PVC, delay, should fail)
    "nothing-to-bind-empty": ([node1], [], [], None, None, None, None, None, False),
    "already-bound": (
        [node1],
        [pv_node1a_bound],
        [bound_pvc_node1a],
        (unbound_pvc, pv_node1a_bound),
        None,
        None,
        None,
        None,
        False,
    ),
    "binding-static-pv-succeeds-after-time": (
        [node1],
        [pv_node1a],
        [unbound_pvc],
        (unbound_pvc, pv_node1a_bound),
        None,
        None,
        None,
        _delay_static,
        False,
    ),
    "binding-dynamic-pv-succeeds-after-time": (
        [node1],
        [],
        [provisioned_pvc],
        None,
        _selected(provisioned_pvc, "node1"),
        None,
        None,
        _delay_dynamic,
        False,
    ),
    "bound-by-pv-controller-before-bind": (
        [node1],
        [pv_node1a],
        [unbound_pvc],
        (unbound_pvc, pv_node1a_bound),
        None,
        pv_node1a_bound,
        bound_pvc_node1a,
        None,
        True,
    ),
    "pod-deleted-after-time": (
        [node1],
        [pv_node1a],
        [unbound_pvc],
        (unbound_pvc, pv_node1a_bound),
        None,
        None,
        None,
        _delay_pod_deleted,
        True,
    ),
    "binding-times-out": (
        [node1],
        [pv_node1a],
        [unbound_pvc],
        (unbound_pvc, pv_node1a_bound),
        None,
        None,
        None,
        None,
        True,
    ),
    "binding-fails": (
        [node1],
        [pv_node1b],
        [unbound_pvc2],
        (unbound_pvc2, pv_node1b_bound),
        None,
        None,
        None,
        None,
        True,
    ),
    "check-fails": (
        [node1],
        [pv_node1a],
        [unbound_pvc],
        (unbound_pvc, pv_node1a_bound),
        None,
        None,
        None,
        _delay_delete_claim,
        True,
    ),
    "node-affinity-fails": (
        [node1_no_labels],
        [pv_node1a_bound],
        [bound_pvc_node1a],
        (unbound_pvc, pv_node1a_bound),
        None,
        None,
        None,
        None,
        True,
    ),
    "node-affinity-fails-dynamic-provisioning": (
        [node1, node2],
        [pv_node1a, pv_node2],
        [selected_node_pvc],
        None,
        selected_node_pvc,
        None,
        None,
        _delay_bind_elsewhere,
        True,
    ),
}


@pytest.mark.parametrize("name", list(BIND))
async def test_bind_pod_volumes(name: str) -> None:
    """Write, then wait for the claims to be bound; fail on conflict, deletion, affinity mismatch or timeout."""
    nodes, init_pvs, init_pvcs, binding, claim, api_pv, api_pvc, delay, should_fail = BIND[name]
    env = Env()
    env.nodes(*nodes)
    env.init(init_pvs)
    env.init(init_pvcs)
    bindings = [_binding(*binding)] if binding is not None else []
    claims = [copy.deepcopy(claim)] if claim is not None else []
    for b in bindings:
        env.binder.pv_cache.assume(b.pv)
    for c in claims:
        env.binder.pvc_cache.assume(c)
    if api_pv is not None:
        await env.api.update_persistent_volume(api_pv)
    if api_pvc is not None:
        await env.api.update_persistent_volume_claim(api_pvc)
    if delay is not None:
        asyncio.get_running_loop().call_later(0.2, delay, env)
    volumes = PodVolumes(bindings, [DynamicProvision(c) for c in claims])
    try:
        await env.binder.bind_pod_volumes(pod_with([]), volumes)
    except (st.StorageError, WriteError):
        assert should_fail
    else:
        assert not should_fail


async def test_binding_timeout_message() -> None:
    """A claim nobody binds: `binding volumes: context deadline exceeded` after bindTimeoutSeconds."""
    env = Env()
    env.nodes(node1)
    env.init([pv_node1a, unbound_pvc])
    binding = _binding(unbound_pvc, pv_node1a_bound)
    env.binder.pv_cache.assume(binding.pv)
    env.binder.bind_timeout = 0.2
    with pytest.raises(st.StorageError, match=r"^binding volumes: context deadline exceeded$"):
        await env.binder.bind_pod_volumes(pod_with([]), PodVolumes([binding], []))


@pytest.mark.parametrize("settles", [True, False], ids=["settles-synchronously", "polls"])
async def test_a_writer_that_settles_synchronously_is_checked_once(settles: bool) -> None:
    """The in-memory cluster's controllers act inside each write (simulate): PreBind checks once and fails at
    once with the timeout's message instead of polling for bindTimeoutSeconds; a claim bound by the writes
    succeeds either way. Any other writer is polled until the timeout."""
    env = Env()
    env.nodes(node1)
    env.init([pv_node1a, unbound_pvc])
    binding = _binding(unbound_pvc, pv_node1a_bound)
    env.binder.pv_cache.assume(binding.pv)
    env.binder.bind_timeout = 3600.0 if settles else 0.2
    env.api.settles_synchronously = settles  # type: ignore[attr-defined]
    with pytest.raises(st.StorageError, match=r"^binding volumes: context deadline exceeded$"):
        await asyncio.wait_for(env.binder.bind_pod_volumes(pod_with([]), PodVolumes([binding], [])), 30)
    assert [w["metadata"]["name"] for w in env.api.writes] == ["pv-node1a"], "the PV write happens first"


async def test_provisioning_failure_message() -> None:
    """A provisioner that drops selected-node: `binding volumes: provisioning failed for PVC "<name>"`."""
    env = Env()
    env.nodes(node1)
    env.init([provisioned_pvc])
    claim = _selected(provisioned_pvc, "node1")
    env.binder.pvc_cache.assume(claim)
    volumes = PodVolumes([], [DynamicProvision(claim)])

    def drop() -> None:
        current = copy.deepcopy(env.api.objects[("PersistentVolumeClaim", "testns", "provisioned-pvc")])
        current["metadata"]["annotations"] = {"other": "x"}
        asyncio.get_running_loop().create_task(env.api.update_persistent_volume_claim(current))

    asyncio.get_running_loop().call_later(0.1, drop)
    with pytest.raises(st.StorageError, match=r'^binding volumes: provisioning failed for PVC "provisioned-pvc"$'):
        await env.binder.bind_pod_volumes(pod_with([]), volumes)


# ---------------------------------------------------------------------------------------------------------
# TestCapacity

network_attached = make_capacity("net", WAIT_PROV, None, "1Gi", "")
node1_capacity = make_capacity("net", WAIT_PROV, node1, "1Gi", "")
node2_capacity = make_capacity("net", WAIT_PROV, node2, "1Gi", "")

CAPACITY: dict[str, tuple[list[JSON], JSON | None, list[str]]] = {
    # name: (capacities, capacity expected on the provision, reasons)
    "network-attached": ([network_attached], network_attached, []),
    "local-storage": ([node1_capacity], node1_capacity, []),
    "multiple": ([network_attached, node2_capacity, node1_capacity], node1_capacity, []),  # same name: the last wins
    "no-storage": ([], None, [ERR_REASON_NOT_ENOUGH_SPACE]),
    "wrong-node": ([make_capacity("net", WAIT_PROV, node2, "1Gi", "")], None, [ERR_REASON_NOT_ENOUGH_SPACE]),
    "wrong-storage-class": ([make_capacity("net", WAIT, node1, "1Gi", "")], None, [ERR_REASON_NOT_ENOUGH_SPACE]),
    "insufficient-storage": ([make_capacity("net", WAIT_PROV, node1, "1Mi", "")], None, [ERR_REASON_NOT_ENOUGH_SPACE]),
    "insufficient-volume-size": (
        [make_capacity("net", WAIT_PROV, node1, "1Gi", "1Mi")],
        None,
        [ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "zero-storage": ([make_capacity("net", WAIT_PROV, node1, "0Mi", "")], None, [ERR_REASON_NOT_ENOUGH_SPACE]),
    "zero-volume-size": ([make_capacity("net", WAIT_PROV, node1, "", "0Mi")], None, [ERR_REASON_NOT_ENOUGH_SPACE]),
    "nil-storage": ([make_capacity("net", WAIT_PROV, node1, "", "")], None, [ERR_REASON_NOT_ENOUGH_SPACE]),
}


@pytest.mark.parametrize(
    "opt_in",
    [
        pytest.param(True, id="CSIDriver.StorageCapacity=true"),
        pytest.param(False, id="CSIDriver.StorageCapacity=false"),
    ],
)
@pytest.mark.parametrize("name", list(CAPACITY))
def test_capacity(name: str, opt_in: bool) -> None:
    """A capacity-tracking driver needs a CSIStorageCapacity of the class, reachable from the node, whose
    maximumVolumeSize (else capacity) holds the request; a driver that does not track capacity needs none."""
    capacities, want_capacity, reasons = CAPACITY[name]
    env = Env()
    env.informer_put(csi_driver(PROVISIONER, opt_in))
    for c in capacities:
        env.informer_put(c)
    env.init([provisioned_pvc])
    volumes, got = find(env, pod_with([provisioned_pvc]), node1)
    if not opt_in:
        assert got == []
        assert [p.node_capacity for p in volumes.dynamic_provisions] == [None]
        return
    assert got == reasons
    if not reasons:
        assert [p.node_capacity for p in volumes.dynamic_provisions] == [want_capacity]
