"""NodeAffinity: nodeSelector, required and preferred node affinity (upstream plugins/nodeaffinity, v1.37).

Selectors are compiled once per scheduling cycle (PreFilter/PreScore) into plain closures over a node's
labels and name, so filtering thousands of nodes is one cheap call per node. Semantics follow
component-helpers `nodeaffinity` and apimachinery `labels`/`fields`:

* terms are ORed, a term's matchExpressions and matchFields are ANDed; a term with neither is dropped
  (an empty required term list matches no node);
* a term with a parse error (bad operator, Gt with a non-integer, invalid key...) never matches, and the
  error is only reported when no term matched (LazyErrorNodeSelector); Filter ignores it;
* matchFields only knows `metadata.name`, with In/NotIn and exactly one value.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from scheduler.config.errors import ConfigError
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    NODE,
    ActionType,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
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
from scheduler.framework.labels import aggregate as _aggregate
from scheduler.framework.labels import invalid as _invalid
from scheduler.framework.node_selector import (
    OBJECT_NAME_FIELD,
    REQUIRED_KEY,
    Matcher,
    NodeSelectorMatcher,
    RequiredNodeAffinity,
    compile_term,
    is_empty_term,
    pod_node_affinity,
)
from scheduler.framework.status import SKIP, Status, error_status, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.framework.yaml_flow import flow
from scheduler.plugins.normalize import default_normalize_score

NAME = "NodeAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"


PREFERRED_KEY = "preferredDuringSchedulingIgnoredDuringExecution"

_REJECT_POD = unresolvable(ERR_REASON_POD, plugin=NAME)
_REJECT_ENFORCED = unresolvable(ERR_REASON_ENFORCED, plugin=NAME)
_REJECT_CONFLICT = unresolvable(ERR_REASON_CONFLICT, plugin=NAME)

@dataclass(frozen=True, slots=True)
class PreferredTerms:
    """Compiled preferredDuringScheduling terms; weight-0 and empty terms are dropped."""

    terms: tuple[tuple[int, Matcher], ...]

    @classmethod
    def compile(cls, raw: Any, path: str = "") -> tuple[PreferredTerms | None, str | None]:
        """NewPreferredSchedulingTerms: (terms, None), or (None, aggregated error) if any term is broken."""
        if not isinstance(raw, list):
            return None, _invalid(path or "preferredDuringSchedulingIgnoredDuringExecution", raw, "must be a list")
        terms: list[tuple[int, Matcher]] = []
        errors: list[str] = []
        for i, item in enumerate(raw):
            item_path = f"{path}[{i}]"
            if not isinstance(item, Mapping):
                errors.append(_invalid(item_path, item, "must be an object"))
                continue
            weight = item.get("weight") or 0
            if isinstance(weight, bool) or not isinstance(weight, int):
                errors.append(_invalid(f"{item_path}.weight", weight, "must be an integer"))
                continue
            preference = item.get("preference") or {}
            if weight == 0 or is_empty_term(preference):
                continue
            match, errs = compile_term(preference, item_path)
            if match is None:
                errors.extend(errs)
            else:
                terms.append((weight, match))
        if errors:
            return None, _aggregate(errors)
        return cls(tuple(terms)), None

    def score(self, labels: Mapping[str, str], name: str) -> int:
        """Sum of the weights of the matching terms."""
        total = 0
        for weight, match in self.terms:
            if match(labels, name):
                total += weight
        return total


# ---------------------------------------------------------------------------------------------------------
# Args


_ARGS_FIELDS = frozenset({"addedAffinity", "apiVersion", "kind"})
_AFFINITY_FIELDS = frozenset({REQUIRED_KEY, PREFERRED_KEY})


@dataclass(frozen=True, slots=True)
class Args:
    """NodeAffinityArgs: `addedAffinity` is applied to every pod on top of its own node affinity."""

    added_affinity: Mapping[str, Any] | None = None


def parse_args(raw: Mapping[str, Any] | None) -> Args:
    """Parse and validate NodeAffinityArgs; ConfigError names the offending field."""
    if raw is None:
        return Args()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"args: expected an object, got {type(raw).__name__}")
    for key in raw:
        if key not in _ARGS_FIELDS:
            raise ConfigError(f'{key}: unknown field "{key}"')
    added = raw.get("addedAffinity")
    if added is None:
        return Args()
    if not isinstance(added, Mapping):
        raise ConfigError(f"addedAffinity: expected an object, got {type(added).__name__}")
    for key in added:
        if key not in _AFFINITY_FIELDS:
            raise ConfigError(f'addedAffinity.{key}: unknown field "{key}"')
    errors: list[str] = []
    required = added.get(REQUIRED_KEY)
    if required is not None:
        compiled = NodeSelectorMatcher.compile(required, f"addedAffinity.{REQUIRED_KEY}")
        errors.extend(compiled.errors)
    preferred = added.get(PREFERRED_KEY)
    if preferred:
        _, err = PreferredTerms.compile(preferred, f"addedAffinity.{PREFERRED_KEY}")
        if err is not None:
            errors.append(err)
    if errors:
        raise ConfigError(_aggregate(errors))
    return Args(dict(added))


# ---------------------------------------------------------------------------------------------------------
# The plugin


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    required: RequiredNodeAffinity


def _without_selector_key(key: str) -> Callable[[PodInfo], PodInfo]:
    """A pod transform for a what-if fix: nodeSelector without `key`."""

    def drop(pod: PodInfo) -> PodInfo:
        return pod.evolve(node_selector={k: v for k, v in pod.node_selector.items() if k != key})

    return drop


def _requirement_text(expr: Any) -> str:
    """One matchExpressions entry as its author wrote it: `kubernetes.io/arch In [arm64]`."""
    if not isinstance(expr, Mapping):
        return flow(expr)
    values = expr.get("values")
    text = f"{expr.get('key')} {expr.get('operator')}"
    return f"{text} {flow(list(values))}" if isinstance(values, list) and values else text


def _without_requirement(term: int, expr: int, whole: bool) -> Callable[[PodInfo], PodInfo]:
    """A pod transform for a what-if fix: required node affinity without one requirement (or at all)."""

    def drop(pod: PodInfo) -> PodInfo:
        affinity = copy.deepcopy(dict(pod.affinity or {}))
        node_affinity = affinity.get("nodeAffinity") or {}
        if whole:
            node_affinity.pop(REQUIRED_KEY, None)
        else:
            del node_affinity[REQUIRED_KEY]["nodeSelectorTerms"][term]["matchExpressions"][expr]
        return pod.evolve(affinity=affinity)

    return drop


class NodeAffinity(
    PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions, ExplainExtensions, SignPlugin
):
    """Filters on nodeSelector + required affinity (+ addedAffinity); scores preferred terms by weight."""

    name: ClassVar[str] = NAME
    has_normalize: ClassVar[bool] = True

    def __init__(self, args: Args | None = None, handle: Handle | None = None) -> None:
        self._handle = handle
        self.args = args or Args()
        self._added_selector: NodeSelectorMatcher | None = None
        self._added_match: Matcher | None = None
        self._added_preferred: PreferredTerms | None = None
        added = self.args.added_affinity
        if added:
            required = added.get(REQUIRED_KEY)
            if required is not None:
                self._added_selector = NodeSelectorMatcher.compile(required, f"addedAffinity.{REQUIRED_KEY}")
                if self._added_selector.errors:
                    raise ConfigError(_aggregate(self._added_selector.errors))
                self._added_match = self._added_selector.matcher()
            preferred = added.get(PREFERRED_KEY)
            if preferred:
                terms, err = PreferredTerms.compile(preferred, f"addedAffinity.{PREFERRED_KEY}")
                if err is not None:
                    raise ConfigError(err)
                self._added_preferred = terms

    def sign_pod(self, pod: PodInfo) -> tuple[Any, ...]:
        """spec.nodeSelector and spec.affinity.nodeAffinity (upstream NodeSelectorSignerName and
        NodeAffinitySignerName; the raw terms, so differently ordered equal terms merely miss)."""
        return (tuple(sorted(pod.node_selector.items())), repr(pod_node_affinity(pod.affinity)))

    # ---------------------------------------------------------------- filter

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Compile the pod's requirements; Skip when nothing constrains it; narrow to pinned node names."""
        node_affinity = pod_node_affinity(pod.affinity)
        required = node_affinity.get(REQUIRED_KEY) if node_affinity is not None else None
        if required is None and self._added_match is None and not pod.node_selector:
            return None, SKIP
        state[PRE_FILTER_STATE_KEY] = _PreFilterState(RequiredNodeAffinity.of(pod))
        if not isinstance(required, Mapping):
            return None, None
        terms = required.get("nodeSelectorTerms")
        if not isinstance(terms, list) or not terms:
            return None, None
        names = pinned_node_names(terms)
        if names is None:
            return None, None
        if not names:
            return None, _REJECT_CONFLICT
        return PreFilterResult(names), None

    def _required(self, state: CycleState, pod: PodInfo) -> RequiredNodeAffinity:
        cached: _PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        return cached.required if cached is not None else RequiredNodeAffinity.of(pod)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        record = node.node
        if record is None:
            return _REJECT_ENFORCED if self._added_match is not None else _REJECT_POD
        labels, name = record.labels, record.name
        if self._added_match is not None and not self._added_match(labels, name):
            return _REJECT_ENFORCED
        return None if self._required(state, pod).matches(labels, name) else _REJECT_POD

    def filter_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """One or two compiled-closure calls per node."""
        matches = self._required(state, pod).matches
        added = self._added_match
        out: list[Status | None] = []
        append = out.append
        for n in nodes:
            record = n.node
            if record is None:
                append(_REJECT_ENFORCED if added is not None else _REJECT_POD)
            elif added is not None and not added(record.labels, record.name):
                append(_REJECT_ENFORCED)
            elif matches(record.labels, record.name):
                append(None)
            else:
                append(_REJECT_POD)
        return out

    # ---------------------------------------------------------------- score

    def _pod_preferred(self, pod: PodInfo) -> tuple[PreferredTerms | None, str | None]:
        node_affinity = pod_node_affinity(pod.affinity)
        raw = node_affinity.get(PREFERRED_KEY) if node_affinity is not None else None
        if not raw:
            return None, None
        return PreferredTerms.compile(raw)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        """Compile preferred terms; Skip when neither the pod nor addedAffinity has any; broken -> Error."""
        terms, err = self._pod_preferred(pod)
        if err is not None:
            return error_status(err, NAME)
        if terms is None and self._added_preferred is None:
            return SKIP
        state[PRE_SCORE_STATE_KEY] = terms
        return None

    def _score_terms(self, state: CycleState, pod: PodInfo) -> list[PreferredTerms]:
        out = [self._added_preferred] if self._added_preferred is not None else []
        if PRE_SCORE_STATE_KEY in state:
            terms: PreferredTerms | None = state[PRE_SCORE_STATE_KEY]
        else:
            terms, err = self._pod_preferred(pod)
            if err is not None:
                raise ValueError(err)
        if terms is not None:
            out.append(terms)
        return out

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """Sum of weights of matching preferred terms (pod's and addedAffinity's)."""
        record = node.node
        if record is None:
            return 0
        return sum(t.score(record.labels, record.name) for t in self._score_terms(state, pod))

    def score_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        weighted = [wm for t in self._score_terms(state, pod) for wm in t.terms]
        out: list[int] = []
        append = out.append
        for n in nodes:
            record = n.node
            total = 0
            if record is not None:
                labels, name = record.labels, record.name
                for weight, match in weighted:
                    if match(labels, name):
                        total += weight
            append(total)
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[int]) -> Status | None:
        """Highest sum -> 100, proportional below (DefaultNormalizeScore, not reversed)."""
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    def suggest_fixes(self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status) -> list[FixCandidate]:
        """Drop a nodeSelector key, or one requirement of a required affinity term, that this node fails, or
        the whole required affinity when no smaller change can match (dropping a term's only requirement
        would leave an empty term, which matches nothing). Scheduler-enforced addedAffinity and matchFields
        pins are not the pod's to change."""
        record = node.node
        if record is None or ERR_REASON_ENFORCED in status.reasons:
            return []
        labels = record.labels
        failing_keys = [(k, v) for k, v in sorted(pod.node_selector.items()) if labels.get(k) != v]
        node_affinity = pod_node_affinity(pod.affinity)
        required = node_affinity.get(REQUIRED_KEY) if node_affinity is not None else None
        terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
        terms = terms if isinstance(terms, list) else []
        # Per term that could be relaxed: the indexes of its requirements this node fails.
        failing: list[tuple[int, list[int], int]] = []
        affinity_matches = not terms
        for i, term in enumerate(terms):
            if not isinstance(term, Mapping) or term.get("matchFields"):
                continue
            exprs = term.get("matchExpressions") or []
            misses = []
            for j, expr in enumerate(exprs):
                check, _ = compile_term({"matchExpressions": [expr]}, "")
                if check is None or not check(labels, node.name):
                    misses.append(j)
            if exprs and not misses:
                affinity_matches = True
            failing.append((i, misses, len(exprs)))
        out = [
            FixCandidate(
                key=f"drop-selector:{key}",
                kind="drop-node-selector",
                description=f"drop nodeSelector {key}={value}",
                pod=_without_selector_key(key),
                data={"nodeSelector": {key: value}},
                partial=len(failing_keys) > 1 or not affinity_matches,
            )
            for key, value in failing_keys
        ]
        if affinity_matches:
            return out
        single = False  # some term matches once one requirement is dropped
        for i, misses, size in failing:
            if not misses or size == 1:  # a term's only requirement: dropping it leaves an empty term
                continue
            single |= len(misses) == 1
            for j in misses:
                expr = terms[i]["matchExpressions"][j]
                out.append(
                    FixCandidate(
                        key=f"relax-affinity:{i}:{j}",
                        kind="relax-node-affinity",
                        description=f"drop requirement {_requirement_text(expr)} from required node affinity "
                        f"term {i + 1}",
                        pod=_without_requirement(i, j, False),
                        data={"term": i, "requirement": dict(expr)},
                        partial=len(misses) > 1 or bool(failing_keys),
                    )
                )
        if not single and len(failing) == len(terms) and isinstance(required, Mapping):
            summary = " or ".join(
                ", ".join(_requirement_text(e) for e in terms[i].get("matchExpressions") or []) or "{}"
                for i, _, _ in failing
            )
            out.append(
                FixCandidate(
                    key="drop-affinity",
                    kind="drop-node-affinity",
                    description=f"drop the required node affinity ({summary})",
                    pod=_without_requirement(0, 0, True),
                    data={REQUIRED_KEY: copy.deepcopy(dict(required))},
                    partial=bool(failing_keys),
                )
            )
        return out

    def events_to_register(self) -> list[ClusterEvent]:
        """A new node or changed node labels may satisfy the affinity."""
        return [ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)]


def pinned_node_names(terms: Sequence[Any]) -> set[str] | None:
    """Nodes named by `matchFields metadata.name In` in every term (union over terms, intersection within).

    None when some term names no node that way (every node must be filtered); an empty set means the
    terms contradict each other. Broken requirements still count here, as upstream reads raw values.
    """
    names: set[str] | None = None
    for term in terms:
        term_names: set[str] | None = None
        fields = term.get("matchFields") if isinstance(term, Mapping) else None
        for req in fields if isinstance(fields, list) else ():
            if not isinstance(req, Mapping) or req.get("key") != OBJECT_NAME_FIELD or req.get("operator") != "In":
                continue
            values = req.get("values")
            found = {str(v) for v in values} if isinstance(values, list) else set()
            term_names = found if term_names is None else term_names & found
        if term_names is None:
            return None
        names = term_names if names is None else names | term_names
    return names


def new(raw_args: Mapping[str, Any] | Args | None, handle: Handle) -> NodeAffinity:
    """Registry factory: accepts raw pluginConfig args or an already parsed Args."""
    args = raw_args if isinstance(raw_args, Args) else parse_args(raw_args)
    return NodeAffinity(args, handle)
