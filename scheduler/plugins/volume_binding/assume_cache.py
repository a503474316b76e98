"""VolumeBinding's assume caches: upstream volumebinding/assume_cache.go and passive_assume_cache.go, v1.37.

They sit over the object store (the informers): an assumed object shadows the stored one only while the
stored resourceVersion is the one it was assumed from; any newer object from the API wins. The binder
assumes its decisions here at Reserve, so the next scheduling cycles do not hand the same PV to another pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler import caching
from scheduler.framework.objects import JSON, PERSISTENT_VOLUME, ObjectLister
from scheduler.storage.volume import NotFoundError, StorageError, key_of, name_of, resource_version, volume_class


class AssumeCache:
    """passiveAssumeCache over one kind of the object store; keys are "namespace/name" or "name"."""

    def __init__(self, objects: ObjectLister, kind: str, resource: str) -> None:
        self._objects = objects
        self._kind = kind
        self._resource = resource  # the GroupResource of its NotFound errors ("persistentvolumes")
        self._assumed: dict[str, JSON] = {}

    @staticmethod
    def _split(key: str) -> tuple[str, str]:
        ns, sep, name = key.partition("/")
        return (ns, name) if sep else ("", key)

    def get_api_obj(self, key: str) -> JSON:
        """The store's (informer's) version; NotFoundError when absent."""
        ns, name = self._split(key)
        obj = self._objects.get(self._kind, ns, name)
        if obj is None:
            raise NotFoundError(f'{self._resource} "{key}" not found')
        return obj

    def get(self, key: str) -> JSON:
        """The assumed version while the store still holds the version it was assumed from, else the store's."""
        obj = self.get_api_obj(key)
        assumed = self._assumed.get(key)
        if assumed is None:
            return obj
        if resource_version(assumed) != resource_version(obj):
            del self._assumed[key]  # the informer delivered a newer object: the assumption expired
            return obj
        return assumed

    def assume(self, obj: JSON) -> None:
        """Shadow the stored object with obj, which must carry the stored resourceVersion."""
        key = key_of(obj)
        stored = self.get_api_obj(key)
        if resource_version(stored) != resource_version(obj):
            raise StorageError(
                f'"{key}" is out of sync (stored: {resource_version(stored)}, assume: {resource_version(obj)})'
            )
        self._assumed[key] = obj

    def restore(self, obj: Mapping[str, Any]) -> None:
        """Drop the assumption made with obj (same resourceVersion); a newer assumption is kept."""
        key = key_of(obj)
        assumed = self._assumed.get(key)
        if assumed is not None and resource_version(assumed) == resource_version(obj):
            del self._assumed[key]

    def assumed_count(self) -> int:
        return len(self._assumed)


class PVAssumeCache(AssumeCache):
    """The PV assume cache with upstream's storage-class index (rebuilt when the PV store changes)."""

    def __init__(self, objects: ObjectLister) -> None:
        super().__init__(objects, PERSISTENT_VOLUME, "persistentvolumes")
        self._by_class: dict[str, dict[str, JSON]] = {}  # class -> PV name -> PV
        self._class_of: dict[str, str] = {}  # PV name -> its class in _by_class
        self._index_generation = -1

    def _refresh(self) -> None:
        """Bring the class index up to date: from the store's change log when it reaches back far enough
        (a scheduling cycle usually follows one or two PV changes), else from a full LIST."""
        objects = self._objects
        generation = objects.generation(PERSISTENT_VOLUME)
        if generation == self._index_generation and caching.ENABLED:
            return
        changed = objects.changed_since(PERSISTENT_VOLUME, self._index_generation)
        if changed is None or self._index_generation < 0 or not caching.ENABLED:  # disabled: a full LIST each call
            self._by_class, self._class_of = {}, {}
            for pv in objects.list(PERSISTENT_VOLUME):
                self._file(pv)
        else:
            for _, name in changed:
                old_class = self._class_of.pop(name, None)
                if old_class is not None:
                    self._by_class[old_class].pop(name, None)
                current = objects.get(PERSISTENT_VOLUME, "", name)
                if current is not None:
                    self._file(current)
        self._index_generation = generation

    def _file(self, pv: JSON) -> None:
        name, cls = name_of(pv), volume_class(pv)
        self._by_class.setdefault(cls, {})[name] = pv
        self._class_of[name] = cls

    def list_pvs(self, storage_class: str) -> list[JSON]:
        """ListPVs: the PVs of a class (indexed on the stored object), assumed versions included."""
        self._refresh()
        pvs = self._by_class.get(storage_class)
        if not pvs:
            return []
        if not self._assumed:
            return list(pvs.values())
        assumed = self._assumed
        out = []
        for name, pv in pvs.items():
            shadow = assumed.get(name)
            out.append(shadow if shadow is not None and resource_version(shadow) == resource_version(pv) else pv)
        return out
