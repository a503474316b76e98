"""A lone surrogate (`"\\udc80"`, legal JSON) in any string of a pod or a node, keys included: no traceback,
through simulate's loader and through the live intake path, and the other pods are still scheduled."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.adapters.memory import MemoryCluster
from scheduler.core.clock import FakeClock
from scheduler.core.profile import build_scheduler
from scheduler.simulate import InputError, load_documents, simulate
from scheduler.testing import make_node, make_pod

JSON = dict[str, Any]
SURROGATE = "\udc80"
Path = tuple[str | int, ...]


def _node() -> JSON:
    return make_node("n1").capacity(cpu="4", memory="8Gi", pods="10").zone("z1", "r1").taint("k", "v").obj()


def _pod(name: str, node: str | None = None, gate: bool = False) -> JSON:
    """A pod reading every kind of string the scheduler parses: labels, selectors, terms, ports, volumes."""
    pod = make_pod(name, "default").labels(app="a").req(cpu="100m", memory="1Gi", **{"example.com/gpu": "1"})
    pod = pod.toleration("k", "v").node_selector(disk="ssd")
    obj = pod.node(node).obj() if node else pod.obj()
    spec = obj["spec"]
    term = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}
    expression = {"key": "zone", "operator": "In", "values": ["z1"]}
    required = {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}
    spec["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]},
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required},
    }
    spec["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "a"}}}
    ]
    spec["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80, "protocol": "TCP", "hostIP": "1.2.3.4"}]
    spec["containers"][0]["image"] = "nginx"
    spec["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]
    if gate:
        spec["schedulingGates"] = [{"name": "example.com/gate"}]
    spec["priorityClassName"] = "system-cluster-critical"
    return obj


def string_paths(obj: Any, prefix: Path = ()) -> Iterator[tuple[Path, str]]:
    """Every string value ("value") and every key ("key") of a JSON object, by path."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield (*prefix, key), "key"
            yield from string_paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from string_paths(value, (*prefix, i))
    elif isinstance(obj, str):
        yield prefix, "value"


def inject(obj: JSON, path: Path, where: str) -> JSON:
    """A copy of obj with a lone surrogate appended to the string (or the key) at path."""
    out = copy.deepcopy(obj)
    parent: Any = out
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if where == "value":
        parent[last] = parent[last] + SURROGATE
    else:
        parent[f"{last}{SURROGATE}"] = parent.pop(last)
    return out


BASES = {"node": _node(), "pending": _pod("p"), "bound": _pod("b", "n1"), "gated": _pod("g", gate=True)}
CASES = [
    pytest.param(which, path, where, id=f"{which}-{where}-{'.'.join(map(str, path))}")
    for which, base in BASES.items()
    for path, where in string_paths(base)
    if path[:2] != ("metadata", "uid")
]


def _objects(which: str, mutated: JSON) -> list[JSON]:
    """node, bound, pending, gated, control: the mutated one in its place, the control pod fitting n1."""
    objects = {**BASES, which: mutated}
    control = make_pod("control", "default").req(cpu="100m").obj()
    control["spec"]["tolerations"] = [{"operator": "Exists"}]
    return [objects["node"], objects["bound"], objects["pending"], objects["gated"], control]


@pytest.mark.parametrize(("which", "path", "where"), CASES)
def test_a_lone_surrogate_through_simulate(which: str, path: Path, where: str) -> None:
    """The JSON escape becomes U+FFFD as in kube-apiserver's decoder; a refused object is an InputError
    naming it, anything else simulates (no UnicodeEncodeError from a validator or the cycle)."""
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": _objects(which, inject(BASES[which], path, where))})
    try:
        result = simulate(load_documents(text, "dump.json"))
    except InputError as exc:
        assert "dump.json" in str(exc)
        return
    assert {o.name for o in result.outcomes} >= {"control"}


@pytest.mark.parametrize(("which", "path", "where"), CASES)
def test_a_lone_surrogate_through_the_live_intake(which: str, path: Path, where: str) -> None:
    """Raw objects with the surrogate itself (as a watch could hand them over) go through the scheduler's
    event handlers without an exception: the pod it cannot understand gets a failure report, and a broken
    pending pod keeps no one else waiting (the control pod is bound)."""
    cluster = MemoryCluster()
    scheduler = build_scheduler(cluster, clock=FakeClock(), seed=0)
    cluster.attach(scheduler)
    node, bound, pending, gated, control = _objects(which, inject(BASES[which], path, where))

    async def run() -> None:
        if isinstance(node.get("metadata"), dict) and isinstance(node["metadata"].get("name"), str):
            cluster.apply_node(node)
        else:  # no name to store it under: straight to the handlers, as the cluster adapter's watch would
            scheduler.events.on_node_event("ADDED", node)
        cluster.apply_pod(bound)
        cluster.apply_pod(pending)
        cluster.apply_pod(gated)
        cluster.apply_pod(control)
        await scheduler.run_until_idle()

    asyncio.run(run())
    if which in ("pending", "gated"):  # (a broken node or bound pod may rightly keep the control pod off n1)
        assert cluster.node_of(MemoryCluster._uid(control)) == "n1"
    uid = MemoryCluster._uid(pending)
    ours = (pending.get("spec") or {}).get("schedulerName") == "pyscheduler"  # else another scheduler's to report
    if which == "pending" and ours and cluster.node_of(uid) is None:  # refused, or tried and left Pending: says why
        assert uid in scheduler.last_failure or uid in scheduler.parse_failures
