"""Fail closed: pods using fields pyscheduler does not evaluate are never bound, and are told why."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.adapters.memory import MemoryCluster
from scheduler.config.load import load_config
from scheduler.core.clock import FakeClock
from scheduler.core.explain import explain_pod
from scheduler.core.profile import build_scheduler
from scheduler.core.unsupported import UNSUPPORTED, UnsupportedFeature, find_unsupported
from scheduler.framework.observer import Observer
from scheduler.plugins.registry import REGISTRY, implements, parse_plugin_args
from scheduler.testing import PodBuilder, make_node, make_pod

JSON = dict[str, Any]

# Every guard entry, with a pod that uses the field. All entries of UNSUPPORTED must appear here.
CASES: list[tuple[str, PodBuilder, str]] = [
    ("resourceClaims", make_pod("p").resource_claim("gpu"), "spec.resourceClaims"),
]


class CountingObserver(Observer):
    def __init__(self) -> None:
        self.unsupported: list[str] = []

    def unsupported_pod(self, feature: str) -> None:
        self.unsupported.append(feature)


def env(config: JSON | None = None) -> tuple[MemoryCluster, Any, FakeClock, CountingObserver]:
    cluster = MemoryCluster()
    clock = FakeClock()
    observer = CountingObserver()
    cfg = load_config(config, REGISTRY.keys(), parse_plugin_args, implements=implements) if config else None
    sched = build_scheduler(cluster, cfg, clock=clock, seed=0, observer=observer)
    cluster.attach(sched)
    cluster.apply_node(make_node("n1").obj())
    return cluster, sched, clock, observer


def test_every_guard_entry_has_a_case() -> None:
    """The table below covers the whole fail-closed list (a new entry needs a test)."""
    assert sorted(f.feature for f in UNSUPPORTED) == sorted(c[0] for c in CASES)


@pytest.mark.parametrize(("feature", "builder", "field"), [pytest.param(*c, id=c[0]) for c in CASES])
async def test_pod_using_an_unsupported_field_is_not_bound(feature: str, builder: PodBuilder, field: str) -> None:
    """Not bound; FailedScheduling naming the field and plugin; PodScheduled=False Unschedulable; counted."""
    entry = next(f for f in UNSUPPORTED if f.feature == feature)
    if entry.plugin in REGISTRY:
        pytest.skip(f"{entry.plugin} is implemented: the guard no longer applies to {feature}")
    cluster, sched, clock, observer = env()
    obj = builder.scheduler_name("pyscheduler").obj()
    cluster.apply_pod(obj)
    await sched.run_until_idle(advance=clock.advance_to)
    uid = obj["metadata"]["uid"]
    assert cluster.node_of(uid) is None
    assert cluster.bindings == []
    [event] = [e for e in cluster.events if e.name == "p"]
    assert (event.type, event.reason, event.action) == ("Warning", "FailedScheduling", "Scheduling")
    assert event.note.startswith(f"pyscheduler does not support {field} (upstream plugin {entry.plugin}) yet")
    cond = cluster.conditions[uid]
    assert (cond.type, cond.status, cond.reason) == ("PodScheduled", "False", "Unschedulable")
    assert cond.message == event.note
    assert observer.unsupported == [feature]
    assert sched.attempts == 0  # never entered a scheduling cycle
    assert [p.key for p in sched.unsupported_pods()] == ["default/p"]


async def test_report_is_written_once_and_state_is_cleaned_on_delete() -> None:
    """An identical re-delivery (resync, no-op update) writes nothing again; deleting forgets the pod."""
    cluster, sched, _, observer = env()
    obj = make_pod("p").resource_claim("gpu").obj()
    cluster.apply_pod(obj)
    cluster.apply_pod(obj)
    sched.events.resync([], [obj])
    assert len(cluster.events) == 1 and observer.unsupported == ["resourceClaims"]
    cluster.delete_pod(obj["metadata"]["uid"])
    assert sched.unsupported == {} and sched.last_failure == {}


async def test_pod_updated_to_drop_the_field_is_scheduled() -> None:
    """The guard re-checks on update: without the field the pod enters the queue and binds."""
    cluster, sched, clock, _ = env()
    obj = make_pod("p").resource_claim("gpu").obj()
    cluster.apply_pod(obj)
    await sched.run_until_idle(advance=clock.advance_to)
    del obj["spec"]["resourceClaims"]
    cluster.apply_pod(obj)
    await sched.run_until_idle(advance=clock.advance_to)
    assert cluster.node_of(obj["metadata"]["uid"]) == "n1"
    assert sched.unsupported == {}


async def test_profile_disabling_the_upstream_plugin_opts_out() -> None:
    """kube-scheduler ignores resourceClaims when DynamicResources is disabled: so do we."""
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"schedulerName": "pyscheduler", "plugins": {"multiPoint": {"disabled": [{"name": "DynamicResources"}]}}}
        ],
    }
    cluster, sched, clock, observer = env(config)
    obj = make_pod("p").resource_claim("gpu").obj()
    cluster.apply_pod(obj)
    await sched.run_until_idle(advance=clock.advance_to)
    assert cluster.node_of(obj["metadata"]["uid"]) == "n1"
    assert observer.unsupported == []


def test_find_unsupported_skips_implemented_plugins() -> None:
    """An entry stops applying once its plugin is implemented and enabled."""
    pod = make_pod("p").resource_claim("gpu").info()
    entry = UnsupportedFeature(
        "resourceClaims", "DynamicResources", lambda p: "spec.resourceClaims" if p.resource_claims else None
    )
    assert find_unsupported(pod, {"DynamicResources"}, set(), (entry,))[0].field == "spec.resourceClaims"
    assert find_unsupported(pod, {"DynamicResources"}, {"DynamicResources"}, (entry,)) == []
    assert find_unsupported(pod, set(), set(), (entry,)) == []


async def test_explain_reports_the_refusal() -> None:
    """explain/simulate --explain show the guard's message and no best node."""
    _, sched, _, _ = env()
    pod = make_pod("p").resource_claim("gpu").info()
    expl = explain_pod(sched.profiles["pyscheduler"], pod, sched.cache.fresh_snapshot())
    assert expl.unsupported == ["spec.resourceClaims (upstream plugin DynamicResources)"]
    assert expl.message.startswith("pyscheduler does not support spec.resourceClaims")
    assert expl.best == []
    assert [v.node for v in expl.nodes if v.feasible] == ["n1"]
