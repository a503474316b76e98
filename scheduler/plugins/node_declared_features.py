"""NodeDeclaredFeatures: a pod runs only on a node that declares every feature it needs (upstream
plugins/nodedeclaredfeatures, v1.37; GA and locked, appended to the default profile after DefaultBinder).

The pod's needs are inferred once per pod change (`PodInfo.inferred_features`, scheduler.framework.
declared_features); PreFilter applies the MaxVersion windows against the scheduler's version and skips the
plugin when nothing is left, which is every pod without a RestartAllContainers restart rule, bind mount
options or a user namespace on the host network. Filter is a subset test against the node's
`status.declaredFeatures`, parsed once per node change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from typing import Any, ClassVar

from scheduler.framework.declared_features import (
    FEATURES,
    SCHEDULER_VERSION,
    DeclaredFeature,
    Version,
    required_features,
    unsatisfied,
)
from scheduler.framework.interface import (
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
    SignPlugin,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import SKIP, Status, error_status, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo

NAME = "NodeDeclaredFeatures"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"
# Upstream's Filter without its PreFilter state: fmt.Errorf("error reading %q from cycle-state: %w", key,
# fwk.ErrNotFound).
ERR_STATE_NOT_FOUND = f'error reading "{PRE_FILTER_STATE_KEY}" from cycle-state: not found'

_REJECT = unresolvable(ERR_REASON_UNSATISFIED_REQUIREMENTS, plugin=NAME)
_NONE: frozenset[str] = frozenset()


def declared(node: NodeInfo) -> frozenset[str]:
    """The node's status.declaredFeatures (none for a NodeInfo without its Node)."""
    record = node.node
    return record.declared_features if record is not None else _NONE


class NodeDeclaredFeatures(PreFilterPlugin, FilterPlugin, EnqueueExtensions, ExplainExtensions, SignPlugin):
    """Rejects nodes that do not declare every feature the pod requires (UnschedulableAndUnresolvable)."""

    name: ClassVar[str] = NAME

    def __init__(
        self,
        args: Any = None,
        handle: Handle | None = None,
        *,
        version: Version | None = SCHEDULER_VERSION,
        features: Collection[DeclaredFeature] = FEATURES,
    ) -> None:
        self._handle = handle
        self._version = version
        self._features = features

    def required(self, pod: PodInfo) -> frozenset[str]:
        """What a node must declare for pod: its inferred features within their MaxVersion windows."""
        return required_features(pod.inferred_features, self._version, self._features)

    def sign_pod(self, pod: PodInfo) -> frozenset[str]:
        """The features the pod requires (upstream FeaturesSignerName): Filter reads nothing else of it."""
        return self.required(pod)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Record the pod's requirements; Skip the Filter for a pod that has none."""
        reqs = self.required(pod)
        if not reqs:
            return None, SKIP
        state[PRE_FILTER_STATE_KEY] = reqs
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        reqs: frozenset[str] | None = state.get(PRE_FILTER_STATE_KEY)
        if reqs is None:
            return error_status(ERR_STATE_NOT_FOUND, NAME)
        return None if reqs <= declared(node) else _REJECT

    def filter_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """One subset test per node."""
        reqs: frozenset[str] | None = state.get(PRE_FILTER_STATE_KEY)
        if reqs is None:
            return [error_status(ERR_STATE_NOT_FOUND, NAME)] * len(nodes)
        return [None if reqs <= declared(n) else _REJECT for n in nodes]

    def explain_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status | None
    ) -> list[ExplainDetail]:
        """Name the required features the node does not declare, and what it declares."""
        if status is None or not status.is_rejected():
            return []
        has = declared(node)
        missing = unsatisfied(self.required(pod), has)
        listed = ", ".join(sorted(has)) or "none"
        return [
            ExplainDetail(
                f"node {node.name} does not declare {', '.join(missing)} (status.declaredFeatures: {listed})",
                {"missingFeatures": missing, "declaredFeatures": sorted(has)},
            )
        ]

    def suggest_fixes(self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status) -> list[FixCandidate]:
        """The node declaring what it lacks: a kubelet there that supports and publishes those features."""
        record = node.node
        if record is None:
            return []
        missing = unsatisfied(self.required(pod), record.declared_features)
        if not missing:
            return []
        name, features = node.name, frozenset(missing)

        def declaring(snapshot: Snapshot) -> Snapshot:
            info = snapshot.get(name)
            if info is None or info.node is None:
                return snapshot
            copy = info.clone()
            copy.node = dataclasses.replace(info.node, declared_features=info.node.declared_features | features)
            return snapshot.with_nodes({name: copy})

        listed = ", ".join(missing)
        return [
            FixCandidate(
                key=f"declare-features:{name}:{listed}",
                kind="declare-features",
                description=f"a node that declares {listed} (node {name}, with a kubelet that publishes it)",
                snapshot=declaring,
                data={"node": name, "declaredFeatures": missing},
            )
        ]

    def events_to_register(self) -> list[ClusterEvent]:
        """A new node or a change of a node's declared features; an update of the pod itself (upstream's
        hint queues it when its inferred set changed: the queue requeues any spec change of a pending pod)."""
        return [
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
            ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE),
        ]


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> NodeDeclaredFeatures:
    """Registry factory; NodeDeclaredFeatures takes no arguments."""
    return NodeDeclaredFeatures(raw_args, handle)
