"""Simulate semantics found by independent cases against the upstream binary: what a dump's cluster had that the
file does not say (namespaces), what kube-apiserver accepts (Gt with `1.5`), what a dump's state means (a
claim still Pending was never provisioned)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.simulate import load_documents, simulate
from scheduler.testing import make_node, make_pod

JSON = dict[str, Any]
NOT_HELPFUL = "Preemption is not helpful for scheduling"


def _run(objects: list[JSON]) -> dict[str, str | None]:
    """Each scheduled pod's message (None when bound), after load_documents' checks."""
    result = simulate(load_documents(_stream(objects)))
    return {f"{o.namespace}/{o.name}": o.message for o in result.outcomes}


def _stream(objects: list[JSON]) -> str:
    import json

    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})


def _claim(name: str, cls: str, phase: str | None) -> JSON:
    claim: JSON = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "storageClassName": cls,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    if phase is not None:
        claim["status"] = {"phase": phase}
    return claim


IMMEDIATE = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "fast"},
    "provisioner": "ebs.csi.aws.com",
    "volumeBindingMode": "Immediate",
}


@pytest.mark.parametrize(
    ("phase", "bound"),
    [
        pytest.param("Pending", False, id="dump-says-pending"),
        pytest.param(None, True, id="never-created"),
    ],
)
def test_a_dumps_pending_immediate_claim_is_not_provisioned(phase: str | None, bound: bool) -> None:
    """A claim of an Immediate class recorded Pending was not provisioned in its cluster: the pod stays Pending
    with upstream's PreFilter message. A claim without status (written by hand, not created yet) is
    provisioned on creation, as a provisioner would."""
    pod = make_pod("db", "default").req(cpu="100m").obj()
    pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    messages = _run([make_node("n1").capacity(cpu="4").obj(), IMMEDIATE, _claim("data", "fast", phase), pod])
    if bound:
        assert messages == {"default/db": None}
    else:
        # Upstream's words, whole (tests/core/test_volume_scheduling.py; e2e test_volumes.py against the binary).
        unbound = "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"
        assert messages == {"default/db": unbound}


@pytest.mark.parametrize(
    ("operator", "value"),
    [
        pytest.param("Gt", "1.5", id="gt-not-an-integer"),
        pytest.param("Lt", "abc", id="lt-not-a-number"),
    ],
)
def test_gt_lt_with_a_non_integer_is_accepted_and_matches_nothing(operator: str, value: str) -> None:
    """kube-apiserver requires exactly one value for Gt/Lt, not an integer: the pod is accepted, and its term,
    which cannot be parsed, matches no node (upstream's node affinity message)."""
    pod = make_pod("p", "default").req(cpu="100m").obj()
    term = {"matchExpressions": [{"key": "gen", "operator": operator, "values": [value]}]}
    required = {"nodeSelectorTerms": [term]}
    pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    messages = _run([make_node("n1").capacity(cpu="4").label("gen", "3").obj(), pod])
    assert messages == {
        "default/p": "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
        f" preemption: 0/1 nodes are available: 1 {NOT_HELPFUL}."
    }


def _anti_affinity_to_default(pod: JSON) -> JSON:
    term = {
        "labelSelector": {"matchLabels": {"app": "x"}},
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "default"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    pod["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return pod


@pytest.mark.parametrize(
    ("namespace_objects", "guard_namespace"),
    [
        pytest.param([], "team-a", id="default-omitted-from-the-file"),
        pytest.param([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}], "team-a",
                     id="default-without-its-label"),
        pytest.param([], "default", id="guard-in-default"),
    ],
)
def test_namespaces_carry_their_name_label_and_the_system_ones_exist(
    namespace_objects: list[JSON], guard_namespace: str
) -> None:
    """A bound pod's required anti-affinity to app=x in namespaces labelled `kubernetes.io/metadata.name:
    default` keeps an app=x pod of `default` off its node, as upstream does, whether the file has no
    Namespace objects (a `kubectl get nodes,pods` dump) or a `default` without the label kube-apiserver adds."""
    node = make_node("n1").capacity(cpu="4").label("kubernetes.io/hostname", "n1").obj()
    guard = _anti_affinity_to_default(make_pod("guard", guard_namespace).req(cpu="100m").node("n1").obj())
    pod = make_pod("p", "default").labels(app="x").req(cpu="100m").obj()
    messages = _run([*namespace_objects, node, guard, pod])
    assert messages == {
        "default/p": "0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules."
        " preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    }
