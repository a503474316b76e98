"""LeaseElector's timing logic: when a rival's lease counts as expired, when our own leadership stops being
safe, and that binds are refused before any rival could take over.

Only the timing is tested here (fake clock, and for the loop tests a tiny in-memory lease that can be made to
fail or hang); the API behaviour — resourceVersion conflicts, leaseTransitions, release, real failover — is
tested against a real kube-apiserver in tests/e2e/test_leader_election.py.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.adapters.cluster.client import ApiError
from scheduler.adapters.cluster.leader import (
    LeadershipLostError,
    LeaseElector,
    LeaseRecord,
    LeaseTiming,
    NotLeaderError,
)
from scheduler.config.types import LeaderElection
from scheduler.core.api import BindError

JSON = dict[str, Any]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def timing(clock: FakeClock, lease: float = 15.0, renew: float = 10.0) -> LeaseTiming:
    return LeaseTiming("me", lease_duration=lease, renew_deadline=renew, clock=clock)


def other(renew_time: str = "t0", duration: int = 15, holder: str = "other") -> LeaseRecord:
    return LeaseRecord(holder, duration, "t0", renew_time, 3)


# --------------------------------------------------------------------------------------------- LeaseTiming


def test_not_leader_until_a_write_is_confirmed() -> None:
    """A fresh elector leads nowhere: no allowance, not leader."""
    t = timing(FakeClock())
    assert not t.is_leader()
    assert t.remaining() == 0.0


def test_leadership_lasts_renew_deadline_from_the_send_time() -> None:
    """Validity counts from when the confirmed write was *sent*, not from when its answer came back."""
    clock = FakeClock()
    t = timing(clock)
    sent = clock.now
    clock.now += 2.0  # a slow answer
    t.confirm(sent, LeaseRecord("me", 15, "a", "a", 0))
    assert t.remaining() == pytest.approx(8.0)
    clock.now = sent + 9.999
    assert t.is_leader()
    clock.now = sent + 10.0
    assert not t.is_leader()


def test_rival_lease_expires_lease_duration_after_its_last_observed_change() -> None:
    """Expiry is judged by our monotonic observation of changes, never by the record's renewTime."""
    clock = FakeClock()
    t = timing(clock)
    t.observe(other("t0"))
    clock.now += 10.0
    t.observe(other("t0"))  # the same record again: its age does not restart
    assert t.held_by_other()
    clock.now += 4.999
    assert t.held_by_other()
    clock.now += 0.001
    assert not t.held_by_other()


def test_a_renewed_record_restarts_the_rival_lease() -> None:
    """A changed record (the holder renewed) is fresh again, whatever its timestamps say."""
    clock = FakeClock()
    t = timing(clock)
    t.observe(other("t0"))
    clock.now += 14.0
    t.observe(other("t1"))
    clock.now += 14.0
    assert t.held_by_other()


@pytest.mark.parametrize(
    ("record", "held"),
    [
        pytest.param(other(holder=""), False, id="released-no-holder"),
        pytest.param(other(holder="me"), False, id="our-own"),
        pytest.param(other(duration=1), False, id="released-duration-1s-after-2s"),
        pytest.param(other(duration=0), True, id="no-duration-uses-ours"),
    ],
)
def test_who_holds_the_lease(record: LeaseRecord, held: bool) -> None:
    """The record's own leaseDurationSeconds (1 after a release) decides, and an empty holder is free."""
    clock = FakeClock()
    t = timing(clock)
    t.observe(record)
    clock.now += 2.0
    assert t.held_by_other() is held


@given(
    renew=st.floats(min_value=1.0, max_value=30.0),
    margin=st.floats(min_value=0.001, max_value=30.0),
    answer_delay=st.floats(min_value=0.0, max_value=5.0),
    observe_delay=st.floats(min_value=0.0, max_value=5.0),
)
def test_old_leader_stops_before_any_rival_can_take_over(
    renew: float, margin: float, answer_delay: float, observe_delay: float
) -> None:
    """For any leaseDuration > renewDeadline: the leader's allowance ends before a rival may acquire."""
    lease = renew + margin
    leader_clock, rival_clock = FakeClock(), FakeClock()
    leader, rival = timing(leader_clock, lease, renew), timing(rival_clock, lease, renew)
    sent = leader_clock.now
    record = LeaseRecord("me", int(lease) or 1, "a", "a", 0)
    # The rival reads the record only after it was written, i.e. after it was sent.
    rival_clock.now = sent + observe_delay
    rival.observe(LeaseRecord("leader", 0, "a", "a", 0))
    leader_clock.now = sent + answer_delay
    leader.confirm(sent, record)
    # Walk the shared time line: whenever the rival may take over, the leader must no longer bind.
    for step in range(0, 130):
        now = sent + step * 0.5
        leader_clock.now = rival_clock.now = max(now, rival_clock.now)
        if not rival.held_by_other():
            assert not leader.is_leader()


def test_lose_forgets_leadership() -> None:
    clock = FakeClock()
    t = timing(clock)
    t.confirm(clock.now, LeaseRecord("me", 15, "a", "a", 0))
    t.lose()
    assert not t.is_leader()


# --------------------------------------------------------------------------------------------- loop timing


class MemoryLease:
    """One Lease in memory, with switchable failures: just enough to drive the elector's timing."""

    def __init__(self) -> None:
        self.obj: JSON | None = None
        self.version = 0
        self.fail = False
        self.hang = False
        self.writes = 0

    async def _gate(self) -> None:
        if self.hang:
            await asyncio.sleep(3600)
        if self.fail:
            raise ApiError(503, "ServiceUnavailable", "down")

    async def get(self, limit: float) -> JSON | None:
        await self._gate()
        return None if self.obj is None else dict(self.obj)

    async def create(self, body: JSON, limit: float) -> JSON:
        await self._gate()
        return self._store(body)

    async def replace(self, body: JSON, limit: float) -> JSON:
        await self._gate()
        assert self.obj is not None
        if body["metadata"].get("resourceVersion") != self.obj["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified")
        return self._store(body)

    def _store(self, body: JSON) -> JSON:
        self.version += 1
        self.writes += 1
        self.obj = {**body, "metadata": {**body["metadata"], "resourceVersion": str(self.version)}}
        return dict(self.obj)


def config(lease: float = 0.8, renew: float = 0.5, retry: float = 0.1) -> LeaderElection:
    return LeaderElection(
        lease_duration_seconds=lease, renew_deadline_seconds=renew, retry_period_seconds=retry, resource_namespace="ns"
    )


async def leading(elector: LeaseElector, stop: asyncio.Event) -> asyncio.Task[None]:
    task = asyncio.create_task(elector.run(stop))
    async with asyncio.timeout(2):
        await elector.wait_leading(stop)
    assert elector.is_leader()
    return task


def test_bind_guard_refuses_when_not_leading() -> None:
    """Before acquiring, the guard raises a BindError subclass the binder turns into a retryable error."""
    elector = LeaseElector(MemoryLease(), config())
    with pytest.raises(NotLeaderError) as err:
        elector.bind_allowance()
    assert isinstance(err.value, BindError)


@pytest.mark.parametrize("failure", ["fail", "hang"])
async def test_failing_renewals_stop_binds_before_the_lease_can_expire(failure: str) -> None:
    """Renewals that error or hang: binds are refused by renewDeadline, run() raises, never past leaseDuration."""
    store, stop = MemoryLease(), asyncio.Event()
    elector = LeaseElector(store, config())
    task = await leading(elector, stop)
    assert elector.bind_allowance() > 0
    setattr(store, failure, True)
    broken = time.monotonic()
    refused_after = None
    while not task.done():
        try:
            elector.bind_allowance()
        except NotLeaderError:
            refused_after = refused_after or time.monotonic() - broken
        await asyncio.sleep(0.01)
    with pytest.raises(LeadershipLostError):
        task.result()
    lost_after = time.monotonic() - broken
    with pytest.raises(NotLeaderError):
        elector.bind_allowance()
    refused_after = refused_after or lost_after
    assert refused_after <= 0.5 + 0.05  # renewDeadline counted from the last confirmed renewal
    assert lost_after < 0.8  # the process exits before a rival could acquire (leaseDuration)
    assert not elector.leading.is_set()


async def test_a_short_outage_does_not_lose_leadership() -> None:
    """Renewals failing for less than renewDeadline are retried every retryPeriod; leadership survives."""
    store, stop = MemoryLease(), asyncio.Event()
    elector = LeaseElector(store, config())
    task = await leading(elector, stop)
    store.fail = True
    await asyncio.sleep(0.25)
    store.fail = False
    await asyncio.sleep(0.4)
    assert elector.is_leader() and not task.done()
    await elector.release()
    async with asyncio.timeout(1):
        await task
    assert not elector.is_leader()


async def test_release_stops_renewing_and_frees_the_lease() -> None:
    """release(): no holder, leaseDurationSeconds 1, no further writes, and binds are refused at once."""
    store, stop = MemoryLease(), asyncio.Event()
    elector = LeaseElector(store, config())
    task = await leading(elector, stop)
    await elector.release()
    async with asyncio.timeout(1):
        await task
    assert store.obj is not None
    assert store.obj["spec"]["holderIdentity"] == ""
    assert store.obj["spec"]["leaseDurationSeconds"] == 1
    writes = store.writes
    await asyncio.sleep(0.3)
    assert store.writes == writes
    with pytest.raises(NotLeaderError):
        elector.bind_allowance()


async def test_standby_waits_for_expiry_then_takes_over() -> None:
    """A standby acquires only after the holder stopped renewing for leaseDuration (observed locally)."""
    store, stop = MemoryLease(), asyncio.Event()
    first = LeaseElector(store, config(), identity="first")
    first_task = await leading(first, stop)
    second = LeaseElector(store, config(), identity="second")
    second_task = asyncio.create_task(second.run(stop))
    await asyncio.sleep(0.5)
    assert not second.leading.is_set()
    first_task.cancel()  # the holder dies without releasing
    died = time.monotonic()
    async with asyncio.timeout(3):
        await second.wait_leading(stop)
    took = time.monotonic() - died
    assert 0.8 - 0.15 <= took <= 0.8 + 2.2 * 0.1 + 0.3
    assert store.obj is not None and store.obj["spec"]["holderIdentity"] == "second"
    await second.release()
    await asyncio.gather(first_task, second_task, return_exceptions=True)


async def test_stop_ends_a_campaign() -> None:
    """A standby stops campaigning when asked to stop (SIGTERM before it ever led)."""
    store, stop = MemoryLease(), asyncio.Event()
    holder = LeaseElector(store, config(), identity="holder")
    holder_task = await leading(holder, stop)
    standby = LeaseElector(store, config(), identity="standby")
    standby_task = asyncio.create_task(standby.run(stop))
    await asyncio.sleep(0.2)
    stop.set()
    async with asyncio.timeout(1):
        await standby.wait_leading(stop)
        await standby_task
    assert not standby.leading.is_set()
    await holder.release()
    await holder_task
