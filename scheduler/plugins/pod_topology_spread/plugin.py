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

This module holds the plugin (upstream plugin.go): its constraints and default constraints, the per-domain
sums it keeps, its events, explanations and fixes. The extension points live with their halves:
PreFilter/Filter in filtering.py, PreScore/Score/NormalizeScore in scoring.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Final

from scheduler import caching
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
    FixCandidate,
    Handle,
    SignPlugin,
)
from scheduler.framework.labels import EVERYTHING, Selector
from scheduler.framework.node_selector import REQUIRED_KEY
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.pod_topology_spread.args import SYSTEM_DEFAULT_CONSTRAINTS, SYSTEM_DEFAULTING, Args, parse_args
from scheduler.plugins.pod_topology_spread.common import (
    DEFAULT_SELECTOR_KINDS,
    DO_NOT_SCHEDULE,
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    NAME,
    PRE_FILTER_STATE_KEY,
    SCHEDULE_ANYWAY,
    Constraint,
    default_selector,
    filter_constraints,
    match_node_inclusion_policies,
    pod_spread,
    with_memo_tag,
)
from scheduler.plugins.pod_topology_spread.domain_sums import DOMAIN_SUMS_ENTRIES, DomainSums
from scheduler.plugins.pod_topology_spread.filtering import Filtering, PreFilterState
from scheduler.plugins.pod_topology_spread.scoring import Scoring

_DEFAULT_SELECTOR_KEY: Final = NAME + "/defaultSelector"  # PodInfo.derived: (object generations, selector)


class PodTopologySpread(Filtering, Scoring, EnqueueExtensions, ExplainExtensions, SignPlugin):
    """Hard spread constraints filter, soft ones (and the default constraints) score."""

    name: ClassVar[str] = NAME
    # Counts matching pods over the cluster's nodes: kept results only where it was skipped.
    sign_reads_cluster: ClassVar[bool] = True
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
        return tuple(with_memo_tag(replace(t, selector=selector)) for t in templates)

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

    # ------------------------------------------------------------------ per-domain sums

    def domain_sums(
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
            eligible = lambda n: match_node_inclusion_policies(c, pod, spread, n)  # noqa: E731 -- one per refresh
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


