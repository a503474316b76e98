"""PodTopologySpread: spread a pod's group evenly over topology domains (upstream plugins/podtopologyspread, v1.37).

Hard constraints (`whenUnsatisfiable: DoNotSchedule`) are checked in PreFilter/Filter: PreFilter counts, per
constraint, the pods matching its selector in every eligible domain (a node is eligible when it carries every
constraint's topology key and passes the constraint's nodeAffinityPolicy/nodeTaintsPolicy), and Filter rejects
a node whose domain would exceed `maxSkew` over the global minimum (0 while fewer than `minDomains` domains
are eligible). Soft constraints (`ScheduleAnyway`) are scored: fewer matching pods in a node's domains is
better, each constraint weighted by ln(domains + 2).

A pod without constraints of its own gets the plugin's default constraints (`PodTopologySpreadArgs`; by
default the "System" ones: hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway) with a selector built
from the Services selecting the pod and its controller (`default_selector`, upstream helper.DefaultSelector).

Speed: a pod's constraints are parsed once per pod object (`PodInfo.derived`); per-node counts of matching
pods are memoized on the NodeInfo (valid until the node's pods change, so a Deployment's next pod only
recounts the node its predecessor went to); Filter and Score are dictionary lookups over the domain counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Final

from scheduler import caching
from scheduler.config.decode import (
    ARGS_ENVELOPE_FIELDS,
    as_int,
    as_list,
    as_mapping,
    as_str,
    check_fields,
    check_kind,
    child,
    go_value,
    json_quote,
)
from scheduler.config.errors import ConfigError
from scheduler.framework.interface import (
    ASSIGNED_POD,
    NODE,
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    ExplainDetail,
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
from scheduler.framework.labels import (
    EVERYTHING,
    Selector,
    SelectorError,
    compile_label_selector,
    label_key_errors,
    selector_from_set,
)
from scheduler.framework.node_selector import REQUIRED_KEY, RequiredNodeAffinity
from scheduler.framework.objects import (
    REPLICA_SET,
    REPLICATION_CONTROLLER,
    SERVICE,
    STATEFUL_SET,
    ObjectLister,
)
from scheduler.framework.status import SKIP, Status, error_status, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo, find_untolerated_taint

NAME: Final = "PodTopologySpread"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME
_ALL_NODES_KEY: Final = NAME + "/allNodes"  # the snapshot's node list PreFilter saw, for PreScore
_DEFAULT_SELECTOR_KEY: Final = NAME + "/defaultSelector"  # PodInfo.derived: (object generations, selector)

ERR_REASON_CONSTRAINTS_NOT_MATCH: Final = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH: Final = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE: Final = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
HONOR: Final = "Honor"
IGNORE: Final = "Ignore"
SYSTEM_DEFAULTING: Final = "System"
LIST_DEFAULTING: Final = "List"

SYSTEM_DEFAULT_CONSTRAINTS: Final[tuple[Mapping[str, Any], ...]] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)
"""Upstream systemDefaultConstraints, used when `defaultingType` is System."""

DEFAULT_SELECTOR_KINDS: Final = (SERVICE, REPLICA_SET, STATEFUL_SET, REPLICATION_CONTROLLER)
"""What default constraints read to build a pod's selector (and so what the scheduler must watch)."""

MAX_INT32: Final = 2**31 - 1
INVALID_SCORE: Final = -1

_MISSING_LABEL = unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH, plugin=NAME)
_SKEW = unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME)


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


def _with_memo_tag(c: Constraint) -> Constraint:
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
            _with_memo_tag(
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


def _node_count(node: NodeInfo, c: Constraint, namespace: str) -> int:
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
# Args (PodTopologySpreadArgs)

_ARGS_FIELDS: Final = frozenset({"defaultConstraints", "defaultingType"}) | ARGS_ENVELOPE_FIELDS
_CONSTRAINT_FIELDS: Final = frozenset(
    {
        "maxSkew",
        "topologyKey",
        "whenUnsatisfiable",
        "labelSelector",
        "minDomains",
        "nodeAffinityPolicy",
        "nodeTaintsPolicy",
        "matchLabelKeys",
    }
)


@dataclass(frozen=True, slots=True)
class Args:
    """PodTopologySpreadArgs after defaulting and validation; constraints stay API-shaped dicts."""

    default_constraints: tuple[Mapping[str, Any], ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING


def _decode_constraint(raw: Any, path: str) -> dict[str, Any]:
    """Strictly decode one v1.TopologySpreadConstraint (types only; validation comes after)."""
    entry = as_mapping(raw, path)
    check_fields(entry, _CONSTRAINT_FIELDS, path)
    out: dict[str, Any] = {
        "maxSkew": as_int(entry.get("maxSkew"), child(path, "maxSkew"), 32),
        "topologyKey": as_str(entry.get("topologyKey"), child(path, "topologyKey")),
        "whenUnsatisfiable": as_str(entry.get("whenUnsatisfiable"), child(path, "whenUnsatisfiable")),
    }
    if entry.get("labelSelector") is not None:
        out["labelSelector"] = dict(as_mapping(entry["labelSelector"], child(path, "labelSelector")))
    if entry.get("minDomains") is not None:
        out["minDomains"] = as_int(entry["minDomains"], child(path, "minDomains"), 32)
    for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        if entry.get(policy) is not None:
            out[policy] = as_str(entry[policy], child(path, policy))
    keys_path = child(path, "matchLabelKeys")
    keys = [as_str(k, f"{keys_path}[{i}]") for i, k in enumerate(as_list(entry.get("matchLabelKeys"), keys_path))]
    if keys:
        out["matchLabelKeys"] = keys
    return out


def parse_args(raw: Mapping[str, Any] | None, *, path: str = "") -> Args:
    """Decode, default and validate PodTopologySpreadArgs (ValidatePodTopologySpreadArgs' messages).

    Unknown fields and wrong types are decoding errors naming the field; then every validation error is
    collected and reported together, as field.ErrorList.ToAggregate does.
    """
    raw = as_mapping(raw or {}, path)
    check_fields(raw, _ARGS_FIELDS, path)
    check_kind(raw, "PodTopologySpreadArgs", path)
    dc_path = child(path, "defaultConstraints")
    constraints = [
        _decode_constraint(c, f"{dc_path}[{i}]") for i, c in enumerate(as_list(raw.get("defaultConstraints"), dc_path))
    ]
    defaulting = as_str(raw.get("defaultingType"), child(path, "defaultingType")) or SYSTEM_DEFAULTING

    errs: list[str] = []
    dt_path = child(path, "defaultingType")
    if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        errs.append(f'{dt_path}: Unsupported value: {go_value(defaulting)}: supported values: "System", "List"')
    elif defaulting == SYSTEM_DEFAULTING and constraints:
        errs.append(f"{dt_path}: Invalid value: {go_value(defaulting)}: when .defaultConstraints are not empty")
    for i, c in enumerate(constraints):
        p = f"{dc_path}[{i}]"
        if c["maxSkew"] <= 0:
            errs.append(f"{p}.maxSkew: Invalid value: {c['maxSkew']}: not in valid range (0, inf)")
        key = c["topologyKey"]
        if not key:
            errs.append(f"{p}.topologyKey: Required value: can not be empty")
        else:
            errs.extend(f"{p}.topologyKey: Invalid value: {go_value(key)}: {msg}" for msg in label_key_errors(key))
        action = c["whenUnsatisfiable"]
        if not action:
            errs.append(f"{p}.whenUnsatisfiable: Required value: can not be empty")
        elif action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            errs.append(
                f"{p}.whenUnsatisfiable: Unsupported value: {go_value(action)}: supported values: "
                '"DoNotSchedule", "ScheduleAnyway"'
            )
        if "labelSelector" in c:
            errs.append(
                f"{p}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
            )
        for other in constraints[:i]:
            if other["topologyKey"] == key and other["whenUnsatisfiable"] == action:
                errs.append(f'{p}: Duplicate value: "{{{key}, {action}}}"')
                break
    deduped = list(dict.fromkeys(errs))  # ToAggregate drops duplicate messages
    if deduped:
        raise ConfigError(deduped[0] if len(deduped) == 1 else "[" + ", ".join(deduped) + "]")
    return Args(tuple(constraints), defaulting)


# ---------------------------------------------------------------------------------------------------------
# Cycle state


class CriticalPaths:
    """The two domains with the fewest matching pods (upstream criticalPaths); [0] is always the minimum.

    Kept exactly as upstream, including its caveat: after several AddPod calls on different domains, [1] may
    no longer be the second minimum (preemption and nominated pods only touch one node at a time).
    """

    __slots__ = ("paths",)

    def __init__(self) -> None:
        self.paths: list[list[Any]] = [["", MAX_INT32], ["", MAX_INT32]]

    def update(self, value: str, num: int) -> None:
        p = self.paths
        i = 0 if value == p[0][0] else 1 if value == p[1][0] else -1
        if i >= 0:
            p[i][1] = num
            if p[0][1] > p[1][1]:
                p[0], p[1] = p[1], p[0]
        elif num < p[0][1]:
            p[1] = p[0]
            p[0] = [value, num]
        elif num < p[1][1]:
            p[1] = [value, num]

    @property
    def min_num(self) -> int:
        return int(self.paths[0][1])

    def clone(self) -> CriticalPaths:
        other = CriticalPaths()
        other.paths = [list(self.paths[0]), list(self.paths[1])]
        return other


@dataclass(slots=True)
class PreFilterState:
    """Hard constraints with the matching-pod count of every eligible domain (upstream preFilterState)."""

    constraints: tuple[Constraint, ...]
    critical_paths: list[CriticalPaths]
    tp_value_to_match_num: list[dict[str, int]]

    def min_match_num(self, i: int) -> int:
        """The global minimum for the skew: 0 while fewer than minDomains domains are eligible."""
        if len(self.tp_value_to_match_num[i]) < self.constraints[i].min_domains:
            return 0
        return self.critical_paths[i].min_num

    def clone(self) -> PreFilterState:
        """A copy for a preemption or nominated-pods trial (constraints are shared: they never change)."""
        return PreFilterState(
            self.constraints,
            [p.clone() for p in self.critical_paths],
            [dict(m) for m in self.tp_value_to_match_num],
        )


@dataclass(slots=True)
class PreScoreState:
    """Soft constraints, nodes left unscored, per-domain counts and weights (upstream preScoreState)."""

    constraints: tuple[Constraint, ...]
    ignored_nodes: set[str]
    topology_value_to_pod_counts: list[dict[str, int]]
    topology_normalizing_weight: list[float]
    namespace: str = ""

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore, as upstream


# Go's math.Log on amd64 (math/log_amd64.s, the FreeBSD e_log.c algorithm without fused multiply-adds): glibc's
# log, behind Python's math.log, differs from it by one ulp for about 1% of integers (ln 3 among them), which
# could tip a score's rounding. Ported operation by operation; equal to Go's for every integer in 2..100002.
_HSQRT2: Final = 7.07106781186547524401e-01
_LN2_HI: Final = 6.93147180369123816490e-01
_LN2_LO: Final = 1.90821492927058770002e-10
_L1: Final = 6.666666666666735130e-01
_L2: Final = 3.999999999940941908e-01
_L3: Final = 2.857142874366239149e-01
_L4: Final = 2.222219843214978396e-01
_L5: Final = 1.818357216161805012e-01
_L6: Final = 1.531383769920937332e-01
_L7: Final = 1.479819860511658591e-01


def go_log(x: float) -> float:
    """math.Log(x) bit for bit as Go computes it on amd64, for finite x > 0."""
    f1, ki = math.frexp(x)
    if f1 < _HSQRT2:
        f1 *= 2
        ki -= 1
    f = f1 - 1
    k = float(ki)
    s = f / (2 + f)
    s2 = s * s
    s4 = s2 * s2
    t1 = s2 * (_L1 + s4 * (_L3 + s4 * (_L5 + s4 * _L7)))
    t2 = s4 * (_L2 + s4 * (_L4 + s4 * _L6))
    r = t1 + t2
    hfsq = 0.5 * f * f
    return k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)


def topology_normalizing_weight(size: int) -> float:
    """ln(size + 2): a constraint over more domains weighs more, so small domains are not watered down."""
    return go_log(float(size + 2))


def go_round(x: float) -> int:
    """math.Round for a non-negative float: halves away from zero (Python's round() is banker's)."""
    whole = math.floor(x)
    return int(whole) + (1 if x - whole >= 0.5 else 0)


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


def _eligible(c: Constraint, pod: PodInfo, spread: _PodSpread, node: NodeInfo) -> bool:
    """matchNodeInclusionPolicies: the node counts for c under its nodeAffinityPolicy / nodeTaintsPolicy."""
    record = node.node
    assert record is not None
    if c.honors_affinity and not spread.required.matches(record.labels, record.name):
        return False
    return not (c.honors_taints and record.taints and find_untolerated_taint(record.taints, pod.tolerations))


# ---------------------------------------------------------------------------------------------------------
# Per-domain sums kept across cycles

DOMAIN_SUMS_ENTRIES: Final = 16  # (selector, namespace, key, eligibility) combinations kept by one plugin


class DomainSums:
    """Matching pods per domain over all eligible nodes, updated only where the snapshot changed.

    What upstream recounts over every node each cycle: with system defaults that is every Deployment pod's
    PreScore. Each node's contribution (domain, count) is remembered with the NodeInfo it came from; a node
    is counted again only when the snapshot holds another NodeInfo for it (the cache clones a node that
    changed) or its memoized count is gone or differs (its pods changed in place). So a ReplicaSet's next pod
    costs an identity check and a memo lookup per node instead of a count; when the node list has the same
    order as last time (the common case) that check is one tight loop over the two lists.
    """

    __slots__ = ("members", "order", "per_node", "seen", "sums")

    def __init__(self) -> None:
        self.per_node: dict[str, tuple[NodeInfo, str | None, int]] = {}
        self.sums: dict[str, int] = {}
        self.members: dict[str, int] = {}  # domain -> eligible nodes in it (a domain with 0 pods still counts)
        self.order: list[NodeInfo] = []  # the node list of the last refresh
        self.seen: list[Any] = []  # each node's memoized count at the last refresh (None: not counted)

    @classmethod
    def counted(
        cls,
        nodes: Sequence[NodeInfo],
        c: Constraint,
        namespace: str,
        required_keys: tuple[str, ...],
        eligible: Callable[[NodeInfo], bool] | None,
    ) -> DomainSums:
        """The plain path (caches disabled): every node's matching pods counted afresh, nothing remembered."""
        out = cls()
        sums, members = out.sums, out.members
        for n in nodes:
            record = n.node
            if record is None:
                continue
            labels = record.labels
            if not all(k in labels for k in required_keys) or (eligible is not None and not eligible(n)):
                continue
            value = labels.get(c.topology_key, "")
            members[value] = members.get(value, 0) + 1
            sums[value] = sums.get(value, 0) + count_pods_match_selector(n.pods.values(), c.selector, namespace)
        return out

    def _drop(self, entry: tuple[NodeInfo, str | None, int]) -> None:
        _, value, count = entry
        if value is None:
            return
        left = self.members[value] - 1
        if left:
            self.members[value] = left
            self.sums[value] -= count
        else:
            del self.members[value]
            del self.sums[value]

    def _count(
        self,
        n: NodeInfo,
        c: Constraint,
        namespace: str,
        memo_key: str,
        required_keys: tuple[str, ...],
        eligible: Callable[[NodeInfo], bool] | None,
    ) -> None:
        """(Re)place node n's contribution."""
        prev = self.per_node.get(n.name)
        if prev is not None:
            self._drop(prev)
        record = n.node
        value: str | None = None
        count = 0
        if record is not None:
            labels = record.labels
            for k in required_keys:
                if k not in labels:
                    break
            else:
                if eligible is None or eligible(n):
                    value = labels.get(c.topology_key, "")
                    cached = n.memo.get(memo_key)
                    if cached is None:
                        cached = count_pods_match_selector(n.pods.values(), c.selector, namespace)
                        n.remember(memo_key, cached)
                    count = int(cached)
        self.per_node[n.name] = (n, value, count)
        if value is not None:
            self.members[value] = self.members.get(value, 0) + 1
            self.sums[value] = self.sums.get(value, 0) + count

    def refresh(
        self,
        nodes: Sequence[NodeInfo],
        c: Constraint,
        namespace: str,
        required_keys: tuple[str, ...],
        eligible: Callable[[NodeInfo], bool] | None,
    ) -> None:
        """Bring the sums up to date with `nodes` (the snapshot's full node list)."""
        memo_key = c.memo_tag + namespace
        order, seen = self.order, self.seen
        if len(order) == len(nodes):
            # Same NodeInfo (so same labels) and same memoized count (the memo is dropped when the node's pods
            # change) as last time: nothing to redo. Only a renamed position means the order changed.
            changed = [
                i
                for i, n, p, v in zip(range(len(nodes)), nodes, order, seen, strict=True)
                if n is not p or n.memo.get(memo_key) != v
            ]
            if all(nodes[i].name == order[i].name for i in changed):
                for i in changed:
                    n = nodes[i]
                    self._count(n, c, namespace, memo_key, required_keys, eligible)
                    order[i] = n
                    seen[i] = n.memo.get(memo_key)
                return
        per_node = self.per_node
        for n in nodes:
            prev = per_node.get(n.name)
            if prev is not None and prev[0] is n and (prev[1] is None or n.memo.get(memo_key) == prev[2]):
                continue
            self._count(n, c, namespace, memo_key, required_keys, eligible)
        if len(per_node) != len(nodes):  # nodes left the snapshot
            present = {n.name for n in nodes}
            for name in [name for name in per_node if name not in present]:
                self._drop(per_node.pop(name))
        self.order = list(nodes)
        self.seen = [n.memo.get(memo_key) for n in nodes]


# ---------------------------------------------------------------------------------------------------------
# The plugin


class PodTopologySpread(
    PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions, ExplainExtensions, SignPlugin
):
    """Hard spread constraints filter, soft ones (and the default constraints) score."""

    name: ClassVar[str] = NAME
    # Counts matching pods over the cluster's nodes: kept results only where it was skipped.
    sign_reads_cluster: ClassVar[bool] = True
    has_normalize: ClassVar[bool] = True
    # Only read when the plugin has default constraints; __init__ narrows it to () otherwise.
    object_kinds: ClassVar[tuple[str, ...]] = DEFAULT_SELECTOR_KINDS

    def __init__(self, args: Args | None = None, handle: Handle | None = None) -> None:
        self._handle = handle
        self.args = args or Args()
        self.system_defaulted = self.args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints: tuple[Mapping[str, Any], ...] = (
            SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else self.args.default_constraints
        )
        # Templates of the default constraints; each pod's default selector replaces their (nil) selector.
        self._default_hard = filter_constraints(self.default_constraints, {}, DO_NOT_SCHEDULE)
        self._default_soft = filter_constraints(self.default_constraints, {}, SCHEDULE_ANYWAY)
        self._sums: dict[str, DomainSums] = {}
        if not self.default_constraints:
            # Upstream creates the Service/RC/RS/StatefulSet listers only with default constraints: without
            # them nothing is watched (and no RBAC is needed). A plain attribute shadows the ClassVar.
            object.__setattr__(self, "object_kinds", ())

    # ------------------------------------------------------------------ constraints

    def _default_selector(self, pod: PodInfo) -> Selector:
        if self._handle is None:
            return EVERYTHING
        objects = self._handle.objects
        if not caching.ENABLED:  # the plain path: the Services and controllers looked up on every call
            return default_selector(pod, objects)
        generations = tuple(objects.generation(kind) for kind in DEFAULT_SELECTOR_KINDS)
        cached = pod.derived.get(_DEFAULT_SELECTOR_KEY)
        if cached is not None and cached[0] == generations:
            return cached[1]  # type: ignore[no-any-return]
        selector = default_selector(pod, objects)
        pod.derived[_DEFAULT_SELECTOR_KEY] = (generations, selector)
        return selector

    def build_default_constraints(self, pod: PodInfo, action: str) -> tuple[Constraint, ...]:
        """buildDefaultConstraints: the default constraints for `action` with the pod's default selector."""
        templates = self._default_hard if action == DO_NOT_SCHEDULE else self._default_soft
        if not templates:
            return ()
        selector = self._default_selector(pod)
        if not selector.requirements:  # selector.Empty(): the pod belongs to no Service or controller
            return ()
        return tuple(_with_memo_tag(replace(t, selector=selector)) for t in templates)

    def constraints(self, pod: PodInfo, action: str) -> tuple[Constraint, ...]:
        """getConstraints: the pod's own constraints for `action`, or the defaults when it has none.

        Raises ValueError with upstream's wording when the pod's selector cannot be parsed.
        """
        spread = pod_spread(pod)
        if spread.explicit:
            hard = action == DO_NOT_SCHEDULE
            err = spread.hard_error if hard else spread.soft_error
            if err is not None:
                which = "hard" if hard else "soft"
                raise ValueError(f"obtaining pod's {which} topology spread constraints: {err}")
            return spread.hard if hard else spread.soft
        return self.build_default_constraints(pod, action)

    # ------------------------------------------------------------------ PreFilter / Filter

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Count matching pods per eligible domain of every hard constraint; Skip without hard constraints."""
        state[_ALL_NODES_KEY] = nodes
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except ValueError as exc:
            return None, error_status(f"get constraints from pod: {exc}", NAME)
        if not constraints:
            return None, SKIP
        state[PRE_FILTER_STATE_KEY] = self.calc_pre_filter_state(pod, constraints, nodes)
        return None, None

    def _domain_sums(
        self, pod: PodInfo, c: Constraint, nodes: Sequence[NodeInfo], required_keys: tuple[str, ...]
    ) -> DomainSums:
        """Up-to-date per-domain sums for c over nodes carrying required_keys and passing c's policies.

        Kept per (selector, namespace, key, required keys, what of the pod the policies read): the next pod
        of a ReplicaSet finds its predecessor's sums and only recounts the nodes that changed.
        """
        spread = pod_spread(pod)
        fingerprint = ""
        if c.honors_affinity and (pod.node_selector or spread.required.selector is not None):
            node_affinity = (pod.affinity or {}).get("nodeAffinity") or {}
            fingerprint += f"A{sorted(pod.node_selector.items())!r}{node_affinity.get(REQUIRED_KEY)!r}"
        if c.honors_taints:
            fingerprint += f"T{pod.tolerations!r}"
        eligible: Callable[[NodeInfo], bool] | None = None
        if fingerprint:
            eligible = lambda n: _eligible(c, pod, spread, n)  # noqa: E731 -- one closure per refresh
        if not caching.ENABLED:
            return DomainSums.counted(nodes, c, pod.namespace, required_keys, eligible)
        cache_key = "\x00".join((c.memo_tag, pod.namespace, c.topology_key, ",".join(required_keys), fingerprint))
        sums = self._sums.pop(cache_key, None)
        if sums is None:
            sums = DomainSums()
            if len(self._sums) >= DOMAIN_SUMS_ENTRIES:
                del self._sums[next(iter(self._sums))]  # least recently used
        self._sums[cache_key] = sums
        sums.refresh(nodes, c, pod.namespace, required_keys, eligible)
        return sums

    def calc_pre_filter_state(
        self, pod: PodInfo, constraints: tuple[Constraint, ...], nodes: Sequence[NodeInfo]
    ) -> PreFilterState:
        """calPreFilterState over all nodes of the snapshot: a node counts when it carries every constraint's
        key and passes the constraint's policies; every such node's domain is present, even with 0 pods."""
        required = tuple(dict.fromkeys(c.topology_key for c in constraints))
        counts = [dict(self._domain_sums(pod, c, nodes, required).sums) for c in constraints]
        paths = []
        for tp in counts:
            p = CriticalPaths()
            for value, num in tp.items():
                p.update(value, num)
            paths.append(p)
        return PreFilterState(constraints, paths, counts)

    def pre_filter_extensions(self) -> PodTopologySpread:
        return self

    def _update_with_pod(
        self, state: CycleState, updated: PodInfo, preemptor: PodInfo, node: NodeInfo, delta: int
    ) -> Status | None:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error_status(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)
        record = node.node
        if updated.namespace != preemptor.namespace or record is None:
            return None
        labels = record.labels
        if not node_has_all_keys(labels, s.constraints):
            return None
        spread = pod_spread(preemptor)
        for i, c in enumerate(s.constraints):
            # Unlike countPodsMatchSelector, upstream's update neither skips terminating pods nor treats an
            # empty selector as matching nothing.
            if not c.selector.matches(updated.labels):
                continue
            if not _eligible(c, preemptor, spread, node):
                continue
            value = labels[c.topology_key]
            tp = s.tp_value_to_match_num[i]
            tp[value] = tp.get(value, 0) + delta
            s.critical_paths[i].update(value, tp[value])
        return None

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        """A pod (nominated, or a victim put back) joins node: its domain's counts grow."""
        return self._update_with_pod(state, to_add, pod, node, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status | None:
        """A pod (a preemption victim) leaves node: its domain's counts shrink."""
        return self._update_with_pod(state, to_remove, pod, node, -1)

    def _filter_plan(self, state: CycleState, pod: PodInfo) -> list[tuple[str, dict[str, int], int]] | Status:
        """Per hard constraint: (topology key, domain counts, the most matching pods a domain may have)."""
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return error_status(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', NAME)
        plan = []
        for i, c in enumerate(s.constraints):
            self_match = 1 if c.selector.matches(pod.labels) else 0
            # skew = count + selfMatch - minMatch > maxSkew  <=>  count > maxSkew - selfMatch + minMatch
            plan.append((c.topology_key, s.tp_value_to_match_num[i], c.max_skew - self_match + s.min_match_num(i)))
        return plan

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return self.filter_batch(state, pod, [node])[0]

    def filter_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """Missing topology key -> UnschedulableAndUnresolvable; too much skew -> Unschedulable."""
        plan = self._filter_plan(state, pod)
        if isinstance(plan, Status):
            return [plan] * len(nodes)
        out: list[Status | None] = []
        append = out.append
        for n in nodes:
            record = n.node
            labels = record.labels if record is not None else {}
            verdict: Status | None = None
            for key, counts, limit in plan:
                value = labels.get(key)
                if value is None:
                    verdict = _MISSING_LABEL
                    break
                if counts.get(value, 0) > limit:
                    verdict = _SKEW
                    break
            append(verdict)
        return out

    # ------------------------------------------------------------------ PreScore / Score

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        """Count matching pods per feasible domain of every soft constraint; Skip without soft constraints."""
        all_nodes: Sequence[NodeInfo] | None = state.get(_ALL_NODES_KEY)
        if all_nodes is None:
            all_nodes = self._handle.snapshot().node_info_list if self._handle is not None else nodes
        if not all_nodes:
            return SKIP
        # Only non-system-default rules require every key: with system defaults a node without a zone label
        # still gets hostname spreading.
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        try:
            constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        except ValueError as exc:
            return error_status(f"calculating preScoreState: {exc}", NAME)
        if not constraints:
            return SKIP
        state[PRE_SCORE_STATE_KEY] = self.calc_pre_score_state(pod, constraints, nodes, all_nodes, require_all)
        return None

    def calc_pre_score_state(
        self,
        pod: PodInfo,
        constraints: tuple[Constraint, ...],
        filtered: Sequence[NodeInfo],
        all_nodes: Sequence[NodeInfo],
        require_all: bool,
    ) -> PreScoreState:
        """initPreScoreState over the feasible nodes, then the counts over all nodes (upstream PreScore)."""
        ignored: set[str] = set()
        counts: list[dict[str, int]] = [{} for _ in constraints]
        sizes = [0] * len(constraints)
        zonal = [(i, c) for i, c in enumerate(constraints) if c.topology_key != LABEL_HOSTNAME]
        for n in filtered:
            record = n.node
            labels = record.labels if record is not None else {}
            if require_all and not node_has_all_keys(labels, constraints):
                ignored.add(n.name)
                continue
            for i, c in zonal:
                value = labels.get(c.topology_key, "")
                tp = counts[i]
                if value not in tp:
                    tp[value] = 0
                    sizes[i] += 1
        hostname_size = len(filtered) - len(ignored)
        weights = [
            topology_normalizing_weight(hostname_size if c.topology_key == LABEL_HOSTNAME else sizes[i])
            for i, c in enumerate(constraints)
        ]
        # Hostname counts are taken per node at Score time; only zonal domains are summed over all nodes (those
        # carrying every key when require_all; a node without the key is in domain "" otherwise, as upstream).
        required = tuple(dict.fromkeys(c.topology_key for c in constraints)) if require_all else ()
        for i, c in zonal:
            sums = self._domain_sums(pod, c, all_nodes, required).sums
            tp = counts[i]
            for value in tp:  # a domain without a feasible node is never scored
                tp[value] = sums.get(value, 0)
        return PreScoreState(constraints, ignored, counts, weights, pod.namespace)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """Upstream Score: 0 for an ignored node (NormalizeScore keeps it at 0)."""
        raw = self.score_batch(state, pod, [node])[0]
        return 0 if raw == INVALID_SCORE else raw

    def score_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """round(sum over the node's constraints of count * weight + maxSkew - 1); ignored nodes are marked
        INVALID_SCORE (-1) for NormalizeScore, which turns them into 0 as upstream's does."""
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            raise ValueError(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        ignored = s.ignored_nodes
        namespace = s.namespace
        if not caching.ENABLED:
            return self._score_plain(s, nodes)
        # Per constraint: (topology key, the term each domain adds (count * weight + maxSkew - 1, computed once
        # per domain with the same float operations as upstream's per-node sum), or for the hostname key None
        # and what is needed to take the node's own count: memo key, weight, maxSkew - 1, the constraint).
        plan: list[tuple[str, dict[str, float] | None, str, float, float, Constraint]] = []
        for i, c in enumerate(s.constraints):
            weight = s.topology_normalizing_weight[i]
            skew_term = float(c.max_skew - 1)
            if c.topology_key == LABEL_HOSTNAME:
                plan.append((c.topology_key, None, c.memo_tag + namespace, weight, skew_term, c))
            else:
                per_domain = {
                    v: float(cnt) * weight + skew_term for v, cnt in s.topology_value_to_pod_counts[i].items()
                }
                plan.append((c.topology_key, per_domain, "", weight, skew_term, c))
        out: list[int] = []
        append = out.append
        for n in nodes:
            if ignored and n.name in ignored:
                append(INVALID_SCORE)
                continue
            record = n.node
            labels = record.labels if record is not None else {}
            total = 0.0
            for key, terms, memo_key, weight, skew_term, c in plan:
                value = labels.get(key)
                if value is None:
                    continue
                if terms is not None:
                    total += terms[value]
                else:
                    cnt = n.memo.get(memo_key)
                    if cnt is None:
                        cnt = _node_count(n, c, namespace)
                    total += float(cnt) * weight + skew_term
            whole = int(total)  # total >= 0: int() is floor; math.Round rounds halves up
            append(whole + 1 if total - whole >= 0.5 else whole)
        return out

    @staticmethod
    def _score_plain(s: PreScoreState, nodes: Sequence[NodeInfo]) -> list[int]:
        """Upstream's Score node by node (caches disabled): hostname counts taken from the node's pods."""
        out: list[int] = []
        for n in nodes:
            if n.name in s.ignored_nodes:
                out.append(INVALID_SCORE)
                continue
            labels = n.node.labels if n.node is not None else {}
            total = 0.0
            for i, c in enumerate(s.constraints):
                value = labels.get(c.topology_key)
                if value is None:
                    continue
                if c.topology_key == LABEL_HOSTNAME:
                    cnt = count_pods_match_selector(n.pods.values(), c.selector, s.namespace)
                else:
                    cnt = s.topology_value_to_pod_counts[i][value]
                total += float(cnt) * s.topology_normalizing_weight[i] + float(c.max_skew - 1)
            out.append(go_round(total))
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[int]) -> Status | None:
        """Fewest matching pods -> 100: 100 * (max + min - s) / max over scored nodes; ignored -> 0."""
        if state.get(PRE_SCORE_STATE_KEY) is None:
            return error_status(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found', NAME)
        valid = [s for s in scores if s != INVALID_SCORE]
        if not valid:
            for i in range(len(scores)):
                scores[i] = 0
            return None
        lo, hi = min(valid), max(valid)
        for i, s in enumerate(scores):
            if s == INVALID_SCORE:
                scores[i] = 0
            elif hi == 0:
                scores[i] = 100
            else:
                scores[i] = 100 * (hi + lo - s) // hi
        return None

    # ------------------------------------------------------------------ events, explanations

    def events_to_register(self) -> list[ClusterEvent]:
        """v1.37 EventsToRegister: assigned pods added/relabelled/deleted, the pod's own labels or
        tolerations, and nodes added/deleted/relabelled/retainted."""
        return [
            ClusterEvent(ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
            ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_TOLERATION | ActionType.UPDATE_POD_LABEL),
            ClusterEvent(
                NODE,
                ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT,
            ),
        ]

    def explain_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status | None
    ) -> list[ExplainDetail]:
        """Per hard constraint: the node's domain, its matching pods, the global minimum and the skew."""
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None or node.node is None:
            return []
        labels = node.node.labels
        out = []
        for i, c in enumerate(s.constraints):
            key = c.topology_key
            value = labels.get(key)
            head = f"spread constraint {key} (maxSkew {c.max_skew})"
            if value is None:
                out.append(
                    ExplainDetail(
                        f"{head}: node has no label {key}, so it is in no domain",
                        {"topologyKey": key, "domain": None, "maxSkew": c.max_skew},
                    )
                )
                continue
            tp = s.tp_value_to_match_num[i]
            count = tp.get(value, 0)
            self_match = 1 if c.selector.matches(pod.labels) else 0
            minimum = s.min_match_num(i)
            domains = len(tp)
            skew = count + self_match - minimum
            if domains < c.min_domains:
                min_text = f"global minimum 0 (only {domains} eligible domain(s) < minDomains {c.min_domains})"
            else:
                min_text = f"global minimum {minimum} over {domains} eligible domain(s) (minDomains {c.min_domains})"
            verdict = ">" if skew > c.max_skew else "<="
            out.append(
                ExplainDetail(
                    f"{head}: domain {key}={value} has {count} matching pod(s)"
                    f"{' + this pod' if self_match else ''}; {min_text}; "
                    f"skew {count}+{self_match}-{minimum} = {skew} {verdict} maxSkew {c.max_skew}",
                    {
                        "topologyKey": key,
                        "domain": value,
                        "matchingPods": count,
                        "selfMatch": bool(self_match),
                        "globalMinimum": minimum,
                        "eligibleDomains": domains,
                        "minDomains": c.min_domains,
                        "skew": skew,
                        "maxSkew": c.max_skew,
                    },
                )
            )
        return out

    def suggest_fixes(self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status) -> list[FixCandidate]:
        """For each of the pod's own hard constraints whose skew this node exceeds: the maxSkew that admits
        it (each node's value is one step of a ladder; the smallest is tried first). The system's and the
        profile's default constraints are not the pod's to change."""
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None or node.node is None or ERR_REASON_CONSTRAINTS_NOT_MATCH not in status.reasons:
            return []
        if not pod_spread(pod).explicit:
            return []
        raw = pod.topology_spread_constraints
        hard_raw = [j for j, c in enumerate(raw) if c.get("whenUnsatisfiable") == DO_NOT_SCHEDULE]
        labels = node.node.labels
        needed: list[tuple[int, Constraint, int]] = []
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None or i >= len(hard_raw):
                return []
            self_match = 1 if c.selector.matches(pod.labels) else 0
            skew = s.tp_value_to_match_num[i].get(value, 0) + self_match - s.min_match_num(i)
            if skew > c.max_skew:
                needed.append((hard_raw[i], c, skew))
        return [
            FixCandidate(
                key=f"max-skew:{j}",
                kind="raise-max-skew",
                description=f"raise maxSkew of topology spread constraint {j + 1} ({c.topology_key}) from "
                f"{c.max_skew} to {skew}",
                pod=_with_max_skew(j, skew),
                magnitude=-float(skew),
                data={"constraint": j, "maxSkew": skew},
                step=f"maxSkew {skew}",
                partial=len(needed) > 1,
            )
            for j, c, skew in needed
        ]


def _with_max_skew(index: int, max_skew: int) -> Callable[[PodInfo], PodInfo]:
    """A pod transform for a what-if fix: spec.topologySpreadConstraints[index].maxSkew set to max_skew."""

    def raise_skew(pod: PodInfo) -> PodInfo:
        constraints = list(pod.topology_spread_constraints)
        constraints[index] = {**constraints[index], "maxSkew": max_skew}
        return pod.evolve(topology_spread_constraints=tuple(constraints))

    return raise_skew


def new(raw_args: Mapping[str, Any] | Args | None, handle: Handle) -> PodTopologySpread:
    """Registry factory: accepts raw pluginConfig args or an already parsed Args."""
    args = raw_args if isinstance(raw_args, Args) else parse_args(raw_args)
    return PodTopologySpread(args, handle)


__all__ = [
    "DEFAULT_SELECTOR_KINDS",
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "NAME",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "Args",
    "Constraint",
    "CriticalPaths",
    "PodTopologySpread",
    "PreFilterState",
    "PreScoreState",
    "count_pods_match_selector",
    "default_selector",
    "filter_constraints",
    "new",
    "parse_args",
]
