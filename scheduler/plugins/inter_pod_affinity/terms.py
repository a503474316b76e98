"""A pod's affinity terms parsed once (upstream fwk.AffinityTerm, WeightedAffinityTerm and NewPodInfo's
parsing, v1.37): with neither `namespaces` nor a `namespaceSelector` a term means the pod's own namespace;
a nil selector matches nothing, `{}` everything. A list with a broken term is empty and its error kept."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from scheduler import caching
from scheduler.config.decode import json_quote, json_type
from scheduler.framework.labels import NOTHING, Labels, Selector, SelectorError, compile_label_selector
from scheduler.framework.labels import aggregate as _aggregate
from scheduler.framework.types import PodInfo
from scheduler.plugins.inter_pod_affinity.common import (
    NAME,
    NO_LABELS,
    POD_AFFINITY,
    POD_ANTI_AFFINITY,
    PREFERRED,
    REQUIRED,
)


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed v1.PodAffinityTerm: which pods (namespaces or namespaceSelector, and labels), where."""

    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    namespace_selector: Selector = NOTHING

    def matches(self, pod: PodInfo, ns_labels: Labels = NO_LABELS) -> bool:
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


def has_preferred(affinity: Mapping[str, Any] | None, kind: str) -> bool:
    raw = _section(affinity, kind, PREFERRED)
    return bool(raw)


def namespace_labels_of(obj: Mapping[str, Any] | None) -> dict[str, str]:
    if obj is None:
        return {}
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if not isinstance(labels, Mapping):
        return {}
    return {str(k): str(v) for k, v in labels.items()}


