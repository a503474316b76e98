"""Which DeviceClass backs an extended resource (upstream dynamic-resource-allocation/deviceclass/
extendedresourcecache, DRAExtendedResource GA in v1.37).

Every DeviceClass backs the implicit name `deviceclass.resource.kubernetes.io/<class>`; a class with
`spec.extendedResourceName` also backs that name. When several classes name the same extended resource, the
newest wins (creationTimestamp, then the smaller name), as upstream prefers it to support migrating from one
class to another. Upstream applies that rule event by event in a cache, so its answer can depend on the
order it saw the classes in (a losing class that arrived after the winner never gets its implicit name; after
the winner is deleted the explicit name maps to no class until another class changes); this resolver decides
from the classes that exist, so those transients do not occur.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from scheduler.framework.objects import DEVICE_CLASS, JSON, ObjectLister

RESOURCE_DEVICE_CLASS_PREFIX: Final = "deviceclass.resource.kubernetes.io/"


def is_dra_extended_resource_name(name: str) -> bool:
    """schedutil.IsDRAExtendedResourceName: an extended resource name, or the implicit class-backed one."""
    if name.startswith(RESOURCE_DEVICE_CLASS_PREFIX):
        return True
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _explicit_name(obj: Mapping[str, Any]) -> str:
    spec = obj.get("spec")
    value = spec.get("extendedResourceName") if isinstance(spec, Mapping) else None
    return value if isinstance(value, str) and value else ""


class ExtendedResourceClasses:
    """extended resource name -> DeviceClass, over the DeviceClasses of an object store (rebuilt when one
    changes: there are few classes and they rarely change)."""

    def __init__(self, objects: ObjectLister) -> None:
        self._objects = objects
        self._generation = -1
        self._by_resource: dict[str, JSON] = {}
        self._by_class: dict[str, str] = {}

    def _refresh(self) -> None:
        generation = self._objects.generation(DEVICE_CLASS)
        if generation == self._generation:
            return
        by_resource: dict[str, JSON] = {}
        by_class: dict[str, str] = {}
        winners: dict[str, tuple[str, str]] = {}  # explicit name -> (creationTimestamp, class name) winning it
        for cls in self._objects.list(DEVICE_CLASS):
            name = _name(cls)
            by_resource[RESOURCE_DEVICE_CLASS_PREFIX + name] = cls
            explicit = _explicit_name(cls)
            if not explicit:
                continue
            by_class[name] = explicit
            created = str((cls.get("metadata") or {}).get("creationTimestamp") or "")  # RFC 3339: sorts as text
            best = winners.get(explicit)
            if best is None or created > best[0] or (created == best[0] and name < best[1]):
                winners[explicit] = (created, name)
                by_resource[explicit] = cls
        self._by_resource, self._by_class = by_resource, by_class
        self._generation = generation

    def device_class(self, resource_name: str) -> JSON | None:
        """GetDeviceClass: the class backing this extended resource, or None."""
        self._refresh()
        return self._by_resource.get(resource_name)

    def extended_resource(self, class_name: str) -> str:
        """GetExtendedResource: the class's spec.extendedResourceName ("" without one)."""
        self._refresh()
        return self._by_class.get(class_name, "")

    def any(self) -> bool:
        """Whether any DeviceClass exists (no class: no extended resource can be backed by DRA)."""
        self._refresh()
        return bool(self._by_resource)
