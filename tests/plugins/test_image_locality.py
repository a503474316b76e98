"""ImageLocality: image sizes scaled by spread, thresholds, init containers and tag normalization."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo
from scheduler.plugins import image_locality
from scheduler.plugins.image_locality import MB, ImageLocality
from scheduler.testing import NodeBuilder, PodBuilder, StaticHandle, make_node, make_pod


def with_images(name: str, images: dict[str, int]) -> NodeBuilder:
    """A node holding the given images (name -> size in MiB)."""
    node = make_node(name)
    for image, size in images.items():
        node = node.image(image, size * MB)
    return node


NODE_40_300_2000 = with_images(
    "node1", {"gcr.io/40:latest": 40, "gcr.io/300:latest": 300, "gcr.io/2000": 2000}
)
NODE_250_10 = with_images("node2", {"gcr.io/250:latest": 250, "gcr.io/10:latest": 10})
NODE_4000_10 = with_images("node1", {"gcr.io/4000:latest": 4000, "gcr.io/10:latest": 10})
NODE_20_30_40 = with_images("node2", {"gcr.io/20:latest": 20, "gcr.io/30:latest": 30, "gcr.io/40:latest": 40})
NODE_EMPTY = make_node("node3")


def pod_with(*images: str, init: tuple[str, ...] = ()) -> PodBuilder:
    pod = make_pod()
    for image in init:
        pod = pod.init_container(image=image)
    for image in images:
        pod = pod.container(image=image)
    return pod


def run(pod: PodBuilder, nodes: list[NodeBuilder]) -> list[int]:
    """Score every node through a snapshot of all of them; batch and per-node must agree."""
    infos = []
    for n in nodes:
        record = n.info()
        infos.append(NodeInfo(record.name, record))
    pl = image_locality.new(None, StaticHandle(Snapshot.from_node_infos(infos)))
    info = pod.info()
    state = CycleState()
    each = [pl.score(state, info, n) for n in infos]
    assert pl.score_batch(state, info, infos) == each
    return each


@pytest.mark.parametrize(
    ("pod", "nodes", "want"),
    [
        pytest.param(
            pod_with("gcr.io/40", "gcr.io/250"),
            [NODE_40_300_2000, NODE_250_10],
            # node1: 40M * 1/2 = 20M < 23M -> 0; node2: 100 * (250M/2 - 23M) / (2000M - 23M) = 5
            [0, 5],
            id="prefer-the-larger-image",
        ),
        pytest.param(
            pod_with("gcr.io/40", "gcr.io/300"),
            [NODE_40_300_2000, NODE_250_10],
            # node1: 100 * ((40M + 300M)/2 - 23M) / (2000M - 23M) = 7
            [7, 0],
            id="two-images-on-one-node",
        ),
        pytest.param(
            pod_with("gcr.io/4000", "gcr.io/10"),
            [NODE_4000_10, NODE_250_10],
            # node1: 4000M/2 = 2000M reaches the 2 x 1000M ceiling -> 100; node2: 10M -> 0
            [100, 0],
            id="clamped-at-max",
        ),
        pytest.param(
            pod_with("gcr.io/4000", "gcr.io/10"),
            [NODE_4000_10, NODE_250_10, NODE_EMPTY],
            # node1: 100 * (4000M/3 - 23M) / (2000M - 23M) = 66
            [66, 0, 0],
            id="spread-over-three-nodes",
        ),
        pytest.param(
            pod_with("gcr.io/30", init=("gcr.io/300",)),
            [NODE_40_300_2000, NODE_20_30_40],
            # init images count, and in the ceiling: 100 * (300M/2 - 23M) / (2 x 1000M - 23M) = 6
            # (with one image in the ceiling it would be 12; ignoring init images, 0)
            [6, 0],
            id="init-container-counted",
        ),
        pytest.param(
            pod_with("gcr.io/300", "gcr.io/300"),
            [NODE_40_300_2000, NODE_EMPTY],
            # each container contributes: 2 x 300M/2 = 300M -> 100 * (300M - 23M) / (2000M - 23M) = 14
            [14, 0],
            id="same-image-twice-counts-twice",
        ),
        pytest.param(
            pod_with("gcr.io/2000:latest"),
            [NODE_40_300_2000],
            # tags normalize both ways ("gcr.io/2000" on the node): 2000M clamps to 1000M -> 100
            [100],
            id="latest-tag-normalized",
        ),
        pytest.param(
            pod_with("gcr.io/300:v2"),
            [NODE_40_300_2000],
            [0],
            id="other-tag-does-not-match",
        ),
    ],
)
def test_score(pod: PodBuilder, nodes: list[NodeBuilder], want: list[int]) -> None:
    """Scores match upstream's calculatePriority/sumImageScores on the same cases."""
    assert run(pod, nodes) == want


@pytest.mark.parametrize(
    ("total", "count", "want"),
    [
        pytest.param(0, 1, 0, id="below-min"),
        pytest.param(23 * MB, 1, 0, id="at-min"),
        pytest.param(1000 * MB, 1, 100, id="at-max"),
        pytest.param(5000 * MB, 2, 100, id="above-max"),
        pytest.param(511 * MB + MB // 2, 1, 50, id="midpoint"),
    ],
)
def test_calculate_priority(total: int, count: int, want: int) -> None:
    """Linear between 23 MiB and 1000 MiB per image, clamped outside."""
    assert image_locality.calculate_priority(total, count) == want


def test_no_handle_args_needed() -> None:
    """ImageLocality takes no args and ignores whatever it is given, like upstream."""
    pl = image_locality.new({"anything": 1}, StaticHandle(Snapshot()))
    assert isinstance(pl, ImageLocality)
    assert pl.has_normalize is False
