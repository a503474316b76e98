"""Why a node's devices did not satisfy a pod's claims, recorded by the allocator for `pyscheduler explain`.

The allocator writes into an AllocationTrace only when the caller passes one: without it, each rejection
point costs one `is not None` test. A device can be turned down for several reasons over the backtracking
search (in use by another request of the pod in one branch, a constraint in another); each distinct
(claim, request, device, reason) is kept once, in the order the search met it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.dra.structured.types import DeviceID

# Why a device was not used for a request.
SELECTOR_FALSE = "selector-false"  # a class or request selector evaluated to false (detail: which one)
NODE_SELECTION = "node-selection"  # a per-device node selection does not include this node
BINDING_CONDITIONS_DISABLED = "binding-conditions-disabled"  # DRADeviceBindingConditions is off
ALLOCATED = "allocated"  # held by an allocated claim (the plugin knows which)
IN_USE_BY_POD = "in-use-by-pod"  # chosen for another request of the pod in this attempt
CAPACITY = "capacity"  # consumable capacity exhausted, not offered, or refused by the request policy
COUNTERS = "counters"  # a shared counter of a partitionable device is exhausted
PARTITIONABLE_DISABLED = "partitionable-disabled"  # consumes counters but DRAPartitionableDevices is off
TAINT = "taint"  # a NoSchedule/NoExecute taint no toleration of the request tolerates (detail: the taint)
CONSTRAINT = "constraint"  # a claim constraint (matchAttribute/distinctAttribute) fails (detail: attribute)


@dataclass(frozen=True, slots=True)
class DeviceRejection:
    """One device turned down for one request (or subrequest "req/sub") of one claim ("ns/name")."""

    claim: str
    request: str
    device: DeviceID
    reason: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class PoolNote:
    """A pool the node could see but not use: incomplete (being updated) or invalid (with the reason)."""

    pool: str
    incomplete: bool
    invalid_reason: str = ""


@dataclass(frozen=True, slots=True)
class RequestNote:
    """How many devices a request needed and how many passed its selectors on this node."""

    claim: str
    request: str
    wanted: int
    selectable: int


@dataclass(slots=True)
class AllocationTrace:
    """What one allocate() call saw on one node."""

    node: str = ""
    slices_for_node: int = 0  # ResourceSlices published for this node or shared (0: "no slice for the node")
    pools: list[PoolNote] = field(default_factory=list)
    requests: list[RequestNote] = field(default_factory=list)
    rejections: dict[tuple[str, str, DeviceID, str], DeviceRejection] = field(default_factory=dict)

    def reject(self, claim: str, request: str, device: DeviceID, reason: str, detail: str = "") -> None:
        """Record a rejection once."""
        key = (claim, request, device, reason)
        if key not in self.rejections:
            self.rejections[key] = DeviceRejection(claim, request, device, reason, detail)

    def rejections_for(self, claim: str, request: str) -> list[DeviceRejection]:
        """The rejections of one request, in the order met."""
        return [r for r in self.rejections.values() if r.claim == claim and r.request == request]
