"""VolumeBinding: pods with PersistentVolumeClaims (upstream plugins/volumebinding/volume_binding.go, v1.37).

* PreFilter: every claim must exist (not Lost, not being deleted; an ephemeral volume's claim must belong to
  the pod); an unbound claim of an Immediate class means `pod has unbound immediate PersistentVolumeClaims`
  (the PV controller binds those, not the scheduler). Skip for pods without claims.
* Filter: bound claims' PVs must admit the node (node affinity, after in-tree->CSI translation where the
  node's CSINode says the plugin is migrated); unbound WaitForFirstConsumer claims need a matching static
  PV on the node or a class that can provision there (allowedTopologies, CSIStorageCapacity).
* Score (StorageCapacityScoring, beta and on in v1.37): how full the node's chosen static PVs (or its
  CSIStorageCapacity, for claims to provision) would be, through the configured shape (default: the emptier
  the better).
* Reserve assumes the decision in the binder's caches; PreBind writes it (PV claimRef, PVC selected-node)
  and waits up to `bindTimeoutSeconds` for the claims to be bound, inside the pod's binding cycle, which
  runs concurrently with other pods' scheduling cycles. A failure or timeout is an Error: backoff, retry.

Arguments: VolumeBindingArgs (`bindTimeoutSeconds`, default 600; `shape`, default [{0,10},{100,0}]).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from scheduler.config.decode import (
    ARGS_ENVELOPE_FIELDS,
    FieldErrors,
    as_int,
    as_list,
    as_mapping,
    check_fields,
    check_kind,
    child,
)
from scheduler.config.plugin_args import MAX_UTILIZATION, UtilizationShapePoint, validate_function_shape
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
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.objects import (
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
)
from scheduler.framework.status import SKIP, Code, Status, error_status, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.shape_score import broken_linear
from scheduler.plugins.volume_binding.binder import PodVolumeClaims, PodVolumes, VolumeBinder, try_translate_pv_to_csi
from scheduler.storage.volume import (
    ANN_SELECTED_NODE,
    CLAIM_LOST,
    NOT_SUPPORTED_PROVISIONER,
    StorageError,
    annotations_of,
    claim_class,
    is_deleting,
    key_of,
    match_topology_selector_terms,
    name_of,
    node_affinity_error,
    phase_of,
    pod_claim_volumes,
    quantity_bytes,
    spec,
    storage_request,
    volume_is_for_pod,
)

NAME: Final = "VolumeBinding"
STATE_KEY: Final = NAME

ERR_REASON_UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"

DEFAULT_BIND_TIMEOUT_SECONDS: Final = 600
# StorageCapacityScoring is beta and on by default in v1.37: the scorer exists and PreScore never skips.
STORAGE_CAPACITY_SCORING: Final = True
DEFAULT_SHAPE: Final = (UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0))

_FIELDS: Final = frozenset({"bindTimeoutSeconds", "shape"}) | ARGS_ENVELOPE_FIELDS
_SHAPE_FIELDS: Final = frozenset({"utilization", "score"})


# ---------------------------------------------------------------------------------------------------------
# Args


@dataclass(frozen=True, slots=True)
class Args:
    """VolumeBindingArgs after defaulting and validation."""

    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    shape: tuple[UtilizationShapePoint, ...] = DEFAULT_SHAPE


def parse_args(raw: Mapping[str, Any] | None, *, path: str = "") -> Args:
    """Decode strictly, default (600 s; the default shape when none is given) and validate like upstream."""
    raw = as_mapping(raw or {}, path)
    check_fields(raw, _FIELDS, path)
    check_kind(raw, "VolumeBindingArgs", path)
    timeout_path = child(path, "bindTimeoutSeconds")
    timeout = raw.get("bindTimeoutSeconds")
    seconds = DEFAULT_BIND_TIMEOUT_SECONDS if timeout is None else as_int(timeout, timeout_path)
    shape_path = child(path, "shape")
    points = []
    for i, item in enumerate(as_list(raw.get("shape"), shape_path)):
        where = f"{shape_path}[{i}]"
        point = as_mapping(item, where)
        check_fields(point, _SHAPE_FIELDS, where)
        points.append(
            UtilizationShapePoint(
                as_int(point.get("utilization"), child(where, "utilization"), bits=32),
                as_int(point.get("score"), child(where, "score"), bits=32),
            )
        )
    shape = tuple(points) or DEFAULT_SHAPE
    errs = FieldErrors()
    if seconds < 0:
        errs.invalid(timeout_path, seconds, "invalid BindTimeoutSeconds, should not be a negative value")
    validate_function_shape(shape, shape_path, errs)
    errs.raise_if_any()
    return Args(seconds, shape)


def build_scorer(shape: Sequence[UtilizationShapePoint]) -> Any:
    """buildScorerFunction: per class f(requested*100/capacity) (f(100) when over or no capacity), the node
    score is the rounded mean over classes."""
    table = broken_linear(shape)

    def class_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return table[MAX_UTILIZATION]
        return table[requested * MAX_UTILIZATION // capacity]

    def score(classes: Mapping[str, list[int]]) -> int:
        if not classes:
            return 0
        total = sum(class_score(r, c) for r, c in classes.values())
        return math.floor(total / len(classes) + 0.5)  # math.Round of a non-negative number

    return score


# ---------------------------------------------------------------------------------------------------------
# The plugin


@dataclass(slots=True)
class _State:
    """stateData: the claims found in PreFilter and each feasible node's decision."""

    claims: PodVolumeClaims | None = None
    pod_volumes_by_node: dict[str, PodVolumes] = field(default_factory=dict)
    has_static_bindings: bool = False
    all_bound: bool = False


_MISSING_STATE: Final = f'error reading "{STATE_KEY}" from cycleState: not found'


class VolumeBinding(
    PreFilterPlugin,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ReservePlugin,
    PreBindPlugin,
    EnqueueExtensions,
    ExplainExtensions,
    SignPlugin,
):
    """Binds a pod's claims: filters nodes on PV affinity / provisioning, assumes, writes and waits."""

    name: ClassVar[str] = NAME
    # Reads claims, volumes and classes: kept results only where it was skipped.
    sign_reads_cluster: ClassVar[bool] = True
    object_kinds: ClassVar[tuple[str, ...]] = (
        PERSISTENT_VOLUME_CLAIM,
        PERSISTENT_VOLUME,
        STORAGE_CLASS,
        CSI_NODE,
        CSI_DRIVER,
        CSI_STORAGE_CAPACITY,
    )

    def __init__(self, args: Args, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.binder = VolumeBinder(handle, float(args.bind_timeout_seconds))
        self.scorer = build_scorer(args.shape) if STORAGE_CAPACITY_SCORING else None

    # ---------------------------------------------------------------- PreFilter

    def _pod_has_pvcs(self, pod: PodInfo) -> tuple[bool, str | None]:
        """podHasPVCs: (uses a claim, the first problem with one of its claims)."""
        objects = self.handle.objects
        has = False
        for _, claim_name, ephemeral in pod_claim_volumes(pod):
            has = True
            pvc = objects.get(PERSISTENT_VOLUME_CLAIM, pod.namespace, claim_name)
            if pvc is None:
                if ephemeral:
                    return has, (
                        f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{claim_name}"'
                    )
                return has, f'persistentvolumeclaim "{claim_name}" not found'
            if phase_of(pvc) == CLAIM_LOST:
                volume = spec(pvc).get("volumeName") or ""
                return has, f'persistentvolumeclaim "{name_of(pvc)}" bound to non-existent persistentvolume "{volume}"'
            if is_deleting(pvc):
                return has, f'persistentvolumeclaim "{name_of(pvc)}" is being deleted'
            if ephemeral:
                err = volume_is_for_pod(pod, pvc)
                if err is not None:
                    return has, err
        return has, None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        has, problem = self._pod_has_pvcs(pod)
        if problem is not None:
            return None, unresolvable(problem)
        if not has:
            state[STATE_KEY] = _State()
            return None, SKIP
        try:
            claims = self.binder.get_pod_volume_claims(pod)
        except StorageError as exc:
            return None, error_status(exc)
        if claims.unbound_claims_immediate:
            return None, unresolvable(ERR_REASON_UNBOUND_IMMEDIATE)
        state[STATE_KEY] = _State(claims=claims)
        return None, None

    # ---------------------------------------------------------------- Filter

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return error_status(_MISSING_STATE)
        if s.claims is None:
            return None
        try:
            volumes, reasons = self.binder.find_pod_volumes(pod, s.claims, node)
        except StorageError as exc:
            return error_status(exc)
        if reasons:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(reasons))
        s.pod_volumes_by_node[node.name] = volumes
        if volumes.static_bindings:
            s.has_static_bindings = True
        return None

    def filter_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        f = self.filter
        return [f(state, pod, n) for n in nodes]

    # ---------------------------------------------------------------- Score

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        if self.scorer is None:
            return SKIP
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return error_status(_MISSING_STATE)
        if s.has_static_bindings or STORAGE_CAPACITY_SCORING:
            return None
        return SKIP

    def _score(self, s: _State, node_name: str) -> int:
        volumes = s.pod_volumes_by_node.get(node_name)
        if volumes is None or self.scorer is None:
            return 0
        classes: dict[str, list[int]] = {}
        if volumes.static_bindings or not STORAGE_CAPACITY_SCORING:
            for binding in volumes.static_bindings:
                requested, capacity = binding.storage_resource()
                entry = classes.setdefault(binding.storage_class_name(), [0, 0])
                entry[0] += requested
                entry[1] += capacity
        else:
            for provision in volumes.dynamic_provisions:
                if provision.node_capacity is None:
                    continue
                entry = classes.setdefault(claim_class(provision.pvc), [0, 0])
                raw = provision.node_capacity.get("capacity")
                where = f"CSIStorageCapacity {key_of(provision.node_capacity)}"
                # Not +=: two claims of one class on a node share the same capacity.
                entry[1] = 0 if raw is None else quantity_bytes(raw, where)
                entry[0] += storage_request(provision.pvc) or 0
        return int(self.scorer(classes))

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            raise StorageError(_MISSING_STATE)
        return self._score(s, node.name)

    def score_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            raise StorageError(_MISSING_STATE)
        if not s.pod_volumes_by_node:
            return [0] * len(nodes)
        return [self._score(s, n.name) for n in nodes]

    # ---------------------------------------------------------------- Reserve / PreBind

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return error_status(_MISSING_STATE)
        volumes = s.pod_volumes_by_node.get(node_name)
        if volumes is None:
            s.all_bound = True  # the pod uses no claim
            return None
        try:
            s.all_bound = self.binder.assume_pod_volumes(pod, node_name, volumes)
        except StorageError as exc:
            return error_status(exc)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return
        volumes = s.pod_volumes_by_node.get(node_name)
        if volumes is not None:
            self.binder.revert_assumed_pod_volumes(volumes)

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return error_status(_MISSING_STATE)
        if s.all_bound:
            return None
        volumes = s.pod_volumes_by_node.get(node_name)
        if volumes is None:
            return error_status(f'no pod volume found for node "{node_name}"')
        try:
            await self.binder.bind_pod_volumes(pod, volumes)
        except StorageError as exc:
            return error_status(exc)
        except Exception as exc:  # an API write failed: its message is the API server's
            return error_status(exc)
        return None

    # ---------------------------------------------------------------- events

    def events_to_register(self) -> list[ClusterEvent]:
        """A class, claim, PV, node label, CSINode, CSIDriver or capacity change may make room."""
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEvent(STORAGE_CLASS, add_update),
            ClusterEvent(PERSISTENT_VOLUME_CLAIM, add_update),
            ClusterEvent(PERSISTENT_VOLUME, add_update),
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
            ClusterEvent(CSI_NODE, add_update),
            ClusterEvent(CSI_DRIVER, ActionType.UPDATE),
            ClusterEvent(CSI_STORAGE_CAPACITY, add_update),
        ]

    # ---------------------------------------------------------------- explain

    def explain_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status | None
    ) -> list[ExplainDetail]:
        """Per claim: the PV (and the affinity term) or the provisioning rule that decides this node."""
        s: _State | None = state.get(STATE_KEY)
        if s is None or s.claims is None:
            return []
        out: list[ExplainDetail] = []
        labels = node.node.labels if node.node is not None else {}
        csi_node = self.handle.objects.get(CSI_NODE, "", node.name)
        for pvc in s.claims.bound_claims:
            volume = str(spec(pvc).get("volumeName") or "")
            claim = key_of(pvc)
            pv = self.handle.objects.get(PERSISTENT_VOLUME, "", volume)
            if pv is None:
                out.append(
                    ExplainDetail(
                        f"claim {claim} is bound to PersistentVolume {volume}, which does not exist",
                        {"claim": claim, "persistentVolume": volume, "rule": "missing-pv"},
                    )
                )
                continue
            try:
                translated = try_translate_pv_to_csi(pv, csi_node)
            except StorageError as exc:
                out.append(ExplainDetail(f"claim {claim}: {exc}", {"claim": claim, "rule": "translation"}))
                continue
            err = node_affinity_error(translated, labels)
            affinity = describe_node_affinity(translated)
            if err is None:
                text = f"claim {claim} is bound to PersistentVolume {volume}"
                text += f" whose node affinity ({affinity}) admits this node" if affinity else " (no node affinity)"
                out.append(ExplainDetail(text, {"claim": claim, "persistentVolume": volume, "admits": True}))
            else:
                out.append(
                    ExplainDetail(
                        f"claim {claim} is bound to PersistentVolume {volume} whose node affinity ({affinity}) "
                        "does not admit this node",
                        {"claim": claim, "persistentVolume": volume, "admits": False, "nodeAffinity": affinity},
                    )
                )
        volumes = s.pod_volumes_by_node.get(node.name)
        decided: dict[str, str] = {}
        if volumes is not None:
            for binding in volumes.static_bindings:
                decided[key_of(binding.pvc)] = f"static PersistentVolume {name_of(binding.pv)}"
            for provision in volumes.dynamic_provisions:
                decided[key_of(provision.pvc)] = "dynamic provisioning on this node"
        for pvc in s.claims.unbound_claims_delay_binding:
            claim = key_of(pvc)
            if claim in decided:
                text = f"claim {claim} -> {decided[claim]}"
                out.append(ExplainDetail(text, {"claim": claim, "decision": decided[claim]}))
                continue
            out.append(self._explain_unbound(pvc, node.name, labels, s.claims))
        return out

    def _explain_unbound(
        self, pvc: Mapping[str, Any], node_name: str, labels: Mapping[str, str], claims: PodVolumeClaims
    ) -> ExplainDetail:
        claim = key_of(pvc)
        selected = annotations_of(pvc).get(ANN_SELECTED_NODE)
        if selected is not None and selected != node_name:
            return ExplainDetail(
                f"claim {claim} is already being provisioned for node {selected} ({ANN_SELECTED_NODE})",
                {"claim": claim, "rule": "selected-node", "selectedNode": selected},
            )
        class_name = claim_class(pvc)
        index = claims.candidates.get(claim)
        static = f"no available PersistentVolume of class {class_name!r} fits it on this node"
        if index is not None and len(index):
            static += f" ({len(index)} candidate(s) elsewhere or already chosen)"
        cls = self.handle.objects.get(STORAGE_CLASS, "", class_name)
        provisioner = str(cls.get("provisioner") or "") if cls is not None else ""
        if cls is None:
            why = f"StorageClass {class_name!r} does not exist"
        elif not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
            why = f"StorageClass {class_name!r} cannot provision (provisioner {provisioner!r})"
        elif not match_topology_selector_terms(cls.get("allowedTopologies"), labels):
            why = f"StorageClass {class_name!r} allowedTopologies exclude this node"
        else:
            why = f"no CSIStorageCapacity of StorageClass {class_name!r} reachable from this node has room for it"
        return ExplainDetail(f"claim {claim}: {static}; {why}", {"claim": claim, "rule": "unbound", "why": why})


def describe_node_affinity(pv: Mapping[str, Any]) -> str:
    """A PV's required node affinity as text: terms ORed, expressions ANDed ("k In [a b]")."""
    affinity = spec(pv).get("nodeAffinity")
    required = affinity.get("required") if isinstance(affinity, Mapping) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not isinstance(terms, list):
        return ""
    rendered = []
    for term in terms:
        if not isinstance(term, Mapping):
            continue
        parts = []
        for kind in ("matchExpressions", "matchFields"):
            for expr in term.get(kind) or []:
                if isinstance(expr, Mapping):
                    values = " ".join(str(v) for v in expr.get("values") or [])
                    parts.append(f"{expr.get('key')} {expr.get('operator')}" + (f" [{values}]" if values else ""))
        if parts:
            rendered.append(" AND ".join(parts))
    return " OR ".join(rendered)


def new(raw_args: Mapping[str, Any] | Args | None, handle: Handle) -> VolumeBinding:
    """Registry factory: accepts raw pluginConfig args or already parsed Args."""
    args = raw_args if isinstance(raw_args, Args) else parse_args(raw_args)
    return VolumeBinding(args, handle)
