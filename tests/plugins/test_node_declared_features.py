"""NodeDeclaredFeatures (upstream plugins/nodedeclaredfeatures, v1.37): PreFilter, Filter, events, explain.

Case names in quotes are upstream's, from nodedeclaredfeatures_test.go. Upstream's "plugin disabled" and
"DeferredResizeSkipped" cases need a gate off (NodeDeclaredFeatures is locked on; the deferred-resize
gate, InPlacePodVerticalScalingSchedulerPreemption, is alpha and off in v1.37), so they have no
counterpart here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from scheduler.backend.cache.cache import node_update_action
from scheduler.core.explain import explain_pod
from scheduler.framework.declared_features import RESTART_ALL_CONTAINERS, DeclaredFeature, Version
from scheduler.framework.interface import NODE, UNSCHEDULED_POD, ActionType, ClusterEvent, CycleState
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.node_declared_features import (
    ERR_REASON_UNSATISFIED_REQUIREMENTS,
    ERR_STATE_NOT_FOUND,
    NAME,
    PRE_FILTER_STATE_KEY,
    NodeDeclaredFeatures,
)
from scheduler.testing import SchedulerHarness, make_node, make_pod

JSON = dict[str, Any]
FEATURE1, FEATURE2 = "TestFeature1", "TestFeature2"


def _never(spec: Any) -> bool:
    return False


def _feature(name: str, max_version: str = "") -> DeclaredFeature:
    """A registry entry whose window ends at max_version (its inference is the pod's `inferred_features`)."""
    return DeclaredFeature(name, name, _never, Version.parse(max_version) if max_version else None)


def _pod_inferring(*features: str) -> PodInfo:
    """A pod whose spec infers exactly these features (upstream mocks InferForScheduling)."""
    return dataclasses.replace(make_pod("test-pod").info(), inferred_features=frozenset(features))


@pytest.mark.parametrize(
    ("registry", "inferred", "version", "expected"),
    [
        pytest.param((_feature(FEATURE1), _feature(FEATURE2)), {FEATURE1}, "1.35.0", {FEATURE1},
                     id="Pod with feature requirements"),
        pytest.param((_feature(FEATURE1, "1.38.0"), _feature(FEATURE2, "1.38.0")), {FEATURE1, FEATURE2}, "1.35.0",
                     {FEATURE1, FEATURE2}, id="Pod with multiple feature requirements"),
        pytest.param((_feature(FEATURE1), _feature(FEATURE2)), set(), "1.35.0", None, id="Pod with no requirements"),
        pytest.param((_feature(FEATURE1, "1.33.0"), _feature(FEATURE2)), {FEATURE1}, "1.34.0", None,
                     id="Feature not required, version > MaxVersion"),
    ],
)
def test_pre_filter(
    registry: tuple[DeclaredFeature, ...], inferred: set[str], version: str, expected: set[str] | None
) -> None:
    """TestPreFilter: the requirements within their windows go to the cycle state; none means Skip."""
    plugin = NodeDeclaredFeatures(version=Version.parse(version), features=registry)
    state = CycleState()
    result, status = plugin.pre_filter(state, _pod_inferring(*inferred), [])
    assert result is None, "PreFilter never narrows the nodes"
    if expected is None:
        assert status is not None and status.code == Code.SKIP
        assert PRE_FILTER_STATE_KEY not in state
    else:
        assert status is None
        assert state[PRE_FILTER_STATE_KEY] == expected


FEATURE_A, FEATURE_B, FEATURE_C = "FeatureA", "FeatureB", "FeatureC"
REJECTED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_UNSATISFIED_REQUIREMENTS,), NAME)


@pytest.mark.parametrize(
    ("declared", "reqs", "expected"),
    [
        pytest.param([FEATURE_A, FEATURE_B], [FEATURE_A], None, id="Node matches requirements"),
        pytest.param([FEATURE_B], [FEATURE_A], REJECTED, id="Node does not match requirements"),
        pytest.param([FEATURE_A, FEATURE_B, FEATURE_C], [FEATURE_A, FEATURE_C], None,
                     id="Node with multiple features, pod requires subset"),
        pytest.param([], [FEATURE_A], REJECTED, id="Node has no declared features"),
        pytest.param([FEATURE_A], [FEATURE_A, FEATURE_B], REJECTED, id="Node with some but not all required features"),
        pytest.param([], None, Status(Code.ERROR, (ERR_STATE_NOT_FOUND,), NAME), id="Error getting pre-filter state"),
    ],
)
def test_filter(declared: list[str], reqs: list[str] | None, expected: Status | None) -> None:
    """TestFilter: the pod's requirements must be a subset of the node's declared features."""
    node = NodeInfo("node-1", make_node("node-1").declared_features(*declared).info())
    state = CycleState()
    if reqs is not None:
        state[PRE_FILTER_STATE_KEY] = frozenset(reqs)
    plugin = NodeDeclaredFeatures()
    pod = make_pod("test-pod").info()
    got = plugin.filter(state, pod, node)
    if expected is None:
        assert got is None
    else:
        assert got is not None and (got.code, got.reasons, got.plugin) == (
            expected.code, expected.reasons, expected.plugin
        )
    assert plugin.filter_batch(state, pod, [node]) == [got]


def test_filter_on_a_node_without_its_node_object() -> None:
    """A NodeInfo without its Node declares nothing."""
    state = CycleState()
    state[PRE_FILTER_STATE_KEY] = frozenset({FEATURE_A})
    got = NodeDeclaredFeatures().filter(state, make_pod().info(), NodeInfo("ghost"))
    assert got is not None and got.reasons == (ERR_REASON_UNSATISFIED_REQUIREMENTS,)


def test_a_real_restart_rule_is_required_and_checked() -> None:
    """End to end through parse_pod: a RestartAllContainers rule needs a node declaring the feature."""
    pod = make_pod("p").restart_rule().info()
    plugin = NodeDeclaredFeatures()
    state = CycleState()
    assert plugin.pre_filter(state, pod, []) == (None, None)
    declaring = NodeInfo("n1", make_node("n1").declared_features(RESTART_ALL_CONTAINERS, "Other").info())
    silent = NodeInfo("n2", make_node("n2").declared_features("Other").info())
    assert plugin.filter_batch(state, pod, [declaring, silent]) == [None, plugin.filter(state, pod, silent)]
    assert plugin.filter(state, pod, silent) is not None
    plain_state = CycleState()
    _, status = plugin.pre_filter(plain_state, make_pod("q").restart_rule(action="Restart").info(), [])
    assert status is not None and status.code == Code.SKIP, "a Restart rule needs no declared feature"


BASE_NODE = make_node("node-1").info()


@pytest.mark.parametrize(
    ("old", "new", "queues"),
    [
        pytest.param(None, make_node("node-1").declared_features("FeatureA").info(), True, id="Node Add with feature"),
        pytest.param(BASE_NODE, make_node("node-1").declared_features("FeatureA").info(), True,
                     id="Node Update (Features Added)"),
        pytest.param(
            make_node("node-1").declared_features("FeatureA").info(),
            make_node("node-1").declared_features("FeatureA").info(),
            False,
            id="Node Update (Features Unchanged)",
        ),
        pytest.param(BASE_NODE, make_node("node-1").capacity(cpu="8").info(), False, id="allocatable-only"),
    ],
)
def test_enqueue_extensions_node_update(old: Any, new: Any, queues: bool) -> None:
    """TestEnqueueExtensionsNodeUpdate: a node add or a change of its declared features concerns the plugin."""
    action = ActionType.ADD if old is None else node_update_action(old, new)
    event = ClusterEvent(NODE, action)
    registered = NodeDeclaredFeatures().events_to_register()
    # An update that changed nothing a plugin registered for sends no event at all (an empty action).
    matched = bool(action) and any(event.matches(r) for r in registered)
    assert matched is queues


def test_events_to_register() -> None:
    """TestEventsToRegister: two events, the node's (Add | UpdateNodeDeclaredFeature) and the pod's own update."""
    events = NodeDeclaredFeatures().events_to_register()
    assert events == [
        ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
        ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE),
    ]


async def test_rejected_pod_moves_only_when_a_node_declares_features() -> None:
    """Requeueing: an allocatable change leaves the pod parked, a declared-features change moves and binds it."""
    env = SchedulerHarness()
    for name in ("n1", "n2"):
        env.cluster.apply_node(make_node(name).obj())
    obj = env.add_pod(make_pod("restarter").req(cpu="100m").restart_rule())
    await env.settle()
    uid = obj["metadata"]["uid"]
    assert env.node_of(obj) is None
    assert env.scheduler.queue.queue_of(uid) == "unschedulable"
    env.cluster.apply_node(make_node("n2").capacity(cpu="8").obj())
    assert env.scheduler.queue.queue_of(uid) == "unschedulable", "an allocatable change cannot help"
    env.cluster.apply_node(make_node("n2").declared_features(RESTART_ALL_CONTAINERS).obj())
    assert env.scheduler.queue.queue_of(uid) != "unschedulable"
    await env.settle()
    assert env.node_of(obj) == "n2"


async def test_an_update_of_the_pod_that_drops_the_requirement_requeues_it() -> None:
    """The pod's own update (upstream's TargetPod Update hint): without the rule it binds anywhere."""
    env = SchedulerHarness()
    env.cluster.apply_node(make_node("n1").obj())
    builder = make_pod("restarter").uid("uid-restarter").req(cpu="100m").restart_rule()
    obj = env.add_pod(builder)
    await env.settle()
    assert env.node_of(obj) is None
    plain = make_pod("restarter").uid("uid-restarter").req(cpu="100m").obj()
    env.cluster.apply_pod(plain)
    await env.settle()
    assert env.node_of(plain) == "n1"


STORY_MESSAGE = (
    "0/3 nodes are available: 1 node(s) didn't match Pod's required features, 2 node(s) didn't match Pod's node "
    "affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)


async def test_issue_story_and_its_explanation() -> None:
    """Issue 19: the pod goes to n1 (the only declaring node); the copy pinned to n2 gets upstream's message,
    and explain names the missing feature on n2 and proves the fix "a node that declares it"."""
    env = SchedulerHarness()
    env.cluster.apply_node(make_node("n1").declared_features(RESTART_ALL_CONTAINERS).obj())
    for name in ("n2", "n3"):
        env.cluster.apply_node(make_node(name).obj())
    free = env.add_pod(make_pod("restarter").req(cpu="100m").restart_rule())
    pinned = env.add_pod(make_pod("restarter-on-n2").req(cpu="100m").restart_rule().node_selector(
        **{"kubernetes.io/hostname": "n2"}))
    await env.settle()
    assert env.node_of(free) == "n1"
    assert env.node_of(pinned) is None
    assert env.cluster.conditions[pinned["metadata"]["uid"]].message == STORY_MESSAGE
    fwk, snapshot = env.scheduler.explain_environment("pyscheduler")
    pinned_pod = make_pod("restarter-on-n2").req(cpu="100m").restart_rule()
    expl = explain_pod(fwk, pinned_pod.node_selector(**{"kubernetes.io/hostname": "n2"}).info(), snapshot)
    assert expl.message == STORY_MESSAGE
    [n2] = [v for v in expl.nodes if v.node == "n2"]
    details = [d for plugin, d in n2.details if plugin == NAME]
    assert [d.data["missingFeatures"] for d in details] == [[RESTART_ALL_CONTAINERS]]
    assert "node n2 does not declare RestartAllContainersOnContainerExits" in details[0].text
    fixes = {f.description: f.nodes for f in expl.fixes}
    assert fixes[f"a node that declares {RESTART_ALL_CONTAINERS} (node n2, with a kubelet that publishes it)"] == [
        "n2"
    ]
