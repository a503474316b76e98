"""documents_from's one-pass intake against its stage-by-stage path: the same objects, parses and first error.

With the file's PriorityClasses read ahead, one pass validates, checks duplicates, admits priorities and parses
each object, keeping the later stages' first errors until validation has passed. The stage-by-stage path
(taken when the classes cannot be read ahead) is the reference: every mix of errors below must give its answer.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from scheduler import simulate
from scheduler.simulate import InputError, documents_from

JSON = dict[str, Any]


def _pod(name: str, **fields: Any) -> JSON:
    pod: JSON = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}]},
    }
    for path, value in fields.items():
        section, _, field = path.partition("__")
        pod[section][field] = value
    return pod


def _node(name: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def _class(name: str, value: Any, **fields: Any) -> JSON:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, **fields}


def _daemonset(name: str, class_name: str) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"priorityClassName": class_name, "containers": [{"name": "c", "image": "i"}]},
            },
        },
    }


# One of each: what the stage it fails at is (None: valid).
PIECES: list[tuple[str | None, Any]] = [
    (None, lambda k: _pod(f"ok-{k}", spec__nodeName="n1")),
    (None, lambda k: _pod(f"pending-{k}")),
    (None, lambda k: _pod(f"high-{k}", spec__priorityClassName="high")),
    (None, lambda k: _node(f"node-{k}")),
    (None, lambda k: {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{k}"}}),
    ("validation", lambda k: _pod(f"Bad_{k}")),
    ("validation", lambda k: _pod(f"badcpu-{k}", spec__containers=[{"name": "c", "image": "i", "resources": {
        "requests": {"cpu": "lots"}}}])),
    ("duplicate", lambda k: _pod("twin", spec__nodeName="n1")),
    ("admission", lambda k: _pod(f"noclass-{k}", spec__priorityClassName="missing")),
    ("admission", lambda k: _pod(f"wrongprio-{k}", spec__priorityClassName="high", spec__priority=5)),
    ("admission", lambda k: _daemonset(f"agent-{k}", "missing")),
    ("parse", lambda k: _pod(f"badgen-{k}", metadata__generation="x")),
]


def _answer(docs: list[Any], *, ahead: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    """documents_from's error, or its objects with every parse (as comparable values)."""
    with monkeypatch.context() as patch:
        if not ahead:
            patch.setattr(simulate, "_classes_ahead", lambda docs, listed=None: None)
        try:
            got = documents_from(copy.deepcopy(docs), "f")
        except InputError as exc:
            return "error", str(exc)
    assert got.namespaces == simulate._namespaces(list(got))  # as simulate would find them
    parses = sorted(repr(sorted(vars(info).items()) if hasattr(info, "__dict__") else _slots(info))
                    for info in got.parsed.values())
    return "ok", (list(got), parses, len(got.nodes))


def _slots(info: Any) -> list[tuple[str, Any]]:
    names = [n for cls in type(info).__mro__ for n in getattr(cls, "__slots__", ())]
    return sorted((n, repr(getattr(info, n, None))) for n in names if n != "__weakref__")


@pytest.mark.parametrize("seed", range(60))
def test_one_pass_gives_the_stages_answer(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    objects = [rng.choice(PIECES)[1](k) for k in range(rng.randint(1, 9))]
    if rng.random() < 0.6:
        objects.insert(rng.randint(0, len(objects)), _class("high", 1000))
    if rng.random() < 0.3:
        objects.insert(rng.randint(0, len(objects)), _class("everyone", 7, globalDefault=True))
    docs: list[Any] = [{"apiVersion": "v1", "kind": "List", "items": objects}]
    if rng.random() < 0.4:  # some objects as documents of their own, after the List
        docs += [objects.pop() for _ in range(min(len(objects), 2))]
    staged = _answer(docs, ahead=False, monkeypatch=monkeypatch)
    assert _answer(docs, ahead=True, monkeypatch=monkeypatch) == staged


MARKS = {
    "validation": "Invalid value",
    "duplicate": "duplicate Pod default/twin",
    "admission": "no PriorityClass with name missing was found",
    "parse": "metadata.generation: expected an integer",
}


def test_every_stage_is_met_and_the_earliest_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each stage's error alone, then behind an earlier stage's (which is the one reported), both paths."""
    examples = {stage: make for stage, make in PIECES if stage is not None}
    order = list(MARKS)
    for i, stage in enumerate(order):
        culprit = examples[stage](0)
        alone = [culprit, copy.deepcopy(culprit)] if stage == "duplicate" else [culprit]
        for earlier in [stage, *order[:i]]:  # an earlier stage's error later in the file still wins
            first = examples[earlier](1)
            extra = [] if earlier == stage else [first, copy.deepcopy(first)] if earlier == "duplicate" else [first]
            items = [*alone, *extra]
            docs = [{"kind": "List", "items": items}]
            answers = [_answer(docs, ahead=a, monkeypatch=monkeypatch) for a in (True, False)]
            assert answers[0] == answers[1], (stage, earlier)
            kind, message = answers[0]
            assert kind == "error" and MARKS[earlier] in message, (stage, earlier, message)


def test_classes_are_read_ahead_only_when_they_would_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PriorityClass after the pods that use it is found ahead; a bad one leaves the stages to report it."""
    late = [_pod("p", spec__priorityClassName="high"), _class("high", 1000)]
    assert simulate._classes_ahead([{"kind": "List", "items": late}]) is not None
    got = documents_from([{"kind": "List", "items": copy.deepcopy(late)}], "f")
    assert got[0]["spec"]["priority"] == 1000
    bad = [_pod("p"), _class("high", "much")]
    assert simulate._classes_ahead([{"kind": "List", "items": bad}]) is None
    with pytest.raises(InputError, match=r"PriorityClass high: value: must be a 32-bit integer"):
        documents_from([{"kind": "List", "items": bad}], "f")
    # An object that merely has "items" is no List: its items are not read as objects.
    not_a_list = {**_pod("q"), "items": [_class("high", 5)]}
    assert simulate._classes_ahead([not_a_list]) == simulate._priority_classes([])


@pytest.mark.parametrize("seed", range(30))
def test_a_json_list_read_from_a_file_gives_the_stages_answer(
    seed: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Through read_cluster, where the JSON List's decoder lists the PriorityClasses (a class without a value
    among them: the stages refuse it at admission, and so must the one pass)."""
    rng = random.Random(seed)
    objects = [rng.choice(PIECES)[1](k) for k in range(rng.randint(1, 9))]
    for cls in (_class("high", 1000), _class("everyone", 7, globalDefault=True), _class("novalue", 0)):
        if rng.random() < 0.5:
            if cls["metadata"]["name"] == "novalue":
                del cls["value"]
            objects.insert(rng.randint(0, len(objects)), cls)
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))

    def read(ahead: bool) -> tuple[str, Any]:
        with monkeypatch.context() as patch:
            if not ahead:
                patch.setattr(simulate, "_classes_ahead", lambda docs, listed=None: None)
            try:
                got = simulate.read_cluster(str(path))
            except InputError as exc:
                return "error", str(exc)
        return "ok", (list(got), sorted(repr(_slots(info)) for info in got.parsed.values()))

    assert read(True) == read(False)


@pytest.mark.parametrize("shape", ["default class", "named class", "no class", "given priority"])
def test_pods_of_one_spec_are_admitted_once_and_alike(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bound pods sharing a spec: priority admission runs for the first, and every later one gets the same
    fields in the same key order as the stage-by-stage path gives it (which admits each pod itself)."""
    table: dict[str, dict[str, Any]] = {
        "default class": {},
        "named class": {"spec__priorityClassName": "high"},
        "no class": {},
        "given priority": {"spec__priority": 1000, "spec__priorityClassName": "high"},
    }
    fields = table[shape]
    classes = [] if shape == "no class" else [_class("high", 1000), _class("everyone", 7, globalDefault=True)]
    pods = [_pod(f"web-{k}", spec__nodeName=f"n{k % 2}", **fields) for k in range(4)]
    calls: list[str] = []
    admit = simulate._admit_priority

    def counted(spec: JSON, known: Any) -> None:
        calls.append(str(spec.get("nodeName")))
        admit(spec, known)

    def specs(ahead: bool) -> list[str]:
        with monkeypatch.context() as patch:
            patch.setattr(simulate, "_admit_priority", counted)
            if not ahead:
                patch.setattr(simulate, "_classes_ahead", lambda docs, listed=None: None)
            got = documents_from([{"kind": "List", "items": [*classes, *copy.deepcopy(pods)]}], "f")
        return [json.dumps(obj["spec"]) for obj in got if obj["kind"] == "Pod"]  # (key order kept)

    staged = specs(False)
    assert len(calls) == 4
    calls.clear()
    assert specs(True) == staged
    assert len(calls) == 1  # the first pod's spec; the other three took what it was given
    assert all('"priority": ' in spec for spec in staged)
