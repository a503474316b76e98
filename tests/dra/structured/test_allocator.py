"""The allocator on shapes the upstream table does not spell out, or that are ours (malformed input, caches,
the trace, deadlines); upstream's own table is test_allocator_upstream_table.py."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from scheduler import caching
from scheduler.dra.structured import (
    DEFAULT_FEATURES,
    AllocatedState,
    AllocationError,
    AllocationTimeout,
    AllocationTrace,
    FailedAllocationOnNode,
    Features,
    new_allocator,
    node_matches,
)
from scheduler.dra.structured import trace as reasons
from tests.dra.structured.dra_objects import (
    DRIVER_IS_GPU,
    Classes,
    FakeCel,
    Node,
    attrs,
    claim,
    device,
    device_class,
    first_available,
    request,
    resource_slice,
    use_fake_cel,
)

GPU = device_class("gpu", DRIVER_IS_GPU)
BIG = 'device.attributes["gpu.example.com"].memory >= 40'


def cel() -> FakeCel:
    return FakeCel(
        {
            DRIVER_IS_GPU: lambda d: d["driver"] == "gpu.example.com",
            BIG: lambda d: d["attributes"]["memory"]["int"] >= 40,
        }
    )


@pytest.fixture(autouse=True)
def fake_cel(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_cel(monkeypatch)


def allocate(
    slices: Sequence[Mapping[str, Any]],
    claims: Sequence[Mapping[str, Any]],
    *,
    node: Node | None = None,
    allocated: AllocatedState | None = None,
    classes: Classes | None = None,
    features: Features = DEFAULT_FEATURES,
    trace: AllocationTrace | None = None,
    fake: FakeCel | None = None,
) -> list[dict[str, Any]] | None:
    allocator = new_allocator(features, allocated or AllocatedState(), classes or Classes(GPU), slices, fake or cel())
    return allocator.allocate(node or Node(), claims, trace)


def picked(results: list[dict[str, Any]] | None) -> list[list[str]] | None:
    """Per claim, "request=pool/device" for each device."""
    if results is None:
        return None
    return [[f"{d['request']}={d['pool']}/{d['device']}" for d in r["devices"].get("results", [])] for r in results]


NODE1 = resource_slice("node-1-gpus", device("gpu-0"), device("gpu-1"))
NODE2 = resource_slice("node-2-gpus", device("gpu-0"), node="node-2")


@pytest.mark.parametrize(
    ("slices", "claims", "allocated", "want"),
    [
        pytest.param([NODE1, NODE2], [claim("c", request("r"))], None, [["r=node-1/gpu-0"]], id="first-device"),
        pytest.param([NODE2], [claim("c", request("r"))], None, None, id="only-another-nodes-slice"),
        pytest.param(
            [NODE1],
            [claim("c", request("r"))],
            AllocatedState(allocated_devices={("gpu.example.com", "node-1", "gpu-0")}),
            [["r=node-1/gpu-1"]],
            id="skips-allocated-device",
        ),
        pytest.param(
            [NODE1],
            [claim("a", request("r")), claim("b", request("r")), claim("c", request("r"))],
            None,
            None,
            id="three-claims-two-devices",
        ),
        pytest.param(
            [NODE1], [claim("c", request("r", mode="All"))], None, [["r=node-1/gpu-0", "r=node-1/gpu-1"]], id="all"
        ),
        pytest.param(
            [NODE1],
            [claim("c", request("r", mode="All"))],
            AllocatedState(allocated_devices={("gpu.example.com", "node-1", "gpu-1")}),
            None,
            id="all-with-one-allocated",
        ),
        pytest.param(
            [
                resource_slice("b", device("gpu-0"), pool="pool-b"),
                resource_slice("a", device("gpu-0"), pool="pool-a"),
            ],
            [claim("c", request("r"))],
            None,
            [["r=pool-a/gpu-0"]],
            id="pools-in-name-order",
        ),
        pytest.param(
            [
                resource_slice("s-2", device("gpu-2"), pool="p", count=2),
                resource_slice("s-1", device("gpu-1"), pool="p", count=2),
            ],
            [claim("c", request("r"))],
            None,
            [["r=p/gpu-1"]],
            id="slices-in-name-order",
        ),
        pytest.param(
            [resource_slice("s-1", device("gpu-1"), pool="p", count=2)],
            [claim("c", request("r"))],
            None,
            None,
            id="incomplete-pool",
        ),
        pytest.param(
            [
                resource_slice("old", device("gpu-old"), pool="p", generation=1),
                resource_slice("new", device("gpu-new"), pool="p", generation=2),
            ],
            [claim("c", request("r"))],
            None,
            [["r=p/gpu-new"]],
            id="newer-generation-wins",
        ),
        pytest.param(
            [
                resource_slice(
                    "gpus",
                    device("small", attributes=attrs(memory=16)),
                    device("big", attributes=attrs(memory=80)),
                )
            ],
            [claim("c", request("r", "gpu", 1, BIG))],
            None,
            [["r=node-1/big"]],
            id="request-selector",
        ),
        pytest.param(
            [resource_slice("gpus", device("gpu-0", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]))],
            [claim("c", request("r"))],
            None,
            None,
            id="untolerated-taint",
        ),
        pytest.param(
            [resource_slice("gpus", device("gpu-0", taints=[{"key": "k", "value": "v", "effect": "None"}]))],
            [claim("c", request("r"))],
            None,
            [["r=node-1/gpu-0"]],
            id="taint-effect-none-is-ignored",
        ),
        pytest.param(
            [resource_slice("gpus", device("gpu-0", taints=[{"key": "k", "value": "v", "effect": "NoExecute"}]))],
            [claim("c", request("r", tolerations=[{"key": "k", "operator": "Exists"}]))],
            None,
            [["r=node-1/gpu-0"]],
            id="tolerated-taint",
        ),
        pytest.param(
            [NODE1],
            [
                claim(
                    "c",
                    first_available(
                        "r",
                        {"name": "two", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 3},
                        {"name": "one", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1},
                    ),
                )
            ],
            None,
            [["r/one=node-1/gpu-0"]],
            id="first-available-falls-back",
        ),
        pytest.param(
            [
                resource_slice(
                    "gpus",
                    device("a0", attributes=attrs(numa=0)),
                    device("b1", attributes=attrs(numa=1)),
                    device("c1", attributes=attrs(numa=1)),
                )
            ],
            [
                claim(
                    "c",
                    request("x"),
                    request("y"),
                    constraints=[{"requests": ["x", "y"], "matchAttribute": "gpu.example.com/numa"}],
                )
            ],
            None,
            [["x=node-1/b1", "y=node-1/c1"]],
            id="match-attribute-backtracks",
        ),
    ],
)
def test_devices_picked(
    slices: list[dict[str, Any]],
    claims: list[dict[str, Any]],
    allocated: AllocatedState | None,
    want: list[list[str]] | None,
) -> None:
    """Which devices each claim gets on node-1, in upstream's order of pools, slices and devices."""
    assert picked(allocate(slices, claims, allocated=allocated)) == want


def test_result_shape() -> None:
    """An allocation result: tolerations copied from the request, node-local selector, configs of the class."""
    cls = device_class(
        "gpu", DRIVER_IS_GPU, config=[{"opaque": {"driver": "gpu.example.com", "parameters": {"mode": "fast"}}}]
    )
    toleration = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    claims = [claim("c", request("r", tolerations=[toleration]))]
    results = allocate([NODE1], claims, classes=Classes(cls))
    assert results == [
        {
            "devices": {
                "results": [
                    {
                        "request": "r",
                        "driver": "gpu.example.com",
                        "pool": "node-1",
                        "device": "gpu-0",
                        "tolerations": [toleration],
                    }
                ],
                "config": [
                    {"source": "FromClass", "opaque": {"driver": "gpu.example.com", "parameters": {"mode": "fast"}}}
                ],
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
                ]
            },
        }
    ]
    assert results is not None
    results[0]["devices"]["results"][0]["tolerations"][0]["key"] = "changed"
    results[0]["devices"]["config"][0]["opaque"]["parameters"]["mode"] = "changed"
    assert toleration["key"] == "k" and cls["spec"]["config"][0]["opaque"]["parameters"]["mode"] == "fast"


@pytest.mark.parametrize(
    ("spec", "labels", "want"),
    [
        pytest.param({"allNodes": True}, {}, None, id="all-nodes-no-selector"),
        pytest.param(
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]
                }
            },
            {"rack": "r1"},
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]},
            id="slice-node-selector-copied",
        ),
        pytest.param(
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]
                }
            },
            {"rack": "r2"},
            "unschedulable",
            id="slice-node-selector-not-matching",
        ),
    ],
)
def test_network_attached_slices(spec: dict[str, Any], labels: dict[str, str], want: Any) -> None:
    """Slices without nodeName: allNodes gives no nodeSelector, a nodeSelector slice gives its own."""
    sl = resource_slice("shared", device("nic-0"), node=None, pool="fabric", **spec)
    results = allocate([sl], [claim("c", request("r"))], node=Node("node-1", labels))
    if want == "unschedulable":
        assert results is None
    else:
        assert results is not None and results[0].get("nodeSelector") == want


def test_binding_conditions() -> None:
    """Pools with binding conditions come last; the result carries the conditions and binds to the node."""
    gated = resource_slice(
        "a-gated",
        device("gpu-0", bindingConditions=["Attached"], bindingFailureConditions=["Failed"], bindsToNode=True),
        node=None,
        allNodes=True,
        pool="a",
    )
    plain = resource_slice("z-plain", device("gpu-0"), node=None, allNodes=True, pool="z")
    assert picked(allocate([gated, plain], [claim("c", request("r"))])) == [["r=z/gpu-0"]]
    results = allocate([gated], [claim("c", request("r"))])
    assert results is not None
    entry = results[0]["devices"]["results"][0]
    assert entry["bindingConditions"] == ["Attached"] and entry["bindingFailureConditions"] == ["Failed"]
    assert results[0]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["node-1"]
    # Without DRADeviceBindingConditions such devices are not selectable at all.
    assert allocate([gated], [claim("c", request("r"))], features=Features()) is None


def test_consumable_capacity_shares() -> None:
    """Two claims share a device that allows multiple allocations; consumed amounts are canonical quantities."""
    dev = device("gpu-0", allowMultipleAllocations=True, capacity={"memory": {"value": "2Gi"}})
    claims = [
        claim("a", request("r", capacity={"requests": {"memory": "1024Mi"}})),
        claim("b", request("r", capacity={"requests": {"memory": "1Gi"}})),
        claim("c", request("r", capacity={"requests": {"memory": "1Mi"}})),
    ]
    assert allocate([resource_slice("s", dev)], claims) is None
    results = allocate([resource_slice("s", dev)], claims[:2])
    assert results is not None
    shares = [r["devices"]["results"][0] for r in results]
    assert [s["consumedCapacity"] for s in shares] == [{"memory": "1Gi"}, {"memory": "1Gi"}]
    assert shares[0]["shareID"] != shares[1]["shareID"]


def test_shared_counters() -> None:
    """Partitionable devices: two partitions of 40 from a counter of 60 do not both fit."""
    counters = [{"name": "mem", "counters": {"gb": {"value": "60"}}}]
    partitions = [
        device(f"part-{i}", consumesCounters=[{"counterSet": "mem", "counters": {"gb": {"value": "40"}}}])
        for i in range(2)
    ]
    slices = [
        resource_slice("counters", pool="gpu", count=2, sharedCounters=counters),
        resource_slice("partitions", *partitions, pool="gpu", count=2),
    ]
    assert picked(allocate(slices, [claim("c", request("r"))])) == [["r=gpu/part-0"]]
    assert allocate(slices, [claim("c", request("r", "gpu", 2))]) is None


@pytest.mark.parametrize(
    ("bad", "other", "want"),
    [
        pytest.param(True, False, FailedAllocationOnNode("invalid resource pools were encountered"), id="only-pool"),
        pytest.param(True, True, [["r=node-1/gpu-0"]], id="other-pool-used"),
    ],
)
def test_malformed_slice_invalidates_its_pool(bad: bool, other: bool, want: Any) -> None:
    """A slice we cannot read makes its pool invalid (with the reason in the trace), nothing worse."""
    broken = resource_slice("broken", device("gpu-9", capacity={"memory": {"value": "lots"}}), pool="bad")
    slices = [broken] + ([NODE1] if other else [])
    trace = AllocationTrace()
    if isinstance(want, Exception):
        with pytest.raises(type(want), match=str(want)):
            allocate(slices, [claim("c", request("r"))], trace=trace)
    else:
        assert picked(allocate(slices, [claim("c", request("r"))], trace=trace)) == want
    assert [p.pool for p in trace.pools] == ["gpu.example.com/bad"]
    assert "resource slice broken: " in trace.pools[0].invalid_reason


@pytest.mark.parametrize(
    ("slices", "claims", "allocated", "reason", "detail"),
    [
        pytest.param(
            [resource_slice("s", device("gpu-0", attributes=attrs(memory=16)))],
            [claim("c", request("r", "gpu", 1, BIG))],
            None,
            reasons.SELECTOR_FALSE,
            f"request selector #0: {BIG}",
            id="selector",
        ),
        pytest.param(
            [resource_slice("s", device("gpu-0"))],
            [claim("c", request("r"))],
            AllocatedState(allocated_devices={("gpu.example.com", "node-1", "gpu-0")}),
            reasons.ALLOCATED,
            "",
            id="allocated",
        ),
        pytest.param(
            [resource_slice("s", device("gpu-0", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]))],
            [claim("c", request("r"))],
            None,
            reasons.TAINT,
            "k=v:NoSchedule",
            id="taint",
        ),
        pytest.param(
            [resource_slice("s", device("gpu-0"))],
            [claim("c", request("r"), request("q"))],
            None,
            reasons.IN_USE_BY_POD,
            "",
            id="in-use-by-pod",
        ),
    ],
)
def test_trace(
    slices: list[dict[str, Any]],
    claims: list[dict[str, Any]],
    allocated: AllocatedState | None,
    reason: str,
    detail: str,
) -> None:
    """The trace says why the node's device was not used, and how many devices each request could pick from."""
    trace = AllocationTrace()
    assert allocate(slices, claims, allocated=allocated, trace=trace) is None
    assert trace.node == "node-1" and trace.slices_for_node == 1
    found = [(r.reason, r.detail) for r in trace.rejections.values()]
    assert (reason, detail) in found
    assert trace.requests


def test_trace_without_slices() -> None:
    """No slice for the node: the trace says so."""
    trace = AllocationTrace()
    assert allocate([NODE2], [claim("c", request("r"))], trace=trace) is None
    assert trace.slices_for_node == 0 and not trace.rejections


def test_selectors_evaluated_once_per_device_across_pods() -> None:
    """Class selectors are memoized per (expression, device) while the slice lives: a second pod re-evaluates
    nothing; a changed slice is evaluated again."""
    fake = cel()
    slices = [NODE1]
    with caching.caches_enabled():
        for _ in range(3):
            assert allocate(slices, [claim("c", request("r"))], fake=fake) is not None
        assert fake.evaluations == [(DRIVER_IS_GPU, "gpu-0")]
        changed = resource_slice("node-1-gpus", device("gpu-0"), device("gpu-1"))
        assert allocate([changed], [claim("c", request("r"))], fake=fake) is not None
        assert fake.evaluations == [(DRIVER_IS_GPU, "gpu-0")] * 2


def test_pools_follow_node_labels() -> None:
    """The node's pools are gathered again when its labels change (a slice selects nodes by label)."""
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    slices = [resource_slice("shared", device("nic-0"), node=None, pool="fabric", nodeSelector=selector)]
    with caching.caches_enabled():
        assert allocate(slices, [claim("c", request("r"))], node=Node("node-1", {"rack": "r2"})) is None
        assert allocate(slices, [claim("c", request("r"))], node=Node("node-1", {"rack": "r1"})) is not None


def test_deadline() -> None:
    """A deadline in the past stops the search with upstream's words."""
    allocator = new_allocator(DEFAULT_FEATURES, AllocatedState(), Classes(GPU), [NODE1], cel())
    with pytest.raises(AllocationTimeout) as err:
        allocator.allocate(Node(), [claim("c", request("r"))], deadline=time.monotonic() - 1)
    assert str(err.value) == "filter operation aborted: context deadline exceeded"


@pytest.mark.parametrize(
    ("claims", "classes", "message"),
    [
        pytest.param(
            [claim("c", request("r", "nope"))],
            Classes(GPU),
            'claim default/c, request r: could not retrieve device class nope: deviceclass.resource.k8s.io "nope" '
            "not found",
            id="unknown-class",
        ),
        pytest.param(
            [claim("c", request("r", "gpu", 1, "unknown expression"))],
            Classes(GPU),
            "claim default/c: selector #0: CEL compile error: no such expression in the test: unknown expression",
            id="compile-error",
        ),
        pytest.param(
            [claim("c", request("r", capacity={"requests": {"memory": "lots"}}))],
            Classes(GPU),
            "claim default/c, request r: capacity requests: ",
            id="bad-capacity-request",
        ),
    ],
)
def test_errors(claims: list[dict[str, Any]], classes: Classes, message: str) -> None:
    """Input errors come out as AllocationError with upstream's wording (the claim as namespace/name)."""
    with pytest.raises(AllocationError) as err:
        allocate([NODE1], claims, classes=classes)
    assert str(err.value).startswith(message)


def test_alpha_features_refused() -> None:
    """Only the default (incubating) feature set is implemented; asking for an alpha one is an error."""
    with pytest.raises(AllocationError, match="DRADeviceCompatibilityGroups"):
        new_allocator(Features(compatibility_groups=True), AllocatedState(), Classes(), [], cel())


@pytest.mark.parametrize(
    ("node_name", "all_nodes", "selector", "labels", "want"),
    [
        pytest.param("node-1", False, None, {}, True, id="by-name"),
        pytest.param("node-2", False, None, {}, False, id="other-name"),
        pytest.param("", True, None, {}, True, id="all-nodes"),
        pytest.param(
            "",
            False,
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]},
            {"a": "1"},
            True,
            id="selector",
        ),
        pytest.param("", False, None, {}, False, id="nothing-set"),
    ],
)
def test_node_matches(
    node_name: str, all_nodes: bool, selector: dict[str, Any] | None, labels: dict[str, str], want: bool
) -> None:
    """structured.NodeMatches."""
    assert node_matches(Node("node-1", labels), node_name, all_nodes, selector) is want


def test_node_matches_parse_error() -> None:
    """A node selector that does not parse is an error quoting it as Go prints a v1.NodeSelector."""
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}]}
    with pytest.raises(AllocationError) as err:
        node_matches(Node(), "", False, selector)
    assert str(err.value).startswith(
        "failed to parse node selector &NodeSelector{NodeSelectorTerms:[]NodeSelectorTerm{NodeSelectorTerm{"
        "MatchExpressions:[]NodeSelectorRequirement{NodeSelectorRequirement{Key:a,Operator:Near,Values:[x],},},"
        "MatchFields:[]NodeSelectorRequirement{},},},}: "
    )


def test_pools_survive_a_change_elsewhere() -> None:
    """After one slice changes, a node whose slices did not change keeps its pools (the same objects), one whose
    pool spans the changed slice gathers again: here the other node's slice moved to a newer generation, which
    makes node-1's half of the pool obsolete."""
    from scheduler.dra.structured.pools import slice_set

    mine = resource_slice("mine", device("gpu-0"), pool="local")
    span_1 = resource_slice("span-1", device("a"), pool="span", count=2)
    span_2 = resource_slice("span-2", device("b"), pool="span", count=2, node="node-2")
    other = resource_slice("other", device("c"), pool="other", node="node-3")
    with caching.caches_enabled():
        before = slice_set([mine, span_1, span_2, other])
        node1_pools = before.pools_for(Node("node-1"), DEFAULT_FEATURES)
        node3_pools = before.pools_for(Node("node-3"), DEFAULT_FEATURES)
        assert [p.name for p in node1_pools] == ["gpu.example.com/local", "gpu.example.com/span"]
        newer = resource_slice("span-2", device("b"), pool="span", count=2, node="node-2", generation=2)
        after = slice_set([mine, span_1, newer, other])
        assert after is not before
        assert after.pools_for(Node("node-3"), DEFAULT_FEATURES) is node3_pools
        assert [p.name for p in after.pools_for(Node("node-1"), DEFAULT_FEATURES)] == ["gpu.example.com/local"]
