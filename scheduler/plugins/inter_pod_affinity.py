"""InterPodAffinity: required and preferred pod affinity and anti-affinity (upstream plugins/interpodaffinity).

Semantics are upstream v1.37.2's with the InterPodAffinityHostnameFastPath gate off (its default):

* A term is {namespaces, labelSelector, topologyKey, namespaceSelector}. With neither `namespaces` nor a
  `namespaceSelector` it means the pod's own namespace; a nil selector matches nothing, `{}` everything.
  The incoming pod's namespaceSelector is resolved to namespace names through the Namespace objects; an
  existing pod's namespaceSelector is matched against the incoming pod's namespace labels.
* PreFilter counts, per topology pair (key, value): existing pods whose required anti-affinity terms
  match the incoming pod; existing pods that match all of the incoming pod's required affinity terms; and
  existing pods matching each of its required anti-affinity terms. Filter is then dict lookups per node,
  in upstream's order: affinity (with the first-pod-of-a-group exception), anti-affinity, existing pods'
  anti-affinity.
* PreScore sums weights into per-topology scores: the incoming pod's preferred terms against every pod,
  and every pod-with-affinity's required affinity (hardPodAffinityWeight) and preferred terms against the
  incoming pod; NormalizeScore maps [min, max] onto [0, 100].

`matchLabelKeys`/`mismatchLabelKeys` are not read here: kube-apiserver merges them into the labelSelector
when the pod is created (`scheduler/admission.py` does the same for `simulate`'s input).

Speed: each pod's terms are parsed once (PodInfo.derived). The cluster-wide counts and scores are sums of
per-node contributions; for each incoming pod shape (its labels and namespace, or its resolved terms) the
plugin keeps the sum (`Aggregate`) and, each cycle, only takes back and re-adds the nodes that changed
since (`NodeChanges`: one position-by-position pass over the node list). A node's contribution is memoized
on its NodeInfo. So a Deployment's pods pay a pass over the cluster's pods once, then a few nodes per
cycle, instead of matching every term against every pod every cycle; Filter is a few set lookups per node.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from scheduler import caching
from scheduler.config.decode import (
    ARGS_ENVELOPE_FIELDS,
    FieldErrors,
    as_int,
    as_mapping,
    check_fields,
    check_kind,
    child,
    decode_error,
    json_quote,
    json_type,
)
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
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.labels import (
    NOTHING,
    Labels,
    Selector,
    SelectorError,
    compile_label_selector,
)
from scheduler.framework.labels import aggregate as _aggregate
from scheduler.framework.objects import NAMESPACE
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import SKIP, Code, Status, error_status, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo

NAME: Final = "InterPodAffinity"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME
# The node list PreFilter was given (the cycle's snapshot); PreScore and explanations read it, as upstream
# reads the same snapshot through its shared lister.
ALL_NODES_STATE_KEY: Final = NAME + "/allNodes"
SYNCED_STATE_KEY: Final = NAME + "/synced"  # the node list this cycle already looked for changes in

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod anti-affinity rules"

_REJECT_AFFINITY: Final = unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
_REJECT_ANTI_AFFINITY: Final = unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
_REJECT_EXISTING: Final = unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME)

REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"
POD_AFFINITY: Final = "podAffinity"
POD_ANTI_AFFINITY: Final = "podAntiAffinity"

DEFAULT_HARD_POD_AFFINITY_WEIGHT: Final = 1
MIN_HARD_POD_AFFINITY_WEIGHT: Final = 0
MAX_HARD_POD_AFFINITY_WEIGHT: Final = 100

_NO_LABELS: Final[Mapping[str, str]] = {}

# ---------------------------------------------------------------------------------------------------------
# Args


@dataclass(frozen=True, slots=True)
class Args:
    """InterPodAffinityArgs after defaulting and validation."""

    hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    ignore_preferred_terms_of_existing_pods: bool = False


_ARGS_FIELDS: Final = frozenset({"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"}) | ARGS_ENVELOPE_FIELDS


def parse_args(raw: Mapping[str, Any] | None, *, path: str = "") -> Args:
    """Decode strictly, default (hardPodAffinityWeight 1) and validate (weight in [0, 100])."""
    raw = as_mapping(raw or {}, path)
    check_fields(raw, _ARGS_FIELDS, path)
    check_kind(raw, "InterPodAffinityArgs", path)
    weight_path = child(path, "hardPodAffinityWeight")
    weight_raw = raw.get("hardPodAffinityWeight")
    weight = DEFAULT_HARD_POD_AFFINITY_WEIGHT if weight_raw is None else as_int(weight_raw, weight_path, bits=32)
    ignore_path = child(path, "ignorePreferredTermsOfExistingPods")
    ignore = raw.get("ignorePreferredTermsOfExistingPods")
    if ignore is None:
        ignore = False
    elif not isinstance(ignore, bool):
        decode_error(ignore_path, f"must be a boolean, got {json_type(ignore)} {json_quote(ignore)}")
    errs = FieldErrors()
    if not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
        errs.invalid(
            weight_path,
            weight,
            f"not in valid range [{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]",
        )
    errs.raise_if_any()
    return Args(weight, ignore)


# ---------------------------------------------------------------------------------------------------------
# Terms (upstream fwk.AffinityTerm, WeightedAffinityTerm, NewPodInfo)


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed v1.PodAffinityTerm: which pods (namespaces or namespaceSelector, and labels), where."""

    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    namespace_selector: Selector = NOTHING

    def matches(self, pod: PodInfo, ns_labels: Labels = _NO_LABELS) -> bool:
        """AffinityTerm.Matches: the pod's namespace is selected and its labels match the selector."""
        if pod.namespace in self.namespaces or self.namespace_selector.matches(ns_labels):
            return self.selector.matches(pod.labels)
        return False

    def signature(self) -> tuple[Any, ...]:
        """Everything matching depends on, as a hashable value (memo keys)."""
        return (
            tuple(sorted(self.namespaces)),
            self.namespace_selector.nothing,
            self.namespace_selector.requirements,
            self.selector.nothing,
            self.selector.requirements,
            self.topology_key,
        )


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    """A parsed v1.WeightedPodAffinityTerm."""

    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    """A pod's four term lists. A list with a broken term is empty (as NewPodInfo leaves it nil) and the
    error, worded like NewPodInfo's aggregate, is kept for the incoming pod's PreFilter/PreScore."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    error: str | None = None


_NO_TERMS: Final = PodAffinityTerms()


def _section(affinity: Mapping[str, Any] | None, kind: str, field: str) -> Any:
    if not isinstance(affinity, Mapping):
        return None
    section = affinity.get(kind)
    if not isinstance(section, Mapping):
        return None
    return section.get(field)


def new_affinity_term(namespace: str, raw: Any) -> AffinityTerm:
    """newAffinityTerm: compile both selectors; namespaces default to the pod's own (SelectorError on bad input)."""
    if not isinstance(raw, Mapping):
        raise SelectorError(f"pod affinity term must be an object, got {json_type(raw)}")
    selector = compile_label_selector(raw.get("labelSelector"))
    names = raw.get("namespaces") or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise SelectorError(f"namespaces must be a list of strings, got {json_quote(names)}")
    raw_ns_selector = raw.get("namespaceSelector")
    namespaces = frozenset(names) if names or raw_ns_selector is not None else frozenset((namespace,))
    ns_selector = compile_label_selector(raw_ns_selector)
    topology_key = raw.get("topologyKey") or ""
    if not isinstance(topology_key, str):
        raise SelectorError(f"topologyKey must be a string, got {json_quote(topology_key)}")
    return AffinityTerm(namespaces, selector, topology_key, ns_selector)


def _terms(namespace: str, raw: Any) -> tuple[AffinityTerm, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SelectorError(f"must be a list, got {json_type(raw)}")
    return tuple(new_affinity_term(namespace, t) for t in raw)


def _weighted_terms(namespace: str, raw: Any) -> tuple[WeightedAffinityTerm, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SelectorError(f"must be a list, got {json_type(raw)}")
    out = []
    for item in raw:
        if not isinstance(item, Mapping):
            raise SelectorError(f"weighted pod affinity term must be an object, got {json_type(item)}")
        weight = item.get("weight") or 0
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise SelectorError(f"weight must be an integer, got {json_quote(weight)}")
        out.append(WeightedAffinityTerm(new_affinity_term(namespace, item.get("podAffinityTerm")), weight))
    return tuple(out)


def parse_pod_terms(pod: PodInfo) -> PodAffinityTerms:
    """framework.NewPodInfo's term parsing (uncached; use `pod_terms`)."""
    affinity = pod.affinity
    if not affinity:
        return _NO_TERMS
    ns = pod.namespace
    errors: list[str] = []

    def parse(label: str, kind: str, field: str, weighted: bool) -> tuple[Any, ...]:
        raw = _section(affinity, kind, field)
        try:
            return _weighted_terms(ns, raw) if weighted else _terms(ns, raw)
        except SelectorError as exc:
            errors.append(f"{label}: {exc}")
            return ()

    required = parse("requiredAffinityTerms", POD_AFFINITY, REQUIRED, False)
    required_anti = parse("requiredAntiAffinityTerms", POD_ANTI_AFFINITY, REQUIRED, False)
    preferred = parse("preferredAffinityTerms", POD_AFFINITY, PREFERRED, True)
    preferred_anti = parse("preferredAntiAffinityTerms", POD_ANTI_AFFINITY, PREFERRED, True)
    if not (required or required_anti or preferred or preferred_anti or errors):
        return _NO_TERMS
    return PodAffinityTerms(required, required_anti, preferred, preferred_anti, _aggregate(errors) if errors else None)


def pod_terms(pod: PodInfo) -> PodAffinityTerms:
    """The pod's parsed terms, parsed once per pod object and kept in `pod.derived`."""
    if not pod.affinity:
        return _NO_TERMS
    if not caching.ENABLED:  # the plain path: parsed on every call
        return parse_pod_terms(pod)
    cached: PodAffinityTerms | None = pod.derived.get(NAME)
    if cached is None:
        cached = pod.derived[NAME] = parse_pod_terms(pod)
    return cached


def pod_matches_all_terms(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    """podMatchesAllAffinityTerms: false for no terms (the incoming pod's namespaceSelector is resolved)."""
    if not terms:
        return False
    for t in terms:  # noqa: SIM110 -- hot path: no generator
        if not t.matches(pod):
            return False
    return True


def _has_preferred(affinity: Mapping[str, Any] | None, kind: str) -> bool:
    raw = _section(affinity, kind, PREFERRED)
    return bool(raw)


def _namespace_labels(obj: Mapping[str, Any] | None) -> dict[str, str]:
    if obj is None:
        return {}
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if not isinstance(labels, Mapping):
        return {}
    return {str(k): str(v) for k, v in labels.items()}


# ---------------------------------------------------------------------------------------------------------
# Counts per topology pair


Pair = tuple[str, str]
Contribution = tuple[tuple[Pair, int], ...]
"""A node's share of a count map: ((topologyKey, value), count) entries, possibly repeating a pair."""


class TopologyCounts:
    """topologyToMatchedTermCount as nested dicts (key -> value -> count) for fast per-node lookups."""

    __slots__ = ("by_key",)

    def __init__(self) -> None:
        self.by_key: dict[str, dict[str, int]] = {}

    def __bool__(self) -> bool:
        return bool(self.by_key)

    def get(self, key: str, value: str) -> int:
        inner = self.by_key.get(key)
        return inner.get(value, 0) if inner is not None else 0

    def apply(self, contribution: Contribution, sign: int) -> None:
        """Add (sign 1) or take back (sign -1) a node's contribution; entries that reach zero are dropped."""
        by_key = self.by_key
        for (key, value), count in contribution:
            inner = by_key.get(key)
            if inner is None:
                inner = by_key[key] = {}
            total = inner.get(value, 0) + sign * count
            if total:
                inner[value] = total
            else:
                del inner[value]
                if not inner:
                    del by_key[key]

    def update(self, labels: Mapping[str, str], key: str, delta: int) -> None:
        """topologyToMatchedTermCount.update: +delta at (key, labels[key]) if the node has the key; an entry
        that reaches zero is dropped (so "no entries" keeps meaning "nothing matched")."""
        value = labels.get(key)
        if value is None:
            return
        inner = self.by_key.get(key)
        if inner is None:
            inner = self.by_key[key] = {}
        count = inner.get(value, 0) + delta
        if count:
            inner[value] = count
        else:
            inner.pop(value, None)
            if not inner:
                del self.by_key[key]

    def pairs(self) -> dict[Pair, int]:
        """The flat {(key, value): count} map upstream tests compare."""
        return {(k, v): c for k, inner in self.by_key.items() for v, c in inner.items()}

    def clone(self) -> TopologyCounts:
        other = TopologyCounts()
        other.by_key = {k: dict(inner) for k, inner in self.by_key.items()}
        return other


def _labels_of(node: NodeInfo) -> Mapping[str, str]:
    record = node.node
    return record.labels if record is not None else _NO_LABELS


def _existing_anti_contribution(node: NodeInfo, pod: PodInfo, ns_labels: Labels) -> Contribution:
    """getExistingAntiAffinityCounts for one node: its pods' required anti-affinity terms matching pod."""
    labels = _labels_of(node)
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
    labels = _labels_of(node)
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
    labels = _labels_of(node)
    out: list[tuple[Pair, int]] = []
    for existing in node.pods.values():
        for t in anti:
            if t.matches(existing):
                value = labels.get(t.topology_key)
                if value is not None:
                    out.append(((t.topology_key, value), 1))
    return tuple(out)


def _pod_shape_key(prefix: str, pod: PodInfo, ns_labels: Labels, *extra: Any) -> str:
    """A memo key for what matching an existing pod's terms against `pod` depends on."""
    return prefix + repr((pod.namespace, sorted(pod.labels.items()), sorted(ns_labels.items()), extra))


# ---------------------------------------------------------------------------------------------------------
# Sums over the cluster, kept up to date incrementally

_MISSING: Final = object()
LOG_LIMIT: Final = 20_000  # node changes remembered; an aggregate further behind is rebuilt
AGGREGATE_LIMIT: Final = 32  # pod shapes whose sums are kept (each holds one entry per node)


class NodeChanges:
    """Which nodes changed from one cycle to the next, as a log aggregates catch up on.

    A node changed when the node list holds another NodeInfo object for it: snapshot NodeInfos are never
    modified in place (the cache puts a fresh clone in the snapshot for a node whose pods or labels changed,
    as upstream's snapshot does; explanations clone too). When `nodes` is the scheduler's snapshot list in the
    order of the last sync, the snapshot's log of replaced nodes names them (`Snapshot.changed_since`); else,
    when the list has the previous cycle's shape, comparing it position by position with the previous one finds
    the changes.
    """

    __slots__ = ("_epochs", "_log", "_previous", "_synced", "epoch", "log_start", "nodes")

    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.epoch = 0
        self.log_start = 1  # the oldest epoch whose changes are all in the log
        self._epochs: list[int] = []
        self._log: list[str] = []
        self._previous: list[NodeInfo] = []
        self._synced: tuple[Snapshot, int] | None = None  # the snapshot and its update the last sync saw

    def sync(self, nodes: Sequence[NodeInfo], snapshot: Snapshot | None = None) -> None:
        """Record the nodes that changed since the last sync (`snapshot`: the one `nodes` may come from)."""
        seen = self.nodes
        previous = self._previous
        replaced = None
        if snapshot is not None and self._synced is not None and self._synced[0] is snapshot and caching.ENABLED:
            replaced = snapshot.changed_since(self._synced[1], nodes)  # type: ignore[arg-type]
        if replaced is not None:
            infos = snapshot.node_info_map  # type: ignore[union-attr]
            changed = [n for n in map(infos.__getitem__, dict.fromkeys(replaced)) if seen.get(n.name) is not n]
        elif len(previous) == len(nodes):
            changed = [n for n, p in zip(nodes, previous, strict=True) if n is not p and seen.get(n.name) is not n]
        else:
            changed = [n for n in nodes if seen.get(n.name) is not n]
        removed: list[str] = []
        if len(seen) + sum(1 for n in changed if n.name not in seen) != len(nodes):
            names = {n.name for n in nodes}
            removed = [name for name in seen if name not in names]
        if changed or removed:
            self.epoch += 1
            for n in changed:
                seen[n.name] = n
                self._log.append(n.name)
            for name in removed:
                del seen[name]
                self._log.append(name)
            self._epochs.extend([self.epoch] * (len(changed) + len(removed)))
            if len(self._log) > LOG_LIMIT:
                drop = len(self._log) // 2
                self.log_start = self._epochs[drop] + 1
                del self._log[:drop], self._epochs[:drop]
        if snapshot is not None and nodes is snapshot.node_info_list and snapshot.updates:
            # The cache never modifies a node list it handed out (a change comes as a new list).
            self._previous = snapshot.node_info_list
            self._synced = (snapshot, snapshot.updates)
        else:
            self._previous = list(nodes)
            self._synced = None

    def since(self, epoch: int) -> list[str] | None:
        """Names of nodes changed after `epoch`, or None when the log no longer reaches back that far."""
        if epoch + 1 < self.log_start:
            return None
        return self._log[bisect.bisect_right(self._epochs, epoch) :]


class Aggregate:
    """The sum over all nodes of one per-node contribution (one pod shape), updated for changed nodes only.

    Each node's contribution lives in its NodeInfo memo under `key`; `by_node` remembers which object was
    added, so a node whose memo entry is another object (recomputed) or gone is taken back and re-added.
    """

    __slots__ = ("by_node", "counts", "epoch", "key", "nonempty")

    def __init__(self, key: str) -> None:
        self.key = key
        self.by_node: dict[str, Contribution] = {}
        self.counts = TopologyCounts()
        self.epoch = -1
        self.nonempty = 0  # nodes with a non-empty contribution

    def refresh(self, changes: NodeChanges, compute: Callable[[NodeInfo], Contribution]) -> None:
        names = changes.since(self.epoch) if self.epoch >= 0 else None
        if names is None:
            self.by_node, self.counts, self.nonempty = {}, TopologyCounts(), 0
            names = list(changes.nodes)
        key, nodes, by_node, counts = self.key, changes.nodes, self.by_node, self.counts
        for name in names:
            node = nodes.get(name)
            new: Contribution | None = None
            if node is not None:
                new = node.memo.get(key)
                if new is None:
                    new = node.remember(key, compute(node))
            old = by_node.get(name, _MISSING)
            if new is old:
                continue
            if old is not _MISSING:
                assert isinstance(old, tuple)
                if old:
                    counts.apply(old, -1)
                    self.nonempty -= 1
            if new is None:
                by_node.pop(name, None)
                continue
            if new:
                counts.apply(new, 1)
                self.nonempty += 1
            by_node[name] = new
        self.epoch = changes.epoch

    @classmethod
    def summed(cls, key: str, nodes: Sequence[NodeInfo], compute: Callable[[NodeInfo], Contribution]) -> Aggregate:
        """The plain path (caches disabled): every node's contribution computed and added up afresh."""
        aggregate = cls(key)
        counts = aggregate.counts
        for node in nodes:
            contribution = compute(node)
            if contribution:
                counts.apply(contribution, 1)
                aggregate.nonempty += 1
        return aggregate


# ---------------------------------------------------------------------------------------------------------
# Cycle state


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
            return [check(_labels_of(n)) for n in nodes]
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
        return [check(n.node.labels if n.node is not None else _NO_LABELS) for n in nodes]


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
    labels = _labels_of(node)
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
    labels = _labels_of(node)
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


# ---------------------------------------------------------------------------------------------------------
# Explanations


def describe_selector(selector: Selector) -> str:
    """labels.Selector.String(): "app=web,tier in (a,b),!gone"; "<none>" for Nothing, "" for Everything."""
    if selector.nothing:
        return "<none>"
    parts = []
    for key, op, values in selector.requirements:
        if op == "Equals":
            parts.append(f"{key}={values[0]}")
        elif op == "In":
            parts.append(f"{key} in ({','.join(sorted(values))})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(sorted(values))})")
        elif op == "Exists":
            parts.append(key)
        else:
            parts.append(f"!{key}")
    return ",".join(parts)


def describe_term(t: AffinityTerm) -> str:
    """One line a user can match against the pod spec: selector, namespaces, topologyKey."""
    if t.namespace_selector.everything:
        where = "all namespaces"
    else:
        parts = []
        if t.namespaces:
            parts.append("namespaces " + ",".join(sorted(t.namespaces)))
        if not t.namespace_selector.nothing:
            parts.append("namespaceSelector " + describe_selector(t.namespace_selector))
        where = "; ".join(parts) or "no namespace"
    selector = describe_selector(t.selector) or "<everything>"
    return f"labelSelector {selector} in {where}, topologyKey {t.topology_key}"


# ---------------------------------------------------------------------------------------------------------
# The plugin


class InterPodAffinity(
    PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions, ExplainExtensions, SignPlugin
):
    """Filters on required pod (anti-)affinity, both the incoming pod's and existing pods'; scores preferred."""

    name: ClassVar[str] = NAME
    # Counts existing pods' terms over the cluster's nodes: kept results only where it was skipped.
    sign_reads_cluster: ClassVar[bool] = True
    has_normalize: ClassVar[bool] = True
    object_kinds: ClassVar[tuple[str, ...]] = (NAMESPACE,)

    def __init__(self, args: Args | None = None, handle: Handle | None = None) -> None:
        self.args = args or Args()
        self._handle = handle
        # namespaceSelector requirements -> matching namespace names, valid for one Namespace generation.
        self._ns_cache: dict[tuple[Any, ...], frozenset[str]] = {}
        self._ns_generation = -1
        # Cluster-wide sums per pod shape, kept up to date from the nodes that changed between cycles.
        self._changes = NodeChanges()
        self._aggregates: OrderedDict[str, Aggregate] = OrderedDict()

    def _aggregate(
        self, key: str, compute: Callable[[NodeInfo], Contribution], nodes: Sequence[NodeInfo]
    ) -> Aggregate:
        """The up-to-date sum of `compute` over `nodes`, the nodes of the last sync (memoized per node under key);
        summed afresh while caches are disabled."""
        if not caching.ENABLED:
            return Aggregate.summed(key, nodes, compute)
        aggregates = self._aggregates
        aggregate = aggregates.get(key)
        if aggregate is None:
            aggregate = aggregates[key] = Aggregate(key)
            if len(aggregates) > AGGREGATE_LIMIT:
                aggregates.popitem(last=False)
        else:
            aggregates.move_to_end(key)
        aggregate.refresh(self._changes, compute)
        return aggregate

    # ---------------------------------------------------------------- namespaces

    def _namespace_labels(self, namespace: str) -> dict[str, str]:
        """GetNamespaceLabelsSnapshot: a missing Namespace means no labels."""
        if self._handle is None:
            return {}
        return _namespace_labels(self._handle.objects.get(NAMESPACE, "", namespace))

    def _namespaces_matching(self, selector: Selector) -> frozenset[str]:
        if self._handle is None:
            return frozenset()
        objects = self._handle.objects
        generation = objects.generation(NAMESPACE)
        if not caching.ENABLED:  # the plain path: the Namespaces listed and matched on every call
            return frozenset(
                str((ns.get("metadata") or {}).get("name") or "")
                for ns in objects.list(NAMESPACE)
                if selector.matches(_namespace_labels(ns))
            )
        if generation != self._ns_generation:
            self._ns_cache.clear()
            self._ns_generation = generation
        key = selector.requirements
        found = self._ns_cache.get(key)
        if found is None:
            names = set()
            for ns in objects.list(NAMESPACE):
                if selector.matches(_namespace_labels(ns)):
                    names.add(str((ns.get("metadata") or {}).get("name") or ""))
            found = self._ns_cache[key] = frozenset(names)
        return found

    def resolve(self, term: AffinityTerm) -> AffinityTerm:
        """mergeAffinityTermNamespacesIfNotEmpty: an incoming pod's namespaceSelector becomes names (and
        Nothing); `{}` stays Everything, nil stays Nothing."""
        ns_selector = term.namespace_selector
        if ns_selector.everything or ns_selector.nothing:
            return term
        names = self._namespaces_matching(ns_selector)
        return AffinityTerm(term.namespaces | names, term.selector, term.topology_key, NOTHING)

    # ---------------------------------------------------------------- filter

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
        ns_labels = self._namespace_labels(pod.namespace)
        s = PreFilterState(pod, affinity, anti, ns_labels)

        self._changes.sync(nodes, self._handle.snapshot() if self._handle is not None else None)
        state[SYNCED_STATE_KEY] = nodes
        key = _pod_shape_key("InterPodAffinity/existing|", pod, ns_labels)

        def existing_anti(n: NodeInfo) -> Contribution:
            return _existing_anti_contribution(n, pod, ns_labels) if n.pods_with_required_anti_affinity else ()

        existing = s.existing_anti_affinity_counts = self._aggregate(key, existing_anti, nodes).counts.clone()
        if affinity:
            key = "InterPodAffinity/affinity|" + repr(tuple(t.signature() for t in affinity))
            aggregate = self._aggregate(key, lambda n: _affinity_contribution(n, affinity), nodes)
            s.affinity_counts = aggregate.counts.clone()
        if anti:
            key = "InterPodAffinity/anti|" + repr(tuple(t.signature() for t in anti))
            aggregate = self._aggregate(key, lambda n: _anti_affinity_contribution(n, anti), nodes)
            s.anti_affinity_counts = aggregate.counts.clone()

        if not existing and not terms.required_affinity and not terms.required_anti_affinity:
            return None, SKIP
        state[PRE_FILTER_STATE_KEY] = s
        return None, None

    def pre_filter_extensions(self) -> InterPodAffinity:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        """Count a pod as if it ran on node (nominated pods, preemption's re-adds)."""
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error_status(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)
        s.update_with_pod(to_add, _labels_of(node), 1)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status | None:
        """Uncount a pod as if it left node (preemption's victims)."""
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error_status(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)
        s.update_with_pod(to_remove, _labels_of(node), -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error_status(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)
        return s.check(_labels_of(node))

    def filter_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """A few dict lookups per node; nodes pass at once when no count can reject them."""
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            err = error_status(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)
            return [err] * len(nodes)
        return s.batch(nodes)

    # ---------------------------------------------------------------- score

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        """Sum preferred (and existing pods' required) affinity weights per topology pair over the cluster;
        Skip when nothing scored anywhere."""
        affinity = pod.affinity
        has_constraints = _has_preferred(affinity, POD_AFFINITY) or _has_preferred(affinity, POD_ANTI_AFFINITY)
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
        ns_labels = self._namespace_labels(pod.namespace)
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
                self._aggregate(
                    key, lambda n: _incoming_preferred_contribution(n, preferred, preferred_anti), all_nodes
                )
            )
        hard_weight = self.args.hard_pod_affinity_weight
        key = _pod_shape_key("InterPodAffinity/symmetric|", pod, ns_labels, hard_weight)

        def symmetric(n: NodeInfo) -> Contribution:
            return _existing_terms_contribution(n, pod, ns_labels, hard_weight) if n.pods_with_affinity else ()

        parts.append(self._aggregate(key, symmetric, all_nodes))
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
            labels = _labels_of(n)
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

    # ---------------------------------------------------------------- queueing

    def events_to_register(self) -> list[ClusterEvent]:
        """v1.37's EventsToRegister: an assigned pod added, relabelled or deleted; a node added or
        relabelled. (A change to the pending pod itself requeues it through the queue's update path.)"""
        return [
            ClusterEvent(ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        ]

    # ---------------------------------------------------------------- explain

    def explain_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status | None
    ) -> list[ExplainDetail]:
        """Which term found no pod in the node's domain, or which pods (and whose terms) rule the node out."""
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if status is None or s is None or status.code == Code.SKIP:
            return []
        labels = _labels_of(node)
        all_nodes: Sequence[NodeInfo] = state.get(ALL_NODES_STATE_KEY) or ()
        reason = status.message()
        if reason == ERR_REASON_AFFINITY_RULES_NOT_MATCH:
            return self._explain_affinity(s, labels)
        if reason == ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH:
            return self._explain_anti_affinity(s, labels, all_nodes)
        if reason == ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH:
            return self._explain_existing(s, labels, all_nodes)
        return []

    def _explain_affinity(self, s: PreFilterState, labels: Mapping[str, str]) -> list[ExplainDetail]:
        out: list[ExplainDetail] = []
        for i, t in enumerate(s.affinity_terms):
            value = labels.get(t.topology_key)
            data: dict[str, Any] = {"term": i, "kind": "podAffinity", "topologyKey": t.topology_key}
            if value is None:
                out.append(
                    ExplainDetail(
                        f"required pod affinity term {i} ({describe_term(t)}): the node has no label {t.topology_key}",
                        {**data, "missingLabel": t.topology_key},
                    )
                )
            elif s.affinity_counts.get(t.topology_key, value) <= 0:
                out.append(
                    ExplainDetail(
                        f"required pod affinity term {i} ({describe_term(t)}): no pod matching all required "
                        f"affinity terms runs in domain {t.topology_key}={value}",
                        {**data, "domain": f"{t.topology_key}={value}"},
                    )
                )
        if out and not s.affinity_counts and all(t.topology_key in labels for t in s.affinity_terms):
            out.append(
                ExplainDetail(
                    "no pod in the cluster matches all required affinity terms, and the pod does not match its "
                    "own terms, so it cannot be the first of its group",
                    {"kind": "podAffinity", "firstPodException": False},
                )
            )
        return out

    def _explain_anti_affinity(
        self, s: PreFilterState, labels: Mapping[str, str], all_nodes: Sequence[NodeInfo]
    ) -> list[ExplainDetail]:
        out: list[ExplainDetail] = []
        for i, t in enumerate(s.anti_affinity_terms):
            value = labels.get(t.topology_key)
            if value is None or s.anti_affinity_counts.get(t.topology_key, value) <= 0:
                continue
            domain = f"{t.topology_key}={value}"
            for other in all_nodes:
                if _labels_of(other).get(t.topology_key) != value:
                    continue
                for existing in other.pods.values():
                    if t.matches(existing):
                        out.append(
                            ExplainDetail(
                                f"pod {existing.key} on node {other.name} matches required anti-affinity term {i} "
                                f"({describe_term(t)}) in domain {domain}",
                                {
                                    "pod": existing.key,
                                    "node": other.name,
                                    "term": i,
                                    "kind": "podAntiAffinity",
                                    "domain": domain,
                                },
                            )
                        )
        return out

    def _explain_existing(
        self, s: PreFilterState, labels: Mapping[str, str], all_nodes: Sequence[NodeInfo]
    ) -> list[ExplainDetail]:
        out: list[ExplainDetail] = []
        for other in all_nodes:
            other_labels = _labels_of(other)
            for existing in other.pods_with_required_anti_affinity.values():
                for i, t in enumerate(pod_terms(existing).required_anti_affinity):
                    value = other_labels.get(t.topology_key)
                    if value is None or labels.get(t.topology_key) != value:
                        continue
                    if not t.matches(s.pod, s.namespace_labels):
                        continue
                    domain = f"{t.topology_key}={value}"
                    out.append(
                        ExplainDetail(
                            f"pod {existing.key} on node {other.name} has required anti-affinity term {i} "
                            f"({describe_term(t)}) that matches this pod, in domain {domain}",
                            {
                                "pod": existing.key,
                                "node": other.name,
                                "term": i,
                                "kind": "existingPodAntiAffinity",
                                "domain": domain,
                            },
                        )
                    )
        return out


def new(raw_args: Mapping[str, Any] | Args | None, handle: Handle) -> InterPodAffinity:
    """Registry factory: accepts raw pluginConfig args or already parsed Args."""
    args = raw_args if isinstance(raw_args, Args) else parse_args(raw_args)
    return InterPodAffinity(args, handle)
