"""DynamicResources' PostFilter for pods without claims, as upstream's: after a PreFilter rejection that stopped
PreFilter before DynamicResources' own, it fails with "not found" (its cycle state was never written), so
preemption is not tried and the message ends with ` not found`; otherwise it adds nothing. A profile that
disables DynamicResources gets DefaultPreemption's answer."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.core.explain import explain_pod, render_text
from scheduler.framework.fit_error import NodeToStatus
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.plugins.dynamic_resources import DynamicResources
from scheduler.testing import SchedulerHarness, make_node, make_pod, make_pvc, storage_class
from tests.core.test_volume_scheduling import nodes

JSON = dict[str, Any]
MISSING = '0/2 nodes are available: persistentvolumeclaim "data" not found.'
NOT_HELPFUL = " preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."


def _profile(**plugins: Any) -> JSON:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "pyscheduler", "plugins": plugins}],
    }


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param(None, MISSING + " not found", id="default-profile"),
        pytest.param(
            _profile(multiPoint={"disabled": [{"name": "DynamicResources"}]}), MISSING + NOT_HELPFUL, id="dra-disabled"
        ),
        pytest.param(
            _profile(postFilter={"disabled": [{"name": "DynamicResources"}]}),
            MISSING + NOT_HELPFUL,
            id="dra-postfilter-disabled",
        ),
        pytest.param(
            _profile(multiPoint={"disabled": [{"name": "DefaultPreemption"}]}),
            MISSING + " not found",
            id="preemption-disabled",
        ),
        pytest.param(_profile(postFilter={"disabled": [{"name": "*"}]}), MISSING, id="no-postfilter-at-all"),
    ],
)
async def test_message_after_a_prefilter_rejection(config: JSON | None, expected: str) -> None:
    """A pod whose claim does not exist: VolumeBinding's PreFilter rejects it (UnschedulableAndUnresolvable)."""
    env = SchedulerHarness(config)
    nodes(env, "n1", "n2")
    pod = env.add_pod(make_pod("db").pvc("data"))
    await env.settle()
    assert env.node_of(pod) is None
    cond = env.cluster.conditions[pod["metadata"]["uid"]]
    assert (cond.reason, cond.message) == ("Unschedulable", expected)


async def test_a_filter_rejection_is_left_to_preemption() -> None:
    """PreFilter ran to the end (DynamicResources' too): its PostFilter has nothing to say, preemption answers."""
    env = SchedulerHarness()
    env.cluster.apply_node(make_node("n1").capacity(cpu="1").obj())
    env.cluster.apply_node(make_node("n2").capacity(cpu="1").obj())
    pod = env.add_pod(make_pod("big").req(cpu="2"))
    await env.settle()
    assert env.message(pod) == "0/2 nodes are available: 2 Insufficient cpu." + NOT_HELPFUL  # larger than any node


async def test_an_unbound_immediate_claim_also_ends_with_not_found() -> None:
    env = SchedulerHarness()
    nodes(env, "n1", "n2")
    env.cluster.provisioning = False
    env.cluster.apply_object(storage_class("now", mode="Immediate", provisioner="csi.example.com"))
    env.cluster.apply_object(make_pvc("data").storage_class("now").obj())
    pod = env.add_pod(make_pod("db").pvc("data"))
    await env.settle()
    assert env.message(pod) == "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"


def test_post_filter_fails_only_without_its_pre_filter_state() -> None:
    """No state of its own (its PreFilter did not run): Error "not found"; after its PreFilter (a pod without
    claims, Skip): Unschedulable with no reason, so DefaultPreemption answers."""
    env = SchedulerHarness()
    nodes(env, "n1")
    fwk = env.scheduler.profiles["pyscheduler"]
    plugin = fwk.plugins["DynamicResources"]
    assert isinstance(plugin, DynamicResources)
    pod = make_pod("p").info()
    _, status = plugin.post_filter(CycleState(), pod, NodeToStatus())
    assert status is not None and (status.code, status.message()) == (Code.ERROR, "not found")
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, [])
    assert pre is not None and pre.code == Code.SKIP
    _, status = plugin.post_filter(state, pod, NodeToStatus())
    assert status is not None and (status.code, status.reasons) == (Code.UNSCHEDULABLE, ())


def test_explain_says_preemption_is_not_tried() -> None:
    env = SchedulerHarness()
    nodes(env, "n1", "n2")
    fwk = env.scheduler.profiles["pyscheduler"]
    env.scheduler.cache.update_snapshot(env.scheduler.snapshot)
    expl = explain_pod(fwk, make_pod("db").pvc("data").info(), env.scheduler.snapshot)
    assert expl.message == MISSING + " not found"
    assert expl.preemption is not None and expl.preemption.outcome == "error"
    assert "DynamicResources's PostFilter fails first with 'not found'" in render_text(expl)
