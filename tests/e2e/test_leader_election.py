"""Leader election between two `pyscheduler run` replicas on a real kube-apiserver.

Both replicas run with short durations (leaseDuration 4s, renewDeadline 3s, retryPeriod 1s) and a Lease in
the test's namespace. One leads and binds, the other keeps its cache warm. Killing the leader (SIGKILL: no
release) while pods keep arriving must hand over within leaseDuration + a few seconds with every pod bound
exactly once; SIGTERM must release the lease so the standby takes over at its next retry. The failover times
are printed (run with -s to see them).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes_asyncio.client import ApiClient

from tests.e2e.conftest import NodeFactory, PodFactory
from tests.e2e.kube import JSON, list_pods, request_json, wait_for
from tests.e2e.replicas import (
    LEASE_DURATION,
    MICRO_TIME,
    RETRY_PERIOD,
    Replica,
    ReplicaFactory,
    get_lease,
    one_leader,
    replica_set,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]


@pytest.fixture
async def replicas(kubeconfig: Path, namespace: str, tmp_path: Path) -> AsyncIterator[ReplicaFactory]:
    """Ready replicas sharing one leader-election config (tests/e2e/replicas.py)."""
    async with replica_set(kubeconfig, namespace, tmp_path) as start:
        yield start


async def wait_leading(replica: Replica, since: float, within: float) -> float:
    """Polls until the replica leads; returns the seconds from `since`."""

    async def probe() -> bool:
        return await replica.leading()

    await wait_for(probe, what=f"{replica.name} to take over", within=within, interval=0.05)
    return time.monotonic() - since


async def assert_lease_shape(api_client: ApiClient, namespace: str, holder: Replica) -> JSON:
    """The Lease names the holder's identity, our leaseDuration and UTC MicroTime timestamps."""
    stats = await holder.stats()
    assert stats is not None
    identity = stats["leader_election"]["identity"]
    spec = (await get_lease(api_client, namespace))["spec"]
    assert spec["holderIdentity"] == identity
    assert identity.count("_") >= 1 and len(identity.rsplit("_", 1)[1]) == 36  # <hostname>_<uuid>
    assert spec["leaseDurationSeconds"] == int(LEASE_DURATION)
    assert MICRO_TIME.match(spec["renewTime"]) and MICRO_TIME.match(spec["acquireTime"]), spec
    spec_json: JSON = spec
    return spec_json


async def test_standby_takes_over_after_the_leader_is_killed(
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
    replicas: ReplicaFactory,
) -> None:
    """SIGKILL the leader while pods flow: takeover within leaseDuration + 5 s, every pod bound exactly once."""
    first, second = await asyncio.gather(replicas("replica-a"), replicas("replica-b"))
    leader, standby = await one_leader(first, second)
    before = await assert_lease_shape(api_client, namespace, leader)
    assert await leader.metric("pyscheduler_leader") == 1.0
    assert await standby.metric("pyscheduler_leader") == 0.0
    for i in range(3):
        await create_node(f"lf-node-{i}", cpu="100", pods=500)

    counter = itertools.count()
    created: list[str] = []
    flowing = asyncio.Event()
    flowing.set()

    async def create_pods() -> None:
        while flowing.is_set():
            name = f"flow-{next(counter):04d}"
            await create_pod(name, requests={"cpu": "10m"})
            created.append(name)
            await asyncio.sleep(0.05)

    creator = asyncio.create_task(create_pods())
    try:
        await asyncio.sleep(3.0)
        assert leader.process.pid is not None
        killed_at = time.monotonic()
        os.kill(leader.process.pid, signal.SIGKILL)
        pods_at_kill = len(created)
        failover = await wait_leading(standby, killed_at, within=LEASE_DURATION + 5)
        print(
            f"\nfailover after SIGKILL: {failover:.2f} s (leaseDuration {LEASE_DURATION:g}s, "
            f"retryPeriod {RETRY_PERIOD:g}s); {pods_at_kill} pods created before the kill"
        )
        await asyncio.sleep(3.0)
    finally:
        flowing.clear()
        await creator
    leader.process.stop()
    after = await assert_lease_shape(api_client, namespace, standby)
    assert after["leaseTransitions"] == before["leaseTransitions"] + 1

    async def all_bound() -> list[JSON] | None:
        pods = await list_pods(api_client, namespace)
        return pods if all(p["spec"].get("nodeName") for p in pods) else None

    pods = await wait_for(all_bound, what=f"all {len(created)} pods to be bound", within=30)
    assert sorted(p["metadata"]["name"] for p in pods) == sorted(created)

    async def scheduled_events() -> tuple[list[JSON], Counter[str]] | None:
        path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
        events: list[JSON] = (await request_json(api_client, "GET", path))["items"]
        counts = Counter(
            e["regarding"]["name"]
            for e in events
            if e.get("reason") == "Scheduled" and e.get("reportingController") == "pyscheduler"
        )
        # Events are written asynchronously: wait until every pod created after the kill has its event (the
        # survivor bound them); a pod the killed leader bound in its last instant may never get one.
        late = [name for name in created if name >= f"flow-{pods_at_kill:04d}" and name not in counts]
        return None if late else (events, counts)

    events, scheduled = await wait_for(scheduled_events, what="the survivor's Scheduled events", within=30)
    twice = {name: n for name, n in scheduled.items() if n > 1}
    assert not twice, f"pods with more than one Scheduled event: {twice}"
    assert not any(e.get("series") for e in events if e.get("reason") == "Scheduled")
    missing = sorted(set(created) - set(scheduled))
    assert all(name < f"flow-{pods_at_kill:04d}" for name in missing), f"missing Scheduled events: {missing}"
    survivor = await standby.stats()
    assert survivor is not None
    writer = survivor["writer"]
    assert writer["bind_conflicts"] == 0, f"the survivor hit bind conflicts (a double bind): {writer}"
    assert writer["bind_errors"] == 0, writer
    print(
        f"{len(created)} pods bound exactly once; survivor bound {survivor['bound']}; "
        f"{len(missing)} bound by the killed leader without a recorded event"
    )


async def test_sigterm_releases_the_lease_for_an_immediate_handover(
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
    replicas: ReplicaFactory,
) -> None:
    """SIGTERM the leader: it releases the lease and the standby leads within retryPeriod + 2 s."""
    first, second = await asyncio.gather(replicas("replica-a"), replicas("replica-b"))
    leader, standby = await one_leader(first, second)
    before = await assert_lease_shape(api_client, namespace, leader)
    assert leader.process.pid is not None
    stopped_at = time.monotonic()
    os.kill(leader.process.pid, signal.SIGTERM)
    handover = await wait_leading(standby, stopped_at, within=RETRY_PERIOD * (1 + 1.2) + 5)
    print(f"\nhandover after SIGTERM: {handover:.2f} s (retryPeriod {RETRY_PERIOD:g}s)")

    async def exited() -> bool:
        return not leader.process.running()

    await wait_for(exited, what="the old leader to exit", within=20, interval=0.1)
    assert leader.process.poll() == 0, leader.log()
    assert "released the leader lease" in leader.process.tail(200)
    assert handover < RETRY_PERIOD + 2.0
    after = await assert_lease_shape(api_client, namespace, standby)
    assert after["leaseTransitions"] == before["leaseTransitions"] + 1

    await create_node("handover-node", cpu="10")
    await create_pod("after-handover", requests={"cpu": "100m"})

    async def bound() -> bool:
        pods = await list_pods(api_client, namespace)
        return bool(pods) and all(p["spec"].get("nodeName") for p in pods)

    await wait_for(bound, what="the new leader to bind a pod", within=20)
