"""The store of other cluster objects (Namespaces, PVCs, ...): events, relists and what changed."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.backend.cache.objects import ClusterObjects
from scheduler.framework.interface import ActionType


def ns(name: str, rv: str = "1", **labels: str) -> dict[str, Any]:
    return {"kind": "Namespace", "metadata": {"name": name, "resourceVersion": rv, "labels": labels}}


def pvc(name: str, namespace: str = "default", rv: str = "1") -> dict[str, Any]:
    return {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}}


def test_apply_reports_add_update_delete_and_bumps_generation() -> None:
    """ADD, then UPDATE on a new resourceVersion, nothing for a re-delivered object, DELETE once."""
    store = ClusterObjects()
    assert store.apply("Namespace", "ADDED", ns("a")) == ActionType.ADD
    gen = store.generation("Namespace")
    assert store.apply("Namespace", None, ns("a")) is None
    assert store.generation("Namespace") == gen
    assert store.apply("Namespace", "MODIFIED", ns("a", "2", team="x")) == ActionType.UPDATE
    assert store.get("Namespace", "", "a") == ns("a", "2", team="x")
    assert store.apply("Namespace", "DELETED", ns("a", "2")) == ActionType.DELETE
    assert store.apply("Namespace", "DELETED", ns("a", "2")) is None
    assert store.get("Namespace", "", "a") is None
    assert store.generation("Namespace") == gen + 2


def test_list_is_sorted_and_filters_by_namespace() -> None:
    """Namespaced kinds are keyed (namespace, name); list() is stable."""
    store = ClusterObjects()
    for name, namespace in (("b", "x"), ("a", "y"), ("a", "x")):
        store.apply("PersistentVolumeClaim", "ADDED", pvc(name, namespace))
    names = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in store.list("PersistentVolumeClaim")]
    assert names == [("x", "a"), ("x", "b"), ("y", "a")]
    assert [o["metadata"]["name"] for o in store.list("PersistentVolumeClaim", "y")] == ["a"]


def test_replace_converges_to_a_list() -> None:
    """A relist adds, updates and removes, and reports how many of each."""
    store = ClusterObjects()
    store.apply("Namespace", None, ns("keep"))
    store.apply("Namespace", None, ns("stale"))
    store.apply("Namespace", None, ns("gone"))
    counts = store.replace("Namespace", [ns("keep"), ns("stale", "9"), ns("new")])
    assert counts == {"added": 1, "updated": 1, "removed": 1}
    assert [o["metadata"]["name"] for o in store.list("Namespace")] == ["keep", "new", "stale"]
    assert store.replace("Namespace", store.list("Namespace")) == {"added": 0, "updated": 0, "removed": 0}


def test_unknown_kind_is_refused() -> None:
    """A typo in a kind name fails loudly instead of reading an empty store."""
    with pytest.raises(KeyError, match="unknown object kind 'Namespaces'"):
        ClusterObjects().list("Namespaces")
