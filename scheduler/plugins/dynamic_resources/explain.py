"""DynamicResources for `pyscheduler explain`: per node, what each claim would get there or why it cannot,
and the changes to a claim that might let the pod fit.

For a node the allocator turned down, the allocation is run again with an AllocationTrace (only for the
explanation; scheduling never pays for it): no slice for the node, an incomplete or invalid pool, how many
devices passed each request's selectors against how many it needs, and per device the first reasons it was
not used (a selector false, already allocated to which claim, a taint not tolerated, a constraint, counters
or capacity exhausted). Fixes are proposed from those reasons and checked by the explain engine, which
re-runs every filter with the changed claim (through PodInfo.claim_overrides): tolerate the taint, ask for
as many devices as the node has, use another DeviceClass.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from scheduler.framework.interface import ExplainDetail, FixCandidate
from scheduler.framework.objects import DEVICE_CLASS, JSON
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.dynamic_resources.claims import (
    allocation_of,
    allocation_results,
    device_requests,
    kobj,
    name_of,
)
from scheduler.plugins.dynamic_resources.state import DraState

if TYPE_CHECKING:
    from scheduler.plugins.dynamic_resources.plugin import DynamicResources

MAX_REJECTIONS_SHOWN: Final = 8  # per request and node
MAX_CLASS_ALTERNATIVES: Final = 5

_REASON_TEXT: Final = {
    "selector-false": "{detail} is false",
    "node-selection": "its node selection does not include this node",
    "binding-conditions-disabled": "it has binding conditions and DRADeviceBindingConditions is off",
    "in-use-by-pod": "chosen for another request of this pod",
    "capacity": "not enough of its consumable capacity left",
    "counters": "a shared counter of its partitionable device is exhausted",
    "partitionable-disabled": "it consumes counters and DRAPartitionableDevices is off",
    "taint": "taint {detail} is not tolerated",
    "constraint": "constraint matchAttribute {detail} would not hold",
}


def _device_text(device: tuple[str, str, str]) -> str:
    return "/".join(device)


def _results_text(results: list[Mapping[str, Any]]) -> str:
    return ", ".join(f"{r.get('request')}: {r.get('driver')}/{r.get('pool')}/{r.get('device')}" for r in results)


def _trace(plugin: DynamicResources, s: DraState, pod: PodInfo, node: NodeInfo) -> Any:
    """The allocator's AllocationTrace of this node (None when there is nothing to allocate or it fails)."""
    from scheduler.dra.structured import AllocationError, AllocationTrace

    if s.allocator is None or node.node is None:
        return None
    trace = s.traces.get(node.name)
    if trace is None:
        claims = [c for _, c in s.claims.to_allocate()]
        trace = s.traces[node.name] = AllocationTrace()
        with contextlib.suppress(AllocationError):  # Filter reported the error: the trace holds what it saw
            s.allocator.allocate(node.node, claims, trace)
    return trace


def explain_node(
    plugin: DynamicResources, s: DraState, pod: PodInfo, node: NodeInfo, status: Status | None
) -> list[ExplainDetail]:
    """One line per claim (and, on a node the allocator turned down, per request and device)."""
    out: list[ExplainDetail] = []
    labels = node.node.labels if node.node is not None else {}
    for index, claim in s.claims.all():
        allocation = allocation_of(claim)
        if allocation is None:
            continue
        results = allocation_results(allocation)
        selector = s.infos[index].available_on_nodes
        available = selector is None or selector(labels, node.name)
        where = "available on this node" if available else "its node selector excludes this node"
        out.append(
            ExplainDetail(
                f"claim {kobj(claim)} is allocated ({_results_text(results)}), {where}",
                {"claim": kobj(claim), "allocated": True, "availableHere": available},
            )
        )
    made = s.node_allocations.get(node.name)
    to_allocate = s.claims.to_allocate()
    if made is not None and status is None:
        for (_, claim), result in zip(to_allocate, made.results, strict=False):
            devices = allocation_results(result)
            out.append(
                ExplainDetail(
                    f"claim {kobj(claim)} would get {_results_text(devices)}",
                    {"claim": kobj(claim), "devices": [dict(d) for d in devices]},
                )
            )
        return out
    if status is None or not to_allocate:
        return out
    trace = _trace(plugin, s, pod, node)
    if trace is None:
        return out
    if not trace.slices_for_node:
        out.append(ExplainDetail("no ResourceSlice publishes devices for this node", {"rule": "no-slice"}))
    for pool in trace.pools:
        why = "incomplete (a driver is updating it)" if pool.incomplete else f"invalid: {pool.invalid_reason}"
        out.append(ExplainDetail(f"pool {pool.pool} is {why}", {"pool": pool.pool, "rule": "pool"}))
    for note in trace.requests:
        out.append(
            ExplainDetail(
                f"claim {note.claim}, request {note.request}: {note.selectable} device(s) on this node match its "
                f"class and selectors, it needs {note.wanted}",
                {"claim": note.claim, "request": note.request, "selectable": note.selectable, "wanted": note.wanted},
            )
        )
        for rejection in trace.rejections_for(note.claim, note.request)[:MAX_REJECTIONS_SHOWN]:
            why = _REASON_TEXT.get(rejection.reason, rejection.reason).format(detail=rejection.detail)
            if rejection.reason == "allocated":
                holders = plugin.manager.claims.holders(rejection.device)
                why = f"already allocated to claim {', '.join(holders)}" if holders else "already allocated"
            out.append(
                ExplainDetail(
                    f"    device {_device_text(rejection.device)}: {why}",
                    {
                        "claim": rejection.claim,
                        "request": rejection.request,
                        "device": _device_text(rejection.device),
                        "reason": rejection.reason,
                        "detail": rejection.detail,
                    },
                )
            )
    return out


# ---------------------------------------------------------------------------------------------------------
# Fixes


def _with_claim(claim: JSON) -> Any:
    """A pod transform: the pod as it would be with this version of one of its claims."""

    def apply(pod: PodInfo) -> PodInfo:
        others = tuple(c for c in pod.claim_overrides if name_of(c) != name_of(claim))
        return pod.evolve(claim_overrides=(*others, claim))

    return apply


def _edited(claim: Mapping[str, Any], request: str, edit: Any) -> JSON | None:
    """A copy of the claim with `edit(exactly)` applied to the request (or subrequest "req/sub")."""
    out = copy.deepcopy(dict(claim))
    base, _, sub = request.partition("/")
    for req in out.get("spec", {}).get("devices", {}).get("requests", []):
        if req.get("name") != base:
            continue
        target = req.get("exactly")
        if sub:
            target = next((s for s in req.get("firstAvailable") or [] if s.get("name") == sub), None)
        if not isinstance(target, dict):
            return None
        edit(target)
        return out
    return None


def _parse_taint(detail: str) -> tuple[str, str, str] | None:
    """ "key=value:Effect" (the allocator's taint detail) -> (key, value, effect)."""
    head, sep, effect = detail.rpartition(":")
    if not sep:
        return None
    key, _, value = head.partition("=")
    return key, value, effect


def suggest_fixes(
    plugin: DynamicResources, s: DraState, pod: PodInfo, node: NodeInfo, status: Status
) -> list[FixCandidate]:
    trace = _trace(plugin, s, pod, node)
    if trace is None:
        return []
    claims = {kobj(c): c for _, c in s.claims.to_allocate()}
    out: list[FixCandidate] = []
    for rejection in trace.rejections.values():
        claim = claims.get(rejection.claim)
        taint = _parse_taint(rejection.detail) if rejection.reason == "taint" else None
        if claim is None or taint is None:
            continue
        key, value, effect = taint
        toleration = {"key": key, "operator": "Equal", "value": value, "effect": effect}
        if not value:
            toleration = {"key": key, "operator": "Exists", "effect": effect}
        changed = _edited(
            claim, rejection.request, lambda t, tol=toleration: t.setdefault("tolerations", []).append(tol)
        )
        if changed is not None:
            out.append(
                FixCandidate(
                    key=f"dra-toleration:{rejection.claim}:{rejection.request}:{key}={value}:{effect}",
                    kind="tolerate-device-taint",
                    description=f"tolerate device taint {key}={value}:{effect} in request {rejection.request} "
                    f"of claim {rejection.claim}",
                    pod=_with_claim(changed),
                    data={"claim": rejection.claim, "request": rejection.request, "toleration": toleration},
                )
            )
    # Of the devices that match a request, those already allocated are not free for it.
    held: dict[tuple[str, str], set[tuple[str, str, str]]] = {}
    unmatched: dict[tuple[str, str], set[tuple[str, str, str]]] = {}
    for rejection in trace.rejections.values():
        request_key = (rejection.claim, rejection.request)
        if rejection.reason == "allocated":
            held.setdefault(request_key, set()).add(rejection.device)
        elif rejection.reason == "selector-false":
            unmatched.setdefault(request_key, set()).add(rejection.device)
    for note in trace.requests:
        claim = claims.get(note.claim)
        request_key = (note.claim, note.request)
        usable = note.selectable - len(held.get(request_key, set()) - unmatched.get(request_key, set()))
        if claim is None or usable >= note.wanted:
            continue
        if usable > 0:
            count = usable
            changed = _edited(claim, note.request, lambda t, n=count: t.update(count=n, allocationMode="ExactCount"))
            if changed is not None:
                out.append(
                    FixCandidate(
                        key=f"dra-count:{note.claim}:{note.request}",
                        kind="smaller-device-count",
                        description=f"ask for {count} device(s) in request {note.request} of claim "
                        f"{note.claim} (the most some node has free)",
                        pod=_with_claim(changed),
                        magnitude=float(count),
                        data={"claim": note.claim, "request": note.request, "count": count},
                    )
                )
        out.extend(_other_classes(plugin, claim, note.claim, note.request))
    return out


def _request_class(claim: Mapping[str, Any], request: str) -> str:
    base, _, sub = request.partition("/")
    for req in device_requests(claim):
        if req.get("name") != base:
            continue
        target = req.get("exactly")
        if sub:
            target = next((x for x in req.get("firstAvailable") or [] if x.get("name") == sub), None)
        if isinstance(target, Mapping):
            return str(target.get("deviceClassName") or "")
    return ""


def _other_classes(
    plugin: DynamicResources, claim: Mapping[str, Any], key: str, request: str
) -> list[FixCandidate]:
    current = _request_class(claim, request)
    out: list[FixCandidate] = []
    for cls in plugin.manager.objects.list(DEVICE_CLASS)[: MAX_CLASS_ALTERNATIVES + 1]:
        name = name_of(cls)
        if name == current or len(out) == MAX_CLASS_ALTERNATIVES:
            continue
        changed = _edited(claim, request, lambda t, n=name: t.update(deviceClassName=n))
        if changed is None:
            continue
        out.append(
            FixCandidate(
                key=f"dra-class:{key}:{request}:{name}",
                kind="other-device-class",
                description=f"use DeviceClass {name} for request {request} of claim {key}",
                pod=_with_claim(changed),
                data={"claim": key, "request": request, "deviceClassName": name},
            )
        )
    return out
