"""VolumeBinding, ported from upstream volumebinding/volume_binding_test.go TestVolumeBinding (v1.37), plus
VolumeBindingArgs parsing. StorageCapacityScoring is beta and on in v1.37, so the table runs with it on: the
cases upstream runs with the gate off (its test default) expect PreScore Skip there and score 0 here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.config.errors import ConfigError
from scheduler.config.plugin_args import UtilizationShapePoint
from scheduler.framework.interface import CycleState
from scheduler.framework.status import SKIP, Code, Status
from scheduler.framework.types import NodeInfo, NodeRecord
from scheduler.plugins.volume_binding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_PV_NOT_EXIST,
)
from scheduler.plugins.volume_binding.plugin import (
    DEFAULT_SHAPE,
    ERR_REASON_UNBOUND_IMMEDIATE,
    STATE_KEY,
    Args,
    VolumeBinding,
    parse_args,
)
from scheduler.testing import StaticHandle, make_pod

JSON = dict[str, Any]

HOSTNAME = "kubernetes.io/hostname"
REGION = "topology.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
NODE_KEY = "nodeKey"


def storage_class(name: str, mode: str, provisioner: str = "") -> JSON:
    obj: JSON = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "volumeBindingMode": mode,
    }
    if provisioner:
        obj["provisioner"] = provisioner
    return obj


IMMEDIATE_SC = storage_class("immediate-sc", "Immediate")
WAIT_SC = storage_class("wait-sc", "WaitForFirstConsumer")
WAIT_HDD_SC = storage_class("wait-hdd-sc", "WaitForFirstConsumer")
WAIT_SC_CAPACITY = storage_class(
    "wait-sc-with-storage-capacity", "WaitForFirstConsumer", "driver-with-storage-capacity"
)
DRIVER_WITH_CAPACITY: JSON = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "CSIDriver",
    "metadata": {"name": "driver-with-storage-capacity"},
    "spec": {"storageCapacity": True},
}
BASE_OBJECTS = [IMMEDIATE_SC, WAIT_SC, WAIT_HDD_SC, WAIT_SC_CAPACITY, DRIVER_WITH_CAPACITY]


def pv(
    name: str, cls: str, *, phase: str = "", capacity: str = "", affinity: dict[str, list[str]] | None = None
) -> JSON:
    spec: JSON = {"storageClassName": cls}
    if capacity:
        spec["capacity"] = {"storage": capacity}
    if affinity is not None:
        exprs = [{"key": k, "operator": "In", "values": v} for k, v in affinity.items()]
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}
    obj: JSON = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def pvc(name: str, cls: str, *, bound_pv: str = "", request: str = "", phase: str = "") -> JSON:
    spec: JSON = {"storageClassName": cls}
    meta: JSON = {"name": name, "namespace": "default"}
    if bound_pv:
        spec["volumeName"] = bound_pv
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "true"}
    if request:
        spec["resources"] = {"requests": {"storage": request}}
    obj: JSON = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def capacity(node: str, cls: str, amount: str) -> JSON:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": node, "namespace": "default"},
        "storageClassName": cls,
        "nodeTopology": {"matchLabels": {NODE_KEY: node}},
        "capacity": amount,
    }


def node(name: str, **labels: str) -> NodeInfo:
    return NodeInfo(name, NodeRecord(name, labels={HOSTNAME: name, **labels}))


def zonal(name: str, zone: str, region: str) -> NodeInfo:
    return NodeInfo(name, NodeRecord(name, labels={HOSTNAME: name, REGION: region, ZONE: zone}))


def keyed(name: str) -> NodeInfo:
    return NodeInfo(name, NodeRecord(name, labels={HOSTNAME: name, NODE_KEY: name}))


NOT_FOUND = "node(s) didn't find available persistent volumes to bind"


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


@dataclass
class Case:
    claims: list[str]
    nodes: list[NodeInfo]
    objects: list[JSON] = field(default_factory=list)
    want_pre: Status | None = None
    # (bound, delayed, immediate claim names, {class: PV names}) after PreFilter
    want_state: tuple[list[str], list[str], list[str], dict[str, list[str]]] | None = None
    want_filter: list[Status | None] = field(default_factory=list)
    want_scores: list[int] = field(default_factory=list)
    shape: tuple[UtilizationShapePoint, ...] = DEFAULT_SHAPE


ZONE_PVS = [
    pv("pv-a-0", "wait-sc", phase="Available", capacity="200Gi", affinity={REGION: ["region-a"], ZONE: ["zone-a"]}),
    pv("pv-a-1", "wait-sc", phase="Available", capacity="200Gi", affinity={REGION: ["region-a"], ZONE: ["zone-a"]}),
    pv("pv-b-0", "wait-sc", phase="Available", capacity="100Gi", affinity={REGION: ["region-b"], ZONE: ["zone-b"]}),
    pv("pv-b-1", "wait-sc", phase="Available", capacity="100Gi", affinity={REGION: ["region-b"], ZONE: ["zone-b"]}),
]
ZONE_NODES = [
    zonal("zone-a-node-a", "zone-a", "region-a"),
    zonal("zone-a-node-b", "zone-a", "region-a"),
    zonal("zone-b-node-a", "zone-b", "region-b"),
    zonal("zone-b-node-b", "zone-b", "region-b"),
    zonal("zone-c-node-a", "zone-c", "region-c"),
    zonal("zone-c-node-b", "zone-c", "region-c"),
]
THREE_KEYED = [keyed("node-a"), keyed("node-b"), keyed("node-c")]
CAPACITIES_100_50_10 = [
    capacity("node-a", "wait-sc-with-storage-capacity", "100Gi"),
    capacity("node-b", "wait-sc-with-storage-capacity", "50Gi"),
    capacity("node-c", "wait-sc-with-storage-capacity", "10Gi"),
]
CAPACITIES_100_20_10 = [
    capacity("node-a", "wait-sc-with-storage-capacity", "100Gi"),
    capacity("node-b", "wait-sc-with-storage-capacity", "20Gi"),
    capacity("node-c", "wait-sc-with-storage-capacity", "10Gi"),
]

CASES = {
    "pod has not pvcs": Case([], [node("node-a")], want_pre=SKIP),
    "all bound": Case(
        ["pvc-a"],
        [node("node-a")],
        [pvc("pvc-a", "wait-sc", bound_pv="pv-a"), pv("pv-a", "wait-sc", phase="Available")],
        want_state=(["pvc-a"], [], [], {}),
        want_filter=[None],
        want_scores=[0],
    ),
    "PVC does not exist": Case(
        ["pvc-a"], [node("node-a")], want_pre=unresolvable('persistentvolumeclaim "pvc-a" not found')
    ),
    "Part of PVCs do not exist": Case(
        ["pvc-a", "pvc-b"],
        [node("node-a")],
        [pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
        want_pre=unresolvable('persistentvolumeclaim "pvc-b" not found'),
    ),
    "immediate claims not bound": Case(
        ["pvc-a"], [node("node-a")], [pvc("pvc-a", "immediate-sc")], want_pre=unresolvable(ERR_REASON_UNBOUND_IMMEDIATE)
    ),
    "unbound claims no matches": Case(
        ["pvc-a"],
        [node("node-a")],
        [pvc("pvc-a", "wait-sc")],
        want_state=([], ["pvc-a"], [], {"wait-sc": []}),
        want_filter=[unresolvable(ERR_REASON_BIND_CONFLICT)],
        want_scores=[0],
    ),
    "bound and unbound unsatisfied": Case(
        ["pvc-a", "pvc-b"],
        [node("node-a", foo="barbar")],
        [
            pvc("pvc-a", "wait-sc", bound_pv="pv-a"),
            pvc("pvc-b", "wait-sc"),
            pv("pv-a", "wait-sc", phase="Available", affinity={"foo": ["bar"]}),
        ],
        want_state=(["pvc-a"], ["pvc-b"], [], {"wait-sc": ["pv-a"]}),
        want_filter=[unresolvable(ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT)],
        want_scores=[0],
    ),
    "pv not found": Case(
        ["pvc-a"],
        [node("node-a")],
        [pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
        want_state=(["pvc-a"], [], [], {}),
        want_filter=[unresolvable(ERR_REASON_PV_NOT_EXIST)],
        want_scores=[0],
    ),
    "pv not found claim lost": Case(
        ["pvc-a"],
        [node("node-a")],
        [pvc("pvc-a", "wait-sc", bound_pv="pv-a", phase="Lost")],
        want_pre=unresolvable('persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'),
    ),
    "local volumes with close capacity are preferred": Case(
        ["pvc-a"],
        [node("node-a"), node("node-b"), node("node-c")],
        [
            pvc("pvc-a", "wait-sc", request="50Gi"),
            pv("pv-a-0", "wait-sc", phase="Available", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-a-1", "wait-sc", phase="Available", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-b-0", "wait-sc", phase="Available", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
            pv("pv-b-1", "wait-sc", phase="Available", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
        ],
        want_state=([], ["pvc-a"], [], {"wait-sc": ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        want_filter=[None, None, unresolvable(NOT_FOUND)],
        want_scores=[75, 50, 0],
    ),
    "local volumes with close capacity are preferred (multiple pvcs)": Case(
        ["pvc-0", "pvc-1"],
        [node("node-a"), node("node-b"), node("node-c")],
        [
            pvc("pvc-0", "wait-sc", request="50Gi"),
            pvc("pvc-1", "wait-hdd-sc", request="100Gi"),
            pv("pv-a-0", "wait-sc", phase="Available", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-a-1", "wait-sc", phase="Available", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-a-2", "wait-hdd-sc", phase="Available", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-a-3", "wait-hdd-sc", phase="Available", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-b-0", "wait-sc", phase="Available", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
            pv("pv-b-1", "wait-sc", phase="Available", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
            pv("pv-b-2", "wait-hdd-sc", phase="Available", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
            pv("pv-b-3", "wait-hdd-sc", phase="Available", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
        ],
        want_state=(
            [],
            ["pvc-0", "pvc-1"],
            [],
            {
                "wait-hdd-sc": ["pv-a-2", "pv-a-3", "pv-b-2", "pv-b-3"],
                "wait-sc": ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"],
            },
        ),
        want_filter=[None, None, unresolvable(NOT_FOUND)],
        want_scores=[63, 25, 0],
    ),
    "zonal volumes with close capacity are preferred": Case(
        ["pvc-a"],
        ZONE_NODES,
        [pvc("pvc-a", "wait-sc", request="50Gi"), *ZONE_PVS],
        want_state=([], ["pvc-a"], [], {"wait-sc": ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        want_filter=[None, None, None, None, unresolvable(NOT_FOUND), unresolvable(NOT_FOUND)],
        want_scores=[75, 75, 50, 50, 0, 0],
    ),
    "zonal volumes with close capacity are preferred (custom shape)": Case(
        ["pvc-a"],
        ZONE_NODES,
        [pvc("pvc-a", "wait-sc", request="50Gi"), *ZONE_PVS],
        want_state=([], ["pvc-a"], [], {"wait-sc": ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
        want_filter=[None, None, None, None, unresolvable(NOT_FOUND), unresolvable(NOT_FOUND)],
        want_scores=[15, 15, 30, 30, 0, 0],
        shape=(UtilizationShapePoint(0, 0), UtilizationShapePoint(50, 3), UtilizationShapePoint(100, 5)),
    ),
    "storage capacity score": Case(
        ["pvc-dynamic"],
        THREE_KEYED,
        [pvc("pvc-dynamic", "wait-sc-with-storage-capacity", request="10Gi"), *CAPACITIES_100_50_10],
        want_state=([], ["pvc-dynamic"], [], {"wait-sc-with-storage-capacity": []}),
        want_filter=[None, None, None],
        want_scores=[90, 80, 0],
    ),
    "storage capacity score with static binds": Case(
        ["pvc-dynamic", "pvc-static"],
        THREE_KEYED,
        [
            pvc("pvc-dynamic", "wait-sc-with-storage-capacity", request="10Gi"),
            pvc("pvc-static", "wait-sc", request="50Gi"),
            pv("pv-static-a", "wait-sc", phase="Available", capacity="100Gi", affinity={HOSTNAME: ["node-a"]}),
            pv("pv-static-b", "wait-sc", phase="Available", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
            pv("pv-static-c", "wait-sc", phase="Available", capacity="100Gi", affinity={HOSTNAME: ["node-c"]}),
            *CAPACITIES_100_50_10,
        ],
        want_state=(
            [],
            ["pvc-dynamic", "pvc-static"],
            [],
            {"wait-sc": ["pv-static-a", "pv-static-b", "pv-static-c"], "wait-sc-with-storage-capacity": []},
        ),
        want_filter=[None, None, None],
        want_scores=[50, 50, 50],
    ),
    "dynamic provisioning with multiple PVCs of the same StorageClass": Case(
        ["pvc-dynamic-0", "pvc-dynamic-1"],
        [keyed("node-a")],
        [
            pvc("pvc-dynamic-0", "wait-sc-with-storage-capacity", request="50Gi"),
            pvc("pvc-dynamic-1", "wait-sc-with-storage-capacity", request="50Gi"),
            capacity("node-a", "wait-sc-with-storage-capacity", "100Gi"),
        ],
        want_state=([], ["pvc-dynamic-0", "pvc-dynamic-1"], [], {"wait-sc-with-storage-capacity": []}),
        want_filter=[None],
        want_scores=[0],
    ),
    "prefer node with least allocatable": Case(
        ["pvc-dynamic"],
        THREE_KEYED,
        [pvc("pvc-dynamic", "wait-sc-with-storage-capacity", request="10Gi"), *CAPACITIES_100_20_10],
        want_state=([], ["pvc-dynamic"], [], {"wait-sc-with-storage-capacity": []}),
        want_filter=[None, None, None],
        want_scores=[10, 50, 100],
        shape=(UtilizationShapePoint(0, 0), UtilizationShapePoint(100, 10)),
    ),
    "prefer node with maximum allocatable": Case(
        ["pvc-dynamic"],
        THREE_KEYED,
        [pvc("pvc-dynamic", "wait-sc-with-storage-capacity", request="10Gi"), *CAPACITIES_100_20_10],
        want_state=([], ["pvc-dynamic"], [], {"wait-sc-with-storage-capacity": []}),
        want_filter=[None, None, None],
        want_scores=[90, 50, 0],
    ),
}


def _plain(s: Status | None) -> Status | None:
    return None if s is None else Status(s.code, s.reasons)


@pytest.mark.parametrize("case", [pytest.param(c, id=name) for name, c in CASES.items()])
def test_volume_binding(case: Case) -> None:
    """PreFilter status and claim split, Filter per node, PreScore and Score per node (TestVolumeBinding)."""
    plugin = VolumeBinding(Args(300, case.shape), StaticHandle(objects=BASE_OBJECTS + case.objects))
    builder = make_pod("pod-a")
    for claim in case.claims:
        builder.pvc(claim)
    pod = builder.info()
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, case.nodes)
    assert _plain(pre) == (None if case.want_pre is None else _plain(case.want_pre))
    if pre is not None:
        return
    claims = state[STATE_KEY].claims
    bound = [c["metadata"]["name"] for c in claims.bound_claims]
    delayed = [c["metadata"]["name"] for c in claims.unbound_claims_delay_binding]
    immediate = [c["metadata"]["name"] for c in claims.unbound_claims_immediate]
    pvs = {
        cls: sorted(p["metadata"]["name"] for p in vols) for cls, vols in claims.unbound_volumes_delay_binding.items()
    }
    assert (bound, delayed, immediate, pvs) == case.want_state
    assert [_plain(plugin.filter(state, pod, n)) for n in case.nodes] == case.want_filter
    assert plugin.pre_score(state, pod, case.nodes) is None  # StorageCapacityScoring: never skipped
    assert plugin.score_batch(state, pod, case.nodes) == case.want_scores
    assert [plugin.score(state, pod, n) for n in case.nodes] == case.want_scores


def test_pod_without_claims_scores_zero_and_reserves_nothing() -> None:
    """Skip at PreFilter still leaves a state: PreScore passes, every node scores 0, Reserve is all-bound."""
    plugin = VolumeBinding(Args(), StaticHandle(objects=BASE_OBJECTS))
    pod = make_pod("p").info()
    state = CycleState()
    assert plugin.pre_filter(state, pod, [])[1] == SKIP
    assert plugin.pre_score(state, pod, []) is None
    assert plugin.score_batch(state, pod, [node("a"), node("b")]) == [0, 0]
    assert plugin.reserve(state, pod, "a") is None
    assert state[STATE_KEY].all_bound


@pytest.mark.parametrize(
    ("objects", "volume", "want"),
    [
        pytest.param(
            [],
            {"ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
            'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"',
            id="ephemeral-claim-missing",
        ),
        pytest.param(
            [pvc("p-scratch", "wait-sc")],
            {"ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
            "PVC default/p-scratch was not created for pod default/p (pod is not owner)",
            id="ephemeral-claim-not-owned",
        ),
        pytest.param(
            [
                {
                    **pvc("c", "wait-sc"),
                    "metadata": {"name": "c", "namespace": "default", "deletionTimestamp": "2026-01-01T00:00:00Z"},
                }
            ],
            {"persistentVolumeClaim": {"claimName": "c"}},
            'persistentvolumeclaim "c" is being deleted',
            id="claim-being-deleted",
        ),
    ],
)
def test_pre_filter_claim_problems(objects: list[JSON], volume: JSON, want: str) -> None:
    """podHasPVCs: missing ephemeral claim, a claim the pod does not own, a claim being deleted."""
    plugin = VolumeBinding(Args(), StaticHandle(objects=BASE_OBJECTS + objects))
    pod = make_pod("p").uid("pod-uid").volume("scratch", **volume).info()
    assert _plain(plugin.pre_filter(CycleState(), pod, [])[1]) == unresolvable(want)


def test_owned_ephemeral_claim_is_used() -> None:
    """An ephemeral claim owned by the pod is an ordinary delayed claim."""
    claim = pvc("p-scratch", "wait-sc")
    claim["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-uid", "controller": True}
    ]
    plugin = VolumeBinding(Args(), StaticHandle(objects=[*BASE_OBJECTS, claim]))
    pod = make_pod("p").uid("pod-uid").volume("scratch", ephemeral={"volumeClaimTemplate": {"spec": {}}}).info()
    state = CycleState()
    assert plugin.pre_filter(state, pod, [])[1] is None
    assert [c["metadata"]["name"] for c in state[STATE_KEY].claims.unbound_claims_delay_binding] == ["p-scratch"]


def test_class_without_binding_mode_is_an_error() -> None:
    """IsDelayBindingMode: a class with no volumeBindingMode is an Error (not a rejection)."""
    cls = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "odd"}}
    plugin = VolumeBinding(Args(), StaticHandle(objects=[cls, pvc("c", "odd")]))
    status = plugin.pre_filter(CycleState(), make_pod("p").pvc("c").info(), [])[1]
    assert status is not None and status.code == Code.ERROR
    assert status.reasons == ('VolumeBindingMode not set for StorageClass "odd"',)


# ---------------------------------------------------------------------------------------------------------
# VolumeBindingArgs


def test_default_args() -> None:
    """bindTimeoutSeconds 600; the StorageCapacityScoring default shape {0:10, 100:0}."""
    assert parse_args(None) == Args(600, (UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0)))
    assert parse_args({"bindTimeoutSeconds": 0}) == Args(0, DEFAULT_SHAPE)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"bindTimeoutSeconds": -10},
            "bindTimeoutSeconds: Invalid value: -10: invalid BindTimeoutSeconds, should not be a negative value",
            id="negative-timeout",
        ),
        pytest.param({"bindTimeout": 10}, 'unknown field "bindTimeout"', id="unknown-field"),
        pytest.param({"bindTimeoutSeconds": "10"}, "bindTimeoutSeconds: must be an integer", id="string-timeout"),
        pytest.param(
            {"shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]},
            "shape[1].utilization: Invalid value: 10: values must be sorted in increasing order",
            id="shape-unsorted",
        ),
        pytest.param(
            {"shape": [{"utilization": 0, "score": 11}]},
            "shape[0].score: Invalid value: 11: not in valid range [0, 10]",
            id="shape-score-range",
        ),
        pytest.param(
            {"shape": [{"utilization": 0, "score": 1, "weight": 2}]},
            'shape[0]: unknown field "weight"',
            id="shape-unknown-field",
        ),
        pytest.param({"kind": "NodeAffinityArgs"}, "want args to be of type VolumeBindingArgs", id="wrong-kind"),
    ],
)
def test_invalid_args(raw: JSON, message: str) -> None:
    """Strict decoding and upstream's validation messages, naming the field."""
    with pytest.raises(ConfigError) as exc:
        parse_args(raw)
    assert message in str(exc.value)


def test_custom_shape_is_kept() -> None:
    """A given shape replaces the default."""
    args = parse_args(
        {"bindTimeoutSeconds": 30, "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}
    )
    assert args == Args(30, (UtilizationShapePoint(0, 0), UtilizationShapePoint(100, 10)))
