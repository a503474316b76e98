"""ImageLocality: upstream's TestImageLocalityPriority table, image volumes, name matching and the cache's
one-size-per-image states (first holder's size, counts frozen at a node's last snapshot clone)."""

from __future__ import annotations

import pytest

from scheduler.backend.cache.cache import Cache
from scheduler.framework.interface import CycleState
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo
from scheduler.plugins import image_locality
from scheduler.plugins.image_locality import MB, ImageLocality
from scheduler.testing import NodeBuilder, PodBuilder, StaticHandle, make_node, make_pod


def with_images(name: str, *images: tuple[int, str] | tuple[int, str, str] | tuple[int, str, str, str]) -> NodeBuilder:
    """A node holding images given as (size in MiB, name, aliases...)."""
    node = make_node(name)
    for size, first, *aliases in images:
        node = node.image(first, size * MB, *aliases)
    return node


# The node statuses of upstream's image_locality_test.go.
NODE_40_300_2000 = (
    (40, "gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"),
    (300, "gcr.io/300:latest", "gcr.io/300:v1"),
    (2000, "gcr.io/2000:latest"),
)
NODE_250_10 = ((250, "gcr.io/250:latest"), (10, "gcr.io/10:latest", "gcr.io/10:v1"))
NODE_600_40_900 = ((600, "gcr.io/600:latest"), (40, "gcr.io/40:latest"), (900, "gcr.io/900:latest"))
NODE_300_600_900 = ((300, "gcr.io/300:latest"), (600, "gcr.io/600:latest"), (900, "gcr.io/900:latest"))
NODE_4000_30 = ((4000, "gcr.io/4000:latest"), (30, "gcr.io/30:latest"))
NODE_20_30_40 = ((20, "gcr.io/20:latest"), (30, "gcr.io/30:latest"), (40, "gcr.io/40:latest"))


def pod_with(*images: str, init: tuple[str, ...] = (), volumes: tuple[str, ...] = ()) -> PodBuilder:
    pod = make_pod()
    for image in init:
        pod = pod.init_container(image=image)
    for image in images:
        pod = pod.container(image=image)
    for i, ref in enumerate(volumes):
        pod = pod.volume(f"image-{i}", image={"reference": ref})
    return pod


def run(pod: PodBuilder, nodes: list[NodeBuilder], snapshot: Snapshot | None = None) -> list[int]:
    """Score every node through a snapshot of all of them; batch and per-node must agree."""
    if snapshot is None:
        infos = []
        for n in nodes:
            record = n.info()
            infos.append(NodeInfo(record.name, record))
        snapshot = Snapshot.from_node_infos(infos)
    pl = image_locality.new(None, StaticHandle(snapshot))
    info = pod.info()
    state = CycleState()
    each = [pl.score(state, info, n) for n in snapshot.node_info_list]
    assert pl.score_batch(state, info, snapshot.node_info_list) == each
    return each


@pytest.mark.parametrize(
    ("pod", "nodes", "want"),
    [
        pytest.param(
            pod_with("gcr.io/40", "gcr.io/250"),
            [with_images("node1", *NODE_40_300_2000), with_images("node2", *NODE_250_10)],
            # node1: 40M * 1/2 = 20M < 23M -> 0; node2: 100 * (250M/2 - 23M) / (2000M - 23M) = 5
            [0, 5],
            id="two-images-spread-on-two-nodes-prefer-the-larger",
        ),
        pytest.param(
            pod_with("gcr.io/40", "gcr.io/300"),
            [with_images("node1", *NODE_40_300_2000), with_images("node2", *NODE_250_10)],
            # node1: 100 * ((40M + 300M)/2 - 23M) / (2000M - 23M) = 7
            [7, 0],
            id="two-images-on-one-node",
        ),
        pytest.param(
            pod_with("gcr.io/10", "gcr.io/4000"),
            [with_images("node1", *NODE_4000_30), with_images("node2", *NODE_250_10)],
            # node1: 4000M/2 = 2000M reaches the 2 x 1000M ceiling -> 100; node2: 10M/2 -> 0
            [100, 0],
            id="if-exceed-limit-use-limit",
        ),
        pytest.param(
            pod_with("gcr.io/10", "gcr.io/4000"),
            [with_images("node1", *NODE_4000_30), with_images("node2", *NODE_250_10), make_node("node3")],
            # node1: 100 * (4000M/3 - 23M) / (2000M - 23M) = 66
            [66, 0, 0],
            id="if-exceed-limit-use-limit-with-a-node-without-images",
        ),
        pytest.param(
            pod_with("gcr.io/300", "gcr.io/600", "gcr.io/900"),
            [with_images("node1", *NODE_600_40_900), with_images("node2", *NODE_300_600_900), make_node("node3")],
            # node1: 100 * (600M*2/3 + 900M*2/3 - 23M) / (3000M - 23M) = 32; node2: + 300M/3 -> 36
            [32, 36, 0],
            id="multiple-large-images-node2-preferred",
        ),
        pytest.param(
            pod_with("gcr.io/30", "gcr.io/40"),
            [with_images("node1", *NODE_20_30_40), with_images("node2", *NODE_4000_30)],
            # node1: 100 * (30M + 40M/2 - 23M) / (2000M - 23M) = 1; node2: 30M -> 0
            [1, 0],
            id="multiple-small-images",
        ),
        pytest.param(
            pod_with("gcr.io/30", volumes=("gcr.io/300",)),
            [with_images("node1", *NODE_300_600_900), with_images("node2", *NODE_4000_30)],
            # the image volume counts in the sum and the ceiling: 100 * (300M/2 - 23M) / (2000M - 23M) = 6
            [6, 0],
            id="pod-with-image-volume",
        ),
        pytest.param(
            pod_with("gcr.io/30", "gcr.io/300"),
            [with_images("node1", *NODE_300_600_900), with_images("node2", *NODE_4000_30)],
            [6, 0],
            id="same-images-as-containers",
        ),
        pytest.param(
            pod_with("gcr.io/30", init=("gcr.io/300",)),
            [with_images("node1", *NODE_40_300_2000), with_images("node2", *NODE_20_30_40)],
            # init images count, and in the ceiling: 100 * (300M/2 - 23M) / (2 x 1000M - 23M) = 6
            [6, 0],
            id="init-containers-counted",
        ),
        pytest.param(
            pod_with("gcr.io/300", "gcr.io/300"),
            [with_images("node1", *NODE_40_300_2000), make_node("node3")],
            # each container contributes: 2 x 300M/2 = 300M -> 100 * (300M - 23M) / (2000M - 23M) = 14
            [14, 0],
            id="same-image-twice-counts-twice",
        ),
        pytest.param(
            pod_with("gcr.io/300", volumes=("",)),
            [with_images("node1", *NODE_40_300_2000), make_node("node3")],
            # an image volume without a reference still counts in the ceiling: 100 * (150M - 23M) / 1977M = 6
            [6, 0],
            id="image-volume-without-reference-counts",
        ),
        pytest.param(
            pod_with("gcr.io/2000:latest"),
            [with_images("node1", (2000, "gcr.io/2000")), make_node("node2")],
            # the node's untagged name is not normalized (upstream's cache keys names as listed): no match
            [0, 0],
            id="untagged-node-name-does-not-match",
        ),
        pytest.param(
            pod_with("gcr.io/2000"),
            [with_images("node1", (2000, "gcr.io/2000")), make_node("node2")],
            # nor does the pod's untagged name, which becomes gcr.io/2000:latest
            [0, 0],
            id="untagged-pod-and-node-names-do-not-match",
        ),
        pytest.param(
            pod_with("gcr.io/300:v1"),
            [with_images("node1", *NODE_40_300_2000), make_node("node2")],
            # an alias of the image entry matches: 100 * (150M - 23M) / (1000M - 23M) = 12
            [12, 0],
            id="alias-name-matches",
        ),
        pytest.param(
            pod_with("gcr.io/300:v2"),
            [with_images("node1", *NODE_40_300_2000)],
            [0],
            id="other-tag-does-not-match",
        ),
    ],
)
def test_score(pod: PodBuilder, nodes: list[NodeBuilder], want: list[int]) -> None:
    """Scores match upstream's calculatePriority/sumImageScores on upstream's cases and name matching."""
    assert run(pod, nodes) == want


def cached_snapshot(cache: Cache, snapshot: Snapshot | None = None) -> Snapshot:
    snapshot = snapshot or Snapshot()
    cache.update_snapshot(snapshot)
    return snapshot


@pytest.mark.parametrize(
    ("order", "size_mb"),
    [pytest.param(["a", "b"], 100, id="a-first"), pytest.param(["b", "a"], 900, id="b-first")],
)
def test_one_size_per_image_the_first_holders(order: list[str], size_mb: int) -> None:
    """Upstream keeps one size per image name: the one of the node its cache added first."""
    nodes = {"a": with_images("a", (100, "app:latest")), "b": with_images("b", (900, "app:latest"))}
    cache = Cache()
    for name in order:
        cache.add_node(nodes[name].info())
    snap = cached_snapshot(cache)
    # Both nodes hold the image (spread 1), so each scores the one size the cache keeps, not its own.
    assert run(pod_with("app"), [], snap) == [calc(size_mb * MB)] * 2


def calc(size: int) -> int:
    return image_locality.calculate_priority(size, 1)


def test_size_stays_while_a_holder_remains() -> None:
    """A later node reporting another size does not change it; when the last holder leaves it is forgotten."""
    cache = Cache()
    cache.add_node(with_images("a", (100, "app:latest")).info())
    cache.add_node(with_images("b", (900, "app:latest")).info())
    cache.remove_node("a")
    snap = cached_snapshot(cache)
    assert snap.image_states == {"app:latest": (100 * MB, 1)}  # b's 900M never replaced the first size
    cache.remove_node("b")
    cache.add_node(with_images("c", (900, "app:latest")).info())
    snap = cached_snapshot(cache, snap)
    assert snap.image_states == {"app:latest": (900 * MB, 1)}


def test_a_node_keeps_the_counts_of_its_last_clone() -> None:
    """Like upstream's SnapshotConcrete, an unchanged node keeps the holder count seen when it was cloned."""
    cache = Cache()
    cache.add_node(with_images("a", (500, "app:latest")).info())
    snap = cached_snapshot(cache)
    cache.add_node(with_images("b", (500, "app:latest")).info())
    snap = cached_snapshot(cache, snap)
    scores = dict(zip([n.name for n in snap.node_info_list], run(pod_with("app"), [], snap), strict=True))
    # a was cloned when it was the only holder: 500M * 1/2 nodes; b sees both holders: 500M * 2/2.
    assert scores == {"a": calc(250 * MB), "b": calc(500 * MB)}
    cache.add_pod(make_pod("p").node("a").info())  # a changes, so it is cloned afresh
    snap = cached_snapshot(cache, snap)
    scores = dict(zip([n.name for n in snap.node_info_list], run(pod_with("app"), [], snap), strict=True))
    assert scores == {"a": calc(500 * MB), "b": calc(500 * MB)}


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
