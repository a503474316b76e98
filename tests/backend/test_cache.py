"""Cache: assumed pods, terminating/finished pods, placeholder nodes, incremental snapshot, drift repair."""

from __future__ import annotations

import dataclasses
import json
import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.backend.cache.cache import Cache, Drift, node_update_action, pod_update_action
from scheduler.framework.interface import ActionType
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import (
    REGION_LABEL,
    ZONE_LABEL,
    NodeInfo,
    NodeRecord,
    PodInfo,
    Resource,
    Taint,
    zone_key,
)
from scheduler.testing import make_node, make_pod


def pod(name: str, node: str = "", cpu: str = "500m", rv: str = "1", port: int = 0) -> PodInfo:
    """A pod with a stable uid (uid-<name>) requesting cpu, optionally bound and holding a host port."""
    builder = make_pod(name).uid(f"uid-{name}").req(cpu=cpu)
    if port:
        builder.host_port(port)
    if node:
        builder.node(node)
    info = builder.info()
    info.resource_version = rv
    return info


def node(name: str, zone: str = "z1", rv: str = "1", images: tuple[str, ...] = ()) -> NodeRecord:
    builder = make_node(name).zone(zone, "r")
    for image in images:
        builder.image(image, 1000)
    record = builder.info()
    record.resource_version = rv
    return record


def cpu_on(cache: Cache, name: str) -> int:
    info = cache.get_node(name)
    assert info is not None
    return info.requested.milli_cpu


# ---------------------------------------------------------------------------------------------------------
# Assumed pods


def test_assume_then_watch_confirms_without_double_counting() -> None:
    """An assumed pod counts once; the watch's add of the same uid replaces the assumed copy."""
    cache = Cache()
    cache.add_node(node("n1"))
    pending = pod("p")
    assumed = cache.assume_pod(pending, "n1")
    assert assumed.node_name == "n1" and pending.node_name == ""
    assert cache.is_assumed("uid-p") and cpu_on(cache, "n1") == 500
    cache.finish_binding("uid-p")
    assert cache.binding_finished("uid-p")
    cache.add_pod(pod("p", node="n1", rv="2"))
    assert not cache.is_assumed("uid-p")
    assert cpu_on(cache, "n1") == 500
    held = cache.get_pod("uid-p")
    assert held is not None and held.resource_version == "2"


def test_watch_shows_assumed_pod_on_another_node() -> None:
    """When the API says the assumed pod landed elsewhere, the API wins and the pod moves."""
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    cache.assume_pod(pod("p"), "n1")
    cache.update_pod(pod("p"), pod("p", node="n2"))
    assert cpu_on(cache, "n1") == 0 and cpu_on(cache, "n2") == 500
    assert not cache.is_assumed("uid-p")


def test_forget_removes_assumed_pod_only() -> None:
    """forget_pod undoes an assumption, but never removes a pod the watch confirmed."""
    cache = Cache()
    cache.add_node(node("n1"))
    cache.assume_pod(pod("a"), "n1")
    cache.add_pod(pod("b", node="n1"))
    forgotten = cache.forget_pod("uid-a")
    assert forgotten is not None and forgotten.uid == "uid-a"
    assert cache.forget_pod("uid-b") is None
    assert cpu_on(cache, "n1") == 500 and cache.pod_count() == 1 and cache.assumed_count() == 0


def test_assume_twice_is_refused() -> None:
    """A pod already in the cache cannot be assumed again (upstream returns an error)."""
    cache = Cache()
    cache.add_node(node("n1"))
    cache.assume_pod(pod("p"), "n1")
    with pytest.raises(ValueError, match="is in the cache"):
        cache.assume_pod(pod("p"), "n1")


def test_unassigned_pod_is_ignored() -> None:
    """Pending pods belong to the queue; the cache ignores pods without a node."""
    cache = Cache()
    cache.add_pod(pod("p"))
    assert cache.pod_count() == 0 and cache.get_node("") is None


# ---------------------------------------------------------------------------------------------------------
# Terminating and finished pods


@pytest.mark.parametrize(
    ("terminating", "phase", "holds"),
    [
        pytest.param(False, "Running", True, id="running"),
        pytest.param(True, "Running", True, id="terminating-keeps-resources-and-ports"),
        pytest.param(False, "Succeeded", False, id="succeeded-releases"),
        pytest.param(False, "Failed", False, id="failed-releases"),
        pytest.param(True, "Failed", False, id="terminating-and-failed-releases"),
    ],
)
def test_pod_lifecycle_and_resources(terminating: bool, phase: str, holds: bool) -> None:
    """Terminating pods keep cpu and host ports until deleted; Succeeded/Failed pods release them."""
    cache = Cache()
    cache.add_node(node("n1"))
    running = pod("p", node="n1", port=8080)
    cache.add_pod(running)
    changed = dataclasses.replace(running, terminating=terminating, phase=phase, resource_version="2")
    cache.update_pod(running, changed)
    info = cache.get_node("n1")
    assert info is not None
    assert (info.requested.milli_cpu == 500) is holds
    assert info.used_ports.check_conflict(("0.0.0.0", "TCP", 8080)) is holds
    assert (cache.get_pod("uid-p") is not None) is holds


def test_finished_pod_added_from_a_list_is_not_placed() -> None:
    """A Succeeded pod seen for the first time never takes resources."""
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_pod(dataclasses.replace(pod("p", node="n1"), phase="Succeeded"))
    assert cpu_on(cache, "n1") == 0 and cache.pod_count() == 0


# ---------------------------------------------------------------------------------------------------------
# Placeholder and deleted nodes


def test_pod_before_its_node_uses_a_placeholder_outside_the_snapshot() -> None:
    """A pod whose node is unknown sits on a placeholder NodeInfo that no snapshot lists."""
    cache = Cache()
    cache.add_pod(pod("p", node="n1"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert snap.node_info_list == [] and cache.node_count() == 0
    placeholder = cache.get_node("n1")
    assert placeholder is not None and placeholder.node is None and "uid-p" in placeholder.pods
    cache.add_node(node("n1"))
    cache.update_snapshot(snap)
    assert [n.name for n in snap.node_info_list] == ["n1"]
    assert snap.node_info_list[0].requested.milli_cpu == 500


def test_deleted_node_with_pods_leaves_tree_but_keeps_info_until_last_pod_goes() -> None:
    """A deleted node leaves tree and snapshot at once; its NodeInfo lives while pods remain."""
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    cache.add_pod(pod("p", node="n1"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    removed = cache.remove_node("n1")
    assert removed is not None and removed.name == "n1"
    cache.update_snapshot(snap)
    assert [n.name for n in snap.node_info_list] == ["n2"] and "n1" not in snap.node_info_map
    info = cache.get_node("n1")
    assert info is not None and info.node is None
    cache.remove_pod("uid-p")
    assert cache.get_node("n1") is None
    assert cache.remove_node("n1") is None


# ---------------------------------------------------------------------------------------------------------
# Update flags


def _with(record: NodeRecord, **changes: object) -> NodeRecord:
    return dataclasses.replace(record, **changes)  # type: ignore[arg-type]


BASE = node("n1")


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        pytest.param(_with(BASE, resource_version="9"), ActionType(0), id="resource-version-only"),
        pytest.param(_with(BASE, labels={**BASE.labels, "a": "b"}), ActionType.UPDATE_NODE_LABEL, id="label"),
        pytest.param(
            _with(BASE, taints=(Taint("k", "", "NoSchedule"),)), ActionType.UPDATE_NODE_TAINT, id="taint"
        ),
        pytest.param(_with(BASE, unschedulable=True), ActionType.UPDATE_NODE_TAINT, id="cordon-is-taint"),
        pytest.param(
            _with(BASE, allocatable=Resource(milli_cpu=1)), ActionType.UPDATE_NODE_ALLOCATABLE, id="alloc"
        ),
        pytest.param(_with(BASE, images={"img:1": 5}), ActionType(0), id="images-only-no-event"),
        pytest.param(
            _with(BASE, declared_features=frozenset({"RestartAllContainersOnContainerExits"})),
            ActionType.UPDATE_NODE_DECLARED_FEATURE,
            id="declared-features",
        ),
        pytest.param(
            _with(BASE, labels={}, unschedulable=True),
            ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT,
            id="label-and-cordon",
        ),
    ],
)
def test_node_update_action(new: NodeRecord, expected: ActionType) -> None:
    """node_update_action reports exactly the flags of what changed."""
    assert node_update_action(BASE, new) == expected


def test_update_node_returns_flags_and_add_for_unknown() -> None:
    """Cache.update_node returns ADD for an unknown node and the change's flags otherwise."""
    cache = Cache()
    assert cache.update_node(BASE, BASE) == ActionType.ADD
    assert cache.update_node(BASE, _with(BASE, unschedulable=True)) == ActionType.UPDATE_NODE_TAINT


P0 = pod("x", node="n1", cpu="1")


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        pytest.param(_with(P0, resource_version="2"), ActionType.UPDATE, id="generic-update"),  # type: ignore[arg-type]
        pytest.param(_with(P0, labels={"a": "b"}), ActionType.UPDATE_POD_LABEL, id="label"),  # type: ignore[arg-type]
        pytest.param(
            _with(P0, requests=Resource(milli_cpu=100)),  # type: ignore[arg-type]
            ActionType.UPDATE_POD_SCALE_DOWN,
            id="scale-down",
        ),
    ],
)
def test_pod_update_action(new: PodInfo, expected: ActionType) -> None:
    """pod_update_action reports label and scale-down changes, else a generic update."""
    assert pod_update_action(P0, new) == expected


# ---------------------------------------------------------------------------------------------------------
# Snapshot


def test_mission_story_through_cache_snapshot() -> None:
    """Field story 1 end to end: after the worker joins, the next snapshot lists all 4 nodes once."""
    cache = Cache()
    snap = Snapshot()
    for i in (1, 2, 3):
        cache.add_node(make_node(f"ss-stg-ma-0{i}").zone("200002", "sh").info())
    cache.update_snapshot(snap)
    cache.add_node(make_node("ss-stg-test-01").zone("200004", "sh").info())
    cache.update_snapshot(snap)
    names = [n.name for n in snap.node_info_list]
    assert names == ["ss-stg-ma-01", "ss-stg-test-01", "ss-stg-ma-02", "ss-stg-ma-03"]
    assert set(snap.node_info_map) == set(names)
    assert set(snap.node_image_states) == set(names)  # every node has its image view, no deleted node keeps one


def test_update_snapshot_clones_only_changed_nodes() -> None:
    """Unchanged NodeInfos are reused by identity; changed ones are fresh clones."""
    cache = Cache()
    for i in range(5):
        cache.add_node(node(f"n{i}"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    before = dict(snap.node_info_map)
    cache.add_pod(pod("p", node="n3"))
    cache.update_snapshot(snap)
    changed = [name for name, info in snap.node_info_map.items() if info is not before[name]]
    assert changed == ["n3"]
    assert snap.node_info_map["n3"].requested.milli_cpu == 500
    assert before["n3"].requested.milli_cpu == 0  # the old snapshot object was not mutated


def test_snapshot_is_isolated_from_later_cache_changes() -> None:
    """A cycle's snapshot does not change when the cache changes afterwards."""
    cache = Cache()
    cache.add_node(node("n1"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    cache.add_pod(pod("p", node="n1"))
    assert snap.node_info_map["n1"].requested.milli_cpu == 0 and not snap.node_info_map["n1"].pods


def test_image_states_follow_node_images() -> None:
    """image_states counts tree nodes per image (first holder's size), through adds, image changes, removals."""
    cache = Cache()
    snap = Snapshot()
    cache.add_node(node("n1", images=("a:1", "b:1")))
    cache.add_node(node("n2", images=("a:1",)))
    cache.update_snapshot(snap)
    assert {k: v[1] for k, v in snap.image_states.items()} == {"a:1": 2, "b:1": 1}
    cache.update_node(node("n2", images=("a:1",)), node("n2", rv="2", images=("c:1",)))
    cache.remove_node("n1")
    cache.update_snapshot(snap)
    assert {k: v[1] for k, v in snap.image_states.items()} == {"c:1": 1}
    assert snap.node_image_states["n2"] is snap.image_states


@pytest.mark.parametrize("seed", range(40))
def test_image_counts_equal_upstreams_sets_of_holders(seed: int) -> None:
    """Random joins, image changes and removals (sizes differing per node): the cache's (size, holders) per
    image equals upstream's imageStates, kept here as it keeps them, a set of node names and the size its
    first holder reported."""
    rng = random.Random(seed)
    cache = Cache()
    model: dict[str, tuple[int, set[str]]] = {}
    records: dict[str, NodeRecord] = {}
    for step in range(60):
        name = f"n{rng.randrange(6)}"
        if name in records and rng.random() < 0.3:
            cache.remove_node(name)
            for image in records.pop(name).images:
                model[image][1].discard(name)
                if not model[image][1]:
                    del model[image]
        else:
            builder = make_node(name).zone("z1", "r")
            for image in rng.sample([f"img{i}:1" for i in range(8)], rng.randrange(4)):
                builder.image(image, rng.choice([100, 200, 300]))
            record = builder.info()
            record.resource_version = str(step)
            old = records.get(name)
            if old is None:
                cache.add_node(record)
            else:
                cache.update_node(old, record)
            if old is not None and old.images != record.images:
                for image in old.images:
                    model[image][1].discard(name)
                    if not model[image][1]:
                        del model[image]
            if old is None or old.images != record.images:
                for image, size in record.images.items():
                    model.setdefault(image, (size, set()))[1].add(name)
            records[name] = record
        assert cache.image_view() == {image: (size, len(names)) for image, (size, names) in model.items()}


def _node_state(info: NodeInfo) -> tuple[object, ...]:
    return (
        info.name,
        info.node,
        sorted(info.pods),
        dataclasses.astuple(info.requested),
        info.non_zero_cpu,
        info.non_zero_memory,
        sorted(info.used_ports),
    )


NODE_NAMES = [f"n{i}" for i in range(6)]
POD_NAMES = [f"p{i}" for i in range(10)]

cache_op = st.one_of(
    st.tuples(st.just("add_node"), st.sampled_from(NODE_NAMES), st.sampled_from(["z1", "z2", "z3"])),
    st.tuples(st.just("relabel_node"), st.sampled_from(NODE_NAMES), st.sampled_from(["z1", "z2", "z3"])),
    st.tuples(st.just("image_node"), st.sampled_from(NODE_NAMES), st.sampled_from(["i1", "i2"])),
    st.tuples(st.just("remove_node"), st.sampled_from(NODE_NAMES), st.just("")),
    st.tuples(st.just("add_pod"), st.sampled_from(POD_NAMES), st.sampled_from(NODE_NAMES)),
    st.tuples(st.just("assume"), st.sampled_from(POD_NAMES), st.sampled_from(NODE_NAMES)),
    st.tuples(st.just("forget"), st.sampled_from(POD_NAMES), st.just("")),
    st.tuples(st.just("finish"), st.sampled_from(POD_NAMES), st.just("")),
    st.tuples(st.just("remove_pod"), st.sampled_from(POD_NAMES), st.just("")),
    st.tuples(st.just("snapshot"), st.just(""), st.just("")),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(cache_op, max_size=50))
def test_property_incremental_snapshot_equals_fresh_snapshot(ops: list[tuple[str, str, str]]) -> None:
    """Over any sequence of node/pod changes, the incrementally updated snapshot equals one built from
    scratch: same node order (each node once), same per-node pods/requests/ports, same image counts."""
    cache = Cache()
    snap = Snapshot()
    for counter, (kind, a, b) in enumerate(ops, start=2):
        rv = str(counter)
        current = cache.get_node(a)
        record = current.node if current is not None else None
        if kind == "add_node":
            cache.add_node(node(a, zone=b, rv=rv))
        elif kind == "relabel_node" and record is not None:
            cache.update_node(record, dataclasses.replace(record, labels={ZONE_LABEL: b, REGION_LABEL: "r"}))
        elif kind == "image_node" and record is not None:
            cache.update_node(record, dataclasses.replace(record, images={b: 1}, resource_version=rv))
        elif kind == "remove_node":
            cache.remove_node(a)
        elif kind == "add_pod":
            cache.add_pod(pod(a, node=b, rv=rv))
        elif kind == "assume" and cache.get_pod(f"uid-{a}") is None:
            cache.assume_pod(pod(a), b)
        elif kind == "forget":
            cache.forget_pod(f"uid-{a}")
        elif kind == "finish":
            cache.finish_binding(f"uid-{a}")
        elif kind == "remove_pod":
            cache.remove_pod(f"uid-{a}")
        elif kind == "snapshot":
            cache.update_snapshot(snap)
    cache.update_snapshot(snap)
    fresh = cache.fresh_snapshot()
    names = [n.name for n in snap.node_info_list]
    assert names == [n.name for n in fresh.node_info_list]
    assert len(set(names)) == len(names) == cache.node_count()
    assert set(snap.node_info_map) == set(names)
    assert all(snap.node_info_map[n.name] is n for n in snap.node_info_list)  # the list is never stale
    assert [_node_state(n) for n in snap.node_info_list] == [_node_state(n) for n in fresh.node_info_list]
    recount = Snapshot.from_node_infos(snap.node_info_list)
    assert {k: v[1] for k, v in snap.image_states.items()} == {k: v[1] for k, v in recount.image_states.items()}
    for info in snap.node_info_list:  # aggregates agree with the pods they hold
        assert info.requested.milli_cpu == sum(p.accounted_requests.milli_cpu for p in info.pods.values())
    assert {z for z in (zone_key(n.node.labels) for n in snap.node_info_list if n.node)} == set(
        cache.node_tree.zones()
    )


def test_update_snapshot_is_cheap_at_5000_nodes() -> None:
    """With 5000 nodes and one change, update_snapshot stays in the low milliseconds (measured ~0.6 ms)."""
    cache = Cache()
    for i in range(5000):
        cache.add_node(NodeRecord(name=f"n{i}", labels={ZONE_LABEL: f"z{i % 3}", REGION_LABEL: "r"}))
    snap = Snapshot()
    cache.update_snapshot(snap)
    pods = [pod(f"b{i}") for i in range(200)]
    start = time.perf_counter()
    for i, p in enumerate(pods):
        cache.assume_pod(p, f"n{i}")
        cache.update_snapshot(snap)
    per_call = (time.perf_counter() - start) / len(pods)
    assert len(snap.node_info_list) == 5000
    assert per_call < 0.010, f"update_snapshot took {per_call * 1e3:.2f} ms"


def test_node_tree_list_is_fast_at_5000_nodes() -> None:
    """node_tree.list() over 5000 nodes in 3 zones stays well under a millisecond (measured ~0.2 ms)."""
    cache = Cache()
    for i in range(5000):
        cache.add_node(NodeRecord(name=f"n{i}", labels={ZONE_LABEL: f"z{i % 3}", REGION_LABEL: "r"}))
    start = time.perf_counter()
    for _ in range(100):
        names = cache.node_tree.list()
    per_call = (time.perf_counter() - start) / 100
    assert len(names) == 5000
    assert per_call < 0.005, f"list() took {per_call * 1e3:.2f} ms"


# ---------------------------------------------------------------------------------------------------------
# Dump, compare, reconcile


def test_dump_is_json_and_names_assumed_pods() -> None:
    """dump() is JSON-able and shows requested/allocatable, pods and assumed pods."""
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("a", node="n1"))
    cache.assume_pod(pod("b"), "n1")
    dumped = json.loads(json.dumps(cache.dump()))
    n1 = dumped["nodes"]["n1"]
    assert n1["requested"]["cpu"] == 1000 and n1["requested"]["pods"] == 2
    assert n1["allocatable"]["cpu"] == 4000
    assert n1["pods"] == ["default/a", "default/b"]
    assert dumped["assumed_pods"] == [
        {"uid": "uid-b", "pod": "default/b", "node": "n1", "binding_finished": False}
    ]


def _cluster() -> Cache:
    """A cache with nodes n1 (rv 1), n2 (rv 1), pods a on n1, b on n2, and c assumed on n1."""
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    cache.add_pod(pod("a", node="n1"))
    cache.add_pod(pod("b", node="n2"))
    cache.assume_pod(pod("c"), "n1")
    return cache


LIST_NODES = [node("n1"), node("n2")]
LIST_PODS = [pod("a", node="n1"), pod("b", node="n2")]


@pytest.mark.parametrize(
    ("nodes", "pods", "expected"),
    [
        pytest.param(LIST_NODES, LIST_PODS, Drift(), id="in-sync-assumed-pod-not-drift"),
        pytest.param([*LIST_NODES, node("n3")], LIST_PODS, Drift(missing_nodes=["n3"]), id="missing-node"),
        pytest.param([node("n1")], [LIST_PODS[0]], Drift(extra_nodes=["n2"], extra_pods=["default/b"]),
                     id="node-deleted-while-watch-down"),
        pytest.param([node("n1"), node("n2", rv="7")], LIST_PODS, Drift(stale_nodes=["n2"]), id="stale-node"),
        pytest.param(LIST_NODES, [*LIST_PODS, pod("d", node="n2")], Drift(missing_pods=["default/d"]),
                     id="missing-pod"),
        pytest.param(LIST_NODES, [LIST_PODS[0]], Drift(extra_pods=["default/b"]), id="extra-pod"),
        pytest.param(LIST_NODES, [LIST_PODS[0], pod("b", node="n2", rv="5")], Drift(stale_pods=["default/b"]),
                     id="stale-pod"),
        pytest.param(LIST_NODES, [LIST_PODS[0], dataclasses.replace(LIST_PODS[1], phase="Succeeded")],
                     Drift(extra_pods=["default/b"]), id="finished-pod-counts-as-gone"),
        pytest.param(LIST_NODES, [*LIST_PODS, pod("c", node="n2")], Drift(stale_pods=["default/c"]),
                     id="assumed-pod-bound-elsewhere"),
        pytest.param(LIST_NODES, [*LIST_PODS, pod("c", node="n1")], Drift(),
                     id="assumed-pod-bound-as-assumed"),
    ],
)  # fmt: skip
def test_compare_and_reconcile(nodes: list[NodeRecord], pods: list[PodInfo], expected: Drift) -> None:
    """compare reports the drift; reconcile repairs exactly that and leaves the cache matching the LIST."""
    cache = _cluster()
    assert cache.compare(nodes, pods) == expected
    assert cache.reconcile(nodes, pods) == expected
    assert not cache.compare(nodes, pods)
    listed = {p.uid for p in pods if p.phase not in ("Succeeded", "Failed")}
    assert {uid for uid in listed if cache.get_pod(uid) is None} == set()
    assert {n.name for n in nodes} == set(cache.node_tree.list())
    if "uid-c" not in listed:
        assert cache.is_assumed("uid-c"), "an assumed pod the LIST does not show bound yet is kept"
    else:
        held = cache.get_pod("uid-c")
        assert held is not None and not cache.is_assumed("uid-c")
        assert held.node_name == next(p.node_name for p in pods if p.uid == "uid-c")


def test_drift_summary_and_count() -> None:
    """Drift is falsy when empty and summarizes non-empty categories for the log line."""
    assert not Drift() and Drift().summary() == "no drift"
    drift = Drift(missing_nodes=["n3"], extra_pods=["default/a", "default/b"])
    assert drift.count() == 3
    assert drift.summary() == "1 missing nodes (n3); 2 extra pods (default/a, default/b)"


# ---------------------------------------------------------------------------------------------------------
# The snapshot's log of replaced nodes (Snapshot.changed_since)


def _filled(names: list[str]) -> tuple[Cache, Snapshot]:
    cache = Cache()
    for name in names:
        cache.add_node(node(name))
    snap = Snapshot()
    cache.update_snapshot(snap)
    return cache, snap


@pytest.mark.usefixtures("caches_on")
def test_changed_since_names_the_nodes_each_update_replaced() -> None:
    """A bound pod replaces its node's NodeInfo: the log names it for every update since the one asked about;
    an update that changed nothing keeps the very same node list."""
    cache, snap = _filled(["a", "b", "c"])
    first = snap.updates
    before = snap.node_info_list
    cache.update_snapshot(snap)
    assert snap.node_info_list is before and snap.changed_since(first, snap.node_info_list) == []
    cache.add_pod(pod("p1", node="b"))
    cache.update_snapshot(snap)
    second = snap.updates
    cache.add_pod(pod("p2", node="c"))
    cache.update_snapshot(snap)
    assert snap.changed_since(first, snap.node_info_list) == ["b", "c"]
    assert snap.changed_since(second, snap.node_info_list) == ["c"]
    assert snap.changed_since(snap.updates, snap.node_info_list) == []


@pytest.mark.parametrize(
    "change",
    [
        pytest.param("new-node", id="a-node-joins-so-the-order-changes"),
        pytest.param("other-list", id="a-list-that-is-not-the-snapshots"),
        pytest.param("never-updated", id="a-snapshot-the-cache-never-filled"),
    ],
)
def test_changed_since_cannot_tell(change: str) -> None:
    """None (compare the nodes instead) when the order or membership changed, for a list the cache did not
    hand out, or for a snapshot built by hand."""
    cache, snap = _filled(["a", "b"])
    first = snap.updates
    nodes = snap.node_info_list
    if change == "new-node":
        cache.add_node(node("c"))
        cache.update_snapshot(snap)
        nodes = snap.node_info_list
    elif change == "other-list":
        nodes = list(nodes)
    else:
        snap = Snapshot.from_node_infos(list(nodes))
        first = 0
    assert snap.changed_since(first, nodes) is None
