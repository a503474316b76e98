"""NodePorts: a pod's host ports must be free on the node (upstream plugins/nodeports/node_ports.go).

"Free" means not declared by a pod the scheduler believes is on the node; sockets are never inspected.
`conflicting_pods` names the pods holding a clashing port, which the upstream message does not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from scheduler.framework.interface import (
    ASSIGNED_POD,
    NODE,
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
from scheduler.framework.status import SKIP, Status, unschedulable
from scheduler.framework.types import HostPort, HostPortInfo, NodeInfo, PodInfo, conflicts

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"

_REJECT = unschedulable(ERR_REASON, plugin=NAME)


def wanted_ports(pod: PodInfo) -> tuple[HostPort, ...]:
    """The pod's sanitized host ports with hostPort > 0 (what upstream util.GetHostPorts keeps)."""
    return tuple(hp for hp in pod.host_ports if hp[2] > 0)


def fits_ports(wanted: Sequence[HostPort], used: HostPortInfo) -> bool:
    """True when none of the wanted ports conflicts with the ports in use."""
    check = used.check_conflict
    return not any(check(hp) for hp in wanted)


def conflicting_pods(pod: PodInfo, node: NodeInfo) -> list[tuple[PodInfo, HostPort]]:
    """Which pods on the node hold a host port that clashes with one of pod's, with the port they hold.

    Each (holder, port) pair appears once, in the node's pod order; the pod itself is never its own holder.
    """
    wanted = wanted_ports(pod)
    if not wanted:
        return []
    out: list[tuple[PodInfo, HostPort]] = []
    for holder in node.pods.values():
        if holder.uid == pod.uid:
            continue
        seen: set[HostPort] = set()
        for held in holder.host_ports:
            if held not in seen and any(conflicts(w, held) for w in wanted):
                seen.add(held)
                out.append((holder, held))
    return out


class NodePorts(PreFilterPlugin, FilterPlugin, EnqueueExtensions, ExplainExtensions, SignPlugin):
    """Rejects nodes where a requested (hostIP, protocol, hostPort) is already taken."""

    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def sign_pod(self, pod: PodInfo) -> tuple[HostPort, ...]:
        """The pod's host ports as (hostIP, protocol, port): upstream's HostPortsSigner keeps only the port
        numbers, which would let a TCP and a UDP port share a signature."""
        return wanted_ports(pod)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Record the wanted ports; Skip the Filter entirely for pods without host ports."""
        wanted = wanted_ports(pod)
        if not wanted:
            return None, SKIP
        state[PRE_FILTER_STATE_KEY] = wanted
        return None, None

    def _wanted(self, state: CycleState, pod: PodInfo) -> tuple[HostPort, ...]:
        cached: tuple[HostPort, ...] | None = state.get(PRE_FILTER_STATE_KEY)
        return cached if cached is not None else wanted_ports(pod)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None if fits_ports(self._wanted(state, pod), node.used_ports) else _REJECT

    def filter_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """Nodes with no used ports pass without a lookup."""
        wanted = self._wanted(state, pod)
        if not wanted:
            return [None] * len(nodes)
        out: list[Status | None] = []
        append = out.append
        for n in nodes:
            used = n.used_ports
            if not len(used):
                append(None)
            else:
                append(None if fits_ports(wanted, used) else _REJECT)
        return out

    def explain_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status | None
    ) -> list[ExplainDetail]:
        """Field story 2: name the pods on the node that hold each clashing host port."""
        if status is None:
            return []
        return [
            ExplainDetail(
                f"host port {hp[1]} {hp[0]}:{hp[2]} is held by pod {holder.key}",
                {"pod": holder.key, "port": f"{hp[1]} {hp[0]}:{hp[2]}"},
            )
            for holder, hp in conflicting_pods(pod, node)
        ]

    def suggest_fixes(self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status) -> list[FixCandidate]:
        """Free the clashing host ports on this node: move or delete the pods holding them."""
        holders = sorted({holder.key: holder.uid for holder, _ in conflicting_pods(pod, node)}.items())
        if not holders:
            return []
        ports = sorted({f"{hp[1]} {hp[0]}:{hp[2]}" for _, hp in conflicting_pods(pod, node)})

        name, uids = node.name, tuple(u for _, u in holders)

        def free(snapshot: Snapshot) -> Snapshot:
            info = snapshot.get(name)
            if info is None:
                return snapshot
            copy = info.clone()
            for uid in uids:
                copy.remove_pod(uid)
            return snapshot.with_nodes({name: copy})

        names = ", ".join(k for k, _ in holders)
        return [
            FixCandidate(
                key=f"free-ports:{node.name}",
                kind="free-host-port",
                description=f"free host port {', '.join(ports)} on node {node.name} "
                f"(move or delete pod(s) {names})",
                snapshot=free,
                data={"node": node.name, "ports": ports, "pods": [k for k, _ in holders]},
            )
        ]

    def events_to_register(self) -> list[ClusterEvent]:
        """A deleted assigned pod may free the port; a new node has all ports free."""
        return [
            ClusterEvent(ASSIGNED_POD, ActionType.DELETE),
            ClusterEvent(NODE, ActionType.ADD),
        ]


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> NodePorts:
    """Registry factory; NodePorts takes no arguments."""
    return NodePorts(raw_args, handle)
