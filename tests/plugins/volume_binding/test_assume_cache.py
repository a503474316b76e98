"""The binder's assume caches over the object store, ported from upstream passive_assume_cache_test.go and
assume_cache_test.go (v1.37): an assumed object shadows the stored one only while the store still holds the
resourceVersion it was assumed from."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.backend.cache.objects import ClusterObjects
from scheduler.plugins.volume_binding.assume_cache import AssumeCache, PVAssumeCache
from scheduler.storage.volume import StorageError

JSON = dict[str, Any]
KIND = "PersistentVolumeClaim"


def obj(name: str, rv: str, namespace: str = "", **annotations: str) -> JSON:
    meta: JSON = {"name": name, "resourceVersion": rv, "annotations": dict(annotations)}
    if namespace:
        meta["namespace"] = namespace
    return {"kind": KIND, "metadata": meta}


def key(o: JSON) -> str:
    meta = o["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


def new_cache() -> tuple[ClusterObjects, AssumeCache]:
    store = ClusterObjects()
    return store, AssumeCache(store, KIND, "tests")


def test_basic_cache() -> None:
    """Get of a missing key fails with a NotFound naming the resource; adds, updates, deletes show through."""
    store, cache = new_cache()
    with pytest.raises(StorageError, match=r'^tests "nothere" not found$'):
        cache.get("nothere")
    objects = {f"test-{i}": obj(f"test-{i}", "1") for i in range(10)}
    for o in objects.values():
        store.apply(KIND, None, o)
    assert all(cache.get(k) is o for k, o in objects.items())
    updated = obj("test-3", "1", x="y")
    store.apply(KIND, "MODIFIED", updated)
    assert cache.get("test-3") is updated
    store.apply(KIND, "DELETED", objects["test-7"])
    with pytest.raises(StorageError):
        cache.get("test-7")


@pytest.mark.parametrize(
    ("old", "new", "ok"),
    [
        pytest.param(obj("pvc1", "5", "ns1"), obj("pvc1", "5", "ns1"), True, id="success-same-version"),
        pytest.param(obj("pvc1", "5", "ns1"), obj("pvc1", "6", "ns1"), False, id="fail-new-higher-version"),
        pytest.param(obj("pvc2", "5", "ns1"), obj("pvc1", "5", "ns1"), False, id="fail-old-not-found"),
        pytest.param(obj("pvc1", "5", "ns1"), obj("pvc1", "4", "ns1"), False, id="fail-new-lower-version"),
        pytest.param(obj("pvc1", "5", "ns1"), obj("pvc1", "a", "ns1"), False, id="fail-new-bad-version"),
        pytest.param(obj("pvc1", "a", "ns1"), obj("pvc1", "5", "ns1"), False, id="fail-old-bad-version"),
    ],
)
def test_assume(old: JSON, new: JSON, ok: bool) -> None:
    """Assume needs the stored resourceVersion; Get returns the assumed object only when it succeeded."""
    store, cache = new_cache()
    store.apply(KIND, None, old)
    assert cache.get(key(old)) is old
    if ok:
        cache.assume(new)
    else:
        with pytest.raises(StorageError):
            cache.assume(new)
    assert cache.get(key(old)) is (new if ok else old)


def test_out_of_sync_message() -> None:
    """Upstream's error text for an assumption from a stale object."""
    store, cache = new_cache()
    store.apply(KIND, None, obj("pvc1", "5", "ns1"))
    with pytest.raises(StorageError, match=r'^"ns1/pvc1" is out of sync \(stored: 5, assume: 6\)$'):
        cache.assume(obj("pvc1", "6", "ns1"))


def test_restore() -> None:
    """Restore of an unknown or unassumed object is a no-op; restoring the assumed version drops it."""
    store, cache = new_cache()
    old, new = obj("pvc1", "5", "ns1"), obj("pvc1", "5", "ns1", a="b")
    cache.restore(obj("", ""))
    store.apply(KIND, None, old)
    cache.restore(old)
    assert cache.get(key(old)) is old
    cache.assume(new)
    assert cache.get(key(old)) is new
    cache.restore(new)
    assert cache.get(key(old)) is old


def test_concurrent_assume() -> None:
    """An external update, a second assumption, then the first attempt's restore: the second stays."""
    store, cache = new_cache()
    obj1, obj1_update = obj("pvc1", "5", "ns1"), obj("pvc1", "5", "ns1", v="1")
    store.apply(KIND, None, obj1)
    cache.assume(obj1_update)
    assert cache.get(key(obj1)) is obj1_update
    obj2, obj2_update = obj("pvc1", "7", "ns1"), obj("pvc1", "7", "ns1", v="2")
    store.apply(KIND, "MODIFIED", obj2)
    cache.assume(obj2_update)
    cache.restore(obj1_update)
    assert cache.get(key(obj2)) is obj2_update


def test_assume_survives_resync_of_same_version() -> None:
    """TestAssumeUpdateCache: the informer re-delivering the same version keeps the assumption."""
    store, cache = new_cache()
    o = obj("test-pvc0", "1", "test-ns")
    store.apply(KIND, None, o)
    new = obj("test-pvc0", "1", "test-ns", **{"volume.kubernetes.io/selected-node": "test-node"})
    cache.assume(new)
    store.apply(KIND, None, dict(o))
    assert cache.get(key(o)) is new


def test_newer_informer_version_wins() -> None:
    """An informer update always overrides the assumed object (and the assumption is forgotten)."""
    store, cache = new_cache()
    store.apply(KIND, None, obj("pvc", "1", "ns"))
    cache.assume(obj("pvc", "1", "ns", a="assumed"))
    newer = obj("pvc", "2", "ns")
    store.apply(KIND, "MODIFIED", newer)
    assert cache.get("ns/pvc") is newer
    assert cache.assumed_count() == 0


def test_pv_assume_cache_lists_by_class_with_assumed_versions() -> None:
    """TestPVAssumeCache + index: ListPVs by storage class (beta annotation first), assumed versions swapped in,
    the index rebuilt when the store changes."""
    store = ClusterObjects()
    cache = PVAssumeCache(store)

    def pv(name: str, cls: str, rv: str = "1", **extra: Any) -> JSON:
        return {
            "kind": "PersistentVolume",
            "metadata": {"name": name, "resourceVersion": rv, **extra},
            "spec": {"storageClassName": cls},
        }

    store.apply("PersistentVolume", None, pv("pv1", "sc1"))
    store.apply("PersistentVolume", None, pv("pv2", "sc2"))
    store.apply(
        "PersistentVolume", None, pv("pv3", "other", annotations={"volume.beta.kubernetes.io/storage-class": "sc1"})
    )
    assert [p["metadata"]["name"] for p in cache.list_pvs("sc1")] == ["pv1", "pv3"]
    assumed = pv("pv1", "sc1", spec_marker="x")
    cache.assume(assumed)
    assert cache.list_pvs("sc1")[0] is assumed
    store.apply("PersistentVolume", None, pv("pv4", "sc1"))
    assert [p["metadata"]["name"] for p in cache.list_pvs("sc1")] == ["pv1", "pv3", "pv4"]
    assert PVAssumeCache(store).list_pvs("sc2")[0]["metadata"]["name"] == "pv2"  # a second cache, same store
