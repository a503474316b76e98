"""PodTopologySpread's PreFilter and Filter (upstream podtopologyspread/filtering.go, v1.37): PreFilter counts,
per hard constraint (`whenUnsatisfiable: DoNotSchedule`), the pods matching its selector in every eligible
domain, and keeps the two smallest domains (`CriticalPaths`); AddPod/RemovePod update the counts for
preemption and nominated pods; Filter rejects a node whose domain would exceed `maxSkew` over the global
minimum (0 while fewer than `minDomains` domains are eligible)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Self

from scheduler.framework.interface import CycleState, FilterPlugin, PreFilterPlugin, PreFilterResult
from scheduler.framework.status import SKIP, Status, error_status, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.pod_topology_spread.common import (
    ALL_NODES_KEY,
    DO_NOT_SCHEDULE,
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
    PRE_FILTER_STATE_KEY,
    Constraint,
    SpreadPlugin,
    match_node_inclusion_policies,
    node_has_all_keys,
    pod_spread,
)

MAX_INT32: Final = 2**31 - 1

_MISSING_LABEL = unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH, plugin=NAME)
_SKEW = unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME)


class CriticalPaths:
    """The two domains with the fewest matching pods (upstream criticalPaths); [0] is always the minimum.

    Kept exactly as upstream, including its caveat: after several AddPod calls on different domains, [1] may
    no longer be the second minimum (preemption and nominated pods only touch one node at a time).
    """

    __slots__ = ("paths",)

    def __init__(self) -> None:
        self.paths: list[list[Any]] = [["", MAX_INT32], ["", MAX_INT32]]

    def update(self, value: str, num: int) -> None:
        p = self.paths
        i = 0 if value == p[0][0] else 1 if value == p[1][0] else -1
        if i >= 0:
            p[i][1] = num
            if p[0][1] > p[1][1]:
                p[0], p[1] = p[1], p[0]
        elif num < p[0][1]:
            p[1] = p[0]
            p[0] = [value, num]
        elif num < p[1][1]:
            p[1] = [value, num]

    @property
    def min_num(self) -> int:
        return int(self.paths[0][1])

    def clone(self) -> CriticalPaths:
        other = CriticalPaths()
        other.paths = [list(self.paths[0]), list(self.paths[1])]
        return other


@dataclass(slots=True)
class PreFilterState:
    """Hard constraints with the matching-pod count of every eligible domain (upstream preFilterState)."""

    constraints: tuple[Constraint, ...]
    critical_paths: list[CriticalPaths]
    tp_value_to_match_num: list[dict[str, int]]

    def min_match_num(self, i: int) -> int:
        """The global minimum for the skew: 0 while fewer than minDomains domains are eligible."""
        if len(self.tp_value_to_match_num[i]) < self.constraints[i].min_domains:
            return 0
        return self.critical_paths[i].min_num

    def clone(self) -> PreFilterState:
        """A copy for a preemption or nominated-pods trial (constraints are shared: they never change)."""
        return PreFilterState(
            self.constraints,
            [p.clone() for p in self.critical_paths],
            [dict(m) for m in self.tp_value_to_match_num],
        )


class Filtering(SpreadPlugin, PreFilterPlugin, FilterPlugin):
    """PreFilter (with its AddPod/RemovePod extensions) and Filter."""

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Count matching pods per eligible domain of every hard constraint; Skip without hard constraints."""
        state[ALL_NODES_KEY] = nodes
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except ValueError as exc:
            return None, error_status(f"get constraints from pod: {exc}", NAME)
        if not constraints:
            return None, SKIP
        state[PRE_FILTER_STATE_KEY] = self.calc_pre_filter_state(pod, constraints, nodes)
        return None, None

    def calc_pre_filter_state(
        self, pod: PodInfo, constraints: tuple[Constraint, ...], nodes: Sequence[NodeInfo]
    ) -> PreFilterState:
        """calPreFilterState over all nodes of the snapshot: a node counts when it carries every constraint's
        key and passes the constraint's policies; every such node's domain is present, even with 0 pods."""
        required = tuple(dict.fromkeys(c.topology_key for c in constraints))
        counts = [dict(self.domain_sums(pod, c, nodes, required).sums) for c in constraints]
        paths = []
        for tp in counts:
            p = CriticalPaths()
            for value, num in tp.items():
                p.update(value, num)
            paths.append(p)
        return PreFilterState(constraints, paths, counts)

    def pre_filter_extensions(self) -> Self:
        return self

    def _update_with_pod(
        self, state: CycleState, updated: PodInfo, preemptor: PodInfo, node: NodeInfo, delta: int
    ) -> Status | None:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error_status(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)
        record = node.node
        if updated.namespace != preemptor.namespace or record is None:
            return None
        labels = record.labels
        if not node_has_all_keys(labels, s.constraints):
            return None
        spread = pod_spread(preemptor)
        for i, c in enumerate(s.constraints):
            # Unlike countPodsMatchSelector, upstream's update neither skips terminating pods nor treats an
            # empty selector as matching nothing.
            if not c.selector.matches(updated.labels):
                continue
            if not match_node_inclusion_policies(c, preemptor, spread, node):
                continue
            value = labels[c.topology_key]
            tp = s.tp_value_to_match_num[i]
            tp[value] = tp.get(value, 0) + delta
            s.critical_paths[i].update(value, tp[value])
        return None

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        """A pod (nominated, or a victim put back) joins node: its domain's counts grow."""
        return self._update_with_pod(state, to_add, pod, node, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status | None:
        """A pod (a preemption victim) leaves node: its domain's counts shrink."""
        return self._update_with_pod(state, to_remove, pod, node, -1)

    def _filter_plan(self, state: CycleState, pod: PodInfo) -> list[tuple[str, dict[str, int], int]] | Status:
        """Per hard constraint: (topology key, domain counts, the most matching pods a domain may have)."""
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error_status(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)
        plan = []
        for i, c in enumerate(s.constraints):
            self_match = 1 if c.selector.matches(pod.labels) else 0
            # skew = count + selfMatch - minMatch > maxSkew  <=>  count > maxSkew - selfMatch + minMatch
            plan.append((c.topology_key, s.tp_value_to_match_num[i], c.max_skew - self_match + s.min_match_num(i)))
        return plan

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return self.filter_batch(state, pod, [node])[0]

    def filter_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """Missing topology key -> UnschedulableAndUnresolvable; too much skew -> Unschedulable."""
        plan = self._filter_plan(state, pod)
        if isinstance(plan, Status):
            return [plan] * len(nodes)
        out: list[Status | None] = []
        append = out.append
        for n in nodes:
            record = n.node
            labels = record.labels if record is not None else {}
            verdict: Status | None = None
            for key, counts, limit in plan:
                value = labels.get(key)
                if value is None:
                    verdict = _MISSING_LABEL
                    break
                if counts.get(value, 0) > limit:
                    verdict = _SKEW
                    break
            append(verdict)
        return out
