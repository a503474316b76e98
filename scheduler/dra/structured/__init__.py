"""The structured-parameters allocator of DRA (upstream k8s.io/dynamic-resource-allocation/structured).

Pure core: raw resource.k8s.io/v1 JSON in, AllocationResult JSON out, CEL through scheduler.dra.cel. The
DynamicResources plugin makes one Allocator per pod (PreFilter) and asks it per node (Filter):

    allocator = new_allocator(DEFAULT_FEATURES, allocated_state, classes, slices, cel_cache)
    results = allocator.allocate(node, claims)   # one AllocationResult per claim, or None

Which devices it picks is upstream's choice for the same inputs (they end up in the claim's status).
"""

from scheduler.dra.structured.allocator import Allocator, new_allocator
from scheduler.dra.structured.claims import kobj, tolerates
from scheduler.dra.structured.pools import node_matches
from scheduler.dra.structured.trace import AllocationTrace, DeviceRejection, PoolNote, RequestNote
from scheduler.dra.structured.types import (
    ALLOCATION_RESULTS_MAX_SIZE,
    DEFAULT_FEATURES,
    SUPPORTED_FEATURES,
    AllocatedState,
    AllocationError,
    AllocationTimeout,
    ConsumedCapacity,
    ConsumedCapacityCollection,
    DeviceClassLister,
    DeviceID,
    FailedAllocationOnNode,
    Features,
    NodeView,
    SharedDeviceID,
    is_device_allocated,
)

__all__ = [
    "ALLOCATION_RESULTS_MAX_SIZE",
    "DEFAULT_FEATURES",
    "SUPPORTED_FEATURES",
    "AllocatedState",
    "AllocationError",
    "AllocationTimeout",
    "AllocationTrace",
    "Allocator",
    "ConsumedCapacity",
    "ConsumedCapacityCollection",
    "DeviceClassLister",
    "DeviceID",
    "DeviceRejection",
    "FailedAllocationOnNode",
    "Features",
    "NodeView",
    "PoolNote",
    "RequestNote",
    "SharedDeviceID",
    "is_device_allocated",
    "kobj",
    "new_allocator",
    "node_matches",
    "tolerates",
]
