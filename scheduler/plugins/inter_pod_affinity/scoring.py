"""InterPodAffinity's PreScore, Score and NormalizeScore (upstream interpodaffinity/scoring.go, v1.37):
PreScore sums weights into per-topology scores (the incoming pod's preferred terms against every pod, and
every pod-with-affinity's required affinity, at hardPodAffinityWeight, and preferred terms against the
incoming pod); Score adds up a node's domains; NormalizeScore maps [min, max] onto [0, 100]."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, PreScorePlugin, ScorePlugin
from scheduler.framework.labels import Labels
from scheduler.framework.status import SKIP, Status, error_status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.inter_pod_affinity.common import (
    ALL_NODES_STATE_KEY,
    NAME,
    POD_AFFINITY,
    POD_ANTI_AFFINITY,
    PRE_SCORE_STATE_KEY,
    SYNCED_STATE_KEY,
    AffinityPlugin,
    labels_of,
    pod_shape_key,
)
from scheduler.plugins.inter_pod_affinity.terms import AffinityTerm, WeightedAffinityTerm, has_preferred, pod_terms
from scheduler.plugins.inter_pod_affinity.topology_counts import Aggregate, Contribution, Pair


class PreScoreState:
    """topologyScore: key -> value -> summed weight, built in PreScore and read by Score."""

    __slots__ = ("topology_score",)

    def __init__(self, topology_score: dict[str, dict[str, int]]) -> None:
        self.topology_score = topology_score

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore, as upstream's Clone


def _incoming_preferred_contribution(
    node: NodeInfo,
    preferred: Sequence[WeightedAffinityTerm],
    preferred_anti: Sequence[WeightedAffinityTerm],
) -> Contribution:
    """The incoming pod's preferred terms against every pod of a node (processExistingPod, first half)."""
    labels = labels_of(node)
    if not labels:
        return ()
    out: list[tuple[Pair, int]] = []
    for existing in node.pods.values():
        for w in preferred:
            t = w.term
            if t.matches(existing):
                value = labels.get(t.topology_key)
                if value is not None:
                    out.append(((t.topology_key, value), w.weight))
        for w in preferred_anti:
            t = w.term
            if t.matches(existing):
                value = labels.get(t.topology_key)
                if value is not None:
                    out.append(((t.topology_key, value), -w.weight))
    return tuple(out)


def _existing_terms_contribution(node: NodeInfo, pod: PodInfo, ns_labels: Labels, hard_weight: int) -> Contribution:
    """Pods with affinity on a node: their required affinity (hardPodAffinityWeight) and preferred terms
    matched against the incoming pod (processExistingPod, second half)."""
    labels = labels_of(node)
    if not labels:
        return ()
    out: list[tuple[Pair, int]] = []

    def add(t: AffinityTerm, weight: int) -> None:
        if t.matches(pod, ns_labels):
            value = labels.get(t.topology_key)
            if value is not None:
                out.append(((t.topology_key, value), weight))

    for existing in node.pods_with_affinity.values():
        terms = pod_terms(existing)
        if hard_weight > 0:
            for t in terms.required_affinity:
                add(t, hard_weight)
        for w in terms.preferred_affinity:
            add(w.term, w.weight)
        for w in terms.preferred_anti_affinity:
            add(w.term, -w.weight)
    return tuple(out)


class Scoring(AffinityPlugin, PreScorePlugin, ScorePlugin):
    """PreScore, Score and NormalizeScore."""

    has_normalize: ClassVar[bool] = True

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        """Sum preferred (and existing pods' required) affinity weights per topology pair over the cluster;
        Skip when nothing scored anywhere."""
        affinity = pod.affinity
        has_constraints = has_preferred(affinity, POD_AFFINITY) or has_preferred(affinity, POD_ANTI_AFFINITY)
        if self.args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return SKIP
        listed: Sequence[NodeInfo] | None = state.get(ALL_NODES_STATE_KEY)
        if listed is None:
            if self._handle is None:
                return error_status("empty shared lister in InterPodAffinity PreScore", NAME)
            listed = self._handle.snapshot().node_info_list
        all_nodes: Sequence[NodeInfo] = listed
        terms = pod_terms(pod)
        if terms.error is not None:
            return error_status(f"failed to parse pod: {terms.error}", NAME)
        ns_labels = self.namespace_labels(pod.namespace)
        if state.get(SYNCED_STATE_KEY) is not all_nodes:  # PreFilter of this cycle did not sync them
            self._changes.sync(all_nodes, self._handle.snapshot() if self._handle is not None else None)
            state[SYNCED_STATE_KEY] = all_nodes
        parts: list[Aggregate] = []
        if has_constraints:
            preferred = tuple(WeightedAffinityTerm(self.resolve(w.term), w.weight) for w in terms.preferred_affinity)
            preferred_anti = tuple(
                WeightedAffinityTerm(self.resolve(w.term), w.weight) for w in terms.preferred_anti_affinity
            )
            key = "InterPodAffinity/preferred|" + repr(
                (
                    tuple((w.term.signature(), w.weight) for w in preferred),
                    tuple((w.term.signature(), w.weight) for w in preferred_anti),
                )
            )
            parts.append(
                self.aggregate(
                    key, lambda n: _incoming_preferred_contribution(n, preferred, preferred_anti), all_nodes
                )
            )
        hard_weight = self.args.hard_pod_affinity_weight
        key = pod_shape_key("InterPodAffinity/symmetric|", pod, ns_labels, hard_weight)

        def symmetric(n: NodeInfo) -> Contribution:
            return _existing_terms_contribution(n, pod, ns_labels, hard_weight) if n.pods_with_affinity else ()

        parts.append(self.aggregate(key, symmetric, all_nodes))
        if not any(p.nonempty for p in parts):
            return SKIP  # no node contributed anything (upstream: index == -1)
        score = parts[0].counts.clone().by_key
        for extra in parts[1:]:
            for tkey, values in extra.counts.by_key.items():
                target = score.setdefault(tkey, {})
                for value, weight in values.items():
                    target[value] = target.get(value, 0) + weight
        state[PRE_SCORE_STATE_KEY] = PreScoreState(score)
        return None

    def _score_state(self, state: CycleState) -> PreScoreState:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            raise KeyError(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return s

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """Sum of the topology scores of the node's domains (negative for anti-affinity)."""
        return self.score_batch(state, pod, [node])[0]

    def score_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        items = tuple(self._score_state(state).topology_score.items())
        out: list[int] = []
        append = out.append
        for n in nodes:
            labels = labels_of(n)
            total = 0
            for key, values in items:
                value = labels.get(key)
                if value is not None:
                    total += values.get(value, 0)
            append(total)
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[int]) -> Status | None:
        """Map [min, max] linearly onto [0, 100] (truncating); all 0 when every node scored the same."""
        if not self._score_state(state).topology_score or not scores:
            return None
        lo, hi = min(scores), max(scores)
        diff = hi - lo
        for i, s in enumerate(scores):
            scores[i] = int(float(MAX_NODE_SCORE) * (float(s - lo) / float(diff))) if diff > 0 else 0
        return None
