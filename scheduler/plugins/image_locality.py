"""ImageLocality: prefer nodes that already hold the pod's container images, weighted by how widespread.

Mirrors upstream `plugins/imagelocality/image_locality.go` (v1.37): each image present on the node adds
`int(size * nodes_with_image / total_nodes)`; the sum is clamped to [23 MiB, 1000 MiB x images] and mapped
linearly onto 0..100. Init containers count both in the sum and in the number of images (the ceiling).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle, ScorePlugin
from scheduler.framework.types import NodeInfo, PodInfo

NAME: Final = "ImageLocality"

MB: Final = 1024 * 1024
MIN_THRESHOLD: Final = 23 * MB
MAX_CONTAINER_THRESHOLD: Final = 1000 * MB


def calculate_priority(sum_scores: int, image_count: int) -> int:
    """calculatePriority: clamp the image score sum, then scale it linearly to 0..100."""
    max_threshold = MAX_CONTAINER_THRESHOLD * image_count
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    # The numerator is never negative, so floor division equals Go's truncation.
    return MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def spread_factors(
    pod: PodInfo, image_num_nodes: Mapping[str, int], total_nodes: int
) -> list[tuple[str, float]]:
    """Per pod image (init containers first, duplicates kept), the fraction of nodes that hold it."""
    total = float(total_nodes)
    return [(image, image_num_nodes.get(image, 0) / total) for image in pod.images]


def sum_image_scores(node: NodeInfo, spreads: Sequence[tuple[str, float]]) -> int:
    """sumImageScores: Σ int(size × spread) over the pod's images present on the node."""
    if node.node is None:
        return 0
    images = node.node.images
    total = 0
    for image, spread in spreads:
        size = images.get(image)
        if size is not None:
            total += int(float(size) * spread)
    return total


class ImageLocality(ScorePlugin):
    """Favours nodes that already have the pod's images, so the pod starts without a long pull."""

    name: ClassVar[str] = NAME
    has_normalize: ClassVar[bool] = False

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def _spreads(self, pod: PodInfo) -> list[tuple[str, float]]:
        snapshot = self.handle.snapshot()
        total = snapshot.num_nodes()
        if total == 0:
            return []
        return spread_factors(pod, snapshot.image_num_nodes, total)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return calculate_priority(sum_image_scores(node, self._spreads(pod)), pod.num_containers)

    def score_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """Spread factors depend only on the snapshot, so they are computed once for all nodes."""
        # An image on no node has spread 0 and adds int(size * 0.0) == 0 everywhere: drop it. When no
        # image is left (the common case) every node scores the floor without being looked at.
        spreads = [(image, spread) for image, spread in self._spreads(pod) if spread > 0]
        count = pod.num_containers
        if not spreads:
            floor = calculate_priority(0, count)
            return [floor] * len(nodes)
        return [calculate_priority(sum_image_scores(n, spreads), count) for n in nodes]


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> ImageLocality:
    """Plugin factory; ImageLocality has no arguments (upstream ignores any it is given)."""
    return ImageLocality(handle)
