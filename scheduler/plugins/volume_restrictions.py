"""VolumeRestrictions: disks that cannot be shared, and ReadWriteOncePod claims (upstream
plugins/volumerestrictions/volume_restrictions.go, v1.37).

* In-tree disks, against the pods already on the node: the same GCE PD unless both mounts are read-only,
  the same AWS EBS volume always, the same iSCSI IQN unless both read-only, the same RBD image (an
  overlapping monitor, same pool and image) unless both read-only: `node(s) had no available disk`.
* ReadWriteOncePod: a claim with that access mode used by any scheduled pod in the cluster (the snapshot's
  used-claim counts, maintained incrementally by the cache) rejects every node, Unschedulable, so that
  preemption may remove the holder; AddPod/RemovePod keep the count right while preemption simulates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from scheduler.framework.interface import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    ExplainDetail,
    ExplainExtensions,
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    SignPlugin,
)
from scheduler.framework.objects import PERSISTENT_VOLUME_CLAIM
from scheduler.framework.status import SKIP, Status, error_status, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.storage.volume import READ_WRITE_ONCE_POD, access_modes

NAME: Final = "VolumeRestrictions"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME

ERR_REASON_DISK_CONFLICT: Final = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT: Final = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)

_DISK_SOURCES: Final = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")
_REJECT_DISK: Final = unschedulable(ERR_REASON_DISK_CONFLICT, plugin=NAME)
_REJECT_RWOP: Final = unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT, plugin=NAME)
_MISSING_STATE: Final = f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState'


@dataclass(slots=True)
class _PreFilterState:
    """The pod's ReadWriteOncePod claim names and how many references scheduled pods hold to them."""

    rwop_claims: frozenset[str]
    conflicting_refs: int

    def refs_of(self, pod: PodInfo) -> int:
        """conflictingPVCRefCountForPod: the pod's persistentVolumeClaim volumes naming one of the claims."""
        return sum(1 for claim in pod.claim_names if claim in self.rwop_claims)


def needs_restrictions_check(volume: Mapping[str, Any]) -> bool:
    """A GCE PD, AWS EBS, RBD or iSCSI volume: the kinds checked against the node's pods."""
    return any(volume.get(source) is not None for source in _DISK_SOURCES)


def _overlap(a: Any, b: Any) -> bool:
    return bool(set(a or ()) & set(b or ()))


def is_volume_conflict(volume: Mapping[str, Any], other: PodInfo) -> bool:
    """isVolumeConflict: does `volume` clash with one of the other pod's volumes?"""
    gce, aws = volume.get("gcePersistentDisk"), volume.get("awsElasticBlockStore")
    iscsi, rbd = volume.get("iscsi"), volume.get("rbd")
    for existing in other.volumes:
        if isinstance(gce, Mapping):
            e = existing.get("gcePersistentDisk")
            if (
                isinstance(e, Mapping)
                and gce.get("pdName") == e.get("pdName")
                and not (gce.get("readOnly") and e.get("readOnly"))
            ):
                return True
        if isinstance(aws, Mapping):
            e = existing.get("awsElasticBlockStore")
            if isinstance(e, Mapping) and aws.get("volumeID") == e.get("volumeID"):
                return True
        if isinstance(iscsi, Mapping):
            e = existing.get("iscsi")
            if (
                isinstance(e, Mapping)
                and iscsi.get("iqn") == e.get("iqn")
                and not (iscsi.get("readOnly") and e.get("readOnly"))
            ):
                return True
        if isinstance(rbd, Mapping):
            e = existing.get("rbd")
            if (
                isinstance(e, Mapping)
                and _overlap(rbd.get("monitors"), e.get("monitors"))
                and (rbd.get("pool") or "") == (e.get("pool") or "")
                and rbd.get("image") == e.get("image")
                and not (rbd.get("readOnly") and e.get("readOnly"))
            ):
                return True
    return False


def disk_conflicts(pod: PodInfo, node: NodeInfo) -> list[tuple[str, PodInfo]]:
    """(the pod's volume name, the pod on the node it clashes with) for every clash."""
    out = []
    for volume in pod.volumes:
        if not needs_restrictions_check(volume):
            continue
        for other in node.pods.values():
            if other.volumes and is_volume_conflict(volume, other):
                out.append((str(volume.get("name") or ""), other))
    return out


class VolumeRestrictions(PreFilterPlugin, FilterPlugin, EnqueueExtensions, ExplainExtensions, SignPlugin):
    """Rejects nodes where an in-tree disk is already in use, and pods whose ReadWriteOncePod claim is."""

    name: ClassVar[str] = NAME
    # Reads claims and the pods using them: kept results only where it was skipped.
    sign_reads_cluster: ClassVar[bool] = True
    object_kinds: ClassVar[tuple[str, ...]] = (PERSISTENT_VOLUME_CLAIM,)

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        needs_check = any(needs_restrictions_check(v) for v in pod.volumes)
        rwop: set[str] = set()
        objects = self.handle.objects
        for volume in pod.volumes:
            source = volume.get("persistentVolumeClaim")
            if not isinstance(source, Mapping):
                continue
            claim_name = str(source.get("claimName") or "")
            pvc = objects.get(PERSISTENT_VOLUME_CLAIM, pod.namespace, claim_name)
            if pvc is None:
                return None, unresolvable(f'persistentvolumeclaim "{claim_name}" not found')
            if READ_WRITE_ONCE_POD in access_modes(pvc):
                rwop.add(claim_name)
        conflicting = 0
        if rwop:
            used = self._used_claims(nodes)
            conflicting = sum(1 for claim in rwop if used(f"{pod.namespace}/{claim}"))
        if not needs_check and conflicting == 0:
            return None, SKIP
        state[PRE_FILTER_STATE_KEY] = _PreFilterState(frozenset(rwop), conflicting)
        return None, None

    def _used_claims(self, nodes: Sequence[NodeInfo]) -> Callable[[str], bool]:
        """IsPVCUsedByPods over the nodes being evaluated: the snapshot's incrementally kept counts when they are
        the scheduler's snapshot (every scheduling cycle), else a count over the given nodes (explanations)."""
        snapshot = self.handle.snapshot()
        if nodes is snapshot.node_info_list:
            return snapshot.is_pvc_used_by_pods
        used = {key for info in nodes for key, n in info.pvc_ref_counts.items() if n > 0}
        return used.__contains__

    def pre_filter_extensions(self) -> VolumeRestrictions:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        s: _PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error_status(_MISSING_STATE)
        s.conflicting_refs += s.refs_of(to_add)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status | None:
        s: _PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error_status(_MISSING_STATE)
        s.conflicting_refs -= s.refs_of(to_remove)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        for volume in pod.volumes:
            if not needs_restrictions_check(volume):
                continue
            for other in node.pods.values():
                if other.volumes and is_volume_conflict(volume, other):
                    return _REJECT_DISK
        s: _PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error_status(_MISSING_STATE)
        if s.conflicting_refs > 0:
            return _REJECT_RWOP
        return None

    def events_to_register(self) -> list[ClusterEvent]:
        """A deleted pod frees its disks and claims; a new node or a new claim may help."""
        return [
            ClusterEvent(ASSIGNED_POD, ActionType.DELETE),
            ClusterEvent(NODE, ActionType.ADD),
            ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
        ]

    def explain_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status | None
    ) -> list[ExplainDetail]:
        """Which pod on the node holds the disk; which pod in the cluster holds the ReadWriteOncePod claim."""
        if status is None:
            return []
        out = [
            ExplainDetail(
                f"volume {volume} uses a disk already in use by pod {other.key}",
                {"volume": volume, "pod": other.key},
            )
            for volume, other in disk_conflicts(pod, node)
        ]
        s: _PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if not out and s is not None and s.conflicting_refs > 0:
            for info in self.handle.snapshot().node_info_list:
                for other in info.pods.values():
                    if other.namespace != pod.namespace or other.uid == pod.uid:
                        continue
                    for claim in other.claim_names:
                        if claim in s.rwop_claims:
                            out.append(
                                ExplainDetail(
                                    f"ReadWriteOncePod claim {pod.namespace}/{claim} is in use by pod {other.key} "
                                    f"on node {info.name}",
                                    {"claim": f"{pod.namespace}/{claim}", "pod": other.key, "node": info.name},
                                )
                            )
        return out


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> VolumeRestrictions:
    return VolumeRestrictions(handle)
