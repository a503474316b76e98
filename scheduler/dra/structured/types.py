"""The allocator's inputs and errors (upstream structured/internal/types.go, allocatedstate.go, schedulerapi)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction
from typing import Any, Protocol

DeviceID = tuple[str, str, str]
"""(driver, pool, device): one device of one pool (upstream DeviceID)."""

SharedDeviceID = tuple[str, str, str, str]
"""(driver, pool, device, shareID): one share of a device that allows multiple allocations ("" = no share ID)."""

ConsumedCapacity = dict[str, Fraction]
"""Capacity name -> amount consumed (upstream ConsumedCapacity; exact rationals instead of Quantities)."""

ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize: devices one claim may get


@dataclass(frozen=True, slots=True)
class Features:
    """Optional allocator behaviour (upstream structured.Features); each entry changes some control flow."""

    admin_access: bool = False
    compatibility_groups: bool = False
    consumable_capacity: bool = False
    derived_attributes: bool = False
    device_binding_and_status: bool = False
    device_taints: bool = False
    fractional_capacity_range: bool = False
    list_type_attributes: bool = False
    optional_node_operations: bool = False
    partitionable_devices: bool = False
    prioritized_list: bool = False

    def enabled(self) -> frozenset[str]:
        """Features.Set(): the feature gate names of the enabled entries."""
        return frozenset(_GATE_NAMES[f.name] for f in fields(self) if getattr(self, f.name))


_GATE_NAMES = {
    "admin_access": "DRAAdminAccess",
    "compatibility_groups": "DRADeviceCompatibilityGroups",
    "consumable_capacity": "DRAConsumableCapacity",
    "derived_attributes": "DRADerivedAttributes",
    "device_binding_and_status": "DRADeviceBindingConditions+DRAResourceClaimDeviceStatus",
    "device_taints": "DRADeviceTaints",
    "fractional_capacity_range": "DRAFractionalCapacityRange",
    "list_type_attributes": "DRAListTypeAttributes",
    "optional_node_operations": "DRAOptionalNodeOperations",
    "partitionable_devices": "DRAPartitionableDevices",
    "prioritized_list": "DRAPrioritizedList",
}

SUPPORTED_FEATURES = Features(
    admin_access=True,
    prioritized_list=True,
    partitionable_devices=True,
    device_taints=True,
    device_binding_and_status=True,
    consumable_capacity=True,
    fractional_capacity_range=True,
)
"""What this allocator implements: upstream's "incubating" variant (the alpha-only entries belong to
"experimental", which kube-scheduler only picks when an alpha DRA gate is turned on)."""

DEFAULT_FEATURES = replace(SUPPORTED_FEATURES, fractional_capacity_range=False)
"""AllocatorFeatures() of kube-scheduler v1.37.2 with its default gates: DRAAdminAccess, DRAPrioritizedList
(GA), DRADeviceTaints (GA), DRAPartitionableDevices, DRAConsumableCapacity, DRADeviceBindingConditions (beta,
on) with DRAResourceClaimDeviceStatus (GA); the alpha DRAListTypeAttributes, DRAOptionalNodeOperations,
DRADerivedAttributes, DRADeviceCompatibilityGroups are off, and so is DRAFractionalCapacityRange: its 1.37 beta
default of true needs --min-compatibility-version 1.37, while a 1.37 binary defaults to 1.36 (the upstream
binary's kubernetes_feature_enabled{name="DRAFractionalCapacityRange"} is 0). Upstream then still runs the
incubating allocator, with that feature off."""


class ConsumedCapacityCollection(dict[DeviceID, ConsumedCapacity]):
    """Capacity consumed per device by shares of it (upstream ConsumedCapacityCollection)."""

    def clone(self) -> ConsumedCapacityCollection:
        return ConsumedCapacityCollection({device: dict(consumed) for device, consumed in self.items()})

    def insert(self, device: DeviceID, consumed: Mapping[str, Fraction]) -> None:
        """Add one share's consumption to the device's total."""
        total = self.get(device)
        if total is None:
            self[device] = dict(consumed)
            return
        for name, amount in consumed.items():
            total[name] = total.get(name, Fraction(0)) + amount

    def remove(self, device: DeviceID, consumed: Mapping[str, Fraction]) -> None:
        """Subtract one share's consumption; the device's entry goes once nothing is consumed any more."""
        total = self.get(device)
        if total is None:
            return
        for name, amount in consumed.items():
            if name in total:
                total[name] -= amount
        if all(amount == 0 for amount in total.values()):
            del self[device]


@dataclass(slots=True)
class AllocatedState:
    """Devices held by allocated claims (upstream schedulerapi.AllocatedState), as the plugin gathers it.

    A result without a share ID is a dedicated device (allocated_devices); one with a share ID (a device that
    allows multiple allocations, DRAConsumableCapacity) is one share (allocated_shared_device_ids) and its
    consumedCapacity adds to aggregated_capacity. Results with adminAccess hold nothing.
    """

    allocated_devices: set[DeviceID] = field(default_factory=set)
    allocated_shared_device_ids: set[SharedDeviceID] = field(default_factory=set)
    aggregated_capacity: ConsumedCapacityCollection = field(default_factory=ConsumedCapacityCollection)


def is_device_allocated(device: DeviceID, state: AllocatedState) -> bool:
    """IsDeviceAllocated: dedicated, one of its shares, or some of its capacity consumed."""
    if device in state.allocated_devices or device in state.aggregated_capacity:
        return True
    return any(shared[:3] == device for shared in state.allocated_shared_device_ids)


class CelError(Protocol):
    """A CEL compile error (scheduler.dra.cel.CelError)."""

    @property
    def message(self) -> str: ...


class CompiledSelector(Protocol):
    """A compiled device selector (scheduler.dra.cel.CompilationResult)."""

    @property
    def error(self) -> CelError | None: ...

    def device_matches(self, device: Any) -> bool:
        """The expression's value for one device; raises CelRuntimeError."""
        ...


class CelCache(Protocol):
    """What the allocator needs of scheduler.dra.cel.CelCache: each expression compiled once."""

    def get_or_compile(self, expression: str) -> CompiledSelector: ...


class DeviceClassLister(Protocol):
    """Looks up DeviceClasses by name (the plugin's informer-backed lister)."""

    def get(self, name: str) -> Mapping[str, Any] | None:
        """The raw DeviceClass, or None when there is none of that name."""
        ...


class NodeView(Protocol):
    """What the allocator reads of a node (scheduler.framework.types.NodeRecord has it)."""

    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> Mapping[str, str]: ...


class AllocationError(Exception):
    """A problem with the input that upstream's Allocate returns as an error (str(e) is upstream's message).

    The plugin turns it into an Error status for the pod (FailedAllocationOnNode aside).
    """


class FailedAllocationOnNode(AllocationError):
    """Upstream's ErrFailedAllocationOnNode: only this node failed (e.g. invalid pools); Unschedulable, str(e)."""


class AllocationTimeout(AllocationError):
    """The deadline passed during the search (upstream: the filter timeout's context was cancelled)."""
