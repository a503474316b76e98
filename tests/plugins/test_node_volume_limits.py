"""NodeVolumeLimits, ported from upstream nodevolumelimits/csi_test.go (v1.37): TestCSILimits (every case,
same ids) and TestVolumeLimitScalingGate (the gate is on in v1.37, so the gate-off case is not ported).

Fixtures mirror upstream's fake listers: for each driver, PVs/PVCs `<filter>-<driver>-<0..3>` bound to CSI
(or in-tree AWS EBS / hostPath) PVs, plus `<filter>-4` (unbound, class csi-sc), `<filter>-5` (no class) and
`<filter>-6` (class csi-sc, bound to a missing PV). The real client-go lister's not-found text names the
resource `persistentvolumeclaim` (upstream's fake lister says `persistentvolumeclaims`)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import SKIP, Code, Status
from scheduler.framework.types import NodeInfo, NodeRecord
from scheduler.plugins.node_volume_limits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits
from scheduler.testing import PodBuilder, StaticHandle, make_pod

JSON = dict[str, Any]

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
EBS_IN_TREE = "kubernetes.io/aws-ebs"
HOSTPATH_IN_TREE = "kubernetes.io/hostpath"
SC = "csi-sc"
NODE = "node-for-max-pd-test-1"
EXCEEDED = Status(Code.UNSCHEDULABLE, (ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,))


def pv_objects(volume_name: str, drivers: list[str]) -> list[JSON]:
    out = []
    for driver in drivers:
        for j in range(4):
            handle = f"{volume_name}-{driver}-{j}"
            if driver == EBS_IN_TREE:
                source: JSON = {"awsElasticBlockStore": {"volumeID": handle}}
            elif driver == HOSTPATH_IN_TREE:
                source = {"hostPath": {"path": "/tmp"}}
            else:
                source = {"csi": {"driver": driver, "volumeHandle": handle}}
            out.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": handle}, "spec": source})
    return out


def _claim(name: str, spec: JSON, namespace: str = "default", owner: JSON | None = None) -> JSON:
    meta: JSON = {"name": name, "namespace": namespace}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def pvc_objects(volume_name: str, drivers: list[str]) -> list[JSON]:
    out = [
        _claim(f"{volume_name}-{driver}-{j}", {"volumeName": f"{volume_name}-{driver}-{j}"})
        for driver in drivers
        for j in range(4)
    ]
    out.append(_claim(f"{volume_name}-4", {"storageClassName": SC}))
    out.append(_claim(f"{volume_name}-5", {}))
    out.append(_claim(f"{volume_name}-6", {"storageClassName": SC, "volumeName": "missing-in-action"}))
    return out


def storage_class(provisioner: str) -> JSON:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": SC},
        "provisioner": provisioner,
    }


def csi_node(limit_source: str, limit: int, drivers: list[str]) -> JSON | None:
    if limit_source not in ("csinode", "csinode-with-no-limit", "no-csi-driver"):
        return None
    entries: list[JSON] = []
    if limit_source != "no-csi-driver":
        for driver in drivers:
            entry: JSON = {"name": driver, "nodeID": NODE}
            if limit_source == "csinode":
                entry["allocatable"] = {"count": limit}
            entries.append(entry)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        # enableMigrationOnNode: the AWS EBS plugin is migrated on every CSINode of the table
        "metadata": {"name": NODE, "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": EBS_IN_TREE}},
        "spec": {"drivers": entries},
    }


def attachments(count: int, drivers: list[str]) -> list[JSON]:
    return [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "VolumeAttachment",
            "metadata": {"name": f"va-{driver}-{j}"},
            "spec": {"nodeName": NODE, "attacher": driver, "source": {"persistentVolumeName": f"csi-{driver}-{j}"}},
        }
        for driver in drivers
        for j in range(count)
    ]


def claims(*names: str, name: str = "p") -> PodBuilder:
    b = make_pod(name)
    for i, claim in enumerate(names):
        b.volume(f"v{i}", persistentVolumeClaim={"claimName": claim})
    return b


RUNNING = claims("csi-ebs.csi.aws.com-3", name="running")
PENDING = claims("csi-4", name="pending")
UNBOUND_2 = claims("csi-4", name="unbound2")
MISSING_PV = claims("csi-6", name="missing-pv")
NO_SC = claims("csi-5", name="no-sc")
GCE_TWO = claims("csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2", name="gce-two")
IN_TREE_ONE = claims("csi-kubernetes.io/aws-ebs-0", name="in-tree-one")
IN_TREE_TWO = claims("csi-kubernetes.io/aws-ebs-1", "csi-kubernetes.io/aws-ebs-2", name="in-tree-two")
EBS_ONE = claims("csi-ebs.csi.aws.com-0", name="ebs-one")
EBS_TWO = claims("csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2", name="ebs-two")
NON_MIGRATABLE = claims("csi-kubernetes.io/hostpath-0", name="hostpath")
EPHEMERAL = make_pod("abc", "test").uid("12345").volume("xyz", ephemeral={})
EPHEMERAL_TWO = make_pod("abc", "test").uid("12345II").volume("x", ephemeral={}).volume("y", ephemeral={})
INLINE = make_pod("inline").volume("aws", awsElasticBlockStore={"volumeID": "aws-inline1"})
INLINE_SAME_ID = make_pod("inline-same").volume("aws", awsElasticBlockStore={"volumeID": "csi-ebs.csi.aws.com-1"})
CM_AND_SECRET = make_pod("cm").volume("cm", configMap={}).volume("s", secret={})
PVC_CM_SECRET = make_pod("pvc-cm").volume("cm", configMap={}).volume("s", secret={}).pvc("csi-ebs.csi.aws.com-0")
EPH_CM_SECRET = make_pod("abc", "test").volume("cm", configMap={}).volume("s", secret={}).volume("xyz", ephemeral={})
INLINE_CM_SECRET = (
    make_pod("inline-cm")
    .volume("cm", configMap={})
    .volume("s", secret={})
    .volume("aws", awsElasticBlockStore={"volumeID": "aws-inline1"})
)


def _owner(name: str, uid: str) -> JSON:
    return {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid, "controller": True}


EPHEMERAL_CLAIM = _claim("abc-xyz", {"storageClassName": SC}, "test", _owner("abc", "12345"))
CONFLICTING_CLAIM = _claim("abc-xyz", {"storageClassName": SC}, "test")
EPHEMERAL_CLAIM_X = _claim("abc-x", {"storageClassName": SC}, "test", _owner("abc", "12345II"))
EPHEMERAL_CLAIM_Y = _claim("abc-y", {"storageClassName": SC}, "test", _owner("abc", "12345II"))

MISSING_EPHEMERAL = Status(
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found',)
)

BOTH = [EBS_IN_TREE, EBS]
CASES = [
    # (new pod, existing, extra claims, max vols, va count, drivers, limit source, want, want prefilter, id)
    (
        EBS_ONE,
        [],
        [],
        2,
        2,
        [EBS],
        "csinode",
        EXCEEDED,
        None,
        "should count VolumeAttachments towards volume limit when no pods exist",
    ),
    (
        EBS_ONE,
        [],
        [],
        2,
        1,
        [EBS],
        "csinode",
        None,
        None,
        "should schedule pod when VolumeAttachments count does not exceed limit",
    ),
    (
        EBS_ONE,
        [RUNNING, EBS_TWO],
        [],
        4,
        0,
        [EBS],
        "csinode",
        None,
        None,
        "fits when node volume limit >= new pods CSI volume",
    ),
    (
        EBS_ONE,
        [RUNNING, EBS_TWO],
        [],
        2,
        0,
        [EBS],
        "csinode",
        EXCEEDED,
        None,
        "doesn't when node volume limit <= pods CSI volume",
    ),
    (
        EBS_ONE,
        [RUNNING, EBS_TWO],
        [],
        2,
        0,
        [EBS],
        "csinode-with-no-limit",
        None,
        None,
        "should when driver does not support volume limits",
    ),
    (
        EBS_ONE,
        [PENDING, EBS_TWO],
        [],
        2,
        0,
        [EBS],
        "csinode",
        EXCEEDED,
        None,
        "count pending PVCs towards volume limit <= pods CSI volume",
    ),
    (
        EBS_ONE,
        [PENDING, UNBOUND_2, EBS_TWO],
        [],
        4,
        0,
        [EBS],
        "csinode",
        None,
        None,
        "count multiple pending pvcs towards volume limit >= pods CSI volume",
    ),
    (
        EBS_ONE,
        [MISSING_PV, EBS_TWO],
        [],
        2,
        0,
        [EBS],
        "csinode",
        EXCEEDED,
        None,
        "should count PVCs with invalid PV name but valid SC",
    ),
    (
        EBS_ONE,
        [RUNNING, NO_SC],
        [],
        2,
        0,
        [EBS],
        "csinode",
        None,
        None,
        "don't count pvcs with missing SC towards volume limit",
    ),
    (
        EBS_ONE,
        [GCE_TWO, EBS_TWO],
        [],
        2,
        0,
        [EBS, GCE],
        "csinode",
        EXCEEDED,
        None,
        "count pvcs with the same type towards volume limit",
    ),
    (
        GCE_TWO,
        [EBS_TWO, RUNNING],
        [],
        2,
        0,
        [EBS, GCE],
        "csinode",
        None,
        None,
        "don't count pvcs with different type towards volume limit",
    ),
    (
        IN_TREE_ONE,
        [IN_TREE_TWO],
        [],
        2,
        0,
        BOTH,
        "csinode",
        EXCEEDED,
        None,
        "should count in-tree volumes if migration is enabled",
    ),
    (INLINE, [IN_TREE_TWO], [], 0, 0, BOTH, "", None, None, "nil csi node"),
    (
        PENDING,
        [IN_TREE_TWO],
        [],
        2,
        0,
        BOTH,
        "csinode",
        EXCEEDED,
        None,
        "should count unbound in-tree volumes if migration is enabled",
    ),
    (
        IN_TREE_ONE,
        [IN_TREE_TWO],
        [],
        2,
        0,
        BOTH,
        "csinode-with-no-limit",
        None,
        None,
        "should not limit pod if volume used does not report limits",
    ),
    (
        NON_MIGRATABLE,
        [EBS_TWO],
        [],
        2,
        0,
        [HOSTPATH_IN_TREE, EBS],
        "csinode",
        None,
        None,
        "should not count non-migratable in-tree volumes",
    ),
    (
        INLINE,
        [IN_TREE_TWO],
        [],
        2,
        0,
        BOTH,
        "csinode",
        EXCEEDED,
        None,
        "should count in-tree inline volumes if migration is enabled",
    ),
    (
        IN_TREE_ONE,
        [EBS_TWO],
        [],
        2,
        0,
        BOTH,
        "csinode",
        EXCEEDED,
        None,
        "should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)",
    ),
    (
        INLINE,
        [EBS_TWO, IN_TREE_ONE],
        [],
        3,
        0,
        BOTH,
        "csinode",
        EXCEEDED,
        None,
        "should count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
    ),
    (
        INLINE_SAME_ID,
        [EBS_TWO, IN_TREE_ONE],
        [],
        3,
        0,
        BOTH,
        "csinode",
        None,
        None,
        "should not count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
    ),
    (
        EBS_ONE,
        [IN_TREE_TWO],
        [],
        2,
        0,
        BOTH,
        "csinode",
        EXCEEDED,
        None,
        "should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)",
    ),
    (EPHEMERAL, [], [], 0, 0, [EBS], "csinode-with-no-limit", MISSING_EPHEMERAL, None, "ephemeral volume missing"),
    (
        EPHEMERAL,
        [],
        [CONFLICTING_CLAIM],
        0,
        0,
        [EBS],
        "csinode-with-no-limit",
        Status(Code.ERROR, ("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)",)),
        None,
        "ephemeral volume not owned",
    ),
    (EPHEMERAL, [], [EPHEMERAL_CLAIM], 0, 0, [EBS], "csinode-with-no-limit", None, None, "ephemeral volume unbound"),
    (
        EPHEMERAL,
        [RUNNING, EBS_TWO],
        [EPHEMERAL_CLAIM],
        2,
        0,
        [EBS],
        "csinode",
        EXCEEDED,
        None,
        "ephemeral doesn't when node volume limit <= pods CSI volume",
    ),
    (
        EBS_ONE,
        [RUNNING, EPHEMERAL_TWO],
        [EPHEMERAL_CLAIM_X, EPHEMERAL_CLAIM_Y],
        2,
        0,
        [EBS],
        "csinode",
        EXCEEDED,
        None,
        "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
    ),
    (
        EBS_ONE,
        [RUNNING, EPHEMERAL, EBS_TWO],
        [EPHEMERAL_CLAIM],
        3,
        0,
        [EBS],
        "csinode",
        EXCEEDED,
        None,
        "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume, "
        "ephemeral disabled",
    ),
    (
        EBS_ONE,
        [RUNNING, EPHEMERAL, EBS_TWO],
        [EPHEMERAL_CLAIM],
        3,
        0,
        [EBS],
        "csinode",
        EXCEEDED,
        None,
        "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume",
    ),
    (
        EBS_ONE,
        [RUNNING, EPHEMERAL, EBS_TWO],
        [EPHEMERAL_CLAIM],
        5,
        0,
        [EBS],
        "csinode",
        None,
        None,
        "persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",
    ),
    (
        CM_AND_SECRET,
        [],
        [],
        2,
        0,
        [EBS],
        "csinode",
        None,
        SKIP,
        "skip Filter when the pod only uses secrets and configmaps",
    ),
    (PVC_CM_SECRET, [], [], 2, 0, [EBS], "csinode", None, None, "don't skip Filter when the pod has pvcs"),
    (
        EPH_CM_SECRET,
        [],
        [],
        0,
        0,
        [EBS],
        "csinode-with-no-limit",
        MISSING_EPHEMERAL,
        None,
        "don't skip Filter when the pod has ephemeral volumes",
    ),
    (
        INLINE_CM_SECRET,
        [IN_TREE_TWO],
        [],
        2,
        0,
        BOTH,
        "csinode",
        EXCEEDED,
        None,
        "don't skip Filter when the pod has inline migratable volumes",
    ),
]


def node_with(pods: list[PodBuilder]) -> NodeInfo:
    info = NodeInfo(NODE, NodeRecord(NODE))
    for p in pods:
        info.add_pod(p.node(NODE).info())
    return info


def _plain(s: Status | None) -> Status | None:
    return None if s is None else Status(s.code, s.reasons)


@pytest.mark.parametrize(
    ("new_pod", "existing", "extra", "max_vols", "va_count", "drivers", "limit_source", "want", "want_pre"),
    [pytest.param(*c[:-1], id=c[-1]) for c in CASES],
)
def test_csi_limits(
    new_pod: PodBuilder,
    existing: list[PodBuilder],
    extra: list[JSON],
    max_vols: int,
    va_count: int,
    drivers: list[str],
    limit_source: str,
    want: Status | None,
    want_pre: Status | None,
) -> None:
    """Per-driver attach limits from the CSINode, counting existing pods' and attachments' volumes once."""
    objects = pv_objects("csi", drivers) + pvc_objects("csi", drivers) + extra + [storage_class(drivers[0])]
    objects += attachments(va_count, drivers)
    cn = csi_node(limit_source, max_vols, drivers)
    if cn is not None:
        objects.append(cn)
    plugin = NodeVolumeLimits(StaticHandle(objects=objects))
    pod = new_pod.info()
    _, pre = plugin.pre_filter(CycleState(), pod, [])
    assert pre == want_pre
    if pre is None:
        assert _plain(plugin.filter(CycleState(), pod, node_with(existing))) == want


def _driver(prevent: bool) -> JSON:
    spec: JSON = {"preventPodSchedulingIfMissing": True} if prevent else {}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": EBS}, "spec": spec}


@pytest.mark.parametrize(
    ("limit_source", "limit", "driver", "want"),
    [
        pytest.param(
            "no-csi-driver",
            0,
            _driver(False),
            None,
            id="gate enabled - allow scheduling when CSIDriver exists but PreventPodSchedulingIfMissing is not set",
        ),
        pytest.param(
            "no-csi-driver",
            0,
            _driver(True),
            Status(Code.UNSCHEDULABLE, (f"{EBS} CSI driver is not installed on the node",)),
            id="gate enabled - fail when driver not installed and PreventPodSchedulingIfMissing is true",
        ),
        pytest.param("csinode", 2, _driver(True), None, id="gate enabled - driver installed within limit"),
        pytest.param(
            "no-csi-driver", 0, None, None, id="gate enabled - allow scheduling when CSIDriver object missing"
        ),
    ],
)
def test_volume_limit_scaling(limit_source: str, limit: int, driver: JSON | None, want: Status | None) -> None:
    """VolumeLimitScaling (beta, on in v1.37): an opted-in driver must be on the node's CSINode."""
    objects = pv_objects("csi", [EBS]) + pvc_objects("csi", [EBS]) + [storage_class(EBS)]
    cn = csi_node(limit_source, limit, [EBS])
    if cn is not None:
        objects.append(cn)
    if driver is not None:
        objects.append(driver)
    plugin = NodeVolumeLimits(StaticHandle(objects=objects))
    pod = claims("csi-ebs.csi.aws.com-0").info()
    _, pre = plugin.pre_filter(CycleState(), pod, [])
    assert pre is None
    assert _plain(plugin.filter(CycleState(), pod, node_with([]))) == want


def test_explain_names_the_driver_count() -> None:
    """explain_node says which driver is over its limit, with the counts."""
    cn = csi_node("csinode", 2, [EBS])
    assert cn is not None
    objects = pv_objects("csi", [EBS]) + pvc_objects("csi", [EBS]) + [storage_class(EBS), cn]
    plugin = NodeVolumeLimits(StaticHandle(objects=objects))
    pod = EBS_ONE.info()
    n = node_with([RUNNING, EBS_TWO])
    status = plugin.filter(CycleState(), pod, n)
    [detail] = plugin.explain_node(CycleState(), pod, n, status)
    assert detail.text == f"CSI driver {EBS}: 3 volume(s) attached + 1 new exceeds the node's limit of 2"
    assert detail.data == {"driver": EBS, "limit": 2, "attached": 3, "new": 1}
