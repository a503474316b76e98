"""The per-cycle snapshot: cloned NodeInfos and the zone-interleaved node list (upstream snapshot.go).

Part of the framework because plugins read it (Handle.snapshot()); the cache (backend) fills it.

The cache fills it (`Cache.update_snapshot`); a scheduling cycle only reads it, so what a cycle sees cannot
change under it even while watch events keep arriving.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from typing import Final

from scheduler.framework.types import NodeInfo

CHANGE_LOG_LIMIT: Final = 20_000  # names of replaced nodes remembered (changed_since); half are dropped past it

ImageStates = Mapping[str, tuple[int, int]]
"""Image name (as node.status.images lists it) -> (size in bytes, number of nodes holding it)."""


def count_image_states(infos: Iterable[NodeInfo]) -> dict[str, tuple[int, int]]:
    """Image states over nodes taken in order: the first node listing a name fixes its size (as upstream's
    cache does for nodes added in that order), every node holding it counts."""
    sizes: dict[str, int] = {}
    counts: dict[str, int] = {}
    for info in infos:
        if info.node is not None:
            for image, size in info.node.images.items():
                sizes.setdefault(image, size)
                counts[image] = counts.get(image, 0) + 1
    return {image: (size, counts[image]) for image, size in sizes.items()}


class Snapshot:
    """Node infos by name, the node list in nodeTree order, and the image states ImageLocality reads."""

    __slots__ = (
        "_list_index",
        "_list_names",
        "_list_of",
        "_log",
        "_log_at",
        "_log_start",
        "changed",
        "generation",
        "image_states",
        "node_image_states",
        "node_info_list",
        "node_info_map",
        "order_update",
        "updates",
        "used_pvc_counts",
    )

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: list[NodeInfo] = []
        # Image name -> (size, number of nodes) now; and per node the image states as they were when that
        # node was last cloned into this snapshot (upstream's NodeInfo.ImageStates: a node that did not change
        # keeps the counts of its last clone, see Cache.update_snapshot).
        self.image_states: ImageStates = {}
        self.node_image_states: dict[str, ImageStates] = {}
        # "namespace/claim" -> pods on the snapshot's nodes using the claim through a persistentVolumeClaim
        # volume (upstream usedPVCRefCounts, for VolumeRestrictions' ReadWriteOncePod check); kept up to
        # date by Cache.update_snapshot from each changed NodeInfo's pvc_ref_counts.
        self.used_pvc_counts: dict[str, int] = {}
        self.generation = 0
        # Kept by Cache.update_snapshot: the names node_info_list was built from (and that list), plus a
        # lazily built name -> position index, so an unchanged node order is patched instead of remapped.
        self._list_names: list[str] | None = None
        self._list_of: list[NodeInfo] | None = None
        self._list_index: dict[str, int] | None = None
        # Names of the nodes a what-if copy (with_nodes) replaced, relative to the snapshot it came from.
        self.changed: frozenset[str] = frozenset()
        # Kept by Cache.update_snapshot (record_update): how many updates filled this snapshot, the update at
        # which the node list last changed order or membership, and the names of the nodes whose NodeInfo each
        # update replaced, so a plugin keeping sums over the nodes can catch up without comparing every node.
        self.updates = 0
        self.order_update = 0
        self._log: list[str] = []
        self._log_at: list[int] = []
        self._log_start = 1  # the oldest update whose replaced nodes are all in the log

    @classmethod
    def from_node_infos(cls, infos: list[NodeInfo], image_states: ImageStates | None = None) -> Snapshot:
        """A snapshot over the given node infos in the given order (for tests, simulations, explanations).

        Every node sees the same image states: `image_states` when given (the cache's, so sizes follow the
        order nodes were added), else counted over `infos` in list order.
        """
        snap = cls()
        snap.node_info_list = list(infos)
        snap.node_info_map = {n.name: n for n in infos}
        snap.set_image_states(count_image_states(infos) if image_states is None else image_states)
        snap.recount_pvcs()
        return snap

    def set_image_states(self, states: ImageStates) -> None:
        """The same image states now and for every node (a snapshot built at once, not incrementally)."""
        self.image_states = states
        self.node_image_states = {n.name: states for n in self.node_info_list}

    def images_of(self, node: NodeInfo) -> ImageStates:
        """The image states ImageLocality uses for a node of this snapshot."""
        return self.node_image_states.get(node.name, self.image_states)

    def recount_pvcs(self) -> None:
        """Recompute used_pvc_counts from every node's pvc_ref_counts."""
        counts: dict[str, int] = {}
        for info in self.node_info_map.values():
            for key, n in info.pvc_ref_counts.items():
                counts[key] = counts.get(key, 0) + n
        self.used_pvc_counts = counts

    def count_pvcs(self, info: NodeInfo, sign: int) -> None:
        """Add (sign 1) or remove (sign -1) one node's claim references to used_pvc_counts."""
        counts = self.used_pvc_counts
        for key, n in info.pvc_ref_counts.items():
            left = counts.get(key, 0) + sign * n
            if left > 0:
                counts[key] = left
            else:
                counts.pop(key, None)

    def is_pvc_used_by_pods(self, key: str) -> bool:
        """IsPVCUsedByPods: some pod on a node of the snapshot uses the claim "namespace/name"."""
        return self.used_pvc_counts.get(key, 0) > 0

    def record_update(self, replaced: list[str], reordered: bool) -> None:
        """Cache.update_snapshot filled this snapshot again: `replaced` nodes got new NodeInfos (or were removed),
        `reordered` when node_info_list changed order or membership."""
        self.updates += 1
        if reordered:
            self.order_update = self.updates
        if replaced:
            self._log.extend(replaced)
            self._log_at.extend([self.updates] * len(replaced))
            if len(self._log) > CHANGE_LOG_LIMIT:
                drop = len(self._log) // 2
                self._log_start = self._log_at[drop] + 1
                del self._log[:drop], self._log_at[:drop]

    def changed_since(self, update: int, nodes: list[NodeInfo]) -> list[str] | None:
        """Names of the nodes whose NodeInfo was replaced after update number `update` (repeats possible), when
        `nodes` is this snapshot's node list as the cache last filled it and its order is the same as then;
        None when that cannot be told (another list, a new order, a log that no longer reaches back)."""
        if (
            self.updates == 0
            or nodes is not self._list_of
            or update < self.order_update
            or update + 1 < self._log_start
        ):
            return None
        return self._log[bisect.bisect_right(self._log_at, update) :]

    def get(self, name: str) -> NodeInfo | None:
        return self.node_info_map.get(name)

    def num_nodes(self) -> int:
        return len(self.node_info_list)

    def with_nodes(self, replacements: dict[str, NodeInfo]) -> Snapshot:
        """A new snapshot in which the named NodeInfos are replaced (what-if explanations); same order.

        Costs a list and a dict copy: the positions come from an index built once per snapshot, and image
        counts are recounted only when a replacement changed a node's images. `changed` names the nodes
        replaced (accumulated over a chain of copies).
        """
        index = self._list_index
        if index is None or len(index) != len(self.node_info_list):
            index = self._list_index = {n.name: i for i, n in enumerate(self.node_info_list)}
        snap = Snapshot()
        snap.node_info_list = list(self.node_info_list)
        snap.node_info_map = dict(self.node_info_map)
        snap.image_states = self.image_states
        snap.node_image_states = self.node_image_states
        snap.used_pvc_counts = self.used_pvc_counts
        snap._list_index = index
        recount = False
        pvc_moves: list[tuple[NodeInfo, NodeInfo]] = []
        for name, info in replacements.items():
            i = index.get(name)
            if i is None:
                continue
            old = snap.node_info_list[i]
            snap.node_info_list[i] = info
            snap.node_info_map[name] = info
            old_images = old.node.images if old.node is not None else {}
            new_images = info.node.images if info.node is not None else {}
            recount |= old_images.keys() != new_images.keys()
            if old.pvc_ref_counts != info.pvc_ref_counts:
                pvc_moves.append((old, info))
        if recount:  # a what-if changed some node's images: count afresh for every node
            snap.set_image_states(count_image_states(snap.node_info_list))
        if pvc_moves:  # the claim counts are shared with the original until a replacement changes them
            snap.used_pvc_counts = dict(self.used_pvc_counts)
            for old, info in pvc_moves:
                snap.count_pvcs(old, -1)
                snap.count_pvcs(info, 1)
        snap.changed = self.changed | frozenset(n for n in replacements if n in index)
        return snap
