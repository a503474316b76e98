"""Upstream's shared allocator test table (allocator_tables.json, see upstream/dump_allocator_tables.py) as
inputs for scheduler.dra.structured, and the comparison of our outcome with what upstream's allocator did."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scheduler.dra.structured import (
    AllocatedState,
    AllocationError,
    ConsumedCapacityCollection,
    FailedAllocationOnNode,
    Features,
)
from scheduler.framework.quantity import parse_quantity

TABLES = Path(__file__).parent / "upstream" / "allocator_tables.json"
FIXED_SHARE_ID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"  # upstream's test replaces every share ID with it


def _restore_unmarshallable(cases: dict[str, dict[str, Any]]) -> None:
    """Put back input quantities encoding/json cannot write.

    resource.Quantity marshals 10**21 (a DecimalSI value past the "E" suffix) as "1": the suffix lookup fails
    and the exponent is dropped. One case uses it (as request and default); its dumped input therefore says
    "1" where the Go test had 1000000000000000000000. Its results say "1" too, which is what the API server
    would store for that amount, and what canonical_quantity writes.
    """
    case = cases["consumable-capacity-requests-are-not-modified"]
    big = "1000000000000000000000"
    requests = case["claims"][0]["spec"]["devices"]["requests"]
    assert requests[1]["exactly"]["capacity"]["requests"] == {"capacity-0": "1"}, "the table changed"
    requests[1]["exactly"]["capacity"]["requests"]["capacity-0"] = big
    policy = case["slices"][0]["spec"]["devices"][0]["capacity"]["capacity-0"]["requestPolicy"]
    assert policy["default"] == "1", "the table changed"
    policy["default"] = big
    for record in case["cel"]:  # the CEL input is the device too
        record["device"]["capacity"]["capacity-0"]["requestPolicy"]["default"] = big


def load_cases() -> dict[str, dict[str, Any]]:
    """The dumped cases by upstream name (without the "TestAllocator/" prefix)."""
    data = json.loads(TABLES.read_text())
    cases = {name.removeprefix("TestAllocator/"): case for name, case in sorted(data["cases"].items())}
    _restore_unmarshallable(cases)
    return cases


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def features_of(case: Mapping[str, Any]) -> Features:
    return Features(**{_snake(k): v for k, v in case["features"].items()})


def allocated_state_of(case: Mapping[str, Any]) -> AllocatedState:
    capacity = ConsumedCapacityCollection()
    for entry in case["allocatedCapacityDevices"]:
        driver, pool, name = entry["device"]
        capacity[(driver, pool, name)] = {k: parse_quantity(v) for k, v in (entry["capacity"] or {}).items()}
    return AllocatedState(
        allocated_devices={(d, p, n) for d, p, n in case["allocatedDevices"]},
        allocated_shared_device_ids={(d, p, n, s) for d, p, n, s in case["allocatedSharedDeviceIDs"]},
        aggregated_capacity=capacity,
    )


class ClassLister:
    """DeviceClasses by name (upstream's informerLister)."""

    def __init__(self, classes: list[Mapping[str, Any]] | None) -> None:
        self.classes = {c["metadata"]["name"]: c for c in classes or []}

    def get(self, name: str) -> Mapping[str, Any] | None:
        return self.classes.get(name)


@dataclass(frozen=True)
class Node:
    """A NodeView."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


def node_of(case: Mapping[str, Any]) -> Node:
    meta = case["node"]["metadata"]
    return Node(meta["name"], dict(meta.get("labels") or {}))


def strip(value: Any) -> Any:
    """Go's JSON without the empty values encoding/json writes (and we leave out): null, [], {}."""
    if isinstance(value, dict):
        kept = {k: strip(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def normalized_results(results: list[dict[str, Any]] | None) -> list[Any] | None:
    """AllocationResults with share IDs fixed, as upstream's test compares them."""
    if results is None:
        return None
    out = copy.deepcopy(results)
    for result in out:
        for device in (result.get("devices") or {}).get("results") or []:
            if device.get("shareID") is not None:
                device["shareID"] = FIXED_SHARE_ID
    return [strip(r) for r in out]


def expected_error(case: Mapping[str, Any]) -> str | None:
    """Upstream's error text, with its test lister's not-found wording replaced by the real lister's."""
    error: str | None = case["error"]
    if error is None:
        return None
    m = re.search(r"could not retrieve device class (\S+):  \"not found\" not found$", error)
    if m:
        # informerLister returns NotFound for GroupResource{} and name "not found"; the scheduler's
        # DeviceClass lister says deviceclass.resource.k8s.io "<name>" not found.
        error = error[: m.start(1)] + f'{m.group(1)}: deviceclass.resource.k8s.io "{m.group(1)}" not found'
    return error


def error_kind(err: AllocationError | None) -> str:
    if err is None:
        return "none"
    return "node" if isinstance(err, FailedAllocationOnNode) else "fatal"


def expected_error_kind(case: Mapping[str, Any]) -> str:
    if case["error"] is None:
        return "none"
    return "node" if case["errorFailedAllocationOnNode"] else "fatal"


class ReplayCelError(Exception):
    """A CEL runtime error upstream's evaluator gave."""


@dataclass(frozen=True)
class _CompileError:
    message: str


class _Compiled:
    def __init__(self, cache: ReplayCel, expression: str, error: str | None) -> None:
        self.cache = cache
        self.expression = expression
        self.error = None if error is None else _CompileError(error)

    def device_matches(self, device: Any) -> bool:
        driver, raw = device
        key = (self.expression, device_key(driver, raw.get("allowMultipleAllocations"), raw))
        if key not in self.cache.evaluations:
            raise AssertionError(f"upstream never evaluated {self.expression!r} on {driver}/{raw.get('name')}")
        self.cache.used.add(key)
        matches, error = self.cache.evaluations[key]
        if error is not None:
            raise ReplayCelError(error)
        return bool(matches)


def device_key(driver: str, allow_multiple: bool | None, device: Mapping[str, Any]) -> str:
    """The CEL input of a device (cel.Device: driver, allowMultipleAllocations, attributes, capacity)."""
    return json.dumps(
        {
            "driver": driver,
            "allowMultipleAllocations": allow_multiple,
            "attributes": device.get("attributes") or None,
            "capacity": device.get("capacity") or None,
        },
        sort_keys=True,
    )


class ReplayCel:
    """A CelCache that answers with what upstream's CEL answered in the same case (compile errors included).

    It refuses an evaluation upstream never made: our allocator must only ask what upstream asked.
    """

    def __init__(self, case: Mapping[str, Any]) -> None:
        self.compiled = {r["expression"]: r["error"] for r in case["celCompile"] or []}
        self.evaluations: dict[tuple[str, str], tuple[bool, str | None]] = {}
        for r in case["cel"] or []:
            dev = r["device"]
            key = device_key(dev["driver"], dev["allowMultipleAllocations"], dev)
            self.evaluations[(r["expression"], key)] = (r["matches"], r["error"])
        self.used: set[tuple[str, str]] = set()

    def get_or_compile(self, expression: str) -> _Compiled:
        if expression not in self.compiled:
            raise AssertionError(f"upstream never compiled {expression!r}")
        return _Compiled(self, expression, self.compiled[expression])
