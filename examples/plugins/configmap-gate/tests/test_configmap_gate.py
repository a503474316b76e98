"""ConfigMapGate through pyscheduler's real framework and in-memory cluster (no API server needed)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pyscheduler_configmap_gate import LABEL

from scheduler.adapters.memory import MemoryCluster
from scheduler.config.errors import ConfigError
from scheduler.config.load import load_config
from scheduler.core.clock import FakeClock
from scheduler.core.profile import build_scheduler
from scheduler.core.scheduler import Scheduler
from scheduler.plugins.registry import PluginRegistry
from scheduler.testing import make_node, make_pod


def setup(args: dict[str, Any] | None = None) -> tuple[MemoryCluster, Scheduler]:
    reg = PluginRegistry.with_out_of_tree(["pyscheduler_configmap_gate:ConfigMapGate"], entry_points=False)
    profile: dict[str, Any] = {
        "schedulerName": "pyscheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "ConfigMapGate"}]}},
        "pluginConfig": [{"name": "ConfigMapGate", "args": args or {}}],
    }
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [profile]}
    cfg = load_config(raw, reg.keys(), reg.parse_args, implements=reg.implements)
    cluster = MemoryCluster()
    sched = build_scheduler(cluster, cfg, clock=FakeClock(), seed=0, registry=reg)
    cluster.attach(sched)
    cluster.apply_node(make_node("n1").obj())
    return cluster, sched


def gate(go: str, version: str, reason: str = "") -> dict[str, Any]:
    data = {"go": go, **({"reason": reason} if reason else {})}
    meta = {"name": "release", "namespace": "default", "resourceVersion": version}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


async def start(cluster: MemoryCluster, sched: Scheduler) -> asyncio.Task[None]:
    """Schedule the queued pod; its binding cycle (which waits at Permit) runs as a task."""
    qpi = sched.queue.pop()
    assert qpi is not None
    coro = sched.schedule_one(qpi)
    assert coro is not None
    task = asyncio.ensure_future(coro)
    await asyncio.sleep(0.01)
    return task


async def test_ungated_pods_pass() -> None:
    cluster, sched = setup()
    pod = make_pod("free").obj()
    cluster.apply_pod(pod)
    await sched.run_until_idle()
    assert cluster.node_of(pod["metadata"]["uid"]) == "n1"


async def test_pod_waits_until_the_configmap_says_go() -> None:
    cluster, sched = setup()
    cluster.apply_object(gate("not-yet", "1"))
    pod = make_pod("held").label(LABEL, "release").obj()
    cluster.apply_pod(pod)
    task = await start(cluster, sched)
    assert not task.done() and cluster.node_of(pod["metadata"]["uid"]) is None
    cluster.apply_object(gate("true", "2"))
    await asyncio.wait_for(task, 5)
    assert cluster.node_of(pod["metadata"]["uid"]) == "n1"


async def test_no_rejects_with_the_reason() -> None:
    cluster, sched = setup()
    pod = make_pod("held").label(LABEL, "release").obj()
    cluster.apply_pod(pod)
    task = await start(cluster, sched)
    cluster.apply_object(gate("no", "1", reason="change freeze until Monday"))
    await asyncio.wait_for(task, 5)
    assert cluster.node_of(pod["metadata"]["uid"]) is None
    message = cluster.conditions[pod["metadata"]["uid"]].message
    assert message == "0/1 nodes are available: 1 change freeze until Monday."


async def test_wait_times_out() -> None:
    cluster, sched = setup({"timeoutSeconds": 0.05})
    pod = make_pod("held").label(LABEL, "release").obj()
    cluster.apply_pod(pod)
    task = await start(cluster, sched)
    await asyncio.wait_for(task, 5)
    assert "rejected due to timeout" in cluster.conditions[pod["metadata"]["uid"]].message


def test_bad_args() -> None:
    with pytest.raises(ConfigError, match=r"args: timeoutSeconds: must be a number > 0"):
        setup({"timeoutSeconds": "soon"})
