"""InterPodAffinity: required and preferred pod affinity and anti-affinity (upstream plugins/interpodaffinity).

Semantics are upstream v1.37.2's with the InterPodAffinityHostnameFastPath gate off (its default):

* A term is {namespaces, labelSelector, topologyKey, namespaceSelector}. With neither `namespaces` nor a
  `namespaceSelector` it means the pod's own namespace; a nil selector matches nothing, `{}` everything.
  The incoming pod's namespaceSelector is resolved to namespace names through the Namespace objects; an
  existing pod's namespaceSelector is matched against the incoming pod's namespace labels.
* PreFilter counts, per topology pair (key, value): existing pods whose required anti-affinity terms
  match the incoming pod; existing pods that match all of the incoming pod's required affinity terms; and
  existing pods matching each of its required anti-affinity terms. Filter is then dict lookups per node,
  in upstream's order: affinity (with the first-pod-of-a-group exception), anti-affinity, existing pods'
  anti-affinity.
* PreScore sums weights into per-topology scores: the incoming pod's preferred terms against every pod,
  and every pod-with-affinity's required affinity (hardPodAffinityWeight) and preferred terms against the
  incoming pod; NormalizeScore maps [min, max] onto [0, 100].

`matchLabelKeys`/`mismatchLabelKeys` are not read here: kube-apiserver merges them into the labelSelector
when the pod is created (`scheduler/admission.py` does the same for `simulate`'s input).

Speed: each pod's terms are parsed once (PodInfo.derived). The cluster-wide counts and scores are sums of
per-node contributions; for each incoming pod shape (its labels and namespace, or its resolved terms) the
plugin keeps the sum (`Aggregate`) and, each cycle, only takes back and re-adds the nodes that changed
since (`NodeChanges`: one position-by-position pass over the node list). A node's contribution is memoized
on its NodeInfo. So a Deployment's pods pay a pass over the cluster's pods once, then a few nodes per
cycle, instead of matching every term against every pod every cycle; Filter is a few set lookups per node.

This module holds the plugin (upstream plugin.go): its args and handle, the sums it keeps per pod shape,
namespaces, events and explanations. The extension points live with their halves: PreFilter/Filter in
filtering.py, PreScore/Score/NormalizeScore in scoring.py.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from scheduler import caching
from scheduler.framework.interface import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    ExplainDetail,
    ExplainExtensions,
    Handle,
    SignPlugin,
)
from scheduler.framework.labels import NOTHING, Selector
from scheduler.framework.objects import NAMESPACE
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.inter_pod_affinity.args import Args, parse_args
from scheduler.plugins.inter_pod_affinity.common import (
    ALL_NODES_STATE_KEY,
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
    PRE_FILTER_STATE_KEY,
    labels_of,
)
from scheduler.plugins.inter_pod_affinity.explain import explain_affinity, explain_anti_affinity, explain_existing
from scheduler.plugins.inter_pod_affinity.filtering import Filtering, PreFilterState
from scheduler.plugins.inter_pod_affinity.scoring import Scoring
from scheduler.plugins.inter_pod_affinity.terms import AffinityTerm, namespace_labels_of
from scheduler.plugins.inter_pod_affinity.topology_counts import AGGREGATE_LIMIT, Aggregate, Contribution, NodeChanges


class InterPodAffinity(Filtering, Scoring, EnqueueExtensions, ExplainExtensions, SignPlugin):
    """Filters on required pod (anti-)affinity, both the incoming pod's and existing pods'; scores preferred."""

    name: ClassVar[str] = NAME
    # Counts existing pods' terms over the cluster's nodes: kept results only where it was skipped.
    sign_reads_cluster: ClassVar[bool] = True
    object_kinds: ClassVar[tuple[str, ...]] = (NAMESPACE,)

    def __init__(self, args: Args | None = None, handle: Handle | None = None) -> None:
        self.args = args or Args()
        self._handle = handle
        # namespaceSelector requirements -> matching namespace names, valid for one Namespace generation.
        self._ns_cache: dict[tuple[Any, ...], frozenset[str]] = {}
        self._ns_generation = -1
        # Cluster-wide sums per pod shape, kept up to date from the nodes that changed between cycles.
        self._changes = NodeChanges()
        self._aggregates: OrderedDict[str, Aggregate] = OrderedDict()

    def aggregate(
        self, key: str, compute: Callable[[NodeInfo], Contribution], nodes: Sequence[NodeInfo]
    ) -> Aggregate:
        """The up-to-date sum of `compute` over `nodes`, the nodes of the last sync (memoized per node under key);
        summed afresh while caches are disabled."""
        if not caching.ENABLED:
            return Aggregate.summed(key, nodes, compute)
        aggregates = self._aggregates
        aggregate = aggregates.get(key)
        if aggregate is None:
            aggregate = aggregates[key] = Aggregate(key)
            if len(aggregates) > AGGREGATE_LIMIT:
                aggregates.popitem(last=False)
        else:
            aggregates.move_to_end(key)
        aggregate.refresh(self._changes, compute)
        return aggregate

    # ---------------------------------------------------------------- namespaces

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        """GetNamespaceLabelsSnapshot: a missing Namespace means no labels."""
        if self._handle is None:
            return {}
        return namespace_labels_of(self._handle.objects.get(NAMESPACE, "", namespace))

    def _namespaces_matching(self, selector: Selector) -> frozenset[str]:
        if self._handle is None:
            return frozenset()
        objects = self._handle.objects
        generation = objects.generation(NAMESPACE)
        if not caching.ENABLED:  # the plain path: the Namespaces listed and matched on every call
            return frozenset(
                str((ns.get("metadata") or {}).get("name") or "")
                for ns in objects.list(NAMESPACE)
                if selector.matches(namespace_labels_of(ns))
            )
        if generation != self._ns_generation:
            self._ns_cache.clear()
            self._ns_generation = generation
        key = selector.requirements
        found = self._ns_cache.get(key)
        if found is None:
            names = set()
            for ns in objects.list(NAMESPACE):
                if selector.matches(namespace_labels_of(ns)):
                    names.add(str((ns.get("metadata") or {}).get("name") or ""))
            found = self._ns_cache[key] = frozenset(names)
        return found

    def resolve(self, term: AffinityTerm) -> AffinityTerm:
        """mergeAffinityTermNamespacesIfNotEmpty: an incoming pod's namespaceSelector becomes names (and
        Nothing); `{}` stays Everything, nil stays Nothing."""
        ns_selector = term.namespace_selector
        if ns_selector.everything or ns_selector.nothing:
            return term
        names = self._namespaces_matching(ns_selector)
        return AffinityTerm(term.namespaces | names, term.selector, term.topology_key, NOTHING)

    # ---------------------------------------------------------------- queueing

    def events_to_register(self) -> list[ClusterEvent]:
        """v1.37's EventsToRegister: an assigned pod added, relabelled or deleted; a node added or
        relabelled. (A change to the pending pod itself requeues it through the queue's update path.)"""
        return [
            ClusterEvent(ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        ]

    # ---------------------------------------------------------------- explain

    def explain_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status | None
    ) -> list[ExplainDetail]:
        """Which term found no pod in the node's domain, or which pods (and whose terms) rule the node out."""
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if status is None or s is None or status.code == Code.SKIP:
            return []
        labels = labels_of(node)
        all_nodes: Sequence[NodeInfo] = state.get(ALL_NODES_STATE_KEY) or ()
        reason = status.message()
        if reason == ERR_REASON_AFFINITY_RULES_NOT_MATCH:
            return explain_affinity(s, labels)
        if reason == ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH:
            return explain_anti_affinity(s, labels, all_nodes)
        if reason == ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH:
            return explain_existing(s, labels, all_nodes)
        return []


def new(raw_args: Mapping[str, Any] | Args | None, handle: Handle) -> InterPodAffinity:
    """Registry factory: accepts raw pluginConfig args or already parsed Args."""
    args = raw_args if isinstance(raw_args, Args) else parse_args(raw_args)
    return InterPodAffinity(args, handle)
