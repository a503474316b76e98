"""The DRA manager (upstream dynamicresources/dra_manager.go and allocateddevices.go): what the plugin reads
about ResourceClaims, ResourceSlices and DeviceClasses, shared by every profile of a scheduler.

- Claims: the informer's objects with an assume cache on top. After PreBind writes a claim, the object the
  API server returned is *assumed*: it shadows the informer's copy until the informer delivers that version
  or a newer one, so the next pods see the allocation at once. Allocations made in Reserve but not written
  yet are *in flight* (by claim uid, with the number of pods sharing them): a pod needing such a claim waits,
  and their devices count as allocated.
- Allocated devices: every device an allocated claim holds (admin-access results excepted), indexed by claim
  and kept up to date from the object store's change log, so PreFilter does not walk every claim.
- Slices: the ResourceSlices with the taints of DeviceTaintRules applied to the devices they select
  (upstream's resourceslice tracker), recomputed when a slice or a rule changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler import caching
from scheduler.dra.deviceclass import ExtendedResourceClasses
from scheduler.framework.objects import (
    DEVICE_CLASS,
    DEVICE_TAINT_RULE,
    JSON,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    ObjectLister,
)
from scheduler.plugins.dynamic_resources.claims import (
    allocation_of,
    allocation_results,
    deep_copy,
    is_special_claim_name,
    meta,
    name_of,
    namespace_of,
    spec_of,
    uid_of,
)

DeviceID = tuple[str, str, str]  # (driver, pool, device)
SharedDeviceID = tuple[str, str, str, str]  # (driver, pool, device, shareID)


def resource_version(obj: Mapping[str, Any]) -> int:
    """metadata.resourceVersion as a number (-1 when unset or not a number: older than anything)."""
    try:
        return int(str(meta(obj).get("resourceVersion") or ""))
    except ValueError:
        return -1


class AssumeError(Exception):
    """The object cannot be assumed (unknown to the informer, or older than what is cached)."""


@dataclass(frozen=True, slots=True)
class ClaimDevices:
    """What one allocated claim holds: dedicated devices, shared ones (consumable capacity) and the capacity
    it consumes on each shared device."""

    dedicated: tuple[DeviceID, ...] = ()
    shared: tuple[SharedDeviceID, ...] = ()
    consumed: tuple[tuple[DeviceID, Mapping[str, Any]], ...] = ()

    @classmethod
    def of(cls, claim: Mapping[str, Any], consumable_capacity: bool = True) -> ClaimDevices:
        """foreachAllocatedDevice: admin-access results are not allocated; with consumable capacity on, a
        result with a shareID is a share of its device (and consumes capacity), the others are dedicated."""
        dedicated: list[DeviceID] = []
        shared: list[SharedDeviceID] = []
        consumed: list[tuple[DeviceID, Mapping[str, Any]]] = []
        for result in allocation_results(allocation_of(claim)):
            if result.get("adminAccess") is True:
                continue
            device = (str(result.get("driver") or ""), str(result.get("pool") or ""), str(result.get("device") or ""))
            share = result.get("shareID")
            if consumable_capacity and share is not None:
                shared.append((*device, str(share)))
                capacity = result.get("consumedCapacity")
                if isinstance(capacity, Mapping):
                    consumed.append((device, capacity))
                continue
            dedicated.append(device)
        return cls(tuple(dedicated), tuple(shared), tuple(consumed))

    def empty(self) -> bool:
        return not (self.dedicated or self.shared)


@dataclass(slots=True)
class AllocatedDevices:
    """Devices held by allocated claims, counted per device (a device two claims hold stays allocated when
    one of them lets go)."""

    dedicated: Counter[DeviceID] = field(default_factory=Counter)
    shared: Counter[SharedDeviceID] = field(default_factory=Counter)

    def add(self, devices: ClaimDevices, sign: int = 1) -> None:
        for d in devices.dedicated:
            self.dedicated[d] += sign
        for s in devices.shared:
            self.shared[s] += sign


@dataclass(slots=True)
class InFlight:
    """An allocation made in Reserve, not written by PreBind yet: the claim as it will be, and how many
    pods scheduled in this cycle share it."""

    claim: JSON
    sharers: int = 1


class ClaimTracker:
    """ResourceClaimTracker over the object store: assume cache, in-flight allocations, allocated devices."""

    def __init__(self, objects: ObjectLister, *, consumable_capacity: bool = True) -> None:
        self._objects = objects
        self._consumable_capacity = consumable_capacity
        self._assumed: dict[tuple[str, str], JSON] = {}
        self.in_flight: dict[str, InFlight] = {}
        # Per claim key, the devices of the informer's version (the index), and their sum.
        self._held: dict[tuple[str, str], ClaimDevices] = {}
        self._index_generation = -1
        self._allocated = AllocatedDevices()

    # ------------------------------------------------------------------ the assume cache

    def get(self, namespace: str, name: str) -> JSON | None:
        """The latest known version: the assumed one while the informer has not caught up, else the
        informer's (None when the informer has no such claim)."""
        stored = self._objects.get(RESOURCE_CLAIM, namespace, name)
        assumed = self._assumed.get((namespace, name))
        if assumed is None:
            return stored
        if stored is None or uid_of(stored) != uid_of(assumed) or resource_version(stored) >= resource_version(assumed):
            del self._assumed[(namespace, name)]  # deleted, replaced or caught up: the informer wins
            return stored
        return assumed

    def all_claims(self) -> list[JSON]:
        """List: every claim, assumed versions swapped in."""
        claims = self._objects.list(RESOURCE_CLAIM)
        if not self._assumed:
            return claims
        return [self.get(namespace_of(c), name_of(c)) or c for c in claims]

    def assume(self, claim: Mapping[str, Any]) -> None:
        """AssumeClaimAfterAPICall: cache the version an API write returned until the informer has it."""
        key = (namespace_of(claim), name_of(claim))
        latest = self.get(*key)
        if latest is None:
            raise AssumeError(f'could not find ResourceClaim "{key[0]}/{key[1]}"')
        if resource_version(claim) < resource_version(latest):
            raise AssumeError(
                f'ResourceClaim "{key[0]}/{key[1]}" is out of sync (stored: {resource_version(latest)}, '
                f"assume: {resource_version(claim)})"
            )
        if resource_version(claim) > resource_version(latest) or (namespace_of(claim), name_of(claim)) in self._assumed:
            self._assumed[key] = deep_copy(claim)

    def restore(self, namespace: str, name: str) -> None:
        """AssumedClaimRestore: forget the assumed version."""
        self._assumed.pop((namespace, name), None)

    def assumed_count(self) -> int:
        return len(self._assumed)

    # ------------------------------------------------------------------ in-flight allocations

    def pending_allocation(self, uid: str) -> Mapping[str, Any] | None:
        """GetPendingAllocation: the allocation Reserve made for the claim, not yet written."""
        entry = self.in_flight.get(uid)
        return allocation_of(entry.claim) if entry is not None else None

    def signal_pending_allocation(self, uid: str, claim: JSON) -> None:
        """SignalClaimPendingAllocation: record an allocation made in Reserve (another sharer when one is in
        flight already; nothing when the claim turned out to be allocated meanwhile)."""
        entry = self.in_flight.get(uid)
        if entry is not None:
            entry.sharers += 1
            return
        if not is_special_claim_name(name_of(claim)):
            latest = self.get(namespace_of(claim), name_of(claim))
            if latest is None:
                raise AssumeError(
                    f"look up assumed claim {namespace_of(claim)}/{name_of(claim)}, UID={uid}: "
                    f'could not find ResourceClaim "{namespace_of(claim)}/{name_of(claim)}"'
                )
            if uid_of(latest) == uid and allocation_of(latest) is not None:
                return
        self.in_flight[uid] = InFlight(claim)

    def maybe_remove_pending_allocation(self, uid: str, force: bool) -> bool:
        """MaybeRemoveClaimPendingAllocation: drop one sharer (all with force); True when the entry is gone."""
        entry = self.in_flight.get(uid)
        if entry is None:
            return False
        if force or entry.sharers == 1:
            del self.in_flight[uid]
            return True
        entry.sharers -= 1
        return False

    # ------------------------------------------------------------------ allocated devices

    def _refresh_index(self) -> None:
        objects = self._objects
        generation = objects.generation(RESOURCE_CLAIM)
        if generation == self._index_generation and caching.ENABLED:
            return
        changed = objects.changed_since(RESOURCE_CLAIM, self._index_generation)
        if changed is None or self._index_generation < 0 or not caching.ENABLED:
            self._held, self._allocated = {}, AllocatedDevices()
            keys: Iterable[tuple[str, str]] = ((namespace_of(c), name_of(c)) for c in objects.list(RESOURCE_CLAIM))
        else:
            keys = dict.fromkeys(changed)  # oldest first, each once
        for key in keys:
            old = self._held.pop(key, None)
            if old is not None:
                self._allocated.add(old, -1)
            claim = objects.get(RESOURCE_CLAIM, *key)
            devices = ClaimDevices.of(claim, self._consumable_capacity) if claim is not None else None
            if devices is not None and not devices.empty():
                self._held[key] = devices
                self._allocated.add(devices)
        self._allocated.dedicated += Counter()  # drops the devices whose count fell to zero
        self._allocated.shared += Counter()
        self._index_generation = generation

    def allocated(self) -> tuple[set[DeviceID], set[SharedDeviceID], list[tuple[DeviceID, Mapping[str, Any]]]]:
        """GatherAllocatedState: (dedicated devices, shared device ids, consumed capacity per shared device)
        of every allocated claim (assumed versions instead of the informer's) and every in-flight one."""
        self._refresh_index()
        base = self._allocated
        overridden = [key for key, assumed in list(self._assumed.items()) if self.get(*key) is assumed]
        if not overridden:
            dedicated = set(base.dedicated)
            shared = set(base.shared)
            consumed = [c for devices in self._held.values() for c in devices.consumed]
        else:  # the assumed claims replace the informer's versions of themselves
            counts = AllocatedDevices(Counter(base.dedicated), Counter(base.shared))
            for key in overridden:
                held = self._held.get(key)
                if held is not None:
                    counts.add(held, -1)
                counts.add(ClaimDevices.of(self._assumed[key], self._consumable_capacity))
            dedicated = {d for d, n in counts.dedicated.items() if n > 0}
            shared = {d for d, n in counts.shared.items() if n > 0}
            skip = set(overridden)
            consumed = [c for k, devices in self._held.items() if k not in skip for c in devices.consumed]
            for key in overridden:
                consumed.extend(ClaimDevices.of(self._assumed[key], self._consumable_capacity).consumed)
        for entry in self.in_flight.values():
            devices = ClaimDevices.of(entry.claim, self._consumable_capacity)
            dedicated.update(devices.dedicated)
            shared.update(devices.shared)
            consumed.extend(devices.consumed)
        return dedicated, shared, consumed

    def holders(self, device: DeviceID) -> list[str]:
        """The claims ("namespace/name") holding a device, for explanations (in-flight ones included)."""
        self._refresh_index()
        out = [f"{ns}/{name}" for (ns, name), devices in self._held.items() if device in devices.dedicated]
        for entry in self.in_flight.values():
            if device in ClaimDevices.of(entry.claim, self._consumable_capacity).dedicated:
                out.append(f"{namespace_of(entry.claim)}/{name_of(entry.claim)} (being allocated)")
        return sorted(out)


# ---------------------------------------------------------------------------------------------------------
# ResourceSlices with DeviceTaintRules


def _apply_taint_rules(slice_: JSON, rules: list[JSON]) -> JSON:
    """applyPatches: append each rule's taint to the devices its selector names (driver, pool, device; a rule
    without a selector selects nothing). The slice is copied only when a rule applies."""
    spec = spec_of(slice_)
    driver = str(spec.get("driver") or "")
    pool = spec.get("pool")
    pool_name = str(pool.get("name") or "") if isinstance(pool, Mapping) else ""
    patched: JSON | None = None
    for rule in rules:
        selector = spec_of(rule).get("deviceSelector")
        taint = spec_of(rule).get("taint")
        if not isinstance(selector, Mapping) or not isinstance(taint, Mapping):
            continue
        if selector.get("driver") is not None and selector.get("driver") != driver:
            continue
        if selector.get("pool") is not None and selector.get("pool") != pool_name:
            continue
        wanted = selector.get("device")
        devices = spec.get("devices")
        if not isinstance(devices, list):
            continue
        for i, device in enumerate(devices):
            if not isinstance(device, Mapping) or (wanted is not None and wanted != device.get("name")):
                continue
            if patched is None:
                patched = deep_copy(slice_)
            target = patched["spec"]["devices"][i]
            target["taints"] = [*(target.get("taints") or []), dict(taint)]
    return patched if patched is not None else slice_


class SliceLister:
    """ListWithDeviceTaintRules over the object store, recomputed when a slice or a rule changes.

    The allocator prepares each slice once per dict object, so a slice keeps its (patched) object while
    neither it nor the rules change: a change of one slice re-patches that slice only.
    """

    def __init__(self, objects: ObjectLister) -> None:
        self._objects = objects
        self._generations = (-1, -1)
        self._slices: list[JSON] = []
        self._patched: dict[int, tuple[JSON, JSON]] = {}  # id(stored slice) -> (stored, patched), these rules

    def list_with_device_taint_rules(self) -> list[JSON]:
        objects = self._objects
        generations = (objects.generation(RESOURCE_SLICE), objects.generation(DEVICE_TAINT_RULE))
        if generations == self._generations and caching.ENABLED:
            return self._slices
        slices = objects.list(RESOURCE_SLICE)
        if generations[1] != self._generations[1] or not caching.ENABLED:
            self._patched = {}
        rules = objects.list(DEVICE_TAINT_RULE) if generations[1] else []
        if not rules:
            self._slices = slices
        else:
            patched: dict[int, tuple[JSON, JSON]] = {}
            for stored in slices:
                known = self._patched.get(id(stored))
                patched[id(stored)] = known if known is not None and known[0] is stored else (
                    stored,
                    _apply_taint_rules(stored, rules),
                )
            self._patched = patched
            self._slices = [patched[id(s)][1] for s in slices]
        self._generations = generations
        return self._slices


class DeviceClassLister:
    """The DeviceClasses of the object store, by name (the allocator's DeviceClassLister)."""

    def __init__(self, objects: ObjectLister) -> None:
        self._objects = objects

    def get(self, name: str) -> JSON | None:
        return self._objects.get(DEVICE_CLASS, "", name)


class DraManager:
    """SharedDRAManager: claims (with the assume cache and in-flight allocations), slices, classes, and which
    class backs which extended resource. One per scheduler: every profile's plugin must see the allocations
    the others have in flight."""

    def __init__(self, objects: ObjectLister) -> None:
        self.objects = objects
        self.claims = ClaimTracker(objects)
        self.slices = SliceLister(objects)
        self.classes = DeviceClassLister(objects)
        self.extended_resources = ExtendedResourceClasses(objects)

    def copy_onto(self, objects: ObjectLister) -> DraManager:
        """A manager over another (copied) store that starts from this one's assumed and in-flight claims:
        what an explanation computed off the scheduling loop works on."""
        other = DraManager(objects)
        other.claims._assumed = dict(self.claims._assumed)
        other.claims.in_flight = {uid: InFlight(e.claim, e.sharers) for uid, e in self.claims.in_flight.items()}
        return other


def shared_manager(handle: Any) -> DraManager:
    """The scheduler's manager when the handle offers one (`dra_manager`), else a private one over the
    handle's objects (tests, single-profile tools)."""
    manager = getattr(handle, "dra_manager", None)
    return manager if isinstance(manager, DraManager) else DraManager(handle.objects)
