"""VolumeZone, ported from upstream volume_zone_test.go (v1.37): TestSingleZone, TestMultiZone, TestWithBinding.

As upstream's tests do, Filter also runs after a failed PreFilter (it then recomputes the topologies)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import SKIP, Code, Status
from scheduler.framework.types import NodeInfo, NodeRecord
from scheduler.plugins.volume_zone import ERR_REASON_CONFLICT, VolumeZone, label_zones_to_set
from scheduler.testing import StaticHandle, make_pod

JSON = dict[str, Any]

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,))


def pv(name: str, **labels: str) -> JSON:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels}, "spec": {}}


def lpv(name: str, labels: dict[str, str]) -> JSON:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels}, "spec": {}}


def pvc(name: str, volume: str = "", storage_class: str | None = None) -> JSON:
    spec: JSON = {}
    if volume:
        spec["volumeName"] = volume
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def node(**labels: str) -> NodeInfo:
    return NodeInfo("host1", NodeRecord("host1", labels=dict(labels)))


def lnode(labels: dict[str, str]) -> NodeInfo:
    return NodeInfo("host1", NodeRecord("host1", labels=dict(labels)))


SINGLE_PVS = [
    lpv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    lpv("Vol_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}),
    lpv("Vol_3", {BETA_REGION: "us-west1"}),
    lpv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    lpv("Vol_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}),
    lpv("Vol_Stable_3", {ZONE: "us-west1-a", REGION: "us-west1-a"}),
]
SINGLE_PVCS = [
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_2", "Vol_2"),
    pvc("PVC_3", "Vol_3"),
    pvc("PVC_4", "Vol_not_exist"),
    pvc("PVC_Stable_1", "Vol_Stable_1"),
    pvc("PVC_Stable_2", "Vol_Stable_2"),
    pvc("PVC_Stable_3", "Vol_Stable_3"),
]


def run(objects: list[JSON], claim: str | None, n: NodeInfo) -> tuple[Status | None, Status | None]:
    plugin = VolumeZone(StaticHandle(objects=objects))
    p = make_pod("pod_1")
    if claim is not None:
        p.pvc(claim)
    info = p.info()
    state = CycleState()
    _, pre = plugin.pre_filter(state, info, [])
    got = plugin.filter(state, info, n)

    def plain(s: Status | None) -> Status | None:
        return None if s is None else Status(s.code, s.reasons)

    return plain(pre), plain(got)


@pytest.mark.parametrize(
    ("claim", "n", "want_pre", "want_filter"),
    [
        pytest.param(None, lnode({BETA_ZONE: "us-west1-a"}), SKIP, None, id="pod without volume"),
        pytest.param("PVC_1", node(), None, None, id="node without labels"),
        pytest.param(
            "PVC_1", lnode({BETA_ZONE: "us-west1-a", "uselessLabel": "none"}), None, None, id="beta zone label matched"
        ),
        pytest.param(
            "PVC_2",
            lnode({BETA_REGION: "us-west1", "uselessLabel": "none"}),
            None,
            None,
            id="beta region label matched",
        ),
        pytest.param(
            "PVC_2",
            lnode({BETA_REGION: "no_us-west1", "uselessLabel": "none"}),
            None,
            CONFLICT,
            id="beta region label doesn't match",
        ),
        pytest.param(
            "PVC_1",
            lnode({BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"}),
            None,
            CONFLICT,
            id="beta zone label doesn't match",
        ),
        pytest.param(
            "PVC_Stable_1", lnode({ZONE: "us-west1-a", "uselessLabel": "none"}), None, None, id="zone label matched"
        ),
        pytest.param(
            "PVC_Stable_2", lnode({REGION: "us-west1", "uselessLabel": "none"}), None, None, id="region label matched"
        ),
        pytest.param(
            "PVC_Stable_2",
            lnode({REGION: "no_us-west1", "uselessLabel": "none"}),
            None,
            CONFLICT,
            id="region label doesn't match",
        ),
        pytest.param(
            "PVC_Stable_1",
            lnode({ZONE: "no_us-west1-a", "uselessLabel": "none"}),
            None,
            CONFLICT,
            id="zone label doesn't match",
        ),
        pytest.param(
            "PVC_Stable_3",
            lnode({ZONE: "us-west1-a"}),
            None,
            CONFLICT,
            id="pv with zone and region, node with only zone",
        ),
        pytest.param(
            "PVC_Stable_1", lnode({BETA_ZONE: "us-west1-a"}), None, CONFLICT, id="pv with zone,node with beta zone"
        ),
        pytest.param(
            "PVC_1", lnode({ZONE: "us-west1-a"}), None, None, id="pv with beta label,node with ga label, matched"
        ),
        pytest.param(
            "PVC_1",
            lnode({ZONE: "us-west1-b"}),
            None,
            CONFLICT,
            id="pv with beta label,node with ga label, don't match",
        ),
    ],
)
def test_single_zone(claim: str | None, n: NodeInfo, want_pre: Status | None, want_filter: Status | None) -> None:
    """TestSingleZone: the PV's zone/region label against the node's (beta PV key falls back to GA node key)."""
    assert run(SINGLE_PVS + SINGLE_PVCS, claim, n) == (want_pre, want_filter)


MULTI_PVS = [
    lpv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    lpv("Vol_2", {BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    lpv("Vol_3", {BETA_ZONE: "us-west1-c__us-west1-a"}),
    lpv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    lpv("Vol_Stable_2", {ZONE: "us-west1-c__us-west1-a"}),
]
MULTI_PVCS = [
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_2", "Vol_2"),
    pvc("PVC_3", "Vol_3"),
    pvc("PVC_4", "Vol_not_exist"),
    pvc("PVC_Stable_1", "Vol_Stable_1"),
    pvc("PVC_Stable_2", "Vol_Stable_2"),
]


@pytest.mark.parametrize(
    ("claim", "n", "want_filter"),
    [
        pytest.param("PVC_3", node(), None, id="node without labels"),
        pytest.param(
            "PVC_3", lnode({BETA_ZONE: "us-west1-a", "uselessLabel": "none"}), None, id="beta zone label matched"
        ),
        pytest.param(
            "PVC_1",
            lnode({BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
            CONFLICT,
            id="beta zone label doesn't match",
        ),
        pytest.param(
            "PVC_Stable_2", lnode({ZONE: "us-west1-a", "uselessLabel": "none"}), None, id="zone label matched"
        ),
        pytest.param(
            "PVC_Stable_1", lnode({ZONE: "us-west1-b", "uselessLabel": "none"}), CONFLICT, id="zone label doesn't match"
        ),
    ],
)
def test_multi_zone(claim: str, n: NodeInfo, want_filter: Status | None) -> None:
    """TestMultiZone: a `__`-separated label value allows each of its zones."""
    assert run(MULTI_PVS + MULTI_PVCS, claim, n) == (None, want_filter)


def _class(name: str, mode: str | None) -> JSON:
    obj: JSON = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name}}
    if mode is not None:
        obj["volumeBindingMode"] = mode
    return obj


BINDING_OBJECTS = [
    _class("Class_Immediate", None),
    _class("Class_Wait", "WaitForFirstConsumer"),
    lpv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_NoSC", storage_class="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", storage_class="Class_Wait"),
    pvc("PVC_ImmediateSC", storage_class="Class_Immediate"),
]


def _unresolvable(msg: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,))


@pytest.mark.parametrize(
    ("claim", "want_pre", "want_filter"),
    [
        pytest.param("PVC_1", None, None, id="label zone failure domain matched"),
        pytest.param(
            "PVC_EmptySC",
            _unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
            _unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
            id="unbound volume empty storage class",
        ),
        # Upstream's test lister says "storageclasses..."; the real client-go lister (what kube-scheduler runs
        # with) names the resource "storageclass.storage.k8s.io".
        pytest.param(
            "PVC_NoSC",
            _unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
            _unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
            id="unbound volume no storage class",
        ),
        pytest.param(
            "PVC_ImmediateSC",
            _unresolvable('VolumeBindingMode not set for StorageClass "Class_Immediate"'),
            _unresolvable('VolumeBindingMode not set for StorageClass "Class_Immediate"'),
            id="unbound volume immediate binding mode",
        ),
        pytest.param("PVC_WaitSC", SKIP, None, id="unbound volume wait binding mode"),
    ],
)
def test_with_binding(claim: str, want_pre: Status | None, want_filter: Status | None) -> None:
    """TestWithBinding: unbound claims of a WaitForFirstConsumer class are skipped; others are errors."""
    n = lnode({BETA_ZONE: "us-west1-a", "uselessLabel": "none"})
    pre, got = run(BINDING_OBJECTS, claim, n)
    assert (pre, got) == ((None if want_pre is None else Status(want_pre.code, want_pre.reasons)), want_filter)


def test_missing_claim_and_pv_texts() -> None:
    """A missing claim or PV is UnschedulableAndUnresolvable with the lister's not-found text."""
    n = lnode({ZONE: "a"})
    assert run([], "nope", n)[0] == _unresolvable('persistentvolumeclaim "nope" not found')
    assert run(SINGLE_PVCS, "PVC_4", n)[0] == _unresolvable('persistentvolume "Vol_not_exist" not found')


def test_immediate_unbound_claim_has_no_pv_name() -> None:
    """An unbound claim of an Immediate class: `PersistentVolume had no name`."""
    objects = [_class("imm", "Immediate"), pvc("c", storage_class="imm")]
    assert run(objects, "c", lnode({ZONE: "a"}))[0] == _unresolvable("PersistentVolume had no name")


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("a", frozenset({"a"}), id="one"),
        pytest.param("a__b", frozenset({"a", "b"}), id="two"),
        pytest.param(" a __ b ", frozenset({"a", "b"}), id="trimmed"),
        pytest.param("a____b", None, id="empty-entry-ignored"),
    ],
)
def test_label_zones_to_set(value: str, want: frozenset[str] | None) -> None:
    """LabelZonesToSet: `__`-separated, trimmed; an empty entry makes the label unusable (ignored)."""
    assert label_zones_to_set(value) == want
