"""NodeResourcesFit: reject nodes without room for the pod's requests, and score by allocation.

Mirrors upstream `plugins/noderesources/fit.go` plus the scoring strategies in `least_allocated.go`,
`most_allocated.go` and `requested_to_capacity_ratio.go` (v1.37), including their integer arithmetic, so
filter reasons and scores match kube-scheduler exactly. What the scoring shares with
NodeResourcesBalancedAllocation (`resource_allocation.go`) is in resource_allocation.py, the shape function
it shares with VolumeBinding (helper's `BuildBrokenLinearFunction`) in shape_score.py.

Its args (`NodeResourcesFitArgs`) are decoded and validated here, with the strict-decoding helpers and the
shared args types of `scheduler.config` (decode.py, plugin_args.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from scheduler import caching
from scheduler.config.decode import (
    ARGS_ENVELOPE_FIELDS,
    FieldErrors,
    as_int,
    as_list,
    as_mapping,
    as_str,
    check_fields,
    check_kind,
    child,
)
from scheduler.config.plugin_args import (
    DEFAULT_RESOURCES,
    MAX_UTILIZATION,
    ResourceSpec,
    UtilizationShapePoint,
    decode_resources,
    validate_function_shape,
    validate_resources,
)
from scheduler.dra.deviceclass import ExtendedResourceClasses, is_dra_extended_resource_name
from scheduler.framework.interface import (
    ASSIGNED_POD,
    MAX_NODE_SCORE,
    NODE,
    ActionType,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    ExplainDetail,
    ExplainExtensions,
    FilterPlugin,
    FixCandidate,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.labels import label_key_errors
from scheduler.framework.objects import DEVICE_CLASS
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, error_status
from scheduler.framework.types import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    NodeInfo,
    PodInfo,
    memo_lookup,
    requests_fragment,
)
from scheduler.plugins.resource_allocation import (
    KIND_CPU,
    KIND_MEMORY,
    ScoredResource,
    node_amounts,
    score_plan,
)
from scheduler.plugins.shape_score import broken_linear

NAME: Final = "NodeResourcesFit"

# User-facing Filter reasons (fit.go fitsRequest).
REASON_TOO_MANY_PODS: Final = "Too many pods"
REASON_INSUFFICIENT_CPU: Final = "Insufficient cpu"
REASON_INSUFFICIENT_MEMORY: Final = "Insufficient memory"
REASON_INSUFFICIENT_EPHEMERAL_STORAGE: Final = "Insufficient ephemeral-storage"
REASON_INSUFFICIENT_PREFIX: Final = "Insufficient "

PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME

LEAST_ALLOCATED: Final = "LeastAllocated"
MOST_ALLOCATED: Final = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO: Final = "RequestedToCapacityRatio"
SUPPORTED_STRATEGIES: Final = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)



def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: a non-native (not *kubernetes.io/) name valid as a quota key."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not label_key_errors("requests." + name)


# ---------------------------------------------------------------------------------------------------------
# Args


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    """config.ScoringStrategy; `shape` is requestedToCapacityRatio.shape (None when the block is absent)."""

    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[UtilizationShapePoint, ...] | None = None


@dataclass(frozen=True, slots=True)
class Args:
    """NodeResourcesFitArgs after defaulting and validation."""

    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = ScoringStrategy()


_FIT_FIELDS: Final = (
    frozenset({"ignoredResources", "ignoredResourceGroups", "scoringStrategy"}) | ARGS_ENVELOPE_FIELDS
)
_STRATEGY_FIELDS: Final = frozenset({"type", "resources", "requestedToCapacityRatio"})
_RTC_FIELDS: Final = frozenset({"shape"})
_SHAPE_FIELDS: Final = frozenset({"utilization", "score"})


def _decode_strategy(raw: Any, path: str) -> ScoringStrategy:
    if raw is None:
        return ScoringStrategy()
    entry = as_mapping(raw, path)
    check_fields(entry, _STRATEGY_FIELDS, path)
    resources = decode_resources(entry.get("resources"), child(path, "resources")) or DEFAULT_RESOURCES
    shape: tuple[UtilizationShapePoint, ...] | None = None
    rtc_path = child(path, "requestedToCapacityRatio")
    rtc = entry.get("requestedToCapacityRatio")
    if rtc is not None:
        rtc_map = as_mapping(rtc, rtc_path)
        check_fields(rtc_map, _RTC_FIELDS, rtc_path)
        points = []
        shape_path = child(rtc_path, "shape")
        for i, item in enumerate(as_list(rtc_map.get("shape"), shape_path)):
            where = f"{shape_path}[{i}]"
            point = as_mapping(item, where)
            check_fields(point, _SHAPE_FIELDS, where)
            points.append(
                UtilizationShapePoint(
                    as_int(point.get("utilization"), child(where, "utilization"), bits=32),
                    as_int(point.get("score"), child(where, "score"), bits=32),
                )
            )
        shape = tuple(points)
    # Unlike a nil scoringStrategy, an explicit one keeps its (possibly empty, hence invalid) type.
    return ScoringStrategy(as_str(entry.get("type"), child(path, "type")), resources, shape)


def parse_args(raw: Mapping[str, Any] | None, *, path: str = "") -> Args:
    """Decode, default and validate NodeResourcesFitArgs; errors name the field (prefixed by `path`)."""
    raw = as_mapping(raw or {}, path)
    check_fields(raw, _FIT_FIELDS, path)
    check_kind(raw, "NodeResourcesFitArgs", path)
    ignored = tuple(
        as_str(v, f"{child(path, 'ignoredResources')}[{i}]")
        for i, v in enumerate(as_list(raw.get("ignoredResources"), child(path, "ignoredResources")))
    )
    groups_path = child(path, "ignoredResourceGroups")
    groups = tuple(
        as_str(v, f"{groups_path}[{i}]")
        for i, v in enumerate(as_list(raw.get("ignoredResourceGroups"), groups_path))
    )
    strategy_path = child(path, "scoringStrategy")
    strategy = _decode_strategy(raw.get("scoringStrategy"), strategy_path)

    errs = FieldErrors()
    for i, res in enumerate(ignored):
        for msg in label_key_errors(res):
            errs.invalid(f"{child(path, 'ignoredResources')}[{i}]", res, msg)
    for i, group in enumerate(groups):
        where = f"{groups_path}[{i}]"
        if "/" in group:
            errs.invalid(where, group, "resource group name can't contain '/'")
        for msg in label_key_errors(group):
            errs.invalid(where, group, msg)
    if strategy.type not in SUPPORTED_STRATEGIES:
        errs.not_supported(child(strategy_path, "type"), strategy.type, SUPPORTED_STRATEGIES)
    validate_resources(strategy.resources, child(strategy_path, "resources"), errs)
    rtc_path = child(strategy_path, "requestedToCapacityRatio")
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        if strategy.shape is None:
            errs.required(rtc_path, "must be specified when type is RequestedToCapacityRatio")
        else:
            validate_function_shape(strategy.shape, child(rtc_path, "shape"), errs)
    elif strategy.shape is not None:
        errs.forbidden(rtc_path, "must be nil when type is not RequestedToCapacityRatio")
    errs.raise_if_any()
    return Args(ignored, groups, strategy)


# ---------------------------------------------------------------------------------------------------------
# The scoring strategies (least_allocated.go, most_allocated.go, requested_to_capacity_ratio.go)


def least_requested_score(requested: int, capacity: int) -> int:
    """leastRequestedScore: the free share of capacity, 0 when over-committed."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    """mostRequestedScore: the used share of capacity, capped at 100."""
    if capacity == 0:
        return 0
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def round_half_away(num: int, den: int) -> int:
    """math.Round(float64(num)/float64(den)) for non-negative operands, computed exactly."""
    q, r = divmod(num, den)
    return q + 1 if 2 * r >= den else q


# ---------------------------------------------------------------------------------------------------------
# The plugin


@dataclass(frozen=True, slots=True)
class _PodRequest:
    """PreFilter state: what the pod needs, with zero and ignored scalars already dropped."""

    milli_cpu: int
    memory: int
    ephemeral_storage: int
    scalars: tuple[tuple[str, int], ...]
    empty: bool  # the pod requests nothing at all: only the pod count is checked
    # Extended resources a DeviceClass backs (DRAExtendedResource, GA): a node with none of them allocatable
    # leaves them to DynamicResources, which allocates devices instead (shouldDelegateResourceToDRA).
    dra_backed: frozenset[str] = frozenset()


# Statuses are immutable in practice and shared across nodes: a full cluster fails thousands of nodes with
# the same one or two reasons, and building a Status per node would dominate the Filter cost.
_STATUS_CACHE: dict[tuple[bool, tuple[str, ...]], Status] = {}
caching.register_clear(_STATUS_CACHE.clear)
_FILTER_MEMO: Final = NAME + "/filter"


def _status(reasons: tuple[str, ...], unresolvable: bool) -> Status:
    if not caching.ENABLED:  # the plain path: a Status per node
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE, reasons, NAME)
    key = (unresolvable, reasons)
    st = _STATUS_CACHE.get(key)
    if st is None:
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
        st = _STATUS_CACHE[key] = Status(code, reasons, NAME)
    return st


def format_amount(resource: str, amount: int) -> str:
    """A request as a quantity string: millicores for cpu, binary suffixes for whole Ki/Mi/Gi amounts."""
    if resource == CPU:
        return f"{amount}m" if amount % 1000 else str(amount // 1000)
    for suffix, unit in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if resource in (MEMORY, EPHEMERAL_STORAGE) and amount >= unit and amount % unit == 0:
            return f"{amount // unit}{suffix}"
    return str(amount)


def _lowering(resource: str, amount: int) -> Callable[[PodInfo], PodInfo]:
    """A pod transform for a what-if fix: the pod's total request for `resource` set to `amount`."""

    def lower(pod: PodInfo) -> PodInfo:
        requests = pod.requests.clone()
        if resource == CPU:
            requests.milli_cpu = amount
        elif resource == MEMORY:
            requests.memory = amount
        elif resource == EPHEMERAL_STORAGE:
            requests.ephemeral_storage = amount
        else:
            requests.scalar[resource] = amount
        return pod.evolve(requests=requests)

    return lower


def _requested(req: _PodRequest, resource: str) -> int:
    """The amount of `resource` the Filter compares (the PreFilter state's request)."""
    if resource == CPU:
        return req.milli_cpu
    if resource == MEMORY:
        return req.memory
    if resource == EPHEMERAL_STORAGE:
        return req.ephemeral_storage
    return dict(req.scalars).get(resource, 0)


def _with_pod_room(name: str, pods: int) -> Callable[[Snapshot], Snapshot]:
    """A snapshot transform for a what-if fix: node `name` with allocatable pods raised to `pods`."""

    def grow(snapshot: Snapshot) -> Snapshot:
        info = snapshot.get(name)
        if info is None or info.node is None:
            return snapshot
        copy = info.clone()
        allocatable = info.node.allocatable.clone()
        allocatable.allowed_pod_number = max(allocatable.allowed_pod_number, pods)
        copy.node = dataclasses.replace(info.node, allocatable=allocatable)
        return snapshot.with_nodes({name: copy})

    return grow


class NodeResourcesFit(
    PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions, ExplainExtensions, SignPlugin
):
    """Checks that a node has room for the pod's requests and scores nodes by a scoring strategy."""

    name: ClassVar[str] = NAME
    has_normalize: ClassVar[bool] = False
    object_kinds: ClassVar[tuple[str, ...]] = (DEVICE_CLASS,)  # which extended resources DRA backs

    def __init__(self, args: Args, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self._dra_classes = ExtendedResourceClasses(handle.objects)
        self._ignored = frozenset(args.ignored_resources)
        self._ignored_groups = frozenset(args.ignored_resource_groups)
        strategy = args.scoring_strategy
        self._strategy = strategy.type
        self._resources = strategy.resources
        self._shape_table = broken_linear(strategy.shape) if strategy.shape else []

    def sign_pod(self, pod: PodInfo) -> tuple[Any, ...] | None:
        """The pod's requests (upstream ResourcesSignerName). A pod requesting an extended resource a
        DeviceClass may back is refused: whether one does (DRAExtendedResource) is cluster state Filter reads;
        upstream refuses when one does, here whether or not, so the signature depends on the pod alone."""
        if any(qty > 0 and is_dra_extended_resource_name(name) for name, qty in pod.requests.scalar.items()):
            return None
        return requests_fragment(pod)

    # -- PreFilter / Filter ------------------------------------------------------------------------------

    def _ignored_scalar(self, name: str) -> bool:
        if not (self._ignored or self._ignored_groups) or not is_extended_resource_name(name):
            return False
        return name in self._ignored or name.split("/", 1)[0] in self._ignored_groups

    def compute_request(self, pod: PodInfo) -> _PodRequest:
        """The pod's request as Filter checks it (computePodResourceRequest + ignored resources)."""
        req = pod.requests
        scalars = tuple(
            (name, qty)
            for name, qty in sorted(req.scalar.items())  # upstream walks a map; we fix the order by name
            if qty > 0 and not self._ignored_scalar(name)
        )
        empty = not (req.milli_cpu or req.memory or req.ephemeral_storage or any(req.scalar.values()))
        backed: frozenset[str] = frozenset()
        if scalars and self._dra_classes.any():
            backed = frozenset(
                name
                for name, _ in scalars
                if is_dra_extended_resource_name(name) and self._dra_classes.device_class(name) is not None
            )
        return _PodRequest(
            max(req.milli_cpu, 0), max(req.memory, 0), max(req.ephemeral_storage, 0), scalars, empty, backed
        )

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state[PRE_FILTER_STATE_KEY] = self.compute_request(pod)
        return None, None

    def _missing_state(self) -> Status:
        return error_status(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        req = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(req, _PodRequest):
            return self._missing_state()
        return self._fits(req, node)

    @staticmethod
    def _fits(req: _PodRequest, node: NodeInfo) -> Status | None:
        """fitsRequest: every reason that applies, pods first, then cpu, memory, storage, scalars."""
        alloc = node.allocatable
        used = node.requested
        reasons: list[str] = []
        unresolvable = False
        if len(node.pods) + 1 > alloc.allowed_pod_number:
            reasons.append(REASON_TOO_MANY_PODS)
        if not req.empty:
            # A request larger than the whole node cannot be helped by preemption.
            if req.milli_cpu > 0 and req.milli_cpu > alloc.milli_cpu - used.milli_cpu:
                reasons.append(REASON_INSUFFICIENT_CPU)
                unresolvable |= req.milli_cpu > alloc.milli_cpu
            if req.memory > 0 and req.memory > alloc.memory - used.memory:
                reasons.append(REASON_INSUFFICIENT_MEMORY)
                unresolvable |= req.memory > alloc.memory
            if (
                req.ephemeral_storage > 0
                and req.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage
            ):
                reasons.append(REASON_INSUFFICIENT_EPHEMERAL_STORAGE)
                unresolvable |= req.ephemeral_storage > alloc.ephemeral_storage
            for name, qty in req.scalars:
                total = alloc.scalar.get(name, 0)
                if total <= 0 and name in req.dra_backed:
                    continue  # devices of its DeviceClass provide it (DynamicResources checks them)
                if qty > total - used.scalar.get(name, 0):
                    reasons.append(REASON_INSUFFICIENT_PREFIX + name)
                    unresolvable |= qty > total
        if not reasons:
            return None
        return _status(tuple(reasons), unresolvable)

    def filter_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """The hot loop: a passing node costs a few attribute reads; only failures build reasons."""
        req = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(req, _PodRequest):
            return [self._missing_state()] * len(nodes)
        fits = self._fits
        if not caching.ENABLED:  # the plain path: fitsRequest for every node, no memo, no inlined checks
            return [fits(req, n) for n in nodes]
        out: list[Status | None] = []
        append = out.append
        if req.empty:
            for n in nodes:
                node = n.node
                if node is None or len(n.pods) >= node.allocatable.allowed_pod_number:
                    append(fits(req, n))
                else:
                    append(None)
            return out
        cpu, mem, eph, scalars = req.milli_cpu, req.memory, req.ephemeral_storage, req.scalars
        # Passing nodes are memoized per NodeInfo (the verdict depends on its pods, amounts and this key).
        key = repr((_FILTER_MEMO, cpu, mem, eph, scalars, sorted(req.dra_backed)))
        backed = req.dra_backed
        passed = memo_lookup(nodes, key)
        if None not in passed:
            return [None] * len(nodes)
        for n, hit in zip(nodes, passed, strict=True):
            if hit:
                append(None)
                continue
            node = n.node
            if node is None:
                append(fits(req, n))
                continue
            a = node.allocatable
            r = n.requested
            if (
                len(n.pods) >= a.allowed_pod_number
                or (cpu and cpu > a.milli_cpu - r.milli_cpu)
                or (mem and mem > a.memory - r.memory)
                or (eph and eph > a.ephemeral_storage - r.ephemeral_storage)
            ):
                append(fits(req, n))
                continue
            if scalars:
                sa, sr = a.scalar, r.scalar
                for name, qty in scalars:
                    total = sa.get(name, 0)
                    if qty > total - sr.get(name, 0) and not (total <= 0 and name in backed):
                        append(fits(req, n))
                        break
                else:
                    n.remember(key, True)
                    append(None)
                continue
            n.remember(key, True)
            append(None)
        return out

    def explain_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status | None
    ) -> list[ExplainDetail]:
        """The numbers behind each shortage: what the pod requests, what the node has free, and the node's
        requested and allocatable amounts (kube-scheduler's message has only `Insufficient cpu`)."""
        if status is None or status.code == Code.SKIP:
            return []
        alloc, used = node.allocatable, node.requested
        req = state.get(PRE_FILTER_STATE_KEY)
        out = []
        for reason in status.reasons:
            if reason == REASON_TOO_MANY_PODS:
                out.append(
                    ExplainDetail(
                        f"pods: the node runs {len(node.pods)} pod(s), its allocatable pods is "
                        f"{alloc.allowed_pod_number}",
                        {"resource": "pods", "requested": 1, "nodeRequested": len(node.pods),
                         "allocatable": alloc.allowed_pod_number},
                    )
                )
                continue
            if not reason.startswith(REASON_INSUFFICIENT_PREFIX):
                continue
            resource = reason[len(REASON_INSUFFICIENT_PREFIX):]
            wanted = _requested(req, resource) if isinstance(req, _PodRequest) else pod.requests.get(resource)
            facts = {
                "requested": format_amount(resource, wanted),
                "free": format_amount(resource, alloc.get(resource) - used.get(resource)),
                "nodeRequested": format_amount(resource, used.get(resource)),
                "allocatable": format_amount(resource, alloc.get(resource)),
            }
            out.append(
                ExplainDetail(
                    f"{resource}: the pod requests {facts['requested']}, the node has {facts['free']} free "
                    f"({facts['nodeRequested']} of {facts['allocatable']} allocatable requested)",
                    {"resource": resource, **facts},
                )
            )
        return out

    def suggest_fixes(self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status) -> list[FixCandidate]:
        """For each resource the node lacks: lower the pod's request to what the node has free (each node's
        amount is one step of a ladder; the engine tries the largest first: the smallest change). For a node
        at its pod limit: room for one more pod there."""
        out = []
        alloc, used = node.allocatable, node.requested
        prefix = REASON_INSUFFICIENT_PREFIX
        short = [r[len(prefix):] for r in status.reasons if r.startswith(prefix)]
        full = REASON_TOO_MANY_PODS in status.reasons
        several = len(short) + full > 1  # one change alone cannot lift this rejection
        for resource in short:
            available = alloc.get(resource) - used.get(resource)
            if available <= 0 or available >= pod.requests.get(resource):
                continue
            amount = format_amount(resource, available)
            out.append(
                FixCandidate(
                    key=f"lower-request:{resource}",
                    kind="lower-request",
                    description=f"lower the {resource} request to {amount}",
                    pod=_lowering(resource, available),
                    magnitude=float(available),
                    data={"resource": resource, "request": amount},
                    step=f"{resource} <= {amount}",
                    partial=several,
                )
            )
        if full:
            allowed = alloc.allowed_pod_number
            out.append(
                FixCandidate(
                    key=f"pod-capacity:{node.name}",
                    kind="raise-pod-capacity",
                    description=f"make room for one more pod on node {node.name} (it runs {len(node.pods)} of "
                    f"{allowed} allowed pods: move one away, or raise the kubelet's maxPods)",
                    snapshot=_with_pod_room(node.name, len(node.pods) + 1),
                    data={"node": node.name, "allocatable": {"pods": str(len(node.pods) + 1)}},
                    partial=several,
                )
            )
        return out

    def events_to_register(self) -> list[ClusterEvent]:
        """Freed or added capacity: an assigned pod deleted or scaled down, a node added or grown, a
        DeviceClass that now backs an extended resource the pod asks for."""
        return [
            ClusterEvent(ASSIGNED_POD, ActionType.DELETE),
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
            ClusterEvent(ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN),
            ClusterEvent(DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
        ]

    # -- PreScore / Score --------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        state[PRE_SCORE_STATE_KEY] = score_plan(pod, self._resources, use_requested=False, pod_level=False)
        return None

    def _plan(self, state: CycleState, pod: PodInfo) -> list[ScoredResource | None]:
        plan: list[ScoredResource | None] | None = state.get(PRE_SCORE_STATE_KEY)
        if plan is None:  # PreScore did not run: compute on the fly, as upstream's Score does
            plan = score_plan(pod, self._resources, use_requested=False, pod_level=False)
        return plan

    def _score_node(self, plan: Sequence[ScoredResource | None], node: NodeInfo) -> int:
        strategy = self._strategy
        table = self._shape_table
        total = weight_sum = 0
        for res in plan:
            if res is None:
                continue
            capacity, used = node_amounts(res, node, use_requested=False)
            if capacity == 0:
                continue
            requested = used + res.pod_request
            if strategy == LEAST_ALLOCATED:
                s = least_requested_score(requested, capacity)
            elif strategy == MOST_ALLOCATED:
                s = most_requested_score(requested, capacity)
            else:
                s = (
                    table[MAX_UTILIZATION]
                    if requested > capacity
                    else table[requested * MAX_UTILIZATION // capacity]
                )
                if s <= 0:  # only positive scores enter the weighted mean
                    continue
            total += s * res.weight
            weight_sum += res.weight
        if weight_sum == 0:
            return 0
        if strategy == REQUESTED_TO_CAPACITY_RATIO:
            return round_half_away(total, weight_sum)
        return total // weight_sum

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return self._score_node(self._plan(state, pod), node)

    def score_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """Least/MostAllocated over exactly cpu and memory get an inlined loop; the rest the general one."""
        plan = self._plan(state, pod)
        general = self._score_node
        terms = {r.kind: r for r in plan if r is not None}
        if (
            not caching.ENABLED  # the plain path: the general per-node score, no memo
            or self._strategy == REQUESTED_TO_CAPACITY_RATIO
            or len(plan) != 2
            or set(terms) != {KIND_CPU, KIND_MEMORY}
        ):
            return [general(plan, n) for n in nodes]
        pc, wc = terms[KIND_CPU].pod_request, terms[KIND_CPU].weight
        pm, wm = terms[KIND_MEMORY].pod_request, terms[KIND_MEMORY].weight
        weight_sum = wc + wm
        if weight_sum <= 0:  # only reachable with hand-built Args; parse_args enforces weights in (0, 100]
            return [general(plan, n) for n in nodes]
        # Memoized per NodeInfo like BalancedAllocation: inputs are the node's amounts and this key.
        key = repr((NAME, self._strategy, pc, wc, pm, wm))
        out: list[int] = memo_lookup(nodes, key)
        if None not in out:
            return out
        if self._strategy == LEAST_ALLOCATED:
            for i, v in enumerate(out):
                if v is not None:
                    continue
                n = nodes[i]
                node = n.node
                if (
                    node is None
                    or not (cc := node.allocatable.milli_cpu)
                    or not (cm := node.allocatable.memory)
                ):
                    out[i] = general(plan, n)
                    continue
                rc = n.non_zero_cpu + pc
                rm = n.non_zero_memory + pm
                sc = (cc - rc) * 100 // cc if rc <= cc else 0
                sm = (cm - rm) * 100 // cm if rm <= cm else 0
                out[i] = n.remember(key, (sc * wc + sm * wm) // weight_sum)
        else:
            for i, v in enumerate(out):
                if v is not None:
                    continue
                n = nodes[i]
                node = n.node
                if (
                    node is None
                    or not (cc := node.allocatable.milli_cpu)
                    or not (cm := node.allocatable.memory)
                ):
                    out[i] = general(plan, n)
                    continue
                rc = n.non_zero_cpu + pc
                rm = n.non_zero_memory + pm
                sc = (rc if rc < cc else cc) * 100 // cc
                sm = (rm if rm < cm else cm) * 100 // cm
                out[i] = n.remember(key, (sc * wc + sm * wm) // weight_sum)
        return out


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> NodeResourcesFit:
    """Plugin factory: validate NodeResourcesFitArgs and build the plugin."""
    return NodeResourcesFit(parse_args(raw_args), handle)
