"""Per-node results kept for pods of one shape (scheduler.framework.shape_results): who signs, what is reused,
what is always evaluated afresh, and that a cycle decides exactly what the plain path decides."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pytest

from scheduler import caching
from scheduler.adapters.memory import MemoryCluster
from scheduler.core.clock import FakeClock
from scheduler.core.profile import build_scheduler
from scheduler.core.schedule_one import SchedulingAlgorithm, SchedulingError
from scheduler.framework.interface import (
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.runtime import Framework
from scheduler.framework.shape_results import ShapeResults
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import SKIP, Status, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo, parse_node, parse_pod
from scheduler.testing import make_node, make_pod


class Rejects(FilterPlugin, SignPlugin):
    """Rejects the nodes named in `bad`; counts the nodes it filters."""

    name: ClassVar[str] = "Rejects"

    def __init__(self, bad: set[str] | None = None, fail: bool = False) -> None:
        self.bad = bad or set()
        self.fail = fail
        self.seen: list[str] = []

    def sign_pod(self, pod: PodInfo) -> Any:
        return pod.labels.get("shape", "")

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        self.seen.append(node.name)
        if self.fail:
            raise RuntimeError("boom")
        return unschedulable("bad node", plugin=self.name) if node.name in self.bad else None


class ByName(ScorePlugin, SignPlugin):
    """Scores node-N with N (a node-local score); counts the nodes it scores."""

    name: ClassVar[str] = "ByName"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def sign_pod(self, pod: PodInfo) -> Any:
        return ()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        self.seen.append(node.name)
        return int(node.name.rsplit("-", 1)[1]) % 101


class ClusterWide(PreFilterPlugin, FilterPlugin, ScorePlugin, SignPlugin):
    """A plugin that reads the cluster: skipped or not as `skip` says; scores every node 7."""

    name: ClassVar[str] = "ClusterWide"
    sign_reads_cluster: ClassVar[bool] = True

    def __init__(self, skip: bool) -> None:
        self.skip = skip
        self.scored = 0

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, SKIP if self.skip else None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        self.scored += 1
        return 7


class Unsigned(FilterPlugin):
    """A plugin written before signatures existed."""

    name: ClassVar[str] = "Unsigned"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


def _framework(*plugins: Any) -> Framework:
    points: dict[str, list[str]] = {"preFilter": [], "filter": [], "score": []}
    for p in plugins:
        for point, kind in (("preFilter", PreFilterPlugin), ("filter", FilterPlugin), ("score", ScorePlugin)):
            if isinstance(p, kind):
                points[point].append(p.name)
    return Framework("p", plugins, points, {})


def _snapshot(count: int) -> Snapshot:
    infos = []
    for i in range(count):
        info = NodeInfo(f"node-{i}", parse_node(make_node(f"node-{i}").obj()))
        infos.append(info)
    return Snapshot.from_node_infos(infos)


def _replace(snap: Snapshot, i: int, pod: PodInfo) -> None:
    """What the cache does when node i gets a pod: a fresh clone takes its place in the same snapshot."""
    changed = snap.node_info_list[i].clone()
    changed.add_pod(pod.with_node(changed.name))
    snap.node_info_list[i] = snap.node_info_map[changed.name] = changed


def _pod(name: str = "p", shape: str = "a") -> PodInfo:
    return parse_pod(make_pod(name).labels(shape=shape).obj())


def test_a_plugin_that_cannot_sign_turns_reuse_off_for_the_profile() -> None:
    """One PreFilter/Filter/PreScore/Score plugin without sign_pod: no pod of the profile is signable."""
    shapes = ShapeResults(_framework(Rejects(), Unsigned()))
    assert not shapes.enabled
    assert shapes.signature(_pod()) is None


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        pytest.param(("p1", "a"), ("p2", "a"), True, id="replicas-share-a-signature"),
        pytest.param(("p1", "a"), ("p2", "b"), False, id="what-a-plugin-reads-differs"),
    ],
)
def test_signatures(first: tuple[str, str], second: tuple[str, str], same: bool) -> None:
    """Pods are alike exactly when every plugin's fragment is."""
    shapes = ShapeResults(_framework(Rejects(), ByName()))
    a, b = shapes.signature(_pod(*first)), shapes.signature(_pod(*second))
    assert a is not None and b is not None
    assert (a == b) is same


def test_a_refusing_or_failing_signer_makes_the_pod_unsignable() -> None:
    """sign_pod returning None, or raising, leaves the pod on the plain path."""

    class Refuses(Rejects):
        def sign_pod(self, pod: PodInfo) -> Any:
            if pod.labels.get("shape") == "boom":
                raise ValueError("cannot")
            return None if pod.labels.get("shape") == "no" else "ok"

    shapes = ShapeResults(_framework(Refuses()))
    assert shapes.signature(_pod(shape="yes")) is not None
    assert shapes.signature(_pod(shape="no")) is None
    assert shapes.signature(_pod(shape="boom")) is None


def _schedule(algo: SchedulingAlgorithm, fwk: Framework, pod: PodInfo, snap: Snapshot) -> str:
    return algo.schedule_pod(fwk, CycleState(), pod, snap).suggested_host


@pytest.mark.usefixtures("caches_on")
def test_the_next_pod_of_a_shape_runs_the_plugins_only_on_changed_nodes() -> None:
    """Second cycle: the kept verdicts and scores serve every node but the one replaced in the snapshot, and
    the host is the one a plain evaluation picks."""
    rejects, by_name = Rejects({"node-3"}), ByName()
    fwk = _framework(rejects, by_name)
    snap = _snapshot(10)
    algo = SchedulingAlgorithm(seed=1)
    assert _schedule(algo, fwk, _pod("p1"), snap) == "node-9"
    assert sorted(rejects.seen) == sorted(f"node-{i}" for i in range(10))
    _replace(snap, 9, _pod("p1"))
    rejects.seen.clear()
    by_name.seen.clear()
    algo.next_start_node_index = 0
    assert _schedule(algo, fwk, _pod("p2"), snap) == "node-9"
    assert rejects.seen == ["node-9"] and by_name.seen == ["node-9"]
    stats = algo.shape_results(fwk).stats
    assert stats["filter_reused"] == 9 and stats["score_reused"] == 8


def test_caches_disabled_means_nothing_is_kept() -> None:
    """With caches off every cycle filters and scores every node."""
    rejects = Rejects()
    fwk = _framework(rejects, ByName())
    snap = _snapshot(5)
    algo = SchedulingAlgorithm(seed=1)
    with caching.caches_disabled():
        _schedule(algo, fwk, _pod("p1"), snap)
        _schedule(algo, fwk, _pod("p2"), snap)
    assert len(rejects.seen) == 10
    assert all(not n.memo for n in snap.node_info_list)


@pytest.mark.usefixtures("caches_on")
@pytest.mark.parametrize(
    ("skip", "filter_kept"),
    [
        pytest.param(True, True, id="skipped-at-pre-filter-lets-verdicts-be-kept"),
        pytest.param(False, False, id="active-at-filter-means-every-node-is-filtered-afresh"),
    ],
)
def test_plugins_that_read_the_cluster(skip: bool, filter_kept: bool) -> None:
    """Verdicts are kept only when every cluster-reading Filter was skipped by its PreFilter; a cluster-reading
    Score plugin that PreScore did not skip scores every node every cycle while the node-local ones are read
    back."""
    cluster, rejects, by_name = ClusterWide(skip), Rejects(), ByName()
    fwk = _framework(cluster, rejects, by_name)
    snap = _snapshot(6)
    algo = SchedulingAlgorithm(seed=1)
    _schedule(algo, fwk, _pod("p1"), snap)
    _schedule(algo, fwk, _pod("p2"), snap)
    assert len(rejects.seen) == (6 if filter_kept else 12)
    assert len(by_name.seen) == 6  # node-local scores: kept in both cases
    assert cluster.scored == 12


@pytest.mark.usefixtures("caches_on")
def test_a_node_with_nominated_pods_is_always_filtered_afresh() -> None:
    """Pods nominated to a node count in its Filter (upstream addGENominatedPods): its kept verdict is neither
    read nor written while it has nominees."""

    class Nominees:
        def __init__(self) -> None:
            self.on: dict[str, list[PodInfo]] = {}

        def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
            return self.on.get(node_name, [])

        def has_nominations(self) -> bool:
            return bool(self.on)

    rejects = Rejects()
    fwk = _framework(rejects, ByName())
    nominees = Nominees()
    fwk.nominator = nominees
    snap = _snapshot(4)
    algo = SchedulingAlgorithm(seed=1)
    _schedule(algo, fwk, _pod("p1"), snap)
    nominees.on["node-2"] = [_pod("big")]
    rejects.seen.clear()
    _schedule(algo, fwk, _pod("p2"), snap)
    assert rejects.seen == ["node-2", "node-2"]  # with the nominee, then without (two passes, as upstream)
    rejects.seen.clear()
    _schedule(algo, fwk, _pod("p3"), snap)
    assert rejects.seen == ["node-2", "node-2"]  # and still afresh: nothing was kept for it


def test_a_plugin_failing_in_a_reuse_cycle_fails_it_as_the_plain_path_does() -> None:
    """An Error from a plugin on a changed node gives the plain path's error and the same next start index."""
    outcomes = []
    for enabled in (True, False):
        rejects = Rejects()
        fwk = _framework(rejects, ByName())
        snap = _snapshot(5)
        algo = SchedulingAlgorithm(seed=1)
        with caching.caches_enabled() if enabled else caching.caches_disabled():
            _schedule(algo, fwk, _pod("p1"), snap)
            _replace(snap, 1, _pod("x"))
            rejects.fail = True
            with pytest.raises(SchedulingError) as err:
                _schedule(algo, fwk, _pod("p2"), snap)
        outcomes.append((err.value.status.message(), algo.next_start_node_index))
    assert outcomes[0] == outcomes[1]


def _replicas(count: int, requests: dict[str, str], app: str = "web") -> list[dict[str, Any]]:
    builders = (make_pod(f"{app}-{i}").labels(app=app).req(**requests) for i in range(count))
    return [b.scheduler_name("pyscheduler").obj() for b in builders]


@pytest.mark.parametrize(
    "pods",
    [
        pytest.param(lambda: _replicas(30, {"cpu": "300m", "memory": "1Gi"}), id="one-shape"),
        pytest.param(
            lambda: _replicas(12, {"cpu": "1"}, "x") + _replicas(12, {"memory": "3Gi"}, "y"),
            id="two-shapes-interleaved-by-queue",
        ),
    ],
)
def test_the_default_profile_reuses_results_and_binds_as_without_caches(
    pods: Callable[[], list[dict[str, Any]]],
) -> None:
    """The default profile's plugins all sign: replicas reuse kept results, and every binding is the one the
    plain path makes (the guard over many generated workloads is tests/test_caching_parity.py)."""
    bindings = []
    for enabled in (True, False):
        with caching.caches_enabled() if enabled else caching.caches_disabled():
            cluster = MemoryCluster()
            clock = FakeClock()
            sched = build_scheduler(cluster, clock=clock, seed=3)
            cluster.attach(sched)
            for i in range(12):
                node = make_node(f"n{i}").capacity(cpu="4", memory="16Gi", pods="110").zone(f"z{i % 3}")
                cluster.apply_node(node.obj())
            for obj in pods():
                cluster.apply_pod(obj)
            asyncio.run(sched.run_until_idle(advance=clock.advance_to))
            bindings.append(list(cluster.bindings))
            if enabled:
                (shapes,) = sched.algorithm.shapes.values()
                assert shapes.enabled and shapes.stats["filter_reused"] > 0 and shapes.stats["score_reused"] > 0
    assert bindings[0] == bindings[1]


def test_every_plugin_of_the_default_profile_signs() -> None:
    """The default profile's pods are signable: an in-tree PreFilter/Filter/PreScore/Score plugin without
    sign_pod would silently turn the kept results off for every pod (give it one: SignPlugin)."""
    sched = build_scheduler(MemoryCluster(), clock=FakeClock(), seed=1)
    (fwk,) = sched.profiles.values()
    unsigned = [
        p.name for p in (*fwk.pre_filter, *fwk.filter, *fwk.pre_score, *fwk.score) if not isinstance(p, SignPlugin)
    ]
    assert unsigned == []
    assert ShapeResults(fwk).enabled
