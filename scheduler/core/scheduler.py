"""The scheduler: its state (cache, queue, profiles, object store) and the loops that drive it.

How a pod flows: a watch event reaches `self.events` (event_handlers.py, the intake story: parse, then the
cache, the queue or the object store); `run` pops pods and runs `schedule_one.schedule_one` (the scheduling
cycle, synchronous), whose binding cycle then runs as a concurrent task bounded by `max_in_flight_binds`.
Both adapters drive this same class: the cluster adapter from its watches, the in-memory one from a file
(`run_until_idle`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any

from scheduler.backend.cache.cache import Cache
from scheduler.backend.cache.objects import ClusterObjects
from scheduler.backend.queue.nominator import Nominator
from scheduler.backend.queue.scheduling_queue import SchedulingQueue
from scheduler.core.api import BindError, ClusterAPI
from scheduler.core.event_handlers import EVENT_ASSIGNED_POD_DELETE, EventHandlers
from scheduler.core.schedule_one import Attempt, SchedulingAlgorithm, schedule_one
from scheduler.core.unsupported import Finding
from scheduler.framework.interface import ClusterEvent, ClusterEventWithHint, QueueSortPlugin
from scheduler.framework.objects import ObjectLister
from scheduler.framework.observer import Observer
from scheduler.framework.runtime import Framework, PluginErrorLog, WaitingPod
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo, QueuedPodInfo
from scheduler.plugins.dynamic_resources.tracker import DraManager

log = logging.getLogger("pyscheduler.scheduler")

LEFTOVER_FLUSH_PERIOD = 30.0
SPIN_BUDGET = 100  # run_until_idle: attempts per queued pod, without a binding, before it gives up


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
    """The Handle plugins receive: the current snapshot, the binder and the other cluster objects; for
    preemption also the profiles, the nominator, the latest pods, background tasks and the writes
    (`scheduler.framework.preemption.PreemptionHandle`)."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def snapshot(self) -> Snapshot:
        return self._scheduler.snapshot

    @property
    def binder(self) -> _Binder:
        return self._scheduler.binder

    @property
    def objects(self) -> ObjectLister:
        return self._scheduler.objects

    def framework_for(self, scheduler_name: str) -> Framework | None:
        return self._scheduler.profiles.get(scheduler_name)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return self._scheduler.nominator.nominated_pods_for_node(node_name)

    def current_pod(self, uid: str) -> PodInfo | None:
        s = self._scheduler
        return s.pending.get(uid) or s.cache.get_pod(uid)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        for fwk in self._scheduler.profiles.values():
            waiting = fwk.waiting_pods.get(uid)
            if waiting is not None:
                return waiting
        return None

    def iterate_over_waiting_pods(self) -> list[WaitingPod]:
        return [w for fwk in self._scheduler.profiles.values() for w in fwk.waiting_pods.values()]

    def reject_waiting_pod(self, uid: str) -> bool:
        waiting = self.get_waiting_pod(uid)
        return waiting is not None and waiting.reject("", "removed")

    @property
    def preemption_api(self) -> ClusterAPI:
        return self._scheduler.api

    @property
    def observer(self) -> Observer:
        return self._scheduler.observer

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        self._scheduler.spawn(coro, name)

    def activate(self, uids: Iterable[str]) -> None:
        self._scheduler.activate(uids)

    def move(self, event: ClusterEvent, old: Any = None, new: Any = None) -> None:
        """A plugin's own state change that is a cluster event for the queue (DynamicResources releasing an
        allocation it held in flight): move the pods it may help, as for an informer event."""
        self._scheduler.move(event, old, new)

    @property
    def seed(self) -> int | None:
        return self._scheduler.seed

    @property
    def volume_writer(self) -> ClusterAPI:
        return self._scheduler.api

    @property
    def claim_writer(self) -> ClusterAPI:
        return self._scheduler.api

    @property
    def dra_manager(self) -> DraManager:
        return self._scheduler.dra_manager

    def pod_exists(self, uid: str) -> bool:
        s = self._scheduler
        return uid in s.pending or s.cache.get_pod(uid) is not None


class ExplainHandle:
    """A Handle over private copies, for an explanation computed off the scheduling loop (a worker thread).

    It holds the snapshot being explained, a copy of the object store and of the nominations, and the
    explaining frameworks (fresh plugin instances, see Framework.rebuild): nothing the scheduling loop mutates
    is reachable from it, so the loop and the explanation never share a dict. Writes are refused: an
    explanation evaluates (preemption included, as a dry run) and never binds, evicts or spawns.
    """

    def __init__(self, scheduler: Scheduler, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._objects = scheduler.objects.copy()
        nominator = scheduler.nominator
        self._nominated = {node: list(nominator.nominated_pods_for_node(node)) for node in nominator.nodes()}
        self._pods = {p.uid: p for info in snapshot.node_info_list for p in info.pods.values()}
        self._pods.update(scheduler.pending)
        self._seed = scheduler.seed
        self._observer = Observer()
        # The scheduler's allocations in flight and assumed claims count in the explanation too.
        self._dra_manager = scheduler.dra_manager.copy_onto(self._objects)
        self.frameworks: dict[str, Framework] = {}

    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def binder(self) -> _Binder:
        raise RuntimeError("an explanation never binds")

    @property
    def objects(self) -> ObjectLister:
        return self._objects

    def framework_for(self, scheduler_name: str) -> Framework | None:
        return self.frameworks.get(scheduler_name)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self._nominated.get(node_name, ()))

    def current_pod(self, uid: str) -> PodInfo | None:
        return self._pods.get(uid)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return None

    def iterate_over_waiting_pods(self) -> list[WaitingPod]:
        return []

    def reject_waiting_pod(self, uid: str) -> bool:
        return False

    @property
    def preemption_api(self) -> ClusterAPI:
        raise RuntimeError("an explanation never preempts")

    @property
    def observer(self) -> Observer:
        return self._observer

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        coro.close()
        raise RuntimeError("an explanation never starts tasks")

    def activate(self, uids: Iterable[str]) -> None:
        return None

    def move(self, event: ClusterEvent, old: Any = None, new: Any = None) -> None:
        return None

    @property
    def seed(self) -> int | None:
        return self._seed

    @property
    def volume_writer(self) -> ClusterAPI:
        raise RuntimeError("an explanation never writes volumes")

    @property
    def claim_writer(self) -> ClusterAPI:
        raise RuntimeError("an explanation never writes ResourceClaims")

    @property
    def dra_manager(self) -> DraManager:
        return self._dra_manager

    def pod_exists(self, uid: str) -> bool:
        return uid in self._pods


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
        self.seed = seed
        self.observer = observer or Observer()
        self.cache = Cache()
        self.objects = ClusterObjects()
        # DynamicResources' claim tracking, shared by every profile (upstream's SharedDRAManager).
        self.dra_manager = DraManager(self.objects)
        self.snapshot = Snapshot()
        self.algorithm = SchedulingAlgorithm(percentage_of_nodes_to_score, seed)
        self.binder = _Binder(api)
        self.profiles: dict[str, Framework] = dict(profiles or {})
        # Tracebacks of plugin exceptions, shared by the profiles: at most one per plugin and point a minute.
        self.plugin_errors = PluginErrorLog()
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self.queue: SchedulingQueue = self._new_queue()
        self.events = EventHandlers(self)
        # Per-pod state, every map cleaned when the pod is bound, deleted or finishes (forget_pod_state):
        self.pending: dict[str, PodInfo] = {}  # latest view of unassigned pods of our profiles in the queue
        self.last_failure: dict[str, tuple[str, str]] = {}  # uid -> (reason, message) of the last failure
        self.parse_failures: dict[str, str] = {}  # uid -> message, for pods we cannot understand
        self.unsupported: dict[str, tuple[PodInfo, list[Finding]]] = {}  # pods refused by the fail-closed guard
        # Attempts whose bind got no answer (it may have landed): if the watch shows the pod bound on that
        # attempt's node before another attempt binds it, the binding is reported as ours.
        self.unconfirmed_binds: dict[str, Attempt] = {}
        # Binding cycles finding out whether a bind with no answer landed (schedule_one.resolve_unanswered_bind),
        # woken by the pod's watch events and by stop; `stopping` tells them to give up.
        self.resolving: dict[str, asyncio.Event] = {}
        self.stopping = False
        self._plugin_events: dict[str, Sequence[ClusterEvent | ClusterEventWithHint]] = {}
        self._bind_slots = asyncio.Semaphore(max_in_flight_binds)
        self._bind_tasks: dict[asyncio.Task[None], str] = {}  # binding cycle -> uid of its pod
        self._background: set[asyncio.Task[None]] = set()  # asynchronous preemptions
        # Pods nominated to nodes (preemption); the frameworks' Filter runs yield to them.
        self.nominator = Nominator(alive=lambda uid: uid in self.pending)
        self._wake: asyncio.Event | None = None
        self.attempts = 0
        self.bound_count = 0
        self.last_loop_activity = clock()

    def _new_queue(self) -> SchedulingQueue:
        sort = next((f.queue_sort for f in self.profiles.values() if f.queue_sort is not None), None)
        less: Callable[[QueuedPodInfo, QueuedPodInfo], bool] | None = None
        if sort is not None and type(sort).sort_key is QueueSortPlugin.sort_key:
            less = self._guarded_less(sort)  # upstream's Less form (an out-of-tree sort)
        key = (lambda prio, ts, seq: (-prio, ts, seq)) if sort is None or less is not None else sort.sort_key
        pre_enqueue = self._pre_enqueue if self.profiles else None
        return SchedulingQueue(
            key,
            self.clock,
            initial_backoff=self._initial_backoff,
            max_backoff=self._max_backoff,
            pre_enqueue=pre_enqueue,
            less=less,
            hint_error=self._hint_error,
        )

    def _guarded_less(self, sort: QueueSortPlugin) -> Callable[[QueuedPodInfo, QueuedPodInfo], bool]:
        """The plugin's `less`, contained: a raise (or a non-bool) is reported and ordered like PrioritySort,
        so a broken sort can never stop the watch that enqueues pods."""
        plugin_less = sort.less
        name = sort.name

        def less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
            try:
                answer = plugin_less(a, b)
                if isinstance(answer, bool):
                    return answer
                raise TypeError(f"less returned {type(answer).__name__}, want bool")
            except Exception as exc:
                self.observer.plugin_error(name, "QueueSort")
                self.plugin_errors.report(name, "QueueSort", exc)
            return (-a.pod.priority, a.timestamp) < (-b.pod.priority, b.timestamp)

        return less

    def _hint_error(self, plugin: str, exc: BaseException) -> None:
        self.observer.plugin_error(plugin, "QueueingHint")
        self.plugin_errors.report(plugin, "QueueingHint", exc)

    def set_profiles(self, profiles: Mapping[str, Framework]) -> None:
        """Install the profiles (built after the scheduler exists, since plugins need it as their Handle)."""
        self.profiles = dict(profiles)
        self._plugin_events = {}
        for fwk in self.profiles.values():
            self._plugin_events.update(fwk.events_to_register())
            fwk.nominator = self.nominator
            fwk.clock = self.clock
            fwk.errors = self.plugin_errors
        self.queue = self._new_queue()

    def handle(self) -> SchedulerHandle:
        return SchedulerHandle(self)

    def explain_environment(self, scheduler_name: str) -> tuple[Framework, Snapshot]:
        """A framework of the named profile (or the first) over a private snapshot of the cache, sharing
        nothing mutable with this scheduler: what an explanation computed in a worker thread runs on.

        Call it on the scheduler's loop (it copies the cache); use the result from any thread.
        """
        snapshot = self.cache.fresh_snapshot()
        handle = ExplainHandle(self, snapshot)
        for name, fwk in self.profiles.items():
            handle.frameworks[name] = fwk.rebuild(handle) if fwk.rebuild is not None else fwk
        chosen = handle.frameworks.get(scheduler_name) or next(iter(handle.frameworks.values()))
        return chosen, snapshot

    def _pre_enqueue(self, pod: PodInfo) -> Status | None:
        fwk = self.profiles.get(pod.scheduler_name)
        return fwk.run_pre_enqueue(pod) if fwk is not None else None

    def notify(self) -> None:
        """Wake the scheduling loop (a pod became ready or a binding finished)."""
        if self._wake is not None:
            self._wake.set()

    def move(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        pre_check: Callable[[PodInfo], bool] | None = None,
    ) -> None:
        """A cluster event: move the unschedulable pods it may help (`old`/`new`: the changed object, for
        QueueingHints; `pre_check(pod)` False leaves a pod out), then wake the loop."""
        self.queue.move_all_to_active_or_backoff(event, self._plugin_events, old=old, new=new, pre_check=pre_check)
        self.notify()

    def move_assigned_pod_delete(self, pod: PodInfo | None = None, *, others_only: bool = False) -> None:
        """A binding failed and its assumed `pod` left the cache: that frees room like a pod deletion.
        `others_only` leaves the pod itself where its failure put it."""
        uid = pod.uid if pod is not None and others_only else None
        self.move(EVENT_ASSIGNED_POD_DELETE, old=pod, pre_check=None if uid is None else (lambda p: p.uid != uid))

    def activate(self, uids: Iterable[str]) -> None:
        """Move these pods to activeQ at once (upstream Activate), e.g. a preemptor whose preemption failed."""
        moved = False
        for uid in uids:
            moved = self.queue.activate(uid) or moved
        if moved:
            self.notify()

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        """Run a supervised background task (an asynchronous preemption): its failure is logged, never
        lost, and `drain` waits for it."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._background.add(task)

        def finished(t: asyncio.Task[None]) -> None:
            self._background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("background task failed", extra={"task": name}, exc_info=t.exception())
            self.notify()

        task.add_done_callback(finished)

    def pod_changed(self, uid: str) -> None:
        """The watch showed this pod bound or gone: wake its binding cycle if it waits to learn where it is."""
        wake = self.resolving.get(uid)
        if wake is not None:
            wake.set()

    def forget_pod_state(self, uid: str) -> None:
        """Drop every per-pod record kept outside the queue and cache (failure reports, refusals), and tell
        the API adapter, whose queued failure report the binding or the deletion supersedes."""
        self.last_failure.pop(uid, None)
        self.parse_failures.pop(uid, None)
        self.unsupported.pop(uid, None)
        self.unconfirmed_binds.pop(uid, None)
        self.api.forget_pod(uid)

    def state_sizes(self) -> dict[str, int]:
        """Entries of every per-pod and per-node structure (for leak checks: each returns to its baseline
        once the pods and nodes behind it are gone)."""
        sizes = {
            "pending": len(self.pending),
            "last_failure": len(self.last_failure),
            "parse_failures": len(self.parse_failures),
            "unsupported": len(self.unsupported),
            "unconfirmed_binds": len(self.unconfirmed_binds),
            "resolving_binds": len(self.resolving),
            "bind_tasks": len(self._bind_tasks),
            "waiting_pods": sum(len(f.waiting_pods) for f in self.profiles.values()),
            "snapshot_nodes": len(self.snapshot.node_info_map),
            "objects": sum(self.objects.counts().values()),
            "dra_in_flight": len(self.dra_manager.claims.in_flight),
            "dra_assumed": self.dra_manager.claims.assumed_count(),
        }
        sizes.update({f"queue_{k}": v for k, v in self.queue.sizes().items()})
        sizes.update({f"cache_{k}": v for k, v in self.cache.sizes().items()})
        return sizes

    def pending_pods(self) -> list[PodInfo]:
        """The unassigned pods of our profiles this scheduler tracks (queued, in flight or parked)."""
        return list(self.pending.values())

    def unsupported_pods(self) -> list[PodInfo]:
        """Pods left Pending by the fail-closed guard (they use fields pyscheduler does not evaluate)."""
        return [pod for pod, _ in self.unsupported.values()]

    # ------------------------------------------------------------------ scheduling cycle (schedule_one.py)

    def schedule_one(self, qpi: QueuedPodInfo, cycle: int | None = None) -> Coroutine[Any, Any, None] | None:
        """Run one scheduling cycle; return the binding cycle to run concurrently, if any."""
        return schedule_one(self, qpi, self.queue.scheduling_cycle if cycle is None else cycle)

    # ------------------------------------------------------------------ loops

    def _spawn_binding(self, coro: Coroutine[Any, Any, None], uid: str) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._bind_tasks[task] = uid

        def finished(t: asyncio.Task[None]) -> None:
            self._bind_tasks.pop(t, None)
            self._bind_slots.release()
            self.notify()

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
            self._spawn_binding(coro, qpi.pod.uid)
        return True

    # ------------------------------------------------------------------ Permit waits

    def _parked(self, uid: str) -> bool:
        """Whether the pod's binding cycle waits at Permit for an outcome nothing but a plugin or its
        deadline can bring."""
        return any(fwk.parked(uid) for fwk in self.profiles.values())

    def next_permit_deadline(self) -> float | None:
        """When the earliest Permit wait times out, on the scheduler's clock (None: nobody waits)."""
        deadlines = [d for fwk in self.profiles.values() if (d := fwk.next_permit_deadline()) is not None]
        return min(deadlines, default=None)

    def expire_permit_waits(self) -> int:
        """Time out the Permit waits that are over (upstream's per-plugin timers, fired by this clock)."""
        now = self.clock()
        return sum(fwk.expire_waiting_pods(now) for fwk in self.profiles.values())

    async def run(self, stop: asyncio.Event) -> None:
        """Schedule until stop is set; sleeps until the next backoff expiry when nothing is ready."""
        self._wake = asyncio.Event()
        self.stopping = False
        last_leftover = self.clock()
        while not stop.is_set():
            self.last_loop_activity = self.clock()
            now = self.clock()
            if now - last_leftover >= LEFTOVER_FLUSH_PERIOD:
                self.queue.flush_unschedulable_leftover()
                last_leftover = now
            self.expire_permit_waits()
            if await self._schedule_next():
                await asyncio.sleep(0)  # let watch events and bindings run between cycles
                continue
            timeout = LEFTOVER_FLUSH_PERIOD - (now - last_leftover)
            for wakeup in (self.queue.next_wakeup(), self.next_permit_deadline()):
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
        self.stopping = True  # binding cycles still waiting to learn whether their bind landed give up
        for resolving in self.resolving.values():
            resolving.set()
        await self.drain()

    async def drain(self) -> None:
        """Wait for in-flight binding cycles and background preemptions to finish (shutting down).

        Pods parked at Permit will not be allowed any more once scheduling stopped: their binding cycles
        are cancelled (unreserved, forgotten, nothing written), and they stay Pending for the next leader.
        """
        for task, uid in list(self._bind_tasks.items()):
            if self._parked(uid):
                task.cancel()
        while self._bind_tasks or self._background:
            await asyncio.gather(*list(self._bind_tasks), *list(self._background), return_exceptions=True)

    async def quiesce(self) -> None:
        """Wait until every binding cycle is finished or parked at Permit, and background preemptions are
        done: the point where only a new cycle, an event or the clock can move anything."""
        while True:
            busy = [t for t, uid in self._bind_tasks.items() if not self._parked(uid)]
            busy.extend(self._background)
            if not busy:
                return
            await asyncio.gather(*busy, return_exceptions=True)

    def settled(self) -> bool:
        """Nothing queued, in a binding cycle, in the background or waiting at Permit: run_until_idle would
        return at once (the simulator skips the call for each object of a dump that changes nothing)."""
        if self._bind_tasks or self._background or not self.queue.empty():
            return False
        for fwk in self.profiles.values():
            if fwk.waiting_pods:
                return self.next_permit_deadline() is None
        return True

    async def run_until_idle(
        self,
        advance: Callable[[float], None] | None = None,
        max_idle_rounds: int = 20,
        *,
        permit_timeouts: bool = True,
    ) -> None:
        """Schedule until no queued pod can make progress (the simulator's step).

        Rejected pods wait in the unschedulable queue for a cluster event, as in a live cluster. Pods in
        backoff are retried, and Permit waits time out, by advancing the (fake) clock through `advance` to
        the earliest of those moments, only once nothing else can progress: pods parked at Permit keep
        waiting while other pods are scheduled, so a gang gathers. `permit_timeouts=False` advances the clock
        only up to the earliest Permit deadline, never past it (more objects are coming: the simulation
        creates them before any wait may time out). After `max_idle_rounds` advances without a single
        successful binding the remaining pods are left pending, so pods that fail with an Error every time
        cannot keep the loop alive. A pod re-activated at once after each failed attempt (a preemption whose
        API call keeps failing is retried at once, as upstream does) would keep the queue busy forever
        without a clock: after SPIN_BUDGET attempts per queued pod with no binding the remaining pods are
        left pending too, with a warning.
        """
        idle_rounds = 0
        last_bound = self.bound_count
        spins, spin_bound = 0, self.bound_count
        while True:
            if await self._schedule_next():
                await self.quiesce()
                spins = 0 if self.bound_count != spin_bound else spins + 1
                spin_bound = self.bound_count
                if spins > SPIN_BUDGET * (sum(self.queue.pending().values()) + 1):
                    log.warning(
                        "simulation stopped retrying: scheduling attempts keep failing without any binding",
                        extra={"attempts": spins, "pending": self.queue.pending()},
                    )
                    return
                continue
            await self.quiesce()
            if self.queue.pending().get("active", 0):
                continue
            wakeup = self.queue.next_wakeup()
            deadline = self.next_permit_deadline()
            if deadline is not None and not permit_timeouts:
                if wakeup is not None and wakeup >= deadline:
                    wakeup = None  # past a Permit deadline: wait for the objects still to come
                deadline = None
            moments = [m for m in (wakeup, deadline) if m is not None]
            if not moments or advance is None or idle_rounds >= max_idle_rounds:
                return
            idle_rounds = 0 if self.bound_count != last_bound else idle_rounds + 1
            last_bound = self.bound_count
            advance(min(moments))
            self.expire_permit_waits()
