"""What InterPodAffinity's filtering and scoring share (upstream plugins/interpodaffinity, v1.37): the names,
reasons and state keys, a node's labels, the memo key of a pod's shape, and the plugin as the two halves see
it (`AffinityPlugin`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from scheduler.framework.interface import Handle
from scheduler.framework.labels import Labels
from scheduler.framework.types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from scheduler.plugins.inter_pod_affinity.args import Args
    from scheduler.plugins.inter_pod_affinity.terms import AffinityTerm
    from scheduler.plugins.inter_pod_affinity.topology_counts import Aggregate, Contribution, NodeChanges

NAME: Final = "InterPodAffinity"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME
# The node list PreFilter was given (the cycle's snapshot); PreScore and explanations read it, as upstream
# reads the same snapshot through its shared lister.
ALL_NODES_STATE_KEY: Final = NAME + "/allNodes"
SYNCED_STATE_KEY: Final = NAME + "/synced"  # the node list this cycle already looked for changes in

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod anti-affinity rules"

REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"
POD_AFFINITY: Final = "podAffinity"
POD_ANTI_AFFINITY: Final = "podAntiAffinity"

NO_LABELS: Final[Mapping[str, str]] = {}


def labels_of(node: NodeInfo) -> Mapping[str, str]:
    """A node's labels (none for a NodeInfo without its Node)."""
    record = node.node
    return record.labels if record is not None else NO_LABELS


def pod_shape_key(prefix: str, pod: PodInfo, ns_labels: Labels, *extra: Any) -> str:
    """A memo key for what matching an existing pod's terms against `pod` depends on."""
    return prefix + repr((pod.namespace, sorted(pod.labels.items()), sorted(ns_labels.items()), extra))


class AffinityPlugin:
    """InterPodAffinity as its filtering and scoring halves (filtering.py, scoring.py) see it; plugin.py
    implements it: the args and handle, the node changes synced each cycle, the cluster-wide sums kept per pod
    shape, a namespace's labels and a term with its namespaceSelector resolved."""

    args: Args
    _handle: Handle | None
    _changes: NodeChanges

    def aggregate(self, key: str, compute: Callable[[NodeInfo], Contribution], nodes: Sequence[NodeInfo]) -> Aggregate:
        raise NotImplementedError

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        raise NotImplementedError

    def resolve(self, term: AffinityTerm) -> AffinityTerm:
        raise NotImplementedError
