"""The snapshot's cluster-wide claim counts (upstream usedPVCRefCounts) stay equal to a recount from every
node, whatever sequence of pod and node changes the cache saw (VolumeRestrictions' ReadWriteOncePod check)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as hs

from scheduler.backend.cache.cache import Cache
from scheduler.framework.snapshot import Snapshot
from scheduler.testing import make_node, make_pod


def _recount(snapshot: Snapshot) -> dict[str, int]:
    counts: dict[str, int] = {}
    for info in snapshot.node_info_list:
        for pod in info.pods.values():
            for claim in pod.claim_names:
                key = f"{pod.namespace}/{claim}"
                counts[key] = counts.get(key, 0) + 1
    return counts


def test_counts_follow_pods_and_nodes() -> None:
    """Add, move and remove pods and nodes: the snapshot's counts are those of its nodes' pods."""
    cache = Cache()
    snap = Snapshot()
    for n in ("n1", "n2"):
        cache.add_node(make_node(n).info())
    a = make_pod("a").pvc("c1").pvc("c2").node("n1").info()
    b = make_pod("b").pvc("c1").node("n2").info()
    cache.add_pod(a)
    cache.add_pod(b)
    cache.update_snapshot(snap)
    assert snap.used_pvc_counts == {"default/c1": 2, "default/c2": 1}
    assert snap.is_pvc_used_by_pods("default/c2") and not snap.is_pvc_used_by_pods("other/c2")
    cache.remove_pod(a.uid)
    cache.update_snapshot(snap)
    assert snap.used_pvc_counts == {"default/c1": 1}
    cache.remove_node("n2")  # its pod stays on a placeholder, outside the snapshot
    cache.update_snapshot(snap)
    assert snap.used_pvc_counts == {}
    cache.add_node(make_node("n2").info())
    cache.update_snapshot(snap)
    assert snap.used_pvc_counts == {"default/c1": 1}


@settings(max_examples=60, deadline=None)
@given(
    hs.lists(
        hs.tuples(
            hs.sampled_from(["add", "remove", "node-del", "node-add"]),
            hs.integers(0, 5),
            hs.integers(0, 2),
            hs.integers(0, 2),
        ),
        max_size=40,
    )
)
def test_incremental_counts_equal_a_recount(ops: list[tuple[str, int, int, int]]) -> None:
    """Property: after any sequence, incremental counts == a recount over the snapshot's nodes."""
    cache = Cache()
    snap = Snapshot()
    nodes = ["n0", "n1", "n2"]
    for n in nodes:
        cache.add_node(make_node(n).info())
    for op, pod_i, node_i, claim_i in ops:
        if op == "add":
            cache.add_pod(make_pod(f"p{pod_i}").uid(f"u{pod_i}").pvc(f"c{claim_i}").node(nodes[node_i]).info())
        elif op == "remove":
            cache.remove_pod(f"u{pod_i}")
        elif op == "node-del":
            cache.remove_node(nodes[node_i])
        elif cache.get_node(nodes[node_i]) is None or cache.get_node(nodes[node_i]).node is None:  # type: ignore[union-attr]
            cache.add_node(make_node(nodes[node_i]).info())
        cache.update_snapshot(snap)
        assert snap.used_pvc_counts == _recount(snap)
