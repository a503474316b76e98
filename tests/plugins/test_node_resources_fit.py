"""NodeResourcesFit: filter reasons and codes, scoring strategies' integer math, args validation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.config.errors import ConfigError
from scheduler.config.plugin_args import DEFAULT_RESOURCES, ResourceSpec, UtilizationShapePoint
from scheduler.framework.interface import ASSIGNED_POD, NODE, ActionType, ClusterEvent, CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo, parse_pod
from scheduler.plugins import node_resources_fit as fit
from scheduler.plugins.node_resources_fit import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REASON_INSUFFICIENT_CPU,
    REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
    REASON_INSUFFICIENT_MEMORY,
    REASON_TOO_MANY_PODS,
    REQUESTED_TO_CAPACITY_RATIO,
    Args,
    NodeResourcesFit,
    ScoringStrategy,
)
from scheduler.testing import PodBuilder, StaticHandle, make_node, make_pod, node_info

GPU = "nvidia.com/gpu"
FOO = "example.com/foo"
MI = 1024 * 1024


def plugin(raw: Mapping[str, Any] | None = None) -> NodeResourcesFit:
    return fit.new(raw, StaticHandle())


def run_filter(pl: NodeResourcesFit, pod: PodInfo, node: NodeInfo) -> Status | None:
    """PreFilter then Filter, checking that the batch path agrees with the per-node path."""
    state = CycleState()
    result, status = pl.pre_filter(state, pod, [node])
    assert (result, status) == (None, None)
    one = pl.filter(state, pod, node)
    assert pl.filter_batch(state, pod, [node]) == [one]
    return one


def run_score(pl: NodeResourcesFit, pod: PodInfo, nodes: list[NodeInfo]) -> list[int]:
    """PreScore then Score, checking that the batch path agrees with the per-node path."""
    state = CycleState()
    assert pl.pre_score(state, pod, nodes) is None
    each = [pl.score(state, pod, n) for n in nodes]
    assert pl.score_batch(state, pod, nodes) == each
    return each


# ---------------------------------------------------------------------------------------------------------
# Filter

SMALL = make_node("n1").capacity(cpu="2", memory="4Gi", pods="3")


@pytest.mark.parametrize(
    ("pod", "node", "want_code", "want_reasons"),
    [
        pytest.param(make_pod().req(cpu="1", memory="1Gi"), node_info(SMALL), None, (), id="fits"),
        pytest.param(
            make_pod().req(cpu="1", memory="1Gi"),
            node_info(SMALL, make_pod("a").req(cpu="1", memory="3Gi")),
            None,
            (),
            id="fits-exactly-at-capacity",
        ),
        pytest.param(
            make_pod(),
            node_info(SMALL, make_pod("a"), make_pod("b"), make_pod("c")),
            Code.UNSCHEDULABLE,
            (REASON_TOO_MANY_PODS,),
            id="zero-request-pod-still-hits-pod-limit",
        ),
        pytest.param(
            make_pod(),
            node_info(SMALL, make_pod("a").req(cpu="2", memory="4Gi")),
            None,
            (),
            id="zero-request-pod-fits-a-full-node",
        ),
        pytest.param(
            make_pod().req(cpu="1500m"),
            node_info(SMALL, make_pod("a").req(cpu="1")),
            Code.UNSCHEDULABLE,
            (REASON_INSUFFICIENT_CPU,),
            id="cpu-used-by-others",
        ),
        pytest.param(
            make_pod().req(cpu="3"),
            node_info(SMALL),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            (REASON_INSUFFICIENT_CPU,),
            id="cpu-larger-than-node-is-unresolvable",
        ),
        pytest.param(
            make_pod().req(cpu="1", memory="2Gi"),
            node_info(SMALL, make_pod("a").req(cpu="1500m", memory="3Gi")),
            Code.UNSCHEDULABLE,
            (REASON_INSUFFICIENT_CPU, REASON_INSUFFICIENT_MEMORY),
            id="cpu-and-memory-both-reported-in-order",
        ),
        pytest.param(
            make_pod().req(cpu="1", memory="2Gi", **{"ephemeral-storage": "2Gi"}).extended(FOO, "1"),
            node_info(
                make_node("n1")
                .capacity(cpu="2", memory="4Gi", pods="1", **{"ephemeral-storage": "3Gi"})
                .extended(FOO, "1"),
                make_pod("a")
                .req(cpu="1500m", memory="3Gi", **{"ephemeral-storage": "2Gi"})
                .extended(FOO, "1"),
            ),
            Code.UNSCHEDULABLE,
            (
                REASON_TOO_MANY_PODS,
                REASON_INSUFFICIENT_CPU,
                REASON_INSUFFICIENT_MEMORY,
                REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
                "Insufficient " + FOO,
            ),
            id="every-reason-in-upstream-order",
        ),
        pytest.param(
            make_pod().req(cpu="100m").extended(GPU, "2").extended(FOO, "1"),
            node_info(make_node("n1").extended(GPU, "1")),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("Insufficient " + FOO, "Insufficient " + GPU),
            id="scalars-sorted-by-name-and-missing-scalar-is-unresolvable",
        ),
        pytest.param(
            make_pod().req(cpu="100m").extended(GPU, "1"),
            node_info(make_node("n1").extended(GPU, "2"), make_pod("a").req().extended(GPU, "2")),
            Code.UNSCHEDULABLE,
            ("Insufficient " + GPU,),
            id="scalar-used-by-others",
        ),
        pytest.param(
            make_pod().req(cpu="100m").extended(GPU, "0"),
            node_info(make_node("n1")),
            None,
            (),
            id="zero-scalar-request-is-not-checked",
        ),
        pytest.param(
            make_pod().req(cpu="100m", **{"hugepages-2Mi": "4Mi"}),
            node_info(make_node("n1").capacity(**{"hugepages-2Mi": "2Mi"})),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("Insufficient hugepages-2Mi",),
            id="hugepages-are-scalars",
        ),
        pytest.param(
            make_pod().req(cpu="1").init_container({"cpu": "2500m"}),
            node_info(SMALL),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            (REASON_INSUFFICIENT_CPU,),
            id="init-container-larger-than-containers-sets-the-request",
        ),
        pytest.param(
            make_pod().req(cpu="1500m").init_container({"cpu": "1"}),
            node_info(SMALL),
            None,
            (),
            id="init-container-smaller-than-containers-is-ignored",
        ),
        pytest.param(
            make_pod().req(cpu="1500m").init_container({"cpu": "600m"}, restart_policy="Always"),
            node_info(SMALL),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            (REASON_INSUFFICIENT_CPU,),
            id="sidecar-init-container-adds-to-containers",
        ),
        pytest.param(
            make_pod()
            .req(cpu="500m")
            .init_container({"cpu": "1"}, restart_policy="Always")
            .init_container({"cpu": "1200m"}),
            node_info(SMALL),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            (REASON_INSUFFICIENT_CPU,),
            id="init-after-sidecar-runs-beside-it",
        ),
        pytest.param(
            make_pod().req(cpu="1800m").overhead(cpu="250m"),
            node_info(SMALL),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            (REASON_INSUFFICIENT_CPU,),
            id="overhead-counts",
        ),
        pytest.param(
            make_pod().container(limits={"memory": "5Gi"}),
            node_info(SMALL),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            (REASON_INSUFFICIENT_MEMORY,),
            id="limit-without-request-is-the-request",
        ),
        pytest.param(
            make_pod().req(cpu="100m"),
            node_info(SMALL, make_pod("a").req(cpu="2", memory="4Gi")),
            Code.UNSCHEDULABLE,
            (REASON_INSUFFICIENT_CPU,),
            id="only-requested-resources-are-checked",
        ),
    ],
)
def test_filter(
    pod: PodBuilder, node: NodeInfo, want_code: Code | None, want_reasons: tuple[str, ...]
) -> None:
    """Filter reports every failing resource, in upstream's order, with the code preemption relies on."""
    status = run_filter(plugin(), pod.info(), node)
    if want_code is None:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons, status.plugin) == (want_code, want_reasons, "NodeResourcesFit")


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param({}, ("Insufficient example.com/foo", "Insufficient other.io/bar"), id="nothing-ignored"),
        pytest.param({"ignoredResources": [FOO]}, ("Insufficient other.io/bar",), id="ignored-resource"),
        pytest.param({"ignoredResourceGroups": ["other.io"]}, ("Insufficient example.com/foo",), id="group"),
        pytest.param(
            {"ignoredResources": [FOO], "ignoredResourceGroups": ["other.io"]}, None, id="both-ignored"
        ),
        pytest.param(
            {"ignoredResourceGroups": ["example"]},
            ("Insufficient example.com/foo", "Insufficient other.io/bar"),
            id="group-is-exact",
        ),
    ],
)
def test_ignored_extended_resources(raw: dict[str, Any], want: tuple[str, ...] | None) -> None:
    """ignoredResources / ignoredResourceGroups drop extended resources from the check."""
    pod = make_pod().req(cpu="100m").extended(FOO, "1").extended("other.io/bar", "1").info()
    status = run_filter(plugin(raw), pod, node_info(make_node("n1")))
    assert (status.reasons if status else None) == want


def test_ignored_groups_do_not_apply_to_native_scalars() -> None:
    """hugepages-* and *kubernetes.io/* names are not extended resources, so they cannot be ignored."""
    pod = make_pod().req(cpu="100m", **{"hugepages-2Mi": "2Mi"}).extended("kubernetes.io/foo", "1").info()
    pl = plugin({"ignoredResources": ["hugepages-2Mi"], "ignoredResourceGroups": ["kubernetes.io"]})
    status = run_filter(pl, pod, node_info(make_node("n1")))
    assert status is not None
    assert status.reasons == ("Insufficient hugepages-2Mi", "Insufficient kubernetes.io/foo")


def test_filter_without_prefilter_state_is_an_error() -> None:
    """Filter without PreFilter fails the cycle with upstream's cycle-state message."""
    pl = plugin()
    pod = make_pod().info()
    node = node_info(SMALL)
    for status in (pl.filter(CycleState(), pod, node), *pl.filter_batch(CycleState(), pod, [node])):
        assert status is not None
        assert status.code == Code.ERROR
        assert status.reasons == ('error reading "PreFilterNodeResourcesFit" from cycleState: not found',)


def test_filter_batch_matches_filter_over_mixed_nodes() -> None:
    """The fast batch loop returns, node by node, exactly what Filter returns."""
    nodes = [
        node_info(SMALL),
        node_info(SMALL, make_pod("a").req(cpu="1500m")),
        node_info(
            make_node("big").capacity(cpu="64", memory="256Gi", pods="2"), make_pod("b"), make_pod("c")
        ),
        node_info(make_node("gpu").capacity(cpu="8").extended(GPU, "1")),
        node_info(
            make_node("gpu-used").capacity(cpu="8").extended(GPU, "1"), make_pod("d").req().extended(GPU, "1")
        ),
    ]
    pl = plugin()
    for pod in (make_pod().req(cpu="1"), make_pod().req(cpu="1").extended(GPU, "1"), make_pod()):
        info = pod.info()
        state = CycleState()
        pl.pre_filter(state, info, nodes)
        assert pl.filter_batch(state, info, nodes) == [pl.filter(state, info, n) for n in nodes]


def test_events_to_register() -> None:
    """Freed capacity (pod deleted or scaled down) or a new/grown node can make the pod fit."""
    events = plugin().events_to_register()
    assert ClusterEvent(ASSIGNED_POD, ActionType.DELETE) in events
    assert ClusterEvent(ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN) in events
    node_event = ClusterEvent(NODE, ActionType.UPDATE_NODE_ALLOCATABLE)
    assert any(node_event.matches(e) for e in events)
    assert any(ClusterEvent(NODE, ActionType.ADD).matches(e) for e in events)
    assert not any(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL).matches(e) for e in events)


# ---------------------------------------------------------------------------------------------------------
# Scoring

N_4C_10K = make_node("n1").capacity(cpu="4", memory="10000")
N_6C_10K = make_node("n2").capacity(cpu="6", memory="10000")


@pytest.mark.parametrize(
    ("strategy", "pod", "nodes", "want"),
    [
        pytest.param(
            {},
            make_pod().req(cpu="1", memory="2000"),
            [node_info(N_4C_10K, make_pod("a").req(cpu="1", memory="3000")), node_info(N_6C_10K)],
            # n1: cpu (4000-2000)*100/4000=50, mem (10000-5000)*100/10000=50 -> 50
            # n2: cpu (6000-1000)*100/6000=83, mem (10000-2000)*100/10000=80 -> 163/2=81
            [50, 81],
            id="least-allocated-default",
        ),
        pytest.param(
            {},
            make_pod(),
            [node_info(make_node("n1").capacity(cpu="1", memory="1Gi"))],
            # non-zero defaults 100m/200Mi: cpu 900*100/1000=90, mem 824Mi*100/1024Mi=80 -> 85
            [85],
            id="least-allocated-uses-non-zero-defaults",
        ),
        pytest.param(
            {},
            make_pod().req(cpu="1", memory="1000"),
            [node_info(N_4C_10K, make_pod("a"))],
            # existing best-effort pod counts 100m / 200Mi: cpu (4000-1100)*100/4000=72, mem over -> 0 -> 36
            [36],
            id="least-allocated-node-non-zero-and-over-capacity",
        ),
        pytest.param(
            {"resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]},
            make_pod().req(cpu="1", memory="6000"),
            [node_info(N_4C_10K)],
            # cpu 75*3 + mem 40*1 = 265 / 4 = 66
            [66],
            id="least-allocated-weights",
        ),
        pytest.param(
            {"resources": [{"name": "cpu", "weight": 0}, {"name": "memory"}]},
            make_pod().req(cpu="1", memory="6000"),
            [node_info(N_4C_10K)],
            # weight 0 and missing weight both mean 1: (75 + 40) / 2 = 57
            [57],
            id="weight-zero-means-one",
        ),
        pytest.param(
            {"resources": [{"name": "cpu", "weight": 1}, {"name": FOO, "weight": 5}]},
            make_pod().req(cpu="1", memory="6000"),
            [node_info(N_4C_10K.extended(FOO, "4"))],
            # the pod does not request foo: skipped, so only cpu counts -> 75
            [75],
            id="unrequested-scalar-is-skipped",
        ),
        pytest.param(
            {"resources": [{"name": "cpu", "weight": 1}, {"name": FOO, "weight": 3}]},
            make_pod().req(cpu="1", memory="6000").extended(FOO, "1"),
            [
                node_info(
                    make_node("n1").capacity(cpu="4", memory="10000").extended(FOO, "4"),
                    make_pod("a").req().extended(FOO, "1"),
                ),
                node_info(make_node("n2").capacity(cpu="4", memory="10000")),
            ],
            # n1: pod "a" counts 100m non-zero cpu: cpu (4000-1100)*100/4000=72, foo (4-2)*100/4=50
            #     -> (72*1 + 50*3) / 4 = 55; n2 has no foo: skipped -> cpu alone 75
            [55, 75],
            id="requested-scalar-scored-where-present",
        ),
        pytest.param(
            {"resources": [{"name": "cpu", "weight": 1}, {"name": "ephemeral-storage", "weight": 1}]},
            make_pod().req(cpu="3"),
            [
                node_info(make_node("n1").capacity(cpu="4", **{"ephemeral-storage": "100Gi"})),
                node_info(make_node("n2").capacity(cpu="4")),
            ],
            # ephemeral storage is not a scalar: scored even unrequested when the node has it
            # n1: (25 + 100) / 2 = 62; n2: no storage -> 25
            [62, 25],
            id="ephemeral-storage-counts-without-request",
        ),
        pytest.param(
            {"type": MOST_ALLOCATED},
            make_pod().req(cpu="1", memory="2000"),
            [node_info(N_4C_10K, make_pod("a").req(cpu="1", memory="3000")), node_info(N_6C_10K)],
            # n1: cpu 2000*100/4000=50, mem 5000*100/10000=50 -> 50
            # n2: cpu 1000*100/6000=16, mem 2000*100/10000=20 -> 36/2=18
            [50, 18],
            id="most-allocated",
        ),
        pytest.param(
            {
                "type": MOST_ALLOCATED,
                "resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
            },
            make_pod().req(cpu="5", memory="1000"),
            [node_info(N_4C_10K)],
            # over capacity caps at 100: (100*2 + 10*1) / 3 = 70
            [70],
            id="most-allocated-capped-and-weighted",
        ),
        pytest.param(
            {
                "type": REQUESTED_TO_CAPACITY_RATIO,
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                },
            },
            make_pod().req(cpu="1", memory="2000"),
            [node_info(N_4C_10K)],
            # cpu 25% -> 25, mem 20% -> 20; round(45/2 = 22.5) rounds half away from zero -> 23
            [23],
            id="rtc-linear-rounds-half-up",
        ),
        pytest.param(
            {
                "type": REQUESTED_TO_CAPACITY_RATIO,
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 10}, {"utilization": 30, "score": 0}]
                },
            },
            make_pod().req(cpu="1", memory="2000"),
            [node_info(N_4C_10K)],
            # cpu: 100 + trunc(-100*25/30 = -83.3) = 17; mem: 100 + trunc(-100*20/30 = -66.7) = 34
            # round(51/2 = 25.5) = 26 (flooring division would give 16 and 33)
            [26],
            id="rtc-decreasing-shape-truncates-toward-zero",
        ),
        pytest.param(
            {
                "type": REQUESTED_TO_CAPACITY_RATIO,
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 10}, {"utilization": 30, "score": 0}]
                },
            },
            make_pod().req(cpu="1", memory="5000"),
            [node_info(N_4C_10K)],
            # mem 50% is past the last point -> 0, which leaves the weight sum too: cpu alone -> 17
            [17],
            id="rtc-zero-scores-leave-the-weight-sum",
        ),
        pytest.param(
            {
                "type": REQUESTED_TO_CAPACITY_RATIO,
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 20, "score": 2}, {"utilization": 60, "score": 8}]
                },
            },
            make_pod().req(cpu="200m", memory="12000"),
            [node_info(N_4C_10K)],
            # cpu 5% is below the first point -> 20; mem over capacity -> f(100) = 80; round(100/2) = 50
            [50],
            id="rtc-below-first-point-and-over-capacity",
        ),
    ],
)
def test_score(strategy: dict[str, Any], pod: PodBuilder, nodes: list[NodeInfo], want: list[int]) -> None:
    """Each scoring strategy reproduces upstream's integer arithmetic (hand-computed in the comments)."""
    pl = plugin({"scoringStrategy": {"type": LEAST_ALLOCATED, **strategy}})
    assert run_score(pl, pod.info(), nodes) == want


def test_score_without_prescore_computes_the_request() -> None:
    """Score falls back to computing the pod's request when PreScore did not run, like upstream."""
    pl = plugin()
    node = node_info(N_4C_10K)
    pod = make_pod().req(cpu="1", memory="2000").info()
    assert pl.score(CycleState(), pod, node) == 77  # (75 + 80) / 2
    assert pl.score_batch(CycleState(), pod, [node]) == [77]


def test_score_ignores_pod_level_requests() -> None:
    """Fit scores the containers' requests even when the pod sets pod-level ones: upstream builds Fit's scorer
    without the PodLevelResources gate (found by the differential fuzz against kube-scheduler v1.37.2)."""
    builder = make_pod().req(cpu="1", memory="2000")
    obj = builder.obj()
    obj["spec"]["resources"] = {"requests": {"cpu": "3", "memory": "6000"}}
    with_pod_level = parse_pod(obj)
    assert with_pod_level.requests.milli_cpu == 3000  # what the Filter checks
    assert run_score(plugin(), with_pod_level, [node_info(N_4C_10K)]) == [77]  # as without pod-level requests


def test_score_node_without_capacity_scores_zero() -> None:
    """A node advertising none of the scored resources has an empty weight sum and scores 0."""
    pl = plugin()
    info = NodeInfo("ghost", None)
    assert run_score(pl, make_pod().req(cpu="1").info(), [info]) == [0]


def test_duplicate_resources_take_the_general_path() -> None:
    """Listing cpu twice double-weights it; the batch path must not collapse the duplicates."""
    pl = plugin(
        {
            "scoringStrategy": {
                "type": LEAST_ALLOCATED,
                "resources": [{"name": "cpu"}, {"name": "cpu"}, {"name": "memory"}],
            }
        }
    )
    # cpu 75 twice + mem 80 -> 230 / 3 = 76
    assert run_score(pl, make_pod().req(cpu="1", memory="2000").info(), [node_info(N_4C_10K)]) == [76]


# ---------------------------------------------------------------------------------------------------------
# Args


def test_default_args() -> None:
    """No args means LeastAllocated over cpu and memory with weight 1, nothing ignored."""
    assert fit.parse_args(None) == Args((), (), ScoringStrategy(LEAST_ALLOCATED, DEFAULT_RESOURCES, None))
    assert (
        fit.parse_args({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeResourcesFitArgs"})
        == Args()
    )


def test_parse_full_args() -> None:
    """Every field is decoded into the typed Args."""
    args = fit.parse_args(
        {
            "ignoredResources": [FOO],
            "ignoredResourceGroups": ["example.org"],
            "scoringStrategy": {
                "type": REQUESTED_TO_CAPACITY_RATIO,
                "resources": [{"name": "cpu", "weight": 2}, {"name": GPU, "weight": 7}],
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                },
            },
        }
    )
    assert args == Args(
        (FOO,),
        ("example.org",),
        ScoringStrategy(
            REQUESTED_TO_CAPACITY_RATIO,
            (ResourceSpec("cpu", 2), ResourceSpec(GPU, 7)),
            (UtilizationShapePoint(0, 0), UtilizationShapePoint(100, 10)),
        ),
    )


LABEL_KEY_REGEX = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"scoringStrategy": {"type": "Foo"}},
            'scoringStrategy.type: Unsupported value: "Foo": supported values: "LeastAllocated", '
            '"MostAllocated", "RequestedToCapacityRatio"',
            id="unknown-strategy",
        ),
        pytest.param(
            {"scoringStrategy": {}},
            'scoringStrategy.type: Unsupported value: "": supported values: "LeastAllocated", '
            '"MostAllocated", "RequestedToCapacityRatio"',
            id="explicit-strategy-needs-a-type",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}},
            "scoringStrategy.resources[0].weight: Invalid value: 101: "
            "resource weight of cpu not in valid range (0, 100]",
            id="weight-too-large",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "memory", "weight": -1}]}},
            "scoringStrategy.resources[0].weight: Invalid value: -1: resource weight of memory not in valid "
            "range (0, 100]",
            id="weight-negative",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is "
            "RequestedToCapacityRatio",
            id="rtc-needs-shape-block",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": []},
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape: Required value: "
            + "at least one point must be specified",
            id="rtc-empty-shape",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]
                    },
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: "
            "Invalid value: 50: values must be sorted in increasing order",
            id="rtc-utilization-not-increasing",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 101, "score": 11}]},
                }
            },
            "[scoringStrategy.requestedToCapacityRatio.shape[0].utilization: "
            "Invalid value: 101: not in valid range [0, 100], "
            "scoringStrategy.requestedToCapacityRatio.shape[0].score: "
            "Invalid value: 11: not in valid range [0, 10]]",
            id="rtc-out-of-range-aggregated",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}]},
                }
            },
            "scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not "
            "RequestedToCapacityRatio",
            id="shape-forbidden-for-other-types",
        ),
        pytest.param(
            {"ignoredResourceGroups": ["example.com/foo"]},
            'ignoredResourceGroups[0]: Invalid value: "example.com/foo": '
            + "resource group name can't contain '/'",
            id="group-with-slash",
        ),
        pytest.param(
            {"ignoredResources": ["bad_name_"]},
            f'ignoredResources[0]: Invalid value: "bad_name_": {LABEL_KEY_REGEX}',
            id="ignored-resource-not-a-label-key",
        ),
        pytest.param(
            {"ignoredResources": ["a/b/c"]},
            'ignoredResources[0]: Invalid value: "a/b/c": a valid label key must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
            "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')",
            id="ignored-resource-two-slashes",
        ),
        pytest.param(
            {"ignoredResources": ["/gpu"]},
            'ignoredResources[0]: Invalid value: "/gpu": prefix part must be non-empty',
            id="ignored-resource-empty-prefix",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "Foo", "resources": [{"name": "cpu", "weight": 200}]}},
            '[scoringStrategy.type: Unsupported value: "Foo": supported values: "LeastAllocated", '
            '"MostAllocated", "RequestedToCapacityRatio", '
            "scoringStrategy.resources[0].weight: Invalid value: 200: "
            "resource weight of cpu not in valid range (0, 100]]",
            id="several-errors-aggregate-in-brackets",
        ),
        pytest.param({"foo": 1}, 'unknown field "foo"', id="unknown-top-level-field"),
        pytest.param(
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "wieght": 2}]}},
            'scoringStrategy.resources[0]: unknown field "wieght"',
            id="unknown-nested-field",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": "2"}]}},
            'scoringStrategy.resources[0].weight: must be an integer, got string "2"',
            id="weight-must-be-an-integer",
        ),
        pytest.param(
            {"ignoredResources": "example.com/foo"},
            "ignoredResources: must be a list, got string",
            id="ignored-resources-must-be-a-list",
        ),
        pytest.param(
            {"kind": "NodeAffinityArgs"},
            'kind: want args to be of type NodeResourcesFitArgs, got "NodeAffinityArgs"',
            id="wrong-args-kind",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 2**31, "score": 1}]},
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape[0].utilization: out of range, got 2147483648",
            id="utilization-is-int32",
        ),
        pytest.param(
            {"scoringStrategy": ["LeastAllocated"]},
            "scoringStrategy: must be a mapping, got list",
            id="strategy-must-be-a-mapping",
        ),
    ],
)
def test_invalid_args(raw: dict[str, Any], message: str) -> None:
    """Invalid args raise ConfigError with upstream's field-error text naming the field."""
    with pytest.raises(ConfigError) as err:
        fit.new(raw, StaticHandle())
    assert str(err.value) == message


def test_error_path_prefix() -> None:
    """The config loader can prefix the field path with where the args sit in the file."""
    with pytest.raises(
        ConfigError, match=r"^profiles\[0\]\.pluginConfig\[1\]\.args\.scoringStrategy\.type: "
    ):
        fit.parse_args({"scoringStrategy": {"type": "X"}}, path="profiles[0].pluginConfig[1].args")


@pytest.mark.parametrize(
    ("name", "extended"),
    [
        pytest.param("example.com/foo", True, id="domain-prefixed"),
        pytest.param("nvidia.com/gpu", True, id="gpu"),
        pytest.param("cpu", False, id="native"),
        pytest.param("hugepages-2Mi", False, id="hugepages"),
        pytest.param("kubernetes.io/foo", False, id="kubernetes-io-prefix"),
        pytest.param("requests.example.com/foo", False, id="quota-prefix"),
        pytest.param("Example.com/foo", False, id="uppercase-prefix-invalid"),
    ],
)
def test_is_extended_resource_name(name: str, extended: bool) -> None:
    """Only extended resources can be ignored, exactly as v1helper.IsExtendedResourceName decides."""
    assert fit.is_extended_resource_name(name) is extended


@pytest.mark.parametrize(
    ("num", "den", "want"),
    [
        pytest.param(45, 2, 23, id="half-rounds-up"),
        pytest.param(44, 2, 22, id="exact"),
        pytest.param(100, 3, 33, id="below-half"),
        pytest.param(200, 3, 67, id="above-half"),
        pytest.param(5, 2, 3, id="odd-half-not-bankers"),
    ],
)
def test_round_half_away(num: int, den: int, want: int) -> None:
    """math.Round semantics: halves round away from zero (Python's round() would give 22 and 2)."""
    assert fit.round_half_away(num, den) == want
