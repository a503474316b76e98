"""The AllocationResult JSON of a claim once devices are picked: devices.results, devices.config (class
configs, then the claim's), nodeSelector (upstream's result assembly in Allocate and createNodeSelector)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from scheduler.dra.structured.capacity import Qty
from scheduler.dra.structured.claims import Claim, RequestData
from scheduler.dra.structured.pools import Slice, SliceDevice
from scheduler.dra.structured.types import AllocationError, Features

SOURCE_CLASS = "FromClass"
SOURCE_CLAIM = "FromClaim"


class DeviceResult:
    """internalDeviceResult: one device picked for one request."""

    __slots__ = ("admin", "consumed", "device", "rd", "share_id", "slice")

    def __init__(
        self,
        rd: RequestData,
        device: SliceDevice,
        sl: Slice,
        share_id: str | None,
        consumed: dict[str, Qty] | None,
    ) -> None:
        self.rd = rd
        self.device = device
        self.slice = sl
        self.share_id = share_id
        self.consumed = consumed
        self.admin = rd.request.admin_access


def allocation_result(
    claim: Claim,
    picked: list[DeviceResult],
    request_data: dict[tuple[int, int, int], RequestData],
    ci: int,
    features: Features,
    node_name: str,
) -> dict[str, Any]:
    """The AllocationResult of one claim: devices.results, devices.config and nodeSelector."""
    binding = features.device_binding_and_status
    results: list[dict[str, Any]] = []
    for res in picked:
        driver, pool, name = res.device.id
        entry: dict[str, Any] = {"request": res.rd.full_name, "driver": driver, "pool": pool, "device": name}
        if res.admin:
            entry["adminAccess"] = True
        if res.rd.request.tolerations:
            entry["tolerations"] = [dict(t) for t in res.rd.request.tolerations]
        if binding:
            if res.device.binding_conditions:
                entry["bindingConditions"] = list(res.device.binding_conditions)
            if res.device.binding_failure_conditions:
                entry["bindingFailureConditions"] = list(res.device.binding_failure_conditions)
        if res.share_id is not None:
            entry["shareID"] = res.share_id
        if res.consumed:
            entry["consumedCapacity"] = {k: str(v) for k, v in res.consumed.items()}
        results.append(entry)
    devices: dict[str, Any] = {}
    if results:
        devices["results"] = results
    config = _configs(claim, request_data, ci)
    if config:
        devices["config"] = config
    allocation: dict[str, Any] = {"devices": devices}
    try:
        selector = _node_selector(picked, node_name)
    except AllocationError as err:
        raise AllocationError(f"create NodeSelector for claim {claim.name}: {err}") from None
    if selector is not None:
        allocation["nodeSelector"] = selector
    return allocation

def _selected(request_data: dict[tuple[int, int, int], RequestData], ci: int, ri: int) -> RequestData:
    """The request data of a request, or of the subrequest that was chosen for it."""
    rd = request_data[(ci, ri, 0)]
    if rd.parent is not None:
        rd = request_data[(ci, ri, rd.selected_sub)]
    return rd

def _configs(claim: Claim, request_data: dict[tuple[int, int, int], RequestData], ci: int) -> list[dict[str, Any]]:
    """Class configs once per class (naming every request that uses the class), then claim configs that
    apply to an allocated request; a config naming every request names none ("applies to all")."""
    config: list[dict[str, Any]] = []
    class_ranges: dict[str, tuple[int, int]] = {}
    for ri in range(len(claim.requests)):
        rd = _selected(request_data, ci, ri)
        if rd.cls is None:
            continue
        known = class_ranges.get(rd.class_name)
        if known is not None:
            for i in range(*known):
                config[i]["requests"].append(rd.full_name)
            continue
        start = len(config)
        for class_config in rd.class_configs:
            entry = {"source": SOURCE_CLASS, "requests": [rd.full_name]}
            entry.update({k: copy.deepcopy(v) for k, v in class_config.items()})
            config.append(entry)
        class_ranges[rd.class_name] = (start, len(config))
    for claim_config in claim.configs:
        names = claim_config.get("requests")
        names = list(names) if isinstance(names, list) else []
        if not names:
            entry = {"source": SOURCE_CLAIM}
            entry.update({k: copy.deepcopy(v) for k, v in claim_config.items() if k != "requests"})
            config.append(entry)
            continue
        for ri, req in enumerate(claim.requests):
            rd = request_data[(ci, ri, 0)]
            if req.name in names or (rd.parent is not None and _selected(request_data, ci, ri).full_name in names):
                entry = {"source": SOURCE_CLAIM, "requests": list(names)}
                entry.update({k: copy.deepcopy(v) for k, v in claim_config.items() if k != "requests"})
                config.append(entry)
                break
    for entry in config:
        names = entry.get("requests")
        if not names:
            continue
        for ri, req in enumerate(claim.requests):
            if req.name in names:
                continue
            rd = request_data[(ci, ri, 0)]
            if rd.parent is not None and _selected(request_data, ci, ri).full_name in names:
                continue
            break
        else:
            del entry["requests"]
    return config


def _requirement_key(req: Mapping[str, Any]) -> tuple[Any, Any, frozenset[str]]:
    return req.get("key"), req.get("operator"), frozenset(req.get("values") or ())


def _node_selector(results: list[DeviceResult], node_name: str) -> dict[str, Any] | None:
    """createNodeSelector: the node alone if any device is local to it (or binds to it), else the union of
    the one-term selectors of the slices/devices, else None (available everywhere)."""
    fields: list[dict[str, Any]] = []
    expressions: list[dict[str, Any]] = []
    for res in results:
        selection = res.device.selection if res.slice.per_device_node_selection else res.slice.selection
        if selection.node_name_set or res.device.binds_to_node:
            return {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
                ]
            }
        selector = selection.node_selector
        if selector is None:
            continue
        terms = selector.get("nodeSelectorTerms") or []
        if len(terms) == 1:
            term = terms[0] if isinstance(terms[0], Mapping) else {}
            for target, source in ((fields, term.get("matchFields")), (expressions, term.get("matchExpressions"))):
                for req in source or ():
                    if all(_requirement_key(req) != _requirement_key(have) for have in target):
                        target.append(dict(req))
        elif len(terms) > 1:
            raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
    if not fields and not expressions:
        return None
    merged: dict[str, Any] = {}
    if expressions:
        merged["matchExpressions"] = expressions
    if fields:
        merged["matchFields"] = fields
    return {"nodeSelectorTerms": [merged]}
