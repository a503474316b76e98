"""The nominator: pods nominated to run on a node once preemption victims are gone (upstream nominator.go).

A pod is nominated to a node when it preempted pods there (the scheduler records that here before the API
carries `status.nominatedNodeName`, so the very next cycle already respects it), or when its status says so
(`status.nominatedNodeName`, e.g. after a restart). Later Filter runs add the pods nominated to a node with
a priority at least the incoming pod's (`Framework.run_filter_plugins_with_nominated_pods`), so room freed
for a high-priority pod is not taken by a lower-priority one. The nomination leaves when the pod is bound
(assumed), deleted, or its nomination is cleared.

Pure and synchronous; nodes keep their nominees in nomination order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from scheduler.framework.types import PodInfo


@dataclass(frozen=True, slots=True)
class NominatingInfo:
    """ModeOverride with a node name (possibly "" to clear); `None` where a NominatingInfo is expected is
    ModeNoop: the pod's own `status.nominatedNodeName` decides."""

    nominated_node_name: str


CLEAR_NOMINATED_NODE = NominatingInfo("")
"""upstream clearNominatedNode: the failure of a cycle that must drop any nomination."""


class Nominator:
    """Pods nominated to nodes, by node (in nomination order) and by pod uid."""

    __slots__ = ("_alive", "_by_node", "_node_of", "_pods")

    def __init__(self, alive: Callable[[str], bool] | None = None) -> None:
        """`alive(uid)`: whether the pod still exists unassigned (upstream asks its pod lister); a pod that was
        deleted or bound meanwhile is never nominated."""
        self._alive = alive
        self._by_node: dict[str, list[str]] = {}
        self._node_of: dict[str, str] = {}
        self._pods: dict[str, PodInfo] = {}

    def add(self, pod: PodInfo, nominating: NominatingInfo | None = None) -> None:
        """Nominate pod to `nominating`'s node (ModeOverride) or to its own status.nominatedNodeName (None).

        Any earlier nomination of the pod is dropped first; an empty node name only clears.
        """
        self.delete(pod.uid)
        node = nominating.nominated_node_name if nominating is not None else pod.nominated_node_name
        if not node:
            return
        if self._alive is not None and not self._alive(pod.uid):
            return
        self._node_of[pod.uid] = node
        self._pods[pod.uid] = pod
        self._by_node.setdefault(node, []).append(pod.uid)

    def update(self, old: PodInfo, new: PodInfo) -> None:
        """A nominated (or any pending) pod changed: keep the record current.

        When neither version carries a nominatedNodeName but the scheduler nominated the pod in memory (its
        status patch has not landed yet), that nomination is kept, as upstream's UpdateNominatedPod does.
        """
        keep: NominatingInfo | None = None
        if not old.nominated_node_name and not new.nominated_node_name:
            node = self._node_of.get(old.uid)
            if node is not None:
                keep = NominatingInfo(node)
        self.delete(old.uid)
        self.add(new, keep)

    def delete(self, uid: str) -> None:
        """The pod was bound, assumed or deleted: it is nominated nowhere any more."""
        node = self._node_of.pop(uid, None)
        self._pods.pop(uid, None)
        if node is None:
            return
        uids = self._by_node.get(node)
        if uids is None:
            return
        with contextlib.suppress(ValueError):
            uids.remove(uid)
        if not uids:
            del self._by_node[node]

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        """The pods nominated to node_name, in nomination order (a copy)."""
        uids = self._by_node.get(node_name)
        if not uids:
            return []
        pods = self._pods
        return [pods[u] for u in uids]

    def node_of(self, uid: str) -> str | None:
        """The node the pod is nominated to, if any."""
        return self._node_of.get(uid)

    def has_nominations(self) -> bool:
        """Whether any pod is nominated anywhere (the common answer, no, keeps Filter on its fast path)."""
        return bool(self._node_of)

    def nodes(self) -> set[str]:
        """Nodes with at least one nominee."""
        return set(self._by_node)

    def dump(self) -> dict[str, list[str]]:
        """Node -> nominated pod keys, for the debug endpoint."""
        return {node: [self._pods[u].key for u in uids] for node, uids in sorted(self._by_node.items())}

    def __len__(self) -> int:
        return len(self._node_of)
