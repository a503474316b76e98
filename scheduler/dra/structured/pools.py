"""ResourceSlices prepared once, and the resource pools a node can use (upstream incubating/pools_incubating.go).

A ResourceSlice is converted once per object (not per pod, not per node) into a `Slice` of `SliceDevice`s:
quantities parsed, node selectors compiled, and each device's CEL input and selector results kept on it
while the slice object lives. `SliceSet` indexes one version of the slice list by node and by pool and keeps
each node's gathered pools until the list changes; `slice_set()` recognises an unchanged list by object
identity (the informers hand out a new dict for every change and nobody mutates one), so a pod costs one pass
over the list, not a re-preparation.

A slice the allocator cannot read (a malformed quantity, devices that are not a list, ...) makes its pool
invalid, with the reason, exactly like a pool upstream finds invalid: its devices are not used, and a node
with nothing else to offer fails with "invalid resource pools were encountered".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from scheduler import caching
from scheduler.dra.structured.capacity import DeviceCapacity, parse_device_capacity, parse_qty, plain_capacity
from scheduler.dra.structured.types import AllocationError, DeviceID, Features, NodeView
from scheduler.framework.labels import aggregate
from scheduler.framework.node_selector import Matcher, NodeSelectorMatcher

PoolID = tuple[str, str]
"""(driver, pool name)."""

CounterSets = dict[str, dict[str, Fraction]]
"""Counter set name -> counter name -> amount."""


class SliceError(ValueError):
    """A field of a ResourceSlice that cannot be read."""


# ---------------------------------------------------------------------------------------------------------
# Node selection


def _go_requirements(raw: Any) -> str:
    out = "[]NodeSelectorRequirement{"
    for req in raw if isinstance(raw, list) else []:
        req = req if isinstance(req, Mapping) else {}
        values = req.get("values")
        values = values if isinstance(values, list) else []
        out += (
            f"NodeSelectorRequirement{{Key:{req.get('key') or ''},Operator:{req.get('operator') or ''},"
            f"Values:[{' '.join(str(v) for v in values)}],}},"
        )
    return out + "}"


def go_node_selector_string(selector: Mapping[str, Any]) -> str:
    """v1.NodeSelector.String() (the generated protobuf rendering upstream's error messages quote)."""
    terms = selector.get("nodeSelectorTerms")
    out = "[]NodeSelectorTerm{"
    for term in terms if isinstance(terms, list) else []:
        term = term if isinstance(term, Mapping) else {}
        out += (
            f"NodeSelectorTerm{{MatchExpressions:{_go_requirements(term.get('matchExpressions'))},"
            f"MatchFields:{_go_requirements(term.get('matchFields'))},}},"
        )
    return f"&NodeSelector{{NodeSelectorTerms:{out}}},}}"


def compile_node_selector(selector: Mapping[str, Any]) -> Matcher:
    """nodeaffinity.NewNodeSelector: a matcher, or AllocationError when any term does not parse."""
    compiled = NodeSelectorMatcher.compile(selector)
    if compiled.errors:
        raise AllocationError(
            f"failed to parse node selector {go_node_selector_string(selector)}: {aggregate(compiled.errors)}"
        )
    return compiled.matcher()


def node_matches(
    node: NodeView | None, node_name: str, all_nodes: bool, node_selector: Mapping[str, Any] | None
) -> bool:
    """structured.NodeMatches: by name, all nodes, or a node selector (AllocationError if it does not parse)."""
    if node_name:
        return node is not None and node.name == node_name
    if all_nodes:
        return True
    if node_selector is not None:
        matcher = compile_node_selector(node_selector)
        return node is not None and matcher(node.labels, node.name)
    return False


class _NodeSelection:
    """nodeName / allNodes / nodeSelector of a slice or a device, the selector compiled on first use."""

    __slots__ = ("_matcher", "all_nodes", "node_name", "node_name_set", "node_selector")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        name = raw.get("nodeName")
        self.node_name_set = name is not None  # upstream tests the pointer (createNodeSelector)
        self.node_name = name if isinstance(name, str) else ""
        self.all_nodes = raw.get("allNodes") is True
        selector = raw.get("nodeSelector")
        self.node_selector: Mapping[str, Any] | None = selector if isinstance(selector, Mapping) else None
        self._matcher: Matcher | AllocationError | None = None

    def selects_something(self) -> bool:
        return bool(self.node_name) or self.all_nodes or self.node_selector is not None

    def matches(self, node: NodeView) -> bool:
        """NodeMatches for this node; AllocationError (upstream's error) if the selector does not parse."""
        if self.node_name:
            return node.name == self.node_name
        if self.all_nodes:
            return True
        if self.node_selector is None:
            return False
        matcher = self._matcher
        if matcher is None:
            try:
                matcher = compile_node_selector(self.node_selector)
            except AllocationError as err:
                matcher = err
            self._matcher = matcher
        if isinstance(matcher, AllocationError):
            raise AllocationError(str(matcher))
        return matcher(node.labels, node.name)


# ---------------------------------------------------------------------------------------------------------
# Prepared slices


_EMPTY: Mapping[str, Any] = {}


def _mapping(raw: Any, what: str, index: int = -1) -> Mapping[str, Any]:
    """An object field (absent: empty); `what` names it in the error, with `index` for "%d"."""
    if type(raw) is dict:  # the JSON the informers give: skip the ABC check
        return raw
    if raw is None:
        return _EMPTY
    if not isinstance(raw, Mapping):
        raise SliceError(f"{what % index if index >= 0 else what} must be an object")
    return raw


def _list(raw: Any, what: str, index: int = -1) -> list[Any]:
    if type(raw) is list:
        return raw
    if raw is None:
        return []
    raise SliceError(f"{what % index if index >= 0 else what} must be a list")


def _counters(raw: Any, what: str) -> dict[str, Fraction]:
    counters: dict[str, Fraction] = {}
    for name, counter in _mapping(raw, what).items():
        counters[str(name)] = parse_qty(_mapping(counter, f"{what}[{name}]").get("value", "0")).value
    return counters


class SliceDevice:
    """One `spec.devices[]` entry of a slice, parsed once; it also carries its CEL input and selector results."""

    __slots__ = (
        "allow_multiple",
        "attributes",
        "binding_conditions",
        "binding_failure_conditions",
        "binds_to_node",
        "capacity",
        "capacity_plain",
        "cel_input",
        "cel_memo",
        "consumes_counters",
        "id",
        "name",
        "raw",
        "selection",
        "taints",
    )

    def __init__(self, driver: str, pool: str, raw: Any, index: int) -> None:
        raw = _mapping(raw, "devices[%d]", index)
        self.raw = raw
        self.name = str(raw.get("name") or "")
        self.id: DeviceID = (driver, pool, self.name)
        self.attributes: Mapping[str, Any] = _mapping(raw.get("attributes"), "devices[%d].attributes", index)
        self.capacity: dict[str, DeviceCapacity] = {
            str(name): parse_device_capacity(_mapping(cap, "devices[%d].capacity[]", index))
            for name, cap in _mapping(raw.get("capacity"), "devices[%d].capacity", index).items()
        }
        self.capacity_plain = plain_capacity(self.capacity)
        multiple = raw.get("allowMultipleAllocations")
        self.allow_multiple: bool | None = multiple if isinstance(multiple, bool) else None
        uses = _list(raw.get("consumesCounters"), "devices[%d].consumesCounters", index)
        self.consumes_counters: tuple[tuple[str, dict[str, Fraction], bool], ...] = tuple(
            (
                str(_mapping(use, "consumesCounters[]").get("counterSet") or ""),
                _counters(_mapping(use, "consumesCounters[]").get("counters"), "consumesCounters[].counters"),
                bool(_mapping(use, "consumesCounters[]").get("compatibilityGroups")),
            )
            for use in uses
        )
        taints = _list(raw.get("taints"), "devices[%d].taints", index)
        self.taints: tuple[Mapping[str, Any], ...] = tuple(_mapping(t, "taints[]") for t in taints)
        conditions = raw.get("bindingConditions")
        failures = raw.get("bindingFailureConditions")
        # None versus [] matters as it does upstream (a decoded empty list is not nil).
        self.binding_conditions: list[str] | None = conditions if isinstance(conditions, list) else None
        self.binding_failure_conditions: list[str] | None = failures if isinstance(failures, list) else None
        self.binds_to_node = raw.get("bindsToNode") is True
        self.selection = _NodeSelection(raw)
        self.cel_input: Any = None
        self.cel_memo: dict[str, bool | str] = {}


class Slice:
    """A ResourceSlice as the allocator reads it, prepared once per object."""

    __slots__ = (
        "devices",
        "driver",
        "error",
        "generation",
        "name",
        "per_device_node_selection",
        "per_device_set",
        "pool",
        "raw",
        "selection",
        "shared_counters",
        "slice_count",
        "uses_compatibility_groups",
    )

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = raw
        if not isinstance(raw, Mapping):  # offers nothing to anyone (no node selection can be read)
            raw = {}
        meta = raw.get("metadata")
        self.name = str(meta.get("name") or "") if isinstance(meta, Mapping) else ""
        spec = raw.get("spec")
        spec = spec if isinstance(spec, Mapping) else {}
        self.driver = str(spec.get("driver") or "")
        pool = spec.get("pool")
        pool = pool if isinstance(pool, Mapping) else {}
        self.pool = str(pool.get("name") or "")
        generation, count = pool.get("generation"), pool.get("resourceSliceCount")
        self.generation = generation if isinstance(generation, int) else 0
        self.slice_count = count if isinstance(count, int) else 0
        self.selection = _NodeSelection(spec)
        per_device = spec.get("perDeviceNodeSelection")
        self.per_device_set = per_device is not None
        self.per_device_node_selection = per_device is True
        self.error: str | None = None
        self.devices: tuple[SliceDevice, ...] = ()
        self.shared_counters: tuple[tuple[str, dict[str, Fraction]], ...] = ()
        try:
            self.devices = tuple(
                SliceDevice(self.driver, self.pool, d, i) for i, d in enumerate(_list(spec.get("devices"), "devices"))
            )
            self.shared_counters = tuple(
                (
                    str(_mapping(cs, "sharedCounters[]").get("name") or ""),
                    _counters(_mapping(cs, "sharedCounters[]").get("counters"), "sharedCounters[].counters"),
                )
                for cs in _list(spec.get("sharedCounters"), "sharedCounters")
            )
        except (ValueError, TypeError, AttributeError) as err:  # SliceError, QuantityError: a field we cannot read
            self.error = f"resource slice {self.name}: {err}"
            self.devices = ()
        self.uses_compatibility_groups = any(use[2] for d in self.devices for use in d.consumes_counters)


# ---------------------------------------------------------------------------------------------------------
# Pools


@dataclass(slots=True, eq=False)
class Pool:
    """The devices of one pool that a node can use (upstream Pool); immutable once gathered."""

    id: PoolID
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: list[Slice] = field(default_factory=list)  # DeviceSlicesTargetingNode, sorted by name
    slices_not_targeting_node: list[Slice] = field(default_factory=list)
    counter_sets: CounterSets = field(default_factory=dict)

    @property
    def name(self) -> str:
        """driver/pool, as upstream prints a PoolID."""
        return f"{self.id[0]}/{self.id[1]}"


def _relevant(sl: Slice, node: NodeView) -> bool:
    """Whether a slice offers devices to the node (GatherPools); AllocationError as upstream words it."""
    if sl.selection.selects_something():
        try:
            return sl.selection.matches(node)
        except AllocationError as err:
            raise AllocationError(f"failed to perform node selection for slice {sl.name}: {err}") from None
    if sl.per_device_node_selection:
        for device in sl.devices:
            try:
                if device.selection.matches(node):
                    return True
            except AllocationError as err:
                raise AllocationError(
                    f"failed to perform node selection for device {device.name} in slice {sl.name}: {err}"
                ) from None
        return False
    return False  # nothing known is set: some future extension this release cannot handle


def _validate_device_names(slices: Sequence[Slice]) -> str | None:
    seen: set[str] = set()
    for sl in slices:
        for device in sl.devices:
            if device.name in seen:
                return f"duplicate device name {device.name}"
            seen.add(device.name)
    return None


def _validate_counter_consumption(counter_sets: CounterSets, slices: Sequence[Slice]) -> str | None:
    for sl in slices:
        for device in sl.devices:
            for set_name, counters, _ in device.consumes_counters:
                counter_set = counter_sets.get(set_name)
                if counter_set is None:
                    return f"counter set {set_name} not found"
                for counter in counters:
                    if counter not in counter_set:
                        return f"counter {counter} not found in counter set {set_name}"
    return None


def _build_pool(
    pool_id: PoolID, slices: list[Slice], features: Features, all_slices_for_pool: Sequence[Slice] | None
) -> Pool:
    """buildPool: sort by name, split off counter set slices, validate."""
    slices = sorted(slices, key=lambda s: s.name)
    broken = next((s.error for s in (*slices, *(all_slices_for_pool or ())) if s.error is not None), None)
    if broken is not None:
        return Pool(pool_id, invalid=True, invalid_reason=broken)
    device_slices: list[Slice] = []
    counter_set_slices: list[Slice] = []
    not_targeting: list[Slice] = []
    for sl in slices:
        if features.partitionable_devices and sl.shared_counters:
            counter_set_slices.append(sl)
        else:
            device_slices.append(sl)
    if all_slices_for_pool is not None and len(slices) < len(all_slices_for_pool):
        targeting = {sl.name for sl in slices}
        for sl in all_slices_for_pool:
            if sl.name in targeting:
                continue
            if features.partitionable_devices and sl.shared_counters:
                counter_set_slices.append(sl)
            else:
                not_targeting.append(sl)
    reason = _validate_device_names(device_slices)
    if reason is not None:
        return Pool(pool_id, invalid=True, invalid_reason=reason)
    if not features.partitionable_devices:
        return Pool(pool_id, slices=device_slices)
    counter_sets: CounterSets = {}
    for sl in counter_set_slices:
        for name, counters in sl.shared_counters:
            if name in counter_sets:
                return Pool(pool_id, invalid=True, invalid_reason=f"duplicate counter set name {name}")
            counter_sets[name] = counters
    reason = _validate_counter_consumption(counter_sets, device_slices) or _validate_counter_consumption(
        counter_sets, not_targeting
    )
    if reason is not None:
        return Pool(pool_id, invalid=True, invalid_reason=reason)
    return Pool(pool_id, slices=device_slices, slices_not_targeting_node=not_targeting, counter_sets=counter_sets)


def _has_binding_conditions(pool: Pool) -> bool:
    return any(d.binding_conditions is not None for sl in pool.slices for d in sl.devices)


def gather_pools(slices_for_node: Sequence[Slice], node: NodeView, features: Features, index: SliceSet) -> list[Pool]:
    """GatherPools: the pools with devices for the node, sorted by (driver, pool); pools with binding
    conditions go last. Outdated slices are ignored; incomplete and invalid pools are recorded as such."""
    pools: dict[PoolID, list[Slice]] = {}
    for sl in slices_for_node:
        if not features.partitionable_devices and (sl.per_device_set or sl.shared_counters):
            continue
        if not features.compatibility_groups and sl.uses_compatibility_groups:
            continue  # ignored, which leaves its pool incomplete
        if not _relevant(sl, node):
            continue
        pool_id = (sl.driver, sl.pool)
        current = pools.get(pool_id)
        if current is None or sl.generation > current[0].generation:
            pools[pool_id] = [sl]
        elif sl.generation == current[0].generation:
            current.append(sl)
    result: list[Pool] = []
    with_binding_conditions: list[Pool] = []
    for pool_id, pool_slices in pools.items():
        first = pool_slices[0]
        if len(pool_slices) == first.slice_count:
            pool = _build_pool(pool_id, pool_slices, features, None)
        else:
            # Slices not relevant for the node may complete the pool ("All" needs to know).
            obsolete, all_for_pool = index.pool_slices(pool_id, first.generation)
            if obsolete:
                continue  # the driver is replacing this generation
            if not features.compatibility_groups:
                all_for_pool = [s for s in all_for_pool if not s.uses_compatibility_groups]
            if len(all_for_pool) != first.slice_count:
                result.append(Pool(pool_id, incomplete=True))
                continue
            pool = _build_pool(pool_id, pool_slices, features, all_for_pool)
        (with_binding_conditions if _has_binding_conditions(pool) else result).append(pool)
    result.sort(key=lambda p: p.id)
    with_binding_conditions.sort(key=lambda p: p.id)
    return result + with_binding_conditions


_PoolsEntry = tuple[dict[str, str], "list[Pool] | AllocationError", "tuple[Slice, ...] | None"]
"""A node's gathered pools: its labels then, the pools (or the error), and the slices they came from when
nothing else went into them (then a later slice list with the same slices for the node may reuse them)."""


class SliceSet:
    """One version of the slice list: indexed by node and by pool, with each node's pools kept until it changes."""

    __slots__ = ("_by_pool", "_pool_lookups", "_pools", "_previous", "on_node", "shared", "slices")

    def __init__(self, slices: list[Slice], previous: SliceSet | None = None) -> None:
        self.slices = slices
        # The version before: a node whose slices did not change keeps the pools gathered there.
        self._previous = previous
        if previous is not None:
            previous._previous = None
        self._pool_lookups = 0
        self.on_node: dict[str, list[Slice]] = {}
        self.shared: list[Slice] = []
        self._by_pool: dict[PoolID, list[Slice]] = {}
        for sl in slices:
            if sl.selection.node_name:
                self.on_node.setdefault(sl.selection.node_name, []).append(sl)
            else:
                self.shared.append(sl)
            self._by_pool.setdefault((sl.driver, sl.pool), []).append(sl)
        self._pools: dict[Features, dict[str, _PoolsEntry]] = {}

    def pool_slices(self, pool_id: PoolID, generation: int) -> tuple[bool, list[Slice]]:
        """checkSlicesInPool: (a newer generation exists, the slices of this generation) over all slices."""
        self._pool_lookups += 1
        found: list[Slice] = []
        for sl in self._by_pool.get(pool_id, ()):
            if sl.generation == generation:
                found.append(sl)
            elif sl.generation > generation:
                return True, []
        return False, found

    def pools_cache(self, features: Features) -> dict[str, _PoolsEntry]:
        """Where pools_for keeps the nodes' pools for one feature set (an Allocator looks it up once)."""
        return self._pools.setdefault(features, {})

    def pools_for(self, node: NodeView, features: Features, cache: dict[str, _PoolsEntry] | None = None) -> list[Pool]:
        """The node's pools, gathered once per node (and its labels) while its slices stay the same."""
        if cache is None:
            cache = self.pools_cache(features)
        hit = cache.get(node.name) if caching.ENABLED else None
        if hit is not None and hit[0] == node.labels:
            pools = hit[1]
        else:
            slices_for_node = self.on_node.get(node.name, []) + self.shared
            inputs: tuple[Slice, ...] | None = tuple(slices_for_node)
            before = self._previous._pools.get(features, {}).get(node.name) if self._previous is not None else None
            if caching.ENABLED and before is not None and before[2] == inputs and before[0] == node.labels:
                pools = before[1]
            else:
                lookups = self._pool_lookups
                try:
                    pools = gather_pools(slices_for_node, node, features, self)
                except AllocationError as err:
                    pools = err
                if self._pool_lookups != lookups:
                    inputs = None  # other nodes' slices went into these pools: no reuse in the next version
            if caching.ENABLED:
                cache[node.name] = (dict(node.labels), pools, inputs)
        if isinstance(pools, AllocationError):
            raise AllocationError(f"gather pool information: {pools}")
        return pools


class _SliceCache:
    """Prepared slices by object identity, across calls: the latest list and the one before are kept, so two
    callers with different lists (two profiles) do not re-prepare, and a replaced slice is let go soon."""

    def __init__(self) -> None:
        self._current: dict[int, Slice] = {}
        self._previous: dict[int, Slice] = {}
        self._set: SliceSet | None = None
        self._set_ids: tuple[int, ...] = ()

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]

    def slice_set(self, raws: Sequence[Mapping[str, Any]]) -> SliceSet:
        if not caching.ENABLED:
            return SliceSet([Slice(raw) for raw in raws])
        ids = tuple(map(id, raws))
        current = self._current
        # The kept entries hold their dicts, so an id of the last list cannot have been reused by another dict.
        if self._set is not None and ids == self._set_ids:
            return self._set
        prepared: dict[int, Slice] = {}
        previous = self._previous
        slices: list[Slice] = []
        for key, raw in zip(ids, raws, strict=True):
            sl = current.get(key) or previous.get(key)
            if sl is None or sl.raw is not raw:
                sl = Slice(raw)
            prepared[key] = sl
            slices.append(sl)
        self._previous, self._current = current, prepared
        self._set, self._set_ids = SliceSet(slices, self._set), ids
        return self._set


_CACHE = _SliceCache()
caching.register_clear(_CACHE.clear)


def slice_set(raws: Sequence[Mapping[str, Any]]) -> SliceSet:
    """The prepared, indexed form of a slice list (the same object while the list's slices are the same)."""
    return _CACHE.slice_set(raws)
