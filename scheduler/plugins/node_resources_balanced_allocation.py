"""NodeResourcesBalancedAllocation: prefer nodes whose resource usage stays even across resources.

Mirrors upstream `plugins/noderesources/balanced_allocation.go` (v1.37): the score compares the standard
deviation of the per-resource usage fractions with and without the pod,
`50 + (50 + score(with pod) - score(without pod)) / 2`, where `score = int((1 - std) * 100)`; it uses
real requests (no 100m/200Mi defaults), and PreScore returns Skip for a pod requesting none of the
configured resources.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from scheduler import caching
from scheduler.config.decode import ARGS_ENVELOPE_FIELDS, FieldErrors, as_mapping, check_fields, check_kind, child
from scheduler.config.plugin_args import DEFAULT_RESOURCES, ResourceSpec, decode_resources
from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle, PreScorePlugin, ScorePlugin, SignPlugin
from scheduler.framework.status import SKIP, Status
from scheduler.framework.types import NodeInfo, PodInfo, memo_lookup, requests_fragment
from scheduler.plugins.resource_allocation import KIND_CPU, KIND_MEMORY, ScoredResource, node_amounts, score_plan

NAME: Final = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME

_FIELDS: Final = frozenset({"resources"}) | ARGS_ENVELOPE_FIELDS


@dataclass(frozen=True, slots=True)
class Args:
    """NodeResourcesBalancedAllocationArgs after defaulting and validation."""

    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES


def parse_args(raw: Mapping[str, Any] | None, *, path: str = "") -> Args:
    """Decode, default (cpu and memory; weight 0 means 1) and validate: unique names, every weight 1."""
    raw = as_mapping(raw or {}, path)
    check_fields(raw, _FIELDS, path)
    check_kind(raw, "NodeResourcesBalancedAllocationArgs", path)
    res_path = child(path, "resources")
    resources = decode_resources(raw.get("resources"), res_path) or DEFAULT_RESOURCES
    errs = FieldErrors()
    seen: set[str] = set()
    for i, res in enumerate(resources):
        if res.name in seen:
            errs.duplicate(f"{res_path}[{i}].name", res.name)
        else:
            seen.add(res.name)
        if res.weight != 1:
            errs.invalid(f"{res_path}[{i}].weight", res.weight, "must be 1")
    errs.raise_if_any()
    return Args(resources)


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """balancedResourceScore: int((1 - std) * 100) over the usage fractions of resources with capacity."""
    fractions: list[float] = []
    total = 0.0
    for req, cap in zip(requested, allocatable, strict=True):
        if cap == 0:
            continue
        fraction = float(req) / float(cap)
        if fraction > 1:
            fraction = 1.0
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def balanced_score(requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
    """balancedResourceScorer: reward the change in balance the pod brings, centred on 50."""
    with_pod = balanced_resource_score(requested, allocatable)
    without_pod = balanced_resource_score(allocated, allocatable)
    half = MAX_NODE_SCORE // 2
    # Both terms lie in [50, 100], so the numerator is never negative and // equals Go's division.
    return half + (half + with_pod - without_pod) // 2


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin, SignPlugin):
    """Favours nodes where the pod keeps cpu and memory (or the configured resources) evenly used."""

    name: ClassVar[str] = NAME
    has_normalize: ClassVar[bool] = False

    def __init__(self, args: Args, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self._resources = args.resources

    def sign_pod(self, pod: PodInfo) -> tuple[Any, ...]:
        """The pod's requests (upstream ResourcesSignerName)."""
        return requests_fragment(pod)

    def _plan(self, pod: PodInfo) -> list[ScoredResource | None]:
        return score_plan(pod, self._resources, use_requested=True)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        """Skip best-effort pods (nothing requested among the resources): every node would score alike."""
        plan = self._plan(pod)
        if all(r is None or r.pod_request == 0 for r in plan):
            return SKIP
        state[PRE_SCORE_STATE_KEY] = plan
        return None

    def _score_node(self, plan: Sequence[ScoredResource | None], node: NodeInfo) -> int:
        n = len(plan)
        requested = [0] * n
        allocated = [0] * n
        allocatable = [0] * n
        for i, res in enumerate(plan):
            if res is None:
                continue
            cap, used = node_amounts(res, node, use_requested=True)
            if cap == 0:
                continue
            allocatable[i] = cap
            allocated[i] = used
            requested[i] = used + res.pod_request
        return balanced_score(requested, allocated, allocatable)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        plan = state.get(PRE_SCORE_STATE_KEY)
        if plan is None:
            plan = self._plan(pod)
            if all(r is None or r.pod_request == 0 for r in plan):
                return 0
        return self._score_node(plan, node)

    def score_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """The default cpu+memory case is inlined; other resource sets take the general path."""
        plan = state.get(PRE_SCORE_STATE_KEY)
        if plan is None:
            s = self.score
            return [s(state, pod, n) for n in nodes]
        kinds = [r.kind if r is not None else -1 for r in plan]
        if kinds != [KIND_CPU, KIND_MEMORY] or not caching.ENABLED:  # plain path: per-node score, no memo
            one = self._score_node
            return [one(plan, n) for n in nodes]
        pc = plan[0].pod_request if plan[0] is not None else 0
        pm = plan[1].pod_request if plan[1] is not None else 0
        # A node's score depends only on its allocatable and requested amounts and on (pc, pm): memoized on
        # the NodeInfo (cleared whenever its pods change; a changed node is a fresh clone in the snapshot).
        key = repr((NAME, pc, pm))
        out: list[int] = memo_lookup(nodes, key)
        if None not in out:
            return out
        one = self._score_node
        for i, v in enumerate(out):
            if v is not None:
                continue
            n = nodes[i]
            node = n.node
            if node is None:
                out[i] = one(plan, n)
                continue
            a = node.allocatable
            cap_c, cap_m = a.milli_cpu, a.memory
            if not (cap_c and cap_m):
                out[i] = one(plan, n)
                continue
            r = n.requested
            used_c, used_m = r.milli_cpu, r.memory
            # balanced_resource_score inlined for two resources: std = |f_cpu - f_mem| / 2, fractions capped
            fc = (used_c + pc) / cap_c
            fm = (used_m + pm) / cap_m
            with_pod = int((1 - abs(((fc if fc < 1 else 1.0) - (fm if fm < 1 else 1.0)) / 2)) * 100)
            fc = used_c / cap_c
            fm = used_m / cap_m
            without_pod = int((1 - abs(((fc if fc < 1 else 1.0) - (fm if fm < 1 else 1.0)) / 2)) * 100)
            out[i] = n.remember(key, 50 + (50 + with_pod - without_pod) // 2)
        return out


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> NodeResourcesBalancedAllocation:
    """Plugin factory: validate NodeResourcesBalancedAllocationArgs and build the plugin."""
    return NodeResourcesBalancedAllocation(parse_args(raw_args), handle)
