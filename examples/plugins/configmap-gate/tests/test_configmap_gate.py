"""ConfigMapGate through pyscheduler's real scheduler in memory (scheduler.testing's harness: no API server),
using only the public face: scheduler.framework and scheduler.testing. The fake clock makes the Permit
timeout pass at once."""

from __future__ import annotations

from typing import Any

import pytest
from pyscheduler_configmap_gate import LABEL, ConfigMapGate

from scheduler.testing import SchedulerHarness, configuration, make_node, make_pod


def harness(args: dict[str, Any] | None = None) -> SchedulerHarness:
    """The scheduler with ConfigMapGate enabled, over one node."""
    plugins = {"multiPoint": {"enabled": [{"name": "ConfigMapGate"}]}}
    h = SchedulerHarness(configuration(plugins, {"ConfigMapGate": args or {}}), plugins=[ConfigMapGate])
    h.add(make_node("n1"))
    return h


def gate(go: str, version: str, reason: str = "") -> dict[str, Any]:
    data = {"go": go, **({"reason": reason} if reason else {})}
    meta = {"name": "release", "namespace": "default", "resourceVersion": version}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


async def test_ungated_pods_pass() -> None:
    """A pod without the label is bound at once."""
    h = harness()
    pod = h.add_pod(make_pod("free"))
    await h.settle()
    assert h.node_of(pod) == "n1"


async def test_pod_waits_until_the_configmap_says_go() -> None:
    """The pod waits at Permit (not bound) until its ConfigMap says go; then it binds."""
    h = harness()
    h.add(gate("not-yet", "1"))
    pod = h.add_pod(make_pod("held").label(LABEL, "release"))
    await h.settle(expire_permits=False)
    assert [w.pod.name for w in h.waiting()] == ["held"] and h.node_of(pod) is None
    h.add(gate("true", "2"))
    await h.settle()
    assert h.node_of(pod) == "n1" and h.waiting() == []


async def test_no_rejects_with_the_reason() -> None:
    """`go: no` rejects the waiting pod with the ConfigMap's reason, as a one-node FitError."""
    h = harness()
    pod = h.add_pod(make_pod("held").label(LABEL, "release"))
    await h.settle(expire_permits=False)
    h.add(gate("no", "1", reason="change freeze until Monday"))
    await h.settle(expire_permits=False)
    assert h.node_of(pod) is None
    assert h.message(pod) == "0/1 nodes are available: 1 change freeze until Monday."


async def test_wait_times_out() -> None:
    """Nobody says go: at timeoutSeconds (on the fake clock) the pod is rejected with upstream's message."""
    h = harness({"timeoutSeconds": 120})
    pod = h.add_pod(make_pod("held").label(LABEL, "release"))
    await h.settle()
    assert h.message(pod) == (
        "0/1 nodes are available: 1 rejected due to timeout after waiting 2m0s at plugin ConfigMapGate."
    )
    assert h.clock() >= 120.0


def test_bad_args() -> None:
    """A timeout that is not a positive number stops the configuration, naming the field."""
    with pytest.raises(ValueError, match=r"args: timeoutSeconds: must be a number > 0"):
        harness({"timeoutSeconds": "soon"})
