"""Claim constraints across requests: matchAttribute and distinctAttribute (upstream incubating/constraint.go
and matchAttributeConstraint in allocator_incubating.go).

Both are monotonic: once a device makes a constraint false, adding more devices cannot make it true again,
so the search rejects the device at once. `add` and `remove` come in pairs, in stack order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from scheduler.dra.structured.types import DeviceID

_VALUE_KEYS = ("string", "int", "bool", "version")  # a DeviceAttribute has exactly one of them


def lookup_attribute(attributes: Mapping[str, Any], device: DeviceID, name: str) -> Mapping[str, Any] | None:
    """lookupAttribute: a fully qualified name, or the bare ID when the domain is the device's driver."""
    attribute: Mapping[str, Any] | None = attributes.get(name)
    if attribute is not None:
        return attribute
    domain, slash, ident = name.partition("/")
    if not slash or domain != device[0]:
        return None
    found: Mapping[str, Any] | None = attributes.get(ident)
    return found


def _value(attribute: Mapping[str, Any]) -> tuple[str, Any] | None:
    """(type, value) of an attribute, None for a type this release does not know."""
    for key in _VALUE_KEYS:
        value = attribute.get(key)
        if value is not None:
            return key, value
    return None


class Constraint(Protocol):
    """One claim constraint, tracking the devices chosen so far for the requests it names."""

    attribute_name: str

    def applies(self, request: str, sub_request: str) -> bool: ...

    def add(self, request: str, sub_request: str, attributes: Mapping[str, Any], device: DeviceID) -> bool: ...

    def remove(self, request: str, sub_request: str) -> None: ...


class _RequestNames:
    """The requests a constraint names; none named means all of the claim's."""

    __slots__ = ("attribute_name", "names")

    def __init__(self, names: list[str], attribute_name: str) -> None:
        self.names = frozenset(names)
        self.attribute_name = attribute_name

    def applies(self, request: str, sub_request: str) -> bool:
        if not self.names:
            return True
        if not sub_request:
            return request in self.names
        return request in self.names or f"{request}/{sub_request}" in self.names


class MatchAttribute(_RequestNames):
    """matchAttribute: every device of the named requests has the attribute, with one and the same value."""

    __slots__ = ("count", "first")

    def __init__(self, names: list[str], attribute_name: str) -> None:
        super().__init__(names, attribute_name)
        self.first: tuple[str, Any] | None = None
        self.count = 0

    def add(self, request: str, sub_request: str, attributes: Mapping[str, Any], device: DeviceID) -> bool:
        if not self.applies(request, sub_request):
            return True
        attribute = lookup_attribute(attributes, device, self.attribute_name)
        if attribute is None:
            return False
        value = _value(attribute)
        if self.count == 0:
            self.first = value
            self.count = 1
            return True
        if value is None or self.first is None or value[0] != self.first[0] or value[1] != self.first[1]:
            return False
        self.count += 1
        return True

    def remove(self, request: str, sub_request: str) -> None:
        if self.applies(request, sub_request):
            self.count -= 1


class DistinctAttribute(_RequestNames):
    """distinctAttribute: every device of the named requests has the attribute, all values different."""

    __slots__ = ("values",)

    def __init__(self, names: list[str], attribute_name: str) -> None:
        super().__init__(names, attribute_name)
        self.values: list[tuple[str, Any] | None] = []

    def add(self, request: str, sub_request: str, attributes: Mapping[str, Any], device: DeviceID) -> bool:
        if not self.applies(request, sub_request):
            return True
        attribute = lookup_attribute(attributes, device, self.attribute_name)
        if attribute is None:
            return False
        value = _value(attribute)
        if value is None:
            if self.values:  # an unknown type can be compared with nothing
                return False
        else:
            for seen in self.values:
                if seen is not None and seen[0] == value[0] and seen[1] == value[1]:
                    return False
        self.values.append(value)
        return True

    def remove(self, request: str, sub_request: str) -> None:
        if self.applies(request, sub_request):
            self.values.pop()
