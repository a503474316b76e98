"""The per-cycle snapshot: cloned NodeInfos and the zone-interleaved node list (upstream snapshot.go).

The cache fills it (`Cache.update_snapshot`); a scheduling cycle only reads it, so what a cycle sees cannot
change under it even while watch events keep arriving.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from scheduler.framework.types import NodeInfo

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
        "generation",
        "image_states",
        "node_image_states",
        "node_info_list",
        "node_info_map",
    )

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: list[NodeInfo] = []
        # Image name -> (size, number of nodes) now; and per node the image states as they were when that
        # node was last cloned into this snapshot (upstream's NodeInfo.ImageStates: a node that did not change
        # keeps the counts of its last clone, see Cache.update_snapshot).
        self.image_states: ImageStates = {}
        self.node_image_states: dict[str, ImageStates] = {}
        self.generation = 0
        # Kept by Cache.update_snapshot: the names node_info_list was built from (and that list), plus a
        # lazily built name -> position index, so an unchanged node order is patched instead of remapped.
        self._list_names: list[str] | None = None
        self._list_of: list[NodeInfo] | None = None
        self._list_index: dict[str, int] | None = None

    @classmethod
    def from_node_infos(cls, infos: list[NodeInfo], image_states: ImageStates | None = None) -> Snapshot:
        """A snapshot over the given node infos in the given order (for tests, simulations, explanations).

        Every node sees the same image states: `image_states` when given (the cache's, so sizes follow the
        order nodes were added), else counted over `infos` in list order.
        """
        snap = cls()
        snap.node_info_list = list(infos)
        snap.node_info_map = {n.name: n for n in infos}
        states = count_image_states(infos) if image_states is None else image_states
        snap.image_states = states
        snap.node_image_states = {n.name: states for n in infos}
        return snap

    def images_of(self, node: NodeInfo) -> ImageStates:
        """The image states ImageLocality uses for a node of this snapshot."""
        return self.node_image_states.get(node.name, self.image_states)

    def get(self, name: str) -> NodeInfo | None:
        return self.node_info_map.get(name)

    def num_nodes(self) -> int:
        return len(self.node_info_list)
