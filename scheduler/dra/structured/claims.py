"""A pod's ResourceClaims and DeviceClasses as the allocator reads them (upstream's requestAccessor and
requestData), parsed once per claim object and Allocator, asked about on every node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.dra.structured.capacity import Qty, parse_qty
from scheduler.dra.structured.pools import Pool, Slice, SliceDevice
from scheduler.dra.structured.types import AllocationError
from scheduler.framework.quantity import QuantityError

TAINT_EFFECTS_PREVENTING = frozenset({"NoSchedule", "NoExecute"})


def kobj(obj: Mapping[str, Any]) -> str:
    """klog.KObj: "namespace/name", or "name" without a namespace."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(meta, Mapping):
        return ""
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    return f"{namespace}/{name}" if namespace else name


class Request:
    """requestAccessor: an ExactDeviceRequest or a DeviceSubRequest."""

    __slots__ = (
        "admin_access",
        "base_name",
        "capacity_requests",
        "capacity_set",
        "class_name",
        "count",
        "full_name",
        "has_admin_access",
        "has_derived",
        "matches",
        "matches_class",
        "mode",
        "name",
        "parent",
        "selectors",
        "sub_name",
        "tolerations",
    )

    def __init__(self, name: str, raw: Mapping[str, Any], parent: str | None, claim: str) -> None:
        sub = parent is not None
        self.name = name
        self.parent = parent
        self.base_name = parent if parent is not None else name
        self.sub_name = name if parent is not None else ""
        self.full_name = f"{parent}/{name}" if parent is not None else name
        # isSelectable's answers (class and request selectors) per device, for as long as the class object
        # is the same: one pod's claims are parsed once and asked about on every node.
        self.matches: dict[SliceDevice, bool] = {}
        self.matches_class: Mapping[str, Any] | None = None
        self.class_name = str(raw.get("deviceClassName") or "")
        self.mode = str(raw.get("allocationMode") or "")
        count = raw.get("count")
        self.count = count if isinstance(count, int) and not isinstance(count, bool) else 0
        admin = None if sub else raw.get("adminAccess")
        self.has_admin_access = admin is not None
        self.admin_access = admin is True
        selectors = raw.get("selectors")
        self.selectors: list[Any] = selectors if isinstance(selectors, list) else []
        tolerations = raw.get("tolerations")
        self.tolerations: list[Mapping[str, Any]] = (
            [t for t in tolerations if isinstance(t, Mapping)] if isinstance(tolerations, list) else []
        )
        self.has_derived = bool(raw.get("derivedAttributes"))
        capacity = raw.get("capacity")
        self.capacity_set = capacity is not None
        self.capacity_requests: dict[str, Qty] | None = None
        if isinstance(capacity, Mapping) and isinstance(capacity.get("requests"), Mapping):
            try:
                self.capacity_requests = {str(k): parse_qty(v) for k, v in capacity["requests"].items()}
            except QuantityError as err:
                raise AllocationError(f"claim {claim}, request {name}: capacity requests: {err}") from None


class ClaimRequest:
    """One spec.devices.requests[] entry: exactly, or firstAvailable subrequests."""

    __slots__ = ("exact", "name", "subs")

    def __init__(self, raw: Mapping[str, Any], claim: str) -> None:
        self.name = str(raw.get("name") or "")
        exact = raw.get("exactly")
        self.exact = Request(self.name, exact, None, claim) if isinstance(exact, Mapping) else None
        subs = raw.get("firstAvailable")
        self.subs = [
            Request(str(s.get("name") or ""), s, self.name, claim)
            for s in (subs if isinstance(subs, list) else [])
            if isinstance(s, Mapping)
        ]


class Claim:
    """A ResourceClaim's spec.devices as the allocator reads it."""

    __slots__ = ("configs", "constraints", "key", "name", "raw", "requests")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        self.key = kobj(raw)
        self.name = self.key.rpartition("/")[2]
        spec = raw.get("spec") or {}
        devices = spec.get("devices") if isinstance(spec, Mapping) else None
        devices = devices if isinstance(devices, Mapping) else {}
        requests = devices.get("requests")
        requests = requests if isinstance(requests, list) else []
        self.requests = [ClaimRequest(r, self.key) for r in requests if isinstance(r, Mapping)]
        constraints = devices.get("constraints")
        self.constraints: list[Any] = constraints if isinstance(constraints, list) else []
        configs = devices.get("config")
        self.configs: list[Mapping[str, Any]] = (
            [c for c in configs if isinstance(c, Mapping)] if isinstance(configs, list) else []
        )


class RequestData:
    """requestData: one request or subrequest of one claim, validated for this node."""

    __slots__ = (
        "all_devices",
        "base_name",
        "class_configs",
        "class_name",
        "class_selectors",
        "cls",
        "full_name",
        "matches",
        "num_devices",
        "parent",
        "request",
        "selected_sub",
        "sub_name",
    )

    def __init__(self, request: Request, cls: ClassInfo) -> None:
        self.request = request
        self.parent = request.parent
        self.base_name = request.base_name
        self.sub_name = request.sub_name
        self.full_name = request.full_name
        self.cls = cls.raw
        self.class_name = cls.name
        self.class_selectors = cls.selectors
        self.class_configs = cls.configs
        if request.matches_class is not cls.raw:
            request.matches = {}
            request.matches_class = cls.raw
        self.matches = request.matches
        self.num_devices = 0
        self.selected_sub = 0
        self.all_devices: list[tuple[SliceDevice, Slice, Pool]] = []


class ClassInfo:
    """A DeviceClass as the allocator reads it, kept per Allocator while the lister returns the same object."""

    __slots__ = ("configs", "name", "raw", "selectors")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        self.name = kobj(raw)
        spec = raw.get("spec")
        spec = spec if isinstance(spec, Mapping) else {}
        selectors = spec.get("selectors")
        self.selectors: list[Any] = selectors if isinstance(selectors, list) else []
        configs = spec.get("config")
        self.configs: list[Mapping[str, Any]] = (
            [c for c in configs if isinstance(c, Mapping)] if isinstance(configs, list) else []
        )


def untolerated_taint(device: SliceDevice, request: Request) -> Mapping[str, Any] | None:
    """taintPreventsAllocation: the first NoSchedule/NoExecute taint no toleration of the request tolerates."""
    for taint in device.taints:
        if taint.get("effect") not in TAINT_EFFECTS_PREVENTING:
            continue  # None and unknown effects do not prevent allocation
        if not any(tolerates(t, taint) for t in request.tolerations):
            return taint
    return None


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """resourceclaim.ToleratesTaint (the caller checks the effect is one that matters)."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    operator = toleration.get("operator") or ""
    if operator in ("", "Equal"):
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"
