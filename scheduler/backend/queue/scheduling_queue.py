"""The scheduling queue: activeQ, backoffQ, unschedulable pods and gated pods (upstream scheduling_queue.go).

- **activeQ**: a heap in QueueSort order: the in-tree sort's heap key `sort_key(priority, timestamp, seq)`,
  or an out-of-tree plugin's `less(a, b)` on the QueuedPodInfos; `pop()` takes its head.
- **backoffQ**: a heap by backoff expiry; `flush_backoff_completed()` moves expired pods to activeQ.
  Backoff is `initial * 2^(attempts-1)` capped at `max` (1, 2, 4, 8, 10, 10... s by default), counted from
  the time the pod came back from its last attempt.
- **unschedulable**: pods rejected by plugins; they leave only when a cluster event one of their rejecting
  plugins registered for arrives and its QueueingHint (if any) says QUEUE (`move_all_to_active_or_backoff`),
  when the pod itself changes, or after `max_unschedulable_seconds` (`flush_unschedulable_leftover`,
  upstream's 5 min).
- **gated**: pods a PreEnqueue check rejected (e.g. scheduling gates); upstream keeps them in
  unschedulablePods flagged Gated and reports them as `pending_pods{queue="gated"}`.

A popped pod is *in flight* until `add_unschedulable_if_not_present` or `done`. Requeue follows the
pre-QueueingHint rule: if a move request (any cluster event) happened during the pod's scheduling cycle, or
the pod failed with an Error (no rejecting plugin), it goes to backoffQ rather than unschedulable, so an
event that arrived while it was being scheduled is not lost.

Pure: no asyncio, no I/O, no threads; time comes from the injected clock. Heaps use lazy deletion (each uid
maps to its live heap entry; stale entries are skipped on pop and compacted when they pile up).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from scheduler.framework.interface import WILDCARD, ClusterEvent, ClusterEventWithHint, QueueingHint, QueueingHintFn
from scheduler.framework.status import Status, is_success
from scheduler.framework.types import PodInfo, QueuedPodInfo

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"
IN_FLIGHT = "in_flight"

# Event labels of scheduler_queue_incoming_pods_total (upstream framework/events.go and ClusterEvent.Label).
EVENT_POD_ADD = "UnscheduledPodAdd"
EVENT_POD_UPDATE = "UnscheduledPodUpdate"
EVENT_SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
EVENT_BACKOFF_COMPLETE = "BackoffComplete"
EVENT_UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
EVENT_FORCE_ACTIVATE = "ForceActivate"

SortKeyFn = Callable[[int, float, int], tuple[Any, ...]]
LessFn = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
HintErrorFn = Callable[[str, BaseException], None]
"""Told (plugin, exception) when a QueueingHint function raised; the pod is queued as if it said QUEUE."""
Registrations = Mapping[str, Sequence[ClusterEvent | ClusterEventWithHint]]
PreEnqueueFn = Callable[[PodInfo], Status | None]
_Entry = tuple[Any, int, str]  # (sort key or expiry, seq, uid); seq is unique so uid is never compared


def event_label(event: ClusterEvent) -> str:
    """ClusterEvent.Label(): the custom label, else resource + action name (e.g. "NodeAdd")."""
    if event.label:
        return event.label
    name = event.action.name or str(event.action.value)
    return event.resource + "".join(part.capitalize() for part in name.split("_"))


class _ByLess:
    """A heap key ordered by a QueueSort plugin's `less`; equal pods keep their arrival order (seq). Its
    equality is identity, so a heap entry (key, seq, uid) compares keys with `<` only."""

    __slots__ = ("less", "qpi", "seq")

    def __init__(self, less: LessFn, qpi: QueuedPodInfo, seq: int) -> None:
        self.less = less
        self.qpi = qpi
        self.seq = seq

    def __lt__(self, other: _ByLess) -> bool:
        if self.less(self.qpi, other.qpi):
            return True
        if self.less(other.qpi, self.qpi):
            return False
        return self.seq < other.seq


def _pod_updated(old: PodInfo, new: PodInfo) -> bool:
    """Whether an update may change the scheduling result (upstream isPodUpdated: spec or metadata, not
    status or resourceVersion). Spec is compared by fingerprint, metadata by labels. Of the status, only the
    claims generated for the pod count (upstream's UpdatePodGeneratedResourceClaim, which DynamicResources
    queues the pod for)."""
    return (
        old.spec_fingerprint != new.spec_fingerprint
        or old.labels != new.labels
        or old.resource_claim_statuses != new.resource_claim_statuses
        or old.extended_resource_claim != new.extended_resource_claim
    )


class SchedulingQueue:
    """Priority queue of pods waiting to be scheduled, with backoff and unschedulable parking."""

    def __init__(
        self,
        sort_key_fn: SortKeyFn,
        clock: Callable[[], float],
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_unschedulable_seconds: float = 300.0,
        pre_enqueue: PreEnqueueFn | None = None,
        *,
        less: LessFn | None = None,
        hint_error: HintErrorFn | None = None,
    ) -> None:
        """`less`, when given, orders activeQ instead of `sort_key_fn` (an out-of-tree QueueSort plugin)."""
        self._sort_key = sort_key_fn
        self._less = less
        self._hint_error = hint_error
        self._clock = clock
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_unschedulable_seconds = max_unschedulable_seconds
        self._pre_enqueue = pre_enqueue
        self._seq = itertools.count()

        self._active: dict[str, QueuedPodInfo] = {}
        self._active_entries: dict[str, _Entry] = {}
        self._active_heap: list[_Entry] = []
        self._backoff: dict[str, QueuedPodInfo] = {}
        self._backoff_entries: dict[str, _Entry] = {}
        self._backoff_heap: list[_Entry] = []
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._gated: dict[str, QueuedPodInfo] = {}

        self._in_flight: dict[str, QueuedPodInfo] = {}
        self._updated_in_flight: dict[str, PodInfo] = {}  # latest version seen while in flight
        self._deleted_in_flight: set[str] = set()

        self._scheduling_cycle = 0
        self._move_request_cycle = -1
        self.incoming: dict[tuple[str, str], int] = {}

    # -----------------------------------------------------------------------------------------------------
    # Heaps

    def _push_active(self, qpi: QueuedPodInfo) -> None:
        seq = next(self._seq)
        key = _ByLess(self._less, qpi, seq) if self._less is not None else self._sort_key(
            qpi.pod.priority, qpi.timestamp, seq
        )
        entry: _Entry = (key, seq, qpi.uid)
        self._active[qpi.uid] = qpi
        self._active_entries[qpi.uid] = entry
        heapq.heappush(self._active_heap, entry)

    def _push_backoff(self, qpi: QueuedPodInfo) -> None:
        seq = next(self._seq)
        entry: _Entry = (self.backoff_expiry(qpi), seq, qpi.uid)
        self._backoff[qpi.uid] = qpi
        self._backoff_entries[qpi.uid] = entry
        heapq.heappush(self._backoff_heap, entry)

    @staticmethod
    def _compact(heap: list[_Entry], live: dict[str, _Entry]) -> None:
        """Rebuild a heap from its live entries once stale ones outnumber them (at once when none is live)."""
        if not live:
            heap.clear()
        elif len(heap) > 2 * len(live) + 64:
            heap[:] = live.values()
            heapq.heapify(heap)

    def _remove_active(self, uid: str) -> QueuedPodInfo | None:
        qpi = self._active.pop(uid, None)
        if qpi is not None:
            del self._active_entries[uid]
            self._compact(self._active_heap, self._active_entries)
        return qpi

    def _remove_backoff(self, uid: str) -> QueuedPodInfo | None:
        qpi = self._backoff.pop(uid, None)
        if qpi is not None:
            del self._backoff_entries[uid]
            self._compact(self._backoff_heap, self._backoff_entries)
        return qpi

    def _clean_backoff_top(self) -> None:
        heap, live = self._backoff_heap, self._backoff_entries
        while heap and live.get(heap[0][2]) is not heap[0]:
            heapq.heappop(heap)

    # -----------------------------------------------------------------------------------------------------
    # Moves

    def _count(self, queue: str, event: str) -> None:
        key = (queue, event)
        self.incoming[key] = self.incoming.get(key, 0) + 1

    def backoff_duration(self, qpi: QueuedPodInfo) -> float:
        """initial * 2^(attempts-1) capped at max; 0 before the first attempt."""
        if qpi.attempts <= 0:
            return 0.0
        exponent = min(qpi.attempts - 1, 64)
        return float(min(self.initial_backoff * (2**exponent), self.max_backoff))

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        """Clock time at which the pod's backoff ends."""
        return qpi.timestamp + self.backoff_duration(qpi)

    def _backing_off(self, qpi: QueuedPodInfo) -> bool:
        return self.backoff_expiry(qpi) > self._clock()

    def _move_to_active(self, qpi: QueuedPodInfo, event: str) -> str:
        """Run PreEnqueue; gate the pod or push it to activeQ. The caller has taken it out of its queue."""
        status = self._pre_enqueue(qpi.pod) if self._pre_enqueue is not None else None
        if not is_success(status):
            assert status is not None
            was_gated = qpi.uid in self._gated
            qpi.gated = True
            qpi.gating_plugin = status.plugin
            qpi.gating_message = status.message()
            self._gated[qpi.uid] = qpi
            if not was_gated:
                self._count(UNSCHEDULABLE, event)  # upstream counts gated pods under "unschedulable"
            return GATED
        self._gated.pop(qpi.uid, None)
        qpi.gated = False
        qpi.gating_plugin = qpi.gating_message = ""
        if qpi.initial_attempt_timestamp < 0:
            qpi.initial_attempt_timestamp = self._clock()
        self._push_active(qpi)
        self._count(ACTIVE, event)
        return ACTIVE

    def _requeue(self, qpi: QueuedPodInfo, event: str) -> str:
        """Move a pod taken out of unschedulable/gated: backoffQ while backing off, else activeQ."""
        if self._backing_off(qpi):
            self._gated.pop(qpi.uid, None)
            qpi.gated = False
            self._push_backoff(qpi)
            self._count(BACKOFF, event)
            return BACKOFF
        return self._move_to_active(qpi, event)

    # -----------------------------------------------------------------------------------------------------
    # Pod events

    def add(self, pod: PodInfo) -> str:
        """A new pending pod: to activeQ, or gated when PreEnqueue rejects it. Return the queue it is in.

        A pod the queue already tracks is treated as an update.
        """
        if pod.uid in self:
            current = self.get(pod.uid)
            assert current is not None
            return self.update(current.pod, pod)
        qpi = QueuedPodInfo(pod=pod, timestamp=self._clock())
        return self._move_to_active(qpi, EVENT_POD_ADD)

    def update(self, old: PodInfo, new: PodInfo) -> str:
        """A pending pod changed. Return the queue it is in afterwards (IN_FLIGHT when being scheduled).

        In activeQ/backoffQ it is updated in place (re-sorted if its priority changed); an unschedulable pod
        whose spec or labels changed moves to backoffQ/activeQ; a gated pod re-runs PreEnqueue; an in-flight
        pod keeps the update for its requeue; an unknown pod is added. Changes are judged against the
        version the queue holds, so `old` only matters for pods the queue does not know.
        """
        uid = new.uid
        if uid in self._in_flight:
            self._updated_in_flight[uid] = new
            return IN_FLIGHT
        qpi = self._active.get(uid)
        if qpi is not None:
            repush = qpi.pod.priority != new.priority
            qpi.pod = new
            if repush:
                self._remove_active(uid)
                self._push_active(qpi)
            return ACTIVE
        qpi = self._backoff.get(uid)
        if qpi is not None:
            qpi.pod = new
            return BACKOFF
        qpi = self._unschedulable.get(uid)
        if qpi is not None:
            changed = _pod_updated(qpi.pod, new)
            qpi.pod = new
            if not changed:
                return UNSCHEDULABLE
            del self._unschedulable[uid]
            return self._requeue(qpi, EVENT_POD_UPDATE)
        qpi = self._gated.get(uid)
        if qpi is not None:
            qpi.pod = new
            return self._requeue(qpi, EVENT_POD_UPDATE)
        return self.add(new)  # unknown pod: the new version is all that matters

    def delete(self, uid: str) -> bool:
        """The pod was deleted or bound (by anyone): it leaves the queue. Return True if it was tracked."""
        if self._remove_active(uid) or self._remove_backoff(uid):
            return True
        if self._unschedulable.pop(uid, None) or self._gated.pop(uid, None):
            return True
        if uid in self._in_flight and uid not in self._deleted_in_flight:
            self._deleted_in_flight.add(uid)
            return True
        return False

    def activate(self, uid: str) -> bool:
        """Move a pod waiting in unschedulable, backoffQ or gated straight to activeQ (upstream Activate:
        e.g. a preemptor whose asynchronous preemption failed). Return whether it moved."""
        qpi = self._unschedulable.pop(uid, None) or self._remove_backoff(uid)
        if qpi is None:
            qpi = self._gated.get(uid)
        if qpi is None:
            return False
        return self._move_to_active(qpi, EVENT_FORCE_ACTIVATE) == ACTIVE

    # -----------------------------------------------------------------------------------------------------
    # Scheduling cycle

    def pop(self) -> QueuedPodInfo | None:
        """Take the head of activeQ (None when empty): it becomes in flight, its attempts and the
        scheduling cycle counter go up."""
        heap, live = self._active_heap, self._active_entries
        while heap:
            entry = heapq.heappop(heap)
            uid = entry[2]
            if live.get(uid) is not entry:
                continue
            del live[uid]
            qpi = self._active.pop(uid)
            qpi.attempts += 1
            self._scheduling_cycle += 1
            self._in_flight[uid] = qpi
            self._updated_in_flight.pop(uid, None)
            self._deleted_in_flight.discard(uid)
            return qpi
        return None

    @property
    def scheduling_cycle(self) -> int:
        """Number of pops so far; read it right after pop() to get the pod's scheduling cycle."""
        return self._scheduling_cycle

    def done(self, uid: str) -> None:
        """The scheduling attempt of an in-flight pod is over (bound, or requeued). Idempotent."""
        self._in_flight.pop(uid, None)
        self._updated_in_flight.pop(uid, None)
        self._deleted_in_flight.discard(uid)

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, pod_scheduling_cycle: int) -> str | None:
        """Requeue a pod whose attempt failed; return its queue, or None when it was not requeued.

        Not requeued when it was deleted while in flight or is already queued. A pod updated (spec/labels)
        while in flight takes its latest version. Error failures (no rejecting plugin), a move request
        during its cycle, or an in-flight update send it to backoffQ; otherwise it is parked in
        unschedulable. Calls done(uid).
        """
        uid = qpi.uid
        try:
            if uid in self._deleted_in_flight:
                return None
            if self.queue_of(uid) not in (None, IN_FLIGHT):  # already queued (e.g. re-added meanwhile)
                return None
            latest = self._updated_in_flight.get(uid)
            updated = latest is not None and _pod_updated(qpi.pod, latest)
            if latest is not None:
                qpi.pod = latest
            qpi.timestamp = self._clock()
            qpi.gated = False
            if updated or not qpi.rejectors() or self._move_request_cycle >= pod_scheduling_cycle:
                self._push_backoff(qpi)
                self._count(BACKOFF, EVENT_SCHEDULE_ATTEMPT_FAILURE)
                return BACKOFF
            self._unschedulable[uid] = qpi
            self._count(UNSCHEDULABLE, EVENT_SCHEDULE_ATTEMPT_FAILURE)
            return UNSCHEDULABLE
        finally:
            self.done(uid)

    # -----------------------------------------------------------------------------------------------------
    # Cluster events and flushes

    def _interested(
        self,
        pod: PodInfo,
        plugins: Iterable[str],
        event: ClusterEvent,
        plugin_events: Registrations,
        old: Any,
        new: Any,
    ) -> bool:
        """Whether the event may help a pod these plugins rejected: one of them registered a matching event
        whose QueueingHint (if any) says QUEUE. A plugin absent from the map registered nothing specific,
        so any event concerns it (upstream: plugins without EnqueueExtensions get all events)."""
        for plugin in plugins:
            registered = plugin_events.get(plugin)
            if registered is None:
                return True
            for r in registered:
                if isinstance(r, ClusterEventWithHint):
                    if event.matches(r.event) and (r.hint is None or self._queue_hint(plugin, r.hint, pod, old, new)):
                        return True
                elif event.matches(r):
                    return True
        return False

    def _queue_hint(self, plugin: str, hint: QueueingHintFn, pod: PodInfo, old: Any, new: Any) -> bool:
        """A plugin's QueueingHint: anything but QUEUE_SKIP queues, and so does a hint that raises."""
        try:
            return hint(pod, old, new) != QueueingHint.QUEUE_SKIP
        except Exception as exc:
            if self._hint_error is not None:
                self._hint_error(plugin, exc)
            return True

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        plugin_events: Registrations,
        *,
        old: Any = None,
        new: Any = None,
        pre_check: Callable[[PodInfo], bool] | None = None,
    ) -> int:
        """A cluster event happened: move the unschedulable pods it may help; return how many moved.

        An unschedulable pod moves when one of its rejecting plugins registered a matching event (and its
        QueueingHint for `old`/`new` says QUEUE), or when it has no rejecting plugin; a wildcard event
        (e.g. UnschedulableTimeout) moves all. Gated pods re-run PreEnqueue when their gating plugin is
        interested. `pre_check(pod)` False keeps a pod where it is (upstream's preCheck). Pods in flight now
        will requeue to backoffQ.
        """
        if not self._unschedulable and not self._gated:  # nothing to move (a dump's bound pods arriving)
            self._move_request_cycle = self._scheduling_cycle
            return 0
        label = event_label(event)
        wildcard = event.resource == WILDCARD
        moved = 0
        for uid, qpi in list(self._unschedulable.items()):
            if pre_check is not None and not pre_check(qpi.pod):
                continue
            rejectors = qpi.rejectors()
            if wildcard or not rejectors or self._interested(qpi.pod, rejectors, event, plugin_events, old, new):
                del self._unschedulable[uid]
                self._requeue(qpi, label)
                moved += 1
        for qpi in list(self._gated.values()):
            if pre_check is not None and not pre_check(qpi.pod):
                continue
            if not (wildcard or self._interested(qpi.pod, [qpi.gating_plugin], event, plugin_events, old, new)):
                continue
            if self._requeue(qpi, label) != GATED:
                moved += 1
        self._move_request_cycle = self._scheduling_cycle
        return moved

    def flush_backoff_completed(self) -> int:
        """Move pods whose backoff expired to activeQ (upstream runs this every second); return how many."""
        now = self._clock()
        heap, live = self._backoff_heap, self._backoff_entries
        moved = 0
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            uid = entry[2]
            if live.get(uid) is not entry:
                continue
            del live[uid]
            qpi = self._backoff.pop(uid)
            self._move_to_active(qpi, EVENT_BACKOFF_COMPLETE)
            moved += 1
        return moved

    def flush_unschedulable_leftover(self) -> int:
        """Move pods parked longer than max_unschedulable_seconds (upstream checks every 30 s); gated pods
        re-run PreEnqueue. Return how many left unschedulable/gated."""
        now = self._clock()
        limit = self.max_unschedulable_seconds
        moved = 0
        for uid, qpi in list(self._unschedulable.items()):
            if now - qpi.timestamp > limit:
                del self._unschedulable[uid]
                self._requeue(qpi, EVENT_UNSCHEDULABLE_TIMEOUT)
                moved += 1
        for qpi in list(self._gated.values()):
            if now - qpi.timestamp > limit and self._requeue(qpi, EVENT_UNSCHEDULABLE_TIMEOUT) != GATED:
                moved += 1
        return moved

    def next_wakeup(self) -> float | None:
        """Clock time of the earliest backoff expiry, or None when backoffQ is empty."""
        self._clean_backoff_top()
        return self._backoff_heap[0][0] if self._backoff_heap else None

    # -----------------------------------------------------------------------------------------------------
    # Introspection

    def pending(self) -> dict[str, int]:
        """Pods per queue, for scheduler_pending_pods{queue}."""
        return {
            ACTIVE: len(self._active),
            BACKOFF: len(self._backoff),
            UNSCHEDULABLE: len(self._unschedulable),
            GATED: len(self._gated),
        }

    def sizes(self) -> dict[str, int]:
        """Entries of every internal map and heap (stale heap entries included), for leak checks."""
        return {
            "active": len(self._active),
            "active_heap": len(self._active_heap),
            "backoff": len(self._backoff),
            "backoff_heap": len(self._backoff_heap),
            "unschedulable": len(self._unschedulable),
            "gated": len(self._gated),
            "in_flight": len(self._in_flight),
            "updated_in_flight": len(self._updated_in_flight),
            "deleted_in_flight": len(self._deleted_in_flight),
        }

    def unschedulable_pods(self) -> list[QueuedPodInfo]:
        """Pods parked as unschedulable (gated ones excluded), e.g. for scheduler_unschedulable_pods."""
        return list(self._unschedulable.values())

    def gated_pods(self) -> list[QueuedPodInfo]:
        """Pods held back by a PreEnqueue check."""
        return list(self._gated.values())

    def queue_of(self, uid: str) -> str | None:
        """Which queue holds the pod (IN_FLIGHT while being scheduled), or None."""
        for name, pods in (
            (ACTIVE, self._active),
            (BACKOFF, self._backoff),
            (UNSCHEDULABLE, self._unschedulable),
            (GATED, self._gated),
        ):
            if uid in pods:
                return name
        if uid in self._in_flight and uid not in self._deleted_in_flight:
            return IN_FLIGHT
        return None

    def __contains__(self, uid: object) -> bool:
        """True when the pod is queued or in flight (and not deleted meanwhile)."""
        return isinstance(uid, str) and self.queue_of(uid) is not None

    def get(self, uid: str) -> QueuedPodInfo | None:
        """The queued (or in-flight) record of a pod."""
        for pods in (self._active, self._backoff, self._unschedulable, self._gated):
            qpi = pods.get(uid)
            if qpi is not None:
                return qpi
        if uid in self._deleted_in_flight:
            return None
        return self._in_flight.get(uid)

    def empty(self) -> bool:
        """No pod waits in any queue (len() == 0, without counting)."""
        return not (self._active or self._backoff or self._unschedulable or self._gated)

    def __len__(self) -> int:
        """Pods waiting in any queue (in-flight pods excluded)."""
        return sum(self.pending().values())

    def _describe(self, qpi: QueuedPodInfo, now: float) -> dict[str, Any]:
        out: dict[str, Any] = {
            "uid": qpi.uid,
            "pod": qpi.pod.key,
            "priority": qpi.pod.priority,
            "attempts": qpi.attempts,
            "since_seconds": round(now - qpi.timestamp, 3),
        }
        if qpi.unschedulable_plugins:
            out["unschedulable_plugins"] = sorted(qpi.unschedulable_plugins)
        if qpi.pending_plugins:
            out["pending_plugins"] = sorted(qpi.pending_plugins)
        if qpi.gated:
            out["gating_plugin"] = qpi.gating_plugin
            out["gating_message"] = qpi.gating_message
        return out

    def dump(self) -> dict[str, Any]:
        """JSON-able view for the debug endpoint: each queue's pods (activeQ in pop order)."""
        now = self._clock()
        active = sorted(self._active_entries.values())
        backoff = sorted(self._backoff_entries.values())
        return {
            "scheduling_cycle": self._scheduling_cycle,
            "move_request_cycle": self._move_request_cycle,
            "pending": self.pending(),
            ACTIVE: [self._describe(self._active[e[2]], now) for e in active],
            BACKOFF: [
                {**self._describe(self._backoff[e[2]], now), "backoff_left_seconds": round(e[0] - now, 3)}
                for e in backoff
            ],
            UNSCHEDULABLE: [self._describe(q, now) for q in self._unschedulable.values()],
            GATED: [self._describe(q, now) for q in self._gated.values()],
            IN_FLIGHT: [
                self._describe(q, now) for u, q in self._in_flight.items() if u not in self._deleted_in_flight
            ],
        }
