"""Small builders of resource.k8s.io/v1 objects (raw JSON, API defaults applied) and a CEL double, for the
allocator's own tests. The double maps expression text to a Python predicate over the device; it is not CEL
(test_allocator_upstream_table.py and test_allocator_cel.py cover real expressions)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.dra.structured import allocator as allocator_module

DeviceView = Mapping[str, Any]  # what a FakeCel predicate sees: {"driver": ..., **raw device}


def device(name: str, **fields: Any) -> dict[str, Any]:
    """A spec.devices[] entry; fields are the v1 JSON keys (attributes, capacity, taints, ...)."""
    return {"name": name, **fields}


def attrs(**values: Any) -> dict[str, Any]:
    """Device attributes: str -> string, bool -> bool, int -> int."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "string"
        out[key] = {kind: value}
    return out


def resource_slice(
    name: str,
    *devices: dict[str, Any],
    driver: str = "gpu.example.com",
    pool: str | None = None,
    node: str | None = "node-1",
    generation: int = 1,
    count: int = 1,
    **spec: Any,
) -> dict[str, Any]:
    """A ResourceSlice; `node=None` leaves nodeName out (then pass allNodes/nodeSelector in spec)."""
    body: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool or node or name, "generation": generation, "resourceSliceCount": count},
        "devices": list(devices),
        **spec,
    }
    if node is not None:
        body["nodeName"] = node
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": body}


def device_class(name: str, *expressions: str, **spec: Any) -> dict[str, Any]:
    """A DeviceClass with CEL selectors."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": e}} for e in expressions], **spec},
    }


def exactly(cls: str, count: int = 1, *expressions: str, mode: str = "ExactCount", **fields: Any) -> dict[str, Any]:
    """An ExactDeviceRequest body."""
    body: dict[str, Any] = {"deviceClassName": cls, "allocationMode": mode, **fields}
    if mode == "ExactCount":
        body["count"] = count
    if expressions:
        body["selectors"] = [{"cel": {"expression": e}} for e in expressions]
    return body


def request(name: str, cls: str = "gpu", count: int = 1, *expressions: str, **fields: Any) -> dict[str, Any]:
    """A DeviceRequest with `exactly`."""
    return {"name": name, "exactly": exactly(cls, count, *expressions, **fields)}


def first_available(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    """A DeviceRequest with firstAvailable subrequests (each an `exactly`-like body plus its name)."""
    return {"name": name, "firstAvailable": list(subs)}


def claim(
    name: str,
    *requests: dict[str, Any],
    namespace: str = "default",
    constraints: list[dict[str, Any]] | None = None,
    config: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A ResourceClaim."""
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": devices},
    }


class Classes:
    """A DeviceClassLister over a list."""

    def __init__(self, *classes: Mapping[str, Any]) -> None:
        self.by_name = {c["metadata"]["name"]: c for c in classes}

    def get(self, name: str) -> Mapping[str, Any] | None:
        return self.by_name.get(name)


@dataclass(frozen=True)
class Node:
    """A NodeView."""

    name: str = "node-1"
    labels: Mapping[str, str] = field(default_factory=dict)


class FakeCelError(Exception):
    """Raised by a FakeCel predicate to play a CEL runtime error."""


@dataclass(frozen=True)
class _Error:
    message: str


class _Compiled:
    def __init__(self, cel: FakeCel, expression: str) -> None:
        self.cel = cel
        self.expression = expression
        predicate = cel.predicates.get(expression)
        self.error = _Error(f"no such expression in the test: {expression}") if predicate is None else None

    def device_matches(self, device: Any) -> bool:
        self.cel.evaluations.append((self.expression, device["name"]))
        return bool(self.cel.predicates[self.expression](device))


class FakeCel:
    """A CelCache whose expressions are Python predicates over {"driver": ..., **device}; counts evaluations."""

    def __init__(self, predicates: Mapping[str, Callable[[DeviceView], bool]]) -> None:
        self.predicates = dict(predicates)
        self.evaluations: list[tuple[str, str]] = []

    def get_or_compile(self, expression: str) -> _Compiled:
        return _Compiled(self, expression)


def use_fake_cel(monkeypatch: Any) -> None:
    """Have the allocator hand FakeCel the raw device (plus its driver) instead of scheduler.dra.cel's input."""
    monkeypatch.setattr(allocator_module, "_prepare_device", lambda driver, raw: {"driver": driver, **raw})
    monkeypatch.setattr(allocator_module, "_cel_runtime_error", lambda: FakeCelError)


DRIVER_IS_GPU = 'device.driver == "gpu.example.com"'
CEL = FakeCel({DRIVER_IS_GPU: lambda d: d["driver"] == "gpu.example.com"})
