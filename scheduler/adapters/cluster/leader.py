"""Leader election on a coordination.k8s.io/v1 Lease, the way client-go's leaderelection package does it.

Why our own and not kubernetes_asyncio.leaderelection: that one has no per-request timeouts (a hung renew can
outlive the lease), never releases the lease on shutdown, and writes naive local time suffixed "Z" (a wrong
renewTime whenever TZ is not UTC). This one is small and keeps the guarantees the scheduler relies on:

* Acquire/renew is GET + create/replace with the read object's resourceVersion (optimistic concurrency), so
  two candidates can never both believe they wrote the lease. Only the verbs get, create and update are used
  (the chart's Role grants exactly those on the scheduler's own Lease).
* Expiry of somebody else's lease is judged like client-go: by when *we* last saw its record change (local
  monotonic clock) plus its leaseDurationSeconds, never by comparing renewTime with our wall clock.
* Our own leadership is valid until `renewDeadline` after the *sending* of the last acquire/renew that the
  API server confirmed. A rival can only take over `leaseDuration` after it observed that write, which
  happened after we sent it, so we stop binding at least leaseDuration - renewDeadline before anyone else may
  start. `LeaseElector.bind_allowance` is the guard the binding path checks (clock-based, so it holds even
  when the renew task is starved); every lease request is timed out well inside the renew deadline.
* Losing leadership raises `LeadershipLostError` from `run()`; the process exits non-zero (as kube-scheduler
  does with "leaderelection lost") and restarts into standby with fresh state.
* `release()` (on SIGTERM, after the last in-flight bind) writes the lease back with no holder and
  leaseDurationSeconds 1, like client-go's ReleaseOnCancel, so a standby takes over at its next retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NoReturn, Protocol
from urllib.parse import quote

from scheduler.adapters.cluster.client import ApiError, KubeClient, TokenBucket, micro_time, wait_first
from scheduler.config.types import LeaderElection
from scheduler.core.api import BindError

log = logging.getLogger("pyscheduler.leader")

JSON = dict[str, Any]

JITTER_FACTOR = 1.2
"""client-go leaderelection.JitterFactor: candidates retry every retryPeriod * (1 + rand * 1.2)."""

RELEASE_TIMEOUT = 5.0
"""Upper bound for the release write on shutdown (it is best effort: the lease expires anyway)."""


class NotLeaderError(BindError):
    """A bind was refused because this replica is not (or may no longer be) the leader."""


class LeadershipLostError(Exception):
    """Renewing the lease kept failing until the renew deadline passed ("leaderelection lost")."""


# --------------------------------------------------------------------------------------------- record


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The fields of a Lease's spec that leader election reads and writes (client-go LeaderElectionRecord)."""

    holder: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    transitions: int = 0

    @classmethod
    def from_spec(cls, spec: Any) -> LeaseRecord:
        """Parse a LeaseSpec; missing fields take their zero values, as client-go's conversion does."""
        spec = spec if isinstance(spec, dict) else {}
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> JSON:
        spec: JSON = {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time is not None:
            spec["renewTime"] = self.renew_time
        return spec


# --------------------------------------------------------------------------------------------- timing


class LeaseTiming:
    """The pure timing decisions of leader election, on an injectable monotonic clock (unit-tested alone).

    Tracks the last lease record seen and when it was first seen (to judge a rival's lease expired), and
    the send time of our last confirmed acquire/renew (to judge our own leadership still safe).
    """

    def __init__(
        self, identity: str, *, lease_duration: float, renew_deadline: float, clock: Callable[[], float]
    ) -> None:
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.clock = clock
        self.observed: LeaseRecord | None = None
        self.observed_at = 0.0
        self.confirmed_at: float | None = None

    def observe(self, record: LeaseRecord) -> None:
        """Note the record just read; its age only restarts when it differs from the last one seen."""
        if record != self.observed:
            self.observed = record
            self.observed_at = self.clock()

    def held_by_other(self) -> bool:
        """Does someone else hold a lease we have seen renewed within its leaseDurationSeconds?"""
        record = self.observed
        if record is None or not record.holder or record.holder == self.identity:
            return False
        duration = record.lease_duration_seconds or self.lease_duration
        return self.observed_at + duration > self.clock()

    def confirm(self, sent_at: float, record: LeaseRecord) -> None:
        """The API server accepted our write of `record`, sent at `sent_at`: we lead until sent_at+renewDeadline."""
        self.confirmed_at = sent_at
        self.observed = record
        self.observed_at = self.clock()

    def remaining(self) -> float:
        """Seconds our leadership is still certain to be exclusive (<= 0: not leader, or maybe no longer)."""
        if self.confirmed_at is None:
            return 0.0
        return self.confirmed_at + self.renew_deadline - self.clock()

    def is_leader(self) -> bool:
        return self.remaining() > 0

    def lose(self) -> None:
        """Forget our leadership (lost or released)."""
        self.confirmed_at = None


# --------------------------------------------------------------------------------------------- store


class LeaseStore(Protocol):
    """Reads and writes one Lease object; raises ApiError (404 on get means "no lease yet" -> None)."""

    async def get(self, limit: float) -> JSON | None: ...

    async def create(self, body: JSON, limit: float) -> JSON: ...

    async def replace(self, body: JSON, limit: float) -> JSON: ...


class ApiLeaseStore:
    """The Lease on the API server: GET, POST (create) and PUT (update) — nothing else (matches the Role)."""

    def __init__(self, client: KubeClient, namespace: str, name: str, limiter: TokenBucket) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.limiter = limiter
        self.collection = f"/apis/coordination.k8s.io/v1/namespaces/{quote(namespace, safe='')}/leases"
        self.path = f"{self.collection}/{quote(name, safe='')}"

    async def get(self, limit: float) -> JSON | None:
        try:
            obj: JSON = await self.client.request(
                "GET", self.path, retry="never", request_timeout=limit, limiter=self.limiter
            )
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return obj

    async def create(self, body: JSON, limit: float) -> JSON:
        obj: JSON = await self.client.request(
            "POST", self.collection, body=body, retry="never", request_timeout=limit, limiter=self.limiter
        )
        return obj

    async def replace(self, body: JSON, limit: float) -> JSON:
        obj: JSON = await self.client.request(
            "PUT", self.path, body=body, retry="never", request_timeout=limit, limiter=self.limiter
        )
        return obj


def default_identity() -> str:
    """`<hostname>_<uuid>` like kube-scheduler: unique per process, readable in `kubectl get lease`."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def _utc_now() -> datetime:
    return datetime.now(UTC)


# --------------------------------------------------------------------------------------------- elector


class LeaseElector:
    """Campaign for, hold and release one Lease.

    `run(stop)` campaigns until leading (or until `stop`), then renews every retryPeriod until `release()`
    or cancellation; it raises LeadershipLostError when renewals failed for renewDeadline. `leading` is set
    while we lead; `bind_allowance()` is the binding path's guard.
    """

    def __init__(
        self,
        store: LeaseStore,
        config: LeaderElection,
        *,
        identity: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.store = store
        self.config = config
        self.identity = identity or default_identity()
        self.lease_duration = config.lease_duration_seconds
        self.renew_deadline = config.renew_deadline_seconds
        self.retry_period = config.retry_period_seconds
        self.timing = LeaseTiming(
            self.identity, lease_duration=self.lease_duration, renew_deadline=self.renew_deadline, clock=clock
        )
        self.clock = clock
        self.wall = wall
        self.leading = asyncio.Event()
        self.transitions_seen = 0
        self._lease: JSON | None = None  # the last lease object we read or wrote (its resourceVersion)
        self._lock = asyncio.Lock()  # one lease write at a time: a renew never races the release
        self._released = False
        self._wake = asyncio.Event()

    @classmethod
    def for_cluster(cls, client: KubeClient, config: LeaderElection, *, identity: str | None = None) -> LeaseElector:
        """An elector on the API server. Lease calls get their own token bucket, as kube-scheduler gives
        leader election its own client, so a burst of binds can never delay a renewal."""
        limiter = TokenBucket(client.limiter.qps, client.limiter.burst)
        store = ApiLeaseStore(client, config.resource_namespace, config.resource_name, limiter)
        return cls(store, config, identity=identity)

    # ------------------------------------------------------------------ state

    def is_leader(self) -> bool:
        """True while our last confirmed renewal is younger than renewDeadline."""
        return self.leading.is_set() and self.timing.is_leader()

    def bind_allowance(self) -> float:
        """The bind guard: seconds a bind may still take, or NotLeaderError when it must not be sent."""
        remaining = self.timing.remaining() if self.leading.is_set() else 0.0
        if remaining <= 0:
            raise NotLeaderError(f"not the leader of lease {self._lease_name()}; binding refused")
        return remaining

    async def wait_leading(self, stop: asyncio.Event) -> None:
        """Return once we lead, or once `stop` is set (the scheduling loop's LeaderGate)."""
        await wait_first(self.leading, stop)

    def describe(self) -> dict[str, Any]:
        """For the debug endpoint and logs."""
        observed = self.timing.observed
        return {
            "identity": self.identity,
            "lease": self._lease_name(),
            "leading": self.is_leader(),
            "holder": observed.holder if observed else None,
            "remaining_seconds": round(max(self.timing.remaining(), 0.0), 3),
        }

    def _lease_name(self) -> str:
        return f"{self.config.resource_namespace}/{self.config.resource_name}"

    # ------------------------------------------------------------------ loop

    async def run(self, stop: asyncio.Event) -> None:
        """Campaign until leading (returns if `stop` comes first), then renew until released or cancelled."""
        log.info("attempting to acquire leader lease", extra={"lease": self._lease_name(), "identity": self.identity})
        while not self.leading.is_set():
            if stop.is_set() or self._released:
                return
            await self._attempt(self.renew_deadline)
            if self.leading.is_set():
                break
            await self._sleep(self.retry_period * (1.0 + random.random() * JITTER_FACTOR))
        await self._renew_loop()

    async def _renew_loop(self) -> None:
        while True:
            await self._sleep(self.retry_period)
            while True:
                if self._released:
                    return
                remaining = self.timing.remaining()
                if remaining <= 0:
                    self._lost()
                if await self._attempt(remaining):
                    break
                await self._sleep(min(self.retry_period, max(self.timing.remaining(), 0.0)))

    def _lost(self) -> NoReturn:
        self.leading.clear()
        self.timing.lose()
        log.error(
            "leaderelection lost",
            extra={"lease": self._lease_name(), "identity": self.identity, "renew_deadline": self.renew_deadline},
        )
        raise LeadershipLostError(f"failed to renew lease {self._lease_name()} within {self.renew_deadline:g}s")

    async def _sleep(self, seconds: float) -> None:
        """Sleep, woken early by release()."""
        if self._released:
            return
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(seconds, 0.0)):
                await self._wake.wait()

    async def _attempt(self, budget: float) -> bool:
        """One tryAcquireOrRenew bounded by `budget` seconds; False on any failure (logged), True if we lead."""
        # No request can outlive the budget, which never exceeds what is left of the renew deadline.
        per_request = max(budget, 0.05)
        try:
            async with asyncio.timeout(budget), self._lock:
                if self._released:
                    return False
                return await self._try_acquire_or_renew(per_request)
        except TimeoutError:
            log.warning("lease request timed out", extra={"lease": self._lease_name(), "budget": round(budget, 3)})
        except ApiError as exc:
            level = logging.INFO if exc.status == 409 else logging.WARNING
            log.log(
                level,
                "failed to acquire or renew the lease",
                extra={"lease": self._lease_name(), "status": exc.status, "error": exc.message},
            )
        return False

    async def _try_acquire_or_renew(self, limit: float) -> bool:
        """client-go tryAcquireOrRenew: read the lease, and write ourselves into it if it is ours or free."""
        now = micro_time(self.wall())
        duration = max(1, int(self.lease_duration))
        if self.leading.is_set() and self._lease is not None:
            # Renewal: one PUT on the object we last wrote. Its resourceVersion makes it fail (409) if anyone
            # else wrote the lease since, and then the next attempt reads it afresh. Half the round trips of
            # client-go's GET+PUT, so a slow API server eats less of the renew deadline.
            held = LeaseRecord.from_spec(self._lease.get("spec"))
            record = LeaseRecord(self.identity, duration, held.acquire_time, now, held.transitions)
            sent = self.clock()
            try:
                self._lease = await self.store.replace(self._with_record(self._lease, record), limit)
            except ApiError as exc:
                if exc.status == 409:
                    self._lease = None
                raise
            self._became_leader(sent, record)
            return True
        obj = await self.store.get(limit)
        if obj is None:
            record = LeaseRecord(self.identity, duration, now, now, 0)
            new: JSON = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.config.resource_name, "namespace": self.config.resource_namespace},
                "spec": record.to_spec(),
            }
            sent = self.clock()
            self._lease = await self.store.create(new, limit)
            self._became_leader(sent, record)
            return True
        old = LeaseRecord.from_spec(obj.get("spec"))
        self._lease = obj
        self.timing.observe(old)
        if self.timing.held_by_other():
            return False
        if old.holder == self.identity:
            record = LeaseRecord(self.identity, duration, old.acquire_time, now, old.transitions)
        else:
            record = LeaseRecord(self.identity, duration, now, now, old.transitions + 1)
        sent = self.clock()
        self._lease = await self.store.replace(self._with_record(obj, record), limit)
        self._became_leader(sent, record)
        return True

    @staticmethod
    def _with_record(obj: JSON, record: LeaseRecord) -> JSON:
        return {**obj, "spec": {**(obj.get("spec") or {}), **record.to_spec()}}

    def _became_leader(self, sent: float, record: LeaseRecord) -> None:
        self.timing.confirm(sent, record)
        self.transitions_seen = record.transitions
        if not self.leading.is_set():
            log.info(
                "successfully acquired lease; leading",
                extra={"lease": self._lease_name(), "identity": self.identity, "transitions": record.transitions},
            )
            self.leading.set()

    # ------------------------------------------------------------------ release

    async def release(self) -> None:
        """Stop renewing; if we lead, hand the lease back at once (holder cleared, leaseDurationSeconds 1).

        Call only after the last bind finished: a standby may start binding as soon as this returns.
        Best effort — on failure the lease simply expires.
        """
        self._released = True
        self._wake.set()
        async with self._lock:
            was_leader = self.is_leader()
            self.leading.clear()
            self.timing.lose()
            if not was_leader or self._lease is None:
                return
            observed = self.timing.observed
            now = micro_time(self.wall())
            record = LeaseRecord("", 1, now, now, observed.transitions if observed else 0)
            try:
                async with asyncio.timeout(RELEASE_TIMEOUT):
                    self._lease = await self.store.replace(self._with_record(self._lease, record), RELEASE_TIMEOUT)
            except (ApiError, TimeoutError) as exc:
                log.warning("failed to release the lease; it will expire", extra={"error": str(exc)})
                return
            log.info("released the leader lease", extra={"lease": self._lease_name(), "identity": self.identity})
