"""NodeResourcesBalancedAllocation: the with/without-pod balance score, best-effort Skip, args validation."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config.errors import ConfigError
from scheduler.config.plugin_args import ResourceSpec
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import NodeInfo, PodInfo, parse_pod
from scheduler.plugins import node_resources_balanced_allocation as ba
from scheduler.plugins.node_resources_balanced_allocation import Args, NodeResourcesBalancedAllocation
from scheduler.testing import PodBuilder, StaticHandle, make_node, make_pod, node_info

GPU = "nvidia.com/gpu"


def plugin(raw: dict[str, Any] | None = None) -> NodeResourcesBalancedAllocation:
    return ba.new(raw, StaticHandle())


def run_score(pl: NodeResourcesBalancedAllocation, pod: PodInfo, nodes: list[NodeInfo]) -> list[int]:
    """PreScore then Score, checking that the batch path agrees with the per-node path."""
    state = CycleState()
    assert pl.pre_score(state, pod, nodes) is None
    each = [pl.score(state, pod, n) for n in nodes]
    assert pl.score_batch(state, pod, nodes) == each
    return each


@pytest.mark.parametrize(
    ("raw", "pod", "nodes", "want"),
    [
        pytest.param(
            None,
            make_pod().req(cpu="1", memory="2000").req(cpu="2", memory="3000"),
            [
                node_info(make_node("n1").capacity(cpu="4", memory="10000")),
                node_info(make_node("n2").capacity(cpu="6", memory="10000")),
            ],
            # n1: with pod 0.75/0.5 -> std .125 -> 87, without 100 -> 50 + (50+87-100)/2 = 68
            # n2: with pod 0.5/0.5 -> 100, without 100 -> 50 + 50/2 = 75
            [68, 75],
            id="differently-sized-nodes",
        ),
        pytest.param(
            None,
            make_pod().req(cpu="1", memory="2000").req(cpu="2", memory="3000"),
            [
                node_info(make_node("n1").capacity(cpu="10", memory="20000"), make_pod("a").req(cpu="3")),
                node_info(
                    make_node("n2").capacity(cpu="10", memory="20000"),
                    make_pod("b").req(cpu="3", memory="5000"),
                ),
            ],
            # real requests, no 100m/200Mi defaults for pod "a"'s missing memory:
            # n1: with .6/.25 -> 82, without .3/0 -> 85 -> 50 + 47//2 = 73
            # n2: with .6/.5 -> 95, without .3/.25 -> 97 -> 50 + 48//2 = 74
            [73, 74],
            id="existing-pods-use-real-requests",
        ),
        pytest.param(
            None,
            make_pod().req(memory="5000"),
            [
                node_info(make_node("n1").capacity(cpu="3", memory="5000"), make_pod("a").req(cpu="3")),
                node_info(make_node("n2").capacity(cpu="3", memory="5000")),
            ],
            # n1: with 1/1 -> 100, without 1/0 -> 50 -> 50 + 100/2 = 100
            # n2: with 0/1 -> 50, without 100 -> 50 + 0 = 50
            [100, 50],
            id="reaching-min-and-max",
        ),
        pytest.param(
            None,
            make_pod().req(cpu="3"),
            [node_info(make_node("n1").capacity(cpu="6", memory="10000"), make_pod("a").req(cpu="4"))],
            # fractions cap at 1: with 1/0 -> 50, without .666/0 -> 66 -> 50 + 34//2 = 67
            [67],
            id="over-capacity-fraction-capped",
        ),
        pytest.param(
            {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]},
            make_pod().req(cpu="0", memory="0").extended(GPU, "1"),
            [
                node_info(
                    make_node("n1").capacity(cpu="3500m", memory="40000").extended(GPU, "8"),
                    make_pod("a").req(cpu="3", memory="5000").extended(GPU, "3"),
                ),
                node_info(
                    make_node("n2").capacity(cpu="3500m", memory="40000").extended(GPU, "8"),
                    make_pod("b").req(cpu="3", memory="5000"),
                ),
            ],
            # three resources: population std of (.857, .125, .5) vs (.857, .125, .375) and so on
            [75, 76],
            id="three-resources-population-std",
        ),
        pytest.param(
            {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]},
            make_pod().req(cpu="3", memory="5000"),
            [
                node_info(make_node("n1").capacity(cpu="3500m", memory="40000").extended(GPU, "8")),
                node_info(make_node("n2").capacity(cpu="3500m", memory="40000")),
            ],
            # an unrequested scalar is left out: both nodes score on cpu/memory alone
            # with .857/.125 -> std .366 -> 63, without 100 -> 50 + 13//2 = 56
            [56, 56],
            id="unrequested-scalar-left-out",
        ),
    ],
)
def test_score(raw: dict[str, Any] | None, pod: PodBuilder, nodes: list[NodeInfo], want: list[int]) -> None:
    """Scores match upstream's balancedResourceScorer (values from upstream's own test table)."""
    assert run_score(plugin(raw), pod.info(), nodes) == want


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(make_pod(), id="no-requests"),
        pytest.param(make_pod().req(cpu="0", memory="0"), id="explicit-zero"),
        pytest.param(make_pod().extended(GPU, "1"), id="only-unconfigured-resources"),
    ],
)
def test_best_effort_pod_is_skipped(pod: PodBuilder) -> None:
    """PreScore returns Skip when the pod requests none of the configured resources."""
    state = CycleState()
    status = plugin().pre_score(state, pod.info(), [])
    assert status is not None
    assert status.code == Code.SKIP
    assert plugin().score(CycleState(), pod.info(), node_info(make_node("n1"))) == 0


def test_score_without_prescore() -> None:
    """Without PreScore state, Score and the batch computes the pod's requests itself."""
    pl = plugin()
    pod = make_pod().req(cpu="3", memory="5000").info()
    nodes = [node_info(make_node("n1").capacity(cpu="4", memory="10000"))]
    assert pl.score(CycleState(), pod, nodes[0]) == 68
    assert pl.score_batch(CycleState(), pod, nodes) == [68]


def test_node_without_capacity_takes_general_path() -> None:
    """A node missing cpu or memory capacity scores through the general path, not the inlined one."""
    pl = plugin()
    pod = make_pod().req(cpu="1", memory="1000").info()
    nodes = [NodeInfo("ghost", None), node_info(make_node("n1").capacity(cpu="0", memory="2000"))]
    # ghost: nothing to compare -> 50 + 50/2 = 75; n1: memory alone -> one fraction, std 0 -> 75
    assert run_score(pl, pod, nodes) == [75, 75]


def test_default_args() -> None:
    """No args means cpu and memory with weight 1; weight 0 is defaulted to 1."""
    assert ba.parse_args(None) == Args((ResourceSpec("cpu", 1), ResourceSpec("memory", 1)))
    assert ba.parse_args({"resources": [{"name": GPU, "weight": 0}]}) == Args((ResourceSpec(GPU, 1),))


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"resources": [{"name": "cpu"}, {"name": "cpu"}]},
            'resources[1].name: Duplicate value: "cpu"',
            id="duplicate",
        ),
        pytest.param(
            {"resources": [{"name": "cpu", "weight": 2}]},
            "resources[0].weight: Invalid value: 2: must be 1",
            id="weight-not-one",
        ),
        pytest.param(
            {"resources": [{"name": "cpu", "weight": 2}, {"name": "cpu"}]},
            '[resources[0].weight: Invalid value: 2: must be 1, resources[1].name: Duplicate value: "cpu"]',
            id="aggregated",
        ),
        pytest.param({"shape": []}, 'unknown field "shape"', id="unknown-field"),
        pytest.param(
            {"resources": [{"name": 1}]},
            "resources[0].name: must be a string, got integer 1",
            id="name-must-be-a-string",
        ),
    ],
)
def test_invalid_args(raw: dict[str, Any], message: str) -> None:
    """Invalid args raise ConfigError with upstream's field-error text naming the field."""
    with pytest.raises(ConfigError) as err:
        plugin(raw)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("requested", "allocatable", "want"),
    [
        pytest.param([1, 1], [2, 2], 100, id="equal-fractions"),
        pytest.param([1, 0], [1, 1], 50, id="opposite-fractions"),
        pytest.param([1], [4], 100, id="single-resource-no-spread"),
        pytest.param([0, 5], [0, 10], 100, id="zero-capacity-skipped"),
        pytest.param([3, 0, 0], [3, 3, 3], 52, id="population-std-of-three"),
    ],
)
def test_balanced_resource_score(requested: list[int], allocatable: list[int], want: int) -> None:
    """int((1 - std) * 100): |f1 - f2| / 2 for two resources, population std for more."""
    assert ba.balanced_resource_score(requested, allocatable) == want


def test_balanced_allocation_uses_pod_level_requests() -> None:
    """BalancedAllocation's scorer has the PodLevelResources gate: pod-level requests replace the containers'."""
    obj = make_pod().req(cpu="1", memory="1000").obj()
    obj["spec"]["resources"] = {"requests": {"cpu": "2", "memory": "1000"}}
    pod = parse_pod(obj)
    node = node_info(make_node("n1").capacity(cpu="4", memory="4000"))
    pl = ba.new(None, StaticHandle())
    state = CycleState()
    assert pl.pre_score(state, pod, [node]) is None
    # with the pod: cpu 2/4 = 0.5, memory 1000/4000 = 0.25 -> std 0.125 -> 87; without: 100 -> 50 + (50 + 87 - 100) // 2
    assert pl.score(state, pod, node) == 50 + (50 + 87 - 100) // 2
