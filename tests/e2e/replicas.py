"""Replicas of `pyscheduler run` electing a leader on a real kube-apiserver (leader election and isolation tests).

Short durations (leaseDuration 4s, renewDeadline 3s, retryPeriod 1s), a Lease in the test's namespace, plain
HTTP with the debug handlers (not a test of serving).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from kubernetes_asyncio.client import ApiClient

from tests.cluster.harness import REPO_ROOT, ManagedProcess, free_port
from tests.e2e.kube import JSON, request_json, wait_for

LEASE_DURATION = 4.0
RENEW_DEADLINE = 3.0
RETRY_PERIOD = 1.0
LEASE_NAME = "pyscheduler"
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@dataclass
class Replica:
    """One `pyscheduler run` subprocess and its HTTP endpoint."""

    name: str
    process: ManagedProcess
    port: int

    async def stats(self) -> JSON | None:
        """/debug/pyscheduler/stats, or None when the replica does not answer (yet, or any more)."""
        with contextlib.suppress(aiohttp.ClientError, TimeoutError, ValueError):
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session,
                session.get(f"http://127.0.0.1:{self.port}/debug/pyscheduler/stats") as resp,
            ):
                if resp.status == 200:
                    doc: JSON = json.loads(await resp.text())
                    return doc
        return None

    async def leading(self) -> bool:
        doc = await self.stats()
        return bool(doc and (doc.get("leader_election") or {}).get("leading"))

    async def metric(self, name: str) -> float | None:
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session,
                session.get(f"http://127.0.0.1:{self.port}/metrics") as resp,
            ):
                for line in (await resp.text()).splitlines():
                    if line.startswith(f"{name} "):
                        return float(line.split()[1])
        return None

    def log(self) -> str:
        return self.process.tail(60)


ReplicaFactory = Callable[[str], Awaitable[Replica]]


async def get_lease(api_client: ApiClient, namespace: str) -> JSON:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{LEASE_NAME}"
    return await request_json(api_client, "GET", path)


async def one_leader(first: Replica, second: Replica) -> tuple[Replica, Replica]:
    """Waits until exactly one replica leads; returns (leader, standby)."""

    async def probe() -> tuple[Replica, Replica] | None:
        a, b = await first.leading(), await second.leading()
        if a and b:
            raise AssertionError("both replicas lead at once")
        if a or b:
            return (first, second) if a else (second, first)
        return None

    return await wait_for(probe, what="one replica to lead", within=LEASE_DURATION + 10, interval=0.1)


@contextlib.asynccontextmanager
async def replica_set(
    kubeconfig: Path, namespace: str, tmp_path: Path, *, profiles: str = "", args: Sequence[str] = ()
) -> AsyncIterator[ReplicaFactory]:
    """Starts ready replicas sharing one leader-election config (plus `profiles`, YAML of a profiles: list,
    and extra `args`); afterwards SIGTERM must end each live one with 0."""
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection:\n"
        "  leaderElect: true\n"
        f"  leaseDuration: {LEASE_DURATION:g}s\n"
        f"  renewDeadline: {RENEW_DEADLINE:g}s\n"
        f"  retryPeriod: {RETRY_PERIOD:g}s\n"
        f"  resourceName: {LEASE_NAME}\n"
        f"  resourceNamespace: {namespace}\n" + profiles
    )
    started: list[Replica] = []

    async def start(name: str) -> Replica:
        port = free_port()
        argv = [sys.executable, "-m", "scheduler", "run", "--kubeconfig", str(kubeconfig), "--config", str(config)]
        argv += ["--port", str(port), "--bind-address", "127.0.0.1", "-v", "2"]
        # Not a test of serving: plain HTTP (--insecure-serving) keeps TokenReviews out of the failover
        # timing; the stats come from the debug handlers.
        argv += ["--insecure-serving", "--enable-debug-handlers", *args]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        process = ManagedProcess(name, argv, tmp_path / f"{name}.log", env=env).start()
        replica = Replica(name, process, port)
        started.append(replica)

        async def ready() -> bool:
            if not process.running():
                raise AssertionError(f"{name} exited with {process.poll()}:\n{replica.log()}")
            doc = await replica.stats()
            return bool(doc and doc.get("leader_election"))

        await wait_for(ready, what=f"{name} to serve its stats", within=30)
        return replica

    try:
        yield start
    finally:
        failures = []
        for replica in started:
            process = replica.process
            if not process.running() or process.pid is None:
                process.stop()
                continue
            os.kill(process.pid, signal.SIGTERM)

            async def exited(p: ManagedProcess = process) -> bool:
                return not p.running()

            with contextlib.suppress(AssertionError):
                await wait_for(exited, what=f"{replica.name} to exit", within=20, interval=0.1)
            code = process.poll()
            log_text = replica.log()
            process.stop()
            if code != 0:
                failures.append(f"{replica.name} did not exit cleanly on SIGTERM (code {code}):\n{log_text}")
        assert not failures, "\n".join(failures)
