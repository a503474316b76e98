"""The scheduler: routes watch events into the cache and queue, runs scheduling cycles and binding cycles.

`schedule_one` is the synchronous scheduling cycle (snapshot, algorithm, assume, reserve, permit); it returns
the binding cycle as a coroutine that runs concurrently, bounded by `max_in_flight_binds`. Both adapters
drive this same class: the cluster adapter from kopf watch events, the in-memory one from a file.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from scheduler.backend.cache.cache import Cache
from scheduler.backend.cache.snapshot import Snapshot
from scheduler.backend.queue.scheduling_queue import QueuedPodInfo, SchedulingQueue
from scheduler.core.api import (
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    AlreadyBoundError,
    BindError,
    ClusterAPI,
    PodGoneError,
)
from scheduler.core.schedule_one import SchedulingAlgorithm, SchedulingError
from scheduler.framework.fit_error import Diagnosis, FitError, NoNodesAvailableError
from scheduler.framework.interface import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    CycleState,
)
from scheduler.framework.observer import Observer
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status, error_status
from scheduler.framework.types import NodeRecord, ParseError, PodInfo, parse_node, parse_pod
from scheduler.logging_setup import V2

log = logging.getLogger("pyscheduler.scheduler")

EVENT_NODE_ADD = ClusterEvent(NODE, ActionType.ADD, "NodeAdd")
EVENT_ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
EVENT_ASSIGNED_POD_UPDATE = ClusterEvent(ASSIGNED_POD, ActionType.UPDATE, "AssignedPodUpdate")
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
TERMINAL_PHASES = ("Succeeded", "Failed")
LEFTOVER_FLUSH_PERIOD = 30.0
# Share of scheduling cycles whose plugins are timed one by one (upstream pluginMetricsSamplePercent).
PLUGIN_METRICS_SAMPLE_RATE = 0.1


class _Binder:
    """Turns the adapter's bind exceptions into the Status the DefaultBinder returns."""

    def __init__(self, api: ClusterAPI) -> None:
        self._api = api

    async def bind(self, pod: PodInfo, node_name: str) -> Status | None:
        try:
            await self._api.bind(pod, node_name)
        except BindError as exc:
            return Status(Code.ERROR, (str(exc) or type(exc).__name__,), "DefaultBinder", exc)
        return None


class SchedulerHandle:
    """The Handle plugins receive: the scheduler's current snapshot and its binder."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def snapshot(self) -> Snapshot:
        return self._scheduler.snapshot

    @property
    def binder(self) -> _Binder:
        return self._scheduler.binder


class Scheduler:
    """One scheduler process: cache, queue, profiles (one Framework per schedulerName) and the loop."""

    def __init__(
        self,
        api: ClusterAPI,
        profiles: Mapping[str, Framework] | None = None,
        *,
        percentage_of_nodes_to_score: int = 0,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        seed: int | None = None,
        max_in_flight_binds: int = 256,
        observer: Observer | None = None,
    ) -> None:
        self.api = api
        self.clock = clock
        self.observer = observer or Observer()
        self.cache = Cache()
        self.snapshot = Snapshot()
        self.algorithm = SchedulingAlgorithm(percentage_of_nodes_to_score, seed)
        self.binder = _Binder(api)
        self.profiles: dict[str, Framework] = dict(profiles or {})
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self.queue: SchedulingQueue = self._new_queue()
        self._pending: dict[str, PodInfo] = {}  # latest view of unassigned pods of our profiles
        self.last_failure: dict[str, tuple[str, str]] = {}  # uid -> (reason, message)
        self.parse_failures: dict[str, str] = {}  # uid -> message, for pods we cannot understand
        self._plugin_events: dict[str, list[ClusterEvent]] = {}
        self._bind_slots = asyncio.Semaphore(max_in_flight_binds)
        self._bind_tasks: set[asyncio.Task[None]] = set()
        self._wake: asyncio.Event | None = None
        self.attempts = 0
        self.bound_count = 0
        self.last_loop_activity = clock()

    def _new_queue(self) -> SchedulingQueue:
        sort = next((f.queue_sort for f in self.profiles.values() if f.queue_sort is not None), None)
        key = sort.sort_key if sort is not None else (lambda prio, ts, seq: (-prio, ts, seq))
        pre_enqueue = self._pre_enqueue if self.profiles else None
        return SchedulingQueue(
            key,
            self.clock,
            initial_backoff=self._initial_backoff,
            max_backoff=self._max_backoff,
            pre_enqueue=pre_enqueue,
        )

    def set_profiles(self, profiles: Mapping[str, Framework]) -> None:
        """Install the profiles (built after the scheduler exists, since plugins need it as their Handle)."""
        self.profiles = dict(profiles)
        self._plugin_events = {}
        for fwk in self.profiles.values():
            self._plugin_events.update(fwk.events_to_register())
        self.queue = self._new_queue()

    # ------------------------------------------------------------------ Handle for plugins

    def handle(self) -> SchedulerHandle:
        return SchedulerHandle(self)

    def _pre_enqueue(self, pod: PodInfo) -> Status | None:
        fwk = self.profiles.get(pod.scheduler_name)
        return fwk.run_pre_enqueue(pod) if fwk is not None else None

    # ------------------------------------------------------------------ events in

    def _notify(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _move(self, event: ClusterEvent) -> None:
        self.queue.move_all_to_active_or_backoff(event, self._plugin_events)
        self._notify()

    def on_node_event(self, kind: str | None, obj: Mapping[str, Any]) -> None:
        """Apply a node watch event (kind None is an object from the initial LIST)."""
        name = str((obj.get("metadata") or {}).get("name") or "")
        if kind == DELETED:
            if name:
                self.cache.remove_node(name)
            return
        try:
            record = parse_node(obj)
        except ParseError as exc:
            log.error("cannot parse node", extra={"node": name, "error": str(exc)})
            return
        info = self.cache.get_node(record.name)
        old = info.node if info is not None else None
        if old is None:
            self.cache.add_node(record)
            self._move(EVENT_NODE_ADD)
            return
        action = self.cache.update_node(old, record)
        if action:
            self._move(ClusterEvent(NODE, action, "NodeUpdate"))

    def on_pod_event(self, kind: str | None, obj: Mapping[str, Any]) -> None:
        """Apply a pod watch event: assigned pods feed the cache, our pending pods feed the queue."""
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
        if kind == DELETED:
            self._forget_pod(uid)
            return
        try:
            pod = parse_pod(obj)
        except ParseError as exc:
            self._unparsable_pod(uid, obj, exc)
            return
        if pod.phase in TERMINAL_PHASES:
            self._forget_pod(uid)
            return
        if pod.node_name:
            self._assigned_pod(pod)
        elif pod.scheduler_name in self.profiles:
            self._pending_pod(pod)

    def _forget_pod(self, uid: str) -> None:
        self.queue.delete(uid)
        self._pending.pop(uid, None)
        if self.cache.get_pod(uid) is not None:
            self.cache.remove_pod(uid)
            self._move(EVENT_ASSIGNED_POD_DELETE)

    def _assigned_pod(self, pod: PodInfo) -> None:
        if pod.uid in self._pending:
            del self._pending[pod.uid]
            self.queue.delete(pod.uid)
        old = self.cache.get_pod(pod.uid)
        if old is None or self.cache.is_assumed(pod.uid):
            self.cache.add_pod(pod)
            if old is None:
                self._move(EVENT_ASSIGNED_POD_ADD)
            return
        action = self.cache.update_pod(old, pod)
        if action:
            self._move(ClusterEvent(ASSIGNED_POD, action, "AssignedPodUpdate"))

    def _pending_pod(self, pod: PodInfo) -> None:
        if self.cache.is_assumed(pod.uid):
            return  # bound by us a moment ago; the watch has not caught up yet
        self.parse_failures.pop(pod.uid, None)
        if pod.terminating:
            self.queue.delete(pod.uid)
            self._pending.pop(pod.uid, None)
            return
        old = self._pending.get(pod.uid)
        self._pending[pod.uid] = pod
        if old is None or pod.uid not in self.queue:
            self.queue.add(pod)
        else:
            self.queue.update(old, pod)
        self._notify()

    def _unparsable_pod(self, uid: str, obj: Mapping[str, Any], exc: ParseError) -> None:
        """A pod we cannot understand gets a FailedScheduling event saying why; everyone else goes on."""
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        if not isinstance(spec, dict):
            spec = {}
        log.warning("cannot parse pod", extra={"pod": f"{meta.get('namespace')}/{meta.get('name')}", "error": str(exc)})
        if spec.get("nodeName") or spec.get("schedulerName", "default-scheduler") not in self.profiles:
            return
        message = f"failed to parse pod: {exc}"
        if self.parse_failures.get(uid) == message:
            return
        self.parse_failures[uid] = message
        self._pending.pop(uid, None)
        self.queue.delete(uid)
        stub = PodInfo(
            uid=uid,
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name") or ""),
            scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
        )
        self.last_failure[uid] = (REASON_SCHEDULER_ERROR, message)
        self.api.record_failure(stub, REASON_SCHEDULER_ERROR, message)

    def pending_pods(self) -> list[PodInfo]:
        """The unassigned pods of our profiles this scheduler tracks (queued, in flight or parked)."""
        return list(self._pending.values())

    def resync(self, nodes: list[Mapping[str, Any]], pods: list[Mapping[str, Any]]) -> dict[str, int]:
        """Converge the cache and queue to a fresh LIST (after a watch gap); returns repaired counts."""
        node_records: list[NodeRecord] = []
        for obj in nodes:
            try:
                node_records.append(parse_node(obj))
            except ParseError:
                continue
        assigned: list[PodInfo] = []
        pending_uids: set[str] = set()
        for obj in pods:
            try:
                pod = parse_pod(obj)
            except ParseError:
                continue
            if pod.phase in TERMINAL_PHASES:
                continue
            if pod.node_name:
                assigned.append(pod)
            elif pod.scheduler_name in self.profiles:
                pending_uids.add(pod.uid)
                if pod.uid not in self._pending:
                    self._pending_pod(pod)
        drift = self.cache.reconcile(node_records, assigned)
        repaired = {kind: len(names) for kind, names in drift.to_dict().items()}
        for uid in [u for u in self._pending if u not in pending_uids]:
            self._forget_pod(uid)
            repaired["pending_pods_removed"] = repaired.get("pending_pods_removed", 0) + 1
        for kind, count in repaired.items():
            if count:
                self.observer.cache_drift(kind, count)
        if any(repaired.values()):
            log.warning("cache drift repaired", extra={"drift": repaired})
            self._move(ClusterEvent(NODE, ActionType.ALL, "Resync"))
        return repaired

    # ------------------------------------------------------------------ scheduling cycle

    def schedule_one(self, qpi: QueuedPodInfo, cycle: int | None = None) -> Coroutine[Any, Any, None] | None:
        """Run one scheduling cycle; return the binding cycle to run concurrently, if any.

        `cycle` is the queue's scheduling cycle read right after this pod was popped: a move request after
        it sends the pod to backoff instead of the unschedulable pool when it fails.
        """
        pod = qpi.pod
        if cycle is None:
            cycle = self.queue.scheduling_cycle
        self.attempts += 1
        current = self._pending.get(pod.uid)
        fwk = self.profiles.get(pod.scheduler_name)
        if current is None or fwk is None or current.terminating or self.cache.is_assumed(pod.uid):
            self.queue.done(pod.uid)
            return None
        start = self.clock()
        state = CycleState()
        state.record_plugin_metrics = random.random() < PLUGIN_METRICS_SAMPLE_RATE
        try:
            self.cache.update_snapshot(self.snapshot)
            result = self.algorithm.schedule_pod(fwk, state, pod, self.snapshot)
        except NoNodesAvailableError as exc:
            self._failure(fwk, qpi, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(exc),)), None, start, cycle)
            return None
        except FitError as fit:
            if fwk.has_post_filter_plugins():
                _, pf_status = fwk.run_post_filter(state, pod, fit.diagnosis.node_to_status)
                fit.diagnosis.post_filter_msg = pf_status.message()
            self._failure(fwk, qpi, Status(Code.UNSCHEDULABLE, (str(fit),)), fit.diagnosis, start, cycle)
            return None
        except SchedulingError as exc:
            self._failure(fwk, qpi, exc.status, None, start, cycle)
            return None
        except Exception as exc:  # a bug must cost one pod one attempt, not the loop
            log.exception("scheduling cycle failed", extra={"pod": pod.key})
            self._failure(fwk, qpi, error_status(exc), None, start, cycle)
            return None
        finally:
            self.observer.algorithm(self.clock() - start)

        host = result.suggested_host
        assumed = pod.with_node(host)
        self.cache.assume_pod(pod, host)
        status = fwk.run_reserve(state, assumed, host)
        if status is None:
            status = fwk.run_permit(state, assumed, host)
            if status is not None and status.code == Code.WAIT:
                status = None
        if status is not None:
            fwk.run_unreserve(state, assumed, host)
            self.cache.forget_pod(pod.uid)
            self._failure(fwk, qpi, *self._single_node_failure(status, host), start, cycle)
            return None
        return self._binding_cycle(
            fwk, state, qpi, assumed, host, start, cycle, result.evaluated_nodes, result.feasible_nodes
        )

    @staticmethod
    def _single_node_failure(status: Status, host: str) -> tuple[Status, Diagnosis | None]:
        """Reserve/Permit rejections read like a FitError over the one chosen node."""
        if not status.is_rejected():
            return status, None
        diagnosis = Diagnosis(node_to_status={host: status})
        diagnosis.add_plugin_status(status)
        return Status(status.code, (str(FitError(1, diagnosis)),), status.plugin), diagnosis

    async def _binding_cycle(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        assumed: PodInfo,
        host: str,
        start: float,
        cycle: int,
        evaluated_nodes: int = 0,
        feasible_nodes: int = 0,
    ) -> None:
        uid = assumed.uid
        status: Status | None
        diagnosis: Diagnosis | None = None
        try:
            status = await fwk.wait_on_permit(assumed)
            if status is not None:
                status, diagnosis = self._single_node_failure(status, host)
            else:
                status = await fwk.run_pre_bind(state, assumed, host)
                if status is None:
                    bind_start = self.clock()
                    status = await fwk.run_bind(state, assumed, host)
                    self.observer.binding(self.clock() - bind_start, status is None)
        except asyncio.CancelledError:
            fwk.run_unreserve(state, assumed, host)
            self.cache.forget_pod(uid)
            self.queue.done(uid)
            raise
        except Exception as exc:
            log.exception("binding cycle failed", extra={"pod": assumed.key, "node": host})
            status = error_status(exc)
        if status is None:
            self.bound_count += 1
            self.cache.finish_binding(uid)
            self._pending.pop(uid, None)
            self.last_failure.pop(uid, None)
            now = self.clock()
            self.observer.attempt("scheduled", fwk.profile_name, now - start)
            self.observer.pod_scheduled(qpi.attempts, now - qpi.initial_attempt_timestamp)
            self.api.record_scheduled(assumed, host)
            fwk.run_post_bind(state, assumed, host)
            self.queue.done(uid)
            if log.isEnabledFor(V2):
                log.log(
                    V2,
                    "Successfully bound pod to node",
                    extra={
                        "pod": assumed.key,
                        "node": host,
                        "evaluatedNodes": evaluated_nodes,
                        "feasibleNodes": feasible_nodes,
                    },
                )
            return
        fwk.run_unreserve(state, assumed, host)
        self.cache.forget_pod(uid)
        if isinstance(status.error, AlreadyBoundError | PodGoneError):
            log.info("pod left the queue during binding", extra={"pod": assumed.key, "error": status.message()})
            self._pending.pop(uid, None)
            self.queue.done(uid)
            return
        self._move(EVENT_ASSIGNED_POD_DELETE)
        self._failure(fwk, qpi, status, diagnosis, start, cycle)

    def _failure(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        status: Status,
        diagnosis: Diagnosis | None,
        start: float,
        cycle: int,
    ) -> None:
        """Requeue the pod, then report the failure the way kube-scheduler does (event + condition)."""
        rejected = status.is_rejected()
        reason = REASON_UNSCHEDULABLE if rejected else REASON_SCHEDULER_ERROR
        self.observer.attempt("unschedulable" if rejected else "error", fwk.profile_name, self.clock() - start)
        qpi.unschedulable_plugins = set(diagnosis.unschedulable_plugins) if diagnosis else set()
        qpi.pending_plugins = set(diagnosis.pending_plugins) if diagnosis else set()
        message = status.message()
        current = self._pending.get(qpi.pod.uid)
        if current is None:
            self.queue.done(qpi.pod.uid)
            return
        qpi.pod = current
        self.queue.add_unschedulable_if_not_present(qpi, cycle)
        self._notify()
        log.info(
            "unable to schedule pod",
            extra={"pod": current.key, "reason": reason, "error": message},
        )
        self.last_failure[current.uid] = (reason, message)
        self.api.record_failure(current, reason, message)

    # ------------------------------------------------------------------ loops

    def _spawn_binding(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._bind_tasks.add(task)

        def finished(t: asyncio.Task[None]) -> None:
            self._bind_tasks.discard(t)
            self._bind_slots.release()
            self._notify()

        task.add_done_callback(finished)

    async def _schedule_next(self) -> bool:
        """Pop one pod and run its cycle; False when the queue had nothing ready."""
        self.queue.flush_backoff_completed()
        qpi = self.queue.pop()
        if qpi is None:
            return False
        cycle = self.queue.scheduling_cycle
        await self._bind_slots.acquire()
        try:
            coro = self.schedule_one(qpi, cycle)
        except Exception:  # schedule_one handles its own errors; this is the last line of defence
            log.exception("unexpected error in scheduling cycle", extra={"pod": qpi.pod.key})
            self.queue.done(qpi.pod.uid)
            coro = None
        if coro is None:
            self._bind_slots.release()
        else:
            self._spawn_binding(coro)
        return True

    async def run(self, stop: asyncio.Event) -> None:
        """Schedule until stop is set; sleeps until the next backoff expiry when nothing is ready."""
        self._wake = asyncio.Event()
        last_leftover = self.clock()
        while not stop.is_set():
            self.last_loop_activity = self.clock()
            now = self.clock()
            if now - last_leftover >= LEFTOVER_FLUSH_PERIOD:
                self.queue.flush_unschedulable_leftover()
                last_leftover = now
            if await self._schedule_next():
                await asyncio.sleep(0)  # let watch events and bindings run between cycles
                continue
            timeout = LEFTOVER_FLUSH_PERIOD - (now - last_leftover)
            wakeup = self.queue.next_wakeup()
            if wakeup is not None:
                timeout = min(timeout, max(wakeup - now, 0.0))
            timeout = max(min(timeout, 1.0), 0.0)
            self._wake.clear()
            wake = asyncio.ensure_future(self._wake.wait())
            stopped = asyncio.ensure_future(stop.wait())
            try:
                await asyncio.wait({wake, stopped}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            finally:
                wake.cancel()
                stopped.cancel()
        await self.drain()

    async def drain(self) -> None:
        """Wait for in-flight binding cycles to finish."""
        while self._bind_tasks:
            await asyncio.gather(*list(self._bind_tasks), return_exceptions=True)

    async def run_until_idle(self, advance: Callable[[float], None] | None = None, max_idle_rounds: int = 20) -> None:
        """Schedule until no queued pod can make progress (the simulator's step).

        Rejected pods wait in the unschedulable queue for a cluster event, as in a live cluster. Pods in
        backoff are retried by advancing the (fake) clock through `advance`; after `max_idle_rounds`
        advances without a single successful binding the remaining pods are left pending, so pods that
        fail with an Error every time cannot keep the loop alive.
        """
        idle_rounds = 0
        last_bound = self.bound_count
        while True:
            if await self._schedule_next():
                await self.drain()
                continue
            await self.drain()
            if self.queue.pending().get("active", 0):
                continue
            wakeup = self.queue.next_wakeup()
            if wakeup is None or advance is None or idle_rounds >= max_idle_rounds:
                return
            idle_rounds = 0 if self.bound_count != last_bound else idle_rounds + 1
            last_bound = self.bound_count
            advance(wakeup)
