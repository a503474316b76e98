"""What `explain` says about InterPodAffinity's verdict on a node: which term found no pod in the node's
domain, or which pods (and whose terms) rule the node out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.framework.interface import ExplainDetail
from scheduler.framework.labels import Selector
from scheduler.framework.types import NodeInfo
from scheduler.plugins.inter_pod_affinity.common import labels_of
from scheduler.plugins.inter_pod_affinity.filtering import PreFilterState
from scheduler.plugins.inter_pod_affinity.terms import AffinityTerm, pod_terms


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


def explain_affinity(s: PreFilterState, labels: Mapping[str, str]) -> list[ExplainDetail]:
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

def explain_anti_affinity(
    s: PreFilterState, labels: Mapping[str, str], all_nodes: Sequence[NodeInfo]
) -> list[ExplainDetail]:
    out: list[ExplainDetail] = []
    for i, t in enumerate(s.anti_affinity_terms):
        value = labels.get(t.topology_key)
        if value is None or s.anti_affinity_counts.get(t.topology_key, value) <= 0:
            continue
        domain = f"{t.topology_key}={value}"
        for other in all_nodes:
            if labels_of(other).get(t.topology_key) != value:
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

def explain_existing(
    s: PreFilterState, labels: Mapping[str, str], all_nodes: Sequence[NodeInfo]
) -> list[ExplainDetail]:
    out: list[ExplainDetail] = []
    for other in all_nodes:
        other_labels = labels_of(other)
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
