"""What kube-apiserver does to a pod at creation that changes what a scheduler sees (pod strategy
PrepareForCreate, `pkg/registry/core/pod/strategy.go`, v1.37.2), for `simulate`'s input.

A live scheduler only ever sees pods the API server stored, so it never does this itself: PodTopologySpread
and InterPodAffinity do not read `matchLabelKeys`/`mismatchLabelKeys`. A pod written by hand in a simulation
file was never created, so `simulate` applies the same mutations first; offline results then equal live
ones. A pod that was created (it has `metadata.creationTimestamp`, as every object dumped from a cluster
does) is left as it is: the API server merged its keys already, against the labels it had then.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from scheduler.framework.types import CPU, MEMORY, REGION_LABEL, ZONE_LABEL, compute_pod_requests

JSON = dict[str, Any]

# The PodTopologyLabels admission plugin's default label set (PodTopologyLabelsAdmission, beta, on in v1.37).
POD_TOPOLOGY_LABELS: Final = (ZONE_LABEL, REGION_LABEL)
REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"


def mutate_topology_spread_constraints(pod: JSON) -> None:
    """mutateTopologySpreadConstraints (gates MatchLabelKeysInPodTopologySpread and ...SelectorMerge, both on by
    default in v1.37): for each constraint with matchLabelKeys and a labelSelector, append `key In [value]` to
    its matchExpressions for every listed key the pod has a label for. A nil labelSelector stays nil."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    constraints = spec.get("topologySpreadConstraints")
    if not isinstance(constraints, list):
        return
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if not isinstance(labels, dict):
        return
    for constraint in constraints:
        if not isinstance(constraint, dict):
            continue
        keys = constraint.get("matchLabelKeys")
        selector = constraint.get("labelSelector")
        if not keys or not isinstance(keys, list) or not isinstance(selector, dict):
            continue
        expressions = selector.get("matchExpressions")
        if not isinstance(expressions, list):
            expressions = []
        for key in keys:
            if isinstance(key, str) and key in labels:
                expressions.append({"key": key, "operator": "In", "values": [str(labels[key])]})
        if expressions:
            selector["matchExpressions"] = expressions


def was_created(pod: Mapping[str, Any]) -> bool:
    """True for a pod the API server stored (it sets creationTimestamp on create)."""
    meta = pod.get("metadata")
    return (type(meta) is dict or isinstance(meta, Mapping)) and bool(meta.get("creationTimestamp"))


def _apply_label_keys(selector: JSON, keys: Any, operator: str, labels: Mapping[str, Any]) -> None:
    """applyLabelKeysToLabelSelector: `key <operator> [pod's value]` for each key the pod has."""
    if not isinstance(keys, list):
        return
    for key in keys:
        if isinstance(key, str) and key in labels:
            exprs = selector.get("matchExpressions")
            if not isinstance(exprs, list):
                exprs = selector["matchExpressions"] = []
            exprs.append({"key": key, "operator": operator, "values": [labels[key]]})


def _apply_to_term(term: Any, labels: Mapping[str, Any]) -> bool:
    """applyMatchLabelKeysAndMismatchLabelKeys; True when the term had keys to merge."""
    if not isinstance(term, dict):
        return False
    match, mismatch = term.get("matchLabelKeys"), term.get("mismatchLabelKeys")
    selector = term.get("labelSelector")
    if (not match and not mismatch) or not isinstance(selector, dict):
        return False  # a nil labelSelector matches nothing: nothing to narrow
    _apply_label_keys(selector, match, "In", labels)
    _apply_label_keys(selector, mismatch, "NotIn", labels)
    return True


def _terms(affinity: Mapping[str, Any]) -> list[Any]:
    """Every PodAffinityTerm of podAffinity then podAntiAffinity, preferred before required (upstream order)."""
    out: list[Any] = []
    for kind in ("podAffinity", "podAntiAffinity"):
        section = affinity.get(kind)
        if not isinstance(section, Mapping):
            continue
        for item in section.get(PREFERRED) or []:
            if isinstance(item, Mapping):
                out.append(item.get("podAffinityTerm"))
        out.extend(section.get(REQUIRED) or [])
    return out


def mutate_pod_affinity(pod: JSON) -> JSON:
    """mutatePodAffinity (MatchLabelKeysInPodAffinity, GA): merge match/mismatchLabelKeys into each pod
    (anti-)affinity term's labelSelector. Returns the pod, a mutated copy when anything was merged."""
    spec = pod.get("spec")
    affinity = spec.get("affinity") if isinstance(spec, Mapping) else None
    if not isinstance(affinity, Mapping):
        return pod
    meta = pod.get("metadata")
    labels = (meta.get("labels") if isinstance(meta, Mapping) else None) or {}
    if not isinstance(labels, Mapping):
        return pod
    if not any(
        isinstance(t, Mapping) and (t.get("matchLabelKeys") or t.get("mismatchLabelKeys")) for t in _terms(affinity)
    ):
        return pod
    out = copy.deepcopy(pod)
    for t in _terms(out["spec"]["affinity"]):
        _apply_to_term(t, labels)
    return out


def drop_disabled_fields(pod: JSON) -> JSON:
    """dropDisabledFields for the fields a scheduler plugin reads: `volumeMounts[].bindMountOptions` needs
    the VolumeBindMountOptions gate (alpha, off in v1.37), so the API server drops it and NodeDeclaredFeatures
    never requires that feature of a created pod. Returns the pod, a copy when anything was dropped."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return pod
    kinds = ("containers", "initContainers", "ephemeralContainers")

    def mounts(spec: Mapping[str, Any]) -> list[JSON]:
        return [
            m
            for kind in kinds
            for c in (spec.get(kind) or [] if isinstance(spec.get(kind), list) else [])
            if isinstance(c, Mapping) and isinstance(c.get("volumeMounts"), list)
            for m in c["volumeMounts"]
            if isinstance(m, dict) and "bindMountOptions" in m
        ]

    if not mounts(spec):
        return pod
    out = copy.deepcopy(pod)
    for m in mounts(out["spec"]):
        del m["bindMountOptions"]
    return out


def _named(spec: Mapping[str, Any], resource: str) -> bool:
    """Whether a container or init container requests (or limits, which defaults its request) a resource."""
    for kind in ("containers", "initContainers"):
        for c in spec.get(kind) or []:
            res = c.get("resources") if isinstance(c, Mapping) else None
            if isinstance(res, Mapping) and any(
                isinstance(res.get(k), Mapping) and resource in res[k] for k in ("requests", "limits")
            ):
                return True
    return False


def default_pod_level_requests(pod: JSON) -> JSON:
    """defaultPodLevelRequests (PodLevelResources and PodLevelResourcesFixDefaulting, both beta and on in
    v1.37, applied in PrepareForCreate): a pod with pod-level resources gets pod-level requests of cpu and
    memory from its containers' aggregated requests, and of each supported resource with a pod-level limit
    but no request, that limit. A pod setting only `spec.resources.limits.cpu: 2` is thus scheduled for 2 cpu.

    The hugepage and limit steps of DefaultPodLevelResources change nothing a scheduler reads (a hugepage's
    pod-level request ends up as its containers' aggregate, which is what is counted without it). Returns the
    pod, a copy when anything was defaulted."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return pod
    resources = spec.get("resources")
    if not isinstance(resources, Mapping) or not (resources.get("requests") or resources.get("limits")):
        return pod
    requests = dict(resources.get("requests") or {})
    limits = resources.get("limits") or {}
    if not isinstance(requests, dict) or not isinstance(limits, Mapping):
        return pod  # validation reports it
    wanted = {k for k in (CPU, MEMORY) if k not in requests and _named(spec, k)}
    if wanted:
        aggregate, _, _ = compute_pod_requests({**spec, "overhead": None, "resources": None}, pod_level=False)
        if CPU in wanted:
            requests[CPU] = f"{aggregate.milli_cpu}m"
        if MEMORY in wanted:
            requests[MEMORY] = str(aggregate.memory)
    for name, limit in limits.items():
        if name not in requests and (name in (CPU, MEMORY) or str(name).startswith("hugepages-")):
            requests[name] = limit
    if requests == (resources.get("requests") or {}):
        return pod
    out = copy.deepcopy(pod)
    out["spec"]["resources"]["requests"] = requests
    return out


def copy_topology_labels(pod: JSON, node: Mapping[str, Any] | None) -> None:
    """PodTopologyLabels admission: a pod bound to a node (pods/binding, or created with spec.nodeName) gets
    the node's topology.kubernetes.io/zone and /region labels, overwriting its own. The API server does it for
    every scheduler's bindings; the in-memory cluster and simulate's admission do it the same way."""
    node_labels = ((node or {}).get("metadata") or {}).get("labels") or {}
    found = {k: node_labels[k] for k in POD_TOPOLOGY_LABELS if k in node_labels}
    if found:
        if pod.get("metadata") is None:
            pod["metadata"] = {}
        meta = pod["metadata"]
        if meta.get("labels") is None:  # `labels: null` is no labels, as the API server reads it
            meta["labels"] = {}
        meta["labels"].update(found)


def admit_pod(pod: JSON, nodes: Mapping[str, Mapping[str, Any]] | None = None) -> JSON:
    """The pod as the API server would store it on create; pods that were created are returned unchanged.

    `nodes` (name -> Node) are the nodes that exist at that moment: a pod created with spec.nodeName gets its
    node's topology labels."""
    if was_created(pod):
        return pod
    pod = default_pod_level_requests(drop_disabled_fields(pod))
    spec = pod.get("spec")
    node_name = spec.get("nodeName") if isinstance(spec, Mapping) else None
    if nodes and isinstance(node_name, str) and node_name in nodes:
        labels = ((nodes[node_name].get("metadata") or {}).get("labels") or {})
        if any(k in labels for k in POD_TOPOLOGY_LABELS):
            pod = copy.deepcopy(pod)
            copy_topology_labels(pod, nodes[node_name])
    spec = pod.get("spec")
    if isinstance(spec, Mapping) and spec.get("topologySpreadConstraints"):
        pod = copy.deepcopy(pod)
        mutate_topology_spread_constraints(pod)
    return mutate_pod_affinity(pod)
