"""Labels: key/value validation and `metav1.LabelSelector` matching, shared by plugins and the config loader.

One home for what apimachinery's `validate/content` and `labels`/`metav1` packages do, so NodeAffinity,
InterPodAffinity, PodTopologySpread, the volume plugins and the config loader agree on what a valid key is,
what error text a bad one gets, and what a selector matches:

* a nil `LabelSelector` matches nothing, an empty one (`{}`) matches everything (LabelSelectorAsSelector);
* `matchLabels` entries are Equals requirements, `matchExpressions` use In, NotIn, Exists, DoesNotExist;
* NotIn and DoesNotExist are satisfied by an absent key.

Error texts (`field.Error` renderings, `RegexError` with its double space) are upstream's byte for byte.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from scheduler.caching import switchable_lru_cache

Labels = Mapping[str, str]

_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE: Final = re.compile(_NAME_FMT)
_NAME_ERR: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT: Final = "(" + _NAME_FMT + ")?"
_LABEL_VALUE_RE: Final = re.compile(_LABEL_VALUE_FMT)
_LABEL_VALUE_ERR: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT: Final = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_RE: Final = re.compile(DNS1123_SUBDOMAIN_FMT)
_DNS1123_SUBDOMAIN_ERR: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character"
)
_GO_INT_RE: Final = re.compile("[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")
"""metav1.LabelSelectorOperator values."""


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """content.RegexError, including its double space after each example."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    return msg + " (e.g. " + " or ".join(f"'{e}', " for e in examples) + f"regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """content.MaxLenError (v0.37 wording)."""
    return f"must be no more than {length} bytes"


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Cached: the same label keys and values recur on every pod of a dump. A valid value is answered
    without the cache (a pod's own name is seen once: remembering it costs more than matching it)."""
    if type(value) is str and len(value) <= 253 and _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        return []
    return list(_dns1123_subdomain_errors(value))


@switchable_lru_cache(maxsize=8192)
def _dns1123_subdomain_errors(value: str) -> tuple[str, ...]:
    """content.IsDNS1123Subdomain."""
    errs: list[str] = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return tuple(errs)


def label_key_errors(key: str) -> list[str]:
    """Cached: the same label keys and values recur on every pod of a dump."""
    return list(_label_key_errors(key))


@switchable_lru_cache(maxsize=8192)
def _label_key_errors(key: str) -> tuple[str, ...]:
    """content.IsLabelKey: optional DNS-subdomain prefix and '/', then a name of at most 63 bytes."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + e for e in dns1123_subdomain_errors(prefix))
    else:
        return (
            "a valid label key "
            + regex_error(_NAME_ERR, _NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        )
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode(errors="surrogatepass")) > 63:
        errs.append("name part " + max_len_error(63))
    if not _NAME_RE.fullmatch(name):
        errs.append("name part " + regex_error(_NAME_ERR, _NAME_FMT, "MyName", "my.name", "123-abc"))
    return tuple(errs)


def label_value_errors(value: str) -> list[str]:
    """Cached: the same label keys and values recur on every pod of a dump."""
    return list(_label_value_errors(value))


@switchable_lru_cache(maxsize=8192)
def _label_value_errors(value: str) -> tuple[str, ...]:
    """content.IsLabelValue: empty, or at most 63 alphanumeric/'-_.' characters."""
    errs: list[str] = []
    if len(value.encode(errors="surrogatepass")) > 63:
        errs.append(max_len_error(63))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_ERR, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return tuple(errs)


def parse_go_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): optional sign and ASCII digits only, within int64; None otherwise."""
    if len(text) > 21 or not _GO_INT_RE.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def quote_value(value: Any) -> str:
    """How field.Error renders a bad value: %q for strings, JSON for the rest."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


def invalid(path: str, value: Any, detail: str) -> str:
    """field.Invalid(path, value, detail).Error()."""
    return f"{path}: Invalid value: {quote_value(value)}: {detail}"


def not_supported(path: str, value: Any, valid: Sequence[str]) -> str:
    """field.NotSupported(path, value, valid).Error()."""
    return f"{path}: Unsupported value: {quote_value(value)}: supported values: " + ", ".join(f'"{v}"' for v in valid)


def aggregate(errs: Sequence[str]) -> str:
    """errors.NewAggregate(errs).Error(): one message, or "[a, b]"."""
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


# ---------------------------------------------------------------------------------------------------------
# Selectors

LabelMatcher = Callable[[Labels], bool]


def requirement_matcher(key: str, op: str, values: Sequence[str]) -> LabelMatcher:
    """labels.Requirement.Matches for a validated requirement (Equals is In with one value)."""
    if op in ("In", "Equals"):
        if len(values) == 1:
            only = values[0]
            return lambda labels: labels.get(key) == only
        allowed = frozenset(values)
        return lambda labels: labels.get(key) in allowed
    if op == "NotIn":
        banned = frozenset(values)
        return lambda labels: labels.get(key) not in banned
    if op == "Exists":
        return lambda labels: key in labels
    if op == "DoesNotExist":
        return lambda labels: key not in labels
    raise ValueError(f"unknown operator {op!r}")


def requirement_errors(key: Any, op: str, values: Sequence[str]) -> list[str]:
    """labels.NewRequirement's validation of key, operator arity and values (empty path, as the scheduler's)."""
    errs: list[str] = []
    if not isinstance(key, str):
        errs.append(invalid("key", key, "must be a string"))
        key = ""
    else:
        key_errs = label_key_errors(key)
        if key_errs:
            errs.append(invalid("key", key, "; ".join(key_errs)))
    if op in ("In", "NotIn") and not values:
        errs.append(invalid("values", list(values), "for 'in', 'notin' operators, values set can't be empty"))
    elif op == "Equals" and len(values) != 1:
        errs.append(invalid("values", list(values), "exact-match compatibility requires one single value"))
    elif op in ("Exists", "DoesNotExist") and values:
        errs.append(invalid("values", list(values), "values set must be empty for exists and does not exist"))
    for i, v in enumerate(values):
        value_errs = label_value_errors(v)
        if value_errs:
            errs.append(invalid(f"values[{i}][{key}]", v, "; ".join(value_errs)))
    return errs


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled label selector. `everything`/`nothing` mark the two trivial selectors."""

    requirements: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    nothing: bool = False
    _check: LabelMatcher | None = None

    @property
    def everything(self) -> bool:
        return not self.nothing and not self.requirements

    def empty(self) -> bool:
        """labels.Selector.Empty(): no requirements (true for both Everything and Nothing upstream)."""
        return not self.requirements

    def matches(self, labels: Labels) -> bool:
        if self.nothing:
            return False
        check = self._check
        return True if check is None else check(labels)

    def with_requirements(self, extra: Sequence[tuple[str, str, Sequence[str]]]) -> Selector:
        """This selector ANDed with more (validated) requirements (e.g. matchLabelKeys merged in)."""
        if self.nothing or not extra:
            return self
        reqs = self.requirements + tuple((k, op, tuple(vals)) for k, op, vals in extra)
        return _build(reqs)


NOTHING: Final = Selector(nothing=True)
EVERYTHING: Final = Selector()


def _build(reqs: tuple[tuple[str, str, tuple[str, ...]], ...]) -> Selector:
    if not reqs:
        return EVERYTHING
    checks = [requirement_matcher(k, op, vals) for k, op, vals in reqs]
    if len(checks) == 1:
        return Selector(reqs, False, checks[0])
    frozen = tuple(checks)

    def every(labels: Labels) -> bool:
        for check in frozen:  # noqa: SIM110 -- hot path: no generator
            if not check(labels):
                return False
        return True

    return Selector(reqs, False, every)


class SelectorError(ValueError):
    """A label selector that LabelSelectorAsSelector would refuse; the message is upstream's."""


def selector_from_set(labels: Labels) -> Selector:
    """labels.SelectorFromSet: every key present with exactly that value (no validation)."""
    return _build(tuple((k, "Equals", (v,)) for k, v in sorted(labels.items())))


def compile_label_selector(raw: Any) -> Selector:
    """metav1.LabelSelectorAsSelector: nil -> Nothing, {} -> Everything; SelectorError on bad input."""
    if raw is None:
        return NOTHING
    if not isinstance(raw, Mapping):
        raise SelectorError(f"label selector must be an object, got {quote_value(raw)}")
    match_labels = raw.get("matchLabels") or {}
    match_exprs = raw.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping):
        raise SelectorError(f"matchLabels must be a map of strings, got {quote_value(match_labels)}")
    if not isinstance(match_exprs, list):
        raise SelectorError(f"matchExpressions must be a list, got {quote_value(match_exprs)}")
    if not match_labels and not match_exprs:
        return EVERYTHING
    reqs: list[tuple[str, str, tuple[str, ...]]] = []
    # Go iterates matchLabels in random map order; the first error found is returned, so sort for stability.
    for key in sorted(match_labels, key=str):
        value = match_labels[key]
        if not isinstance(value, str):
            raise SelectorError(f"matchLabels.{key}: must be a string, got {quote_value(value)}")
        errs = requirement_errors(key, "Equals", [value])
        if errs:
            raise SelectorError(aggregate(errs))
        reqs.append((str(key), "Equals", (value,)))
    for expr in match_exprs:
        if not isinstance(expr, Mapping):
            raise SelectorError(f"matchExpressions entry must be an object, got {quote_value(expr)}")
        op = expr.get("operator")
        if op not in SELECTOR_OPERATORS:
            shown = json.dumps(op if isinstance(op, str) else str(op))
            raise SelectorError(f"{shown} is not a valid label selector operator")
        values = expr.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise SelectorError(f"matchExpressions values must be a list of strings, got {quote_value(values)}")
        key = expr.get("key")
        errs = requirement_errors(key, str(op), values)
        if errs:
            raise SelectorError(aggregate(errs))
        reqs.append((str(key), str(op), tuple(values)))
    return _build(tuple(reqs))
