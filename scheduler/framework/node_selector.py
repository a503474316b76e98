"""v1.NodeSelector matching as component-helpers `nodeaffinity` does it, compiled once into closures.

Shared by NodeAffinity (pod node affinity), VolumeBinding (a PV's node affinity) and the DRA allocator (a
ResourceSlice's or device's nodeSelector); `RequiredNodeAffinity` (a pod's nodeSelector and required node
affinity, GetRequiredNodeAffinity) also by PodTopologySpread, which counts only the nodes a pod could land
on. Semantics follow `nodeaffinity` and apimachinery `labels`/`fields`:

* terms are ORed, a term's matchExpressions and matchFields are ANDed; a term with neither is dropped
  (an empty term list matches no node);
* a term with a parse error (bad operator, Gt with a non-integer, invalid key...) never matches, and the
  error is only reported when no term matched (LazyErrorNodeSelector), or at once by callers that want
  NewNodeSelector's strictness (`errors`);
* matchFields only knows `metadata.name`, with In/NotIn and exactly one value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.framework.labels import aggregate as _aggregate
from scheduler.framework.labels import invalid as _invalid
from scheduler.framework.labels import label_key_errors, label_value_errors, parse_go_int64
from scheduler.framework.labels import not_supported as _not_supported

if TYPE_CHECKING:
    from scheduler.framework.types import PodInfo

OBJECT_NAME_FIELD = "metadata.name"
VALID_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
VALID_FIELD_SELECTOR_OPERATORS = ("In", "NotIn")
REQUIRED_KEY = "requiredDuringSchedulingIgnoredDuringExecution"  # of a NodeAffinity

Matcher = Callable[[Mapping[str, str], str], bool]
"""A compiled check over (node labels, node name)."""

# ---------------------------------------------------------------------------------------------------------
# Compiling requirements and terms


def all_of(checks: Sequence[Matcher]) -> Matcher:
    """AND of checks, unrolled for the common short cases."""
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        a, b = checks
        return lambda labels, name: a(labels, name) and b(labels, name)
    frozen = tuple(checks)

    def every(labels: Mapping[str, str], name: str) -> bool:
        for check in frozen:  # noqa: SIM110 -- a plain loop is ~2x faster than all(<genexpr>) here
            if not check(labels, name):
                return False
        return True

    return every


def _label_check(key: str, op: str, values: list[str]) -> Matcher:
    """labels.Requirement.Matches for one already validated requirement."""
    if op == "In":
        if len(values) == 1:
            only = values[0]
            return lambda labels, name: labels.get(key) == only
        allowed = frozenset(values)
        return lambda labels, name: labels.get(key) in allowed
    if op == "NotIn":  # an absent label satisfies NotIn
        banned = frozenset(values)
        return lambda labels, name: labels.get(key) not in banned
    if op == "Exists":
        return lambda labels, name: key in labels
    if op == "DoesNotExist":
        return lambda labels, name: key not in labels
    bound = parse_go_int64(values[0])
    assert bound is not None  # validated by the caller
    greater = op == "Gt"

    def compare(labels: Mapping[str, str], name: str) -> bool:
        raw = labels.get(key)
        if raw is None:
            return False
        value = parse_go_int64(raw)
        if value is None:
            return False
        return value > bound if greater else value < bound

    return compare


def _field_check(key: str, op: str, value: str) -> Matcher:
    """fields.OneTermEqual/NotEqualSelector over the node's only field, metadata.name.

    Upstream skips the field check for a node without a name; any other key reads as "".
    """
    if key == OBJECT_NAME_FIELD:
        if op == "In":
            return lambda labels, name: not name or name == value
        return lambda labels, name: not name or name != value
    constant = (value == "") if op == "In" else (value != "")
    return lambda labels, name: not name or constant


def _string_list(raw: Any, path: str, errs: list[str]) -> list[str] | None:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        errs.append(_invalid(path, raw, "must be a list of strings"))
        return None
    return list(raw)


def _compile_label_requirement(req: Any, path: str, errs: list[str]) -> Matcher | None:
    """One matchExpressions entry (nodeSelectorRequirementsAsSelector + labels.NewRequirement)."""
    if not isinstance(req, Mapping):
        errs.append(_invalid(path, req, "must be an object"))
        return None
    op = req.get("operator")
    if op not in VALID_SELECTOR_OPERATORS:
        errs.append(_not_supported(f"{path}.operator", op, VALID_SELECTOR_OPERATORS))
        return None
    key = req.get("key")
    values = _string_list(req.get("values"), f"{path}.values", errs)
    if values is None:
        return None
    own: list[str] = []
    if not isinstance(key, str):
        own.append(_invalid(f"{path}.key", key, "must be a string"))
    else:
        key_errs = label_key_errors(key)
        if key_errs:
            own.append(_invalid(f"{path}.key", key, "; ".join(key_errs)))
    if op in ("In", "NotIn") and not values:
        own.append(_invalid(f"{path}.values", values, "for 'in', 'notin' operators, values set can't be empty"))
    elif op in ("Exists", "DoesNotExist") and values:
        own.append(_invalid(f"{path}.values", values, "values set must be empty for exists and does not exist"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            own.append(_invalid(f"{path}.values", values, "for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, v in enumerate(values):
            if parse_go_int64(v) is None:
                own.append(_invalid(f"{path}.values[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer"))
    for i, v in enumerate(values):
        value_errs = label_value_errors(v)
        if value_errs:
            own.append(_invalid(f"{path}.values[{i}][{key}]", v, "; ".join(value_errs)))
    if own:
        errs.extend(own)
        return None
    assert isinstance(key, str)
    return _label_check(key, op, values)


def _compile_field_requirement(req: Any, path: str, errs: list[str]) -> Matcher | None:
    """One matchFields entry (nodeSelectorRequirementsAsFieldSelector)."""
    if not isinstance(req, Mapping):
        errs.append(_invalid(path, req, "must be an object"))
        return None
    op = req.get("operator")
    if op not in VALID_FIELD_SELECTOR_OPERATORS:
        errs.append(_not_supported(f"{path}.operator", op, VALID_FIELD_SELECTOR_OPERATORS))
        return None
    values = _string_list(req.get("values"), f"{path}.values", errs)
    if values is None:
        return None
    if len(values) != 1:
        errs.append(_invalid(f"{path}.values", values, "must have one element"))
        return None
    return _field_check(str(req.get("key") or ""), op, values[0])


def _requirements(raw: Any, path: str, errs: list[str]) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        errs.append(_invalid(path, raw, "must be a list"))
        return []
    return raw


def is_empty_term(term: Any) -> bool:
    """A term without matchExpressions and matchFields (it is dropped: it matches nothing)."""
    return isinstance(term, Mapping) and not term.get("matchExpressions") and not term.get("matchFields")


def compile_term(term: Any, path: str) -> tuple[Matcher | None, list[str]]:
    """Compile a NodeSelectorTerm; (None, errors) when any requirement is broken."""
    errs: list[str] = []
    if not isinstance(term, Mapping):
        return None, [_invalid(path, term, "must be an object")]
    checks: list[Matcher] = []
    exprs = _requirements(term.get("matchExpressions"), f"{path}.matchExpressions", errs)
    for i, req in enumerate(exprs):
        check = _compile_label_requirement(req, f"{path}.matchExpressions[{i}]", errs)
        if check is not None:
            checks.append(check)
    fields = _requirements(term.get("matchFields"), f"{path}.matchFields", errs)
    for i, req in enumerate(fields):
        check = _compile_field_requirement(req, f"{path}.matchFields[{i}]", errs)
        if check is not None:
            checks.append(check)
    if errs:
        return None, errs
    if not checks:
        return (lambda labels, name: False), []
    return all_of(checks), []


@dataclass(frozen=True, slots=True)
class NodeSelectorMatcher:
    """A compiled v1.NodeSelector with lazy errors: broken terms never match and are reported on demand."""

    terms: tuple[Matcher, ...]
    errors: tuple[str, ...] = ()

    @classmethod
    def compile(cls, selector: Any, path: str = "") -> NodeSelectorMatcher:
        """Compile {nodeSelectorTerms: [...]} (NewLazyErrorNodeSelector); path prefixes error fields."""
        prefix = f"{path}.nodeSelectorTerms" if path else "nodeSelectorTerms"
        if not isinstance(selector, Mapping):
            return cls((), (_invalid(path or "nodeSelector", selector, "must be an object"),))
        raw_terms = selector.get("nodeSelectorTerms")
        if raw_terms is None:
            raw_terms = []
        if not isinstance(raw_terms, list):
            return cls((), (_invalid(prefix, raw_terms, "must be a list"),))
        terms: list[Matcher] = []
        errors: list[str] = []
        for i, term in enumerate(raw_terms):
            if is_empty_term(term):
                continue
            match, errs = compile_term(term, f"{prefix}[{i}]")
            if match is None:
                errors.extend(errs)
            else:
                terms.append(match)
        return cls(tuple(terms), tuple(errors))

    def matcher(self) -> Matcher:
        """One closure ORing the valid terms."""
        terms = self.terms
        if not terms:
            return lambda labels, name: False
        if len(terms) == 1:
            return terms[0]

        def any_term(labels: Mapping[str, str], name: str) -> bool:
            for term in terms:  # noqa: SIM110 -- hot path: no generator
                if term(labels, name):
                    return True
            return False

        return any_term

    def match(self, labels: Mapping[str, str], name: str) -> tuple[bool, str | None]:
        """(matched, lazy error): the error is only given when no term matched and some were broken."""
        for term in self.terms:
            if term(labels, name):
                return True, None
        return False, (_aggregate(self.errors) if self.errors else None)


def _node_selector_check(selector: Mapping[str, str]) -> Matcher:
    """labels.SelectorFromSet: every key present with exactly that value."""
    items = tuple(selector.items())
    if len(items) == 1:
        ((key, value),) = items
        return lambda labels, name: labels.get(key) == value

    def every(labels: Mapping[str, str], name: str) -> bool:
        get = labels.get
        for key, value in items:  # noqa: SIM110 -- hot path: no generator
            if get(key) != value:
                return False
        return True

    return every


def pod_node_affinity(pod_affinity: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A pod's `affinity.nodeAffinity` when it is a mapping (None otherwise)."""
    if not isinstance(pod_affinity, Mapping):
        return None
    node_affinity = pod_affinity.get("nodeAffinity")
    return node_affinity if isinstance(node_affinity, Mapping) else None


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """nodeSelector AND required node affinity of a pod, compiled (nodeaffinity.RequiredNodeAffinity)."""

    node_selector: Mapping[str, str]
    selector: NodeSelectorMatcher | None
    matches: Matcher

    @classmethod
    def of(cls, pod: PodInfo) -> RequiredNodeAffinity:
        """GetRequiredNodeAffinity: nodeSelector (if any) and requiredDuringScheduling (if present)."""
        node_affinity = pod_node_affinity(pod.affinity)
        raw = node_affinity.get(REQUIRED_KEY) if node_affinity is not None else None
        selector = NodeSelectorMatcher.compile(raw) if raw is not None else None
        checks: list[Matcher] = []
        if pod.node_selector:
            checks.append(_node_selector_check(pod.node_selector))
        if selector is not None:
            checks.append(selector.matcher())
        matches: Matcher = all_of(checks) if checks else (lambda labels, name: True)
        return cls(dict(pod.node_selector), selector, matches)

    def match(self, labels: Mapping[str, str], name: str) -> tuple[bool, str | None]:
        """(matched, lazy error of the affinity terms), as RequiredNodeAffinity.Match returns."""
        if self.node_selector:
            get = labels.get
            if any(get(k) != v for k, v in self.node_selector.items()):
                return False, None
        if self.selector is not None:
            return self.selector.match(labels, name)
        return True, None
