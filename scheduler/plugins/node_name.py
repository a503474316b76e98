"""NodeName: a pod with spec.nodeName fits only that node (upstream plugins/nodename/node_name.go, v1.37)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from scheduler.framework.interface import (
    NODE,
    ActionType,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    SignPlugin,
)
from scheduler.framework.status import Status, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"

_REJECT = unresolvable(ERR_REASON, plugin=NAME)


def fits(pod: PodInfo, node: NodeInfo) -> bool:
    """True when the pod names no node or names this one."""
    return not pod.node_name or pod.node_name == node.name


class NodeName(PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin):
    """Narrows the cycle to spec.nodeName (PreFilterResult, as v1.37 does) and rejects every other node."""

    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Only the named node needs filtering; no name means every node."""
        if pod.node_name:
            return PreFilterResult({pod.node_name}), None
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None if fits(pod, node) else _REJECT

    def filter_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """One comparison per node; all pass when the pod names no node."""
        want = pod.node_name
        if not want:
            return [None] * len(nodes)
        return [None if n.name == want else _REJECT for n in nodes]

    def sign_pod(self, pod: PodInfo) -> str:
        """spec.nodeName (upstream NodeNameSignerName)."""
        return pod.node_name

    def events_to_register(self) -> list[ClusterEvent]:
        """Only a new node (possibly the named one) can help."""
        return [ClusterEvent(NODE, ActionType.ADD)]


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> NodeName:
    """Registry factory; NodeName takes no arguments."""
    return NodeName(raw_args, handle)
