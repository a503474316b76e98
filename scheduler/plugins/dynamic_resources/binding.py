"""DynamicResources' writes (upstream dynamicresources.go bindClaim and PreBind, PostFilter's deallocation,
Unreserve, the extended resource claim's create/delete): everything that goes through the Handle's
ClaimWriter, so the plugin's decisions stay pure.

PreBind, per claim not reserved for the pod yet: the finalizer (a normal update), then the allocation Reserve
made, the pod in reservedFor and an allocationTimestamp (one status update), retried on conflict on a fresh
copy (5 attempts, as retry.DefaultRetry); the returned claim is assumed so the next pods see it at once.
When an allocated device has binding conditions, the pod's binding waits (up to bindingTimeout) until the
driver reports them true, and fails (to be retried) when a failure condition is true or time runs out.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Final

from scheduler.framework.interface import ClaimWriter, ConflictError, Handle, NotFoundError
from scheduler.framework.objects import JSON, RESOURCE_CLAIM
from scheduler.framework.observer import Observer
from scheduler.framework.status import Status, error_status
from scheduler.framework.types import PodInfo
from scheduler.logging_setup import V5
from scheduler.plugins.dynamic_resources.args import Args
from scheduler.plugins.dynamic_resources.claims import (
    FINALIZER,
    allocation_of,
    allocation_results,
    deep_copy,
    has_device_requests,
    is_special_claim_name,
    kobj,
    meta,
    name_of,
    namespace_of,
    pod_reference,
    status_of,
    uid_of,
)
from scheduler.plugins.dynamic_resources.state import DraState
from scheduler.plugins.dynamic_resources.tracker import AssumeError, DraManager

log = logging.getLogger("pyscheduler.dynamicresources")

ERR_DEVICE_BINDING_TIMEOUT: Final = "device binding timeout"
ERR_DEVICE_BINDING_FAILED: Final = "device binding failed"
EVENT_BINDING_CONDITIONS_PENDING: Final = "BindingConditionsPending"
# retry.DefaultRetry: 5 steps 10 ms apart.
CONFLICT_RETRIES: Final = 5
CONFLICT_BACKOFF: Final = 0.01
# PreBind checks binding conditions every 5 s (and at once when a claim changes in the object store).
BINDING_CHECK_PERIOD: Final = 5.0
CHANGE_TICK: Final = 0.05
# How long PreBind waits for the informer to show a claim it created (AssumeExtendedResourceTimeoutDefault).
ASSUME_EXTENDED_TIMEOUT: Final = 120.0

# metrics.BindingConditionsStatus*: the status label of the binding-conditions metrics.
STATUS_SUCCESS: Final = "success"
STATUS_FAILED: Final = "failure"
STATUS_TIMEOUT: Final = "timeout"
STATUS_ERROR: Final = "error"


class BindingError(Exception):
    """A claim could not be reserved (or its devices not bound); str() is the message PreBind fails with.
    `status` is the binding-conditions metric label it counts as."""

    def __init__(self, message: str, status: str = STATUS_ERROR) -> None:
        super().__init__(message)
        self.status = status


def _now_rfc3339() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _condition_true(conditions: Any, kind: str) -> bool:
    """meta.IsStatusConditionTrue."""
    if not isinstance(conditions, list):
        return False
    return any(isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _find_condition(conditions: Any, kind: str) -> Mapping[str, Any] | None:
    if isinstance(conditions, list):
        for c in conditions:
            if isinstance(c, Mapping) and c.get("type") == kind:
                return c
    return None


def device_status(claim: Mapping[str, Any], result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """getAllocatedDeviceStatus: the status.devices entry of the result's device."""
    for entry in status_of(claim).get("devices") or []:
        if (
            isinstance(entry, Mapping)
            and entry.get("device") == result.get("device")
            and entry.get("driver") == result.get("driver")
            and entry.get("pool") == result.get("pool")
        ):
            return entry
    return None


def claim_ready_for_binding(claim: Mapping[str, Any]) -> bool:
    """isClaimReadyForBinding: True when every binding condition of every allocated device is true; raises
    BindingError when a binding failure condition is true."""
    allocation = allocation_of(claim)
    if allocation is None:
        return False
    for result in allocation_results(allocation):
        conditions = result.get("bindingConditions") or []
        if not conditions:
            continue
        status = device_status(claim, result)
        if status is None:
            return False
        for kind in result.get("bindingFailureConditions") or []:
            failed = _find_condition(status.get("conditions"), str(kind))
            if failed is not None and failed.get("status") == "True":
                message = str(failed.get("message") or "")
                raise BindingError(
                    f"{ERR_DEVICE_BINDING_FAILED}: claim={name_of(claim)}, reason={failed.get('reason') or ''}, "
                    f'message="{message}"',
                    STATUS_FAILED,
                )
        if not all(_condition_true(status.get("conditions"), str(kind)) for kind in conditions):
            return False
    return True


def has_binding_conditions(claims: Any) -> bool:
    """Whether an allocated device of one of the claims has binding conditions."""
    return any(
        result.get("bindingConditions") for _, claim in claims for result in allocation_results(allocation_of(claim))
    )


class ClaimBinder:
    """The plugin's writes and waits, over the Handle's ClaimWriter and the shared DRA manager."""

    def __init__(self, handle: Handle, manager: DraManager, args: Args) -> None:
        self.handle = handle
        self.manager = manager
        self.binding_timeout = args.binding_timeout
        self.check_period = BINDING_CHECK_PERIOD
        self.observer: Observer = getattr(handle, "observer", None) or Observer()
        self.clock: Callable[[], float] = time.time

    @property
    def writer(self) -> ClaimWriter:
        return self.handle.claim_writer

    # ---------------------------------------------------------------- binding conditions (Filter)

    def claim_timed_out(self, claim: Mapping[str, Any]) -> bool:
        """isClaimTimeout: an allocated device has binding conditions and the allocation is older than
        bindingTimeout."""
        allocation = allocation_of(claim)
        if allocation is None:
            return False
        started = _parse_time(allocation.get("allocationTimestamp"))
        if started is None:
            return False
        if not any(r.get("bindingConditions") is not None for r in allocation_results(allocation)):
            return False
        return started + self.binding_timeout < self.clock()

    def claim_binding_failed_or_timed_out(self, claim: Mapping[str, Any]) -> bool:
        """Filter's check of an allocated claim: its binding failed, or it is not ready and timed out (then
        PostFilter may deallocate it so other devices can be tried)."""
        try:
            ready = claim_ready_for_binding(claim)
        except BindingError:
            return True
        return not ready and self.claim_timed_out(claim)

    # ---------------------------------------------------------------- PreBind

    async def pre_bind(self, s: DraState, pod: PodInfo, node_name: str) -> Status | None:
        cleanups: list[Callable[[], None]] = []
        try:
            for index, claim in list(s.claims.all()):
                if any(str(r.get("uid") or "") == pod.uid for r in status_of(claim).get("reservedFor") or []):
                    continue
                bound, cleanup = await self._bind_claim(s, index, pod, node_name)
                if cleanup is not None:
                    cleanups.append(cleanup)
                s.claims.set(index, bound)
            if has_binding_conditions(s.claims.all()):
                await self._wait_for_binding_conditions(s, pod, node_name)
        except BindingError as exc:
            return error_status(str(exc))
        for cleanup in cleanups:
            cleanup()
        return None

    async def _bind_claim(
        self, s: DraState, index: int, pod: PodInfo, node_name: str
    ) -> tuple[JSON, Callable[[], None] | None]:
        """bindClaim: record the allocation (if this pod made it) and the pod's reservation in the claim."""
        claim = s.claims.get(index)
        allocation = s.infos[index].allocation
        extended_claim = s.claims.is_extended(index)
        if extended_claim and allocation is None and not has_device_requests(claim):
            return claim, None  # its extended resources come from device plugins on this node
        in_flight_uid = uid_of(claim)
        tracker = self.manager.claims
        modified = False

        def cleanup() -> None:
            if allocation is not None:
                tracker.maybe_remove_pending_allocation(in_flight_uid, True)

        try:
            if extended_claim and is_special_claim_name(name_of(claim)):
                claim = await self._create_extended_claim(s, pod, node_name)
                modified = True
                s.claims.set(index, claim)  # Unreserve deletes it again should binding fail
            claim = await self._write_reservation(claim, allocation, pod)
            modified = True
        finally:
            if modified:
                if extended_claim:
                    await self._assume_created_claim(claim)
                else:
                    try:
                        tracker.assume(claim)
                    except AssumeError as exc:
                        log.log(V5, "Claim not stored in assume cache", extra={"claim": kobj(claim), "error": str(exc)})
        log.log(V5, "reserved", extra={"pod": pod.key, "node": node_name, "resourceclaim": kobj(claim)})
        if extended_claim:
            await self._record_extended_claim_in_pod(s, pod, claim, node_name)
        return claim, cleanup

    async def _write_reservation(self, claim: JSON, allocation: Mapping[str, Any] | None, pod: PodInfo) -> JSON:
        """The finalizer, allocation and reservation writes, retried on conflict on a fresh copy."""
        writer = self.writer
        claim = deep_copy(claim)
        refresh = False
        for attempt in range(CONFLICT_RETRIES):
            conflict: BaseException | None = None
            try:
                if refresh:
                    try:
                        claim = await writer.get_resource_claim(namespace_of(claim), name_of(claim))
                    except Exception as exc:
                        raise BindingError(f"get updated claim {kobj(claim)} after conflict: {exc}") from exc
                refresh = True
                if meta(claim).get("deletionTimestamp"):
                    raise BindingError(f"claim {kobj(claim)} got deleted in the meantime")
                if allocation is not None:
                    if allocation_of(claim) is not None:
                        raise BindingError(f"claim {kobj(claim)} got allocated elsewhere in the meantime")
                    finalizers = list(meta(claim).get("finalizers") or [])
                    if FINALIZER not in finalizers:
                        claim.setdefault("metadata", {})["finalizers"] = [*finalizers, FINALIZER]
                        try:
                            claim = await writer.update_resource_claim(claim)
                        except ConflictError as exc:
                            conflict = exc
                            raise BindingError(f"add finalizer to claim {kobj(claim)}: {exc}") from exc
                        except Exception as exc:
                            raise BindingError(f"add finalizer to claim {kobj(claim)}: {exc}") from exc
                    claim.setdefault("status", {})["allocation"] = deep_copy(allocation)
                status = claim.setdefault("status", {})
                status["reservedFor"] = [*(status.get("reservedFor") or []), pod_reference(pod)]
                current = allocation_of(claim)
                if current is None:
                    raise BindingError(f"claim {kobj(claim)} got deallocated elsewhere in the meantime")
                if not current.get("allocationTimestamp"):
                    status["allocation"] = {**current, "allocationTimestamp": _now_rfc3339()}
                what = "add allocation and reservation to" if allocation is not None else "add reservation to"
                try:
                    return await writer.update_resource_claim_status(claim)
                except ConflictError as exc:
                    conflict = exc
                    raise BindingError(f"{what} claim {kobj(claim)}: {exc}") from exc
                except Exception as exc:
                    raise BindingError(f"{what} claim {kobj(claim)}: {exc}") from exc
            except BindingError:
                if conflict is None or attempt == CONFLICT_RETRIES - 1:
                    raise
                log.log(V5, "retrying update after conflict", extra={"claim": kobj(claim)})
                await asyncio.sleep(CONFLICT_BACKOFF)
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _create_extended_claim(self, s: DraState, pod: PodInfo, node_name: str) -> JSON:
        """createExtendedResourceClaimInAPI: the node's variant of the extended resource claim, created with
        a generated name (no allocation yet: PreBind writes it like any other)."""
        allocation = s.node_allocations.get(node_name)
        if allocation is None or allocation.extended_claim is None:
            raise BindingError(f"extended resource claim not found for node {node_name}")
        claim = deep_copy(allocation.extended_claim)
        claim.pop("status", None)
        metadata = claim.setdefault("metadata", {})
        metadata.pop("name", None)
        metadata.pop("uid", None)
        metadata.pop("finalizers", None)
        try:
            created = await self.writer.create_resource_claim(claim)
        except Exception as exc:
            self.observer.resource_claim_create("failure")
            raise BindingError(f"create claim for extended resources {namespace_of(claim)}/: {exc}") from exc
        self.observer.resource_claim_create("success")
        return created

    async def _assume_created_claim(self, claim: JSON) -> None:
        """waitForExtendedClaimInAssumeCache: a created claim can only be assumed once the informer has it;
        wait for that (bounded), and log rather than fail if it does not come."""
        tracker = self.manager.claims
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ASSUME_EXTENDED_TIMEOUT
        while True:
            try:
                tracker.assume(claim)
                return
            except AssumeError as exc:
                if self.manager.objects.get(RESOURCE_CLAIM, namespace_of(claim), name_of(claim)) is not None:
                    log.log(V5, "Claim not stored in assume cache", extra={"claim": kobj(claim), "error": str(exc)})
                    return
                if loop.time() >= deadline or getattr(self.writer, "settles_synchronously", False):
                    log.log(V5, "Claim not stored in assume cache after retries", extra={"claim": kobj(claim)})
                    return
            await asyncio.sleep(CHANGE_TICK)

    async def _record_extended_claim_in_pod(self, s: DraState, pod: PodInfo, claim: JSON, node_name: str) -> None:
        """patchPodExtendedResourceClaimStatus: which container request maps to which device request."""
        allocation = s.node_allocations.get(node_name)
        mappings = allocation.mappings if allocation is not None else []
        if not mappings:
            raise BindingError(
                f"nil or empty request mappings, no update of pod {pod.namespace}/{pod.name} "
                "ExtendedResourceClaimStatus"
            )
        status = {"requestMappings": mappings, "resourceClaimName": name_of(claim)}
        try:
            await self.writer.patch_pod_extended_resource_claim_status(pod, status)
        except Exception as exc:
            raise BindingError(f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {exc}") from exc

    # ---------------------------------------------------------------- binding conditions (PreBind)

    def _pod_ready_for_binding(self, s: DraState) -> bool:
        """isPodReadyForBinding: every claim (re-read) ready; BindingError when one failed or timed out."""
        tracker = self.manager.claims
        for index, claim in list(s.claims.all()):
            latest = tracker.get(namespace_of(claim), name_of(claim))
            if latest is None:
                raise BindingError(f'could not find ResourceClaim "{namespace_of(claim)}/{name_of(claim)}"')
            s.claims.set(index, latest)
            if not claim_ready_for_binding(latest):
                if self.claim_timed_out(latest):
                    raise BindingError(f"{ERR_DEVICE_BINDING_TIMEOUT}: claim={name_of(latest)}", STATUS_TIMEOUT)
                return False
        return True

    async def _wait_for_binding_conditions(self, s: DraState, pod: PodInfo, node_name: str) -> None:
        self.writer.record_pod_event(
            pod,
            "Normal",
            EVENT_BINDING_CONDITIONS_PENDING,
            "Scheduling",
            f"waiting for binding conditions for device on node {node_name}",
        )
        start = time.monotonic()
        outcome = STATUS_SUCCESS
        try:
            await self._poll_binding_conditions(s)
        except BindingError as exc:
            outcome = exc.status
            raise
        finally:
            self._observe_binding_conditions(s, pod, outcome, time.monotonic() - start)

    async def _poll_binding_conditions(self, s: DraState) -> None:
        """Check at once, then after every claim change and at least every check period, up to the timeout."""
        loop = asyncio.get_running_loop()
        objects = self.manager.objects
        deadline = loop.time() + self.binding_timeout
        while True:
            seen = objects.generation(RESOURCE_CLAIM)
            if self._pod_ready_for_binding(s):
                return
            if getattr(self.writer, "settles_synchronously", False) or loop.time() >= deadline:
                # In memory nothing changes while we wait: what the timeout would end in, at once.
                raise BindingError(f"{ERR_DEVICE_BINDING_TIMEOUT}: context deadline exceeded", STATUS_TIMEOUT)
            next_check = min(loop.time() + self.check_period, deadline)
            while loop.time() < next_check:
                await asyncio.sleep(CHANGE_TICK)
                if objects.generation(RESOURCE_CLAIM) != seen:
                    break

    def _observe_binding_conditions(self, s: DraState, pod: PodInfo, outcome: str, seconds: float) -> None:
        """scheduler_dra_bindingconditions_wait_duration_seconds per allocated device's driver, and
        scheduler_dra_bindingconditions_allocations_total per device with binding conditions."""
        profile = pod.scheduler_name
        for _, claim in s.claims.all():
            for result in allocation_results(allocation_of(claim)):
                driver = str(result.get("driver") or "")
                self.observer.dra_binding_conditions_wait(profile, driver, outcome, seconds)
                if result.get("bindingConditions"):
                    self.observer.dra_binding_conditions_allocation(profile, driver, outcome)

    # ---------------------------------------------------------------- PostFilter / Unreserve writes

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        spawn = getattr(self.handle, "spawn", None)
        if callable(spawn):
            spawn(coro, name)
            return
        try:
            asyncio.get_running_loop().create_task(coro, name=name)
        except RuntimeError:  # no loop (a synchronous unit test): nothing can be written
            coro.close()

    def release_in_background(self, pod: PodInfo, kind: str, claim: JSON) -> None:
        """PostFilter's write, off the scheduling cycle: deallocate the claim, or delete the extended resource
        claim of an earlier attempt. A failed write re-activates the pod (upstream fails the attempt, so the
        pod is retried after backoff)."""

        async def run() -> None:
            try:
                if kind == "deallocate":
                    log.log(V5, "Deallocation of ResourceClaim", extra={"pod": pod.key, "resourceclaim": kobj(claim)})
                    await self.writer.update_resource_claim_status(claim)
                else:
                    await self.delete_claim(claim)
            except Exception as exc:
                log.warning(
                    "releasing a ResourceClaim failed", extra={"pod": pod.key, "claim": kobj(claim), "error": str(exc)}
                )
                activate = getattr(self.handle, "activate", None)
                if callable(activate):
                    activate([pod.uid])

        self._spawn(run(), f"dra-release-{kobj(claim)}")

    def unreserve_in_background(self, pod: PodInfo, claim: JSON) -> None:
        """Unreserve: take the pod out of the claim's reservedFor (a strategic merge patch)."""

        async def run() -> None:
            try:
                await self.writer.unreserve_resource_claim(namespace_of(claim), name_of(claim), uid_of(claim), pod.uid)
            except Exception as exc:  # the next attempt gets here again
                log.error("unreserve", extra={"resourceclaim": kobj(claim), "pod": pod.key, "error": str(exc)})

        self._spawn(run(), f"dra-unreserve-{kobj(claim)}")

    def unreserve_extended_resource_claim(self, pod: PodInfo, s: DraState) -> None:
        """unreserveExtendedResourceClaim: release its allocation in flight and, once PreBind created it,
        delete it so it is not left behind."""
        claim = s.claims.extended_resource_claim()
        if claim is None:
            return
        tracker = self.manager.claims
        if tracker.maybe_remove_pending_allocation(s.claims.initial_extended_uid, False):
            tracker.restore(namespace_of(claim), name_of(claim))
        if is_special_claim_name(name_of(claim)):
            return

        async def run() -> None:
            try:
                await self.delete_claim(claim)
            except Exception as exc:
                log.error("delete", extra={"resourceclaim": kobj(claim), "pod": pod.key, "error": str(exc)})

        self._spawn(run(), f"dra-delete-{kobj(claim)}")

    async def delete_claim(self, claim: Mapping[str, Any]) -> None:
        """deleteClaim: remove the finalizer (retried on conflict), then delete (gone already is fine)."""
        writer = self.writer
        current = deep_copy(claim)
        for attempt in range(CONFLICT_RETRIES):
            if attempt:
                try:
                    current = await writer.get_resource_claim(namespace_of(claim), name_of(claim))
                except Exception as exc:
                    raise BindingError(f"get resourceclaim {kobj(claim)}: {exc}") from exc
            finalizers = list(meta(current).get("finalizers") or [])
            if FINALIZER in finalizers:
                finalizers.remove(FINALIZER)
            current.setdefault("metadata", {})["finalizers"] = finalizers
            try:
                await writer.update_resource_claim(current)
                break
            except ConflictError as exc:
                if attempt == CONFLICT_RETRIES - 1:
                    raise BindingError(f"update resourceclaim {kobj(claim)}: {exc}") from exc
                await asyncio.sleep(CONFLICT_BACKOFF)
            except Exception as exc:
                raise BindingError(f"update resourceclaim {kobj(claim)}: {exc}") from exc
        log.log(V5, "Delete", extra={"resourceclaim": kobj(claim)})
        try:
            await writer.delete_resource_claim(namespace_of(claim), name_of(claim))
        except NotFoundError:
            return
