"""The fault suite's machinery: pyscheduler replicas behind fault proxies, bursts of pods, invariant checks.

A scenario (tests/e2e/test_faults.py) starts one or two `pyscheduler run` subprocesses, as in production,
each reaching the harness API server through its own `FaultProxy`; creates nodes and a burst of pods that
nearly fills them; injects its fault once a seeded share of the burst is bound (so binds are in flight);
heals; waits until every pod is bound; and then checks what must always hold:

* 0 pods lost: every pod of the burst is bound;
* 0 double-bound: no pod has more than one `Scheduled` event, and its event names the node it is on;
* 0 nodes over-committed: per node, the pods' cpu requests and count fit its allocatable;
* no bound pod carries `PodScheduled=False`;
* each live replica's cache equals a fresh LIST (its own comparison, triggered by SIGUSR2, as one log line).

Replicas log JSON (`--log-format json`); readiness, leadership, binds and comparisons are read from the log, so
the suite needs none of the HTTP endpoints (which need credentials once secure serving is on).

Sizes: the default slice is small (a few minutes on 2 loaded cores); PYSCHEDULER_FAULTS=long runs the fault
run's size (200 nodes, 1500 pods per scenario). PYSCHEDULER_FAULTS_SEED fixes the seed (printed either way).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.cluster.harness import REPO_ROOT, ControlPlane, ManagedProcess, free_port
from tests.e2e.kube import node_manifest, node_status, pod_manifest, request_json, status_condition
from tests.faults.proxy import FaultProxy, proxy_for, write_kubeconfig

JSON = dict[str, Any]

FAULTS_ENV = "PYSCHEDULER_FAULTS"
SEED_ENV = "PYSCHEDULER_FAULTS_SEED"
REPORT_ENV = "PYSCHEDULER_FAULTS_REPORT"
SCHEDULER_NAME = "pyscheduler"
# Shorter than upstream's 15/10/2 s so takeovers are quick, long enough that a replica starved of CPU on a
# loaded 2-core machine (every request also crosses a Python TLS proxy) does not lose its lease by accident.
LEASE_DURATION = 8.0
RENEW_DEADLINE = 6.0
RETRY_PERIOD = 1.0
CREATE_CONCURRENCY = 16


@dataclass(frozen=True)
class Size:
    """How big a scenario is: nodes, pods (that nearly fill the nodes' cpu) and the faults' extent."""

    nodes: int
    pods: int
    node_cpu_milli: int
    pod_cpu_milli: int
    cuts: int  # connection cuts in the cuts scenario
    etcd_freeze: float  # seconds etcd stays SIGSTOPped
    storm: float  # seconds of each HTTP error storm
    within: float  # seconds every pod must be bound after the fault ends

    @property
    def fill(self) -> float:
        return self.pods * self.pod_cpu_milli / (self.nodes * self.node_cpu_milli)


FAST = Size(nodes=10, pods=120, node_cpu_milli=2000, pod_cpu_milli=150, cuts=4, etcd_freeze=15.0, storm=4.0,
            within=120.0)
LONG = Size(nodes=200, pods=1500, node_cpu_milli=1000, pod_cpu_milli=125, cuts=10, etcd_freeze=15.0, storm=10.0,
            within=300.0)


def size_from_env() -> Size:
    return LONG if os.environ.get(FAULTS_ENV) == "long" else FAST


def seed_from_env() -> int:
    value = os.environ.get(SEED_ENV)
    return int(value) if value else random.SystemRandom().randrange(1 << 30)


# --------------------------------------------------------------------------------------------- replicas


class Replica:
    """One `pyscheduler run` subprocess behind its own fault proxy; its JSON log is read incrementally."""

    def __init__(self, name: str, proxy: FaultProxy, directory: Path, config: Path, kubeconfig: Path) -> None:
        self.name = name
        self.proxy = proxy
        self.log_path = directory / f"{name}.log"
        self.port = free_port()
        argv = [sys.executable, "-m", "scheduler", "run", "--kubeconfig", str(kubeconfig), "--config", str(config)]
        argv += ["--port", str(self.port), "--bind-address", "127.0.0.1", "-v", "2", "--log-format", "json"]
        argv += ["--resync-period", "30"]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        self.process = ManagedProcess(name, argv, self.log_path, env=env)
        self.records: list[JSON] = []
        self.counts: Counter[str] = Counter()  # log records per message
        self._offset = 0

    def start(self) -> Replica:
        self.process.start()
        return self

    def read(self) -> list[JSON]:
        """Every JSON log record so far (non-JSON lines, such as the command line, are skipped)."""
        with contextlib.suppress(FileNotFoundError), self.log_path.open("rb") as f:
            f.seek(self._offset)
            data = f.read()
            end = data.rfind(b"\n") + 1
            self._offset += end
            for line in data[:end].splitlines():
                if line.startswith(b"{"):
                    with contextlib.suppress(ValueError):
                        record = json.loads(line)
                        self.records.append(record)
                        self.counts[str(record.get("msg", ""))] += 1
        return self.records

    def find(self, msg: str, since: float = 0.0) -> list[JSON]:
        return [r for r in self.read() if r.get("msg", "").startswith(msg) and r.get("ts", 0.0) >= since]

    def bound(self) -> int:
        self.read()
        return self.counts["Successfully bound pod to node"]

    def alive(self) -> bool:
        return self.process.running()

    def tail(self, lines: int = 40) -> str:
        return self.process.tail(lines)

    async def wait_log(self, msg: str, *, since: float = 0.0, within: float = 60.0) -> JSON:
        """The first record starting with `msg` logged at or after `since` (epoch seconds)."""
        deadline = time.monotonic() + within
        while True:
            found = self.find(msg, since)
            if found:
                return found[0]
            if not self.alive():
                raise AssertionError(f"{self.name} exited ({self.process.poll()}) waiting for {msg!r}:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: no {msg!r} within {within:.0f} s:\n{self.tail()}")
            await asyncio.sleep(0.1)

    async def compare(self) -> JSON:
        """SIGUSR2: the replica compares its cache with a fresh LIST and logs one line; returns its counts."""
        sent = time.time()
        assert self.process.pid is not None
        os.kill(self.process.pid, signal.SIGUSR2)
        record = await self.wait_log("cache comparison", since=sent, within=60)
        counts: JSON = record.get("counts") or {}
        return {"total": counts.get("total", 0), **counts, "names": record.get("names") or {}}

    async def terminate(self, within: float = 30.0) -> int | None:
        """SIGTERM and wait; the exit code (None if it had to be killed)."""
        if self.alive() and self.process.pid is not None:
            os.kill(self.process.pid, signal.SIGTERM)
            deadline = time.monotonic() + within
            while self.alive() and time.monotonic() < deadline:  # noqa: ASYNC110 - polling a child process
                await asyncio.sleep(0.1)
        code = self.process.poll()
        self.process.stop()
        return code

    def kill(self) -> None:
        assert self.process.pid is not None
        os.kill(self.process.pid, signal.SIGKILL)


def write_config(path: Path, namespace: str, *, leader_elect: bool) -> Path:
    lines = [
        "apiVersion: kubescheduler.config.k8s.io/v1",
        "kind: KubeSchedulerConfiguration",
        "clientConnection:",
        "  qps: 200",
        "  burst: 400",
        "leaderElection:",
        f"  leaderElect: {'true' if leader_elect else 'false'}",
    ]
    if leader_elect:
        lines += [
            f"  leaseDuration: {LEASE_DURATION:g}s",
            f"  renewDeadline: {RENEW_DEADLINE:g}s",
            f"  retryPeriod: {RETRY_PERIOD:g}s",
            "  resourceName: pyscheduler",
            f"  resourceNamespace: {namespace}",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


# --------------------------------------------------------------------------------------------- scenario


@dataclass
class Outcome:
    """What one scenario measured (printed, and collected for docs/robustness.md)."""

    scenario: str
    seed: int
    size: str
    pods: int
    nodes: int
    fault_seconds: float = 0.0
    recovery_seconds: float = 0.0  # fault healed -> every pod bound (0 when all were bound before it healed)
    total_seconds: float = 0.0  # fault began -> every pod bound
    resumed_seconds: float | None = None  # fault healed -> first successful bind
    takeover_seconds: float | None = None
    compare_attempts: int = 0
    notes: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        parts = [
            f"{self.scenario}: {self.pods} pods / {self.nodes} nodes (seed {self.seed})",
            f"fault {self.fault_seconds:.1f} s",
            f"all bound {self.total_seconds:.1f} s after it began, {self.recovery_seconds:.1f} s after it ended",
        ]
        if self.resumed_seconds is not None:
            parts.append(f"binding resumed after {self.resumed_seconds:.2f} s")
        if self.takeover_seconds is not None:
            parts.append(f"takeover {self.takeover_seconds:.2f} s")
        parts.append(f"cache == LIST after {self.compare_attempts} comparison(s)")
        if self.notes:
            parts.append(", ".join(f"{k} {v}" for k, v in self.notes.items()))
        return "; ".join(parts)


class Scenario:
    """One scenario's namespace, nodes, pods and replicas on the suite's control plane."""

    def __init__(
        self, name: str, cp: ControlPlane, api: ApiClient, namespace: str, directory: Path, size: Size, seed: int
    ) -> None:
        self.name = name
        self.cp = cp
        self.api = api
        self.namespace = namespace
        self.directory = directory
        self.size = size
        self.seed = seed
        self.rng = random.Random(seed)
        self.replicas: list[Replica] = []
        self.proxies: list[FaultProxy] = []
        self.nodes: list[str] = []
        self.pod_names: list[str] = []
        self.deleted: set[str] = set()
        self.exit_codes: dict[str, int | None] = {}
        self.outcome = Outcome(name, seed, "long" if size is LONG else "fast", size.pods, size.nodes)

    # -- replicas

    async def start_replicas(self, count: int, *, leader_elect: bool) -> list[Replica]:
        config = write_config(self.directory / "config.yaml", self.namespace, leader_elect=leader_elect)
        started = []
        for i in range(count):
            name = f"{self.name}-{'ab'[i]}"
            proxy = await proxy_for(self.cp.server, self.cp.work_dir / "pki").start()
            self.proxies.append(proxy)
            kubeconfig = write_kubeconfig(self.directory / f"{name}.kubeconfig", proxy.url, self.cp.token)
            replica = Replica(name, proxy, self.directory, config, kubeconfig).start()
            self.replicas.append(replica)
            started.append(replica)
        for replica in started:
            await replica.wait_log("caches synced", within=90)
        return started

    async def leader(self, candidates: Sequence[Replica], *, since: float = 0.0, within: float = 30.0) -> Replica:
        """The replica that logged "starting to schedule" (after `since`)."""
        deadline = time.monotonic() + within
        while True:
            leading = [r for r in candidates if r.find("starting to schedule", since)]
            if len(leading) > 1:
                raise AssertionError(f"two replicas started to schedule: {[r.name for r in leading]}")
            if leading:
                return leading[0]
            if time.monotonic() > deadline:
                raise AssertionError("no replica started to schedule:\n" + "\n".join(r.tail() for r in candidates))
            await asyncio.sleep(0.1)

    # -- objects

    async def _retrying(self, method: str, path: str, body: JSON | None = None, *, ok: tuple[int, ...] = ()) -> None:
        """One write that must happen despite the faults (the suite's own client goes straight to the API
        server, which may be down or frozen): retried until it works or answers one of `ok`."""
        deadline = time.monotonic() + 180
        while True:
            try:
                await request_json(self.api, method, path, body=body, request_timeout=10)
                return
            except ApiException as exc:
                if exc.status in ok:
                    return
                if exc.status not in (0, 429, 500, 502, 503, 504) and exc.status is not None:
                    raise
            except (OSError, TimeoutError):
                pass
            except Exception as exc:  # aiohttp errors of a restarting API server
                if "Cannot connect" not in str(exc) and "Server disconnected" not in str(exc):
                    raise
            if time.monotonic() > deadline:
                raise AssertionError(f"{method} {path} kept failing for 180 s")
            await asyncio.sleep(0.5)

    async def create_nodes(self, count: int, prefix: str = "n") -> list[str]:
        names = [f"{self.namespace}-{prefix}{i:03d}" for i in range(len(self.nodes), len(self.nodes) + count)]
        cpu = f"{self.size.node_cpu_milli}m"

        async def one(name: str) -> None:
            manifest = node_manifest(name, zone=f"zone-{hash(name) % 3}", labels={"fault-suite": self.namespace})
            await self._retrying("POST", "/api/v1/nodes", manifest, ok=(409,))
            node = await request_json(self.api, "GET", f"/api/v1/nodes/{name}")
            node["status"] = node_status(cpu=cpu, memory="64Gi", pods=110)
            await self._retrying("PUT", f"/api/v1/nodes/{name}/status", node)

        await _bounded([one(n) for n in names], CREATE_CONCURRENCY)
        self.nodes.extend(names)
        return names

    async def delete_node(self, name: str) -> None:
        await self._retrying("DELETE", f"/api/v1/nodes/{name}", ok=(404,))
        self.nodes.remove(name)

    def pod(self, name: str) -> JSON:
        manifest = pod_manifest(name, scheduler_name=SCHEDULER_NAME, requests={"cpu": f"{self.size.pod_cpu_milli}m"})
        manifest["metadata"]["namespace"] = self.namespace
        return manifest

    async def create_pods(self, names: Sequence[str]) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/pods"

        async def one(name: str) -> None:
            await self._retrying("POST", path, self.pod(name), ok=(409,))
            self.pod_names.append(name)

        await _bounded([one(n) for n in names], CREATE_CONCURRENCY)

    def burst(self, count: int | None = None, prefix: str = "p") -> asyncio.Task[None]:
        """Create the burst in the background (retrying through faults)."""
        start = len([n for n in self.pod_names if n.startswith(prefix)])
        names = [f"{prefix}{i:05d}" for i in range(start, start + (count or self.size.pods))]
        return asyncio.get_running_loop().create_task(self.create_pods(names))

    async def delete_pod(self, name: str) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/pods/{name}"
        await self._retrying("DELETE", path + "?gracePeriodSeconds=0", ok=(404,))
        self.deleted.add(name)

    async def pods(self) -> list[JSON]:
        answer = await request_json(self.api, "GET", f"/api/v1/namespaces/{self.namespace}/pods", request_timeout=60)
        items: list[JSON] = answer["items"]
        return items

    async def bound_share_reached(self, share: float, replicas: Sequence[Replica], within: float = 120) -> None:
        """Wait until the replicas' logs report `share` of the burst bound (the fault then hits binds in flight)."""
        want = max(1, int(self.size.pods * share))
        deadline = time.monotonic() + within
        while sum(r.bound() for r in replicas) < want:
            if time.monotonic() > deadline:
                raise AssertionError(f"fewer than {want} pods bound within {within:.0f} s")
            await asyncio.sleep(0.05)

    async def wait_all_bound(self, within: float) -> float:
        """Wait until every live pod of the scenario is bound; returns the epoch time it was seen.

        Polls only the unbound pods (a field selector keeps the answers small: the suite's own CPU must not
        starve the proxies on a loaded machine), then checks once that every expected pod exists.
        """
        deadline = time.monotonic() + within
        path = f"/api/v1/namespaces/{self.namespace}/pods"
        while True:
            with contextlib.suppress(ApiException, OSError, TimeoutError):
                unbound = await request_json(self.api, "GET", path, query={"fieldSelector": "spec.nodeName="})
                if not unbound["items"]:
                    seen = time.time()
                    names = {p["metadata"]["name"] for p in await self.pods()}
                    if set(self.pod_names) - self.deleted <= names:
                        return seen
            if time.monotonic() > deadline:
                alive = [r for r in self.replicas if r.alive()]
                raise AssertionError(
                    f"not every pod bound within {within:.0f} s after the fault:\n"
                    + "\n".join(f"--- {r.name}\n{r.tail(30)}" for r in alive)
                )
            await asyncio.sleep(0.5)

    def first_bind_after(self, since: float) -> float | None:
        times = [r["ts"] for rep in self.replicas for r in rep.find("Successfully bound pod to node", since)]
        return min(times) - since if times else None

    # -- the invariants

    async def caches_agree(self, replicas: Sequence[Replica], within: float = 90.0) -> int:
        """Each live replica's cache equals a fresh LIST; returns how many comparisons it took at most."""
        worst = 0
        for replica in replicas:
            deadline = time.monotonic() + within
            attempts = 0
            while True:
                attempts += 1
                doc = await replica.compare()
                if doc["total"] == 0:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"{replica.name}: cache still differs from the API: {doc}")
                await asyncio.sleep(2.0)
            worst = max(worst, attempts)
        return worst

    async def events_settled(self, within: float = 60.0) -> int:
        """Wait until the number of Scheduled events stops growing (the replicas' queued events are written
        asynchronously, and SIGTERM flushes for 5 s only); returns it."""
        deadline = time.monotonic() + within
        last, stable = -1, 0
        while time.monotonic() < deadline:
            events = await self._list(f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events")
            count = sum(1 for e in events if e.get("reason") == "Scheduled")
            stable = stable + 1 if count == last else 0
            if stable >= 2:
                break
            last = count
            await asyncio.sleep(1.0)
        return last

    async def check_invariants(self, *, every_pod_has_its_event: bool = False) -> None:
        """0 lost, 0 double-bound, 0 over-committed nodes, no bound pod with PodScheduled=False."""
        pods = await self.pods()
        by_name = {p["metadata"]["name"]: p for p in pods}
        lost = sorted(set(self.pod_names) - self.deleted - set(by_name))
        assert not lost, f"pods lost: {lost[:10]}"
        unbound = sorted(n for n, p in by_name.items() if not p["spec"].get("nodeName"))
        assert not unbound, f"pods never bound: {unbound[:10]}"
        false_bound = sorted(
            n for n, p in by_name.items() if (status_condition(p, "PodScheduled") or {}).get("status") == "False"
        )
        assert not false_bound, f"bound pods with PodScheduled=False: {false_bound[:10]}"
        nodes = {n["metadata"]["name"]: n for n in await self._list("/api/v1/nodes")}
        used: Counter[str] = Counter()
        count: Counter[str] = Counter()
        for p in pods:
            node = p["spec"]["nodeName"]
            count[node] += 1
            for c in p["spec"]["containers"]:
                used[node] += _milli((c.get("resources") or {}).get("requests", {}).get("cpu", "0"))
        over = {
            n: (used[n], _milli(nodes[n]["status"]["allocatable"]["cpu"]))
            for n in used
            if n in nodes
            and (
                used[n] > _milli(nodes[n]["status"]["allocatable"]["cpu"])
                or count[n] > int(nodes[n]["status"]["allocatable"]["pods"])
            )
        }
        assert not over, f"over-committed nodes (used, allocatable milli-cpu): {over}"
        events = await self._list(f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events")
        scheduled: dict[str, list[JSON]] = {}  # pod uid (a recreated pod is another pod) -> its Scheduled events
        for e in events:
            if e.get("reason") == "Scheduled" and e.get("reportingController") == SCHEDULER_NAME:
                scheduled.setdefault(e["regarding"].get("uid", ""), []).append(e)
        twice = {
            es[0]["regarding"]["name"]: len(es)
            for es in scheduled.values()
            if len(es) > 1 or (es[0].get("series") or {}).get("count")
        }
        assert not twice, f"pods with more than one Scheduled event (double-bound?): {twice}"
        by_uid = {p["metadata"]["uid"]: p for p in pods}
        wrong = {
            by_uid[uid]["metadata"]["name"]: (es[0]["note"], by_uid[uid]["spec"]["nodeName"])
            for uid, es in scheduled.items()
            if uid in by_uid and not es[0]["note"].endswith(f" to {by_uid[uid]['spec']['nodeName']}")
        }
        assert not wrong, f"Scheduled events naming another node than the pod's: {wrong}"
        if every_pod_has_its_event:
            silent = sorted(p["metadata"]["name"] for p in pods if p["metadata"]["uid"] not in scheduled)
            assert not silent, f"bound pods without their Scheduled event: {silent[:10]} ({len(silent)})"
        self.outcome.notes["scheduled_events"] = f"{len(set(scheduled) & set(by_uid))}/{len(by_uid)}"

    async def _list(self, path: str) -> list[JSON]:
        answer = await request_json(self.api, "GET", path, request_timeout=60)
        items: list[JSON] = answer["items"]
        return items

    # -- teardown

    async def stop_replicas(self) -> dict[str, int | None]:
        """SIGTERM every replica (their queued writes are flushed); exit codes by name."""
        codes = {r.name: await r.terminate() for r in self.replicas}
        for proxy in self.proxies:
            await proxy.stop()
        self.exit_codes = codes
        return codes

    async def cleanup(self) -> None:
        for replica in self.replicas:
            replica.process.stop()
        for proxy in self.proxies:
            await proxy.stop()
        for name in list(self.nodes):
            with contextlib.suppress(Exception):
                await self.delete_node(name)
        with contextlib.suppress(Exception):
            await request_json(
                self.api, "DELETE", f"/api/v1/namespaces/{self.namespace}/pods", query={"gracePeriodSeconds": 0}
            )


def _milli(quantity: str) -> int:
    text = str(quantity)
    if text.endswith("m"):
        return int(text[:-1])
    return int(float(text) * 1000)


async def _bounded(coros: Sequence[Any], limit: int) -> None:
    sem = asyncio.Semaphore(limit)

    async def run(coro: Any) -> None:
        async with sem:
            await coro

    await asyncio.gather(*(run(c) for c in coros))


def in_thread(fn: Callable[[], Any]) -> asyncio.Future[Any]:
    """Run a blocking harness call (restart a process and wait until ready) off the event loop."""
    return asyncio.get_running_loop().run_in_executor(None, fn)


def write_report(outcomes: Sequence[Outcome]) -> None:
    path = os.environ.get(REPORT_ENV)
    if path:
        Path(path).write_text(json.dumps([o.__dict__ for o in outcomes], indent=2, default=str) + "\n")


def summary(outcomes: Sequence[Outcome]) -> str:
    return "\n".join(["fault suite:", *(f"  {o.line()}" for o in outcomes)])
