"""Per-NodeInfo memo of Fit and BalancedAllocation results: reused while the node's pods stay the same,
dropped whenever they change (add_pod/remove_pod) or the NodeInfo is cloned."""

from __future__ import annotations

from scheduler import caching
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Status
from scheduler.framework.types import MEMO_LIMIT, NodeInfo, PodInfo
from scheduler.plugins import node_resources_balanced_allocation as ba
from scheduler.plugins import node_resources_fit as fit
from scheduler.testing import StaticHandle, make_node, make_pod


def nodes() -> list[NodeInfo]:
    out = []
    for i, cpu in enumerate(["1", "2", "4"]):
        record = make_node(f"n{i}").capacity(cpu=cpu, memory="4Gi", pods="3").info()
        out.append(NodeInfo(record.name, record))
    return out


def placed(name: str, node: str, cpu: str = "500m", memory: str = "1Gi") -> PodInfo:
    return make_pod(name).req(cpu=cpu, memory=memory).node(node).info()


def scores(pod: PodInfo, infos: list[NodeInfo]) -> tuple[list[int], list[int], list[int], list[int]]:
    """(fit batch, fit per node, balanced batch, balanced per node) in one fresh cycle."""
    f = fit.new(None, StaticHandle())
    b = ba.new(None, StaticHandle())
    state = CycleState()
    assert f.pre_score(state, pod, infos) is None
    assert b.pre_score(state, pod, infos) is None
    return (
        f.score_batch(state, pod, infos),
        [f.score(state, pod, n) for n in infos],
        b.score_batch(state, pod, infos),
        [b.score(state, pod, n) for n in infos],
    )


def filters(pod: PodInfo, infos: list[NodeInfo]) -> tuple[list[Status | None], list[Status | None]]:
    f = fit.new(None, StaticHandle())
    state = CycleState()
    f.pre_filter(state, pod, infos)
    return f.filter_batch(state, pod, infos), [f.filter(state, pod, n) for n in infos]


def test_scores_follow_pod_changes_through_the_memo() -> None:
    infos = nodes()
    pod = make_pod("p").req(cpu="300m", memory="512Mi").info()
    first = scores(pod, infos)
    assert first[0] == first[1] and first[2] == first[3]
    assert scores(pod, infos) == first  # served from the memo, same values
    infos[0].add_pod(placed("a", "n0"))
    infos[2].add_pod(placed("b", "n2", cpu="3", memory="1Gi"))
    changed = scores(pod, infos)
    assert changed[0] == changed[1] and changed[2] == changed[3]
    assert changed[0][0] != first[0][0] and changed[2][2] != first[2][2]
    assert changed[0][1] == first[0][1]
    infos[0].remove_pod(next(iter(infos[0].pods)))
    infos[2].remove_pod(next(iter(infos[2].pods)))
    assert scores(pod, infos) == first


def test_filter_verdicts_follow_pod_changes_through_the_memo() -> None:
    infos = nodes()
    pod = make_pod("p").req(cpu="600m", memory="1Gi").info()
    batch, each = filters(pod, infos)
    assert batch == each == [None, None, None]
    assert filters(pod, infos)[0] == [None, None, None]  # memoized pass
    infos[0].add_pod(placed("a", "n0"))  # n0: 500m of 1 cpu used, 600m no longer fits
    infos[1].add_pod(placed("b", "n1", cpu="1m", memory="1"))
    infos[1].add_pod(placed("c", "n1", cpu="1m", memory="1"))
    infos[1].add_pod(placed("d", "n1", cpu="1m", memory="1"))  # n1: pods 3/3
    batch, each = filters(pod, infos)
    assert batch == each
    assert batch[0] is not None and batch[1] is not None and batch[2] is None
    assert batch[0].reasons == ("Insufficient cpu",)
    assert batch[1].reasons == ("Too many pods",)


def test_clone_starts_with_an_empty_memo_and_the_memo_is_bounded() -> None:
    info = nodes()[0]
    with caching.caches_enabled():  # whatever PYSCHEDULER_DISABLE_CACHES says
        for i in range(MEMO_LIMIT + 5):
            info.remember(("k", i), i)
    assert 0 < len(info.memo) <= MEMO_LIMIT
    assert info.clone().memo == {}
