"""Bound pods that share a spec are checked and parsed once per load (validation.PodSpecMemo,
types.parse_pod_like), with every answer and message what checking each pod whole gives."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scheduler import caching
from scheduler.framework.types import _POD_FIELDS, SPEC_FIELDS, parse_pod, parse_pod_like
from scheduler.simulate import InputError, documents_from
from scheduler.testing import make_pod
from scheduler.validation import PodSpecMemo, validate

JSON = dict[str, Any]


def bound(name: str = "web-1", node: str = "node-1") -> JSON:
    """A Deployment's bound pod: requests, a toleration, a port, the service-account volume."""
    obj = (
        make_pod(name, "team")
        .req(cpu="100m", memory="256Mi")
        .toleration("k", "v", "NoSchedule")
        .host_port(8080)
        .labels(app="web")
        .owner("ReplicaSet", "web-5d8f7c")
        .node(node)
        .obj()
    )
    obj["spec"]["volumes"] = [{"name": "kube-api-access", "projected": {"sources": []}}]
    return obj


def with_spec(obj: JSON, **changes: Any) -> JSON:
    out = copy.deepcopy(obj)
    out["spec"].update(changes)
    return out


BASE = bound()


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(bound("web-2", "node-2"), id="same-spec-other-node"),
        pytest.param(bound("web-2", "Node_2"), id="same-spec-invalid-node-name"),
        pytest.param(with_spec(bound("web-2"), nodeName=7), id="same-spec-node-name-not-a-string"),
        pytest.param({**bound("Web_2"), "metadata": {"name": "Web_2", "labels": {"a": "-"}}}, id="bad-metadata"),
        pytest.param(with_spec(BASE, priority=True), id="priority-true-not-1"),
        pytest.param(with_spec(BASE, priority=1.0), id="priority-float"),
        pytest.param(with_spec(BASE, priority="0"), id="priority-string"),
        pytest.param(with_spec(BASE, tolerations=tuple(BASE["spec"]["tolerations"])), id="tuple-not-list"),
        pytest.param(with_spec(BASE, schedulerName=b"default-scheduler"), id="bytes-not-string"),
    ],
)
def test_memo_gives_what_checking_whole_gives(second: JSON) -> None:
    """After a valid pod fills the memo, a pod of equal-looking spec gets exactly validate's own errors."""
    first = with_spec(BASE, priority=0)
    memo = PodSpecMemo()
    assert validate(first, memo=memo) == []
    assert validate(second, memo=memo) == validate(second)


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(bound("web-2", "node-2"), id="same-spec-other-node"),
        pytest.param(bound("web-2", "Node_2"), id="same-spec-invalid-node-name"),
        pytest.param(with_spec(BASE, priority=False), id="priority-false-not-0"),
        pytest.param(with_spec(BASE, priority=0.0), id="priority-float"),
        pytest.param(with_spec(BASE, priority="0"), id="priority-string"),
        pytest.param(with_spec(BASE, priority=None), id="priority-null"),
        pytest.param(with_spec(BASE, priority=2**70), id="priority-beyond-64-bits"),
    ],
)
def test_json_memo_keeps_json_types_apart(second: JSON) -> None:
    """With JSON values only (MessagePack keys), 0, 0.0, False, "0" and null still get validate's own errors."""
    first = with_spec(BASE, priority=0)
    memo = PodSpecMemo(json_values=True)
    assert validate(first, memo=memo) == []
    assert validate(second, memo=memo) == validate(second)


def test_memo_remembers_only_valid_specs() -> None:
    """A spec with errors is never remembered: its next pod is checked whole again."""
    memo = PodSpecMemo()
    bad = with_spec(BASE, priority=2**40)
    assert validate(bad, memo=memo) == validate(bad) != []
    assert memo.valid == set()
    assert validate(BASE, memo=memo) == []
    assert len(memo.valid) == 1
    assert BASE["spec"]["nodeName"] == "node-1"  # the key's blanking is undone


def other_object(template: JSON) -> JSON:
    """The template's spec on another node, with every per-object field different."""
    obj = copy.deepcopy(template)
    obj["spec"]["nodeName"] = "node-9"
    obj["metadata"] = {
        "name": "api-7",
        "namespace": "other",
        "uid": "u-7",
        "labels": {"app": "api"},
        "annotations": {"a": "b"},
        "ownerReferences": [{"kind": "StatefulSet", "name": "api", "uid": "s", "apiVersion": "apps/v2",
                             "controller": True}],
        "resourceVersion": "42",
        "generation": 3,
        "creationTimestamp": "2026-02-02T00:00:00Z",
        "deletionTimestamp": "2026-02-03T00:00:00Z",
    }
    obj["status"] = {
        "phase": "Succeeded",
        "startTime": "2026-02-02T00:00:05Z",
        "nominatedNodeName": "node-8",
        "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}],
        "containerStatuses": [{"name": "c0", "allocatedResources": {"cpu": "300m"}}],
        "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "api-7-gpu-x"}],
        "extendedResourceClaimStatus": {"resourceClaimName": "api-7-ext"},
    }
    return obj


def with_claims(obj: JSON) -> JSON:
    out = copy.deepcopy(obj)
    out["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
    out["spec"]["volumes"].append({"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}})
    return out


# Fields neither pod sets differently: what the template's parse and the other object's share anyway.
UNSET = {"derived", "claim_overrides", "raw", "spec_fingerprint"}
VOLUMES = {"volumes", "pvc_names", "claim_names"}


@pytest.mark.parametrize(
    ("template", "alike"),
    [
        pytest.param(BASE, VOLUMES, id="deployment-pod"),
        pytest.param(with_claims(BASE), {"volumes", "claim_names"}, id="claims-and-ephemeral-volume"),
        # The pod-level cpu request overrides the resize status's: both count 2 cpus.
        pytest.param(with_spec(BASE, resources={"requests": {"cpu": "2"}}), VOLUMES | {"accounted"},
                     id="pod-level-requests"),
    ],
)
def test_parse_pod_like_equals_parse_pod(template: JSON, alike: set[str]) -> None:
    """Every PodInfo field of a pod parsed from a template of its spec equals parse_pod's of the pod, and the
    pods differ in every field that is not the spec's (so a field read from the template by mistake fails)."""
    obj = other_object(template)
    parsed = parse_pod(template)
    got, want = parse_pod_like(parsed, obj), parse_pod(obj)
    for name in _POD_FIELDS:
        assert getattr(got, name) == getattr(want, name), name
    # A copy of the template, which stays as it was; what plugins derive per pod is the pod's own.
    assert got is not parsed and got.derived is not parsed.derived and got.labels is not parsed.labels
    for name in _POD_FIELDS:
        assert getattr(parsed, name) == getattr(parse_pod(template), name), name
    same = {n for n in _POD_FIELDS if n not in SPEC_FIELDS and getattr(parse_pod(template), n) == getattr(want, n)}
    assert same == UNSET | alike


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        pytest.param({**other_object(BASE), "metadata": {"name": "x", "generation": "many"}},
                     "metadata.generation: expected an integer, got 'many'", id="bad-generation"),
        pytest.param({**other_object(BASE), "metadata": {"name": "x", "annotations": ["a"]}},
                     "metadata.annotations: expected a map of strings", id="bad-annotations"),
    ],
)
def test_parse_pod_like_errors_are_parse_pods(obj: JSON, message: str) -> None:
    """A pod the fast path cannot read raises parse_pod's own error."""
    with pytest.raises(Exception, match=message):
        parse_pod_like(parse_pod(BASE), obj)


def test_load_names_the_pod_at_fault() -> None:
    """The third pod of a spec two valid pods had fails on its own nodeName, named by its item and name."""
    pods = [bound("web-1", "node-1"), bound("web-2", "node-2"), bound("web-3", "Node_3")]
    doc = {"kind": "List", "items": pods}
    with pytest.raises(InputError) as got:
        documents_from([copy.deepcopy(doc)], "dump")
    with caching.caches_disabled(), pytest.raises(InputError) as whole:
        documents_from([copy.deepcopy(doc)], "dump")
    assert str(got.value) == str(whole.value)
    assert str(got.value).startswith("dump: document 1: items[2] (Pod web-3): spec.nodeName: Invalid value: \"Node_3\"")


def test_load_parses_each_pod_as_parse_pod() -> None:
    """A load's parsed pods (shared specs, after priority admission) equal parse_pod of each admitted pod."""
    pods = [bound(f"web-{i}", f"node-{i}") for i in range(3)] + [other_object(BASE)]
    with caching.caches_enabled():  # the memo is a cache: on whatever PYSCHEDULER_DISABLE_CACHES says
        docs = documents_from([{"kind": "List", "items": pods}], "dump")
    for obj in docs:
        got, want = docs.parsed[id(obj)], parse_pod(obj)
        assert [getattr(got, n) for n in _POD_FIELDS] == [getattr(want, n) for n in _POD_FIELDS]
    assert len({id(docs.parsed[id(o)].tolerations) for o in docs}) == 1  # one spec, parsed once


@pytest.mark.parametrize("labels", [{"app": {"a": 1}}, {"app": ["x"]}, {"app": "-bad-"}, {}])
def test_label_memo_gives_what_checking_whole_gives(labels: JSON) -> None:
    """The memo of valid label maps: an invalid map (unhashable values too) gets validate's own errors, also
    after a valid map of the same keys was remembered."""
    memo = PodSpecMemo(json_values=True)
    assert validate(bound("web-1"), memo=memo) == []
    obj = bound("web-2")
    obj["metadata"]["labels"] = labels
    assert validate(obj, memo=memo) == validate(copy.deepcopy(obj))


PREEMPTED = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
RESIZING = {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}


@pytest.mark.parametrize(
    "conditions",
    [
        pytest.param([{"type": "Ready", "status": "True"}], id="ready"),
        pytest.param([{"type": "Ready"}, PREEMPTED], id="preempted"),
        pytest.param([RESIZING, {"type": "Ready"}], id="resize-pending"),
        pytest.param([PREEMPTED, RESIZING], id="both"),
        pytest.param(["Ready", PREEMPTED], id="a-condition-not-an-object"),
        pytest.param([{"type": {"x": 1}}, PREEMPTED], id="an-unhashable-type"),
        pytest.param({"type": "Ready"}, id="not-a-list"),
        pytest.param(None, id="null"),
    ],
)
def test_parse_pod_like_reads_conditions_as_parse_pod(conditions: Any) -> None:
    """The one pass over condition types parse_pod_like makes answers what parse_pod's loops answer."""
    obj = bound("web-2", "node-2")
    obj["status"] = {"conditions": conditions, "containerStatuses": [{"name": "c0"}]}
    got, want = parse_pod_like(parse_pod(BASE), obj), parse_pod(obj)
    assert want.preempted_by_scheduler is (isinstance(conditions, list) and PREEMPTED in conditions)
    assert (got.preempted_by_scheduler, got.accounted) == (want.preempted_by_scheduler, want.accounted)
    for name in _POD_FIELDS:
        assert getattr(got, name) == getattr(want, name), name
