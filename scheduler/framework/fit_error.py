"""Why a pod fits no node: the Diagnosis and the `0/N nodes are available: ...` message (upstream FitError).

The message is what autoscalers, dashboards and people parse, so it is built exactly like upstream's
FitError.Error(): a histogram of "<count> <reason>" strings sorted as plain strings (so "10 ..." sorts
before "2 ..."), joined with ", ", then a period, then the PostFilter message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scheduler.framework.status import Code, Status

if TYPE_CHECKING:
    from scheduler.framework.types import NodeInfo

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"
# validation.NoteLengthLimit: events.k8s.io notes longer than this are rejected, so upstream truncates.
NOTE_LENGTH_LIMIT = 1024


@dataclass(slots=True)
class Diagnosis:
    """Per-node rejections of one attempt plus the plugins that rejected the pod."""

    node_to_status: dict[str, Status] = field(default_factory=dict)
    absent_nodes_status: Status = field(default_factory=lambda: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def node_to_status_view(self) -> NodeToStatus:
        """The statuses with the absent-nodes status, as PostFilter plugins read them."""
        return NodeToStatus(self.node_to_status, self.absent_nodes_status)

    def add_plugin_status(self, status: Status) -> None:
        """Remember which plugin rejected (drives which cluster events requeue the pod)."""
        if not status.plugin:
            return
        if status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)
        if status.code == Code.PENDING:
            self.pending_plugins.add(status.plugin)


_UNRESOLVABLE = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


class NodeToStatus(dict[str, Status]):
    """Per-node Filter verdicts plus the verdict of every node not listed (upstream NodeToStatus).

    Nodes a PreFilter rejection or a PreFilterResult left out are absent and share `absent_nodes_status`
    (UnschedulableAndUnresolvable unless told otherwise), which is how PostFilter (preemption) sees them.
    """

    __slots__ = ("absent_nodes_status",)

    def __init__(self, statuses: Mapping[str, Status] | None = None, absent: Status | None = None) -> None:
        super().__init__(statuses or {})
        self.absent_nodes_status = absent if absent is not None else _UNRESOLVABLE

    def status_of(self, node_name: str) -> Status:
        """The node's status, or the absent-nodes status (upstream NodeToStatus.Get)."""
        status = self.get(node_name)
        return status if status is not None else self.absent_nodes_status

    def nodes_for_code(self, nodes: Sequence[NodeInfo], code: Code) -> list[NodeInfo]:
        """The nodes (of `nodes`, in their order) whose status has `code` (upstream NodesForStatusCode)."""
        if self.absent_nodes_status.code == code:
            return [n for n in nodes if self.status_of(n.name).code == code]
        return [n for n in nodes if (s := self.get(n.name)) is not None and s.code == code]


class NoNodesAvailableError(Exception):
    """The snapshot has no nodes at all."""

    def __init__(self) -> None:
        super().__init__(ERR_NO_NODES_AVAILABLE)


class FitError(Exception):
    """No node passed the filters; str() is the user-facing message."""

    def __init__(self, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def reason_histogram(self) -> dict[str, int]:
        """Reason -> number of nodes, counting absent nodes with the absent-nodes status."""
        counts: dict[str, int] = {}
        d = self.diagnosis
        for status in d.node_to_status.values():
            for reason in status.reasons:
                counts[reason] = counts.get(reason, 0) + 1
        missing = self.num_all_nodes - len(d.node_to_status)
        if missing > 0:
            for reason in d.absent_nodes_status.reasons:
                counts[reason] = counts.get(reason, 0) + missing
        return counts

    def __str__(self) -> str:
        msg = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        d = self.diagnosis
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            parts = sorted(f"{count} {reason}" for reason, count in self.reason_histogram().items())
            if parts:
                msg += " " + ", ".join(parts) + "."
        if d.post_filter_msg:
            msg += " " + d.post_filter_msg
        return msg


def truncate_message(message: str, limit: int = NOTE_LENGTH_LIMIT) -> str:
    """Cut an event note to `limit` bytes ending in " ..." as upstream's truncateMessage does."""
    raw = message.encode(errors="surrogatepass")  # a lone surrogate from a hand-written dump is no crash
    if len(raw) <= limit:
        return message
    suffix = " ..."
    return raw[: limit - len(suffix)].decode(errors="ignore") + suffix
