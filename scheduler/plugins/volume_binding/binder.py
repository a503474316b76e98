"""VolumeBinding's binder (not a plugin): upstream volumebinding/binder.go, v1.37.

The binder answers, for one pod and one node, which of the pod's claims are bound (and whether their PVs'
node affinity admits the node), which unbound WaitForFirstConsumer claims a static PV can satisfy, and which
must be provisioned (and can be, given the class's allowedTopologies and CSIStorageCapacity). Reserve
*assumes* the decision in memory (a PV pre-bound to its claim, a claim with the selected-node annotation)
so the next scheduling cycles do not hand the same PV to another pod; PreBind writes it through the API and
waits until the PV controller (and a provisioner) have bound every claim.

Its assumptions live in the assume caches (assume_cache.py) over the object store.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from scheduler.framework.interface import Handle
from scheduler.framework.labels import SelectorError, compile_label_selector
from scheduler.framework.objects import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    JSON,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
)
from scheduler.framework.observer import Observer
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.logging_setup import V2, V4
from scheduler.plugins.volume_binding.assume_cache import AssumeCache, PVAssumeCache
from scheduler.storage import csi_translation as csi
from scheduler.storage.volume import (
    ANN_SELECTED_NODE,
    MIGRATED_PLUGINS_ANNOTATION,
    NOT_SUPPORTED_PROVISIONER,
    CandidateIndex,
    NotFoundError,
    StorageError,
    annotations_of,
    bind_volume_to_claim,
    check_node_affinity,
    claim_class,
    is_claim_fully_bound,
    is_delay_binding_mode,
    key_of,
    match_candidates,
    match_topology_selector_terms,
    name_of,
    node_affinity_error,
    pick_candidate,
    pod_claim_volumes,
    pv_capacity,
    quantity_bytes,
    resource_version,
    spec,
    storage_request,
    volume_is_for_pod,
)

log = logging.getLogger("pyscheduler.volumebinding")

# ConflictReasons (binder.go), in the order FindPodVolumes appends them.
ERR_REASON_NODE_CONFLICT: Final = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NOT_ENOUGH_SPACE: Final = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST: Final = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

# How often PreBind re-checks the API objects while it waits (upstream polls every second; we also look as
# soon as a PV or PVC changes in the object store, which costs one integer compare per tick).
CHECK_PERIOD: Final = 1.0
CHANGE_TICK: Final = 0.05


# ---------------------------------------------------------------------------------------------------------
# What the binder decides


@dataclass(slots=True)
class BindingInfo:
    """A claim and the static PV proposed for it."""

    pvc: JSON
    pv: JSON
    _resource: tuple[int, int] | None = None

    def storage_class_name(self) -> str:
        return str(spec(self.pv).get("storageClassName") or "")

    def storage_resource(self) -> tuple[int, int]:
        """(requested, capacity) in bytes (parsed once: Score asks for every node)."""
        if self._resource is None:
            self._resource = (storage_request(self.pvc) or 0, pv_capacity(self.pv))
        return self._resource


@dataclass(slots=True)
class DynamicProvision:
    """A claim to provision on the node, with the CSIStorageCapacity that admitted it (if checked)."""

    pvc: JSON
    node_capacity: JSON | None = None


@dataclass(slots=True)
class PodVolumes:
    """The decision for one node: static bindings and claims to provision."""

    static_bindings: list[BindingInfo] = field(default_factory=list)
    dynamic_provisions: list[DynamicProvision] = field(default_factory=list)


@dataclass(slots=True)
class PodVolumeClaims:
    """A pod's claims split as GetPodVolumeClaims does, plus per-cycle lookups shared by all nodes."""

    bound_claims: list[JSON] = field(default_factory=list)
    unbound_claims_delay_binding: list[JSON] = field(default_factory=list)
    unbound_claims_immediate: list[JSON] = field(default_factory=list)
    unbound_volumes_delay_binding: dict[str, list[JSON]] = field(default_factory=dict)
    # Filled lazily during the cycle: each delayed claim's node-independent PV candidates, the claims to
    # match sorted by size (with their keys), and the CSIStorageCapacity objects.
    candidates: dict[str, CandidateIndex] = field(default_factory=dict)
    match_order: list[tuple[str, JSON, int]] | None = None
    capacities: list[JSON] | None = None


def _parse_rv(rv: str) -> int | None:
    try:
        return int(rv)
    except ValueError:
        return None


def newer_than(ours: Mapping[str, Any], informer: Mapping[str, Any]) -> bool:
    """versioner.CompareResourceVersion(ours, informer) > 0: the informer has not caught up with our write."""
    a, b = _parse_rv(resource_version(ours)), _parse_rv(resource_version(informer))
    return a is not None and b is not None and a > b


def volume_limit(capacity: Mapping[str, Any]) -> int | None:
    """volumeLimit: maximumVolumeSize when set (more precise), else capacity; None when neither is."""
    raw = capacity.get("maximumVolumeSize")
    if raw is None:
        raw = capacity.get("capacity")
    if raw is None:
        return None
    return quantity_bytes(raw, f"CSIStorageCapacity {key_of(capacity)}")


def _is_plugin_migrated_on_node(plugin: str, csi_node: Mapping[str, Any] | None) -> bool:
    """isPluginMigratedToCSIOnNode: the CSINode's migrated-plugins annotation lists the plugin."""
    if csi_node is None:
        return False
    value = annotations_of(csi_node).get(MIGRATED_PLUGINS_ANNOTATION) or ""
    return plugin in value.split(",") if value else False


def try_translate_pv_to_csi(pv: JSON, csi_node: Mapping[str, Any] | None) -> JSON:
    """tryTranslatePVToCSI: the CSI form of a migratable in-tree PV on a node where it is migrated."""
    if not csi.is_pv_migratable(pv):
        return pv
    try:
        plugin = csi.plugin_name_from_pv(pv)
    except csi.TranslationError as exc:
        raise StorageError(f"could not get plugin name from pv: {exc}") from exc
    if plugin not in csi.SCHEDULER_MIGRATED_PLUGINS or not _is_plugin_migrated_on_node(plugin, csi_node):
        return pv
    try:
        return csi.translate_pv(pv)
    except csi.TranslationError as exc:
        raise StorageError(f"could not translate pv: {exc}") from exc


# ---------------------------------------------------------------------------------------------------------
# The binder


class VolumeBinder:
    """SchedulerVolumeBinder over the object store, the assume caches and the handle's volume writer."""

    def __init__(self, handle: Handle, bind_timeout: float, *, check_period: float = CHECK_PERIOD) -> None:
        self.handle = handle
        self.objects = handle.objects
        self.pvc_cache = AssumeCache(handle.objects, PERSISTENT_VOLUME_CLAIM, "persistentvolumeclaims")
        self.pv_cache = PVAssumeCache(handle.objects)
        self.bind_timeout = bind_timeout
        self.check_period = check_period
        # The scheduler's handle reports metrics through its observer; test handles may have none.
        self.observer: Observer = getattr(handle, "observer", None) or Observer()

    # ------------------------------------------------------------------ PreFilter

    def _is_pvc_bound(self, namespace: str, name: str) -> tuple[bool, JSON]:
        key = f"{namespace}/{name}"
        try:
            pvc = self.pvc_cache.get(key)
        except StorageError as exc:
            raise StorageError(f'error getting PVC "{key}": {exc}') from exc
        return is_claim_fully_bound(pvc), pvc

    def _claims_of(self, pod: PodInfo) -> list[tuple[bool, JSON]]:
        """isVolumeBound for each PVC-backed volume: (fully bound, claim as the assume cache holds it)."""
        out = []
        for _, claim_name, ephemeral in pod_claim_volumes(pod):
            bound, pvc = self._is_pvc_bound(pod.namespace, claim_name)
            if ephemeral:
                err = volume_is_for_pod(pod, pvc)
                if err is not None:
                    raise StorageError(err)
            out.append((bound, pvc))
        return out

    def get_pod_volume_claims(self, pod: PodInfo) -> PodVolumeClaims:
        """GetPodVolumeClaims: bound, delayed (WaitForFirstConsumer, not pre-bound) and immediate claims,
        and the PVs of each delayed claim's class."""
        claims = PodVolumeClaims()
        for bound, pvc in self._claims_of(pod):
            if bound:
                claims.bound_claims.append(pvc)
            elif is_delay_binding_mode(pvc, self.objects) and not spec(pvc).get("volumeName"):
                claims.unbound_claims_delay_binding.append(pvc)
            else:
                claims.unbound_claims_immediate.append(pvc)
        for pvc in claims.unbound_claims_delay_binding:
            cls = claim_class(pvc)
            claims.unbound_volumes_delay_binding[cls] = self.pv_cache.list_pvs(cls)
        return claims

    def all_bound(self, pod: PodInfo) -> bool:
        """arePodVolumesBound: every PVC-backed volume's claim is fully bound (assumed versions count)."""
        try:
            return all(bound for bound, _ in self._claims_of(pod))
        except StorageError:
            return False

    # ------------------------------------------------------------------ Filter

    def find_pod_volumes(self, pod: PodInfo, claims: PodVolumeClaims, node: NodeInfo) -> tuple[PodVolumes, list[str]]:
        """FindPodVolumes: the decision for this node, or the reasons it cannot work (StorageError: Error)."""
        try:
            return self._find_pod_volumes(claims, node)
        except StorageError:
            self.observer.volume_scheduling_stage_error("predicate")
            raise

    def _find_pod_volumes(self, claims: PodVolumeClaims, node: NodeInfo) -> tuple[PodVolumes, list[str]]:
        volumes = PodVolumes()
        labels = node.node.labels if node.node is not None else {}
        name = node.name
        bound_ok = unbound_ok = sufficient = pvs_found = True
        if claims.bound_claims:
            bound_ok, pvs_found = self._check_bound_claims(claims.bound_claims, name, labels)
        if claims.unbound_claims_delay_binding:
            unbound_ok, sufficient = self._check_unbound(claims, name, labels, volumes)
        reasons = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not sufficient:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return volumes, reasons

    def _check_bound_claims(self, claims: list[JSON], node_name: str, labels: Mapping[str, str]) -> tuple[bool, bool]:
        """checkBoundClaims: (every bound PV's node affinity admits the node, every bound PV exists)."""
        csi_node = self.objects.get(CSI_NODE, "", node_name)
        for pvc in claims:
            try:
                pv = self.pv_cache.get(str(spec(pvc).get("volumeName") or ""))
            except NotFoundError:
                return True, False
            pv = try_translate_pv_to_csi(pv, csi_node)
            if not check_node_affinity(pv, labels):
                return False, True
        return True, True

    def _check_unbound(
        self, claims: PodVolumeClaims, node_name: str, labels: Mapping[str, str], volumes: PodVolumes
    ) -> tuple[bool, bool]:
        """The delayed claims on this node: (satisfied, sufficient storage); fills `volumes`."""
        to_match: list[JSON] = []
        to_provision: list[JSON] = []
        for pvc in claims.unbound_claims_delay_binding:
            selected = annotations_of(pvc).get(ANN_SELECTED_NODE)
            if selected is not None:
                if selected != node_name:
                    return False, True  # fast path: provisioning was already asked for another node
                to_provision.append(pvc)
            else:
                to_match.append(pvc)
        satisfied, sufficient = True, True
        if to_match:
            satisfied, bindings, unmatched = self._find_matching_volumes(claims, to_match, labels)
            volumes.static_bindings = bindings
            to_provision.extend(unmatched)
        if to_provision:
            satisfied, sufficient, provisions = self._check_volume_provisions(claims, to_provision, labels)
            volumes.dynamic_provisions = provisions
        return satisfied, sufficient

    def _find_matching_volumes(
        self, claims: PodVolumeClaims, to_match: list[JSON], labels: Mapping[str, str]
    ) -> tuple[bool, list[BindingInfo], list[JSON]]:
        """findMatchingVolumes: claims by increasing request, each taking the smallest fitting PV not chosen
        already for this pod; (all matched, bindings, claims left to provision)."""
        if claims.match_order is None:  # the same claims on every node (those without selected-node)
            sized = [(storage_request(pvc) or 0, pvc) for pvc in to_match]
            claims.match_order = [(key_of(pvc), pvc, size) for size, pvc in sorted(sized, key=lambda s: s[0])]
        chosen: dict[str, JSON] = {}
        bindings: list[BindingInfo] = []
        unmatched: list[JSON] = []
        for key, pvc, size in claims.match_order:
            candidates = claims.candidates.get(key)
            if candidates is None:
                pvs = claims.unbound_volumes_delay_binding.get(claim_class(pvc), [])
                candidates = CandidateIndex(match_candidates(pvc, pvs, scheduler_path=True, delay_binding=True))
                claims.candidates[key] = candidates
            cand = pick_candidate(candidates.for_node(labels), labels, chosen)
            if cand is None:
                unmatched.append(pvc)
                continue
            chosen[cand.name] = cand.pv
            bindings.append(BindingInfo(pvc, cand.pv, (size, cand.capacity)))
        return not unmatched, bindings, unmatched

    def _check_volume_provisions(
        self, claims: PodVolumeClaims, to_provision: list[JSON], labels: Mapping[str, str]
    ) -> tuple[bool, bool, list[DynamicProvision]]:
        """checkVolumeProvisions: (provisionable, sufficient storage, provisions) for claims without a PV."""
        provisions: list[DynamicProvision] = []
        for pvc in to_provision:
            class_name = claim_class(pvc)
            if not class_name:
                raise StorageError(f'no class for claim "{key_of(pvc)}"')
            cls = self.objects.get(STORAGE_CLASS, "", class_name)
            if cls is None:
                raise StorageError(f'failed to find storage class "{class_name}"')
            provisioner = str(cls.get("provisioner") or "")
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not match_topology_selector_terms(cls.get("allowedTopologies"), labels):
                return False, True, []
            enough, capacity = self._has_enough_capacity(claims, provisioner, pvc, class_name, labels)
            if not enough:
                return True, False, []
            provisions.append(DynamicProvision(pvc, capacity))
        return True, True, provisions

    def _has_enough_capacity(
        self, claims: PodVolumeClaims, provisioner: str, pvc: JSON, class_name: str, labels: Mapping[str, str]
    ) -> tuple[bool, JSON | None]:
        """hasEnoughCapacity: only for CSI drivers with storageCapacity; some CSIStorageCapacity of the class,
        reachable from the node, must allow a volume of the requested size."""
        size = storage_request(pvc)
        if size is None:
            return True, None
        driver = self.objects.get(CSI_DRIVER, "", provisioner)
        if driver is None or spec(driver).get("storageCapacity") is not True:
            return True, None
        if claims.capacities is None:
            claims.capacities = self.objects.list(CSI_STORAGE_CAPACITY)
        for capacity in claims.capacities:
            if capacity.get("storageClassName") != class_name:
                continue
            limit = volume_limit(capacity)
            if limit is None or limit < size:
                continue
            if node_has_access(capacity, labels):
                return True, capacity
        return False, None

    # ------------------------------------------------------------------ Reserve / Unreserve

    def assume_pod_volumes(self, pod: PodInfo, node_name: str, volumes: PodVolumes) -> bool:
        """AssumePodVolumes: pre-bind the chosen PVs and annotate the claims to provision, in the caches only;
        True when every claim is already fully bound (nothing for PreBind to do)."""
        try:
            return self._assume_pod_volumes(pod, node_name, volumes)
        except StorageError:
            self.observer.volume_scheduling_stage_error("assume")
            raise

    def _assume_pod_volumes(self, pod: PodInfo, node_name: str, volumes: PodVolumes) -> bool:
        if self.all_bound(pod):
            return True
        new_bindings: list[BindingInfo] = []
        for binding in volumes.static_bindings:
            new_pv, dirty = bind_volume_to_claim(binding.pv, binding.pvc)
            if dirty:
                try:
                    self.pv_cache.assume(new_pv)
                except StorageError:
                    self._revert_pvs(new_bindings)
                    raise
            new_bindings.append(BindingInfo(binding.pvc, new_pv))
        new_provisions: list[DynamicProvision] = []
        for provision in volumes.dynamic_provisions:
            clone = copy.deepcopy(provision.pvc)
            clone.setdefault("metadata", {}).setdefault("annotations", {})[ANN_SELECTED_NODE] = node_name
            try:
                self.pvc_cache.assume(clone)
            except StorageError:
                self._revert_pvs(new_bindings)
                self._revert_pvcs([p.pvc for p in new_provisions])
                raise
            new_provisions.append(DynamicProvision(clone))
        volumes.static_bindings = new_bindings
        volumes.dynamic_provisions = new_provisions
        return False

    def revert_assumed_pod_volumes(self, volumes: PodVolumes) -> None:
        """RevertAssumedPodVolumes: drop the assumptions (the API is never rolled back)."""
        self._revert_pvs(volumes.static_bindings)
        self._revert_pvcs([p.pvc for p in volumes.dynamic_provisions])

    def _revert_pvs(self, bindings: list[BindingInfo]) -> None:
        for binding in bindings:
            self.pv_cache.restore(binding.pv)

    def _revert_pvcs(self, claims: list[JSON]) -> None:
        for pvc in claims:
            self.pvc_cache.restore(pvc)

    # ------------------------------------------------------------------ PreBind

    async def bind_pod_volumes(self, pod: PodInfo, volumes: PodVolumes) -> None:
        """BindPodVolumes: write the assumed PVs and claims, then wait (bindTimeoutSeconds) until every claim
        is fully bound. Raises with upstream's message when binding fails, is undone or times out."""
        try:
            await self._bind_pod_volumes(pod, volumes)
        except Exception:
            self.observer.volume_scheduling_stage_error("bind")
            raise

    async def _bind_pod_volumes(self, pod: PodInfo, volumes: PodVolumes) -> None:
        bindings = volumes.static_bindings
        claims = [p.pvc for p in volumes.dynamic_provisions]
        await self._bind_api_update(pod, bindings, claims)
        try:
            if getattr(self.handle.volume_writer, "settles_synchronously", False):  # the in-memory cluster
                if not self.check_bindings(pod, bindings, claims):
                    raise TimeoutError  # nothing can change any more: what the timeout would end in, at once
                return
            async with asyncio.timeout(self.bind_timeout):
                await self._wait_bound(pod, bindings, claims)
        except TimeoutError:
            raise StorageError("binding volumes: context deadline exceeded") from None
        except StorageError as exc:
            raise StorageError(f"binding volumes: {exc}") from exc

    async def _bind_api_update(self, pod: PodInfo, bindings: list[BindingInfo], claims: list[JSON]) -> None:
        """bindAPIUpdate: PUT each PV, then each claim; on failure the unwritten ones' assumptions are dropped."""
        writer = self.handle.volume_writer
        done_bindings = done_claims = 0
        try:
            for binding in bindings:
                binding.pv = await writer.update_persistent_volume(binding.pv)
                log.log(
                    V2,
                    "Updated PersistentVolume with claim. Waiting for binding to complete",
                    extra={"pod": pod.key, "pv": name_of(binding.pv), "pvc": key_of(binding.pvc)},
                )
                done_bindings += 1
            for i, pvc in enumerate(claims):
                claims[i] = await writer.update_persistent_volume_claim(pvc)
                log.log(V4, "Updated claim to trigger volume provisioning", extra={"pod": pod.key, "pvc": key_of(pvc)})
                done_claims += 1
        finally:
            self._revert_pvs(bindings[done_bindings:])
            self._revert_pvcs(claims[done_claims:])

    async def _wait_bound(self, pod: PodInfo, bindings: list[BindingInfo], claims: list[JSON]) -> None:
        """Check after each change of a PV or PVC in the store, and at least every check_period."""
        loop = asyncio.get_running_loop()
        objects = self.objects
        while True:
            seen = (objects.generation(PERSISTENT_VOLUME), objects.generation(PERSISTENT_VOLUME_CLAIM))
            if self.check_bindings(pod, bindings, claims):
                return
            deadline = loop.time() + self.check_period
            while loop.time() < deadline:
                await asyncio.sleep(min(CHANGE_TICK, self.check_period))
                now = (objects.generation(PERSISTENT_VOLUME), objects.generation(PERSISTENT_VOLUME_CLAIM))
                if now != seen:
                    break

    def check_bindings(self, pod: PodInfo, bindings: list[BindingInfo], claims: list[JSON]) -> bool:
        """checkBindings: True when every claim is fully bound; StorageError when binding must be retried."""
        node_info = self.handle.snapshot().get(pod.node_name)
        if node_info is None or node_info.node is None:
            raise StorageError(f'failed to get node "{pod.node_name}": node "{pod.node_name}" not found')
        labels = node_info.node.labels
        csi_node = self.objects.get(CSI_NODE, "", pod.node_name)
        if not self.handle.pod_exists(pod.uid):
            raise StorageError(f'pod does not exist any more: pod "{pod.name}" not found')
        for binding in bindings:
            try:
                pv = self.pv_cache.get_api_obj(name_of(binding.pv))
                pvc = self.pvc_cache.get_api_obj(key_of(binding.pvc))
            except StorageError as exc:
                raise StorageError(f"failed to check binding: {exc}") from exc
            if newer_than(binding.pv, pv):
                return False
            pv = try_translate_pv_to_csi(pv, csi_node)
            self._check_pv_node(pv, labels, pod.node_name)
            ref = spec(pv).get("claimRef")
            if not isinstance(ref, Mapping) or not ref.get("uid"):
                raise StorageError(f'ClaimRef got reset for pv "{name_of(pv)}"')
            if not is_claim_fully_bound(pvc):
                return False
        for claim in claims:
            try:
                pvc = self.pvc_cache.get_api_obj(key_of(claim))
            except StorageError as exc:
                raise StorageError(f"failed to check provisioning pvc: {exc}") from exc
            if newer_than(claim, pvc):
                return False
            ann = annotations_of(pvc)
            if not ann:
                raise StorageError(f'selectedNode annotation reset for PVC "{name_of(pvc)}"')
            if ann.get(ANN_SELECTED_NODE) != pod.node_name:
                raise StorageError(f'provisioning failed for PVC "{name_of(pvc)}"')
            volume_name = str(spec(pvc).get("volumeName") or "")
            if volume_name:
                try:
                    pv = self.pv_cache.get_api_obj(volume_name)
                except NotFoundError:
                    return False  # the PV may not have reached the informer yet
                pv = try_translate_pv_to_csi(pv, csi_node)
                self._check_pv_node(pv, labels, pod.node_name)
            if not is_claim_fully_bound(pvc):
                return False
        log.log(V2, "All PVCs for pod are bound", extra={"pod": pod.key})
        return True

    @staticmethod
    def _check_pv_node(pv: JSON, labels: Mapping[str, str], node_name: str) -> None:
        err = node_affinity_error(pv, labels)
        if err is not None:
            raise StorageError(f'pv "{name_of(pv)}" node affinity doesn\'t match node "{node_name}": {err}')


def node_has_access(capacity: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """nodeHasAccess: the capacity's nodeTopology selector matches the node (no topology: unavailable)."""
    topology = capacity.get("nodeTopology")
    if topology is None:
        return False
    try:
        return compile_label_selector(topology).matches(labels)
    except SelectorError:
        return False
