"""DynamicResources: pods with ResourceClaims (upstream plugins/dynamicresources/dynamicresources.go, v1.37.2
with its default gates: structured parameters, prioritized lists, admin access, device taints, partitionable
devices, consumable capacity, binding conditions, extended resources backed by DRA, the Filter timeout).

* PreEnqueue: every claim the pod names must exist (a template's claim: kube-controller-manager made it and
  recorded it in the pod's status), not be being deleted, and a generated one must belong to the pod.
* PreFilter: an allocated claim restricts the nodes to its allocation's node selector; a claim to allocate
  needs its device classes to exist and no allocation of it in flight; then one allocator is built over
  every ResourceSlice (DeviceTaintRules applied) and the devices other claims hold.
* Filter: per node, allocated claims must be available there (and, with binding conditions, not failed or
  timed out), and the allocator must find devices for every claim to allocate (`cannot allocate all
  claims`). Every rejection is UnschedulableAndUnresolvable: preemption cannot free devices.
* PostFilter: when a claim the pod needs is allocated where the pod cannot go and no other pod uses it, its
  allocation is removed (`deallocation of ResourceClaim completed`) before anyone is preempted.
* Score (weight 2): how early in its `firstAvailable` list each chosen subrequest was.
* Reserve: the node's allocations are held in flight, so later pods cannot take the same devices; Unreserve
  releases them. PreBind (binding.py) writes the finalizer, the allocation and the pod's reservation, then
  waits for the devices' binding conditions.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from scheduler.framework.fit_error import NodeToStatus
from scheduler.framework.interface import (
    NODE,
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    ExplainDetail,
    ExplainExtensions,
    FilterPlugin,
    FixCandidate,
    Handle,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.node_selector import Matcher, NodeSelectorMatcher
from scheduler.framework.objects import DEVICE_CLASS, DEVICE_TAINT_RULE, JSON, RESOURCE_CLAIM, RESOURCE_SLICE
from scheduler.framework.quantity import QuantityError, parse_quantity
from scheduler.framework.status import SKIP, Code, Status, error_status, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.logging_setup import V5
from scheduler.plugins.dynamic_resources import explain, extended
from scheduler.plugins.dynamic_resources.args import Args, parse_args
from scheduler.plugins.dynamic_resources.binding import ClaimBinder
from scheduler.plugins.dynamic_resources.claims import (
    FINALIZER,
    ClaimError,
    ClaimStore,
    allocation_of,
    claim_name,
    deep_copy,
    device_requests,
    has_device_requests,
    is_for_pod,
    is_reserved_for_pod,
    is_special_claim_name,
    kobj,
    meta,
    name_of,
    namespace_of,
    uid_of,
    with_status,
)
from scheduler.plugins.dynamic_resources.scoring import compute_score
from scheduler.plugins.dynamic_resources.state import (
    ERR_NOT_FOUND,
    NAME,
    STATE_KEY,
    ClaimInfo,
    DraState,
    NodeAllocation,
)
from scheduler.plugins.dynamic_resources.tracker import DraManager, shared_manager
from scheduler.plugins.normalize import default_normalize_score

log = logging.getLogger("pyscheduler.dynamicresources")

ERR_CANNOT_ALLOCATE: Final = "cannot allocate all claims"
ERR_NOT_AVAILABLE: Final = "resourceclaim not available on the node"
ERR_IN_USE: Final = "resourceclaim in use"
MSG_DEALLOCATED: Final = "deallocation of ResourceClaim completed"
MSG_DELETED: Final = "deletion of ResourceClaim completed"
# The CEL cache keeps the 10 most recent compiled expressions across cycles (upstream cel.NewCache(10)).
CEL_CACHE_SIZE: Final = 10


def _node_selector(allocation: Mapping[str, Any]) -> Matcher | None:
    """nodeSelectorFromAllocation: the compiled allocation.nodeSelector (None: available on every node).
    Raises ValueError with the selector's errors when it cannot be compiled."""
    selector = allocation.get("nodeSelector")
    if selector is None:
        return None
    compiled = NodeSelectorMatcher.compile(selector)
    if compiled.errors:
        raise ValueError("; ".join(compiled.errors))
    return compiled.matcher()


class DynamicResources(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    ScorePlugin,
    ReservePlugin,
    PreBindPlugin,
    EnqueueExtensions,
    ExplainExtensions,
    SignPlugin,
):
    """Allocates devices to a pod's ResourceClaims and writes the allocation before the pod binds."""

    name: ClassVar[str] = NAME
    # Reads claims, slices and classes: kept results only where it was skipped (pods without claims or
    # class-backed extended resources).
    sign_reads_cluster: ClassVar[bool] = True
    object_kinds: ClassVar[tuple[str, ...]] = (RESOURCE_CLAIM, RESOURCE_SLICE, DEVICE_CLASS, DEVICE_TAINT_RULE)
    has_normalize: ClassVar[bool] = True

    def sign_pod(self, pod: PodInfo) -> Any:
        """Pods with resource claims are not signable (upstream SignPod); the others sign nothing."""
        return None if pod.resource_claims else ()

    def __init__(self, args: Args, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.manager: DraManager = shared_manager(handle)
        self.binder = ClaimBinder(handle, self.manager, args)
        self._cel_cache: Any = None  # made with the first allocator: pods without claims never load CEL

    # ---------------------------------------------------------------- the pod's claims

    def _pod_claims(self, pod: PodInfo) -> list[JSON]:
        """foreachPodResourceClaim: the claims of spec.resourceClaims that exist (entries whose claim was
        deliberately not generated are skipped). Raises ClaimError when the pod cannot use them yet."""
        claims: list[JSON] = []
        tracker = self.manager.claims
        overrides = {name_of(c): c for c in pod.claim_overrides}
        for entry in pod.resource_claims:
            name, must_check_owner = claim_name(pod, entry)
            if name is None:
                continue
            claim = overrides.get(name) or tracker.get(pod.namespace, name)
            if claim is None:
                raise ClaimError(f'could not find ResourceClaim "{pod.namespace}/{name}"')
            if meta(claim).get("deletionTimestamp"):
                raise ClaimError(f'resourceclaim "{name_of(claim)}" is being deleted')
            if must_check_owner:
                problem = is_for_pod(pod, claim)
                if problem is not None:
                    raise ClaimError(problem)
            claims.append(claim)
        return claims

    # ---------------------------------------------------------------- PreEnqueue

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not pod.resource_claims:
            return None
        try:
            self._pod_claims(pod)
        except ClaimError as exc:
            return unresolvable(str(exc))
        return None

    # ---------------------------------------------------------------- PreFilter

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        s = DraState()
        state[STATE_KEY] = s
        if not pod.resource_claims and not pod.requests.scalar:
            return None, SKIP
        try:
            user_claims = self._pod_claims(pod)
        except ClaimError as exc:
            return None, unresolvable(str(exc))
        extended_claim = self._pre_filter_extended_resources(pod, s)
        claims = ClaimStore.of(user_claims, extended_claim)
        if claims.empty():
            return None, SKIP
        s.infos = [ClaimInfo() for _ in range(len(claims))]
        to_allocate = 0
        tracker = self.manager.claims
        for index, claim in claims.all():
            allocation = allocation_of(claim)
            if allocation is not None:
                try:
                    s.infos[index].available_on_nodes = _node_selector(allocation)
                except ValueError as exc:
                    return None, error_status(str(exc))
                continue
            to_allocate += 1
            if tracker.pending_allocation(uid_of(claim)) is not None:
                return None, unresolvable(f"resource claim {kobj(claim)} is in the process of being allocated")
            if claims.is_extended(index):
                continue  # its requests are made per node in Filter
            status = self._validate_requests(claim)
            if status is not None:
                return None, status
        if to_allocate:
            from scheduler.dra.structured import AllocationError

            try:
                s.allocator = self._new_allocator()
            except AllocationError as exc:
                return None, error_status(str(exc))
        s.claims = claims
        return None, None

    def _pre_filter_extended_resources(self, pod: PodInfo, s: DraState) -> JSON | None:
        """preFilterExtendedResources: the pod's extended resource claim (one from an earlier attempt, or a
        new in-memory one) when some extended resource it asks for is backed by a DeviceClass."""
        scalar = extended.backed_scalar_requests(pod, self.manager.extended_resources)
        if scalar is None:
            return None
        s.pod_scalar = scalar
        found = extended.find_extended_resource_claim(pod, self.manager.claims.all_claims())
        if found is not None:
            return dict(found)
        return extended.new_extended_resource_claim(pod)

    def _validate_requests(self, claim: Mapping[str, Any]) -> Status | None:
        """Every request's device class (every subrequest's, for firstAvailable) must exist."""
        for request in device_requests(claim):
            name = str(request.get("name") or "")
            exactly = request.get("exactly")
            first = request.get("firstAvailable")
            if isinstance(exactly, Mapping):
                status = self._validate_device_class(str(exactly.get("deviceClassName") or ""), name)
                if status is not None:
                    return status
            elif isinstance(first, list) and first:
                for sub in first:
                    if not isinstance(sub, Mapping):
                        continue
                    qualified = f"{name}/{sub.get('name') or ''}"
                    status = self._validate_device_class(str(sub.get("deviceClassName") or ""), qualified)
                    if status is not None:
                        return status
            else:
                return unresolvable(f"resource claim {kobj(claim)}, request {name}: unknown request type")
        return None

    def _validate_device_class(self, class_name: str, request: str) -> Status | None:
        if not class_name:
            return error_status(f"request {request}: unsupported request type")
        if self.manager.classes.get(class_name) is None:
            return unresolvable(f"request {request}: device class {class_name} does not exist")
        return None

    def _new_allocator(self) -> Any:
        """structured.NewAllocator over the slices (DeviceTaintRules applied) and the devices allocated to
        other claims, assumed and in-flight ones included. The allocator and CEL are imported here, on the
        first pod that needs them (they are the heaviest modules of the scheduler)."""
        from scheduler.dra.cel import CelCache
        from scheduler.dra.structured import (
            DEFAULT_FEATURES,
            AllocatedState,
            ConsumedCapacityCollection,
            new_allocator,
        )

        if self._cel_cache is None:
            self._cel_cache = CelCache(CEL_CACHE_SIZE)
        dedicated, shared, consumed = self.manager.claims.allocated()
        capacity = ConsumedCapacityCollection()
        for device, amounts in consumed:
            try:
                capacity.insert(device, {str(name): parse_quantity(q) for name, q in amounts.items()})
            except QuantityError:
                continue  # the API server validates consumedCapacity: never a malformed one in practice
        allocated = AllocatedState(dedicated, shared, capacity)
        slices = self.manager.slices.list_with_device_taint_rules()
        return new_allocator(DEFAULT_FEATURES, allocated, self.manager.classes, slices, self._cel_cache)

    # ---------------------------------------------------------------- Filter

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s: DraState | None = state.get(STATE_KEY)
        if s is None:
            return error_status(ERR_NOT_FOUND)
        if s.claims.empty():
            return None
        node_claim, mappings, status = self._filter_extended_resources(s, pod, node)
        if status is not None:
            return status
        if node_claim is None and s.claims.no_user_claim():
            return None
        record = node.node
        labels = record.labels if record is not None else {}
        unavailable: list[int] = []
        for index, claim in s.claims.all():
            selector = s.infos[index].available_on_nodes
            if selector is not None and not selector(labels, node.name):
                unavailable.append(index)
                continue
            if allocation_of(claim) is not None and self.binder.claim_binding_failed_or_timed_out(claim):
                unavailable.append(index)
        results: list[JSON] = []
        if s.allocator is not None:
            to_allocate: list[JSON] = []
            pending: list[JSON] = []
            for index, claim in s.claims.to_allocate():
                if s.claims.is_extended(index) and node_claim is not None:
                    claim = node_claim
                made = s.infos[index].allocation
                if made is not None:
                    pending.append(dict(made))
                    continue
                to_allocate.append(claim)
            allocations, status = self._allocate(s, node, to_allocate)
            if status is not None:
                return status
            results = [*allocations, *pending]
        if unavailable:
            s.unavailable_claims.update(unavailable)
            return unresolvable(ERR_NOT_AVAILABLE)
        if s.allocator is not None:
            s.node_allocations[node.name] = NodeAllocation(results, node_claim, mappings)
        return None

    def _allocate(self, s: DraState, node: NodeInfo, claims: list[JSON]) -> tuple[list[JSON], Status | None]:
        """Allocator.Allocate for one node, its failures as upstream reports them."""
        from scheduler.dra.structured import AllocationError, AllocationTimeout, FailedAllocationOnNode

        record = node.node
        if record is None:
            return [], error_status(f'node "{node.name}" not found')
        deadline = time.monotonic() + self.args.filter_timeout if self.args.filter_timeout > 0 else None
        try:
            results = s.allocator.allocate(record, claims, deadline=deadline)
        except FailedAllocationOnNode as exc:  # only this node (invalid pools): the others may still do
            return [], unresolvable(str(exc))
        except AllocationTimeout:  # transient: an Error retries after backoff instead of waiting for an event
            return [], error_status(f"node {node.name}: timed out trying to allocate devices")
        except AllocationError as exc:  # a broken claim or class (a CEL error): the attempt fails
            return [], error_status(str(exc))
        if results is None or len(results) != len(claims):
            return [], unresolvable(ERR_CANNOT_ALLOCATE)
        return list(results), None

    def _filter_extended_resources(
        self, s: DraState, pod: PodInfo, node: NodeInfo
    ) -> tuple[JSON | None, list[JSON], Status | None]:
        """filterExtendedResources: None when the node provides every extended resource itself (device
        plugins), else the node's variant of the extended resource claim."""
        claim = s.claims.extended_resource_claim()
        if claim is None:
            return None, [], None
        if has_device_requests(claim):
            # A claim left by an earlier attempt: PostFilter deletes it and the pod starts anew.
            return None, [], unresolvable(extended.ERR_STALE_CLAIM)
        needed, fits = extended.node_extended_resources(s.pod_scalar, node, self.manager.extended_resources)
        if not fits:
            return None, [], unresolvable(extended.ERR_CANNOT_FIT)
        if (s.claims.no_user_claim() and not needed) or allocation_of(claim) is not None:
            return None, [], None
        node_claim, mappings = extended.node_claim(claim, pod, needed, self.manager.extended_resources)
        return node_claim, mappings, None

    # ---------------------------------------------------------------- PostFilter

    def post_filter(
        self, state: CycleState, pod: PodInfo, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        s: DraState | None = state.get(STATE_KEY)
        if s is None:
            return None, error_status(ERR_NOT_FOUND)
        if s.claims.empty():
            return None, Status(Code.UNSCHEDULABLE)
        action = self.deallocation_for(s, pod)
        if action is None:
            return None, Status(Code.UNSCHEDULABLE)
        kind, claim = action
        self.binder.release_in_background(pod, kind, claim)
        return None, Status(Code.UNSCHEDULABLE, (MSG_DEALLOCATED if kind == "deallocate" else MSG_DELETED,))

    def dry_run_post_filter(self, state: CycleState, pod: PodInfo) -> tuple[Status, str]:
        """PostFilter without its write, for explanations: the status it would return and what it would
        release ("" when nothing)."""
        s: DraState | None = state.get(STATE_KEY)
        if s is None:
            return error_status(ERR_NOT_FOUND, NAME), ""
        action = None if s.claims.empty() else self.deallocation_for(s, pod)
        if action is None:
            return Status(Code.UNSCHEDULABLE, (), NAME), ""
        kind, claim = action
        if kind == "deallocate":
            return Status(Code.UNSCHEDULABLE, (MSG_DEALLOCATED,), NAME), (
                f"would deallocate ResourceClaim {kobj(claim)}: it is allocated where the pod cannot run and no "
                "other pod uses it, so the next attempt can allocate it anew"
            )
        return Status(Code.UNSCHEDULABLE, (MSG_DELETED,), NAME), (
            f"would delete ResourceClaim {kobj(claim)}, the extended resource claim of an earlier attempt"
        )

    @staticmethod
    def deallocation_for(s: DraState, pod: PodInfo) -> tuple[str, JSON] | None:
        """deallocateOrDeletePodClaims, decided: ("deallocate", claim) for the first claim unavailable on some
        node that no other pod has reserved, else ("delete", the extended resource claim) when one from an
        earlier attempt exists, else None. Upstream picks among unavailable claims at random (map order);
        the lowest index is picked here, so the same input gives the same answer."""
        extended_claim = s.claims.extended_resource_claim()
        for index in sorted(s.unavailable_claims):
            claim = s.claims.get(index)
            if s.claims.is_extended(index):
                if extended_claim is not None and not is_special_claim_name(name_of(extended_claim)):
                    break
                continue
            reserved = (claim.get("status") or {}).get("reservedFor") or []
            if not reserved or (len(reserved) == 1 and str(reserved[0].get("uid") or "") == pod.uid):
                return "deallocate", with_status(claim, reservedFor=None, allocation=None, devices=None)
        if extended_claim is not None and not is_special_claim_name(name_of(extended_claim)):
            return "delete", deep_copy(extended_claim)
        return None

    # ---------------------------------------------------------------- Score

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return self.score_batch(state, pod, [node])[0]

    def score_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        s: DraState | None = state.get(STATE_KEY)
        if s is None:
            raise RuntimeError(ERR_NOT_FOUND)
        if s.claims.empty() or not s.node_allocations:
            return [0] * len(nodes)
        out = []
        for node in nodes:
            allocation = s.node_allocations.get(node.name)
            out.append(0 if allocation is None else compute_score(s.claims, allocation.results))
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[int]) -> Status | None:
        s: DraState | None = state.get(STATE_KEY)
        if s is not None and not s.node_allocations:
            return None  # every score is 0 (most pods have no claim): nothing to scale
        return default_normalize_score(100, False, scores)

    # ---------------------------------------------------------------- Reserve / Unreserve

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s: DraState | None = state.get(STATE_KEY)
        if s is None:
            return error_status(ERR_NOT_FOUND)
        if s.claims.empty():
            return None
        to_allocate = s.claims.to_allocate()
        if not to_allocate or s.allocator is None:
            return None
        allocations = s.node_allocations.get(node_name)
        if allocations is None or not allocations.results:
            if all(s.claims.is_extended(i) for i, _ in to_allocate):
                return None  # only the extended resource claim, which device plugins satisfy on this node
            return error_status("claim allocation not found for node")
        if len(allocations.results) != len(to_allocate):
            return error_status(
                f"internal error, have {len(allocations.results)} allocations, {len(to_allocate)} claims to "
                f"allocate, want {len(to_allocate)} claims"
            )
        tracker = self.manager.claims
        for (index, claim), allocation in zip(to_allocate, allocations.results, strict=True):
            s.infos[index].allocation = allocation
            if s.claims.is_extended(index) and allocations.extended_claim is not None:
                claim = allocations.extended_claim
            pending = deep_copy(claim)
            finalizers = pending.setdefault("metadata", {}).setdefault("finalizers", [])
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
            pending.setdefault("status", {})["allocation"] = allocation
            try:
                tracker.signal_pending_allocation(uid_of(claim), pending)
            except Exception as exc:
                return error_status(f"internal error, couldn't signal allocation for claim {name_of(claim)}: {exc}")
            log.log(V5, "Reserved resource in allocation result", extra={"claim": kobj(claim), "pod": pod.key})
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s: DraState | None = state.get(STATE_KEY)
        if s is None or s.claims.empty():
            return
        tracker = self.manager.claims
        for _, claim in s.claims.user_claims():
            if tracker.maybe_remove_pending_allocation(uid_of(claim), False):
                tracker.restore(namespace_of(claim), name_of(claim))
            if allocation_of(claim) is not None and is_reserved_for_pod(pod.uid, claim):
                self.binder.unreserve_in_background(pod, claim)
        self.binder.unreserve_extended_resource_claim(pod, s)

    # ---------------------------------------------------------------- PreBind

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s: DraState | None = state.get(STATE_KEY)
        if s is None:
            return error_status(ERR_NOT_FOUND)
        if s.claims.empty():
            return None
        return await self.binder.pre_bind(s, pod, node_name)

    # ---------------------------------------------------------------- events

    def events_to_register(self) -> list[ClusterEvent]:
        """Upstream's events, without its queueing hints (the queue moves every pod the plugin rejected):
        node changes (topology, allocatable), any claim change (allocation is tracked there), the pod's own
        generated claims, new or changed classes and slices. A DeviceTaintRule change is the change of the
        slices it patches (upstream's tracker reports it as a ResourceSlice update)."""
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE),
            ClusterEvent(RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE | ActionType.DELETE),
            ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
            ClusterEvent(DEVICE_CLASS, add_update),
            ClusterEvent(RESOURCE_SLICE, add_update),
            ClusterEvent(DEVICE_TAINT_RULE, ActionType.ALL),
        ]

    # ---------------------------------------------------------------- explain

    def explain_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status | None
    ) -> list[ExplainDetail]:
        s: DraState | None = state.get(STATE_KEY)
        if s is None or s.claims.empty():
            return []
        return explain.explain_node(self, s, pod, node, status)

    def suggest_fixes(self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status) -> list[FixCandidate]:
        s: DraState | None = state.get(STATE_KEY)
        if s is None or s.claims.empty():
            return []
        return explain.suggest_fixes(self, s, pod, node, status)


def new(raw_args: Mapping[str, Any] | Args | None, handle: Handle) -> DynamicResources:
    """Registry factory: accepts raw pluginConfig args or already parsed Args."""
    args = raw_args if isinstance(raw_args, Args) else parse_args(raw_args)
    return DynamicResources(args, handle)

