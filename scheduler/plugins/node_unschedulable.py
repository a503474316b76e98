"""NodeUnschedulable: cordoned nodes reject pods that don't tolerate it (upstream plugins/nodeunschedulable)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from scheduler.framework.interface import (
    NODE,
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    ExplainExtensions,
    FilterPlugin,
    FixCandidate,
    Handle,
    SignPlugin,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Status, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo, Taint, tolerations_tolerate

NAME = "NodeUnschedulable"
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
# spec.unschedulable is checked as if the node carried this taint (v1.TaintNodeUnschedulable, NoSchedule).
UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", "NoSchedule")

_REJECT = unresolvable(ERR_REASON_UNSCHEDULABLE, plugin=NAME)
_UNKNOWN = unresolvable(ERR_REASON_UNKNOWN_CONDITION, plugin=NAME)


def tolerates_unschedulable(pod: PodInfo) -> bool:
    """Whether the pod tolerates node.kubernetes.io/unschedulable:NoSchedule (DaemonSet pods do)."""
    return tolerations_tolerate(pod.tolerations, UNSCHEDULABLE_TAINT)


class NodeUnschedulable(FilterPlugin, EnqueueExtensions, ExplainExtensions, SignPlugin):
    """Rejects nodes with spec.unschedulable=true unless the pod tolerates the unschedulable taint."""

    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        record = node.node
        if record is None:
            return _UNKNOWN
        if not record.unschedulable or tolerates_unschedulable(pod):
            return None
        return _REJECT

    def filter_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """Evaluates the toleration once per cycle, then one attribute read per node."""
        tolerated = tolerates_unschedulable(pod)
        out: list[Status | None] = []
        append = out.append
        for n in nodes:
            record = n.node
            if record is None:
                append(_UNKNOWN)
            elif record.unschedulable and not tolerated:
                append(_REJECT)
            else:
                append(None)
        return out

    def sign_pod(self, pod: PodInfo) -> bool:
        """All it reads of the pod: whether it tolerates the unschedulable taint."""
        return tolerates_unschedulable(pod)

    def suggest_fixes(self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status) -> list[FixCandidate]:
        """Uncordon the node (`kubectl uncordon NODE`)."""
        record = node.node
        if record is None or not record.unschedulable:
            return []

        def uncordon(snapshot: Snapshot, name: str = node.name) -> Snapshot:
            info = snapshot.get(name)
            if info is None or info.node is None:
                return snapshot
            copy = info.clone()
            copy.node = dataclasses.replace(info.node, unschedulable=False)
            return snapshot.with_nodes({name: copy})

        return [
            FixCandidate(
                key=f"uncordon:{node.name}",
                kind="uncordon",
                description=f"uncordon node {node.name}",
                snapshot=uncordon,
                data={"node": node.name},
            )
        ]

    def events_to_register(self) -> list[ClusterEvent]:
        """A new or uncordoned node (spec.unschedulable changes count as a taint update), or a new toleration."""
        return [
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
            ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_TOLERATION),
        ]


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> NodeUnschedulable:
    """Registry factory; NodeUnschedulable takes no arguments."""
    return NodeUnschedulable(raw_args, handle)
