"""PodTopologySpread's PreScore, Score and NormalizeScore (upstream podtopologyspread/scoring.go, v1.37): soft
constraints (`whenUnsatisfiable: ScheduleAnyway`, and the default constraints) score a node by the pods
matching each constraint in its domains, each constraint weighted by ln(domains + 2), with Go's own log and
rounding; fewer matching pods is better."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Final

from scheduler import caching
from scheduler.framework.interface import CycleState, PreScorePlugin, ScorePlugin
from scheduler.framework.status import SKIP, Status, error_status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.pod_topology_spread.common import (
    ALL_NODES_KEY,
    LABEL_HOSTNAME,
    NAME,
    PRE_SCORE_STATE_KEY,
    SCHEDULE_ANYWAY,
    Constraint,
    SpreadPlugin,
    count_pods_match_selector,
    node_count,
    node_has_all_keys,
)

INVALID_SCORE: Final = -1


@dataclass(slots=True)
class PreScoreState:
    """Soft constraints, nodes left unscored, per-domain counts and weights (upstream preScoreState)."""

    constraints: tuple[Constraint, ...]
    ignored_nodes: set[str]
    topology_value_to_pod_counts: list[dict[str, int]]
    topology_normalizing_weight: list[float]
    namespace: str = ""

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore, as upstream


# Go's math.Log on amd64 (math/log_amd64.s, the FreeBSD e_log.c algorithm without fused multiply-adds): glibc's
# log, behind Python's math.log, differs from it by one ulp for about 1% of integers (ln 3 among them), which
# could tip a score's rounding. Ported operation by operation; equal to Go's for every integer in 2..100002.
_HSQRT2: Final = 7.07106781186547524401e-01
_LN2_HI: Final = 6.93147180369123816490e-01
_LN2_LO: Final = 1.90821492927058770002e-10
_L1: Final = 6.666666666666735130e-01
_L2: Final = 3.999999999940941908e-01
_L3: Final = 2.857142874366239149e-01
_L4: Final = 2.222219843214978396e-01
_L5: Final = 1.818357216161805012e-01
_L6: Final = 1.531383769920937332e-01
_L7: Final = 1.479819860511658591e-01


def go_log(x: float) -> float:
    """math.Log(x) bit for bit as Go computes it on amd64, for finite x > 0."""
    f1, ki = math.frexp(x)
    if f1 < _HSQRT2:
        f1 *= 2
        ki -= 1
    f = f1 - 1
    k = float(ki)
    s = f / (2 + f)
    s2 = s * s
    s4 = s2 * s2
    t1 = s2 * (_L1 + s4 * (_L3 + s4 * (_L5 + s4 * _L7)))
    t2 = s4 * (_L2 + s4 * (_L4 + s4 * _L6))
    r = t1 + t2
    hfsq = 0.5 * f * f
    return k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)


def topology_normalizing_weight(size: int) -> float:
    """ln(size + 2): a constraint over more domains weighs more, so small domains are not watered down."""
    return go_log(float(size + 2))


def go_round(x: float) -> int:
    """math.Round for a non-negative float: halves away from zero (Python's round() is banker's)."""
    whole = math.floor(x)
    return int(whole) + (1 if x - whole >= 0.5 else 0)


class Scoring(SpreadPlugin, PreScorePlugin, ScorePlugin):
    """PreScore, Score and NormalizeScore."""

    has_normalize: ClassVar[bool] = True

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        """Count matching pods per feasible domain of every soft constraint; Skip without soft constraints."""
        all_nodes: Sequence[NodeInfo] | None = state.get(ALL_NODES_KEY)
        if all_nodes is None:
            all_nodes = self._handle.snapshot().node_info_list if self._handle is not None else nodes
        if not all_nodes:
            return SKIP
        # Only non-system-default rules require every key: with system defaults a node without a zone label
        # still gets hostname spreading.
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        try:
            constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        except ValueError as exc:
            return error_status(f"calculating preScoreState: {exc}", NAME)
        if not constraints:
            return SKIP
        state[PRE_SCORE_STATE_KEY] = self.calc_pre_score_state(pod, constraints, nodes, all_nodes, require_all)
        return None

    def calc_pre_score_state(
        self,
        pod: PodInfo,
        constraints: tuple[Constraint, ...],
        filtered: Sequence[NodeInfo],
        all_nodes: Sequence[NodeInfo],
        require_all: bool,
    ) -> PreScoreState:
        """initPreScoreState over the feasible nodes, then the counts over all nodes (upstream PreScore)."""
        ignored: set[str] = set()
        counts: list[dict[str, int]] = [{} for _ in constraints]
        sizes = [0] * len(constraints)
        zonal = [(i, c) for i, c in enumerate(constraints) if c.topology_key != LABEL_HOSTNAME]
        for n in filtered:
            record = n.node
            labels = record.labels if record is not None else {}
            if require_all and not node_has_all_keys(labels, constraints):
                ignored.add(n.name)
                continue
            for i, c in zonal:
                value = labels.get(c.topology_key, "")
                tp = counts[i]
                if value not in tp:
                    tp[value] = 0
                    sizes[i] += 1
        hostname_size = len(filtered) - len(ignored)
        weights = [
            topology_normalizing_weight(hostname_size if c.topology_key == LABEL_HOSTNAME else sizes[i])
            for i, c in enumerate(constraints)
        ]
        # Hostname counts are taken per node at Score time; only zonal domains are summed over all nodes (those
        # carrying every key when require_all; a node without the key is in domain "" otherwise, as upstream).
        required = tuple(dict.fromkeys(c.topology_key for c in constraints)) if require_all else ()
        for i, c in zonal:
            sums = self.domain_sums(pod, c, all_nodes, required).sums
            tp = counts[i]
            for value in tp:  # a domain without a feasible node is never scored
                tp[value] = sums.get(value, 0)
        return PreScoreState(constraints, ignored, counts, weights, pod.namespace)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """Upstream Score: 0 for an ignored node (NormalizeScore keeps it at 0)."""
        raw = self.score_batch(state, pod, [node])[0]
        return 0 if raw == INVALID_SCORE else raw

    def score_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """round(sum over the node's constraints of count * weight + maxSkew - 1); ignored nodes are marked
        INVALID_SCORE (-1) for NormalizeScore, which turns them into 0 as upstream's does."""
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            raise ValueError(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        ignored = s.ignored_nodes
        namespace = s.namespace
        if not caching.ENABLED:
            return self._score_plain(s, nodes)
        # Per constraint: (topology key, the term each domain adds (count * weight + maxSkew - 1, computed once
        # per domain with the same float operations as upstream's per-node sum), or for the hostname key None
        # and what is needed to take the node's own count: memo key, weight, maxSkew - 1, the constraint).
        plan: list[tuple[str, dict[str, float] | None, str, float, float, Constraint]] = []
        for i, c in enumerate(s.constraints):
            weight = s.topology_normalizing_weight[i]
            skew_term = float(c.max_skew - 1)
            if c.topology_key == LABEL_HOSTNAME:
                plan.append((c.topology_key, None, c.memo_tag + namespace, weight, skew_term, c))
            else:
                per_domain = {
                    v: float(cnt) * weight + skew_term for v, cnt in s.topology_value_to_pod_counts[i].items()
                }
                plan.append((c.topology_key, per_domain, "", weight, skew_term, c))
        out: list[int] = []
        append = out.append
        for n in nodes:
            if ignored and n.name in ignored:
                append(INVALID_SCORE)
                continue
            record = n.node
            labels = record.labels if record is not None else {}
            total = 0.0
            for key, terms, memo_key, weight, skew_term, c in plan:
                value = labels.get(key)
                if value is None:
                    continue
                if terms is not None:
                    total += terms[value]
                else:
                    cnt = n.memo.get(memo_key)
                    if cnt is None:
                        cnt = node_count(n, c, namespace)
                    total += float(cnt) * weight + skew_term
            whole = int(total)  # total >= 0: int() is floor; math.Round rounds halves up
            append(whole + 1 if total - whole >= 0.5 else whole)
        return out

    @staticmethod
    def _score_plain(s: PreScoreState, nodes: Sequence[NodeInfo]) -> list[int]:
        """Upstream's Score node by node (caches disabled): hostname counts taken from the node's pods."""
        out: list[int] = []
        for n in nodes:
            if n.name in s.ignored_nodes:
                out.append(INVALID_SCORE)
                continue
            labels = n.node.labels if n.node is not None else {}
            total = 0.0
            for i, c in enumerate(s.constraints):
                value = labels.get(c.topology_key)
                if value is None:
                    continue
                if c.topology_key == LABEL_HOSTNAME:
                    cnt = count_pods_match_selector(n.pods.values(), c.selector, s.namespace)
                else:
                    cnt = s.topology_value_to_pod_counts[i][value]
                total += float(cnt) * s.topology_normalizing_weight[i] + float(c.max_skew - 1)
            out.append(go_round(total))
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[int]) -> Status | None:
        """Fewest matching pods -> 100: 100 * (max + min - s) / max over scored nodes; ignored -> 0."""
        if state.get(PRE_SCORE_STATE_KEY) is None:
            return error_status(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found', NAME)
        valid = [s for s in scores if s != INVALID_SCORE]
        if not valid:
            for i in range(len(scores)):
                scores[i] = 0
            return None
        lo, hi = min(valid), max(valid)
        for i, s in enumerate(scores):
            if s == INVALID_SCORE:
                scores[i] = 0
            elif hi == 0:
                scores[i] = 100
            else:
                scores[i] = 100 * (hi + lo - s) // hi
        return None
