"""InterPodAffinity's PreFilter and Filter (upstream interpodaffinity/filtering.go, v1.37, InterPodAffinity-
HostnameFastPath off): PreFilter counts, per topology pair, existing pods whose required anti-affinity
matches the incoming pod, existing pods matching all its required affinity terms, and those matching each of
its required anti-affinity terms; Filter is then lookups per node in upstream's order (affinity, with the
first-pod-of-a-group exception; anti-affinity; existing pods' anti-affinity)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Self

from scheduler import caching
from scheduler.framework.interface import CycleState, FilterPlugin, PreFilterPlugin, PreFilterResult
from scheduler.framework.labels import Labels
from scheduler.framework.status import SKIP, Status, error_status, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.inter_pod_affinity.common import (
    ALL_NODES_STATE_KEY,
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
    NO_LABELS,
    PRE_FILTER_STATE_KEY,
    SYNCED_STATE_KEY,
    AffinityPlugin,
    labels_of,
    pod_shape_key,
)
from scheduler.plugins.inter_pod_affinity.terms import AffinityTerm, pod_matches_all_terms, pod_terms
from scheduler.plugins.inter_pod_affinity.topology_counts import Contribution, Pair, TopologyCounts

_REJECT_AFFINITY: Final = unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
_REJECT_ANTI_AFFINITY: Final = unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
_REJECT_EXISTING: Final = unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME)


def _existing_anti_contribution(node: NodeInfo, pod: PodInfo, ns_labels: Labels) -> Contribution:
    """getExistingAntiAffinityCounts for one node: its pods' required anti-affinity terms matching pod."""
    labels = labels_of(node)
    out: list[tuple[Pair, int]] = []
    for existing in node.pods_with_required_anti_affinity.values():
        for t in pod_terms(existing).required_anti_affinity:
            if t.matches(pod, ns_labels):
                value = labels.get(t.topology_key)
                if value is not None:
                    out.append(((t.topology_key, value), 1))
    return tuple(out)


def _affinity_contribution(node: NodeInfo, affinity: Sequence[AffinityTerm]) -> Contribution:
    """getIncomingAffinityAntiAffinityCounts for one node, affinity half: pods matching all the terms."""
    labels = labels_of(node)
    out: list[tuple[Pair, int]] = []
    for existing in node.pods.values():
        if pod_matches_all_terms(affinity, existing):
            for t in affinity:
                value = labels.get(t.topology_key)
                if value is not None:
                    out.append(((t.topology_key, value), 1))
    return tuple(out)


def _anti_affinity_contribution(node: NodeInfo, anti: Sequence[AffinityTerm]) -> Contribution:
    """getIncomingAffinityAntiAffinityCounts for one node, anti-affinity half: pods matching each term."""
    labels = labels_of(node)
    out: list[tuple[Pair, int]] = []
    for existing in node.pods.values():
        for t in anti:
            if t.matches(existing):
                value = labels.get(t.topology_key)
                if value is not None:
                    out.append(((t.topology_key, value), 1))
    return tuple(out)


class PreFilterState:
    """What Filter needs, computed once per cycle (upstream preFilterState with the fast-path gate off)."""

    __slots__ = (
        "_blocked",
        "affinity_counts",
        "affinity_terms",
        "anti_affinity_counts",
        "anti_affinity_terms",
        "existing_anti_affinity_counts",
        "namespace_labels",
        "pod",
        "self_match",
    )

    def __init__(
        self,
        pod: PodInfo,
        affinity_terms: tuple[AffinityTerm, ...],
        anti_affinity_terms: tuple[AffinityTerm, ...],
        namespace_labels: dict[str, str],
    ) -> None:
        self.pod = pod
        self.affinity_terms = affinity_terms
        self.anti_affinity_terms = anti_affinity_terms
        self.namespace_labels = namespace_labels
        self.existing_anti_affinity_counts = TopologyCounts()
        self.affinity_counts = TopologyCounts()
        self.anti_affinity_counts = TopologyCounts()
        # The first pod of a group may go where no pod matches yet if it matches its own terms.
        self.self_match = pod_matches_all_terms(affinity_terms, pod)
        self._blocked: _Blocked | None = None

    def clone(self) -> PreFilterState:
        """A copy whose counts can change (nominated pods, preemption) without touching this one."""
        other = PreFilterState.__new__(PreFilterState)
        other.pod = self.pod
        other.affinity_terms = self.affinity_terms
        other.anti_affinity_terms = self.anti_affinity_terms
        other.namespace_labels = self.namespace_labels
        other.self_match = self.self_match
        other.existing_anti_affinity_counts = self.existing_anti_affinity_counts.clone()
        other.affinity_counts = self.affinity_counts.clone()
        other.anti_affinity_counts = self.anti_affinity_counts.clone()
        other._blocked = None
        return other

    def update_with_pod(self, existing: PodInfo, node_labels: Mapping[str, str], multiplier: int) -> None:
        """updateWithPod: count (multiplier 1) or uncount (-1) one pod on a node in all three maps."""
        self._blocked = None
        for t in pod_terms(existing).required_anti_affinity:
            if t.matches(self.pod, self.namespace_labels):
                self.existing_anti_affinity_counts.update(node_labels, t.topology_key, multiplier)
        if pod_matches_all_terms(self.affinity_terms, existing):
            for t in self.affinity_terms:
                self.affinity_counts.update(node_labels, t.topology_key, multiplier)
        for t in self.anti_affinity_terms:
            if t.matches(existing):
                self.anti_affinity_counts.update(node_labels, t.topology_key, multiplier)

    def check(self, labels: Mapping[str, str]) -> Status | None:
        """Filter on a node's labels: affinity, then anti-affinity, then existing pods' anti-affinity."""
        terms = self.affinity_terms
        if terms:
            counts = self.affinity_counts.by_key
            pods_exist = True
            for t in terms:
                value = labels.get(t.topology_key)
                if value is None:
                    return _REJECT_AFFINITY  # every topology key must exist, even for the first pod
                inner = counts.get(t.topology_key)
                if inner is None or inner.get(value, 0) <= 0:
                    pods_exist = False
            if not pods_exist and (counts or not self.self_match):
                return _REJECT_AFFINITY
        anti = self.anti_affinity_counts.by_key
        if anti:
            for t in self.anti_affinity_terms:
                value = labels.get(t.topology_key)
                if value is not None:
                    inner = anti.get(t.topology_key)
                    if inner is not None and inner.get(value, 0) > 0:
                        return _REJECT_ANTI_AFFINITY
        existing = self.existing_anti_affinity_counts.by_key
        if existing:
            for key, inner in existing.items():
                value = labels.get(key)
                if value is not None and inner.get(value, 0) > 0:
                    return _REJECT_EXISTING
        return None

    def batch(self, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """`check` for many nodes: the counts are turned once into sets of blocked topology values, so a node
        costs a few set lookups (one list comprehension for the common single-key anti-affinity)."""
        if not caching.ENABLED:  # the plain path: `check` on the counts, node by node
            check = self.check
            return [check(labels_of(n)) for n in nodes]
        blocked = self._blocked
        if blocked is None:
            blocked = self._blocked = _Blocked.of(self)
        if not self.affinity_terms:
            if not blocked.anti and not blocked.existing:
                return [None] * len(nodes)
            if len(blocked.anti) + len(blocked.existing) == 1:
                ((key, values),) = blocked.anti or blocked.existing
                reject = _REJECT_ANTI_AFFINITY if blocked.anti else _REJECT_EXISTING
                return [reject if n.node is not None and n.node.labels.get(key) in values else None for n in nodes]
        check = blocked.check
        return [check(n.node.labels if n.node is not None else NO_LABELS) for n in nodes]


@dataclass(frozen=True, slots=True)
class _Blocked:
    """A PreFilterState's counts as sets: topology values with a matching pod, per key."""

    affinity: tuple[tuple[str, frozenset[str]], ...]  # per affinity term, in order
    affinity_fallback: bool  # the first-pod exception holds (no matching pod anywhere, the pod matches itself)
    anti: tuple[tuple[str, frozenset[str]], ...]
    existing: tuple[tuple[str, frozenset[str]], ...]

    @staticmethod
    def _positive(counts: TopologyCounts, key: str) -> frozenset[str]:
        return frozenset(v for v, c in counts.by_key.get(key, {}).items() if c > 0)

    @classmethod
    def of(cls, s: PreFilterState) -> _Blocked:
        affinity = tuple((t.topology_key, cls._positive(s.affinity_counts, t.topology_key)) for t in s.affinity_terms)
        anti_keys = dict.fromkeys(t.topology_key for t in s.anti_affinity_terms)
        anti = tuple((k, v) for k in anti_keys if (v := cls._positive(s.anti_affinity_counts, k)))
        existing = tuple(
            (k, v)
            for k in s.existing_anti_affinity_counts.by_key
            if (v := cls._positive(s.existing_anti_affinity_counts, k))
        )
        return cls(affinity, not s.affinity_counts and s.self_match, anti, existing)

    def check(self, labels: Mapping[str, str]) -> Status | None:
        if self.affinity:
            pods_exist = True
            for key, values in self.affinity:
                value = labels.get(key)
                if value is None:
                    return _REJECT_AFFINITY
                if value not in values:
                    pods_exist = False
            if not pods_exist and not self.affinity_fallback:
                return _REJECT_AFFINITY
        for key, values in self.anti:
            if labels.get(key) in values:
                return _REJECT_ANTI_AFFINITY
        for key, values in self.existing:
            if labels.get(key) in values:
                return _REJECT_EXISTING
        return None


class Filtering(AffinityPlugin, PreFilterPlugin, FilterPlugin):
    """PreFilter (with its AddPod/RemovePod extensions) and Filter."""

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Count, per topology pair, the existing pods that matter for the pod's required terms (and the
        existing pods whose required anti-affinity the pod would violate); Skip when nothing can reject."""
        state[ALL_NODES_STATE_KEY] = nodes
        terms = pod_terms(pod)
        if terms.error is not None:
            return None, unresolvable(f"parsing pod: {terms.error}", plugin=NAME)
        affinity = tuple(self.resolve(t) for t in terms.required_affinity)
        anti = tuple(self.resolve(t) for t in terms.required_anti_affinity)
        ns_labels = self.namespace_labels(pod.namespace)
        s = PreFilterState(pod, affinity, anti, ns_labels)

        self._changes.sync(nodes, self._handle.snapshot() if self._handle is not None else None)
        state[SYNCED_STATE_KEY] = nodes
        key = pod_shape_key("InterPodAffinity/existing|", pod, ns_labels)

        def existing_anti(n: NodeInfo) -> Contribution:
            return _existing_anti_contribution(n, pod, ns_labels) if n.pods_with_required_anti_affinity else ()

        existing = s.existing_anti_affinity_counts = self.aggregate(key, existing_anti, nodes).counts.clone()
        if affinity:
            key = "InterPodAffinity/affinity|" + repr(tuple(t.signature() for t in affinity))
            aggregate = self.aggregate(key, lambda n: _affinity_contribution(n, affinity), nodes)
            s.affinity_counts = aggregate.counts.clone()
        if anti:
            key = "InterPodAffinity/anti|" + repr(tuple(t.signature() for t in anti))
            aggregate = self.aggregate(key, lambda n: _anti_affinity_contribution(n, anti), nodes)
            s.anti_affinity_counts = aggregate.counts.clone()

        if not existing and not terms.required_affinity and not terms.required_anti_affinity:
            return None, SKIP
        state[PRE_FILTER_STATE_KEY] = s
        return None, None

    def pre_filter_extensions(self) -> Self:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        """Count a pod as if it ran on node (nominated pods, preemption's re-adds)."""
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error_status(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)
        s.update_with_pod(to_add, labels_of(node), 1)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status | None:
        """Uncount a pod as if it left node (preemption's victims)."""
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error_status(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)
        s.update_with_pod(to_remove, labels_of(node), -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error_status(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)
        return s.check(labels_of(node))

    def filter_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """A few dict lookups per node; nodes pass at once when no count can reject them."""
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            err = error_status(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)
            return [err] * len(nodes)
        return s.batch(nodes)
