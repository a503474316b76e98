"""What kube-apiserver does to a new pod that changes what the scheduler sees (pod strategy PrepareForCreate).

`simulate` creates the pods of its input file the way a live cluster would, so that offline answers equal
live ones. Only the scheduling-relevant mutations of v1.37 are here; validation and other defaulting are not.
"""

from __future__ import annotations

import copy
from typing import Any

JSON = dict[str, Any]


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


def prepare_for_create(pod: JSON) -> JSON:
    """A copy of `pod` as kube-apiserver would store it on create (scheduling-relevant mutations only)."""
    out = copy.deepcopy(pod)
    mutate_topology_spread_constraints(out)
    return out
