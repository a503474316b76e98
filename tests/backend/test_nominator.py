"""The nominator (upstream backend/queue/nominator.go): nominations by node and by pod, Override vs Noop,
updates that keep an in-memory nomination, deletion, and the alive check."""

from __future__ import annotations

from scheduler.backend.queue.nominator import CLEAR_NOMINATED_NODE, NominatingInfo, Nominator
from scheduler.framework.types import PodInfo
from scheduler.testing import make_pod


def _pod(name: str, nominated: str = "") -> PodInfo:
    b = make_pod(name).uid(name)
    if nominated:
        b.nominated_node(nominated)
    return b.info()


def test_noop_uses_the_pods_own_nominated_node_name() -> None:
    n = Nominator()
    n.add(_pod("a", "node1"))
    n.add(_pod("b"))  # no status.nominatedNodeName: not nominated
    assert [p.name for p in n.nominated_pods_for_node("node1")] == ["a"]
    assert n.node_of("b") is None
    assert n.has_nominations() and len(n) == 1


def test_override_moves_and_clears() -> None:
    n = Nominator()
    a = _pod("a", "node1")
    n.add(a, NominatingInfo("node2"))
    assert n.nominated_pods_for_node("node1") == [] and n.node_of("a") == "node2"
    n.add(a, CLEAR_NOMINATED_NODE)
    assert n.node_of("a") is None and not n.has_nominations()
    assert n.nodes() == set()


def test_nominees_keep_nomination_order_and_never_duplicate() -> None:
    n = Nominator()
    for name in ("a", "b", "c"):
        n.add(_pod(name), NominatingInfo("node1"))
    n.add(_pod("b"), NominatingInfo("node1"))  # re-added: moves to the end, once
    assert [p.name for p in n.nominated_pods_for_node("node1")] == ["a", "c", "b"]
    assert n.dump() == {"node1": ["default/a", "default/c", "default/b"]}


def test_update_keeps_an_in_memory_nomination_while_the_api_has_none() -> None:
    """Scheduler nominated the pod; an update without nominatedNodeName (the patch has not landed) keeps it."""
    n = Nominator()
    old = _pod("a")
    n.add(old, NominatingInfo("node1"))
    new = make_pod("a").uid("a").label("x", "y").info()
    n.update(old, new)
    assert n.node_of("a") == "node1"
    assert n.nominated_pods_for_node("node1")[0] is new, "the latest version is what Filter sees"


def test_update_follows_the_api_when_nominated_node_name_changes_or_is_removed() -> None:
    n = Nominator()
    old = _pod("a", "node1")
    n.add(old)
    moved = _pod("a", "node2")
    n.update(old, moved)
    assert n.node_of("a") == "node2"
    n.update(moved, _pod("a"))  # cleared in the API (e.g. by a higher-priority preemption)
    assert n.node_of("a") is None


def test_delete_and_alive() -> None:
    alive = {"a"}
    n = Nominator(alive=lambda uid: uid in alive)
    n.add(_pod("a", "node1"))
    n.add(_pod("gone", "node1"))  # deleted or bound meanwhile: never nominated
    assert [p.name for p in n.nominated_pods_for_node("node1")] == ["a"]
    n.delete("a")
    n.delete("a")  # idempotent
    assert n.nominated_pods_for_node("node1") == [] and not n.has_nominations()
