"""The structured-parameters allocator (upstream structured/internal/incubating/allocator_incubating.go).

kube-scheduler v1.37.2 with its default feature gates runs upstream's "incubating" allocator; this is its
semantics, including the order it tries devices in, because the devices it picks end up in the claim's
status. Pools are tried in (driver, pool) order with pools that have binding conditions last, slices by name,
devices in slice order; claims and requests in order, one device after the other, backtracking over every
combination (never permutations) until the first full solution. The number of allocateOne calls matches
upstream's for the same input (checked against upstream's own test table).

new_allocator() is called once per pod (PreFilter) and allocate() once per node (Filter). What only depends
on the slices is prepared once per slice object (pools.py); class and request selectors are evaluated once
per (expression, device) while the slice object lives.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from scheduler import caching
from scheduler.dra.cel import CelRuntimeError, enhance_runtime_error, prepare_device
from scheduler.dra.structured import trace as reasons
from scheduler.dra.structured.capacity import CapacityError, Qty, consumed_by_request, request_fits
from scheduler.dra.structured.claims import Claim, ClassInfo, Request, RequestData, untolerated_taint
from scheduler.dra.structured.constraints import Constraint, DistinctAttribute, MatchAttribute
from scheduler.dra.structured.pools import CounterSets, Pool, PoolID, Slice, SliceDevice, SliceSet, slice_set
from scheduler.dra.structured.results import DeviceResult, allocation_result
from scheduler.dra.structured.trace import AllocationTrace, PoolNote, RequestNote
from scheduler.dra.structured.types import (
    ALLOCATION_RESULTS_MAX_SIZE,
    SUPPORTED_FEATURES,
    AllocatedState,
    AllocationError,
    AllocationTimeout,
    CelCache,
    DeviceClassLister,
    DeviceID,
    FailedAllocationOnNode,
    Features,
    NodeView,
)

MODE_EXACT_COUNT = "ExactCount"
MODE_ALL = "All"
_CEL_MEMO_LIMIT = 64  # distinct expressions remembered per device before its memo starts over


def _prepare_device(driver: str, raw: Mapping[str, Any]) -> Any:
    """The CEL input of a device (a seam: tests replaying upstream's CEL answers swap it)."""
    return prepare_device(driver, raw)


def _cel_runtime_error() -> type[Exception]:
    """The exception CEL evaluation raises (a seam, like _prepare_device)."""
    return CelRuntimeError


class _MaxSizeExceeded(Exception):
    """errAllocationResultMaxSizeExceeded: a claim would get more than 32 devices on this path."""


# ---------------------------------------------------------------------------------------------------------
# The allocator


def new_allocator(
    features: Features,
    allocated: AllocatedState,
    classes: DeviceClassLister,
    slices: Sequence[Mapping[str, Any]],
    cel_cache: CelCache,
) -> Allocator:
    """structured.NewAllocator; AllocationError where upstream returns an error (a feature set it lacks)."""
    missing = features.enabled() - SUPPORTED_FEATURES.enabled()
    if missing:
        raise AllocationError(
            f"internal error: no allocator available for feature set {sorted(features.enabled())}: "
            f"pyscheduler implements the allocator of the default feature set, not {sorted(missing)}"
        )
    return Allocator(features, allocated, classes, slice_set(slices), cel_cache)


class Allocator:
    """Allocates claims on one node at a time; made per pod, used for every node (thread-unsafe by design:
    the scheduler filters nodes one after the other)."""

    def __init__(
        self,
        features: Features,
        allocated: AllocatedState,
        classes: DeviceClassLister,
        slices: SliceSet,
        cel_cache: CelCache,
    ) -> None:
        self.features = features
        self.allocated = allocated
        self.classes = classes
        self.slices = slices
        self.cel_cache = cel_cache
        self.shared_devices = {shared[:3] for shared in allocated.allocated_shared_device_ids}
        self.available_counters: dict[PoolID, CounterSets] = {}
        self.num_allocate_one_invocations = 0
        self._claims: dict[int, Claim] = {}
        self._classes: dict[str, ClassInfo] = {}
        self.pools_cache = slices.pools_cache(features)
        self.new_share_id: Callable[[], str] = lambda: str(uuid.uuid4())
        self.cel_runtime_error = _cel_runtime_error()

    def parsed_claim(self, raw: Mapping[str, Any]) -> Claim:
        if not isinstance(raw, Mapping):
            raise AllocationError(f"resource claim {raw!r:.80}: not an object")
        claim = self._claims.get(id(raw))
        if claim is None or claim.raw is not raw:
            claim = Claim(raw)
            self._claims[id(raw)] = claim
        return claim

    def class_info(self, claim: Claim, request: Request) -> ClassInfo:
        """The request's DeviceClass, asked of the lister on every call as upstream does."""
        raw = self.classes.get(request.class_name)
        if raw is not None and not isinstance(raw, Mapping):
            raise AllocationError(
                f"claim {claim.key}, request {request.name}: device class {request.class_name}: not an object"
            )
        if raw is None:
            raise AllocationError(
                f"claim {claim.key}, request {request.name}: could not retrieve device class {request.class_name}: "
                f'deviceclass.resource.k8s.io "{request.class_name}" not found'
            )
        info = self._classes.get(request.class_name)
        if info is None or info.raw is not raw:
            info = self._classes[request.class_name] = ClassInfo(raw)
        return info

    def is_allocated(self, device: DeviceID) -> bool:
        """IsDeviceAllocated, with the shared devices looked up in a set."""
        state = self.allocated
        return device in state.allocated_devices or device in self.shared_devices or device in state.aggregated_capacity

    def allocate(
        self,
        node: NodeView,
        claims: Sequence[Mapping[str, Any]],
        trace: AllocationTrace | None = None,
        deadline: float | None = None,
    ) -> list[dict[str, Any]] | None:
        """Allocate: one AllocationResult per claim, None when they cannot all be allocated on this node.

        Raises AllocationError (fatal for the pod: broken CEL, invalid claim), FailedAllocationOnNode (only
        this node: invalid pools) or AllocationTimeout (time.monotonic() passed `deadline`).
        """
        return _Search(self, node, claims, trace, deadline).run()


class _Search:
    """One Allocate call (upstream's `allocator`): the state of the backtracking search."""

    def __init__(
        self,
        owner: Allocator,
        node: NodeView,
        claims: Sequence[Mapping[str, Any]],
        trace: AllocationTrace | None,
        deadline: float | None,
    ) -> None:
        self.owner = owner
        self.features = owner.features
        self.node = node
        self.claims = [owner.parsed_claim(raw) for raw in claims]
        self.trace = trace
        self.deadline = deadline
        self.pools: list[Pool] = []
        self.request_data: dict[tuple[int, int, int], RequestData] = {}
        self.constraints: list[list[Constraint]] = [[] for _ in claims]
        self.results: list[list[DeviceResult]] = [[] for _ in claims]
        self.allocating: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, dict[str, Fraction]] = {}
        self.consumed_counters: dict[PoolID, CounterSets] = {}

    # -- setup -------------------------------------------------------------------------------------------

    def run(self) -> list[dict[str, Any]] | None:
        owner, features, trace = self.owner, self.features, self.trace
        if trace is not None:
            trace.node = self.node.name
            trace.slices_for_node = len(owner.slices.on_node.get(self.node.name, ())) + len(owner.slices.shared)
        pools = self.pools = owner.slices.pools_for(self.node, features, owner.pools_cache)
        if trace is not None:
            for pool in pools:
                if pool.incomplete or pool.invalid:
                    trace.pools.append(PoolNote(pool.name, pool.incomplete, pool.invalid_reason))
        for ci, claim in enumerate(self.claims):
            min_per_claim = 0
            for ri, req in enumerate(claim.requests):
                if not features.prioritized_list and req.subs:
                    raise AllocationError(
                        f"claim {claim.key}, request {req.name}: has subrequests, but the DRAPrioritizedList "
                        "feature is disabled"
                    )
                if not features.consumable_capacity:
                    if req.exact is not None and req.exact.capacity_set:
                        raise AllocationError(
                            f"claim {claim.key}, request {req.name}: has capacity requests, but the "
                            "DRAConsumableCapacity feature is disabled"
                        )
                    for sub in req.subs:
                        if sub.capacity_set:
                            raise AllocationError(
                                f"claim {claim.key}, subrequest {sub.name}: has capacity requests, but the "
                                "DRAConsumableCapacity feature is disabled"
                            )
                if req.subs:
                    min_per_request = -1
                    for si, sub in enumerate(req.subs):
                        rd = self._validate(ci, sub)
                        self.request_data[(ci, ri, si)] = rd
                        if min_per_request < 0 or rd.num_devices < min_per_request:
                            min_per_request = rd.num_devices
                else:
                    if req.exact is None:
                        raise AllocationError(
                            f"claim {claim.key}, request {req.name}: missing device class name (unsupported "
                            "request type?)"
                        )
                    rd = self._validate(ci, req.exact)
                    self.request_data[(ci, ri, 0)] = rd
                    min_per_request = rd.num_devices
                if min_per_request > ALLOCATION_RESULTS_MAX_SIZE - min_per_claim:
                    raise AllocationError(
                        f"claim {claim.key}, request {req.name}: adding {min_per_request} devices exceeds the "
                        f"claim limit of {ALLOCATION_RESULTS_MAX_SIZE}, with {min_per_claim} already accounted for"
                    )
                min_per_claim += min_per_request
            self.constraints[ci] = self._constraints(claim)
        try:
            done = self._allocate_one(0, 0, 0, 0, False, 0, 0, 0)
        except _MaxSizeExceeded:
            raise AllocationError("allocation max size exceeded") from None
        except RecursionError:  # one frame per device and request: only absurdly many claims get here
            raise AllocationError(f"too many claims and devices to search ({len(self.claims)} claims)") from None
        if not done:
            if trace is not None:
                self._note_requests(trace)
            if any(pool.invalid for pool in pools):
                raise FailedAllocationOnNode("invalid resource pools were encountered")
            return None
        node, data, features = self.node.name, self.request_data, self.features
        return [
            allocation_result(claim, self.results[ci], data, ci, features, node) for ci, claim in enumerate(self.claims)
        ]

    def _constraints(self, claim: Claim) -> list[Constraint]:
        constraints: list[Constraint] = []
        for i, raw in enumerate(claim.constraints):
            raw = raw if isinstance(raw, Mapping) else {}
            names = raw.get("requests")
            names = [str(n) for n in names] if isinstance(names, list) else []
            if raw.get("matchAttribute") is not None:
                constraints.append(MatchAttribute(names, str(raw["matchAttribute"])))
            elif raw.get("distinctAttribute") is not None:
                constraints.append(DistinctAttribute(names, str(raw["distinctAttribute"])))
            else:
                raise AllocationError(
                    f"claim {claim.key}, constraint #{i}: empty constraint (unsupported constraint type?)"
                )
        return constraints

    def _validate(self, ci: int, request: Request) -> RequestData:
        """validateDeviceRequest: the class, the number of devices, and for "All" which ones."""
        claim = self.claims[ci]
        if request.has_derived:
            raise AllocationError(
                f"claim {claim.key}, request {request.name}: cannot handle request with derived attributes, the "
                "feature is disabled"
            )
        for i, selector in enumerate(request.selectors):
            if not isinstance(selector, Mapping) or not isinstance(selector.get("cel"), Mapping):
                raise AllocationError(
                    f"claim {claim.key}, request {request.name}, selector #{i}: CEL expression empty (unsupported "
                    "selector type?)"
                )
        if not self.features.admin_access and request.has_admin_access:
            raise AllocationError(
                f"claim {claim.key}, request {request.name}: admin access is requested, but the feature is disabled"
            )
        if not request.class_name:
            raise AllocationError(
                f"claim {claim.key}, request {request.name}: missing device class name (unsupported request type?)"
            )
        rd = RequestData(request, self.owner.class_info(claim, request))
        if request.mode == MODE_EXACT_COUNT:
            rd.num_devices = request.count
        elif request.mode == MODE_ALL:
            fractional = self.features.fractional_capacity_range
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {claim.key}, request {request.name}: asks for all devices, but resource pool "
                        f"{pool.name} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {claim.key}, request {request.name}: asks for all devices, but resource pool "
                        f"{pool.name} is currently invalid"
                    )
                for sl in pool.slices:
                    for device in sl.devices:
                        if not self._is_selectable(ci, rd, sl, device):
                            continue
                        if self.features.consumable_capacity:
                            # Static capacity only: what others consume is checked when allocating, so a
                            # matching device that is full stays in the list and makes "All" fail.
                            try:
                                wanted = request.capacity_requests
                                fits = request_fits({}, wanted, device.capacity, {}, fractional, device.capacity_plain)
                            except CapacityError as err:
                                raise AllocationError(
                                    f"claim {claim.key}, request {request.name}: checking capacity for device "
                                    f"{device.name}: {err}"
                                ) from None
                            if not fits:
                                continue
                        rd.all_devices.append((device, sl, pool))
            rd.num_devices = len(rd.all_devices)
        else:
            raise AllocationError(f"claim {claim.key}, request {request.name}: unsupported count mode {request.mode}")
        return rd

    # -- selectors ---------------------------------------------------------------------------------------

    def _is_selectable(self, ci: int, rd: RequestData, sl: Slice, device: SliceDevice) -> bool:
        """isSelectable: class selectors, request selectors and per-device node selection."""
        if not self.features.device_binding_and_status and device.binding_conditions:
            if self.trace is not None:
                self._reject(ci, rd, device, reasons.BINDING_CONDITIONS_DISABLED)
            return False
        match = rd.matches.get(device)
        if match is None or (not match and self.trace is not None):  # the trace wants to know which one
            match = self._selectors_match(ci, rd, device, rd.class_selectors, True) and self._selectors_match(
                ci, rd, device, rd.request.selectors, False
            )
            if caching.ENABLED:
                rd.matches[device] = match
        if match and sl.per_device_node_selection and not device.selection.matches(self.node):
            if self.trace is not None:
                self._reject(ci, rd, device, reasons.NODE_SELECTION)
            return False
        return match

    def _selectors_match(
        self, ci: int, rd: RequestData, device: SliceDevice, selectors: list[Any], of_class: bool
    ) -> bool:
        owner = self.owner
        for i, selector in enumerate(selectors):
            cel = selector.get("cel") if isinstance(selector, Mapping) else None
            if not isinstance(cel, Mapping):
                raise AllocationError(
                    f"{self._where(ci, rd, of_class)}: selector #{i}: CEL expression empty (unsupported selector type?)"
                )
            expression = str(cel.get("expression") or "")
            memo = device.cel_memo
            outcome = memo.get(expression) if caching.ENABLED else None
            if outcome is None:
                compiled = owner.cel_cache.get_or_compile(expression)
                if compiled.error is not None:
                    raise AllocationError(
                        f"{self._where(ci, rd, of_class)}: selector #{i}: CEL compile error: {compiled.error.message}"
                    )
                if device.cel_input is None or not caching.ENABLED:
                    device.cel_input = _prepare_device(device.id[0], device.raw)
                try:
                    outcome = bool(compiled.device_matches(device.cel_input))
                except owner.cel_runtime_error as err:
                    outcome = str(err)
                if caching.ENABLED:
                    if len(memo) >= _CEL_MEMO_LIMIT:
                        memo.clear()
                    memo[expression] = outcome
            if outcome is True:
                continue
            if outcome is False:
                if self.trace is not None:
                    which = "class" if of_class else "request"
                    self._reject(ci, rd, device, reasons.SELECTOR_FALSE, f"{which} selector #{i}: {expression}")
                return False
            driver, pool, name = device.id
            raise AllocationError(
                f"{self._where(ci, rd, of_class)}: selector #{i} on device {driver}/{pool}/{name}: CEL runtime "
                f"error: {enhance_runtime_error(outcome)}"
            )
        return True

    def _where(self, ci: int, rd: RequestData, of_class: bool) -> str:
        """Whose selector failed, as upstream's errors name it."""
        return f"class {rd.class_name}" if of_class else f"claim {self.claims[ci].key}"

    # -- the search --------------------------------------------------------------------------------------

    def _allocate_one(
        self, ci: int, ri: int, si: int, di: int, sub_chosen: bool, start_pool: int, start_slice: int, start_device: int
    ) -> bool:
        """allocateOne: find a device for device #di of request (ci, ri, si) and everything after it."""
        self.owner.num_allocate_one_invocations += 1
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AllocationTimeout("filter operation aborted: context deadline exceeded")
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.requests):
            try:
                return self._allocate_one(ci + 1, 0, 0, 0, False, 0, 0, 0)
            except _MaxSizeExceeded:
                # Not fatal: another choice in an earlier claim may allow a smaller subrequest here.
                return False
        rd = self.request_data[(ci, ri, si)]
        if not sub_chosen and rd.parent is not None:
            all_exceeded = True
            sub = 0
            while (ci, ri, sub) in self.request_data:
                try:
                    success = self._allocate_one(ci, ri, sub, di, True, 0, 0, 0)
                except _MaxSizeExceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if success:
                    rd.selected_sub = sub
                    return True
                sub += 1
            if all_exceeded:
                raise _MaxSizeExceeded
            return False

        request = rd.request
        do_all = request.mode == MODE_ALL
        if do_all and not rd.all_devices:
            return False
        if di >= rd.num_devices:
            return self._allocate_one(ci, ri + 1, 0, 0, False, 0, 0, 0)
        if rd.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE - len(self.results[ci]):
            raise _MaxSizeExceeded

        if do_all:
            device, sl, pool = rd.all_devices[di]
            undo = self._allocate_device(ci, rd, device, sl, pool, True)
            if undo is None:
                return False
            try:
                done = self._allocate_one(ci, ri, si, di + 1, sub_chosen, 0, 0, 0)
            except _MaxSizeExceeded:
                undo()
                raise
            if not done:
                undo()
            return done

        trace = self.trace
        admin = request.admin_access
        consumable = self.features.consumable_capacity
        allocated = self.owner.allocated.allocated_devices
        allocating = self.allocating
        pools = self.pools
        for pool_index in range(start_pool, len(pools)):
            pool = pools[pool_index]
            if pool.incomplete or pool.invalid:
                continue
            slices = pool.slices
            for slice_index in range(start_slice if pool_index == start_pool else 0, len(slices)):
                sl = slices[slice_index]
                devices = sl.devices
                first = start_device if pool_index == start_pool and slice_index == start_slice else 0
                for device_index in range(first, len(devices)):
                    device = devices[device_index]
                    device_id = device.id
                    holders = allocating.get(device_id)
                    if admin:
                        if holders and ci in holders:
                            if trace is not None:
                                self._reject(ci, rd, device, reasons.IN_USE_BY_POD)
                            continue
                    elif device_id in allocated or holders:
                        if trace is not None:
                            why = reasons.ALLOCATED if device_id in allocated else reasons.IN_USE_BY_POD
                            self._reject(ci, rd, device, why)
                        continue
                    if not self._is_selectable(ci, rd, sl, device):
                        continue
                    if consumable and not self._capacity_fits(ci, rd, device, "checking"):
                        if trace is not None:
                            self._reject(ci, rd, device, reasons.CAPACITY)
                        continue
                    undo = self._allocate_device(ci, rd, device, sl, pool, False)
                    if undo is None:
                        continue
                    try:
                        # The next device of this request comes after this one: combinations, not permutations.
                        done = self._allocate_one(
                            ci, ri, si, di + 1, sub_chosen, pool_index, slice_index, device_index + 1
                        )
                    except _MaxSizeExceeded:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def _capacity_fits(self, ci: int, rd: RequestData, device: SliceDevice, verb: str) -> bool:
        """CmpRequestOverCapacity against what allocated and allocating shares consume of the device."""
        device_id = device.id
        consumed = self.owner.allocated.aggregated_capacity.get(device_id) or {}
        try:
            return request_fits(
                consumed,
                rd.request.capacity_requests,
                device.capacity,
                self.allocating_capacity.get(device_id),
                self.features.fractional_capacity_range,
                device.capacity_plain,
            )
        except CapacityError as err:
            driver, pool, name = device_id
            raise AllocationError(
                f"claim {self.claims[ci].key}, request {rd.request.name}: {verb} capacity for device "
                f"{driver}/{pool}/{name}: {err}"
            ) from None

    def _allocate_device(
        self, ci: int, rd: RequestData, device: SliceDevice, sl: Slice, pool: Pool, must: bool
    ) -> Callable[[], None] | None:
        """allocateDevice: take the (selectable) device if it is free, tolerated and fits the constraints and
        counters; returns the undo for backtracking, or None when it cannot be taken."""
        features, trace = self.features, self.trace
        request = rd.request
        device_id = device.id
        multiple = features.consumable_capacity and device.allow_multiple is True
        holders = self.allocating.get(device_id)
        if not multiple and request.admin_access and holders and ci in holders:
            if trace is not None:
                self._reject(ci, rd, device, reasons.IN_USE_BY_POD)
            return None
        if not request.admin_access and (device_id in self.owner.allocated.allocated_devices or holders):
            if trace is not None:
                self._reject(ci, rd, device, reasons.IN_USE_BY_POD if holders else reasons.ALLOCATED)
            return None
        if not features.partitionable_devices and device.consumes_counters:
            if trace is not None:
                self._reject(ci, rd, device, reasons.PARTITIONABLE_DISABLED)
            return None
        # A further share of a device that allows multiple allocations does not consume its counters again.
        skip_counters = multiple and self._capacity_in_use(device_id)
        counters_reserved = False
        if not skip_counters and device.consumes_counters:
            if not self._reserve_counters(device, pool):
                if trace is not None:
                    self._reject(ci, rd, device, reasons.COUNTERS)
                return None
            counters_reserved = True

        if features.device_taints:
            taint = untolerated_taint(device, request)
            if taint is not None:
                if counters_reserved:
                    self._release_counters(device, pool)
                if trace is not None:
                    detail = f"{taint.get('key', '')}={taint.get('value', '')}:{taint.get('effect', '')}"
                    self._reject(ci, rd, device, reasons.TAINT, detail)
                return None

        base, sub = rd.base_name, rd.sub_name
        constraints = self.constraints[ci]
        for added, constraint in enumerate(constraints):
            if not constraint.add(base, sub, device.attributes, device_id):
                for done in reversed(constraints[:added]):
                    done.remove(base, sub)
                if counters_reserved:
                    self._release_counters(device, pool)
                if must:
                    driver, pool_name, name = device_id
                    raise AllocationError(
                        f"claim {self.claims[ci].key}, request {request.name}: cannot add device "
                        f"{driver}/{pool_name}/{name} because a claim constraint would not be satisfied"
                    )
                if trace is not None:
                    self._reject(ci, rd, device, reasons.CONSTRAINT, constraint.attribute_name)
                return None

        marked = False
        if not multiple:
            if holders is None:
                holders = self.allocating[device_id] = set()
            holders.add(ci)
            marked = True

        consumed: dict[str, Qty] | None = None
        share_id: str | None = None
        capacity_inserted = False
        entry_existed = False
        if features.consumable_capacity:
            failure: AllocationError | None = None
            try:
                fits = self._capacity_fits(ci, rd, device, "rechecking")
            except AllocationError as err:
                fits, failure = False, err
            if fits and multiple:
                try:
                    consumed = consumed_by_request(
                        request.capacity_requests, device.capacity, features.fractional_capacity_range
                    )
                except CapacityError as err:
                    driver, pool_name, name = device_id
                    fits = False
                    failure = AllocationError(
                        f"claim {self.claims[ci].key}, request {request.name}: computing consumed capacity for "
                        f"device {driver}/{pool_name}/{name}: {err}"
                    )
            if not fits:
                if holders is not None and marked:
                    holders.discard(ci)
                for done in reversed(constraints):
                    done.remove(base, sub)
                if counters_reserved:
                    self._release_counters(device, pool)
                if failure is not None:
                    raise failure
                if trace is not None:
                    self._reject(ci, rd, device, reasons.CAPACITY)
                return None
            if multiple:
                assert consumed is not None
                share_id = self.owner.new_share_id()
                entry_existed = device_id in self.allocating_capacity
                total = self.allocating_capacity.setdefault(device_id, {})
                for name, amount in consumed.items():
                    total[name] = total.get(name, Fraction(0)) + amount.value
                capacity_inserted = True

        results = self.results[ci]
        results.append(DeviceResult(rd, device, sl, share_id, consumed if consumed else None))

        def undo() -> None:
            results.pop()
            if capacity_inserted:
                assert consumed is not None
                total = self.allocating_capacity.get(device_id)
                if total is not None:
                    for name, amount in consumed.items():
                        if name in total:
                            total[name] -= amount.value
                    if all(v == 0 for v in total.values()):
                        del self.allocating_capacity[device_id]
                # An earlier share still relies on the entry as the "already shared" marker.
                if entry_existed and device_id not in self.allocating_capacity:
                    self.allocating_capacity[device_id] = {}
            if marked:
                self.allocating[device_id].discard(ci)
            for done in reversed(constraints):
                done.remove(base, sub)
            if counters_reserved:
                self._release_counters(device, pool)

        return undo

    def _capacity_in_use(self, device_id: DeviceID) -> bool:
        """deviceCapacityInUse: some share of the device is allocated or being allocated."""
        state = self.owner.allocated
        return (
            device_id in state.aggregated_capacity
            or device_id in self.owner.shared_devices
            or device_id in self.allocating_capacity
        )

    def _reserve_counters(self, device: SliceDevice, pool: Pool) -> bool:
        """checkAvailableCounters: add the device's counters to what this attempt consumes, if they fit."""
        owner = self.owner
        available = owner.available_counters.get(pool.id)
        if available is None:
            available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            # Counters consumed by allocated devices; this does not change during one pod's scheduling.
            for sl in (*pool.slices, *pool.slices_not_targeting_node):
                for other in sl.devices:
                    if not owner.is_allocated(other.id):
                        continue
                    for set_name, counters, _ in other.consumes_counters:
                        counter_set = available.get(set_name)
                        if counter_set is None:
                            continue
                        for counter, amount in counters.items():
                            if counter in counter_set:
                                counter_set[counter] -= amount  # may go negative: then nothing is left
            owner.available_counters[pool.id] = available
        consumed = self.consumed_counters.setdefault(pool.id, {})
        for set_name, counters, _ in device.consumes_counters:
            counter_set = consumed.setdefault(set_name, {})
            for counter, amount in counters.items():
                counter_set[counter] = counter_set.get(counter, Fraction(0)) + amount
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for counter, amount in counters.items():
                if amount < used.get(counter, 0):
                    self._release_counters(device, pool)
                    return False
        return True

    def _release_counters(self, device: SliceDevice, pool: Pool) -> None:
        """deallocateCountersForDevice."""
        consumed = self.consumed_counters[pool.id]
        for set_name, counters, _ in device.consumes_counters:
            counter_set = consumed[set_name]
            for counter, amount in counters.items():
                counter_set[counter] -= amount

    # -- trace -------------------------------------------------------------------------------------------

    def _reject(self, ci: int, rd: RequestData, device: SliceDevice, reason: str, detail: str = "") -> None:
        assert self.trace is not None
        self.trace.reject(self.claims[ci].key, rd.full_name, device.id, reason, detail)

    def _note_requests(self, trace: AllocationTrace) -> None:
        """For explain: per request, how many devices it needed and how many passed its selectors here."""
        for (ci, _ri, _si), rd in self.request_data.items():
            selectable = 0
            for pool in self.pools:
                if pool.incomplete or pool.invalid:
                    continue
                for sl in pool.slices:
                    for device in sl.devices:
                        try:
                            if self._is_selectable(ci, rd, sl, device):
                                selectable += 1
                        except AllocationError:
                            pass
            wanted = rd.num_devices if rd.request.mode == MODE_EXACT_COUNT else max(rd.num_devices, 1)
            trace.requests.append(RequestNote(self.claims[ci].key, rd.full_name, wanted, selectable))


