"""VolumeRestrictions, ported from upstream volume_restrictions_test.go (v1.37): disk conflicts per kind and
ReadWriteOncePod conflicts across the cluster, plus AddPod/RemovePod and the cluster-wide claim counts."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import SKIP, Code, Status
from scheduler.framework.types import NodeInfo
from scheduler.plugins.volume_restrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)
from scheduler.testing import PodBuilder, StaticHandle, make_node, make_pod

JSON = dict[str, Any]

GCE = {"gcePersistentDisk": {"pdName": "foo"}}
GCE2 = {"gcePersistentDisk": {"pdName": "bar"}}
AWS = {"awsElasticBlockStore": {"volumeID": "foo"}}
AWS2 = {"awsElasticBlockStore": {"volumeID": "bar"}}
RBD = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD2 = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
ISCSI = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "lun": 0}}
ISCSI2 = {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01", "lun": 0}}

DISK_CONFLICT = Status(Code.UNSCHEDULABLE, (ERR_REASON_DISK_CONFLICT,))
RWOP_CONFLICT = Status(Code.UNSCHEDULABLE, (ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,))


def pod(*sources: JSON, name: str = "p") -> PodBuilder:
    b = make_pod(name)
    for i, source in enumerate(sources):
        b.volume(f"v{i}", **source)
    return b


def node_with(*pods: PodBuilder, name: str = "node-1") -> NodeInfo:
    record = make_node(name).info()
    info = NodeInfo(name, record)
    for p in pods:
        info.add_pod(p.node(name).info())
    return info


def run(plugin: VolumeRestrictions, p: PodBuilder, node: NodeInfo) -> tuple[Status | None, Status | None]:
    state = CycleState()
    _, pre = plugin.pre_filter(state, p.info(), plugin.handle.snapshot().node_info_list)
    if pre is not None and pre.code != Code.SUCCESS:
        return pre, None
    st = plugin.filter(state, p.info(), node)
    return pre, (None if st is None else Status(st.code, st.reasons))


def disk_cases(same: JSON, other: JSON) -> list[Any]:
    """The four upstream cases of Test{GCE,AWS,RBD,ISCSI}DiskConflicts for one volume kind."""
    return [
        ((), (), SKIP, None, "nothing"),
        ((), (same,), SKIP, None, "one state"),
        ((same,), (same,), None, DISK_CONFLICT, "same state"),
        ((other,), (same,), None, None, "different state"),
    ]


KINDS: dict[str, tuple[JSON, JSON]] = {
    "gce": (GCE, GCE2),
    "aws": (AWS, AWS2),
    "rbd": (RBD, RBD2),
    "iscsi": (ISCSI, ISCSI2),
}
DISK_CASES = [
    pytest.param(kind, *case[:4], id=f"{kind}-{case[4]}") for kind, (a, b) in KINDS.items() for case in disk_cases(a, b)
]


@pytest.mark.parametrize(("kind", "pod_vols", "existing_vols", "want_pre", "want"), DISK_CASES)
def test_disk_conflicts(
    kind: str, pod_vols: tuple[JSON, ...], existing_vols: tuple[JSON, ...], want_pre: Status | None, want: Status | None
) -> None:
    """Same disk on the node: Unschedulable `node(s) had no available disk`; a pod without such disks skips."""
    plugin = VolumeRestrictions(StaticHandle())
    node = node_with(pod(*existing_vols, name="existing")) if existing_vols else node_with()
    pre, got = run(plugin, pod(*pod_vols), node)
    assert pre == want_pre
    assert got == want


def test_volume_without_restrictions_skips() -> None:
    """ "pod with a volume that doesn't have restrictions": PreFilter Skip."""
    plugin = VolumeRestrictions(StaticHandle())
    pre, _ = run(plugin, make_pod("p").volume("volume with no restriction"), node_with())
    assert pre == SKIP


@pytest.mark.parametrize(
    ("a", "b", "conflict"),
    [
        pytest.param({"pdName": "x", "readOnly": True}, {"pdName": "x", "readOnly": True}, False, id="gce-both-ro"),
        pytest.param({"pdName": "x", "readOnly": True}, {"pdName": "x"}, True, id="gce-one-rw"),
    ],
)
def test_gce_read_only_mounts_share(a: JSON, b: JSON, conflict: bool) -> None:
    """GCE PDs conflict unless both mounts are read-only (isVolumeConflict)."""
    plugin = VolumeRestrictions(StaticHandle())
    _, got = run(plugin, pod({"gcePersistentDisk": a}), node_with(pod({"gcePersistentDisk": b}, name="e")))
    assert got == (DISK_CONFLICT if conflict else None)


def test_aws_conflicts_even_read_only() -> None:
    """The same EBS volume always conflicts."""
    plugin = VolumeRestrictions(StaticHandle())
    ro = {"awsElasticBlockStore": {"volumeID": "v", "readOnly": True}}
    _, got = run(plugin, pod(ro), node_with(pod(ro, name="e")))
    assert got == DISK_CONFLICT


def _pvc(name: str, *modes: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"accessModes": list(modes)},
    }


RWOP1 = _pvc("claim-with-rwop-1", "ReadWriteOncePod")
RWOP2 = _pvc("claim-with-rwop-2", "ReadWriteOncePod")
RWX = _pvc("claim-with-rwx", "ReadWriteMany")


def pvc_pod(name: str, *claims: str) -> PodBuilder:
    b = make_pod(name)
    for c in claims:
        b.pvc(c)
    return b


@pytest.mark.parametrize(
    ("incoming", "existing", "pvcs", "want_pre", "want"),
    [
        pytest.param(make_pod("p"), [], [], SKIP, None, id="nothing"),
        pytest.param(
            pvc_pod("pod-with-one-pvc", "claim-with-rwop-1"),
            [],
            [],
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolumeclaim "claim-with-rwop-1" not found',)),
            None,
            id="failed to get PVC",
        ),
        pytest.param(
            pvc_pod("pod-with-one-pvc", "claim-with-rwop-1"),
            [pvc_pod("pod-with-rwx", "claim-with-rwx")],
            [RWOP1, RWX],
            SKIP,
            None,
            id="no access mode conflict",
        ),
        pytest.param(
            pvc_pod("pod-with-one-conflict", "claim-with-rwop-1"),
            [pvc_pod("pod-with-one-pvc", "claim-with-rwop-1"), pvc_pod("pod-with-rwx", "claim-with-rwx")],
            [RWOP1, RWX],
            None,
            RWOP_CONFLICT,
            id="access mode conflict, unschedulable",
        ),
        pytest.param(
            pvc_pod("pod-with-two-conflicts", "claim-with-rwop-1", "claim-with-rwop-2"),
            [
                pvc_pod("pod-with-two-pvcs", "claim-with-rwop-1", "claim-with-rwop-2"),
                pvc_pod("pod-with-rwx", "claim-with-rwx"),
            ],
            [RWOP1, RWOP2, RWX],
            None,
            RWOP_CONFLICT,
            id="two conflicts, unschedulable",
        ),
    ],
)
def test_access_mode_conflicts(
    incoming: PodBuilder, existing: list[PodBuilder], pvcs: list[JSON], want_pre: Status | None, want: Status | None
) -> None:
    """A ReadWriteOncePod claim in use by a scheduled pod rejects the pod everywhere (Unschedulable)."""
    node = node_with(*existing)
    plugin = VolumeRestrictions(StaticHandle(Snapshot.from_node_infos([node]), pvcs))
    pre, got = run(plugin, incoming, node)
    assert pre == (None if want_pre is None else Status(want_pre.code, want_pre.reasons))
    assert got == want


def test_conflict_seen_from_another_node_and_preemption_removal() -> None:
    """The claim is used on another node: every node is rejected; RemovePod of the holder clears it, AddPod
    restores it (what preemption simulates)."""
    holder = pvc_pod("holder", "claim-with-rwop-1")
    other = node_with(holder, name="node-2")
    empty = node_with(name="node-1")
    plugin = VolumeRestrictions(StaticHandle(Snapshot.from_node_infos([empty, other]), [RWOP1]))
    incoming = pvc_pod("p", "claim-with-rwop-1").info()
    state = CycleState()
    _, pre = plugin.pre_filter(state, incoming, plugin.handle.snapshot().node_info_list)
    assert pre is None
    assert plugin.filter(state, incoming, empty) is not None
    holder_info = other.pods[next(iter(other.pods))]
    assert plugin.remove_pod(state, incoming, holder_info, other) is None
    assert plugin.filter(state, incoming, empty) is None
    assert plugin.add_pod(state, incoming, holder_info, other) is None
    st = plugin.filter(state, incoming, empty)
    assert st is not None and st.reasons == (ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,)


def test_ephemeral_claims_are_not_counted_as_used() -> None:
    """Only persistentVolumeClaim volumes count (PodPVCKeys): a pod's generic ephemeral claim is not."""
    holder = make_pod("holder").volume("claim", ephemeral={"volumeClaimTemplate": {"spec": {}}})
    node = node_with(holder)
    assert node.pvc_ref_counts == {}
    assert Snapshot.from_node_infos([node]).used_pvc_counts == {}


def test_claims_in_use_are_counted_on_the_nodes_given_when_not_the_snapshot() -> None:
    """An explanation evaluates its own node list: the claim counts come from those nodes, not the scheduler's
    (possibly older) snapshot."""
    holder = pvc_pod("holder", "claim-with-rwop-1")
    plugin = VolumeRestrictions(StaticHandle(Snapshot(), [RWOP1]))  # the scheduler's snapshot has no pods
    incoming = pvc_pod("p", "claim-with-rwop-1").info()
    nodes = [node_with(holder, name="n1"), node_with(name="n2")]
    state = CycleState()
    assert plugin.pre_filter(state, incoming, nodes)[1] is None
    assert plugin.filter(state, incoming, nodes[1]) is not None
    assert plugin.pre_filter(CycleState(), incoming, [node_with(name="n3")])[1] == SKIP
