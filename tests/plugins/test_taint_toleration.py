"""TaintToleration filter and score (upstream plugins/tainttoleration, v1.37)."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import MAX_NODE_SCORE, NODE, ActionType, CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.taint_toleration import (
    ERR_REASON_UNTOLERATED,
    NAME,
    TaintToleration,
)
from scheduler.testing import NodeBuilder, PodBuilder, make_node, make_pod

TaintSpec = tuple[str, str, str]  # key, value, effect


def _node(name: str, taints: list[TaintSpec]) -> NodeInfo:
    builder: NodeBuilder = make_node(name)
    for key, value, effect in taints:
        builder.taint(key, value, effect)
    return NodeInfo(name, builder.info())


@pytest.mark.parametrize(
    ("pod", "taints", "fits"),
    [
        pytest.param(make_pod(), [], True, id="no-taints"),
        pytest.param(make_pod(), [("dedicated", "gpu", "NoSchedule")], False, id="untolerated-noschedule"),
        pytest.param(make_pod(), [("dedicated", "gpu", "NoExecute")], False, id="untolerated-noexecute"),
        pytest.param(make_pod(), [("dedicated", "gpu", "PreferNoSchedule")], True, id="prefer-ignored-by-filter"),
        pytest.param(
            make_pod().toleration("dedicated", "gpu", "NoSchedule"),
            [("dedicated", "gpu", "NoSchedule")],
            True,
            id="equal-same-value",
        ),
        pytest.param(
            make_pod().toleration("dedicated", "gpu", "NoSchedule", operator="Equal"),
            [("dedicated", "cpu", "NoSchedule")],
            False,
            id="equal-other-value",
        ),
        pytest.param(
            make_pod().toleration("dedicated", effect="NoSchedule", operator="Exists"),
            [("dedicated", "anything", "NoSchedule")],
            True,
            id="exists-any-value",
        ),
        pytest.param(
            make_pod().toleration("other", effect="NoSchedule", operator="Exists"),
            [("dedicated", "", "NoSchedule")],
            False,
            id="exists-other-key",
        ),
        pytest.param(
            make_pod().toleration(operator="Exists"),
            [("a", "1", "NoSchedule"), ("b", "", "NoExecute")],
            True,
            id="empty-key-exists-tolerates-all",
        ),
        pytest.param(
            make_pod().toleration("dedicated", "gpu"),
            [("dedicated", "gpu", "NoExecute")],
            True,
            id="empty-effect-matches-all-effects",
        ),
        pytest.param(
            make_pod().toleration("dedicated", "gpu", "NoSchedule"),
            [("dedicated", "gpu", "NoExecute")],
            False,
            id="effect-must-match",
        ),
        pytest.param(
            make_pod().toleration("a", "1", "NoSchedule"),
            [("a", "1", "NoSchedule"), ("b", "2", "NoSchedule")],
            False,
            id="every-taint-needs-a-toleration",
        ),
        pytest.param(
            make_pod().toleration("a", "1", "NoSchedule").toleration("b", "2", "NoSchedule"),
            [("a", "1", "NoSchedule"), ("b", "2", "NoSchedule")],
            True,
            id="two-tolerations-two-taints",
        ),
        pytest.param(
            make_pod().toleration("a", "1", "NoSchedule"),
            [("a", "1", "NoSchedule"), ("soft", "", "PreferNoSchedule")],
            True,
            id="untolerated-prefer-alongside-tolerated-hard",
        ),
    ],
)
def test_filter(pod: PodBuilder, taints: list[TaintSpec], fits: bool) -> None:
    """Only NoSchedule/NoExecute taints must be tolerated; the message names no taint (v1.35+)."""
    pl = TaintToleration()
    info = pod.info()
    node = _node("n1", taints)
    status = pl.filter(CycleState(), info, node)
    if fits:
        assert status is None
    else:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == (ERR_REASON_UNTOLERATED,)
        assert status.plugin == NAME
    assert pl.filter_batch(CycleState(), info, [node]) == [status]



def test_filter_batch_matches_filter_over_mixed_nodes() -> None:
    """The batch path (with its per-cycle cache of identical taint lists) agrees with the per-node path."""
    pl = TaintToleration()
    pod = make_pod().toleration("ok", effect="NoSchedule").info()
    specs: list[list[TaintSpec]] = [
        [],
        [("ok", "", "NoSchedule")],
        [("bad", "", "NoSchedule")],
        [("ok", "", "NoSchedule")],
        [("bad", "", "NoSchedule")],
        [("soft", "", "PreferNoSchedule")],
    ]
    nodes = [_node(f"n{i}", s) for i, s in enumerate(specs)]
    state = CycleState()
    batch = pl.filter_batch(state, pod, nodes)
    assert batch == [pl.filter(state, pod, n) for n in nodes]
    assert [s is None for s in batch] == [True, True, False, True, False, True]


def _score(pl: TaintToleration, pod: PodInfo, nodes: list[NodeInfo], pre_score: bool = True) -> list[int]:
    state = CycleState()
    if pre_score:
        assert pl.pre_score(state, pod, nodes) is None
    scores = pl.score_batch(state, pod, nodes)
    assert scores == [pl.score(state, pod, n) for n in nodes]
    assert pl.normalize_score(state, pod, scores) is None
    return scores


@pytest.mark.parametrize("pre_score", [pytest.param(True, id="with-prescore"), pytest.param(False, id="no-prescore")])
def test_score_counts_untolerated_prefer_no_schedule(pre_score: bool) -> None:
    """Raw score = untolerated PreferNoSchedule taints; normalize reverses so the cleanest node gets 100."""
    pod = make_pod().info()
    nodes = [
        _node("clean", []),
        _node("one", [("a", "", "PreferNoSchedule"), ("hard", "", "NoSchedule")]),
        _node("two", [("a", "", "PreferNoSchedule"), ("b", "", "PreferNoSchedule")]),
    ]
    raw = [0, 1, 2]  # NoSchedule taints never count towards the score
    want = [MAX_NODE_SCORE - MAX_NODE_SCORE * r // max(raw) for r in raw]
    assert _score(TaintToleration(), pod, nodes, pre_score) == want == [100, 50, 0]


@pytest.mark.parametrize(
    ("pod", "untolerated"),
    [
        pytest.param(make_pod().toleration("a", effect="PreferNoSchedule"), 1, id="prefer-toleration-counts"),
        pytest.param(make_pod().toleration("a"), 1, id="empty-effect-toleration-counts"),
        pytest.param(make_pod().toleration("a", effect="NoSchedule"), 2, id="noschedule-toleration-ignored"),
        pytest.param(make_pod().toleration(operator="Exists"), 0, id="tolerate-everything"),
    ],
)
def test_score_only_uses_prefer_or_empty_effect_tolerations(pod: PodBuilder, untolerated: int) -> None:
    """Tolerations with effect PreferNoSchedule or empty count for scoring; others are dropped at PreScore."""
    node = _node("n", [("a", "", "PreferNoSchedule"), ("b", "", "PreferNoSchedule")])
    pl = TaintToleration()
    state = CycleState()
    info = pod.info()
    pl.pre_score(state, info, [node])
    assert pl.score(state, info, node) == untolerated


def test_all_clean_nodes_score_max() -> None:
    """With no PreferNoSchedule taints anywhere every node gets 100 (reverse of all-zero)."""
    nodes = [_node("a", []), _node("b", [("x", "", "NoSchedule")])]
    assert _score(TaintToleration(), make_pod().info(), nodes) == [MAX_NODE_SCORE, MAX_NODE_SCORE]


def test_events_to_register() -> None:
    """Node add or taint change can make a rejected pod fit."""
    events = TaintToleration().events_to_register()
    node_events = [e for e in events if e.resource == NODE]
    assert node_events and node_events[0].action & ActionType.ADD
    assert node_events[0].action & ActionType.UPDATE_NODE_TAINT
    assert any(e.action & ActionType.UPDATE_POD_TOLERATION for e in events)
