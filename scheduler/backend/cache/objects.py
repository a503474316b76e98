"""The store of cluster objects other than nodes and pods (the informer caches upstream plugins list from).

Raw API dicts by kind and (namespace, name). Watch events and LISTs go in through `apply` / `replace`; the
answer is the ActionType of the change, which the scheduler turns into a cluster event for the queue. Not
thread-safe (one event loop, like the rest of the core).
"""

from __future__ import annotations

import collections

from scheduler.framework.interface import ActionType
from scheduler.framework.objects import JSON, KINDS, object_key

DELETED = "DELETED"
CHANGE_LOG_LENGTH = 10_000  # per kind: how far back changed_since can answer
ChangedKeys = list[tuple[str, str]]


class ClusterObjects:
    """Implements `scheduler.framework.objects.ObjectLister` over objects fed by the adapters."""

    def __init__(self) -> None:
        self._objects: dict[str, dict[tuple[str, str], JSON]] = {kind: {} for kind in KINDS}
        self._generations: dict[str, int] = dict.fromkeys(KINDS, 0)
        # (generation, key) of recent single-object changes, and the generation before which nothing is known
        # (a LIST replacing the kind wholesale resets it).
        self._changes: dict[str, collections.deque[tuple[int, tuple[str, str]]]] = {
            kind: collections.deque(maxlen=CHANGE_LOG_LENGTH) for kind in KINDS
        }
        self._known_from: dict[str, int] = dict.fromkeys(KINDS, 0)

    # ------------------------------------------------------------------ writes (adapters)

    def apply(self, kind: str, event_type: str | None, obj: JSON) -> ActionType | None:
        """Apply one watch event (event_type None: listed); return the change's action, None if no change.

        An unchanged resourceVersion is not a change (a relist re-delivers every object).
        """
        store = self._store(kind)
        key = object_key(obj)
        if not key[1]:
            return None
        if event_type == DELETED:
            if store.pop(key, None) is None:
                return None
            self._changed(kind, key)
            return ActionType.DELETE
        old = store.get(key)
        store[key] = obj
        if old is None:
            self._changed(kind, key)
            return ActionType.ADD
        old_rv = (old.get("metadata") or {}).get("resourceVersion")
        new_rv = (obj.get("metadata") or {}).get("resourceVersion")
        if old_rv and old_rv == new_rv and old == obj:
            return None
        self._changed(kind, key)
        return ActionType.UPDATE

    def _changed(self, kind: str, key: tuple[str, str]) -> None:
        self._generations[kind] += 1
        log = self._changes[kind]
        if len(log) == log.maxlen:
            self._known_from[kind] = log[0][0]
        log.append((self._generations[kind], key))

    def replace(self, kind: str, objects: list[JSON]) -> dict[str, int]:
        """Converge one kind to a fresh LIST; return counts of added, updated and removed objects."""
        store = self._store(kind)
        listed = {object_key(o): o for o in objects if object_key(o)[1]}
        counts = {"added": 0, "updated": 0, "removed": 0}
        for key in [k for k in store if k not in listed]:
            del store[key]
            counts["removed"] += 1
        for key, obj in listed.items():
            old = store.get(key)
            if old is None:
                counts["added"] += 1
            elif (old.get("metadata") or {}).get("resourceVersion") != (obj.get("metadata") or {}).get(
                "resourceVersion"
            ):
                counts["updated"] += 1
            store[key] = obj
        if any(counts.values()):
            self._generations[kind] += 1
            self._changes[kind].clear()
            self._known_from[kind] = self._generations[kind]
        return counts

    # ------------------------------------------------------------------ ObjectLister

    def get(self, kind: str, namespace: str, name: str) -> JSON | None:
        return self._store(kind).get((namespace, name))

    def list(self, kind: str, namespace: str | None = None) -> list[JSON]:
        store = self._store(kind)
        keys = sorted(store) if namespace is None else sorted(k for k in store if k[0] == namespace)
        return [store[k] for k in keys]

    def generation(self, kind: str) -> int:
        self._store(kind)
        return self._generations[kind]

    def changed_since(self, kind: str, generation: int) -> ChangedKeys | None:
        self._store(kind)
        if generation < self._known_from[kind]:
            return None
        return [key for gen, key in self._changes[kind] if gen > generation]

    def count(self, kind: str) -> int:
        return len(self._store(kind))

    def copy(self) -> ClusterObjects:
        """A copy of the store (the object dicts themselves are shared: they are never mutated in place)."""
        other = ClusterObjects()
        other._objects = {kind: dict(store) for kind, store in self._objects.items()}
        other._generations = dict(self._generations)
        return other

    def counts(self) -> dict[str, int]:
        """Objects held per kind (for dumps and metrics)."""
        return {kind: len(store) for kind, store in self._objects.items() if store}

    def _store(self, kind: str) -> dict[tuple[str, str], JSON]:
        store = self._objects.get(kind)
        if store is None:
            if kind not in KINDS:
                raise KeyError(f"unknown object kind {kind!r}; known: {', '.join(sorted(KINDS))}")
            store = self._objects[kind] = {}  # registered after this store was made (out-of-tree plugin)
            self._generations[kind] = 0
        return store
