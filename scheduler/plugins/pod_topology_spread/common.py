"""What PodTopologySpread's filtering and scoring share (upstream podtopologyspread/common.go and
helper.DefaultSelector, v1.37): the parsed constraints, which nodes and pods they count, each pod's own
constraints parsed once, the selector default constraints get from a pod's Services and controller, and the
plugin as the two halves see it (`SpreadPlugin`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from scheduler import caching
from scheduler.config.decode import json_quote
from scheduler.framework.interface import Handle
from scheduler.framework.labels import Selector, SelectorError, compile_label_selector, selector_from_set
from scheduler.framework.node_selector import RequiredNodeAffinity
from scheduler.framework.objects import REPLICA_SET, REPLICATION_CONTROLLER, SERVICE, STATEFUL_SET, ObjectLister
from scheduler.framework.types import NodeInfo, PodInfo, find_untolerated_taint

if TYPE_CHECKING:
    from scheduler.plugins.pod_topology_spread.domain_sums import DomainSums

NAME: Final = "PodTopologySpread"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME
ALL_NODES_KEY: Final = NAME + "/allNodes"  # the snapshot's node list PreFilter saw, for PreScore

ERR_REASON_CONSTRAINTS_NOT_MATCH: Final = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH: Final = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE: Final = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
HONOR: Final = "Honor"
IGNORE: Final = "Ignore"

DEFAULT_SELECTOR_KINDS: Final = (SERVICE, REPLICA_SET, STATEFUL_SET, REPLICATION_CONTROLLER)
"""What default constraints read to build a pod's selector (and so what the scheduler must watch)."""


# ---------------------------------------------------------------------------------------------------------
# Constraints


@dataclass(frozen=True, slots=True)
class Constraint:
    """One parsed constraint (upstream topologySpreadConstraint): selector compiled, unset fields defaulted."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE
    memo_tag: str = field(default="", compare=False)  # selector's identity in NodeInfo.memo keys

    @property
    def honors_affinity(self) -> bool:
        return self.node_affinity_policy == HONOR

    @property
    def honors_taints(self) -> bool:
        return self.node_taints_policy == HONOR


def selector_string(selector: Selector) -> str:
    """labels.Selector.String(): requirements sorted by key, e.g. `app=web,tier in (a,b),!canary`."""
    parts = []
    for key, op, values in sorted(selector.requirements, key=lambda r: r[0]):
        if op == "Equals":
            parts.append(f"{key}={values[0]}")
        elif op == "In":
            parts.append(f"{key} in ({','.join(sorted(values))})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(sorted(values))})")
        elif op == "Exists":
            parts.append(key)
        else:  # DoesNotExist
            parts.append(f"!{key}")
    return ",".join(parts)


def with_memo_tag(c: Constraint) -> Constraint:
    return replace(c, memo_tag=f"{NAME}|{'∅' if c.selector.nothing else selector_string(c.selector)}|")


def _int_value(raw: Mapping[str, Any], key: str, default: int) -> int:
    value = raw.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key}: expected an integer, got {json_quote(value)}")
    return value


def filter_constraints(
    raw: Iterable[Mapping[str, Any]], pod_labels: Mapping[str, str], action: str
) -> tuple[Constraint, ...]:
    """filterTopologySpreadConstraints: the constraints with `whenUnsatisfiable == action`, parsed.

    matchLabelKeys (beta, on in v1.37) adds `key=<pod's value>` for each listed key the pod has; a nil
    labelSelector stays "match nothing". Raises ValueError with the selector's error text.
    """
    out: list[Constraint] = []
    for c in raw:
        if c.get("whenUnsatisfiable") != action:
            continue
        selector = compile_label_selector(c.get("labelSelector"))
        keys = c.get("matchLabelKeys") or []
        if keys and isinstance(keys, list):
            extra = [(k, "Equals", (pod_labels[k],)) for k in keys if isinstance(k, str) and k in pod_labels]
            if extra:
                selector = selector.with_requirements(extra)
        out.append(
            with_memo_tag(
                Constraint(
                    max_skew=_int_value(c, "maxSkew", 0),
                    topology_key=str(c.get("topologyKey") or ""),
                    selector=selector,
                    min_domains=_int_value(c, "minDomains", 1),
                    node_affinity_policy=str(c.get("nodeAffinityPolicy") or HONOR),
                    node_taints_policy=str(c.get("nodeTaintsPolicy") or IGNORE),
                )
            )
        )
    return tuple(out)


def node_has_all_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    """nodeLabelsMatchSpreadConstraints: the node carries every constraint's topology key."""
    for c in constraints:  # noqa: SIM110 -- hot path: no generator
        if c.topology_key not in labels:
            return False
    return True


def count_pods_match_selector(pods: Iterable[PodInfo], selector: Selector, namespace: str) -> int:
    """countPodsMatchSelector: matching pods of `namespace`, terminating ones skipped; 0 for an empty selector.

    Upstream returns 0 for `labelSelector: {}` (selector.Empty()) even though Filter's self-match counts the
    incoming pod; so do we.
    """
    if not selector.requirements:
        return 0
    matches = selector.matches
    n = 0
    for p in pods:
        if p.namespace == namespace and not p.terminating and matches(p.labels):
            n += 1
    return n


def node_count(node: NodeInfo, c: Constraint, namespace: str) -> int:
    """Matching pods on one node, memoized on the NodeInfo until its pods change."""
    if not caching.ENABLED:  # the plain path: counted on every call
        return count_pods_match_selector(node.pods.values(), c.selector, namespace)
    key = c.memo_tag + namespace
    cached = node.memo.get(key)
    if cached is None:
        cached = node.remember(key, count_pods_match_selector(node.pods.values(), c.selector, namespace))
    return int(cached)


# ---------------------------------------------------------------------------------------------------------
# Default selector (upstream helper.DefaultSelector)


def parse_group_version(api_version: str) -> tuple[str, str] | None:
    """schema.ParseGroupVersion: "" and "/" are the empty version, "v1" is core; more than one '/' fails."""
    if api_version in ("", "/"):
        return ("", "")
    slashes = api_version.count("/")
    if slashes == 0:
        return ("", api_version)
    if slashes == 1:
        group, version = api_version.split("/")
        return (group, version)
    return None


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def pod_services(pod: PodInfo, objects: ObjectLister) -> list[Mapping[str, Any]]:
    """GetPodServices: Services of the pod's namespace whose (non-empty) selector matches its labels."""
    out: list[Mapping[str, Any]] = []
    labels = pod.labels
    for svc in objects.list(SERVICE, pod.namespace):
        selector = _string_map((svc.get("spec") or {}).get("selector"))
        if not selector:  # nil selector: matches nothing (the API omits an empty one)
            continue
        if all(labels.get(k) == v for k, v in selector.items()):
            out.append(svc)
    return out


def default_selector(pod: PodInfo, objects: ObjectLister) -> Selector:
    """helper.DefaultSelector: the Services' selectors merged, then the controller's selector.

    ReplicationController: its selector map merged into the label set; ReplicaSet and StatefulSet (apps/v1):
    their spec.selector requirements ANDed. Other owners add nothing. An empty result means "no defaults".
    """
    label_set: dict[str, str] = {}
    for svc in pod_services(pod, objects):
        label_set.update(_string_map((svc.get("spec") or {}).get("selector")))
    selector = selector_from_set(label_set)
    if not pod.owner_kind:
        return selector
    gv = parse_group_version(pod.owner_api_version)
    if gv is None:
        return selector
    gvk = (gv[0], gv[1], pod.owner_kind)
    if gvk == ("", "v1", REPLICATION_CONTROLLER):
        rc = objects.get(REPLICATION_CONTROLLER, pod.namespace, pod.owner_name)
        if rc is not None:
            label_set.update(_string_map((rc.get("spec") or {}).get("selector")))
            selector = selector_from_set(label_set)
    elif gvk in (("apps", "v1", REPLICA_SET), ("apps", "v1", STATEFUL_SET)):
        owner = objects.get(pod.owner_kind, pod.namespace, pod.owner_name)
        if owner is not None:
            try:
                other = compile_label_selector((owner.get("spec") or {}).get("selector"))
            except SelectorError:
                return selector
            if not other.nothing:
                selector = selector.with_requirements(other.requirements)
    return selector


# ---------------------------------------------------------------------------------------------------------
# A pod's own constraints, parsed once


@dataclass(frozen=True, slots=True)
class _PodSpread:
    """What a pod's own constraints parse to, cached in PodInfo.derived (errors kept for their action)."""

    explicit: bool
    hard: tuple[Constraint, ...]
    hard_error: str | None
    soft: tuple[Constraint, ...]
    soft_error: str | None
    required: RequiredNodeAffinity


def _parse_pod(pod: PodInfo) -> _PodSpread:
    raw = pod.topology_spread_constraints
    hard: tuple[Constraint, ...] = ()
    soft: tuple[Constraint, ...] = ()
    hard_err = soft_err = None
    if raw:
        try:
            hard = filter_constraints(raw, pod.labels, DO_NOT_SCHEDULE)
        except ValueError as exc:
            hard_err = str(exc)
        try:
            soft = filter_constraints(raw, pod.labels, SCHEDULE_ANYWAY)
        except ValueError as exc:
            soft_err = str(exc)
    return _PodSpread(bool(raw), hard, hard_err, soft, soft_err, RequiredNodeAffinity.of(pod))


def pod_spread(pod: PodInfo) -> _PodSpread:
    """The pod's parsed constraints, parsed once per pod object (on every call while caches are disabled)."""
    if not caching.ENABLED:
        return _parse_pod(pod)
    cached = pod.derived.get(NAME)
    if cached is None:
        cached = pod.derived[NAME] = _parse_pod(pod)
    return cached


def match_node_inclusion_policies(c: Constraint, pod: PodInfo, spread: _PodSpread, node: NodeInfo) -> bool:
    """matchNodeInclusionPolicies: the node counts for c under its nodeAffinityPolicy / nodeTaintsPolicy."""
    record = node.node
    assert record is not None
    if c.honors_affinity and not spread.required.matches(record.labels, record.name):
        return False
    return not (c.honors_taints and record.taints and find_untolerated_taint(record.taints, pod.tolerations))


class SpreadPlugin:
    """PodTopologySpread as its filtering and scoring halves (filtering.py, scoring.py) see it; plugin.py
    implements it: the handle, whether the system's default constraints apply, a pod's constraints for one
    `whenUnsatisfiable`, and the per-domain sums of matching pods kept across cycles."""

    _handle: Handle | None
    system_defaulted: bool

    def constraints(self, pod: PodInfo, action: str) -> tuple[Constraint, ...]:
        raise NotImplementedError

    def domain_sums(
        self, pod: PodInfo, c: Constraint, nodes: Sequence[NodeInfo], required_keys: tuple[str, ...]
    ) -> DomainSums:
        raise NotImplementedError
