"""NodeTree: zone interleaving, every node exactly once, no state carried between list() calls."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.backend.cache.node_tree import NodeTree
from scheduler.framework.types import (
    REGION_LABEL,
    REGION_LABEL_BETA,
    ZONE_LABEL,
    ZONE_LABEL_BETA,
    NodeRecord,
    zone_key,
)
from scheduler.testing import make_node


def node(name: str, zone: str = "", region: str = "r") -> NodeRecord:
    """A node record in the given zone (no zone labels at all when zone is empty)."""
    labels = {"kubernetes.io/hostname": name}
    if zone:
        labels[ZONE_LABEL] = zone
        labels[REGION_LABEL] = region
    return NodeRecord(name=name, labels=labels, zone=zone_key(labels))


def tree_of(*records: NodeRecord) -> NodeTree:
    tree = NodeTree()
    for record in records:
        assert tree.add_node(record)
    return tree


def round_robin(zones: list[list[str]]) -> list[str]:
    """Reference order, written as upstream's loop: index by index, zone by zone."""
    out: list[str] = []
    longest = max((len(z) for z in zones), default=0)
    for index in range(longest):
        for names in zones:
            if index < len(names):
                out.append(names[index])
    return out


@pytest.mark.parametrize(
    ("zone_label", "region_label"),
    [
        pytest.param(ZONE_LABEL_BETA, REGION_LABEL_BETA, id="v1.18-beta-labels"),
        pytest.param(ZONE_LABEL, REGION_LABEL, id="ga-labels"),
    ],
)
def test_mission_story_worker_joins_after_a_sync(zone_label: str, region_label: str) -> None:
    """Field story 1: 3 masters in zone 200002, a sync, then a worker in 200004: all 4 listed once."""
    tree = NodeTree()
    for i in (1, 2, 3):
        master = make_node(f"ss-stg-ma-0{i}").label(zone_label, "200002").label(region_label, "sh")
        tree.add_node(master.info())
    first_sync = tree.list()
    assert first_sync == ["ss-stg-ma-01", "ss-stg-ma-02", "ss-stg-ma-03"]

    worker = make_node("ss-stg-test-01").label(zone_label, "200004").label(region_label, "sh").info()
    tree.add_node(worker)
    second_sync = tree.list()

    assert second_sync == ["ss-stg-ma-01", "ss-stg-test-01", "ss-stg-ma-02", "ss-stg-ma-03"]
    assert second_sync != ["ss-stg-test-01", "ss-stg-ma-01", "ss-stg-test-01", "ss-stg-ma-02"]  # the 1.18 bug
    assert len(set(second_sync)) == 4
    assert tree.list() == second_sync  # a third sync is identical: nothing carried over


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        pytest.param([], [], id="empty"),
        pytest.param([("a1", "A")], ["a1"], id="one-node"),
        pytest.param(
            [("a1", "A"), ("a2", "A"), ("a3", "A"), ("b1", "B")], ["a1", "b1", "a2", "a3"], id="mission"
        ),
        pytest.param(
            [("b1", "B"), ("a1", "A"), ("a2", "A"), ("a3", "A")], ["b1", "a1", "a2", "a3"], id="first-seen"
        ),
        pytest.param(
            [("a1", "A"), ("b1", "B"), ("c1", "C"), ("c2", "C"), ("b2", "B"), ("c3", "C")],
            ["a1", "b1", "c1", "b2", "c2", "c3"],
            id="three-uneven-zones",
        ),
        pytest.param([("x", ""), ("a1", "A"), ("y", "")], ["x", "a1", "y"], id="no-zone-is-a-zone"),
    ],
)
def test_list_is_round_robin_across_zones(nodes: list[tuple[str, str]], expected: list[str]) -> None:
    """list() interleaves zones by index, zones in first-seen order."""
    tree = tree_of(*(node(n, z) for n, z in nodes))
    assert tree.list() == expected
    assert len(tree) == len(expected)


def test_add_duplicate_is_ignored() -> None:
    """Adding a node twice keeps it once and reports False."""
    tree = tree_of(node("a1", "A"))
    assert not tree.add_node(node("a1", "B"))
    assert tree.list() == ["a1"]
    assert tree.zone_of("a1") == zone_key(node("a1", "A").labels)


@pytest.mark.parametrize(
    ("new_zone", "moved", "expected"),
    [
        pytest.param("A", False, ["a1", "b1", "a2"], id="same-zone-keeps-position"),
        pytest.param("B", True, ["a2", "b1", "a1"], id="zone-change-moves-to-end-of-new-zone"),
        pytest.param("C", True, ["a2", "b1", "a1"], id="zone-change-to-new-zone"),
    ],
)
def test_update_moves_only_when_zone_changes(new_zone: str, moved: bool, expected: list[str]) -> None:
    """update_node re-files a node only when its zone key changed."""
    tree = tree_of(node("a1", "A"), node("b1", "B"), node("a2", "A"))
    relabeled = node("a1", new_zone)
    relabeled.labels["team"] = "x"
    assert tree.update_node(node("a1", "A"), relabeled) is moved
    assert tree.list() == expected


def test_update_of_unknown_node_adds_it() -> None:
    """An update for a node the tree never saw adds it."""
    tree = tree_of(node("a1", "A"))
    assert tree.update_node(None, node("b1", "B"))
    assert tree.list() == ["a1", "b1"]


def test_remove_drops_empty_zone_and_a_returning_zone_goes_last() -> None:
    """Removing a zone's last node drops the zone; when it comes back it is the newest zone."""
    tree = tree_of(node("a1", "A"), node("b1", "B"), node("c1", "C"))
    assert tree.remove_node("a1")
    assert not tree.remove_node("a1")
    assert tree.zones() == [zone_key(node("b", "B").labels), zone_key(node("c", "C").labels)]
    tree.add_node(node("a2", "A"))
    assert tree.list() == ["b1", "c1", "a2"]
    assert "a1" not in tree and "a2" in tree


def test_list_returns_a_fresh_list() -> None:
    """Mutating a returned list does not affect the tree or later calls."""
    tree = tree_of(node("a1", "A"))
    first = tree.list()
    first.append("bogus")
    assert tree.list() == ["a1"]


# ---------------------------------------------------------------------------------------------------------
# Property: random add / remove / relabel sequences, list() compared with a reference model.

NAMES = [f"n{i}" for i in range(12)]
ZONES = ["", "A", "B", "C", "D"]

op = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(NAMES), st.sampled_from(ZONES)),
    st.tuples(st.just("remove"), st.sampled_from(NAMES), st.just("")),
    st.tuples(st.just("relabel"), st.sampled_from(NAMES), st.sampled_from(ZONES)),
    st.tuples(st.just("list"), st.just(""), st.just("")),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(op, max_size=60))
def test_property_list_is_a_zone_interleaved_permutation(ops: list[tuple[str, str, str]]) -> None:
    """After any add/remove/relabel sequence (with syncs in between), list() holds every node exactly once,
    in round-robin order over zones in first-seen order."""
    tree = NodeTree()
    model_zones: dict[str, list[str]] = {}  # zone key -> names, insertion order = first seen
    model_zone_of: dict[str, str] = {}
    records: dict[str, NodeRecord] = {}

    def model_remove(name: str) -> None:
        zone = model_zone_of.pop(name)
        model_zones[zone].remove(name)
        if not model_zones[zone]:
            del model_zones[zone]

    def model_add(name: str, zone: str) -> None:
        model_zones.setdefault(zone, []).append(name)
        model_zone_of[name] = zone

    for kind, name, zone in ops:
        if kind == "add" and name not in records:
            records[name] = node(name, zone)
            tree.add_node(records[name])
            model_add(name, records[name].zone)
        elif kind == "remove" and name in records:
            del records[name]
            tree.remove_node(name)
            model_remove(name)
        elif kind == "relabel" and name in records:
            new = node(name, zone)
            tree.update_node(records[name], new)
            if new.zone != records[name].zone:
                model_remove(name)
                model_add(name, new.zone)
            records[name] = new
        listed = tree.list()
        assert sorted(listed) == sorted(records), "every current node exactly once"
        assert listed == round_robin(list(model_zones.values()))
        assert tree.zones() == list(model_zones)
