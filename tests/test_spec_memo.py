"""Bound pods that share a spec are checked once per load (validation.PodSpecMemo), with every message what
checking each pod whole gives."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scheduler import caching
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


def test_memo_remembers_only_valid_specs() -> None:
    """A spec with errors is never remembered: its next pod is checked whole again."""
    memo = PodSpecMemo()
    bad = with_spec(BASE, priority=2**40)
    assert validate(bad, memo=memo) == validate(bad) != []
    assert memo.valid == set()
    assert validate(BASE, memo=memo) == []
    assert len(memo.valid) == 1
    assert BASE["spec"]["nodeName"] == "node-1"  # the key's blanking is undone


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

