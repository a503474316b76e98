"""VolumeZone: a bound PV's zone and region labels must match the node's (upstream plugins/volumezone, v1.37).

PreFilter collects, for each persistentVolumeClaim volume, the topology labels of its bound PV
(`failure-domain.beta.kubernetes.io/zone|region`, `topology.kubernetes.io/zone|region`; a value may list
several zones separated by `__`). Unbound claims of a WaitForFirstConsumer class are skipped (VolumeBinding
decides those); any other unbound claim, or a missing claim, class or PV, is UnschedulableAndUnresolvable.
Filter: a node without any of the four labels passes (single-zone clusters); otherwise the node's value for
each PV label (a beta key falls back to the node's GA label) must be in the PV's set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from scheduler.framework.interface import (
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
from scheduler.framework.objects import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, STORAGE_CLASS
from scheduler.framework.status import SKIP, Status, unresolvable
from scheduler.framework.types import REGION_LABEL, REGION_LABEL_BETA, ZONE_LABEL, ZONE_LABEL_BETA, NodeInfo, PodInfo
from scheduler.framework.yaml_flow import flow, scalar
from scheduler.storage.csi_translation import LABEL_MULTI_ZONE_DELIMITER
from scheduler.storage.volume import WAIT_FOR_FIRST_CONSUMER, claim_class, labels_of, spec

NAME: Final = "VolumeZone"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME

ERR_REASON_CONFLICT: Final = "node(s) had no available volume zone"

TOPOLOGY_LABELS: Final = (ZONE_LABEL_BETA, REGION_LABEL_BETA, ZONE_LABEL, REGION_LABEL)
_GA_OF: Final = {REGION_LABEL_BETA: REGION_LABEL, ZONE_LABEL_BETA: ZONE_LABEL}

_REJECT: Final = unresolvable(ERR_REASON_CONFLICT, plugin=NAME)


@dataclass(frozen=True, slots=True)
class PVTopology:
    """One topology label of a bound PV: its key and the set of zones (or regions) it allows."""

    pv_name: str
    key: str
    values: frozenset[str]


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """LabelZonesToSet: `__`-separated, trimmed; None when an entry is empty (the label is then ignored)."""
    zones = []
    for zone in value.split(LABEL_MULTI_ZONE_DELIMITER):
        trimmed = zone.strip()
        if not trimmed:
            return None
        zones.append(trimmed)
    return frozenset(zones)


def pv_topologies(pv: Mapping[str, Any]) -> list[PVTopology]:
    """getPVTopologies: the PV's topology labels with parseable values."""
    out = []
    labels = labels_of(pv)
    name = str((pv.get("metadata") or {}).get("name") or "")
    for key in TOPOLOGY_LABELS:
        if key in labels:
            values = label_zones_to_set(str(labels[key]))
            if values is not None:
                out.append(PVTopology(name, key, values))
    return out


def node_value(labels: Mapping[str, str], key: str) -> str | None:
    """The node's value for a PV topology key (a beta key falls back to the GA label)."""
    value = labels.get(key)
    if value is None:
        value = labels.get(_GA_OF.get(key, key))
    return value


class VolumeZone(PreFilterPlugin, FilterPlugin, EnqueueExtensions, ExplainExtensions, SignPlugin):
    """Keeps pods on nodes in the zones (and regions) of their bound PVs."""

    name: ClassVar[str] = NAME
    # Reads claims, volumes and classes: kept results only where it was skipped.
    sign_reads_cluster: ClassVar[bool] = True
    object_kinds: ClassVar[tuple[str, ...]] = (PERSISTENT_VOLUME_CLAIM, PERSISTENT_VOLUME, STORAGE_CLASS)

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def _topologies(self, pod: PodInfo) -> tuple[list[PVTopology], Status | None]:
        """getPVbyPod."""
        objects = self.handle.objects
        out: list[PVTopology] = []
        for volume in pod.volumes:
            source = volume.get("persistentVolumeClaim")
            if not isinstance(source, Mapping):
                continue
            claim_name = str(source.get("claimName") or "")
            if not claim_name:
                return [], unresolvable("PersistentVolumeClaim had no name")
            pvc = objects.get(PERSISTENT_VOLUME_CLAIM, pod.namespace, claim_name)
            if pvc is None:
                return [], unresolvable(f'persistentvolumeclaim "{claim_name}" not found')
            pv_name = str(spec(pvc).get("volumeName") or "")
            if not pv_name:
                class_name = claim_class(pvc)
                if not class_name:
                    return [], unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                cls = objects.get(STORAGE_CLASS, "", class_name)
                if cls is None:
                    return [], unresolvable(f'storageclass.storage.k8s.io "{class_name}" not found')
                mode = cls.get("volumeBindingMode")
                if mode is None:
                    return [], unresolvable(f'VolumeBindingMode not set for StorageClass "{class_name}"')
                if mode == WAIT_FOR_FIRST_CONSUMER:
                    continue
                return [], unresolvable("PersistentVolume had no name")
            pv = objects.get(PERSISTENT_VOLUME, "", pv_name)
            if pv is None:
                return [], unresolvable(f'persistentvolume "{pv_name}" not found')
            out.extend(pv_topologies(pv))
        return out, None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        topologies, status = self._topologies(pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, SKIP
        state[PRE_FILTER_STATE_KEY] = topologies
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod.volumes:
            return None
        topologies: list[PVTopology] | None = state.get(PRE_FILTER_STATE_KEY)
        if topologies is None:
            topologies, status = self._topologies(pod)
            if status is not None:
                return status
        labels = node.node.labels if node.node is not None else {}
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return None  # a node without zone labels: single-zone clusters
        for topology in topologies:
            value = node_value(labels, topology.key)
            if value is None or value not in topology.values:
                return _REJECT
        return None

    def events_to_register(self) -> list[ClusterEvent]:
        """A new WaitForFirstConsumer class, node, claim or PV (or changed labels) may help."""
        return [
            ClusterEvent(STORAGE_CLASS, ActionType.ADD),
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
            ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
            ClusterEvent(PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
        ]

    def explain_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status | None
    ) -> list[ExplainDetail]:
        """The PV label the node's zone or region does not satisfy."""
        if status is None:
            return []
        topologies: list[PVTopology] = state.get(PRE_FILTER_STATE_KEY) or []
        labels = node.node.labels if node.node is not None else {}
        out = []
        for topology in topologies:
            value = node_value(labels, topology.key)
            if value is None or value not in topology.values:
                has = f"has {scalar(value)}" if value is not None else "has no such label"
                out.append(
                    ExplainDetail(
                        f"PersistentVolume {topology.pv_name} requires {topology.key} in "
                        f"{flow(sorted(topology.values))}; the node {has}",
                        {
                            "persistentVolume": topology.pv_name,
                            "key": topology.key,
                            "allowed": sorted(topology.values),
                            "node": value,
                        },
                    )
                )
        return out


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> VolumeZone:
    return VolumeZone(handle)
