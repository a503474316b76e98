"""A plugin that blocks the scheduling loop costs neither the lease nor the probes (two replicas, real API).

Both replicas load tests/e2e/slow_plugin.py's SlowFilter; a pod labelled to block makes the leader's Filter
`time.sleep(30)`. Leader election and the HTTP server run on the control loop (a thread of their own), so
meanwhile: the leader keeps renewing its Lease (no renewal gap beyond renewDeadline, the holder never
changes, the standby never leads), /healthz, /readyz and /metrics answer within a kubelet probe's 1 s
timeout, and the stall monitor logs the blocking call by plugin and extension point and counts it. Pods
created during the block are scheduled once it ends: none lost, each bound once. The block lasts
PYSCHEDULER_ISOLATION_BLOCK_SECONDS (default 30); the latencies and renewal gaps are printed (-s).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections import Counter
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio.client import ApiClient

from tests.e2e.conftest import NodeFactory, PodFactory, list_events
from tests.e2e.kube import JSON, list_pods, wait_for
from tests.e2e.replicas import RENEW_DEADLINE, Replica, ReplicaFactory, get_lease, one_leader, replica_set
from tests.e2e.slow_plugin import LABEL

BLOCK = float(os.environ.get("PYSCHEDULER_ISOLATION_BLOCK_SECONDS", "30"))
PROBE_TIMEOUT = 1.0  # a kubelet probe's default timeoutSeconds
PROFILES = (
    "profiles:\n"
    "- schedulerName: pyscheduler\n"
    "  plugins:\n"
    "    multiPoint:\n"
    "      enabled: [{name: SlowFilter}]\n"
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120 + 2 * BLOCK)]


@pytest.fixture
async def replicas(kubeconfig: Path, namespace: str, tmp_path: Path) -> AsyncIterator[ReplicaFactory]:
    async with replica_set(
        kubeconfig, namespace, tmp_path, profiles=PROFILES, args=["--plugin", "tests.e2e.slow_plugin:SlowFilter"]
    ) as start:
        yield start


async def timed_get(session: aiohttp.ClientSession, replica: Replica, path: str) -> tuple[int, float, str]:
    """(status, seconds, body) of one GET with the probe's timeout; status 0 when it did not answer in time."""
    start = time.monotonic()
    try:
        async with session.get(
            f"http://127.0.0.1:{replica.port}{path}", timeout=aiohttp.ClientTimeout(total=PROBE_TIMEOUT)
        ) as resp:
            body = await resp.text()
            return resp.status, time.monotonic() - start, body
    except (aiohttp.ClientError, TimeoutError):
        return 0, time.monotonic() - start, ""


def micro_time(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


async def test_a_blocking_filter_costs_neither_the_lease_nor_the_probes(
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
    replicas: ReplicaFactory,
) -> None:
    """While the leader's Filter sleeps: renewals, probes and /metrics keep their deadlines, one leader
    throughout; afterwards every pod is bound exactly once and the stall was logged and counted."""
    first, second = await asyncio.gather(replicas("replica-a"), replicas("replica-b"))
    leader, standby = await one_leader(first, second)
    stats = await leader.stats()
    assert stats is not None
    identity = stats["leader_election"]["identity"]
    for i in range(2):
        await create_node(f"{namespace}-n{i}", cpu="8")
    await create_pod("slow", labels={LABEL: f"{BLOCK:g}"}, requests={"cpu": "100m"})

    async def blocked() -> bool:
        return "a plugin call is blocking the scheduling loop" in leader.process.tail(400)

    await wait_for(blocked, what="the leader's stall monitor to see the blocking Filter", within=20, interval=0.2)
    started = time.monotonic()
    latencies: dict[str, list[float]] = {"/healthz": [], "/readyz": [], "/metrics": []}
    failures: list[str] = []
    renewals: list[str] = []
    during: list[str] = []
    async with aiohttp.ClientSession() as session:
        while time.monotonic() - started < BLOCK - 3:
            for path, seen in latencies.items():
                status, seconds, body = await timed_get(session, leader, path)
                seen.append(seconds)
                if status != 200:
                    failures.append(f"{path}: status {status} after {seconds:.2f} s")
                elif path == "/metrics" and "\npyscheduler_leader 1.0\n" not in body:
                    failures.append("/metrics: the leader's pyscheduler_leader is not 1")
            spec = (await get_lease(api_client, namespace))["spec"]
            if spec["holderIdentity"] != identity:
                failures.append(f"the lease moved to {spec['holderIdentity']}")
            if not renewals or renewals[-1] != spec["renewTime"]:
                renewals.append(spec["renewTime"])
            if await standby.leading():
                failures.append("the standby leads too")
            if len(during) < 5:
                name = f"during-{len(during)}"
                await create_pod(name, requests={"cpu": "100m"})
                during.append(name)
            await asyncio.sleep(0.5)
    gaps = [micro_time(b) - micro_time(a) for a, b in itertools.pairwise(renewals)]
    worst = {path: max(seen) for path, seen in latencies.items()}
    print(
        f"\nwhile Filter slept {BLOCK:g} s: {len(renewals)} renewals, longest gap {max(gaps):.2f} s "
        f"(renewDeadline {RENEW_DEADLINE:g} s); slowest answers "
        + ", ".join(f"{p} {s * 1000:.0f} ms" for p, s in worst.items())
    )
    assert not failures, failures
    assert max(gaps) < RENEW_DEADLINE and len(renewals) >= (BLOCK - 3) / 2

    async def all_bound() -> list[JSON] | None:
        pods = await list_pods(api_client, namespace)
        return pods if len(pods) == 1 + len(during) and all(p["spec"].get("nodeName") for p in pods) else None

    await wait_for(all_bound, what="the slow pod and those created meanwhile to be bound", within=BLOCK + 30)

    async def scheduled() -> Counter[str] | None:
        counts = Counter(
            e["regarding"]["name"] for e in await list_events(api_client, namespace) if e.get("reason") == "Scheduled"
        )
        return counts if set(counts) == {"slow", *during} else None

    counts = await wait_for(scheduled, what="a Scheduled event for every pod", within=30)
    assert set(counts.values()) == {1}, f"a pod bound more than once: {counts}"
    assert (await get_lease(api_client, namespace))["spec"]["holderIdentity"] == identity
    log = leader.process.tail(400)
    assert 'plugin="SlowFilter" extensionPoint="Filter"' in log, log
    series = 'pyscheduler_plugin_long_calls_total{extension_point="Filter",plugin="SlowFilter"}'
    assert await leader.metric(series) == 1.0
