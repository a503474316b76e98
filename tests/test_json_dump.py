"""A JSON List's bound pods decoded once per distinct spec (config/json_dump.py): the same values, of the same
JSON types, as decoding the whole document; the fall-backs where that cannot be shown; and simulate's answers
and messages unchanged, with nothing it writes reaching a spec shared between pods."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest

from scheduler import caching
from scheduler import simulate as simulate_module
from scheduler.config.json_dump import KEY_PREFIX, Listed, load_json_list
from scheduler.simulate import InputError, documents_from, read_cluster, simulate
from scheduler.testing import make_node, make_pod

JSON = dict[str, Any]
# Type-exact (1, 1.0, True and "1" encode apart); keys sorted: an item's own fields come in a fixed order.
ENCODE = msgspec.msgpack.Encoder(order="sorted").encode


def bound(name: str, node: str, app: str = "web", **spec: Any) -> JSON:
    obj = (
        make_pod(name, "team")
        .req(cpu="100m", memory="256Mi")
        .toleration("k", "v", "NoSchedule")
        .labels(app=app)
        .owner("ReplicaSet", f"{app}-5d8f7c")
        .node(node)
        .obj()
    )
    obj["spec"].update(spec)
    obj["spec"]["volumes"] = [{"name": "kube-api-access", "projected": {"sources": [{"configMap": {"name": "ca"}}]}}]
    obj["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return obj


def dump(items: list[JSON], **top: Any) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items, **top}, indent=2).encode()


def generic(data: bytes) -> Any:
    return msgspec.json.decode(data)


def listed_as_whole(data: bytes) -> Listed:
    """load_json_list's document and keys, the document checked equal (values and types) to the whole decode."""
    listed = load_json_list(data)
    assert listed is not None
    assert ENCODE(listed[0]) == ENCODE(generic(data))
    return listed


def test_values_and_types_equal_the_whole_decode() -> None:
    items = [make_node(f"n{i}").obj() for i in range(3)]
    items += [bound(f"web-{i}", f"n{i % 3}", priority=0) for i in range(6)]
    items += [bound(f"api-{i}", f"n{i % 3}", app="api", priority=1) for i in range(4)]
    items += [make_pod("pending", "default").req(cpu="1").obj()]
    items += [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c", "namespace": "team"},
               "spec": {"accessModes": ["ReadWriteOnce"]}},
              {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
               "provisioner": "csi.example.com", "parameters": {"type": "ssd"}, "volumeBindingMode": None},
              {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
               "value": 1000, "globalDefault": False}]
    data = dump(items, metadata={"resourceVersion": ""})
    doc, keys, classes = listed_as_whole(data)
    # The PriorityClasses are listed as they are in the document (the same objects, in order).
    assert [id(c) for c in classes] == [id(o) for o in doc["items"] if o["kind"] == "PriorityClass"]
    assert len(classes) == 1
    pods = {o["metadata"]["name"]: o for o in doc["items"] if o["kind"] == "Pod"}
    # Every bound pod has a key; two keys (one per distinct spec); the pending pod has none.
    assert {name for name, o in pods.items() if id(o) in keys} == {n for n in pods if n != "pending"}
    assert len(set(keys.values())) == 2 and all(k.startswith(KEY_PREFIX) for k in keys.values())
    # Pods of one key: their own spec dict (nodeName differs), its values shared.
    web = [pods[f"web-{i}"] for i in range(6)]
    assert len({id(o["spec"]) for o in web}) == 6
    assert len({id(o["spec"]["containers"]) for o in web}) == 1
    assert [o["spec"]["nodeName"] for o in web] == [f"n{i % 3}" for i in range(6)]
    assert pods["pending"]["spec"] is not web[0]["spec"]


@pytest.mark.parametrize(
    ("spec_text", "shared"),
    [
        pytest.param('{"nodeName": "n\\u002d1", "containers": []}', True, id="escaped-node-name"),
        pytest.param('{"containers": [{"name": "nodeName"}], "nodeName": "n1"}', True, id="the-word-as-a-value"),
        pytest.param('{"affinity": {"nodeName": "x"}, "nodeName": "n1"}', False, id="nested-key-first"),
        pytest.param('{"nodeName": "n0", "containers": [], "nodeName": "n1"}', False, id="duplicate-key"),
        pytest.param('{"nodeName": null, "containers": []}', False, id="null"),
        pytest.param('{"nodeName": "", "containers": []}', False, id="pending"),
        pytest.param('{"nodeName": 7, "containers": []}', False, id="not-a-string"),
        pytest.param('{"containers": []}', False, id="absent"),
        pytest.param('{"priority": 1, "nodeName": "n1"}', True, id="int"),
    ],
)
def test_specs_are_shared_only_where_the_cut_is_the_node_name(spec_text: str, shared: bool) -> None:
    """Whatever the text, the values are the whole decode's; only a top-level string nodeName is shared."""
    items = ", ".join(f'{{"kind": "Pod", "metadata": {{"name": "p{i}"}}, "spec": {spec_text}}}' for i in range(2))
    data = f'{{"kind": "List", "items": [{items}]}}'.encode()
    _, keys, _ = listed_as_whole(data)
    assert (len(keys) == 2) is shared


def test_types_are_never_merged_across_keys() -> None:
    """1, 1.0, true and "1" in one place make four keys, and each pod keeps its own type."""
    items = [bound(f"p{i}", "n1", priority=value) for i, value in enumerate([1, 1.0, True, "1", 1])]
    data = dump(items)
    doc, keys, _ = listed_as_whole(data)
    assert len(set(keys.values())) == 4
    assert [type(o["spec"]["priority"]) for o in doc["items"]] == [int, float, bool, str, int]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"kind": "List", "items": [{"kind": "X", "provisioner": "x", "other": 1}]}', id="other-field"),
        pytest.param('{"kind": "Pod", "items": []}', id="not-a-list-kind"),
        pytest.param('{"items": []}', id="no-kind"),
        pytest.param('{"kind": "List", "items": {}}', id="items-not-a-list"),
        pytest.param('{"kind": "List", "items": [], "extra": 1}', id="other-top-field"),
        pytest.param('{"kind": "List", "items": [{"kind": "Pod", "spec": {"nodeName": "\\udc80"}}]}', id="surrogate"),
        pytest.param('{"kind": "List", "items": [{"kind": "Pod", "spec": {"nodeName": "a"}}', id="truncated"),
        pytest.param('{"kind": "List", "items": [1]}', id="item-not-an-object"),
        pytest.param('[{"kind": "List", "items": []}]', id="array"),
    ],
)
def test_anything_else_goes_to_the_whole_decode(text: str) -> None:
    assert load_json_list(text.encode()) is None


def random_spec(rng: random.Random) -> JSON:
    spec: JSON = {"containers": [{"name": "c", "image": rng.choice(["a", "b"]),
                                  "resources": {"requests": {"cpu": rng.choice(["1", "100m", 1, 0.5])}}}]}
    for key, values in (
        ("priority", [0, 1, 1.0, True, "0", None]),
        ("schedulerName", ["default-scheduler", "pyscheduler", None]),
        ("tolerations", [[], [{"key": "k", "operator": "Exists"}], None]),
        ("affinity", [{"nodeAffinity": {"nodeName": "x"}}, {}, None]),
    ):
        if rng.random() < 0.5:
            spec[key] = rng.choice(values)
    spec["nodeName"] = rng.choice(["n1", "n2", "n\u00e9", "", None, 3])
    keys = list(spec)
    rng.shuffle(keys)
    return {k: spec[k] for k in keys}


@pytest.mark.parametrize("seed", range(20))
def test_random_lists_decode_as_the_whole_document(seed: int) -> None:
    rng = random.Random(seed)
    items = [{"apiVersion": "v1", "kind": rng.choice(["Pod", "Pod", "Node"]), "metadata": {"name": f"o{i}"},
              "spec": random_spec(rng)} for i in range(40)]
    data = json.dumps({"kind": "List", "items": items}, indent=rng.choice([None, 1, 2])).encode()
    listed_as_whole(data)


# ---------------------------------------------------------------------------------------------------------
# Through simulate


def cluster_with_preemption() -> list[JSON]:
    """Two full nodes of shared-spec bound pods (some low priority), a DaemonSet, and pending pods that must
    preempt: simulate writes into the victims, the DaemonSet's pods and the pending pods."""
    items: list[JSON] = [make_node(f"n{i}").capacity(cpu="2", pods="10").obj() for i in range(2)]
    items.append({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                  "value": 100, "description": "preempts"})
    for i in range(8):
        pod = bound(f"web-{i}", f"n{i % 2}", priority=0)
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "500m"
        items.append(pod)
    items.append({"apiVersion": "apps/v1", "kind": "DaemonSet",
                  "metadata": {"name": "agent", "namespace": "kube-system"},
                  "spec": {"template": {"metadata": {"labels": {"app": "agent"}},
                                        "spec": {"containers": [{"name": "a", "image": "agent"}]}}}})
    for i in range(2):
        pending = make_pod(f"big-{i}", "team").req(cpu="1500m").obj()
        pending["spec"]["priorityClassName"] = "high"
        pending["spec"]["schedulerName"] = "pyscheduler"
        items.append(pending)
    return items


def outcome(result: Any) -> Any:
    return [o.to_json() for o in result.outcomes], [e.victim for e in result.cluster.evictions]


def test_simulate_answers_equal_and_shared_values_stay_unwritten(tmp_path: Path) -> None:
    items = cluster_with_preemption()
    path = tmp_path / "dump.json"
    path.write_bytes(dump(items))
    with caching.caches_enabled():
        docs = read_cluster(str(path))
        bound_pods = [o for o in docs if o["kind"] == "Pod" and o["spec"].get("nodeName")]
        assert len({id(o["spec"]["containers"]) for o in bound_pods}) == 1  # eight pods, one containers list
        specs_before = [ENCODE(o["spec"]) for o in bound_pods]
        result = simulate(docs, None, seed=0, own_objects=True)
        fast = outcome(result)
        assert fast[1], "the scenario must preempt bound pods"
        # Nothing in any bound pod's spec changed, victims' included (simulate wrote their status).
        assert [ENCODE(o["spec"]) for o in bound_pods] == specs_before
    with caching.caches_disabled():
        plain = outcome(simulate(documents_from([generic(path.read_bytes())], str(path)), None, seed=0))
    assert fast == plain


def test_mapped_file_reads_as_read_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file past MAP_AT_LEAST is mapped: the same objects, errors and file names as reading it."""
    items = cluster_with_preemption()
    path = tmp_path / "dump.json"
    path.write_bytes(dump(items))
    read = read_cluster(str(path))
    monkeypatch.setattr(simulate_module, "MAP_AT_LEAST", 0)
    mapped = read_cluster(str(path))
    assert ENCODE(list(mapped)) == ENCODE(list(read))
    bad = tmp_path / "bad.json"
    broken = copy.deepcopy(items)
    broken[3]["metadata"]["labels"] = {"app": "-bad-"}
    bad.write_bytes(dump(broken))
    with pytest.raises(InputError) as mapped_error:
        read_cluster(str(bad))
    monkeypatch.setattr(simulate_module, "MAP_AT_LEAST", 1 << 40)
    with pytest.raises(InputError) as read_error:
        read_cluster(str(bad))
    assert str(mapped_error.value) == str(read_error.value)
    assert "metadata.labels" in str(read_error.value)
    yaml_path = tmp_path / "dump.yaml"
    yaml_path.write_text("kind: List\nitems: []\n")
    monkeypatch.setattr(simulate_module, "MAP_AT_LEAST", 0)
    assert list(read_cluster(str(yaml_path))) == []


def test_interleaved_specs_past_the_remembered_places_are_each_shared() -> None:
    """More distinct specs than places of nodeName remembered (HINTS), their pods interleaved: every pod's
    spec equals the whole decode's and each distinct spec has one key."""
    from scheduler.config.json_dump import HINTS

    specs = HINTS + 4
    items = []
    for i in range(5):
        for s in range(specs):  # a field before nodeName of a length of its own: nodeName at a place of its own
            pod = bound(f"app{s}-{i}", f"n{i % 3}")
            pod["spec"] = {"hostname": "x" * (s + 1), **pod["spec"]}
            items.append(pod)
    decoy = bound("decoy", "n1")  # a nested "nodeName" first: that cut is not the spec's, so decoded alone
    decoy["spec"] = {"a": {"nodeName": "n0"}, **decoy["spec"]}
    items.append(decoy)
    doc, keys, _ = listed_as_whole(dump(items))
    pods = [o for o in doc["items"] if o["kind"] == "Pod"]
    assert len({keys[id(p)] for p in pods if id(p) in keys}) == specs
    assert [p["metadata"]["name"] for p in pods if id(p) not in keys] == ["decoy"]
