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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from scheduler import caching
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


# ---------------------------------------------------------------------------------------------------------
# Field access on raw objects (absent fields read as Go's zero values)


_EMPTY: Final[Mapping[str, Any]] = {}


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    if value.__class__ is dict:  # the common case, without an ABC isinstance check (hot in Filter)
        return value
    return value if isinstance(value, Mapping) else _EMPTY


def spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("spec")
    if value.__class__ is dict:
        return value
    return value if isinstance(value, Mapping) else _EMPTY


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
caching.register_clear(_AFFINITY_CACHE.clear)


def _compiled_affinity(required: Any) -> Any:
    from scheduler.framework.node_selector import NodeSelectorMatcher

    if not caching.ENABLED:  # the plain path: compiled on every call
        return NodeSelectorMatcher.compile(required, "spec.nodeAffinity.required")
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


LabelCheck = Callable[[Mapping[str, str]], bool]


def _always(labels: Mapping[str, str]) -> bool:
    return True


def node_affinity_check(pv: Mapping[str, Any]) -> tuple[LabelCheck, tuple[str, frozenset[str]] | None]:
    """CheckNodeAffinity compiled for one PV: (labels -> admits, an index hint). The hint is (key, values) when
    the affinity is a single term requiring `key In values`: only nodes with such a label can be admitted, so
    callers may look candidates up by the node's value instead of trying each one."""
    affinity = spec(pv).get("nodeAffinity")
    required = affinity.get("required") if isinstance(affinity, Mapping) else None
    if required is None:
        return _always, None
    match = _compiled_affinity(required).matcher()
    hint = None
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    term = terms[0] if isinstance(terms, list) and len(terms) == 1 else None
    if isinstance(term, Mapping) and not term.get("matchFields"):
        for expr in term.get("matchExpressions") or []:
            values = expr.get("values") if isinstance(expr, Mapping) else None
            if expr.get("operator") == "In" and isinstance(values, list) and isinstance(expr.get("key"), str):
                hint = (str(expr["key"]), frozenset(str(v) for v in values))
                break
    return (lambda labels: match(labels, "")), hint


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
    admits: LabelCheck = _always  # its node affinity, compiled
    hint: tuple[str, frozenset[str]] | None = None  # see node_affinity_check


class CandidateIndex:
    """A claim's candidates looked up per node: those whose affinity requires `key In values` are filed under
    each value, so a node sees only the candidates its labels could satisfy (plus every pre-bound candidate and
    every candidate without such a hint), in the original order. Local PVs pinned by hostname cost O(1) per
    node instead of a pass over every PV."""

    __slots__ = ("_always", "_by_key", "candidates")

    def __init__(self, candidates: list[Candidate]) -> None:
        self.candidates = candidates
        self._always: list[int] = []
        self._by_key: dict[str, dict[str, list[int]]] = {}
        for i, cand in enumerate(candidates):
            if cand.prebound or cand.hint is None:
                self._always.append(i)
                continue
            key, values = cand.hint
            table = self._by_key.setdefault(key, {})
            for value in values:
                table.setdefault(value, []).append(i)

    def __len__(self) -> int:
        return len(self.candidates)

    def for_node(self, labels: Mapping[str, str]) -> list[Candidate]:
        if not self._by_key or not caching.ENABLED:  # disabled: every candidate (their affinity is checked anyway)
            return self.candidates
        picked = list(self._always)
        sources = 1 if picked else 0
        for key, table in self._by_key.items():
            value = labels.get(key)
            if value is not None:
                hits = table.get(value)
                if hits:
                    picked.extend(hits)
                    sources += 1
        if sources > 1:
            picked = sorted(set(picked))
        cands = self.candidates
        return [cands[i] for i in picked]


@dataclass(frozen=True, slots=True)
class VolumeFacts:
    """What FindMatchingVolume reads of one PV object, parsed once per object (the store never mutates one)."""

    pv: JSON
    name: str
    capacity: int
    volume_mode: str
    vac: str
    deleting: bool
    available: bool
    storage_class: str
    access_modes: frozenset[str]
    labels: Mapping[str, str]
    claim_ref: tuple[str, str, str] | None  # (namespace, name, uid)
    admits: LabelCheck
    hint: tuple[str, frozenset[str]] | None

    @classmethod
    def of(cls, pv: JSON) -> VolumeFacts:
        pv_spec = spec(pv)
        raw_ref = pv_spec.get("claimRef")
        ref = None
        if raw_ref is not None:
            r = raw_ref if isinstance(raw_ref, Mapping) else {}
            ref = (str(r.get("namespace") or ""), str(r.get("name") or ""), str(r.get("uid") or ""))
        admits, hint = node_affinity_check(pv)
        return cls(
            pv,
            name_of(pv),
            pv_capacity(pv),
            str(pv_spec.get("volumeMode") or FILESYSTEM),
            str(pv_spec.get("volumeAttributesClassName") or ""),
            is_deleting(pv),
            phase_of(pv) == VOLUME_AVAILABLE,
            volume_class(pv),
            frozenset(access_modes(pv)),
            labels_of(pv),
            ref,
            admits,
            hint,
        )


_FACTS_CACHE: collections.OrderedDict[int, VolumeFacts] = collections.OrderedDict()
_FACTS_CACHE_LIMIT: Final = 100_000
caching.register_clear(_FACTS_CACHE.clear)


def volume_facts(pv: JSON) -> VolumeFacts:
    """VolumeFacts of a PV object, cached by identity (the entry holds the object, so its id stays unique)."""
    if not caching.ENABLED:  # the plain path: read on every call
        return VolumeFacts.of(pv)
    key = id(pv)
    facts = _FACTS_CACHE.get(key)
    if facts is not None and facts.pv is pv:
        return facts
    facts = VolumeFacts.of(pv)
    _FACTS_CACHE[key] = facts
    if len(_FACTS_CACHE) > _FACTS_CACHE_LIMIT:
        _FACTS_CACHE.popitem(last=False)
    return facts


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
    claim_spec = spec(pvc)
    claim_vac = str(claim_spec.get("volumeAttributesClassName") or "")
    if not vac_enabled and claim_vac:
        raise StorageError(
            f"unsupported volumeAttributesClassName is set on claim {namespace_of(pvc)}/{name_of(pvc)} "
            "when the feature-gate VolumeAttributesClass is disabled"
        )
    requested = storage_request(pvc) or 0
    requested_class = claim_class(pvc)
    claim_mode = str(claim_spec.get("volumeMode") or FILESYSTEM)
    wanted_modes = frozenset(access_modes(pvc))
    claim_ns, claim_name = namespace_of(pvc), name_of(pvc)
    claim_uid = str(meta(pvc).get("uid") or "")
    selector = None
    raw_selector = claim_spec.get("selector")
    if raw_selector is not None:
        try:
            selector = compile_label_selector(raw_selector)
        except SelectorError as exc:
            raise StorageError(
                f"error creating internal label selector for claim: {claim_ns}/{claim_name}: {exc}"
            ) from exc
    out: list[Candidate] = []
    for pv in volumes:
        f = volume_facts(pv)
        ref = f.claim_ref
        # IsVolumeBoundToClaim: a claimRef naming another claim (or another uid of this one) excludes the PV
        if ref is not None and (ref[0] != claim_ns or ref[1] != claim_name or (ref[2] and ref[2] != claim_uid)):
            continue
        if f.capacity < requested or f.volume_mode != claim_mode:
            continue
        if vac_enabled and claim_vac != f.vac:
            continue
        if not vac_enabled and f.vac:
            continue
        if f.deleting:
            continue
        prebound = ref is not None
        if not prebound:
            if not scheduler_path and delay_binding:
                continue
            if not f.available:
                continue
            if selector is not None and not selector.matches(f.labels):
                continue
            if f.storage_class != requested_class:
                continue
            if scheduler_path and not wanted_modes <= f.access_modes:
                continue
        if scheduler_path:
            out.append(Candidate(pv, f.name, f.capacity, prebound, f.admits, f.hint))
        else:
            out.append(Candidate(pv, f.name, f.capacity, prebound))
    return out


def pick_volume(
    candidates: Sequence[Candidate], node_labels: Mapping[str, str] | None, excluded: Mapping[str, Any]
) -> JSON | None:
    """The PV FindMatchingVolume returns among candidates (see pick_candidate)."""
    cand = pick_candidate(candidates, node_labels, excluded)
    return cand.pv if cand is not None else None


def pick_candidate(
    candidates: Sequence[Candidate], node_labels: Mapping[str, str] | None, excluded: Mapping[str, Any]
) -> Candidate | None:
    """The candidate FindMatchingVolume returns: the first pre-bound one if its node affinity holds (None if it
    does not), else the smallest whose node affinity holds (node_labels None: no check)."""
    smallest: Candidate | None = None
    for cand in candidates:
        if cand.name in excluded:
            continue
        valid = node_labels is None or cand.admits(node_labels)
        if cand.prebound:
            return cand if valid else None
        if not valid:
            continue
        if smallest is None or smallest.capacity > cand.capacity:
            smallest = cand
    return smallest


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
