"""ImageLocality: prefer nodes that already hold the pod's container images, weighted by how widespread.

Mirrors upstream `plugins/imagelocality/image_locality.go` (v1.37): each pod image present on the node adds
`int(size * nodes_with_image / total_nodes)`; the sum is clamped to [23 MiB, 1000 MiB x images] and mapped
linearly onto 0..100. The images are the init containers', the containers' and those of image volumes
(`spec.volumes[].image.reference`, ImageVolume GA); each counts in the sum and in the number of images (the
ceiling), duplicates included.

Image names match as upstream's cache stores them: the pod's name is normalized (`nginx` -> `nginx:latest`),
the node's `status.images[].names` are taken as listed, so a node listing only `nginx` does not hold
`nginx:latest`. Size and node count come from the cache's image states (`Snapshot.images_of`), not from the
node itself:

- **one size per image name**: the size reported by the node that first brought the name into the cache; a
  node reporting another size for the same name does not change it while any holder remains. So the score
  depends on the order nodes were added (or relisted) to the scheduler, exactly as kube-scheduler's does;
- a node keeps the states of its last snapshot clone until it changes itself, so its count of holders can
  lag behind nodes added or removed since (upstream's SnapshotConcrete copies the states at clone time).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from scheduler import caching
from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle, ScorePlugin, SignPlugin
from scheduler.framework.snapshot import ImageStates
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


def pod_images(pod: PodInfo) -> tuple[tuple[str, ...], int]:
    """(normalized image names to look up, number of image sources) in upstream's order: init containers,
    containers, image volumes. Containers without an image are counted but never match."""
    return pod.images + pod.image_volumes, pod.num_containers + len(pod.image_volumes)


def sum_image_scores(node: NodeInfo, images: Sequence[str], states: ImageStates, total_nodes: int) -> int:
    """sumImageScores: Σ int(size × holders / total) over the pod's images present on the node."""
    if node.node is None or total_nodes == 0:
        return 0
    held = node.node.images
    total = float(total_nodes)
    out = 0
    for image in images:
        if image in held:
            state = states.get(image)
            if state is not None:
                size, num_nodes = state
                out += int(float(size) * (num_nodes / total))
    return out


class ImageLocality(ScorePlugin, SignPlugin):
    """Favours nodes that already have the pod's images, so the pod starts without a long pull."""

    name: ClassVar[str] = NAME
    has_normalize: ClassVar[bool] = False

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def sign_pod(self, pod: PodInfo) -> tuple[tuple[str, ...], int]:
        """The pod's image names in order and their count (upstream signs the set of names; the count and any
        duplicate matter here too). A node's score also reads the cluster's node count and the image states
        its snapshot kept: the shape results key on the snapshot and its node count."""
        return pod_images(pod)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return self.score_batch(state, pod, [node])[0]

    def score_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        """Images on no node at all add nothing anywhere: dropped up front, usually leaving nothing to look up."""
        snapshot = self.handle.snapshot()
        images, count = pod_images(pod)
        if not caching.ENABLED:  # the plain path: every image looked up on every node
            total = snapshot.num_nodes()
            of = snapshot.images_of
            return [calculate_priority(sum_image_scores(n, images, of(n), total), count) for n in nodes]
        present = snapshot.image_states
        wanted = [image for image in images if image in present]
        if not wanted:
            floor = calculate_priority(0, count)
            return [floor] * len(nodes)
        total = snapshot.num_nodes()
        of = snapshot.images_of
        return [calculate_priority(sum_image_scores(n, wanted, of(n), total), count) for n in nodes]


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> ImageLocality:
    """Plugin factory; ImageLocality has no arguments (upstream ignores any it is given)."""
    return ImageLocality(handle)
