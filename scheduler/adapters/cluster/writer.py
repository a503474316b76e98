"""The scheduler's writes to the API server: awaited binds, queued events and PodScheduled patches.

`ClusterWriter` implements `scheduler.core.api.ClusterAPI` on top of `KubeClient`. Binds are awaited by the
binding cycle; events and PodScheduled condition patches are fire-and-forget: they go into bounded in-memory
queues drained by a few worker tasks, so the scheduling loop never waits for the API server to record what
it did.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import quote

from scheduler.adapters.cluster.client import JSON, ApiError, KubeClient, events_path, micro_time, pod_path, rfc3339
from scheduler.core.api import (
    ACTION_BINDING,
    ACTION_PREEMPTING,
    ACTION_SCHEDULING,
    EVENT_FAILED_SCHEDULING,
    EVENT_PREEMPTED,
    EVENT_SCHEDULED,
    AlreadyBoundError,
    BindError,
    BindLandedError,
    BindOutcomeUnknownError,
    PodGoneError,
    WriteError,
)
from scheduler.framework.fit_error import truncate_message
from scheduler.framework.interface import ConflictError, NotFoundError
from scheduler.framework.preemption import DISRUPTION_TARGET, REASON_PREEMPTION_BY_SCHEDULER
from scheduler.framework.types import PodInfo

log = logging.getLogger("pyscheduler.writer")

STRATEGIC_MERGE = "application/strategic-merge-patch+json"

# client-go events broadcaster: an isomorphic event within finishTime becomes a series; series are
# re-written every refreshTime (tools/events/event_broadcaster.go).
EVENT_SERIES_FINISH = 6 * 60.0
EVENT_SERIES_REFRESH = 30 * 60.0
# How long a bind waits for a PodScheduled patch of the same pod that is already in flight, so the binding
# (which sets PodScheduled=True) reaches the API server after it, as upstream's API dispatcher orders calls
# of one object. Bounded: should the patch hang, the bind goes on and `_restore_scheduled` repairs the rest.
STATUS_IN_FLIGHT_WAIT = 5.0
BOUND_READ_TIMEOUT = 10.0  # one read of a pod whose binding is in doubt (each attempt; the client retries)


class PreemptionCallError(Exception):
    """A preemption write the API server refused (other than the victim being gone)."""


def pod_reference(pod: PodInfo) -> JSON:
    """reference.GetReference(pod): what an event's `regarding` holds."""
    ref: JSON = {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace, "name": pod.name}
    if pod.uid and "/" not in pod.uid:  # PodInfo falls back to ns/name when the object had no uid
        ref["uid"] = pod.uid
    if pod.resource_version:
        ref["resourceVersion"] = pod.resource_version
    return ref


@dataclass(slots=True)
class _EventEntry:
    """One isomorphic event as client-go's eventCache holds it."""

    namespace: str
    name: str
    body: JSON
    first_seen: float
    last_observed: float
    count: int = 1
    written_count: int = 1
    uid: str = ""


@dataclass(slots=True)
class _Write:
    """A queued write: an event create/series patch, or a pod status patch."""

    kind: Literal["event", "series", "status"]
    namespace: str
    name: str
    body: JSON
    pod: str = ""
    uid: str = ""


@dataclass(slots=True)
class WriterStats:
    """What the writer did; `dropped_events` counts event writes shed because the queue was full."""

    binds: int = 0
    volume_updates: int = 0
    volume_update_errors: int = 0
    claim_writes: int = 0
    claim_write_errors: int = 0
    binds_landed: int = 0  # 409 on a bind whose earlier attempt had landed (reply lost): bound, not a conflict
    bind_conflicts: int = 0
    bind_gone: int = 0
    bind_errors: int = 0
    events_written: int = 0
    series_patched: int = 0
    events_coalesced: int = 0
    status_patched: int = 0
    status_skipped: int = 0
    status_superseded: int = 0  # queued failure reports dropped because the pod was bound or went away
    status_restored: int = 0  # PodScheduled=True written back after our False landed on a bound pod
    dropped_events: int = 0
    write_errors: int = 0
    queue_high_water: int = 0
    extra: dict[str, int] = field(default_factory=dict)


class ClusterWriter:
    """ClusterAPI on a real API server: awaited binds, queued events and PodScheduled patches.

    Events are aggregated like client-go's events broadcaster (one event, then a `series` for isomorphic
    repeats). Condition patches are coalesced per pod (the newest wins) and skipped when identical to the
    last one written, like upstream's UpdatePodCondition. When more than `max_queued_events` events wait,
    the oldest are dropped and counted; binds never queue.
    """

    def __init__(
        self,
        client: KubeClient,
        *,
        workers: int = 8,
        max_queued_events: int = 5000,
        hostname: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_remembered_conditions: int = 100_000,
    ) -> None:
        self.client = client
        self.hostname = hostname or socket.gethostname()
        self.stats = WriterStats()
        self._clock = clock
        self._workers = workers
        self._max_queued_events = max_queued_events
        self._events: collections.deque[_Write] = collections.deque()
        self._status: collections.OrderedDict[str, _Write] = collections.OrderedDict()
        # Idle workers, each waiting on its own future: a queued write wakes one of them, not all (an Event
        # would wake every worker for every event, and all but one would go back to sleep).
        self._sleeping: collections.deque[asyncio.Future[None]] = collections.deque()
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._tasks: list[asyncio.Task[None]] = []
        self._event_cache: dict[tuple[str, ...], _EventEntry] = {}
        self._event_keys: dict[str, set[tuple[str, ...]]] = {}  # pod uid -> its keys in _event_cache
        self._status_in_flight: dict[str, asyncio.Event] = {}  # pod uid -> set when its status patch is done
        self._conditions: collections.OrderedDict[str, tuple[str, str, str, str]] = collections.OrderedDict()
        self._max_conditions = max_remembered_conditions
        self._closing = False
        # Leader election's guard (LeaseElector.bind_allowance): called before every bind; raises a BindError
        # when we must not bind, else returns how long the bind may take before leadership may be lost.
        self.bind_guard: Callable[[], float] | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> list[asyncio.Task[None]]:
        """Start the worker tasks (and the series maintenance task); the caller supervises them."""
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._worker(i), name=f"writer-{i}") for i in range(self._workers)]
        self._tasks.append(loop.create_task(self._series_maintenance(), name="writer-series"))
        return list(self._tasks)

    def queued(self) -> int:
        return len(self._events) + len(self._status)

    async def flush(self, within: float) -> bool:
        """Wait until every queued write is done (True) or `within` seconds passed (False)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                while self.queued() or self._in_flight:
                    self._idle.clear()
                    await self._idle.wait()
                return True
        return False

    async def close(self, within: float = 5.0) -> None:
        """Flush what can be written within `within` seconds, then stop the workers."""
        if not await self.flush(within):
            log.warning("shutting down with unwritten events", extra={"queued": self.queued()})
        self._closing = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def forget_pod(self, uid: str) -> None:
        """The pod was bound, deleted or finished: its queued failure report is superseded (dropped), and
        what is remembered for it goes (the last condition written, its event aggregation entries; a series
        whose count changed since it was last written gets its final count first, as client-go's finishSeries).
        """
        self._conditions.pop(uid, None)
        if self._status.pop(uid, None) is not None:
            self.stats.status_superseded += 1
        for key in self._event_keys.pop(uid, ()):
            entry = self._event_cache.pop(key, None)
            if entry is not None and entry.count > 1 and entry.count != entry.written_count:
                self._enqueue_event(self._series_write(entry))

    def state_sizes(self) -> dict[str, int]:
        """Entries of every per-pod structure and queue (for leak checks)."""
        return {
            "queued_events": len(self._events),
            "queued_status": len(self._status),
            "status_in_flight": len(self._status_in_flight),
            "event_cache": len(self._event_cache),
            "event_cache_pods": len(self._event_keys),
            "conditions": len(self._conditions),
        }

    # ------------------------------------------------------------------ ClusterAPI: bind

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        """POST pods/binding exactly like DefaultBinder (metadata with uid, target Node by name)."""
        metadata: JSON = {"name": pod.name, "namespace": pod.namespace}
        if pod.uid and "/" not in pod.uid:
            metadata["uid"] = pod.uid  # a recreated pod with the same name must not get our binding
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"kind": "Node", "name": node_name},
        }
        # The binding supersedes a queued failure report of this pod (upstream's API dispatcher: a binding call
        # overwrites a pending status patch of the same object) and goes out after one already in flight.
        if self._status.pop(pod.uid, None) is not None:
            self._conditions.pop(pod.uid, None)  # never written: a later identical failure must be written
            self.stats.status_superseded += 1
        await self._status_settled(pod.uid)
        # Bounded by the guard's allowance (retries included): no bind attempt starts once leadership may be lost.
        allowance = self.bind_guard() if self.bind_guard is not None else None
        try:
            async with asyncio.timeout(allowance):
                # The answer is a v1.Status nobody reads: not decoded. A hot write: the lean HTTP/1.1 pool.
                await self.client.request(
                    "POST", pod_path(pod.namespace, pod.name, "binding"), body=binding, decode=False, lean=True
                )
        except TimeoutError as exc:
            self.stats.bind_errors += 1
            log.error("binding stopped: leadership may be lost", extra={"pod": pod.key, "node": node_name})
            raise BindOutcomeUnknownError(f"binding {pod.key} did not finish while this replica surely led") from exc
        except ApiError as exc:
            if exc.status == 409:
                landed = await self._bound_node(pod, node_name)
                if landed == node_name:  # a retried POST whose first attempt succeeded after all
                    self.stats.binds += 1
                    return
                if landed:  # this very pod (same uid) is bound: a bind of an earlier attempt landed, reply lost
                    self.stats.binds_landed += 1
                    log.info("an earlier bind landed; its reply was lost", extra={"pod": pod.key, "node": landed})
                    raise BindLandedError(exc.message, landed) from exc
                self.stats.bind_conflicts += 1
                raise AlreadyBoundError(exc.message) from exc
            if exc.status == 404:
                self.stats.bind_gone += 1
                raise PodGoneError(exc.message) from exc
            self.stats.bind_errors += 1
            log.error("binding failed", extra={"pod": pod.key, "node": node_name, "error": exc.message})
            # No answer or a server error, on the last attempt or an earlier one (a cut POST retried into 429s):
            # it may have landed, and the binding cycle must find out before it gives the node's room away.
            if exc.maybe_applied:
                raise BindOutcomeUnknownError(exc.message) from exc
            raise BindError(exc.message) from exc
        self.stats.binds += 1

    async def bound_node(self, pod: PodInfo) -> str:
        """The node this very pod (same uid) is bound to, read from the API server now; "" when unbound.

        PodGoneError when it is gone or recreated under its name; BindOutcomeUnknownError when it cannot be read.
        """
        try:
            path = pod_path(pod.namespace, pod.name)
            obj = await self.client.request("GET", path, request_timeout=BOUND_READ_TIMEOUT)
        except ApiError as exc:
            if exc.status == 404:
                raise PodGoneError(exc.message) from exc
            raise BindOutcomeUnknownError(f"pod {pod.key} cannot be read: {exc}") from exc
        meta = obj.get("metadata") or {}
        if "/" not in pod.uid and meta.get("uid") != pod.uid:
            raise PodGoneError(f"pod {pod.key} was recreated (uid {meta.get('uid')})")
        return str((obj.get("spec") or {}).get("nodeName") or "")

    async def _bound_node(self, pod: PodInfo, node_name: str) -> str:
        """The node this very pod (same uid) is bound to after a 409, or "" when it is gone, recreated or unbound.

        Tells our own bind that landed (a retried POST, or an earlier attempt whose reply was lost) from a real
        conflict. When the pod cannot be read, the outcome is unknown: BindError, so the pod is retried.
        """
        try:
            return await self.bound_node(pod)
        except PodGoneError:
            return ""
        except BindOutcomeUnknownError as exc:
            self.stats.bind_errors += 1
            raise BindError(f"binding {pod.key} to {node_name} answered 409 and {exc}") from exc

    async def _status_settled(self, uid: str) -> None:
        """Wait (at most STATUS_IN_FLIGHT_WAIT) until no PodScheduled patch of this pod is in flight."""
        done = self._status_in_flight.get(uid)
        if done is None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(STATUS_IN_FLIGHT_WAIT):
                await done.wait()

    # ------------------------------------------------------------------ ClusterAPI: volume binding writes

    async def update_persistent_volume(self, pv: Mapping[str, Any]) -> JSON:
        """PUT the PV (VolumeBinding's PreBind pre-binds it to its claim)."""
        name = str((pv.get("metadata") or {}).get("name") or "")
        return await self._put(f"/api/v1/persistentvolumes/{quote(name, safe='')}", pv, f"persistentvolume {name}")

    async def update_persistent_volume_claim(self, pvc: Mapping[str, Any]) -> JSON:
        """PUT the claim (VolumeBinding's PreBind sets volume.kubernetes.io/selected-node on it)."""
        meta = pvc.get("metadata") or {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        path = f"/api/v1/namespaces/{quote(ns, safe='')}/persistentvolumeclaims/{quote(name, safe='')}"
        return await self._put(path, pvc, f"persistentvolumeclaim {ns}/{name}")

    async def _put(self, path: str, body: Mapping[str, Any], what: str) -> JSON:
        """A full update, never retried after the request may have been processed (a replayed PUT would only
        meet a 409: the scheduling attempt fails and the pod is retried on fresh objects instead)."""
        try:
            answer = await self.client.request("PUT", path, body=dict(body), retry="never")
        except ApiError as exc:
            self.stats.volume_update_errors += 1
            log.warning("volume update failed", extra={"object": what, "status": exc.status, "error": exc.message})
            raise WriteError(exc.message) from exc
        self.stats.volume_updates += 1
        if not isinstance(answer, dict):
            raise WriteError(f"updating {what}: the API server answered without an object")
        return answer

    # ------------------------------------------------------------------ ClusterAPI: ResourceClaims

    @staticmethod
    def _claim_path(namespace: str, name: str = "", subresource: str = "") -> str:
        path = f"/apis/resource.k8s.io/v1/namespaces/{quote(namespace, safe='')}/resourceclaims"
        if name:
            path += f"/{quote(name, safe='')}"
        if subresource:
            path += f"/{subresource}"
        return path

    async def _claim_call(self, method: str, path: str, what: str, **kwargs: Any) -> Any:
        """One ResourceClaim request (writes are never replayed once they may have been processed): 409 is a
        ConflictError, 404 a NotFoundError, anything else a WriteError with the API server's message."""
        retry: Literal["always", "never"] = "always" if method == "GET" else "never"
        try:
            answer = await self.client.request(method, path, retry=retry, **kwargs)
        except ApiError as exc:
            if method != "GET":
                self.stats.claim_write_errors += 1
            log.log(
                logging.INFO if exc.status in (404, 409) else logging.WARNING,
                "resourceclaim request failed",
                extra={"object": what, "method": method, "status": exc.status, "error": exc.message},
            )
            if exc.status == 409:
                raise ConflictError(exc.message) from exc
            if exc.status == 404:
                raise NotFoundError(exc.message) from exc
            raise WriteError(exc.message) from exc
        if method != "GET":
            self.stats.claim_writes += 1
        return answer

    async def _claim_object(self, method: str, path: str, what: str, **kwargs: Any) -> JSON:
        answer = await self._claim_call(method, path, what, **kwargs)
        if not isinstance(answer, dict):
            raise WriteError(f"{method} {what}: the API server answered without an object")
        return answer

    async def get_resource_claim(self, namespace: str, name: str) -> JSON:
        what = f"resourceclaim {namespace}/{name}"
        return await self._claim_object("GET", self._claim_path(namespace, name), what)

    async def create_resource_claim(self, claim: Mapping[str, Any]) -> JSON:
        """POST a claim (DynamicResources' claim for a pod's extended resources, with a generateName)."""
        meta = claim.get("metadata") or {}
        ns = str(meta.get("namespace") or "")
        return await self._claim_object("POST", self._claim_path(ns), f"resourceclaim {ns}/", body=dict(claim))

    async def update_resource_claim(self, claim: Mapping[str, Any]) -> JSON:
        """PUT the claim (its finalizer)."""
        meta = claim.get("metadata") or {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        path = self._claim_path(ns, name)
        return await self._claim_object("PUT", path, f"resourceclaim {ns}/{name}", body=dict(claim))

    async def update_resource_claim_status(self, claim: Mapping[str, Any]) -> JSON:
        """PUT the claim's status (allocation and reservedFor; or none of them: deallocation)."""
        meta = claim.get("metadata") or {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        path = self._claim_path(ns, name, "status")
        return await self._claim_object("PUT", path, f"resourceclaim {ns}/{name}", body=dict(claim))

    async def unreserve_resource_claim(self, namespace: str, name: str, claim_uid: str, pod_uid: str) -> None:
        """Remove the pod from reservedFor with upstream's strategic merge patch (uid as a precondition)."""
        body = {"metadata": {"uid": claim_uid}, "status": {"reservedFor": [{"$patch": "delete", "uid": pod_uid}]}}
        path = self._claim_path(namespace, name, "status")
        what = f"resourceclaim {namespace}/{name}"
        await self._claim_call("PATCH", path, what, body=body, content_type=STRATEGIC_MERGE)

    async def delete_resource_claim(self, namespace: str, name: str) -> None:
        await self._claim_call("DELETE", self._claim_path(namespace, name), f"resourceclaim {namespace}/{name}")

    async def patch_pod_extended_resource_claim_status(self, pod: PodInfo, status: Mapping[str, Any]) -> None:
        """status.extendedResourceClaimStatus of the pod (a strategic merge patch of its status)."""
        body = {"status": {"extendedResourceClaimStatus": dict(status)}}
        path = pod_path(pod.namespace, pod.name, "status")
        await self._claim_call("PATCH", path, f"pod {pod.key}", body=body, content_type=STRATEGIC_MERGE)

    def record_pod_event(self, pod: PodInfo, event_type: str, reason: str, action: str, note: str) -> None:
        self._event(pod, event_type, reason, action, note)

    # ------------------------------------------------------------------ ClusterAPI: events and conditions

    def record_scheduled(self, pod: PodInfo, node_name: str) -> None:
        """Normal `Scheduled` event, action Binding (schedule_one.go handleBindingCycle)."""
        self._conditions.pop(pod.uid, None)
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node_name}"
        self._event(pod, "Normal", EVENT_SCHEDULED, ACTION_BINDING, note)

    def record_failure(
        self, pod: PodInfo, reason: str, message: str, *, nominated_node_name: str | None = None
    ) -> None:
        """Warning `FailedScheduling` (note truncated to 1024 bytes) + PodScheduled=False with the full message,
        and status.nominatedNodeName in the same patch when `nominated_node_name` is not None ("" clears it)."""
        self._event(pod, "Warning", EVENT_FAILED_SCHEDULING, ACTION_SCHEDULING, truncate_message(message))
        self._condition(pod, reason, message, nominated_node_name)

    # ------------------------------------------------------------------ ClusterAPI: preemption

    async def patch_disruption_target(self, victim: PodInfo, message: str) -> bool:
        """PATCH the victim's status with DisruptionTarget=True reason PreemptionByScheduler (awaited, retried
        on 5xx/timeouts by the client); False when the pod is gone (404)."""
        condition: JSON = {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": REASON_PREEMPTION_BY_SCHEDULER,
            "message": message,
            "lastTransitionTime": rfc3339(datetime.now(UTC)),
        }
        if victim.generation:
            condition["observedGeneration"] = victim.generation
        body: JSON = {"status": {"conditions": [condition]}}
        try:
            await self.client.request(
                "PATCH", pod_path(victim.namespace, victim.name, "status"), body=body, content_type=STRATEGIC_MERGE
            )
        except ApiError as exc:
            if exc.status == 404:
                return False
            log.error(
                "Could not add DisruptionTarget condition due to preemption",
                extra={"victim": victim.key, "status": exc.status, "error": exc.message},
            )
            raise PreemptionCallError(exc.message) from exc
        self.stats.extra["disruption_targets_patched"] = self.stats.extra.get("disruption_targets_patched", 0) + 1
        return True

    async def delete_preempted_pod(self, victim: PodInfo) -> bool:
        """DELETE the victim with its default grace period (never the Eviction API: PDBs were weighed already),
        on the victim's uid only, so a pod recreated under the same name is never hit; False when gone."""
        body: JSON = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if victim.uid and "/" not in victim.uid:
            body["preconditions"] = {"uid": victim.uid}
        try:
            await self.client.request("DELETE", pod_path(victim.namespace, victim.name), body=body)
        except ApiError as exc:
            if exc.status in (404, 409):  # gone, or a different pod by now
                return False
            log.error("Tried to preempted pod", extra={"pod": victim.key, "status": exc.status, "error": exc.message})
            raise PreemptionCallError(exc.message) from exc
        self.stats.extra["victims_deleted"] = self.stats.extra.get("victims_deleted", 0) + 1
        return True

    def record_preempted(self, victim: PodInfo, preemptor: PodInfo, note: str) -> None:
        """Normal `Preempted` event on the victim, reported by the preemptor's scheduler.

        No `related`: upstream passes its preemptor wrapper type, which the recorder cannot reference, so
        kube-scheduler v1.37's event carries none (shown by tests/e2e/test_preemption_parity.py).
        """
        self._event(victim, "Normal", EVENT_PREEMPTED, ACTION_PREEMPTING, note, controller=preemptor.scheduler_name)

    async def clear_nominated_node_name(self, pod: PodInfo) -> None:
        """PATCH status.nominatedNodeName away (a lower-priority nominee of a preemption's node)."""
        try:
            await self.client.request(
                "PATCH",
                pod_path(pod.namespace, pod.name, "status"),
                body={"status": {"nominatedNodeName": None}},
                content_type=STRATEGIC_MERGE,
            )
        except ApiError as exc:
            if exc.status == 404:
                return
            raise PreemptionCallError(exc.message) from exc

    def _event(
        self,
        pod: PodInfo,
        type_: str,
        reason: str,
        action: str,
        note: str,
        *,
        controller: str | None = None,
    ) -> None:
        controller = controller or pod.scheduler_name
        instance = f"{controller}-{self.hostname}"
        regarding = pod_reference(pod)
        key = (
            type_,
            action,
            reason,
            controller,
            instance,
            pod.namespace,
            pod.name,
            str(regarding.get("uid", "")),
            str(regarding.get("resourceVersion", "")),
        )
        now = self._clock()
        entry = self._event_cache.get(key)
        if entry is not None and now - entry.last_observed <= EVENT_SERIES_FINISH:
            entry.count += 1
            entry.last_observed = now
            self.stats.events_coalesced += 1
            if entry.count == 2:  # client-go writes the series once, then only on its refresh/finish ticks
                self._enqueue_event(self._series_write(entry))
            return
        wall = datetime.now(UTC)
        name = f"{pod.name}.{time.time_ns():x}"  # util.GenerateEventName
        if len(name) > 253:
            name = f"{os.urandom(8).hex()}.{time.time_ns():x}"
        body: JSON = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": pod.namespace},
            "eventTime": micro_time(wall),
            "reportingController": controller,
            "reportingInstance": instance,
            "action": action,
            "reason": reason,
            "regarding": regarding,
            "note": note,
            "type": type_,
        }
        self._event_cache[key] = _EventEntry(pod.namespace, name, body, now, now, uid=pod.uid)
        self._event_keys.setdefault(pod.uid, set()).add(key)
        self._enqueue_event(_Write("event", pod.namespace, name, body, pod.key, pod.uid))

    @staticmethod
    def _series_write(entry: _EventEntry) -> _Write:
        entry.written_count = entry.count
        body = {"series": {"count": entry.count, "lastObservedTime": micro_time(datetime.now(UTC))}}
        return _Write("series", entry.namespace, entry.name, body, f"{entry.namespace}/{entry.name}")

    def _condition(self, pod: PodInfo, reason: str, message: str, nominated_node_name: str | None = None) -> None:
        last = self._conditions.get(pod.uid)
        if last is not None and last[:3] == ("False", reason, message) and nominated_node_name is None:
            self.stats.status_skipped += 1
            return
        # UpdatePodCondition keeps lastTransitionTime when the status itself did not change.
        transition = last[3] if last is not None and last[0] == "False" else rfc3339(datetime.now(UTC))
        self._conditions[pod.uid] = ("False", reason, message, transition)
        self._conditions.move_to_end(pod.uid)
        while len(self._conditions) > self._max_conditions:
            self._conditions.popitem(last=False)
        condition: JSON = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastTransitionTime": transition,
        }
        if pod.generation:
            condition["observedGeneration"] = pod.generation  # PodObservedGenerationTracking is GA
        status: JSON = {"conditions": [condition]}  # strategic merge: conditions merge by type
        if nominated_node_name is None:
            queued = self._status.get(pod.uid)
            if queued is not None and "nominatedNodeName" in queued.body["status"]:
                # The newest patch replaces a queued one: keep the nomination the queued one carried.
                status["nominatedNodeName"] = queued.body["status"]["nominatedNodeName"]
        else:
            status["nominatedNodeName"] = nominated_node_name or None  # null removes it
        body: JSON = {"status": status}
        self._status[pod.uid] = _Write("status", pod.namespace, pod.name, body, pod.key, pod.uid)
        self._status.move_to_end(pod.uid)
        self._wake()

    def _enqueue_event(self, write: _Write) -> None:
        self._events.append(write)
        while len(self._events) > self._max_queued_events:
            dropped = self._events.popleft()
            self.stats.dropped_events += 1
            if self.stats.dropped_events in (1, 10, 100) or self.stats.dropped_events % 1000 == 0:
                log.warning(
                    "event queue full; dropping the oldest events",
                    extra={"dropped_total": self.stats.dropped_events, "pod": dropped.pod},
                )
        self.stats.queue_high_water = max(self.stats.queue_high_water, self.queued())
        self._wake()

    def _wake(self) -> None:
        while self._sleeping:
            waiter = self._sleeping.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    # ------------------------------------------------------------------ workers

    def _next(self) -> _Write | None:
        # Conditions first: autoscalers read PodScheduled, people read events. One patch per pod at a time, so
        # an older report of a pod can never land after a newer one.
        for uid in self._status:
            if uid not in self._status_in_flight:
                return self._status.pop(uid)
        if self._events:
            return self._events.popleft()
        return None

    async def _worker(self, index: int) -> None:
        while True:
            write = self._next()
            if write is None:
                if not self._in_flight:
                    self._idle.set()
                waiter = asyncio.get_running_loop().create_future()
                self._sleeping.append(waiter)
                try:
                    await waiter
                finally:
                    if not waiter.done():
                        waiter.cancel()
                continue
            self._in_flight += 1
            settled = None
            if write.kind == "status":
                settled = self._status_in_flight[write.uid] = asyncio.Event()
            try:
                await self._perform(write)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug in one write must not kill the worker
                self.stats.write_errors += 1
                log.exception("unexpected error writing to the API", extra={"pod": write.pod, "kind": write.kind})
            finally:
                self._in_flight -= 1
                if settled is not None:
                    settled.set()
                    if self._status_in_flight.get(write.uid) is settled:
                        del self._status_in_flight[write.uid]
                    self._wake()  # a patch of the same pod may be waiting for this one
                if not self.queued() and not self._in_flight:
                    self._idle.set()

    async def _perform(self, write: _Write) -> None:
        try:
            if write.kind == "status":
                pod = await self.client.request(
                    "PATCH",
                    pod_path(write.namespace, write.name, "status"),
                    body=write.body,
                    content_type=STRATEGIC_MERGE,
                )
                self.stats.status_patched += 1
                if isinstance(pod, dict) and (pod.get("spec") or {}).get("nodeName"):
                    await self._restore_scheduled(write)
            elif write.kind == "event":
                await self.client.request(  # the answer echoes the event back: not decoded
                    "POST",
                    events_path(write.namespace),
                    body=write.body,
                    limiter=self.client.event_limiter,
                    decode=False,
                    lean=True,
                )
                self.stats.events_written += 1
            else:
                await self._patch_series(write)
        except ApiError as exc:
            if write.kind != "status" and exc.status == 409:
                # AlreadyExists: a retried POST whose first attempt landed (the reply was lost). The event exists,
                # which is all we wanted.
                self.stats.events_written += 1
                return
            if write.kind == "status" and exc.status in (404, 409):
                self._conditions.pop(write.uid, None)  # the pod is gone or was recreated: nothing to report
                log.info("pod gone before its condition was written", extra={"pod": write.pod})
                return
            self.stats.write_errors += 1
            if write.kind == "status":
                self._conditions.pop(write.uid, None)  # let the next failure try again
            log.error(
                "failed to write to the API",
                extra={"kind": write.kind, "pod": write.pod, "status": exc.status, "error": exc.message},
            )

    async def _restore_scheduled(self, write: _Write) -> None:
        """Our PodScheduled=False landed on a pod already bound (its binding, possibly ours with a lost reply,
        came first): write back what the binding wrote (True, no reason, no message), or the bound pod would
        read as unschedulable for good. The PATCH answer is the pod right after our write, so this is exact."""
        self._conditions.pop(write.uid, None)
        condition: JSON = {
            "type": "PodScheduled",
            "status": "True",
            "reason": None,  # strategic merge: null removes the key
            "message": None,
            "lastTransitionTime": rfc3339(datetime.now(UTC)),
        }
        await self.client.request(
            "PATCH",
            pod_path(write.namespace, write.name, "status"),
            body={"status": {"conditions": [condition]}},
            content_type=STRATEGIC_MERGE,
        )
        self.stats.status_restored += 1
        log.info("restored PodScheduled=True: our failure report landed on a bound pod", extra={"pod": write.pod})

    async def _patch_series(self, write: _Write) -> None:
        path = events_path(write.namespace, write.name)
        try:
            await self.client.request(
                "PATCH", path, body=write.body, content_type=STRATEGIC_MERGE, limiter=self.client.event_limiter
            )
            self.stats.series_patched += 1
        except ApiError as exc:
            if exc.status != 404:
                raise
            entry = next((e for e in self._event_cache.values() if e.name == write.name), None)
            if entry is None:
                return
            body = dict(entry.body)
            body["series"] = write.body["series"]
            await self.client.request(
                "POST", events_path(write.namespace), body=body, limiter=self.client.event_limiter
            )
            self.stats.events_written += 1

    async def _series_maintenance(self, period: float = 60.0) -> None:
        """client-go's refreshExistingEventSeries/finishSeries: write final counts and forget old entries."""
        while True:
            await asyncio.sleep(period)
            self.maintain_series()

    def maintain_series(self) -> None:
        """Write series counts that changed and are finished or due a refresh; forget finished entries."""
        now = self._clock()
        for key, entry in list(self._event_cache.items()):
            finished = now - entry.last_observed > EVENT_SERIES_FINISH
            due = now - entry.first_seen > EVENT_SERIES_REFRESH
            if entry.count > 1 and entry.count != entry.written_count and (finished or due):
                self._enqueue_event(self._series_write(entry))
            if due:
                entry.first_seen = now
            if finished:
                del self._event_cache[key]
                keys = self._event_keys.get(entry.uid)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._event_keys[entry.uid]
