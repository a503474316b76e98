"""The fix checker: every JSON `change` explain proposes, applied literally to the input, makes the pod schedule.

For each scenario the pod is Pending; `simulate --explain` proposes fixes. Each fix's JSON `change` (each
part of a combination, each step of a ladder) is applied to a copy of the input exactly as docs/explain.md
says a person would apply it (one small applier per kind below: no access to the engine's transforms), the
copy is simulated again from scratch, and the pod must then be bound to one of the nodes the fix named; a
filter fix must also open exactly as many nodes as it said.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from scheduler.core.fixes import Fix
from scheduler.simulate import SimulationResult, load_documents, simulate
from scheduler.testing import expr, make_node, make_pod

JSON = dict[str, Any]
POD = ("default", "p")


def _pod(objects: list[JSON]) -> JSON:
    return next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == POD[1])


def _named(objects: list[JSON], kind: str, name: str) -> JSON:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def _tolerate(objects: list[JSON], change: JSON) -> None:
    _pod(objects)["spec"].setdefault("tolerations", []).append(change["toleration"])


def _lower_request(objects: list[JSON], change: JSON) -> None:
    [container] = _pod(objects)["spec"]["containers"]  # the checker's pods have one container
    container.setdefault("resources", {}).setdefault("requests", {})[change["resource"]] = change["request"]


def _drop_selector(objects: list[JSON], change: JSON) -> None:
    selector = _pod(objects)["spec"]["nodeSelector"]
    for key, value in change["nodeSelector"].items():
        assert selector.pop(key) == value


def _relax_affinity(objects: list[JSON], change: JSON) -> None:
    terms = _pod(objects)["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    terms["nodeSelectorTerms"][change["term"]]["matchExpressions"].remove(change["requirement"])


def _drop_affinity(objects: list[JSON], change: JSON) -> None:
    node_affinity = _pod(objects)["spec"]["affinity"]["nodeAffinity"]
    key = "requiredDuringSchedulingIgnoredDuringExecution"
    assert node_affinity.pop(key) == change[key]


def _free_port(objects: list[JSON], change: JSON) -> None:
    gone = set(change["pods"])
    objects[:] = [o for o in objects if not (o["kind"] == "Pod" and f"default/{o['metadata']['name']}" in gone)]


def _uncordon(objects: list[JSON], change: JSON) -> None:
    _named(objects, "Node", change["node"])["spec"]["unschedulable"] = False


def _raise_max_skew(objects: list[JSON], change: JSON) -> None:
    _pod(objects)["spec"]["topologySpreadConstraints"][change["constraint"]]["maxSkew"] = change["maxSkew"]


def _raise_pod_capacity(objects: list[JSON], change: JSON) -> None:
    status = _named(objects, "Node", change["node"])["status"]
    status["allocatable"].update(change["allocatable"])
    status["capacity"].update(change["allocatable"])


def _declare_features(objects: list[JSON], change: JSON) -> None:
    """What the node's kubelet publishes once it supports them."""
    status = _named(objects, "Node", change["node"])["status"]
    status["declaredFeatures"] = sorted({*status.get("declaredFeatures", []), *change["declaredFeatures"]})


def _allow_preemption(objects: list[JSON], change: JSON) -> None:
    """Admission copies preemptionPolicy from the pod's PriorityClass: change it there."""
    name = _pod(objects)["spec"]["priorityClassName"]
    _named(objects, "PriorityClass", name)["preemptionPolicy"] = change["preemptionPolicy"]


APPLY: dict[str, Callable[[list[JSON], JSON], None]] = {
    "tolerate-taint": _tolerate,
    "lower-request": _lower_request,
    "drop-node-selector": _drop_selector,
    "relax-node-affinity": _relax_affinity,
    "drop-node-affinity": _drop_affinity,
    "free-host-port": _free_port,
    "uncordon": _uncordon,
    "raise-max-skew": _raise_max_skew,
    "raise-pod-capacity": _raise_pod_capacity,
    "allow-preemption": _allow_preemption,
    "declare-features": _declare_features,
}


def run(objects: list[JSON]) -> SimulationResult:
    """Simulate as the CLI does: the objects as a file (validation and admission included)."""
    return simulate(load_documents(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})))


def node_of_pod(result: SimulationResult) -> str | None:
    return next(o.node for o in result.outcomes if (o.namespace, o.name) == POD)


PRIORITY_NEVER: JSON = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "batch"},
    "value": 1000,
    "preemptionPolicy": "Never",
}


def scenarios() -> list[Any]:
    return [
        pytest.param(
            [
                make_node("n1").capacity(cpu="4").obj(),
                make_node("n2").capacity(cpu="4").unschedulable().obj(),
                make_node("n3").capacity(cpu="4").obj(),
                make_pod("u1").node("n1").req(cpu="2200m").obj(),
                make_pod("u2").node("n2").req(cpu="2").obj(),
                make_pod("u3").node("n3").req(cpu="3500m").obj(),
                make_pod("p").req(cpu="3").obj(),
            ],
            {"lower-request"},
            id="issue-cpu-and-cordon",
        ),
        pytest.param(
            [
                make_node("amd").labels(**{"kubernetes.io/arch": "amd64"}).obj(),
                make_pod("p").required_term([expr("kubernetes.io/arch", "In", ["arm64"])]).req(cpu="1").obj(),
            ],
            {"drop-node-affinity"},
            id="issue-drop-the-only-requirement",
        ),
        pytest.param(
            [
                make_node("ssd").labels(disk="ssd", zone="a").obj(),
                make_node("hdd").labels(disk="hdd", zone="b").obj(),
                make_pod("p")
                .required_term([expr("arch", "In", ["arm64"])])
                .required_term([expr("zone", "In", ["c"]), expr("disk", "In", ["ssd"])])
                .obj(),
            ],
            {"relax-node-affinity"},
            id="relax-one-requirement-of-two-terms",
        ),
        pytest.param(
            [
                make_node("gpu-0").taint("dedicated", "gpu").obj(),
                make_node("small").capacity(cpu="1").obj(),
                make_pod("p").req(cpu="2").node_selector(pool="x").obj(),
            ],
            {"combination"},
            id="selector-with-taint-or-cpu",
        ),
        pytest.param(
            [
                make_node("gpu").taint("dedicated", "gpu").capacity(cpu="1").obj(),
                make_pod("p").req(cpu="2").obj(),
            ],
            {"combination"},
            id="taint-and-cpu-together",
        ),
        pytest.param(
            [
                make_node("n1").obj(),
                make_pod("dns-old").node("n1").host_port(53, "UDP").obj(),
                make_pod("p").host_port(53, "UDP").obj(),
            ],
            {"free-host-port"},
            id="host-port",
        ),
        pytest.param(
            [make_node("only").unschedulable().obj(), make_pod("p").obj()],
            {"uncordon"},
            id="cordon",
        ),
        pytest.param(
            [
                make_node("a1").zone("z1").capacity(cpu="4").obj(),
                make_node("a2").zone("z2").capacity(cpu="4").obj(),
                make_node("a3").zone("z3").capacity(cpu="4").obj(),
                *(make_pod(f"w{i}").labels(app="web").node("a1").req(cpu="100m").obj() for i in range(4)),
                *(make_pod(f"v{i}").labels(app="web").node("a2").req(cpu="100m").obj() for i in range(2)),
                make_pod("fill").node("a3").req(cpu="4").obj(),
                make_pod("p")
                .labels(app="web")
                .req(cpu="100m")
                .spread_constraint(1, "topology.kubernetes.io/zone", match_labels={"app": "web"})
                .obj(),
            ],
            {"raise-max-skew"},
            id="spread-max-skew-ladder",
        ),
        pytest.param(
            [
                make_node("full").capacity(pods="2").obj(),
                make_pod("a").node("full").obj(),
                make_pod("b").node("full").obj(),
                make_pod("p").obj(),
            ],
            {"raise-pod-capacity"},
            id="pod-count",
        ),
        pytest.param(
            [make_node("n1").obj(), _restarter()],
            {"declare-features"},
            id="declared-features",
        ),
        pytest.param(
            [
                PRIORITY_NEVER,
                make_node("n1").capacity(cpu="2").obj(),
                make_pod("low").node("n1").req(cpu="2").obj(),
                make_pod("p").req(cpu="1").obj(),
            ],
            {"allow-preemption"},
            id="preemption-policy-never",
        ),
    ]


def _restarter() -> JSON:
    """A pod restarting all its containers on exit code 42: it needs RestartAllContainersOnContainerExits."""
    obj = make_pod("p").req(cpu="100m").obj()
    obj["spec"]["restartPolicy"] = "Never"
    obj["spec"]["containers"][0]["restartPolicy"] = "Never"
    obj["spec"]["containers"][0]["restartPolicyRules"] = [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    ]
    return obj


def _with_class(objects: list[JSON]) -> list[JSON]:
    pod = _pod(objects)
    if any(o["kind"] == "PriorityClass" for o in objects):
        pod["spec"]["priorityClassName"] = "batch"
    return objects


def _changes(fix: JSON) -> list[tuple[str, JSON]]:
    if fix["kind"] == "combination":
        return [(part["kind"], part["change"]) for part in fix["parts"]]
    return [(fix["kind"], fix["change"])]


def _check(objects: list[JSON], changes: list[tuple[str, JSON]], fix: Fix, nodes: list[str]) -> None:
    changed = copy.deepcopy(objects)
    for kind, change in changes:
        APPLY[kind](changed, change)
    result = run(changed)
    assert node_of_pod(result) in nodes, f"{fix.description}: {changes} -> {result.outcomes}"
    if fix.kind != "allow-preemption":  # a filter fix: exactly the nodes it named are feasible now
        feasible = sorted(v.node for v in result.explain(*POD).nodes if v.feasible)
        assert feasible == sorted(nodes), f"{fix.description}: feasible after {changes}: {feasible}, not {nodes}"


@pytest.mark.parametrize(("objects", "kinds"), scenarios())
def test_every_json_change_applied_literally_schedules_the_pod(objects: list[JSON], kinds: set[str]) -> None:
    """Each proposed fix (and each ladder step), applied by hand from its JSON, binds the pod where it said."""
    objects = _with_class(objects)
    result = run(copy.deepcopy(objects))
    assert node_of_pod(result) is None, "the scenario's pod must start Pending"
    expl = result.explain(*POD)
    assert kinds <= {f.kind for f in expl.fixes}, [f.description for f in expl.fixes]
    for fix, doc in zip(expl.fixes, expl.to_json()["fixes"], strict=True):
        _check(objects, _changes(doc), fix, fix.nodes)
        for step, step_doc in zip(fix.ladder, doc.get("ladder", []), strict=True):
            _check(objects, [(fix.kind, step_doc["change"])], fix, step.nodes)
