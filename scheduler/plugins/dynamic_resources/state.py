"""What one scheduling attempt of DynamicResources keeps between extension points (upstream stateData).

Written by PreFilter and read by Filter, PostFilter, Score, Reserve, Unreserve and PreBind through the
CycleState. It has no `clone()`, so a what-if copy of the CycleState (nominated pods, preemption) shares it,
as upstream's Clone returns the same pointer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from scheduler.framework.node_selector import Matcher
from scheduler.framework.objects import JSON
from scheduler.plugins.dynamic_resources.claims import ClaimStore

NAME: Final = "DynamicResources"
STATE_KEY: Final = NAME
# fwk.ErrNotFound: CycleState.Read of a key nobody wrote (PreFilter did not run, e.g. an earlier PreFilter
# plugin rejected the pod). Every extension point returns it as an Error.
ERR_NOT_FOUND: Final = "not found"


@dataclass(slots=True)
class ClaimInfo:
    """informationForClaim: where an allocated claim is available, and the allocation Reserve made."""

    available_on_nodes: Matcher | None = None
    allocation: Mapping[str, Any] | None = None


@dataclass(slots=True)
class NodeAllocation:
    """Filter's result for one node: an allocation per claim to allocate (in claim order), the node's
    variant of the extended resource claim and the pod's container request mappings for it."""

    results: list[JSON] = field(default_factory=list)
    extended_claim: JSON | None = None
    mappings: list[JSON] = field(default_factory=list)


@dataclass(slots=True)
class DraState:
    """stateData."""

    claims: ClaimStore = field(default_factory=ClaimStore)
    pod_scalar: dict[str, int] = field(default_factory=dict)  # the pod's scalar requests (extended resources)
    allocator: Any = None  # scheduler.dra.structured.Allocator while some claim must be allocated
    unavailable_claims: set[int] = field(default_factory=set)
    infos: list[ClaimInfo] = field(default_factory=list)
    node_allocations: dict[str, NodeAllocation] = field(default_factory=dict)
    traces: dict[str, Any] = field(default_factory=dict)  # node -> AllocationTrace, made by explanations only
