"""The scheduling algorithm of one attempt (upstream schedule_one.go): sampling, rotation, nominated node,
PreFilterResult narrowing, tie breaking and errors. Frameworks are built from tiny test plugins."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import pytest

from scheduler.core.schedule_one import (
    MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND,
    MIN_FEASIBLE_NODES_TO_FIND,
    SchedulingAlgorithm,
    SchedulingError,
    _rotated,
    num_feasible_nodes_to_find,
)
from scheduler.framework.fit_error import FitError, NoNodesAvailableError
from scheduler.framework.interface import (
    CycleState,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    ScorePlugin,
)
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.logging_setup import V10
from scheduler.plugins.node_affinity import NodeAffinity
from scheduler.testing import make_node, make_pod

NodePredicate = Callable[[str], Status | None]


class CountingFilter(FilterPlugin):
    """Filter deciding per node name through `verdict`; records every node it was asked about."""

    name = "CountingFilter"

    def __init__(self, verdict: NodePredicate | None = None) -> None:
        self.verdict = verdict or (lambda _n: None)
        self.calls: list[str] = []

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        self.calls.append(node.name)
        return self.verdict(node.name)


class TableScore(ScorePlugin):
    """Score from a table by node name (default 1: every node ties)."""

    name = "TableScore"

    def __init__(self, table: dict[str, int] | None = None) -> None:
        self.table = table or {}

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return self.table.get(node.name, 1)


class NarrowTo(PreFilterPlugin):
    """PreFilter returning a fixed PreFilterResult (or a fixed status)."""

    def __init__(self, name: str, names: set[str] | None, status: Status | None = None) -> None:
        self.name = name  # type: ignore[misc]
        self.names = names
        self.status = status

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if self.status is not None:
            return None, self.status
        return (PreFilterResult(set(self.names)) if self.names is not None else None), None


class RaisingScore(ScorePlugin):
    name = "RaisingScore"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        raise RuntimeError("kaboom")


def _framework(
    *,
    pre_filter: Iterable[PreFilterPlugin] = (),
    filters: Iterable[FilterPlugin] = (),
    scores: Iterable[ScorePlugin] = (),
    percentage: int | None = None,
) -> Framework:
    pre, flt, sc = list(pre_filter), list(filters), list(scores)
    plugins = {p.name: p for p in [*pre, *flt, *sc]}
    points = {
        "preFilter": [p.name for p in pre],
        "filter": [p.name for p in flt],
        "score": [p.name for p in sc],
    }
    return Framework("test", list(plugins.values()), points, {}, percentage_of_nodes_to_score=percentage)


def _snapshot(names: Sequence[str]) -> Snapshot:
    return Snapshot.from_node_infos([NodeInfo(n, make_node(n).info()) for n in names])


def _names(n: int) -> list[str]:
    return [f"node-{i}" for i in range(n)]


def _pod(name: str = "p") -> PodInfo:
    return make_pod(name).info()


def _adaptive(n: int) -> int:
    """numFeasibleNodesToFind with percentage 0, written out from the upstream formula."""
    if n < 100:
        return n
    pct = max(50 - n // 125, 5)
    return max(n * pct // 100, 100)


@pytest.mark.parametrize(
    ("percentage", "num_nodes", "want"),
    [
        pytest.param(0, 0, 0, id="no-nodes"),
        pytest.param(0, 10, 10, id="below-100-all"),
        pytest.param(40, 10, 10, id="below-100-ignores-percentage"),
        pytest.param(0, 99, 99, id="99-all"),
        pytest.param(0, 100, 100, id="100-at-least-100"),  # 50% of 100 = 50 < 100
        pytest.param(0, 200, 100, id="200-49pct-98-raised-to-100"),
        pytest.param(0, 250, 120, id="250-48pct"),
        pytest.param(0, 1000, 420, id="1000-42pct"),
        pytest.param(40, 1000, 400, id="1000-set-40pct"),
        pytest.param(0, 5000, 500, id="5000-10pct"),
        pytest.param(0, 5624, 337, id="5624-6pct"),
        pytest.param(0, 5625, 281, id="5625-floor-5pct"),
        pytest.param(0, 6000, 300, id="6000-2pct-floored-to-5"),
        pytest.param(40, 6000, 2400, id="6000-set-40pct"),
        pytest.param(1, 1000, 100, id="1pct-raised-to-min-100"),
        pytest.param(100, 1000, 1000, id="100pct-all"),
        pytest.param(30, 500, 150, id="500-30pct"),
    ],
)
def test_num_feasible_nodes_to_find(percentage: int, num_nodes: int, want: int) -> None:
    """Adaptive percentage 50 - n/125 (floor 5%), at least 100 nodes, all nodes below 100."""
    assert num_feasible_nodes_to_find(percentage, num_nodes) == want


@pytest.mark.parametrize("n", [1, 50, 99, 100, 101, 124, 125, 126, 999, 1000, 3000, 5624, 5625, 10000, 20000])
def test_num_feasible_nodes_to_find_adaptive_formula(n: int) -> None:
    """Percentage 0 follows the upstream formula at and around each boundary."""
    assert num_feasible_nodes_to_find(0, n) == _adaptive(n)


def test_constants_match_upstream() -> None:
    """minFeasibleNodesToFind = 100, minFeasibleNodesPercentageToFind = 5."""
    assert (MIN_FEASIBLE_NODES_TO_FIND, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND) == (100, 5)


def test_fair_evaluation_rotates_start_index() -> None:
    """Upstream TestFairEvaluationForNodes: 500 nodes at 30% find 150 each time, starting where the last stopped."""
    names = _names(500)
    snap = _snapshot(names)
    algo = SchedulingAlgorithm(percentage_of_nodes_to_score=30)
    fwk = _framework(filters=[CountingFilter()], scores=[TableScore()])
    to_find = 150
    for i in range(2 * (500 // to_find + 1)):
        start = algo.next_start_node_index
        feasible, _ = algo.find_nodes_that_fit_pod(fwk, CycleState(), _pod(), snap)
        assert [n.name for n in feasible] == [names[(start + k) % 500] for k in range(to_find)]
        assert algo.next_start_node_index == (i + 1) * to_find % 500


def test_profile_percentage_overrides_global() -> None:
    """A profile's percentageOfNodesToScore wins over the global one (1000 nodes: 10% -> 100, not 420 or 50%)."""
    snap = _snapshot(_names(1000))
    algo = SchedulingAlgorithm(percentage_of_nodes_to_score=50)
    fwk = _framework(filters=[CountingFilter()], scores=[TableScore()], percentage=10)
    feasible, _ = algo.find_nodes_that_fit_pod(fwk, CycleState(), _pod(), snap)
    assert len(feasible) == 100
    assert algo.next_start_node_index == 100


def test_rotation_counts_rejected_nodes() -> None:
    """nextStartNodeIndex advances by feasible + rejected nodes processed (300 nodes, 40% -> 120, odd nodes fit)."""
    names = _names(300)
    snap = _snapshot(names)
    reject = Status(Code.UNSCHEDULABLE, ("even",))
    flt = CountingFilter(lambda n: reject if int(n.split("-")[1]) % 2 == 0 else None)
    fwk = _framework(filters=[flt], scores=[TableScore()], percentage=40)
    algo = SchedulingAlgorithm()
    feasible, diagnosis = algo.find_nodes_that_fit_pod(fwk, CycleState(), _pod(), snap)
    # The 120th odd node is node-239: 240 nodes processed.
    assert len(feasible) == 120 and feasible[-1].name == "node-239"
    assert len(diagnosis.node_to_status) == 120
    assert algo.next_start_node_index == 240
    feasible, diagnosis = algo.find_nodes_that_fit_pod(fwk, CycleState(), _pod(), snap)
    # From node-240: 30 odd of node-240..299, then 90 odd of node-0..179 -> 60 + 180 = 240 processed.
    assert feasible[0].name == "node-241" and feasible[-1].name == "node-179"
    assert algo.next_start_node_index == (240 + 240) % 300


def test_no_score_plugins_stops_at_first_feasible() -> None:
    """Without scoring numNodesToFind is 1: the first feasible node from the start index wins."""
    names = _names(10)
    snap = _snapshot(names)
    flt = CountingFilter(lambda n: Status(Code.UNSCHEDULABLE, ("no",)) if n in ("node-0", "node-1") else None)
    fwk = _framework(filters=[flt])
    algo = SchedulingAlgorithm()
    result = algo.schedule_pod(fwk, CycleState(), _pod(), snap)
    assert result.suggested_host == "node-2"
    assert (result.evaluated_nodes, result.feasible_nodes) == (3, 1)
    assert flt.calls[:3] == ["node-0", "node-1", "node-2"]
    assert algo.next_start_node_index == 3


def test_no_filter_plugins_takes_nodes_from_start_index() -> None:
    """Without Filter plugins the first numNodesToFind nodes from the start index are feasible."""
    snap = _snapshot(_names(5))
    algo = SchedulingAlgorithm()
    algo.next_start_node_index = 3
    feasible, diagnosis = algo.find_nodes_that_fit_pod(_framework(scores=[TableScore()]), CycleState(), _pod(), snap)
    assert [n.name for n in feasible] == ["node-3", "node-4", "node-0", "node-1", "node-2"]
    assert not diagnosis.node_to_status


@pytest.mark.parametrize(
    ("nominated", "fails", "want_calls", "want_host_in"),
    [
        pytest.param("node-1", set(), 1, {"node-1"}, id="nominated-passes-filter-called-once"),
        pytest.param("", set(), 3, {"node-0", "node-1", "node-2"}, id="no-nominated-every-node"),
        pytest.param("node-1", {"node-1"}, 4, {"node-0", "node-2"}, id="nominated-fails-then-all-nodes"),
        pytest.param("ghost", set(), 3, {"node-0", "node-1", "node-2"}, id="nominated-unknown-node"),
    ],
)
def test_nominated_node_tried_first(nominated: str, fails: set[str], want_calls: int, want_host_in: set[str]) -> None:
    """Upstream TestPreferNominatedNodeFilterCallCounts: the nominated node is filtered first and used if it fits."""
    snap = _snapshot(_names(3))
    flt = CountingFilter(lambda n: Status(Code.UNSCHEDULABLE, ("no",)) if n in fails else None)
    fwk = _framework(filters=[flt], scores=[TableScore()])
    builder = make_pod("p")
    if nominated:
        builder.nominated_node(nominated)
    algo = SchedulingAlgorithm(seed=0)
    result = algo.schedule_pod(fwk, CycleState(), builder.info(), snap)
    assert len(flt.calls) == want_calls
    if nominated in {"node-1"}:
        assert flt.calls[0] == "node-1"
    assert result.suggested_host in want_host_in


def test_nominated_node_fit_does_not_rotate() -> None:
    """When the nominated node fits the search returns before nextStartNodeIndex is updated."""
    snap = _snapshot(_names(3))
    algo = SchedulingAlgorithm()
    fwk = _framework(filters=[CountingFilter()], scores=[TableScore()])
    feasible, _ = algo.find_nodes_that_fit_pod(fwk, CycleState(), make_pod().nominated_node("node-2").info(), snap)
    assert [n.name for n in feasible] == ["node-2"]
    assert algo.next_start_node_index == 0


def _node_affinity_fwk(reject: NodePredicate) -> Framework:
    return _framework(
        pre_filter=[NodeAffinity()], filters=[NodeAffinity(), CountingFilter(reject)], scores=[TableScore()]
    )


@pytest.mark.parametrize(
    ("pinned", "rejected", "want"),
    [
        pytest.param(
            ["node-2"],
            {"node-2"},
            "0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't satisfy plugin(s) [NodeAffinity].",
            id="pinned-node-rejected",
        ),
        pytest.param(
            ["node-1", "node-3"],
            {"node-1", "node-3"},
            "0/4 nodes are available: 2 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity].",
            id="two-pinned-nodes-rejected",
        ),
        pytest.param(
            ["ghost"],
            set(),
            "0/4 nodes are available: 4 node(s) didn't satisfy plugin(s) [NodeAffinity].",
            id="pinned-to-missing-node",
        ),
    ],
)
def test_prefilter_result_absent_nodes_message(pinned: list[str], rejected: set[str], want: str) -> None:
    """Nodes a PreFilterResult leaves out count as "node(s) didn't satisfy plugin(s) [NodeAffinity]"."""
    snap = _snapshot(_names(4))
    flt_reject = Status(Code.UNSCHEDULABLE, ("Insufficient cpu",))
    fwk = _node_affinity_fwk(lambda n: flt_reject if n in rejected else None)
    builder = make_pod("ds")
    for name in pinned:  # one term per node: terms are ORed (matchFields takes exactly one value)
        builder.pin_to_node(name)
    with pytest.raises(FitError) as exc:
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), builder.info(), snap)
    assert str(exc.value) == want
    assert exc.value.diagnosis.unschedulable_plugins >= {"NodeAffinity"}


def test_prefilter_result_only_filters_pinned_nodes() -> None:
    """Only the nodes named by the PreFilterResult are filtered, and the pod lands there."""
    snap = _snapshot(_names(4))
    counting = CountingFilter()
    fwk = _framework(pre_filter=[NodeAffinity()], filters=[NodeAffinity(), counting], scores=[TableScore()])
    pod = make_pod("ds").pin_to_node("node-3").info()
    result = SchedulingAlgorithm().schedule_pod(fwk, CycleState(), pod, snap)
    assert result.suggested_host == "node-3"
    assert counting.calls == ["node-3"]


def test_two_narrowing_plugins_listed_sorted() -> None:
    """Several narrowing plugins are listed sorted, space-separated, as Go's %v of sets.List."""
    snap = _snapshot(_names(4))
    fwk = _framework(
        pre_filter=[NarrowTo("Zeta", {"node-0", "node-1"}), NodeAffinity()],
        filters=[NodeAffinity(), CountingFilter(lambda _n: Status(Code.UNSCHEDULABLE, ("Insufficient cpu",)))],
        scores=[TableScore()],
    )
    # NodeAffinity narrows to {node-1, node-2}, Zeta to {node-0, node-1}: only node-1 is filtered.
    pod = make_pod("p").pin_to_node("node-1").pin_to_node("node-2").info()
    with pytest.raises(FitError) as exc:
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), pod, snap)
    assert str(exc.value) == (
        "0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't satisfy plugin(s) [NodeAffinity Zeta]."
    )


@pytest.mark.parametrize(
    ("plugins", "want"),
    [
        pytest.param(
            [NarrowTo("Zeta", {"node-0"}), NarrowTo("Alpha", {"node-1"})],
            "0/3 nodes are available: node(s) didn't satisfy plugin(s) [Alpha Zeta] simultaneously.",
            id="two-plugins-disjoint",
        ),
        pytest.param(
            [NarrowTo("Zeta", set())],
            "0/3 nodes are available: node(s) didn't satisfy plugin Zeta.",
            id="one-plugin-empty-set",
        ),
        pytest.param(
            [NarrowTo("Vol", None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("pod has unbound PVCs",)))],
            "0/3 nodes are available: pod has unbound PVCs.",
            id="prefilter-rejection-message",
        ),
    ],
)
def test_prefilter_rejection_message(plugins: list[PreFilterPlugin], want: str) -> None:
    """A PreFilter rejection (or an empty PreFilterResult intersection) replaces the histogram."""
    snap = _snapshot(_names(3))
    counting = CountingFilter()
    fwk = _framework(pre_filter=plugins, filters=[counting], scores=[TableScore()])
    with pytest.raises(FitError) as exc:
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), _pod(), snap)
    assert str(exc.value) == want
    assert counting.calls == []


def test_no_nodes_available() -> None:
    """An empty snapshot raises ErrNoNodesAvailable before any plugin runs."""
    counting = CountingFilter()
    with pytest.raises(NoNodesAvailableError, match=r"^no nodes available to schedule pods$"):
        SchedulingAlgorithm().schedule_pod(_framework(filters=[counting]), CycleState(), _pod(), Snapshot())
    assert counting.calls == []


def test_all_nodes_rejected_fit_error() -> None:
    """Every node rejected: FitError over all nodes with the histogram."""
    snap = _snapshot(_names(3))
    fwk = _framework(filters=[CountingFilter(lambda n: Status(Code.UNSCHEDULABLE, ("Too many pods",)))])
    with pytest.raises(FitError) as exc:
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), _pod(), snap)
    assert str(exc.value) == "0/3 nodes are available: 3 Too many pods."
    assert exc.value.num_all_nodes == 3


def test_highest_score_wins_regardless_of_seed() -> None:
    """A unique best score is chosen under every seed."""
    snap = _snapshot(_names(5))
    fwk = _framework(filters=[CountingFilter()], scores=[TableScore({"node-3": 7})])
    for seed in range(10):
        assert SchedulingAlgorithm(seed=seed).schedule_pod(fwk, CycleState(), _pod(), snap).suggested_host == "node-3"


def _picks(seed: int, attempts: int, winners: Sequence[str] = ()) -> list[str]:
    snap = _snapshot(_names(5))
    table = {n: 9 for n in winners}
    fwk = _framework(filters=[CountingFilter()], scores=[TableScore(table)])
    algo = SchedulingAlgorithm(seed=seed)
    return [algo.schedule_pod(fwk, CycleState(), _pod(), snap).suggested_host for _ in range(attempts)]


def test_ties_reproducible_under_seed() -> None:
    """The same seed breaks the same ties the same way."""
    assert _picks(42, 30) == _picks(42, 30)


def test_ties_differ_across_seeds() -> None:
    """Different seeds break ties differently (20 fixed seeds: the first pick is not always the same node)."""
    firsts = {_picks(seed, 1)[0] for seed in range(20)}
    assert len(firsts) >= 3
    sequences = {tuple(_picks(seed, 10)) for seed in range(20)}
    assert len(sequences) >= 15


def test_ties_spread_over_all_tied_nodes_only() -> None:
    """Only tied best nodes are chosen, each of them sometimes (300 picks among 2 winners)."""
    counts = Counter(_picks(7, 300, winners=["node-1", "node-4"]))
    assert set(counts) == {"node-1", "node-4"}
    assert min(counts.values()) > 100  # binomial(300, 1/2): < 1e-8 to fall this low


@pytest.mark.parametrize(
    ("kind", "want"),
    [
        pytest.param("filter", 'running "CountingFilter" filter plugin: boom', id="filter-error"),
        pytest.param("prefilter", 'running PreFilter plugin "Broken": boom', id="prefilter-error"),
        pytest.param(
            "score", 'running Score plugins: plugin "RaisingScore" failed with: RuntimeError: kaboom', id="score-raises"
        ),
    ],
)
def test_plugin_error_is_scheduling_error(kind: str, want: str) -> None:
    """An Error status from a plugin raises SchedulingError (retried with backoff), not FitError."""
    snap = _snapshot(_names(3))
    err = Status(Code.ERROR, ("boom",))
    if kind == "filter":
        fwk = _framework(filters=[CountingFilter(lambda n: err if n == "node-1" else None)], scores=[TableScore()])
    elif kind == "prefilter":
        fwk = _framework(pre_filter=[NarrowTo("Broken", None, err)], filters=[CountingFilter()])
    else:
        fwk = _framework(filters=[CountingFilter()], scores=[RaisingScore()])
    with pytest.raises(SchedulingError) as exc:
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), _pod(), snap)
    assert exc.value.status.code == Code.ERROR
    assert str(exc.value) == want


def test_rotation_advances_on_filter_error() -> None:
    """Upstream "always try to update the sched.nextStartNodeIndex regardless of whether an error has occurred"."""
    snap = _snapshot(_names(3))
    verdicts = {"node-0": Status(Code.UNSCHEDULABLE, ("no",)), "node-1": Status(Code.ERROR, ("boom",))}
    fwk = _framework(filters=[CountingFilter(verdicts.get)], scores=[TableScore()])
    algo = SchedulingAlgorithm()
    with pytest.raises(SchedulingError):
        algo.find_nodes_that_fit_pod(fwk, CycleState(), _pod(), snap)
    assert algo.next_start_node_index == 1  # node-0 was processed (rejected) before node-1 errored


def test_v10_logs_each_plugin_score_like_kube_scheduler(caplog: pytest.LogCaptureFixture) -> None:
    """At V(10) every node's weighted score per plugin and its total are logged with upstream's keys."""
    fwk = _framework(scores=[TableScore({"node-0": 7, "node-1": 3})])
    fwk.score_weights["TableScore"] = 2
    with caplog.at_level(V10, logger="pyscheduler.scheduler"):
        SchedulingAlgorithm(seed=0).schedule_pod(fwk, CycleState(), _pod(), _snapshot(_names(2)))
    lines = [(r.getMessage(), vars(r).get("plugin"), vars(r)["node"], vars(r)["score"]) for r in caplog.records]
    assert lines == [
        ("Plugin scored node for pod", "TableScore", "node-0", 14),
        ("Plugin scored node for pod", "TableScore", "node-1", 6),
        ("Calculated node's final score for pod", None, "node-0", 14),
        ("Calculated node's final score for pod", None, "node-1", 6),
    ]
    assert all(vars(r)["pod"] == "default/p" for r in caplog.records)


def test_scores_are_not_logged_below_v10(caplog: pytest.LogCaptureFixture) -> None:
    """Below V(10) the score lines are not even built."""
    fwk = _framework(scores=[TableScore({"node-0": 7})])
    with caplog.at_level(V10 + 1, logger="pyscheduler.scheduler"):
        SchedulingAlgorithm(seed=0).schedule_pod(fwk, CycleState(), _pod(), _snapshot(_names(2)))
    assert not caplog.records


@pytest.mark.parametrize(
    ("count", "start", "pos", "size"),
    [
        pytest.param(5, 0, 0, 3, id="no-rotation"),
        pytest.param(5, 3, 0, 5, id="wraps-around"),
        pytest.param(5, 3, 1, 64, id="chunk-larger-than-what-is-left"),
        pytest.param(5, 4, 4, 2, id="last-node-only"),
        pytest.param(5, 2, 5, 3, id="past-the-end-is-empty"),
        pytest.param(0, 0, 0, 3, id="no-nodes"),
    ],
)
def test_rotated_chunks_equal_slices_of_the_rotated_list(count: int, start: int, pos: int, size: int) -> None:
    """The walk takes its chunks from the node list without building the rotated list, and gets the same."""
    nodes = [NodeInfo(f"n{i}") for i in range(count)]
    assert _rotated(nodes, start, pos, size) == (nodes[start:] + nodes[:start])[pos : pos + size]
