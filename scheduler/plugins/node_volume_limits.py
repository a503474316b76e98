"""NodeVolumeLimits: CSI attach limits per driver (upstream plugins/nodevolumelimits/csi.go, v1.37).

A node's limit for a CSI driver is its CSINode's `spec.drivers[].allocatable.count`. The volumes counted
against it are unique by (driver, volume handle): the CSI volumes of the pods already on the node (bound
claims through their PV, unbound claims through their class's provisioner with a per-claim placeholder
handle, migrated in-tree PVs and inline volumes through csi-translation), plus the VolumeAttachments to the
node that no pod accounts for. A pod whose new volumes would push a driver over its limit gets
`node(s) exceed max volume count` (Unschedulable). With VolumeLimitScaling (beta, on in v1.37) a driver
whose CSIDriver sets `preventPodSchedulingIfMissing` must also be listed on the node's CSINode:
`<driver> CSI driver is not installed on the node`.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from scheduler import caching
from scheduler.framework.interface import (
    ASSIGNED_POD,
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
from scheduler.framework.objects import (
    CSI_DRIVER,
    CSI_NODE,
    JSON,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    VOLUME_ATTACHMENT,
)
from scheduler.framework.status import SKIP, Code, Status, error_status, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.storage import csi_translation as csi
from scheduler.storage.volume import claim_class, pod_claim_volumes, spec, volume_is_for_pod

NAME: Final = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: Final = "node(s) exceed max volume count"
# VolumeLimitScaling: beta, on by default in v1.37.
VOLUME_LIMIT_SCALING: Final = True

_REJECT: Final = unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, plugin=NAME)
NEW_VOLUMES_KEY: Final = "PreFilter" + NAME  # CycleState: the pod's own volumes per CSINode of this cycle


class _LookupError(Exception):
    """filterAttachableVolumes failed; `not_found` marks apierrors.IsNotFound (unresolvable for a new pod)."""

    def __init__(self, message: str, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


def is_csi_migration_on(csi_node: Mapping[str, Any] | None, plugin: str) -> bool:
    """isCSIMigrationOn: a CSINode exists and the plugin is one the scheduler treats as migrated."""
    return csi_node is not None and bool(plugin) and plugin in csi.SCHEDULER_MIGRATED_PLUGINS


def volume_limits(csi_node: Mapping[str, Any] | None) -> dict[str, int]:
    """getVolumeLimits: driver -> allocatable.count from the CSINode (a driver without a count has no limit)."""
    out: dict[str, int] = {}
    if csi_node is None:
        return out
    for driver in spec(csi_node).get("drivers") or []:
        if not isinstance(driver, Mapping):
            continue
        allocatable = driver.get("allocatable")
        if isinstance(allocatable, Mapping) and allocatable.get("count") is not None:
            out[str(driver.get("name") or "")] = int(allocatable["count"])
    return out


def _pod_needs_check(pod: PodInfo) -> bool:
    return any(
        isinstance(v.get("persistentVolumeClaim"), Mapping)
        or v.get("ephemeral") is not None
        or csi.is_inline_migratable(v)
        for v in pod.volumes
    )


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin, EnqueueExtensions, ExplainExtensions, SignPlugin):
    """CSILimits: the node's per-driver attach limits must hold the pod's new CSI volumes."""

    name: ClassVar[str] = NAME
    # Reads claims, volumes and CSINodes: kept results only where it was skipped.
    sign_reads_cluster: ClassVar[bool] = True
    object_kinds: ClassVar[tuple[str, ...]] = (
        PERSISTENT_VOLUME_CLAIM,
        PERSISTENT_VOLUME,
        STORAGE_CLASS,
        CSI_NODE,
        CSI_DRIVER,
        VOLUME_ATTACHMENT,
    )

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        # Handles of unbound claims: a random prefix so they never collide with a real volume handle.
        self.random_prefix = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(32))
        self._va_index: dict[str, list[JSON]] = {}
        self._va_generation = -1

    # ---------------------------------------------------------------- counting volumes

    def _driver_info_from_class(self, csi_node: Mapping[str, Any] | None, pvc: Mapping[str, Any]) -> tuple[str, str]:
        """getCSIDriverInfoFromSC: (class provisioner or its migrated driver, placeholder handle)."""
        class_name = claim_class(pvc)
        if not class_name:
            return "", ""
        cls = self.handle.objects.get(STORAGE_CLASS, "", class_name)
        if cls is None:
            return "", ""
        meta = pvc.get("metadata") or {}
        handle = f"{self.random_prefix}-{meta.get('namespace') or ''}/{meta.get('name') or ''}"
        provisioner = str(cls.get("provisioner") or "")
        if csi.is_migratable_plugin_name(provisioner):
            if not is_csi_migration_on(csi_node, provisioner):
                return "", ""
            try:
                return csi.csi_name_from_plugin(provisioner), handle
            except csi.TranslationError:
                return "", ""
        return provisioner, handle

    def _driver_info(self, csi_node: Mapping[str, Any] | None, pvc: Mapping[str, Any]) -> tuple[str, str]:
        """getCSIDriverInfo: (driver, volume handle) of a claim's volume; ("", "") when not counted."""
        pv_name = str(spec(pvc).get("volumeName") or "")
        if not pv_name:
            return self._driver_info_from_class(csi_node, pvc)
        pv = self.handle.objects.get(PERSISTENT_VOLUME, "", pv_name)
        if pv is None:
            return self._driver_info_from_class(csi_node, pvc)
        source = spec(pv).get("csi")
        if not isinstance(source, Mapping):
            if not csi.is_pv_migratable(pv):
                return "", ""
            try:
                plugin = csi.plugin_name_from_pv(pv)
            except csi.TranslationError:
                return "", ""
            if not is_csi_migration_on(csi_node, plugin):
                return "", ""
            try:
                translated = csi.translate_pv(pv)
            except csi.TranslationError:
                return "", ""
            source = spec(translated).get("csi")
            if not isinstance(source, Mapping):
                return "", ""
        return str(source.get("driver") or ""), str(source.get("volumeHandle") or "")

    def attachable_volumes(
        self, pod: PodInfo, csi_node: Mapping[str, Any] | None, new_pod: bool, result: dict[str, str]
    ) -> None:
        """filterAttachableVolumes: add "driver/handle" -> driver for each of the pod's CSI volumes."""
        objects = self.handle.objects
        claim_of = {id(vol): (name, eph) for vol, name, eph in pod_claim_volumes(pod)}
        for vol in pod.volumes:
            claim = claim_of.get(id(vol))
            if claim is None:
                self._inline_volume(vol, csi_node, pod, result)
                continue
            claim_name, ephemeral = claim
            if not claim_name:
                raise _LookupError("PersistentVolumeClaim had no name")
            pvc = objects.get(PERSISTENT_VOLUME_CLAIM, pod.namespace, claim_name)
            if pvc is None:
                if new_pod:
                    raise _LookupError(
                        f'looking up PVC {pod.namespace}/{claim_name}: persistentvolumeclaim "{claim_name}" not found',
                        not_found=True,
                    )
                continue  # not counted: nothing says it belongs to that pod
            if ephemeral:
                err = volume_is_for_pod(pod, pvc)
                if err is not None:
                    raise _LookupError(err)
            driver, handle = self._driver_info(csi_node, pvc)
            if not driver or not handle:
                continue
            result[f"{driver}/{handle}"] = driver

    def _inline_volume(
        self, vol: Mapping[str, Any], csi_node: Mapping[str, Any] | None, pod: PodInfo, result: dict[str, str]
    ) -> None:
        """checkAttachableInlineVolume: a migratable in-tree inline volume counts against its CSI driver."""
        if not csi.is_inline_migratable(vol):
            return
        try:
            plugin = csi.plugin_name_from_volume(vol)
        except csi.TranslationError as exc:
            raise _LookupError(f"looking up provisioner name for volume {vol.get('name', '')}: {exc}") from exc
        if not is_csi_migration_on(csi_node, plugin):
            return
        try:
            driver, handle = csi.translate_inline(vol)
        except csi.TranslationError as exc:
            raise _LookupError(f"converting volume({vol.get('name', '')}) from inline to csi: {exc}") from exc
        result[f"{driver}/{handle}"] = driver

    def _attachments_on(self, node_name: str) -> list[JSON]:
        """VolumeAttachments whose spec.nodeName is the node (indexed once per change of the kind)."""
        objects = self.handle.objects
        generation = objects.generation(VOLUME_ATTACHMENT)
        if generation != self._va_generation:
            index: dict[str, list[JSON]] = {}
            for va in objects.list(VOLUME_ATTACHMENT):
                index.setdefault(str(spec(va).get("nodeName") or ""), []).append(va)
            self._va_index, self._va_generation = index, generation
        return self._va_index.get(node_name, [])

    def attachment_volumes(self, node_name: str) -> dict[str, str]:
        """getNodeVolumeAttachmentInfo: "attacher/handle" -> attacher for the node's CSI VolumeAttachments."""
        out: dict[str, str] = {}
        for va in self._attachments_on(node_name):
            va_spec = spec(va)
            attacher = str(va_spec.get("attacher") or "")
            source = va_spec.get("source")
            pv_name = source.get("persistentVolumeName") if isinstance(source, Mapping) else None
            if not attacher or pv_name is None:
                continue
            pv = self.handle.objects.get(PERSISTENT_VOLUME, "", str(pv_name))
            if pv is None:
                continue
            pv_csi = spec(pv).get("csi")
            if not isinstance(pv_csi, Mapping):
                continue
            out[f"{attacher}/{pv_csi.get('volumeHandle') or ''}"] = attacher
        return out

    def _driver_installed(self, driver: str, csi_node: Mapping[str, Any] | None) -> bool:
        """checkCSIDriverOnNode: only drivers that opt in (preventPodSchedulingIfMissing) must be on the node."""
        obj = self.handle.objects.get(CSI_DRIVER, "", driver)
        if obj is None or spec(obj).get("preventPodSchedulingIfMissing") is not True:
            return True
        if csi_node is None:
            return False
        return any(isinstance(d, Mapping) and d.get("name") == driver for d in spec(csi_node).get("drivers") or [])

    # ---------------------------------------------------------------- extension points

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not _pod_needs_check(pod):
            return None, SKIP
        state[NEW_VOLUMES_KEY] = {}
        return None, None

    def _node_view(
        self, pod: PodInfo, csi_node: Mapping[str, Any] | None, state: CycleState | None
    ) -> tuple[dict[str, str] | _LookupError, Status | None, dict[str, int]]:
        """What only depends on the node's CSINode: the pod's own CSI volumes (migration depends on the CSINode),
        the driver-installed verdict and the limits. Nodes sharing one CSINode object (or having none) share it
        within a cycle."""
        cache: dict[int, tuple[Any, Any]] | None = (
            state.get(NEW_VOLUMES_KEY) if state is not None and caching.ENABLED else None
        )
        key = id(csi_node)
        if cache is not None:
            hit = cache.get(key)
            if hit is not None and hit[0] is csi_node:
                return hit[1]  # type: ignore[no-any-return]
        found: dict[str, str] = {}
        result: dict[str, str] | _LookupError = found
        try:
            self.attachable_volumes(pod, csi_node, True, found)
        except _LookupError as exc:
            result = exc
        installed: Status | None = None
        if VOLUME_LIMIT_SCALING and not isinstance(result, _LookupError):
            for driver in result.values():
                if not self._driver_installed(driver, csi_node):
                    installed = unschedulable(f"{driver} CSI driver is not installed on the node")
                    break
        view = (result, installed, volume_limits(csi_node))
        if cache is not None:
            cache[key] = (csi_node, view)
        return view

    def _attached_volumes(self, node: NodeInfo, csi_node: Mapping[str, Any] | None) -> dict[str, str] | _LookupError:
        """The CSI volumes of the pods on the node, memoized on the node until its pods or a storage kind change."""
        objects = self.handle.objects
        if not caching.ENABLED:  # the plain path: the node's pods looked at on every call
            return self._pods_volumes(node, csi_node)
        memo_key = (
            f"{NAME}|{id(self)}|{objects.generation(PERSISTENT_VOLUME_CLAIM)}|{objects.generation(PERSISTENT_VOLUME)}"
            f"|{objects.generation(STORAGE_CLASS)}|{objects.generation(CSI_NODE)}"
        )
        hit = node.memo.get(memo_key)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        attached = self._pods_volumes(node, csi_node)
        node.remember(memo_key, attached)
        return attached

    def _pods_volumes(self, node: NodeInfo, csi_node: Mapping[str, Any] | None) -> dict[str, str] | _LookupError:
        """The CSI volumes of the pods on the node (uncached)."""
        volumes: dict[str, str] = {}
        attached: dict[str, str] | _LookupError = volumes
        try:
            for existing in node.pods.values():
                if existing.volumes:
                    self.attachable_volumes(existing, csi_node, False, volumes)
        except _LookupError as exc:
            attached = exc
        return attached

    def count(
        self, pod: PodInfo, node: NodeInfo, state: CycleState | None = None
    ) -> tuple[Status | None, dict[str, tuple[int, int, int]]]:
        """The verdict and, per limited driver, (limit, volumes already counted, new volumes)."""
        if not pod.volumes:
            return None, {}
        csi_node = self.handle.objects.get(CSI_NODE, "", node.name)
        found, not_installed, limits = self._node_view(pod, csi_node, state)
        if isinstance(found, _LookupError):
            return (unresolvable(str(found)) if found.not_found else error_status(str(found))), {}
        if not found:
            return None, {}
        if not_installed is not None:
            return not_installed, {}
        if not limits:
            return None, {}
        new_volumes = dict(found)
        attached = self._attached_volumes(node, csi_node)
        if isinstance(attached, _LookupError):
            return error_status(str(attached)), {}
        attached_count: dict[str, int] = {}
        for unique, driver in attached.items():
            new_volumes.pop(unique, None)  # a volume already used on the node is not attached again
            attached_count[driver] = attached_count.get(driver, 0) + 1
        for unique, driver in self.attachment_volumes(node.name).items():
            if unique not in attached:
                attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new_volumes.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        verdict: Status | None = None
        detail: dict[str, tuple[int, int, int]] = {}
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is None:
                continue
            current = attached_count.get(driver, 0)
            detail[driver] = (limit, current, count)
            if verdict is None and current + count > limit:
                verdict = _REJECT
        return verdict, detail

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return self.count(pod, node, state)[0]

    def events_to_register(self) -> list[ClusterEvent]:
        """A CSINode, a deleted pod with volumes, a new claim or a removed VolumeAttachment may make room."""
        return [
            ClusterEvent(CSI_NODE, ActionType.ADD | ActionType.UPDATE),
            ClusterEvent(ASSIGNED_POD, ActionType.DELETE),
            ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
            ClusterEvent(VOLUME_ATTACHMENT, ActionType.DELETE),
        ]

    def explain_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status | None
    ) -> list[ExplainDetail]:
        """Each limited driver's count on the node: limit, volumes already attached, the pod's new ones."""
        if status is None or status.code != Code.UNSCHEDULABLE:
            return []
        _, detail = self.count(pod, node)
        out = []
        for driver, (limit, current, new) in sorted(detail.items()):
            verdict = "exceeds" if current + new > limit else "within"
            out.append(
                ExplainDetail(
                    f"CSI driver {driver}: {current} volume(s) attached + {new} new {verdict} "
                    f"the node's limit of {limit}",
                    {"driver": driver, "limit": limit, "attached": current, "new": new},
                )
            )
        return out


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> NodeVolumeLimits:
    return NodeVolumeLimits(handle)
