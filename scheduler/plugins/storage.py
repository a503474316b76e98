"""What the four volume plugins share about PVs, PVCs and StorageClasses (not a plugin).

Our counterpart of component-helpers `storage/volume` (pv_helpers.go, helpers.go) and `storage/ephemeral`
v0.37, over the raw API dicts of the object store: the annotations the PV controller and the scheduler
exchange, which class a claim asks for, whether a claim waits for its first consumer, PV node affinity,
binding a PV to a claim, and `FindMatchingVolume` (the smallest available PV that satisfies a claim).

The lister "not found" texts are upstream's (`persistentvolumeclaim "c" not found`, `storageclass.storage.k8s.io
"s" not found`): they reach users verbatim as scheduling failure reasons.
"""

from __future__ import annotations

import collections
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from scheduler.framework.labels import (
    SelectorError,
    compile_label_selector,
    requirement_errors,
    requirement_matcher,
)
from scheduler.framework.objects import (
    CSI_DRIVER,
    CSI_NODE,
    JSON,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    ObjectLister,
)
from scheduler.framework.quantity import QuantityError, value_of
from scheduler.framework.types import PodInfo

# component-helpers storage/volume annotations and values
ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
ANN_DYNAMICALLY_PROVISIONED: Final = "pv.kubernetes.io/provisioned-by"
ANN_STORAGE_PROVISIONER: Final = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER: Final = "volume.beta.kubernetes.io/storage-provisioner"
NOT_SUPPORTED_PROVISIONER: Final = "kubernetes.io/no-provisioner"
BETA_STORAGE_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"
MIGRATED_PLUGINS_ANNOTATION: Final = "storage.alpha.kubernetes.io/migrated-plugins"  # v1.MigratedPluginsAnnotationKey

WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD: Final = "ReadWriteOncePod"
VOLUME_AVAILABLE: Final = "Available"
CLAIM_LOST: Final = "Lost"
FILESYSTEM: Final = "Filesystem"

# The GroupResource each lister reports in its NotFound error (client-go listers: corev1/storagev1.Resource()).
RESOURCE_OF: Final[dict[str, str]] = {
    PERSISTENT_VOLUME_CLAIM: "persistentvolumeclaim",
    PERSISTENT_VOLUME: "persistentvolume",
    STORAGE_CLASS: "storageclass.storage.k8s.io",
    CSI_NODE: "csinode.storage.k8s.io",
    CSI_DRIVER: "csidriver.storage.k8s.io",
}


class StorageError(Exception):
    """A storage lookup or rule failed; the message is upstream's error text (it reaches users)."""


class NotFoundError(StorageError):
    """apierrors.IsNotFound: the object does not exist (the message is the lister's)."""


def not_found(kind: str, name: str) -> NotFoundError:
    """The lister error for a missing object: `persistentvolumeclaim "c" not found`."""
    return NotFoundError(f'{RESOURCE_OF.get(kind, kind.lower())} "{name}" not found')


def get_or_raise(objects: ObjectLister, kind: str, namespace: str, name: str) -> JSON:
    """A lister Get: the object, or NotFoundError with the lister's text."""
    obj = objects.get(kind, namespace, name)
    if obj is None:
        raise not_found(kind, name)
    return obj


# ---------------------------------------------------------------------------------------------------------
# Field access on raw objects (absent fields read as Go's zero values)


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("spec")
    return value if isinstance(value, Mapping) else {}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "")


def key_of(obj: Mapping[str, Any]) -> str:
    """cache.MetaObjectToName: "namespace/name", or "name" for cluster-scoped objects."""
    ns = namespace_of(obj)
    return f"{ns}/{name_of(obj)}" if ns else name_of(obj)


def resource_version(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("resourceVersion") or "")


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    value = meta(obj).get("annotations")
    return value if isinstance(value, Mapping) else {}


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    value = meta(obj).get("labels")
    return value if isinstance(value, Mapping) else {}


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return meta(obj).get("deletionTimestamp") is not None


def phase_of(obj: Mapping[str, Any]) -> str:
    status = obj.get("status")
    return str(status.get("phase") or "") if isinstance(status, Mapping) else ""


def quantity_bytes(raw: Any, where: str) -> int:
    """A storage quantity in bytes (Quantity.Value()); StorageError naming `where` when malformed."""
    try:
        return value_of(raw)
    except (QuantityError, ValueError, TypeError) as exc:
        raise StorageError(f"{where}: {exc}") from exc


def storage_request(pvc: Mapping[str, Any]) -> int | None:
    """spec.resources.requests.storage in bytes; None when the claim requests none."""
    resources = spec(pvc).get("resources")
    requests = resources.get("requests") if isinstance(resources, Mapping) else None
    if not isinstance(requests, Mapping) or "storage" not in requests:
        return None
    return quantity_bytes(requests["storage"], f"PersistentVolumeClaim {key_of(pvc)} spec.resources.requests.storage")


def pv_capacity(pv: Mapping[str, Any]) -> int:
    """spec.capacity.storage in bytes (0 when absent, as the zero Quantity)."""
    capacity = spec(pv).get("capacity")
    if not isinstance(capacity, Mapping) or "storage" not in capacity:
        return 0
    return quantity_bytes(capacity["storage"], f"PersistentVolume {name_of(pv)} spec.capacity.storage")


def access_modes(obj: Mapping[str, Any]) -> list[str]:
    modes = spec(obj).get("accessModes")
    return [str(m) for m in modes] if isinstance(modes, list) else []


# ---------------------------------------------------------------------------------------------------------
# helpers.go


def claim_class(pvc: Mapping[str, Any]) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation first, then spec.storageClassName ("" if none)."""
    ann = annotations_of(pvc)
    if BETA_STORAGE_CLASS_ANNOTATION in ann:
        return str(ann[BETA_STORAGE_CLASS_ANNOTATION])
    value = spec(pvc).get("storageClassName")
    return str(value) if value is not None else ""


def volume_class(pv: Mapping[str, Any]) -> str:
    """GetPersistentVolumeClass: the beta annotation first, then spec.storageClassName."""
    ann = annotations_of(pv)
    if BETA_STORAGE_CLASS_ANNOTATION in ann:
        return str(ann[BETA_STORAGE_CLASS_ANNOTATION])
    return str(spec(pv).get("storageClassName") or "")


# Compiled PV node affinities, keyed by the identity of the nodeAffinity dict (objects in the store are
# never mutated: an update is a new dict). The entry keeps the dict alive so its id cannot be reused.
_AFFINITY_CACHE: collections.OrderedDict[int, tuple[Any, Any]] = collections.OrderedDict()
_AFFINITY_CACHE_LIMIT: Final = 50_000


def _compiled_affinity(required: Any) -> Any:
    from scheduler.plugins.node_affinity import NodeSelectorMatcher

    key = id(required)
    hit = _AFFINITY_CACHE.get(key)
    if hit is not None and hit[0] is required:
        return hit[1]
    matcher = NodeSelectorMatcher.compile(required, "spec.nodeAffinity.required")
    _AFFINITY_CACHE[key] = (required, matcher)
    if len(_AFFINITY_CACHE) > _AFFINITY_CACHE_LIMIT:
        _AFFINITY_CACHE.popitem(last=False)
    return matcher


def node_affinity_error(pv: Mapping[str, Any], node_labels: Mapping[str, str]) -> str | None:
    """CheckNodeAffinity: None when the node (known only by its labels) satisfies spec.nodeAffinity.required,
    else upstream's error ("no matching NodeSelectorTerms", or the broken terms' errors).

    Upstream matches a Node built from the labels alone, so a matchFields term on metadata.name is not
    checked (an empty name skips field selectors), and a broken term never matches.
    """
    affinity = spec(pv).get("nodeAffinity")
    if not isinstance(affinity, Mapping):
        return None
    required = affinity.get("required")
    if required is None:
        return None
    matched, err = _compiled_affinity(required).match(node_labels, "")
    if matched:
        return None
    return err or "no matching NodeSelectorTerms"


def check_node_affinity(pv: Mapping[str, Any], node_labels: Mapping[str, str]) -> bool:
    """Whether CheckNodeAffinity passes (see node_affinity_error)."""
    return node_affinity_error(pv, node_labels) is None


def is_delay_binding_mode(pvc: Mapping[str, Any], objects: ObjectLister) -> bool:
    """IsDelayBindingMode: the claim's class exists and is WaitForFirstConsumer (no class: Immediate)."""
    class_name = claim_class(pvc)
    if not class_name:
        return False
    cls = objects.get(STORAGE_CLASS, "", class_name)
    if cls is None:
        return False
    mode = cls.get("volumeBindingMode")
    if mode is None:
        raise StorageError(f'VolumeBindingMode not set for StorageClass "{class_name}"')
    return bool(mode == WAIT_FOR_FIRST_CONSUMER)


def is_claim_fully_bound(pvc: Mapping[str, Any]) -> bool:
    """isPVCFullyBound: spec.volumeName set and the PV controller finished binding (bind-completed)."""
    return bool(spec(pvc).get("volumeName")) and ANN_BIND_COMPLETED in annotations_of(pvc)


def match_topology_selector_terms(terms: Any, node_labels: Mapping[str, str]) -> bool:
    """v1helper.MatchTopologySelectorTerms: no terms match all; terms are ORed, a term's expressions ANDed
    (key In values); an empty or invalid term matches nothing."""
    if not terms:
        return True
    if not isinstance(terms, list):
        return False
    for term in terms:
        exprs = term.get("matchLabelExpressions") if isinstance(term, Mapping) else None
        if not exprs or not isinstance(exprs, list):
            continue
        ok = True
        for expr in exprs:
            if not isinstance(expr, Mapping):
                ok = False
                break
            key = expr.get("key")
            values = expr.get("values") or []
            if not isinstance(values, list) or requirement_errors(key, "In", [str(v) for v in values]):
                ok = False
                break
            if not requirement_matcher(str(key), "In", [str(v) for v in values])(node_labels):
                ok = False
                break
        if ok:
            return True
    return False


# ---------------------------------------------------------------------------------------------------------
# pv_helpers.go: binding


def is_volume_bound_to_claim(pv: Mapping[str, Any], pvc: Mapping[str, Any]) -> bool:
    """IsVolumeBoundToClaim: claimRef names this claim (and its uid, when the ref carries one)."""
    ref = spec(pv).get("claimRef")
    if not isinstance(ref, Mapping):
        return False
    if name_of(pvc) != ref.get("name") or namespace_of(pvc) != ref.get("namespace"):
        return False
    ref_uid = ref.get("uid") or ""
    return not (ref_uid and str(meta(pvc).get("uid") or "") != ref_uid)


def claim_reference(pvc: Mapping[str, Any]) -> JSON:
    """reference.GetReference(claim): what a PV's spec.claimRef holds."""
    ref: JSON = {
        "kind": "PersistentVolumeClaim",
        "namespace": namespace_of(pvc),
        "name": name_of(pvc),
        "apiVersion": "v1",
    }
    uid = meta(pvc).get("uid")
    if uid:
        ref["uid"] = uid
    rv = resource_version(pvc)
    if rv:
        ref["resourceVersion"] = rv
    return ref


def bind_volume_to_claim(pv: JSON, pvc: Mapping[str, Any]) -> tuple[JSON, bool]:
    """GetBindVolumeToClaim: a copy of pv pre-bound to pvc, and whether anything changed ("dirty")."""
    should_set_bound_by_controller = not is_volume_bound_to_claim(pv, pvc)
    clone = copy.deepcopy(pv)
    dirty = False
    ref = spec(pv).get("claimRef")
    if (
        not isinstance(ref, Mapping)
        or ref.get("name") != name_of(pvc)
        or ref.get("namespace") != namespace_of(pvc)
        or (ref.get("uid") or "") != str(meta(pvc).get("uid") or "")
    ):
        clone.setdefault("spec", {})["claimRef"] = claim_reference(pvc)
        dirty = True
    ann = clone.setdefault("metadata", {}).setdefault("annotations", {})
    if should_set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in ann:
        ann[ANN_BOUND_BY_CONTROLLER] = "yes"
        dirty = True
    if not ann:
        del clone["metadata"]["annotations"]
    return clone, dirty


def volume_mode_mismatch(pvc: Mapping[str, Any], pv: Mapping[str, Any]) -> bool:
    """CheckVolumeModeMismatches: a missing volumeMode is Filesystem on both sides."""
    return (spec(pvc).get("volumeMode") or FILESYSTEM) != (spec(pv).get("volumeMode") or FILESYSTEM)


def access_modes_satisfied(pvc: Mapping[str, Any], pv: Mapping[str, Any]) -> bool:
    """CheckAccessModes: the PV offers every access mode the claim asks for."""
    offered = set(access_modes(pv))
    return all(mode in offered for mode in access_modes(pvc))


# ---------------------------------------------------------------------------------------------------------
# pv_helpers.go: FindMatchingVolume, split into a node-independent pass and a per-node pick so the
# scheduler filters each claim's PVs once per cycle and only checks node affinity per node.


@dataclass(frozen=True, slots=True)
class Candidate:
    """A PV that passed every node-independent check of FindMatchingVolume for one claim."""

    pv: JSON
    name: str
    capacity: int
    prebound: bool  # its claimRef already names the claim: it wins (or loses) outright


def match_candidates(
    pvc: Mapping[str, Any],
    volumes: Sequence[JSON],
    *,
    scheduler_path: bool,
    delay_binding: bool,
    vac_enabled: bool = True,
) -> list[Candidate]:
    """The PVs of `volumes` that could satisfy pvc on some node, in order (FindMatchingVolume minus the
    excluded set and node affinity). `scheduler_path` is upstream's node != nil."""
    claim_vac = str(spec(pvc).get("volumeAttributesClassName") or "")
    if not vac_enabled and claim_vac:
        raise StorageError(
            f"unsupported volumeAttributesClassName is set on claim {namespace_of(pvc)}/{name_of(pvc)} "
            "when the feature-gate VolumeAttributesClass is disabled"
        )
    requested = storage_request(pvc) or 0
    requested_class = claim_class(pvc)
    selector = None
    raw_selector = spec(pvc).get("selector")
    if raw_selector is not None:
        try:
            selector = compile_label_selector(raw_selector)
        except SelectorError as exc:
            raise StorageError(
                f"error creating internal label selector for claim: {namespace_of(pvc)}/{name_of(pvc)}: {exc}"
            ) from exc
    out: list[Candidate] = []
    for pv in volumes:
        pv_spec = spec(pv)
        ref = pv_spec.get("claimRef")
        if ref is not None and not is_volume_bound_to_claim(pv, pvc):
            continue
        qty = pv_capacity(pv)
        if qty < requested:
            continue
        if volume_mode_mismatch(pvc, pv):
            continue
        volume_vac = str(pv_spec.get("volumeAttributesClassName") or "")
        if vac_enabled and claim_vac != volume_vac:
            continue
        if not vac_enabled and volume_vac:
            continue
        if is_deleting(pv):
            continue
        prebound = ref is not None  # bound to this claim (checked above)
        if not prebound:
            if not scheduler_path and delay_binding:
                continue
            if phase_of(pv) != VOLUME_AVAILABLE:
                continue
            if selector is not None and not selector.matches(labels_of(pv)):
                continue
            if volume_class(pv) != requested_class:
                continue
            if scheduler_path and not access_modes_satisfied(pvc, pv):
                continue
        out.append(Candidate(pv, name_of(pv), qty, prebound))
    return out


def pick_volume(
    candidates: Sequence[Candidate], node_labels: Mapping[str, str] | None, excluded: Mapping[str, Any]
) -> JSON | None:
    """The PV FindMatchingVolume returns among candidates: the first pre-bound one if its node affinity
    holds (None if it does not), else the smallest whose node affinity holds (node_labels None: no check)."""
    smallest: Candidate | None = None
    for cand in candidates:
        if cand.name in excluded:
            continue
        valid = node_labels is None or check_node_affinity(cand.pv, node_labels)
        if cand.prebound:
            return cand.pv if valid else None
        if not valid:
            continue
        if smallest is None or smallest.capacity > cand.capacity:
            smallest = cand
    return smallest.pv if smallest is not None else None


def find_matching_volume(
    pvc: Mapping[str, Any],
    volumes: Sequence[JSON],
    node_labels: Mapping[str, str] | None,
    excluded: Mapping[str, Any],
    delay_binding: bool,
    vac_enabled: bool = True,
) -> JSON | None:
    """FindMatchingVolume: the best PV for the claim (node_labels None is the PV controller's path)."""
    candidates = match_candidates(
        pvc, volumes, scheduler_path=node_labels is not None, delay_binding=delay_binding, vac_enabled=vac_enabled
    )
    return pick_volume(candidates, node_labels, excluded)


# ---------------------------------------------------------------------------------------------------------
# storage/ephemeral


def pod_claim_volumes(pod: PodInfo) -> list[tuple[JSON, str, bool]]:
    """(volume, claim name, is ephemeral) for each volume that uses a PVC, in spec order.

    A generic ephemeral volume's claim is `<pod>-<volume>` (ephemeral.VolumeClaimName).
    """
    out: list[tuple[JSON, str, bool]] = []
    for vol in pod.volumes:
        source = vol.get("persistentVolumeClaim")
        if isinstance(source, Mapping):
            out.append((vol, str(source.get("claimName") or ""), False))
        elif vol.get("ephemeral") is not None:
            out.append((vol, f"{pod.name}-{vol.get('name') or ''}", True))
    return out


def volume_is_for_pod(pod: PodInfo, pvc: Mapping[str, Any]) -> str | None:
    """ephemeral.VolumeIsForPod: None when the pod controls the claim, else upstream's error text."""
    controlled = False
    for ref in meta(pvc).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            controlled = str(ref.get("uid") or "") == pod.uid
            break
    if namespace_of(pvc) != pod.namespace or not controlled:
        return (
            f"PVC {namespace_of(pvc)}/{name_of(pvc)} was not created for pod {pod.namespace}/{pod.name} "
            "(pod is not owner)"
        )
    return None
