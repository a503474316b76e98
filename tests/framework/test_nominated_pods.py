"""The framework's preemption plumbing (upstream runtime/framework_test.go): Filter runs with nominated pods
(TestFilterPluginsWithNominatedPods plus the two-pass rule), the PreFilter extensions, PostFilter
(TestPostFilterPlugins) and CycleState.clone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from scheduler.backend.queue.nominator import NominatingInfo, Nominator
from scheduler.framework.fit_error import NodeToStatus
from scheduler.framework.interface import (
    CycleState,
    FilterPlugin,
    Plugin,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
)
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status, error_status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.testing import make_node, make_pod, node_info

REASON = "injected status"
FILTER_REASON = "injected filter status"


def _pod(name: str, priority: int) -> PodInfo:
    return make_pod(name).uid(name).priority(priority).info()


LOW, HIGH = _pod("low", 0), _pod("high", 1000)


@dataclass
class Counted:
    """State a PreFilter plugin keeps: how many nominated pods it was told about (clonable)."""

    added: int = 0
    seen: list[str] = field(default_factory=list)

    def clone(self) -> Counted:
        return Counted(self.added, list(self.seen))


class InjectedPreFilter(PreFilterPlugin):
    """PreFilter whose AddPod/RemovePod return an injected code; records what it was told in the state."""

    def __init__(self, name: str, code: Code = Code.SUCCESS) -> None:
        self.name = name  # type: ignore[misc]
        self.code = code

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state[self.name] = Counted()
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        counted: Counted = state[self.name]
        counted.added += 1
        counted.seen.append(to_add.name)
        return None if self.code == Code.SUCCESS else Status(self.code, (REASON,))

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status | None:
        counted: Counted = state[self.name]
        counted.added -= 1
        return None if self.code == Code.SUCCESS else Status(self.code, (REASON,))


class InjectedFilter(FilterPlugin):
    def __init__(self, name: str, code: Code = Code.SUCCESS) -> None:
        self.name = name  # type: ignore[misc]
        self.code = code

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None if self.code == Code.SUCCESS else Status(self.code, (FILTER_REASON,))


class NeedsNominatedPodsAbsent(FilterPlugin):
    """Rejects a node while a pod named `other` is on it (think pod anti-affinity with a nominated pod)."""

    name = "NeedsAbsent"

    def __init__(self, other: str) -> None:
        self.other = other
        self.calls: list[tuple[str, ...]] = []

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        self.calls.append(tuple(sorted(p.name for p in node.pods.values())))
        if any(p.name == self.other for p in node.pods.values()):
            return Status(Code.UNSCHEDULABLE, ("conflicts with a nominated pod",))
        return None


class NeedsNominatedPodsPresent(FilterPlugin):
    """Rejects a node unless a pod named `other` is on it (think required pod affinity to a nominated pod)."""

    name = "NeedsPresent"

    def __init__(self, other: str) -> None:
        self.other = other

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if any(p.name == self.other for p in node.pods.values()):
            return None
        return Status(Code.UNSCHEDULABLE, ("needs the nominated pod",))


def _framework(plugins: Sequence[Plugin], nominator: Nominator | None = None) -> Framework:
    points = {
        "preFilter": [p.name for p in plugins if isinstance(p, PreFilterPlugin)],
        "filter": [p.name for p in plugins if isinstance(p, FilterPlugin)],
        "postFilter": [p.name for p in plugins if isinstance(p, PostFilterPlugin)],
    }
    fwk = Framework("p", plugins, points, {})
    fwk.nominator = nominator
    return fwk


def _nominated(*pods: PodInfo, node: str = "node1") -> Nominator:
    nominator = Nominator()
    for p in pods:
        nominator.add(p, NominatingInfo(node))
    return nominator


def _node() -> NodeInfo:
    return node_info(make_node("node1"), make_pod("existing").uid("existing"))


@pytest.mark.parametrize(
    ("pre_filter", "filter_", "pod", "nominated", "want"),
    [
        pytest.param(None, None, LOW, None, None, id="node has no nominated pod"),
        pytest.param(Code.SUCCESS, Code.SUCCESS, LOW, HIGH, None, id="high-priority nominated pod, filters succeed"),
        pytest.param(
            Code.ERROR,
            None,
            LOW,
            HIGH,
            error_status(f'running AddPod on PreFilter plugin "TestPlugin1": {REASON}', "TestPlugin1"),
            id="high-priority nominated pod and pre filters fail",
        ),
        pytest.param(
            Code.SUCCESS,
            Code.ERROR,
            LOW,
            HIGH,
            error_status(f'running "TestPlugin2" filter plugin: {FILTER_REASON}', "TestPlugin2"),
            id="high-priority nominated pod and filters fail",
        ),
        pytest.param(
            Code.UNSCHEDULABLE,
            Code.SUCCESS,
            HIGH,
            LOW,
            None,
            id="low-priority nominated pod: AddPod is never called",
        ),
    ],
)
def test_filter_plugins_with_nominated_pods(
    pre_filter: Code | None, filter_: Code | None, pod: PodInfo, nominated: PodInfo | None, want: Status | None
) -> None:
    """upstream TestFilterPluginsWithNominatedPods."""
    plugins: list[Plugin] = []
    if pre_filter is not None:
        plugins.append(InjectedPreFilter("TestPlugin1", pre_filter))
    if filter_ is not None:
        plugins.append(InjectedFilter("TestPlugin2", filter_))
    fwk = _framework(plugins, _nominated(nominated) if nominated is not None else Nominator())
    state = CycleState()
    fwk.run_pre_filter(state, pod, [_node()])
    got = fwk.run_filter_plugins_with_nominated_pods(state, pod, _node())
    if want is None:
        assert got is None
    else:
        assert got is not None and (got.code, got.reasons) == (want.code, want.reasons)
    batch, err = fwk.run_filters_with_nominated_pods(state, pod, [_node()])
    single = err if err is not None else batch[0]
    assert (single is None) == (got is None), "the batch path decides like the single-node path"


def test_pass_one_adds_higher_or_equal_priority_nominees_through_the_extensions_on_copies() -> None:
    """Pass 1 sees equal- and higher-priority nominees (never the pod itself, never lower ones) on a copy of
    the node and the state; the originals are untouched."""
    pre = InjectedPreFilter("Counter")
    absent = NeedsNominatedPodsAbsent("peer")
    equal, lower = _pod("peer", 500), _pod("lower", 10)
    pod = _pod("me", 500)
    fwk = _framework([pre, absent], _nominated(equal, lower, pod))
    state = CycleState()
    fwk.run_pre_filter(state, pod, [_node()])
    node = _node()
    status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node)
    assert status is not None and status.reasons == ("conflicts with a nominated pod",)
    assert absent.calls == [("existing", "peer")], "pass 1 only: it failed, so pass 2 does not run"
    assert state["Counter"].added == 0, "the original state is not the one the extensions changed"
    assert set(p.name for p in node.pods.values()) == {"existing"}


def test_pass_two_requires_the_pod_to_fit_without_the_nominees_too() -> None:
    """Passing with the nominee added is not enough: a filter that needs the nominee (pod affinity to a pod
    that may go elsewhere) must pass without it as well, so the node is rejected."""
    present = NeedsNominatedPodsPresent("peer")
    pod = _pod("me", 0)
    fwk = _framework([present], _nominated(_pod("peer", 500)))
    state = CycleState()
    status = fwk.run_filter_plugins_with_nominated_pods(state, pod, _node())
    assert status is not None and status.reasons == ("needs the nominated pod",)
    statuses, err = fwk.run_filters_with_nominated_pods(state, pod, [_node(), node_info(make_node("node2"))])
    assert err is None
    assert [s.reasons if s else None for s in statuses] == [("needs the nominated pod",)] * 2


def test_batch_filters_only_the_nodes_with_nominees_one_by_one() -> None:
    """Nodes without nominees go through the batch; a node with a higher-priority nominee gets pass 1."""
    absent = NeedsNominatedPodsAbsent("peer")
    pod = _pod("me", 0)
    fwk = _framework([absent], _nominated(_pod("peer", 500), node="node2"))
    nodes = [node_info(make_node(f"node{i}")) for i in (1, 2, 3)]
    statuses, err = fwk.run_filters_with_nominated_pods(CycleState(), pod, nodes)
    assert err is None
    assert [s.reasons if s else None for s in statuses] == [None, ("conflicts with a nominated pod",), None]


def test_pre_filter_extensions_skip_plugins_that_skipped_filter() -> None:
    """A plugin whose PreFilter returned Skip is not told about added/removed pods (as upstream)."""
    pre = InjectedPreFilter("Counter", Code.ERROR)
    fwk = _framework([pre])
    state = CycleState()
    state.skip_filter_plugins.add("Counter")
    state["Counter"] = Counted()
    assert fwk.run_pre_filter_extension_add_pod(state, LOW, HIGH, _node()) is None
    assert fwk.run_pre_filter_extension_remove_pod(state, LOW, HIGH, _node()) is None
    state.skip_filter_plugins.clear()
    err = fwk.run_pre_filter_extension_remove_pod(state, LOW, HIGH, _node())
    assert err is not None and err.code == Code.ERROR
    assert err.reasons == (f'running RemovePod on PreFilter plugin "Counter": {REASON}',)


def test_cycle_state_clone_clones_what_can_be_cloned() -> None:
    state = CycleState()
    state["counted"] = Counted(1, ["a"])
    state["shared"] = ("immutable",)
    state.skip_filter_plugins.add("X")
    state.record_plugin_metrics = True
    other = state.clone()
    other["counted"].seen.append("b")
    other.skip_filter_plugins.add("Y")
    assert state["counted"].seen == ["a"] and other["counted"].seen == ["a", "b"]
    assert other["shared"] is state["shared"]
    assert state.skip_filter_plugins == {"X"} and other.skip_filter_plugins == {"X", "Y"}
    assert other.record_plugin_metrics


class InjectedPostFilter(PostFilterPlugin):
    def __init__(self, name: str, code: Code) -> None:
        self.name = name  # type: ignore[misc]
        self.code = code

    def post_filter(
        self, state: CycleState, pod: PodInfo, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        return PostFilterResult("n1") if self.code == Code.SUCCESS else None, Status(self.code, (REASON,))


@pytest.mark.parametrize(
    ("codes", "want_code", "want_reasons", "want_plugin"),
    [
        pytest.param([Code.SUCCESS], Code.SUCCESS, (REASON,), "P0", id="a single plugin makes a Pod schedulable"),
        pytest.param(
            [Code.UNSCHEDULABLE, Code.SUCCESS], Code.SUCCESS, (REASON,), "P1", id="plugin2 makes the Pod schedulable"
        ),
        pytest.param(
            [Code.SUCCESS, Code.UNSCHEDULABLE], Code.SUCCESS, (REASON,), "P0", id="plugin1 makes the Pod schedulable"
        ),
        pytest.param([Code.ERROR, Code.SUCCESS], Code.ERROR, (REASON,), "P0", id="plugin1 fails with an error"),
        pytest.param(
            [Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            (REASON,),
            "P1",
            id="plugin2 makes the Pod unresolvable",
        ),
        pytest.param(
            [Code.UNSCHEDULABLE, Code.UNSCHEDULABLE],
            Code.UNSCHEDULABLE,
            (REASON, REASON),
            "P0",
            id="both plugins failed to make a Pod schedulable: reasons joined, first rejector named",
        ),
    ],
)
def test_post_filter_plugins(
    codes: list[Code], want_code: Code, want_reasons: tuple[str, ...], want_plugin: str
) -> None:
    """upstream TestPostFilterPlugins."""
    fwk = _framework([InjectedPostFilter(f"P{i}", c) for i, c in enumerate(codes)])
    result, status = fwk.run_post_filter(CycleState(), LOW, NodeToStatus())
    assert (status.code, status.reasons, status.plugin) == (want_code, want_reasons, want_plugin)
    assert (result is not None) == (want_code == Code.SUCCESS)


def test_node_to_status_absent_nodes_and_codes() -> None:
    """NodesForStatusCode: explicit statuses, plus every absent node when the absent status has the code."""
    nodes = [node_info(make_node(f"n{i}")) for i in range(4)]
    m = NodeToStatus({"n0": Status(Code.UNSCHEDULABLE), "n1": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)})
    assert [n.name for n in m.nodes_for_code(nodes, Code.UNSCHEDULABLE)] == ["n0"]
    assert m.status_of("n3").code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    m.absent_nodes_status = Status(Code.UNSCHEDULABLE, ("prefilter",))
    assert [n.name for n in m.nodes_for_code(nodes, Code.UNSCHEDULABLE)] == ["n0", "n2", "n3"]
