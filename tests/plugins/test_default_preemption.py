"""DefaultPreemption, ported from upstream's default_preemption_test.go (v1.37) where the behaviour exists here:
PostFilter outcomes and messages, the dry run (victims per node, PDBs, candidate limits and offsets, how many
Filter runs the reprieve takes), the choice among candidates, eligibility, victim selection and PreEnqueue;
plus the args parser (DefaultPreemptionArgs validation).

The cases run on a real Scheduler over an in-memory cluster with NodeResourcesFit as the Filter (as upstream's
tests register it) and upstream's "test-plugin", whose PreFilter extensions fail on nodes labelled error=true.
Extender and pod-group cases have no counterpart (no extenders; GenericWorkload is off by default in v1.37).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from scheduler.adapters.memory import MemoryCluster
from scheduler.config.errors import ConfigError
from scheduler.core.clock import FakeClock
from scheduler.core.scheduler import Scheduler
from scheduler.framework.fit_error import NodeToStatus
from scheduler.framework.interface import (
    CycleState,
    FilterPlugin,
    Plugin,
    PostFilterResult,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
)
from scheduler.framework.preemption import Candidate, pick_one_node_for_preemption
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status, error_status, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins import default_binder, node_resources_fit, queue_sort
from scheduler.plugins.default_preemption import Args, DefaultPreemption, parse_args
from scheduler.testing import PodBuilder, make_node, make_pod

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
JSON = dict[str, Any]


def pod(name: str, priority: int = 0, node: str = "", req: dict[str, str] | None = None) -> PodBuilder:
    b = make_pod(name).uid(name).priority(priority)
    if req:
        b.req(**req)
    else:
        b.container()
    if node:
        b.node(node)
    return b


def node(name: str, **allocatable: str) -> JSON:
    return make_node(name).allocatable(**allocatable).obj()


def pdb(labels: dict[str, str], allowed: int, disrupted: Sequence[str] = (), name: str = "pdb") -> JSON:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": labels}},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": {p: "2026-01-01T00:00:00Z" for p in disrupted}},
    }


class ErrorOnLabel(PreFilterPlugin):
    """upstream's TestPlugin: its AddPod/RemovePod fail on nodes labelled error=true."""

    name = "test-plugin"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        if node.node is not None and node.node.labels.get("error") == "true":
            return error_status(f"failed to add pod: {pod.name}")
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status | None:
        if node.node is not None and node.node.labels.get("error") == "true":
            return error_status(f"failed to remove pod: {pod.name}")
        return None


class FakeFilter(FilterPlugin):
    """upstream's FakeFilterPlugin: counts Filter runs; returns `code` (if any) on every node."""

    name = "FakeFilter"

    def __init__(self, code: Code | None = None, predicate: str = "") -> None:
        self.code = code
        self.predicate = predicate  # "false": rejects all, "match": only the node named like the pod
        self.calls = 0

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        self.calls += 1
        if self.predicate == "false":
            return Status(Code.UNSCHEDULABLE, ("false",))
        if self.predicate == "match" and node.name != pod.name:
            return Status(Code.UNSCHEDULABLE, ("doesn't match",))
        if self.code is not None:
            return Status(self.code)
        return None


@dataclass
class World:
    cluster: MemoryCluster
    scheduler: Scheduler
    fwk: Framework
    plugin: DefaultPreemption

    def state_for(self, p: PodInfo) -> CycleState:
        state = CycleState()
        _, status, _ = self.fwk.run_pre_filter(state, p, self.scheduler.snapshot.node_info_list)
        assert status is None, status
        return state

    def nodes(self) -> list[NodeInfo]:
        return sorted(self.scheduler.snapshot.node_info_list, key=lambda n: n.name)


def world(
    nodes: Sequence[JSON],
    pods: Sequence[PodBuilder] = (),
    objects: Sequence[JSON] = (),
    *,
    filters: Sequence[FilterPlugin] = (),
    args: Args | None = None,
    resources_fit: bool = True,
    upstream_plugins: frozenset[str] = frozenset(),
) -> World:
    cluster = MemoryCluster()
    sched = Scheduler(cluster, clock=FakeClock(), seed=0)
    handle = sched.handle()
    plugins: list[Plugin] = [queue_sort.PrioritySort(), *filters, ErrorOnLabel()]
    pre_filter = ["test-plugin"]
    filter_names = [f.name for f in filters]
    if resources_fit:
        plugins.append(node_resources_fit.NodeResourcesFit(node_resources_fit.parse_args(None), handle))
        pre_filter.insert(0, node_resources_fit.NAME)
        filter_names.append(node_resources_fit.NAME)
    preemption = DefaultPreemption(args or Args(), handle)
    plugins += [preemption, default_binder.DefaultBinder(handle)]
    points = {
        "queueSort": ["PrioritySort"],
        "preEnqueue": ["DefaultPreemption"],
        "preFilter": pre_filter,
        "filter": filter_names,
        "postFilter": ["DefaultPreemption"],
        "bind": ["DefaultBinder"],
    }
    fwk = Framework("pyscheduler", plugins, points, {}, upstream_plugins=upstream_plugins)
    sched.set_profiles({"pyscheduler": fwk})
    cluster.attach(sched)
    for obj in objects:
        cluster.apply_object(obj)
    for n in nodes:
        cluster.apply_node(n)
    for p in pods:
        cluster.apply_pod(p.obj())
    sched.cache.update_snapshot(sched.snapshot)
    return World(cluster, sched, fwk, preemption)


def statuses(codes: dict[str, Code], absent: Code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE) -> NodeToStatus:
    return NodeToStatus({n: Status(c) for n, c in codes.items()}, Status(absent))


U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# --------------------------------------------------------------------------------------------- PostFilter

POST_FILTER_CASES = [
    pytest.param(
        pod("p", HIGH),
        [pod("p1", node="node1")],
        [node("node1", pods="1")],
        statuses({"node1": U}),
        PostFilterResult("node1"),
        Status(Code.SUCCESS, ("preemption: found a potential placement for pod on node node1, preempting 1 victims",)),
        id="pod with higher priority can be made schedulable",
    ),
    pytest.param(
        pod("p"),
        [pod("p1", node="node1")],
        [node("node1", pods="1")],
        statuses({"node1": U}),
        PostFilterResult(""),
        Status(U, ("preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",)),
        id="pod with tied priority is still unschedulable",
    ),
    pytest.param(
        pod("p", HIGH),
        [pod("p1", node="node1")],
        [node("node1", pods="1")],
        statuses({"node1": UU}),
        PostFilterResult(""),
        Status(U, ("preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",)),
        id="preemption should respect filteredNodesStatuses",
    ),
    pytest.param(
        pod("p", HIGH),
        [pod("p1", node="node1")],
        [node("node1", pods="1")],
        NodeToStatus(),
        PostFilterResult(""),
        Status(U, ("preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",)),
        id="absent NodeToStatus entry means UnschedulableAndUnresolvable",
    ),
    pytest.param(
        pod("p", MID),
        [pod("p1", HIGH, "node1"), pod("p2", LOW, "node2")],
        [node("node1", pods="1"), node("node2", pods="1")],
        statuses({"node1": U, "node2": U}),
        PostFilterResult("node2"),
        Status(Code.SUCCESS, ("preemption: found a potential placement for pod on node node2, preempting 1 victims",)),
        id="pod can be made schedulable on one node",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2")],
        [node("node1", cpu="200m", memory="400"), node("node2", cpu="200m", memory="400")],
        statuses({"node1": U, "node2": U}),
        PostFilterResult(""),
        Status(U, ("preemption: 0/2 nodes are available: 2 Insufficient cpu.",)),
        id="no candidate nodes found, no enough resource after removing low priority pods",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", HIGH, "node1"), pod("p2", node="node2"), pod("p3", HIGH, "node3")],
        [node("node1", pods="1"), node("node2", cpu="200m", memory="400"), node("node3", pods="1")],
        statuses({"node1": U, "node2": U, "node3": U}),
        PostFilterResult(""),
        Status(
            U,
            (
                "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
                "2 No preemption victims found for incoming pod.",
            ),
        ),
        id="no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2")],
        [node(f"node{i}", cpu="200m", memory="400") for i in range(1, 5)],
        statuses({"node1": U, "node2": U, "node4": UU}),
        PostFilterResult(""),
        Status(
            U, ("preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling.",)
        ),
        id="no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node="node1")],
        [make_node("node1").allocatable(**LARGE).label("error", "true").obj()],
        statuses({"node1": U}),
        None,
        Status(
            Code.ERROR, ('preemption: running RemovePod on PreFilter plugin "test-plugin": failed to remove pod: p',)
        ),
        id="only one node but failed with TestPlugin",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2", req=MEDIUM)],
        [make_node("node1").allocatable(**LARGE).label("error", "true").obj(), node("node2", **LARGE)],
        statuses({"node1": U, "node2": U}),
        PostFilterResult("node2"),
        Status(Code.SUCCESS, ("preemption: found a potential placement for pod on node node2, preempting 1 victims",)),
        id="one failed with TestPlugin and the other pass",
    ),
]


@pytest.mark.parametrize(("preemptor", "pods", "nodes", "m", "want_result", "want_status"), POST_FILTER_CASES)
async def test_post_filter(
    preemptor: PodBuilder,
    pods: list[PodBuilder],
    nodes: list[JSON],
    m: NodeToStatus,
    want_result: PostFilterResult | None,
    want_status: Status,
) -> None:
    """PostFilter's result (nomination) and status, message included, for upstream's TestPostFilter table."""
    w = world(nodes, [*pods, preemptor])
    p = preemptor.info()
    result, status = w.plugin.post_filter(w.state_for(p), p, m)
    assert result == want_result
    assert status is not None
    assert (status.code, status.reasons) == (want_status.code, want_status.reasons)
    await w.scheduler.drain()


async def test_post_filter_respects_violating_pdbs_min_highest_priority() -> None:
    """upstream "pod can be made schedulable on minHighestPriority node": a PDB-violating victim on node1 and a
    non-violating but more important one make node2 (one violating victim of mid priority) the choice."""
    key = "test.kubernetes.io/is-violating-pdb"
    pods = [
        pod("p1", HIGH, "node1").label(key, "non-violating"),
        pod("p2", LOW, "node1").label(key, "violating"),
        pod("p3", MID, "node2").label(key, "violating"),
    ]
    budgets = [pdb({key: "violating"}, 0, name="violating-pdb"), pdb({key: "non-violating"}, 2**31 - 1, name="ok")]
    preemptor = pod("p", VERY_HIGH)
    w = world([node("node1", pods="1"), node("node2", pods="1")], [*pods, preemptor], budgets)
    p = preemptor.info()
    result, status = w.plugin.post_filter(w.state_for(p), p, statuses({"node1": U, "node2": U}))
    assert result == PostFilterResult("node2")
    assert status is not None and status.message() == (
        "preemption: found a potential placement for pod on node node2, preempting 1 victims"
    )
    await w.scheduler.drain()


# --------------------------------------------------------------------------------------------- dry run


@dataclass
class DryRunCase:
    nodes: list[str]
    preemptors: list[PodBuilder]
    pods: list[PodBuilder]
    expected: list[dict[str, list[str]]]  # per preemptor: node -> victims (sorted)
    filter_calls: list[int]
    violations: list[dict[str, int]] | None = None
    pdbs: Sequence[JSON] = ()
    args: Args | None = None
    fake_code: Code | None = None
    predicate: str = ""
    resources_fit: bool = True
    offsets: Sequence[int] = (4, 1, 3)  # what upstream's test random source (seed 4) draws for 5 nodes


DRY_RUN_CASES = [
    pytest.param(
        DryRunCase(
            ["node1", "node2"],
            [pod("p", HIGH)],
            [pod("p1", MID, "node1"), pod("p2", MID, "node2")],
            [{}],
            [2],
            predicate="false",
            resources_fit=False,
        ),
        id="a pod that does not fit on any node",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2"],
            [pod("p", HIGH, req=LARGE)],
            [pod("p1", MID, "node1", LARGE), pod("p2", MID, "node2", LARGE)],
            [{"node1": ["p1"], "node2": ["p2"]}],
            [4],
        ),
        id="a pod that fits on both nodes when lower priority pods are preempted",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2"],
            [pod("p", LOW, req=LARGE)],
            [pod("p1", MID, "node1", LARGE), pod("p2", MID, "node2", LARGE)],
            [{}],
            [0],
        ),
        id="other pods are higher priority, no preemption would happen",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2"],
            [pod("p", HIGH, req=LARGE)],
            [pod("p1.1", LOW, "node1", SMALL), pod("p1.2", MID, "node1", LARGE), pod("p2", MID, "node2", LARGE)],
            [{"node1": ["p1.2"], "node2": ["p2"]}],
            [5],
        ),
        id="medium priority pod is preempted, but lower priority one stays as it is small",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2"],
            [pod("p", HIGH, req=LARGE)],
            [
                pod("p1.1", MID, "node1", SMALL),
                pod("p1.2", LOW, "node1", SMALL),
                pod("p1.3", MID, "node1", MEDIUM),
                pod("p1.4", HIGH, "node1", SMALL),
                pod("p2", HIGH, "node2", LARGE),
            ],
            [{"node1": ["p1.2", "p1.3"]}],
            [4],
        ),
        id="mixed priority pods are preempted",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2"],
            [pod("p", HIGH, req=LARGE)],
            [
                pod("p1.1", LOW, "node1", SMALL).start_time("1970-01-01T00:00:05Z"),
                pod("p1.2", LOW, "node1", SMALL).start_time("1970-01-01T00:00:04Z"),
                pod("p1.3", MID, "node1", MEDIUM).start_time("1970-01-01T00:00:03Z"),
                pod("p1.4", HIGH, "node1", SMALL).start_time("1970-01-01T00:00:02Z"),
                pod("p2", HIGH, "node2", LARGE).start_time("1970-01-01T00:00:01Z"),
            ],
            [{"node1": ["p1.1", "p1.3"]}],
            [4],
        ),
        id="mixed priority pods are preempted, pick later StartTime one when priorities are equal",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2"],
            [pod("p", HIGH, req=LARGE)],
            [pod("p1", MID, "node1", LARGE), pod("p2", MID, "node2", LARGE)],
            [{}],
            [2],
            fake_code=Code.UNSCHEDULABLE,
        ),
        id="get Unschedulable in the preemption phase when the filter plugins filtering the nodes",
    ),
    pytest.param(
        DryRunCase(
            ["node1"],
            [pod("p", HIGH, req=VERY_LARGE)],
            [
                pod("p1.1", MID, "node1", MEDIUM).label("app", "foo"),
                pod("p1.2", MID, "node1", MEDIUM).label("app", "foo"),
            ],
            [{"node1": ["p1.1", "p1.2"]}],
            [3],
            violations=[{"node1": 1}],
            pdbs=[pdb({"app": "foo"}, 1)],
        ),
        id="preemption with violation of same pdb",
    ),
    pytest.param(
        DryRunCase(
            ["node1"],
            [pod("p", HIGH, req=VERY_LARGE)],
            [
                pod("p1.1", MID, "node1", MEDIUM).label("app", "foo"),
                pod("p1.2", MID, "node1", MEDIUM).label("app", "foo"),
            ],
            [{"node1": ["p1.1", "p1.2"]}],
            [3],
            violations=[{"node1": 1}],
            pdbs=[pdb({"app": "foo"}, 1, disrupted=["p2"])],
        ),
        id="the victim doesn't belong to DisruptedPods",
    ),
    pytest.param(
        DryRunCase(
            ["node1"],
            [pod("p", HIGH, req=VERY_LARGE)],
            [
                pod("p1.1", MID, "node1", MEDIUM).label("app", "foo"),
                pod("p1.2", MID, "node1", MEDIUM).label("app", "foo"),
            ],
            [{"node1": ["p1.1", "p1.2"]}],
            [3],
            violations=[{"node1": 0}],
            pdbs=[pdb({"app": "foo"}, 1, disrupted=["p1.2"])],
        ),
        id="the victim belongs to DisruptedPods",
    ),
    pytest.param(
        DryRunCase(
            ["node1"],
            [pod("p", HIGH, req=VERY_LARGE)],
            [
                pod("p1.1", MID, "node1", MEDIUM).label("app", "foo"),
                pod("p1.2", MID, "node1", MEDIUM).label("app", "foo"),
                pod("p1.3", MID, "node1", MEDIUM).label("app", "foo"),
            ],
            [{"node1": ["p1.1", "p1.2", "p1.3"]}],
            [4],
            violations=[{"node1": 1}],
            pdbs=[pdb({"app": "foo"}, 1, disrupted=["p1.3"])],
        ),
        id="the victim which belongs to DisruptedPods is treated as non-violating",
    ),
    pytest.param(
        DryRunCase(
            [f"node{i}" for i in range(1, 6)],
            [pod("p", HIGH, req=LARGE)],
            [pod(f"p{i}", MID, f"node{i}", LARGE) for i in range(1, 6)],
            [{"node1": ["p1"], "node5": ["p5"]}],
            [4],
            args=Args(40, 1),
        ),
        id="all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        DryRunCase(
            [f"node{i}" for i in range(1, 6)],
            [pod("p", HIGH, req=LARGE)],
            [pod(f"p{i}", VERY_HIGH if i in (2, 5) else MID, f"node{i}", LARGE) for i in range(1, 6)],
            [{"node1": ["p1"], "node3": ["p3"]}],
            [4],
            args=Args(40, 1),
        ),
        id="some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        DryRunCase(
            [f"node{i}" for i in range(1, 6)],
            [pod("tp1", HIGH, req=LARGE), pod("tp2", HIGH, req=LARGE), pod("tp3", HIGH, req=LARGE)],
            [pod(f"p{i}", MID, f"node{i}", LARGE) for i in range(1, 6)],
            [
                {"node1": ["p1"], "node5": ["p5"]},
                {"node2": ["p2"], "node3": ["p3"]},
                {"node4": ["p4"], "node5": ["p5"]},
            ],
            [4, 4, 4],
            args=Args(40, 1),
        ),
        id="preemption offset across multiple scheduling cycles and wrap around",
    ),
    pytest.param(
        DryRunCase(
            [f"node{i}" for i in range(1, 6)],
            [pod("p", HIGH, req=LARGE)],
            [
                pod("p1", MID, "node1", LARGE).label("app", "foo"),
                pod("p2", MID, "node2", LARGE).label("app", "foo"),
                pod("p3", MID, "node3", LARGE),
                pod("p4", MID, "node4", LARGE),
                pod("p5", MID, "node5", LARGE).label("app", "foo"),
            ],
            # node5 and node1 violate the PDB (the violating list is then full), node2 too (dropped), node3 not.
            [{"node1": ["p1"], "node3": ["p3"], "node5": ["p5"]}],
            [8],
            violations=[{"node1": 1, "node3": 0, "node5": 1}],
            pdbs=[pdb({"app": "foo"}, 0)],
            args=Args(40, 2),
        ),
        id="preemption looks past numCandidates until a non-PDB violating node is found",
    ),
]


class FixedOffsets:
    """A random source whose randrange returns fixed offsets (upstream overrides getOffsetRand in tests)."""

    def __init__(self, offsets: Sequence[int]) -> None:
        self.offsets = list(offsets)

    def randrange(self, n: int) -> int:
        return self.offsets.pop(0) % n


@pytest.mark.parametrize("case", DRY_RUN_CASES)
def test_dry_run_preemption(case: DryRunCase) -> None:
    """Candidates (node -> victims, PDB violations) and Filter runs of upstream's TestDryRunPreemption."""
    fake = FakeFilter(case.fake_code, case.predicate)
    w = world(
        [node(n, **VERY_LARGE) for n in case.nodes],
        case.pods,
        case.pdbs,
        filters=[fake],
        args=case.args,
        resources_fit=case.resources_fit,
    )
    w.plugin.rng = FixedOffsets(case.offsets)  # type: ignore[assignment]
    nodes = w.nodes()
    for cycle, builder in enumerate(case.preemptors):
        p = builder.info()
        state = w.state_for(p)
        before = fake.calls
        offset, num = w.plugin.get_offset_and_num_candidates(len(nodes))
        dry = w.plugin.evaluator.dry_run_preemption(w.fwk, state, p, nodes, list(case.pdbs), offset, num)
        got = {c.node: sorted(v.name for v in c.victims) for c in dry.candidates}
        assert got == case.expected[cycle]
        assert fake.calls - before == case.filter_calls[cycle]
        if case.violations is not None:
            assert {c.node: c.pdb_violations for c in dry.candidates} == case.violations[cycle]


# --------------------------------------------------------------------------------------------- the best candidate


SELECT_CASES = [
    pytest.param(
        ["node1", "node2", "node3"],
        [pod("p1", MID, "node1", LARGE), pod("p2", MID, "node2", LARGE), pod("p3", MID, "node3", LARGE)],
        LARGE,
        {"node1", "node2", "node3"},
        id="a pod that fits on all nodes: any of them (a tie on every criterion)",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        [pod("p1", MID, "node1", LARGE), pod("p2", HIGH, "node2", LARGE), pod("p3", MID, "node3", LARGE)],
        LARGE,
        {"node1", "node3"},
        id="the node whose victim has the lowest priority",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        [
            pod("p1", MID, "node1", SMALL),
            pod("p1.1", MID, "node1", SMALL),
            pod("p2", LOW, "node2", LARGE),
            pod("p3", MID, "node3", SMALL),
            pod("p3.1", MID, "node3", SMALL),
        ],
        LARGE,
        {"node2"},
        id="a node with the lowest highest-priority victim",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        [
            pod("p1", MID, "node1", SMALL),
            pod("p1.1", LOW, "node1", SMALL),
            pod("p2", MID, "node2", SMALL),
            pod("p2.1", MID, "node2", SMALL),
            pod("p3", MID, "node3", SMALL),
            pod("p3.1", MID, "node3", SMALL),
        ],
        LARGE,
        {"node1"},
        id="the node with the smallest sum of priorities",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        [
            pod("p1", MID, "node1", SMALL).start_time("1970-01-01T00:00:02Z"),
            pod("p1.1", MID, "node1", SMALL).start_time("1970-01-01T00:00:02Z"),
            pod("p2", MID, "node2", SMALL).start_time("1970-01-01T00:00:01Z"),
            pod("p2.1", MID, "node2", SMALL).start_time("1970-01-01T00:00:01Z"),
            pod("p3", MID, "node3", SMALL).start_time("1970-01-01T00:00:03Z"),
            pod("p3.1", MID, "node3", SMALL).start_time("1970-01-01T00:00:03Z"),
        ],
        LARGE,
        {"node3"},
        id="the node whose highest-priority victims started last",
    ),
]


@pytest.mark.parametrize(("nodes", "pods", "req", "want"), SELECT_CASES)
def test_select_best_candidate(nodes: list[str], pods: list[PodBuilder], req: dict[str, str], want: set[str]) -> None:
    """pickOneNodeForPreemption's ordered tie-breakers (upstream TestSelectBestCandidate)."""
    w = world([node(n, **LARGE) for n in nodes], pods)
    p = pod("p", HIGH, req=req).info()
    state = w.state_for(p)
    dry = w.plugin.evaluator.dry_run_preemption(w.fwk, state, p, w.nodes(), [], 0, len(nodes))
    best, _ = w.plugin.evaluator.select_candidate(dry.candidates)
    assert best is not None and best.node in want


def test_pick_one_node_names_the_deciding_criterion() -> None:
    """Each tie-breaker in upstream's order decides when the earlier ones tie; a full tie takes the first."""
    v = [PodInfo(uid=f"v{i}", namespace="d", name=f"v{i}", priority=MID) for i in range(4)]
    low = PodInfo(uid="low", namespace="d", name="low", priority=LOW)
    assert pick_one_node_for_preemption([Candidate("a", [v[0]], 1), Candidate("b", [v[1]], 0)]) == (
        "b",
        "fewest PodDisruptionBudget violations",
    )
    assert pick_one_node_for_preemption([Candidate("a", [v[0]]), Candidate("b", [low])])[0] == "b"
    assert pick_one_node_for_preemption([Candidate("a", [v[0], v[1]]), Candidate("b", [v[2], low])]) == (
        "b",
        "smallest sum of victim priorities",
    )
    # Victims that have not started count as starting "now", later ones in the list later (upstream reads
    # the clock per victim): b's victim looks younger.
    assert pick_one_node_for_preemption([Candidate("a", [v[0]]), Candidate("b", [v[1]])], now_ns=0) == (
        "b",
        "latest start time of its highest-priority victims",
    )
    started = [
        PodInfo(uid=f"s{i}", namespace="d", name=f"s{i}", priority=MID, start_time="2026-01-01T00:00:00Z")
        for i in range(2)
    ]
    node, why = pick_one_node_for_preemption([Candidate("a", [started[0]]), Candidate("b", [started[1]])])
    assert (node, why) == ("a", "first of the candidates tied on every criterion")
    assert pick_one_node_for_preemption([Candidate("only", [v[0]])]) == ("only", "the only candidate")


# --------------------------------------------------------------------------------------------- eligibility

DISRUPTED = ("DisruptionTarget", "True", "PreemptionByScheduler")


@pytest.mark.parametrize(
    ("preemptor", "pods", "nominated_status", "want"),
    [
        pytest.param(
            pod("p", HIGH).preemption_policy("Never"),
            [],
            Status(U),
            (False, "not eligible due to preemptionPolicy=Never."),
            id="policy Never",
        ),
        pytest.param(pod("p", HIGH), [], Status(U), (True, ""), id="no nominated node"),
        pytest.param(
            pod("p", HIGH).nominated_node("node1"),
            [pod("p1", LOW, "node1").terminating().condition(*DISRUPTED)],
            Status(U),
            (False, "not eligible due to a terminating pod on the nominated node."),
            id="a lower-priority pod preempted by the scheduler still terminates on the nominated node",
        ),
        pytest.param(
            pod("p", HIGH).nominated_node("node1"),
            [pod("p1", LOW, "node1").terminating()],
            Status(U),
            (True, ""),
            id="a terminating pod that was not preempted by the scheduler",
        ),
        pytest.param(
            pod("p", HIGH).nominated_node("node1"),
            [pod("p1", VERY_HIGH, "node1").terminating().condition(*DISRUPTED)],
            Status(U),
            (True, ""),
            id="the terminating pod has a higher priority",
        ),
        pytest.param(
            pod("p", HIGH).nominated_node("node1"),
            [pod("p1", LOW, "node1").terminating().condition(*DISRUPTED)],
            Status(UU),
            (True, ""),
            id="the nominated node is now UnschedulableAndUnresolvable",
        ),
    ],
)
def test_pod_eligible_to_preempt_others(
    preemptor: PodBuilder, pods: list[PodBuilder], nominated_status: Status, want: tuple[bool, str]
) -> None:
    """upstream TestPodEligibleToPreemptOthers."""
    w = world([node("node1", pods="10")], pods)
    assert w.plugin.pod_eligible_to_preempt_others(preemptor.info(), nominated_status, w.scheduler.snapshot) == want


# --------------------------------------------------------------------------------------------- victims on a node


@pytest.mark.parametrize(
    ("cpu", "pods", "pdbs", "preemptor", "want", "want_violations", "want_status"),
    [
        pytest.param(
            "500m",
            [pod("p1", MID, "node1", LARGE), pod("p2", MID, "node1", SMALL)],
            [],
            pod("p", HIGH, req=LARGE),
            ["p1"],
            0,
            None,
            id="only the pod that must go goes",
        ),
        pytest.param(
            "600m",
            [pod("p1", MID, "node1", LARGE), pod("p2", MID, "node1", SMALL)],
            [],
            pod("p", HIGH, req=LARGE),
            ["p2"],
            0,
            None,
            id="the more important (older) pod is reprieved first",
        ),
        pytest.param(
            "600m",
            [pod("p1", HIGH, "node1", LARGE)],
            [],
            pod("p", MID, req=LARGE),
            [],
            0,
            unresolvable("No preemption victims found for incoming pod"),
            id="no lower-priority pod",
        ),
        pytest.param(
            "600m",
            [pod("p1", MID, "node1", LARGE).label("app", "db"), pod("p2", MID, "node1", LARGE)],
            [pdb({"app": "db"}, 0)],
            pod("p", HIGH, req=LARGE),
            ["p2"],
            0,
            None,
            id="the PDB-violating pod is reprieved first",
        ),
        pytest.param(
            "600m",
            [
                pod("p1", LOW, "node1", LARGE).label("app", "db"),
                pod("p2", MID, "node1", SMALL).label("app", "db"),
            ],
            [pdb({"app": "db"}, 0)],
            pod("p", HIGH, req=VERY_LARGE),
            ["p1"],
            1,
            None,
            id="both violate, the more important one is reprieved",
        ),
        pytest.param(
            "500m",
            [
                pod("p1", LOW, "node1", LARGE).label("app", "db"),
                pod("p2", MID, "node1", SMALL).label("app", "db"),
            ],
            [pdb({"app": "db"}, 0)],
            pod("p", HIGH, req=VERY_LARGE),
            ["p2", "p1"],
            2,
            None,
            id="both violate and go: both counted, most important first",
        ),
        pytest.param(
            "500m",
            [pod("p1", NEG, "node1", LARGE), pod("p2", LOW, "node1", LARGE)],
            [],
            pod("p", HIGH, req=LARGE),
            ["p2", "p1"],
            0,
            None,
            id="all must go, most important (highest priority) first",
        ),
        pytest.param(
            "600m",
            [
                pod("p1", LOW, "node1", LARGE).label("app", "db"),
                pod("p2", LOW, "node1", LARGE).start_time("1970-01-01T00:00:01Z"),
            ],
            [pdb({"app": "db"}, 0)],
            pod("p", HIGH, req=LARGE),
            ["p2"],
            0,
            None,
            id="violating and non-violating: the violating one is reprieved even though it is younger",
        ),
    ],
)
def test_select_victims_on_node(
    cpu: str,
    pods: list[PodBuilder],
    pdbs: list[JSON],
    preemptor: PodBuilder,
    want: list[str],
    want_violations: int,
    want_status: Status | None,
) -> None:
    """SelectVictimsOnNode: strictly lower priority, reprieve (PDB-violating first), order of the victims."""
    w = world([node("node1", cpu=cpu, memory="600")], pods, pdbs)
    p = preemptor.info()
    info = w.scheduler.snapshot.get("node1")
    assert info is not None
    copy = info.clone()
    victims, violations, status = w.plugin.select_victims_on_node(w.fwk, w.state_for(p), p, copy, pdbs)
    assert [v.name for v in victims] == want
    assert violations == want_violations
    assert status == want_status
    assert set(info.pods) == {b.info().uid for b in pods}, "the snapshot's NodeInfo is never changed"


# --------------------------------------------------------------------------------------------- PreEnqueue


async def test_pre_enqueue_holds_the_preemptor_until_its_last_victim_terminates() -> None:
    """upstream TestPreEnqueue/TestIsPodRunningPreemption: rejected while preempting, free once the last
    victim is gone or terminating."""
    w = world([node("node1", pods="2")], [pod("v1", LOW, "node1"), pod("v2", LOW, "node1")])
    p = pod("p", HIGH).info()
    assert w.plugin.pre_enqueue(p) is None
    executor = w.plugin.executor
    executor.preempting.add(p.uid)
    status = w.plugin.pre_enqueue(p)
    assert status is not None and status.code == UU
    assert status.reasons == ("waiting for the preemption for this pod to be finished",)
    executor.last_victim[p.uid] = "v2"
    assert w.plugin.pre_enqueue(p) is not None, "the last victim still runs"
    w.cluster.apply_pod(pod("v2", LOW, "node1").terminating().obj())
    assert w.plugin.pre_enqueue(p) is None, "the last victim is terminating"
    executor.last_victim[p.uid] = "gone"
    assert w.plugin.pre_enqueue(p) is None, "the last victim is gone"


# --------------------------------------------------------------------------------------------- args


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param(None, Args(10, 100), id="defaults"),
        pytest.param({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 5}, Args(0, 5), id="zero-pct"),
        pytest.param(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "DefaultPreemptionArgs",
                "minCandidateNodesAbsolute": 1,
            },
            Args(10, 1),
            id="envelope",
        ),
    ],
)
def test_parse_args(raw: dict[str, Any] | None, want: Args) -> None:
    assert parse_args(raw) == want


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"minCandidateNodesPercentage": 101},
            "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]",
            id="pct-too-big",
        ),
        pytest.param(
            {"minCandidateNodesAbsolute": -1},
            "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
            id="abs-negative",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
            "minCandidateNodesAbsolute",
            id="both-zero",
        ),
        pytest.param({"minCandidates": 1}, 'unknown field "minCandidates"', id="unknown-field"),
        pytest.param({"minCandidateNodesAbsolute": "5"}, "minCandidateNodesAbsolute", id="wrong-type"),
    ],
)
def test_parse_args_errors_name_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_args(raw)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("args", "nodes", "want"),
    [
        pytest.param(Args(10, 100), 10, 10, id="fewer nodes than the absolute minimum"),
        pytest.param(Args(10, 100), 5000, 500, id="10 percent of 5000"),
        pytest.param(Args(10, 100), 500, 100, id="absolute minimum wins"),
        pytest.param(Args(40, 1), 5, 2, id="40 percent of 5"),
        pytest.param(Args(0, 3), 5, 3, id="percentage zero"),
    ],
)
def test_calculate_num_candidates(args: Args, nodes: int, want: int) -> None:
    """upstream calculateNumCandidates: max(numNodes * pct / 100, absolute), capped at numNodes."""
    assert DefaultPreemption(args).calculate_num_candidates(nodes) == want


def test_no_victims_where_existing_anti_affinity_is_not_evaluated() -> None:
    """Fail closed: while upstream would run InterPodAffinity and pyscheduler cannot, a node holding pods with
    required anti-affinity is no candidate (evicting there could delete pods kube-scheduler would not)."""
    anti = pod("guard", LOW, "node1", LARGE).obj()
    anti["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    nodes = [node("node1", **LARGE), node("node2", **LARGE)]
    pods = [pod("plain", LOW, "node2", LARGE)]
    preemptor = pod("p", HIGH, req=LARGE).info()
    for upstream, want in ((frozenset({"InterPodAffinity"}), {"node2"}), (frozenset(), {"node1", "node2"})):
        w = world(nodes, pods, upstream_plugins=upstream)
        w.cluster.apply_pod(anti)
        w.scheduler.cache.update_snapshot(w.scheduler.snapshot)
        dry = w.plugin.evaluator.dry_run_preemption(w.fwk, w.state_for(preemptor), preemptor, w.nodes(), [], 0, 2)
        assert {c.node for c in dry.candidates} == want
        if upstream:
            assert dry.node_statuses["node1"].reasons == (
                "pyscheduler does not evaluate existing pods' required anti-affinity yet (upstream plugin "
                "InterPodAffinity)",
            )
