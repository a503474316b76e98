"""End-to-end throughput on a real control plane: pyscheduler side by side with upstream kube-scheduler.

One etcd + kube-apiserver (inflight limits raised, no kubelets, no controller-manager) serves every run. For
each workload and repeat, upstream kube-scheduler (the same release as the apiserver) and pyscheduler run one
after the other, never together, both with ``clientConnection`` qps/burst 5000 and leader election off, each
on a fresh namespace and fresh Ready nodes (everything of the previous run is deleted first). A run:

1. create the nodes (Ready, ``cpu 4, memory 32Gi, pods 110``), start the scheduler, wait until it is ready;
2. create the init pods and wait until all are bound (not measured);
3. create the measured pods (50 requests in flight) while a watch counts pods whose ``spec.nodeName`` goes
   from empty to set, sampled every second as upstream scheduler_perf's SchedulingThroughput does: the first
   non-empty sample is skipped, empty intervals fold into the next, average and p50/p90/p99 pods/s;
4. read the scheduler's peak RSS (``/proc/<pid>/status`` VmHWM) and CPU seconds (``/proc/<pid>/stat`` utime +
   stime) while it still runs, stop it, then check that every pod is bound, no node is over-committed (sum of
   requests <= allocatable) and every pod sits on a node its constraints allow.

Workloads (modelled on test/integration/scheduler_perf):
  basic      SchedulingBasic: pods ``100m/500Mi``.
  affinity   NodeAffinity/taints mix: nodes in two label groups, a quarter of them tainted NoSchedule; a quarter
             of the pods require group g0 (required node affinity), a quarter tolerate the taint.
  daemonset  Nodes spread over 3 zones; one DaemonSet-shaped pod per node (owner DaemonSet, pinned by a
             ``matchFields metadata.name`` required node affinity, the DaemonSet controller's tolerations),
             interleaved with plain pods.
  anti-affinity, pod-affinity, spread, preferred-spread
             scheduler_perf's SchedulingPodAntiAffinity, SchedulingPodAffinity, TopologySpreading and
             PreferredTopologySpreading: init pods in 10 app groups (give 30 per node: --init-pods), measured
             pods with required hostname anti-affinity to each other (one per node), required zone affinity to
             app-0, or a zone spread constraint (maxSkew 1, DoNotSchedule / ScheduleAnyway); the final state is
             checked against those constraints too.

    .venv/bin/python -m bench.e2e --size quick --repeats 1
    .venv/bin/python -m bench.e2e --size full --repeats 3 --json bench/results/$(date +%Y%m%dT%H%M%S).json

Needs the control-plane binaries (``bash tests/cluster/build.sh``); ``scripts/bench.sh`` does everything.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import secrets
import signal
import ssl
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from tests.cluster.harness import REPO_ROOT, ControlPlane, ControlPlaneConfig, ManagedProcess, free_port

JSON = dict[str, Any]

UPSTREAM = "kube-scheduler"
PYSCHEDULER = "pyscheduler"
SCHEDULER_NAMES = {UPSTREAM: "default-scheduler", PYSCHEDULER: "pyscheduler"}
CLIENT_QPS = 5000
CLIENT_BURST = 5000
IN_FLIGHT = 50
RUN_LABEL = "bench.pyscheduler.io/run"
KIND_LABEL = "bench.pyscheduler.io/kind"
PHASE_LABEL = "bench.pyscheduler.io/phase"
GROUP_LABEL = "bench.pyscheduler.io/group"
TAINT_KEY = "bench.pyscheduler.io/dedicated"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
NODE_CPU_MILLI = 4000
NODE_MEMORY = 32 * 1024**3
NODE_PODS = 110
POD_CPU_MILLI = 100
POD_MEMORY = 500 * 1024**2
CLK_TCK = os.sysconf("SC_CLK_TCK")
SAMPLE_INTERVAL = 1.0


@dataclass(frozen=True)
class Size:
    nodes: int
    init_pods: int
    pods: int


SIZES: Mapping[str, Size] = {
    "quick": Size(nodes=100, init_pods=100, pods=500),
    "full": Size(nodes=1000, init_pods=500, pods=3000),
}


# --- workloads ---------------------------------------------------------------------------------------------


def _node(name: str, run: str, labels: Mapping[str, str], taints: Sequence[JSON] = ()) -> JSON:
    all_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        RUN_LABEL: run,
        **labels,
    }
    spec: JSON = {"taints": list(taints)} if taints else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": all_labels}, "spec": spec}


def _node_status() -> JSON:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    resources = {"cpu": "4", "memory": "32Gi", "pods": str(NODE_PODS), "ephemeral-storage": "100Gi"}
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "bench fake node",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    return {"status": {"capacity": resources, "allocatable": dict(resources), "conditions": [ready]}}


def _pod(name: str, namespace: str, scheduler_name: str, kind: str, phase: str, **spec: Any) -> JSON:
    container = {
        "name": "main",
        "image": PAUSE_IMAGE,
        "resources": {"requests": {"cpu": f"{POD_CPU_MILLI}m", "memory": "500Mi"}},
    }
    meta: JSON = {"name": name, "namespace": namespace, "labels": {KIND_LABEL: kind, PHASE_LABEL: phase}}
    owner = spec.pop("owner", None)
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "schedulerName": scheduler_name,
            "containers": [container],
            "terminationGracePeriodSeconds": 0,
            **spec,
        },
    }


def _required_affinity(term: JSON) -> JSON:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


DAEMONSET_TOLERATIONS: tuple[JSON, ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


@dataclass
class RunContext:
    """Names of one run: its namespace, node name prefix, run label, scheduler name, DaemonSet owner."""

    workload: str
    scheduler: str
    namespace: str
    prefix: str
    run: str
    owner: JSON | None = None

    @property
    def scheduler_name(self) -> str:
        return SCHEDULER_NAMES[self.scheduler]

    def node_name(self, i: int) -> str:
        return f"{self.prefix}{i:05d}"


class Workload:
    """Base: SchedulingBasic."""

    name = "basic"

    def node(self, ctx: RunContext, i: int) -> JSON:
        return _node(ctx.node_name(i), ctx.run, {ZONE_LABEL: f"zone-{i % 3}", REGION_LABEL: "region-0"})

    def init_pod(self, ctx: RunContext, i: int) -> JSON:
        return _pod(f"init-{i:05d}", ctx.namespace, ctx.scheduler_name, "plain", "init")

    def measured_pods(self, ctx: RunContext, size: Size) -> list[JSON]:
        return [_pod(f"pod-{i:05d}", ctx.namespace, ctx.scheduler_name, "plain", "measure") for i in range(size.pods)]

    def allowed(self, pod: JSON, node: JSON) -> bool:
        """Whether the pod's own constraints allow this node (pods of kind "plain" avoid tainted nodes)."""
        return not _taints(node)


class AffinityWorkload(Workload):
    """NodeAffinity/taints mix: half the pods carry a required node affinity or a toleration."""

    name = "affinity"

    def node(self, ctx: RunContext, i: int) -> JSON:
        labels = {ZONE_LABEL: f"zone-{i % 3}", REGION_LABEL: "region-0", GROUP_LABEL: f"g{i % 2}"}
        taints = [{"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}] if i % 4 == 3 else []
        return _node(ctx.node_name(i), ctx.run, labels, taints)

    def measured_pods(self, ctx: RunContext, size: Size) -> list[JSON]:
        pods = []
        for i in range(size.pods):
            name = f"pod-{i:05d}"
            if i % 4 == 0:
                term = {"matchExpressions": [{"key": GROUP_LABEL, "operator": "In", "values": ["g0"]}]}
                pods.append(
                    _pod(
                        name,
                        ctx.namespace,
                        ctx.scheduler_name,
                        "affinity",
                        "measure",
                        affinity=_required_affinity(term),
                    )
                )
            elif i % 4 == 1:
                toleration = {"key": TAINT_KEY, "operator": "Equal", "value": "true", "effect": "NoSchedule"}
                pods.append(
                    _pod(name, ctx.namespace, ctx.scheduler_name, "toleration", "measure", tolerations=[toleration])
                )
            else:
                pods.append(_pod(name, ctx.namespace, ctx.scheduler_name, "plain", "measure"))
        return pods

    def allowed(self, pod: JSON, node: JSON) -> bool:
        kind = pod["metadata"]["labels"][KIND_LABEL]
        labels = node["metadata"].get("labels") or {}
        if kind == "toleration":
            return True
        if kind == "affinity" and labels.get(GROUP_LABEL) != "g0":
            return False
        return not _taints(node)


class DaemonSetWorkload(Workload):
    """Zones + DaemonSet: one DaemonSet-shaped pod per node (matchFields metadata.name), plus plain pods."""

    name = "daemonset"

    def measured_pods(self, ctx: RunContext, size: Size) -> list[JSON]:
        daemons = min(size.nodes, size.pods)
        plain = size.pods - daemons
        out: list[tuple[float, JSON]] = []
        for i in range(daemons):
            term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [ctx.node_name(i)]}]}
            pod = _pod(
                f"ds-{i:05d}",
                ctx.namespace,
                ctx.scheduler_name,
                "daemon",
                "measure",
                affinity=_required_affinity(term),
                tolerations=list(DAEMONSET_TOLERATIONS),
                owner=ctx.owner,
            )
            out.append(((i + 0.5) / daemons, pod))
        for i in range(plain):
            out.append(
                ((i + 0.25) / plain, _pod(f"pod-{i:05d}", ctx.namespace, ctx.scheduler_name, "plain", "measure"))
            )
        out.sort(key=lambda item: item[0])
        return [pod for _, pod in out]

    def allowed(self, pod: JSON, node: JSON) -> bool:
        if pod["metadata"]["labels"][KIND_LABEL] == "daemon":
            terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            return bool(node["metadata"]["name"] == terms["nodeSelectorTerms"][0]["matchFields"][0]["values"][0])
        return not _taints(node)


APP_LABEL = "bench.pyscheduler.io/app"
HOSTNAME_LABEL = "kubernetes.io/hostname"


def _with_app(pod: JSON, app: str) -> JSON:
    pod["metadata"]["labels"][APP_LABEL] = app
    return pod


def _term(app: str, topology_key: str) -> JSON:
    return {"labelSelector": {"matchLabels": {APP_LABEL: app}}, "topologyKey": topology_key}


class _InterPodWorkload(Workload):
    """Shared by the scheduler_perf shapes below: init pods belong to 10 app groups ("app-0".."app-9"), so the
    measured pods' terms and constraints have existing pods to count (use --init-pods nodes*30)."""

    def init_pod(self, ctx: RunContext, i: int) -> JSON:
        return _with_app(super().init_pod(ctx, i), f"app-{i % 10}")

    def violations(self, pods: list[JSON], nodes: list[JSON]) -> int:
        """Placements the measured pods' pod-level constraints forbid (checked on the final state)."""
        return 0


class AntiAffinityWorkload(_InterPodWorkload):
    """SchedulingPodAntiAffinity: measured pods with required hostname anti-affinity to their own app, so one
    per node (as many as there are nodes)."""

    name = "anti-affinity"

    def measured_pods(self, ctx: RunContext, size: Size) -> list[JSON]:
        a = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("anti", HOSTNAME_LABEL)]}}
        count = min(size.pods, size.nodes)
        return [
            _with_app(_pod(f"pod-{i:05d}", ctx.namespace, ctx.scheduler_name, "plain", "measure", affinity=a), "anti")
            for i in range(count)
        ]

    def violations(self, pods: list[JSON], nodes: list[JSON]) -> int:
        hosts = [p["spec"].get("nodeName") for p in pods if p["metadata"]["labels"].get(APP_LABEL) == "anti"]
        bound = [h for h in hosts if h]
        return len(bound) - len(set(bound))


class PodAffinityWorkload(_InterPodWorkload):
    """SchedulingPodAffinity: measured pods with required zone affinity to init pods of app-0."""

    name = "pod-affinity"

    def measured_pods(self, ctx: RunContext, size: Size) -> list[JSON]:
        a = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("app-0", ZONE_LABEL)]}}
        return [
            _with_app(_pod(f"pod-{i:05d}", ctx.namespace, ctx.scheduler_name, "plain", "measure", affinity=a), "aff")
            for i in range(size.pods)
        ]

    def violations(self, pods: list[JSON], nodes: list[JSON]) -> int:
        zone = {n["metadata"]["name"]: n["metadata"]["labels"].get(ZONE_LABEL) for n in nodes}
        zones = {zone.get(p["spec"].get("nodeName")) for p in pods if p["metadata"]["labels"].get(APP_LABEL) == "app-0"}
        return sum(
            1
            for p in pods
            if p["metadata"]["labels"].get(APP_LABEL) == "aff"
            and p["spec"].get("nodeName")
            and zone.get(p["spec"]["nodeName"]) not in zones
        )


class SpreadWorkload(_InterPodWorkload):
    """TopologySpreading: measured pods spread over zones with a hard maxSkew 1 constraint on their own app."""

    name = "spread"
    when = "DoNotSchedule"

    def measured_pods(self, ctx: RunContext, size: Size) -> list[JSON]:
        constraint = {
            "maxSkew": 1,
            "topologyKey": ZONE_LABEL,
            "whenUnsatisfiable": self.when,
            "labelSelector": {"matchLabels": {APP_LABEL: "spread"}},
        }
        return [
            _with_app(
                _pod(
                    f"pod-{i:05d}",
                    ctx.namespace,
                    ctx.scheduler_name,
                    "plain",
                    "measure",
                    topologySpreadConstraints=[constraint],
                ),
                "spread",
            )
            for i in range(size.pods)
        ]

    def violations(self, pods: list[JSON], nodes: list[JSON]) -> int:
        if self.when != "DoNotSchedule":
            return 0
        zone = {n["metadata"]["name"]: n["metadata"]["labels"].get(ZONE_LABEL) for n in nodes}
        counts = {z: 0 for z in zone.values()}
        for p in pods:
            if p["metadata"]["labels"].get(APP_LABEL) == "spread" and p["spec"].get("nodeName"):
                counts[zone[p["spec"]["nodeName"]]] += 1
        return max(0, max(counts.values()) - min(counts.values()) - 1) if counts else 0


class PreferredSpreadWorkload(SpreadWorkload):
    """PreferredTopologySpreading: the same constraint with ScheduleAnyway (a score, not a filter)."""

    name = "preferred-spread"
    when = "ScheduleAnyway"


WORKLOADS: Mapping[str, Workload] = {
    w.name: w
    for w in (
        Workload(),
        AffinityWorkload(),
        DaemonSetWorkload(),
        AntiAffinityWorkload(),
        PodAffinityWorkload(),
        SpreadWorkload(),
        PreferredSpreadWorkload(),
    )
}


def _taints(node: JSON) -> list[JSON]:
    taints: list[JSON] = (node.get("spec") or {}).get("taints") or []
    return taints


# --- a thin raw-JSON API client ----------------------------------------------------------------------------


class ApiFailure(RuntimeError):
    pass


class Api:
    """aiohttp straight to the apiserver with the admin token: JSON bytes in, dicts out, no model classes."""

    def __init__(self, server: str, token: str) -> None:
        self.server = server
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=ctx, limit=IN_FLIGHT + 10),
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=aiohttp.ClientTimeout(total=120),
        )

    async def close(self) -> None:
        await self.session.close()

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
        ok: Iterable[int] = (200, 201, 202),
    ) -> JSON:
        data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
        for attempt in range(8):
            async with self.session.request(
                method, self.server + path, data=data, params=params, headers={"Content-Type": content_type}
            ) as resp:
                try:
                    raw = await resp.read()
                except aiohttp.ClientPayloadError:
                    # A huge answer cut short (a DELETE of a whole namespace's pods can outlive the
                    # apiserver's request timeout); the calls made here are idempotent: ask again.
                    if attempt < 7:
                        await asyncio.sleep(0.2 * 2**attempt)
                        continue
                    raise
                if resp.status in ok:
                    return json.loads(raw) if raw else {}
                if resp.status in (429, 500, 503, 504) and attempt < 7:
                    await asyncio.sleep(0.2 * 2**attempt)
                    continue
                raise ApiFailure(f"{method} {path}: HTTP {resp.status}: {raw[:300]!r}")
        raise AssertionError("unreachable")

    async def list_all(self, path: str, params: Mapping[str, str] | None = None) -> list[JSON]:
        items: list[JSON] = []
        cont = ""
        while True:
            query = {"limit": "500", **(params or {})}
            if cont:
                query["continue"] = cont
            page = await self.call("GET", path, params=query)
            items.extend(page.get("items") or [])
            cont = (page.get("metadata") or {}).get("continue") or ""
            if not cont:
                return items


async def create_many(api: Api, path_of: Callable[[JSON], str], objects: Sequence[JSON]) -> float:
    """POST every object with IN_FLIGHT requests in flight; returns the seconds it took."""
    queue = iter(objects)
    start = time.monotonic()

    async def worker() -> None:
        for obj in queue:
            await api.call("POST", path_of(obj), json.dumps(obj).encode())

    await asyncio.gather(*(worker() for _ in range(min(IN_FLIGHT, len(objects)) or 1)))
    return time.monotonic() - start


async def create_ready_nodes(api: Api, nodes: Sequence[JSON]) -> float:
    """Create the nodes, then make each Ready through nodes/status (as a kubelet would); returns the seconds the
    creation took."""
    took = await create_many(api, lambda _: "/api/v1/nodes", nodes)
    status = json.dumps(_node_status()).encode()
    sem = asyncio.Semaphore(IN_FLIGHT)

    async def ready(node: JSON) -> None:
        async with sem:
            await api.call(
                "PATCH",
                f"/api/v1/nodes/{node['metadata']['name']}/status",
                status,
                content_type="application/merge-patch+json",
            )

    await asyncio.gather(*(ready(n) for n in nodes))
    return took


def _pods_path(obj: JSON) -> str:
    return f"/api/v1/namespaces/{obj['metadata']['namespace']}/pods"


# --- the watch and upstream's throughput collector -----------------------------------------------------------


class BindWatch:
    """A watch on the run's namespace: when each pod's spec.nodeName went from empty to set (monotonic time)."""

    def __init__(self, api: Api, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.bound_at: dict[str, float] = {}
        self.node_of: dict[str, str] = {}
        self.phase_of: dict[str, str] = {}
        self.bound_by_phase: dict[str, int] = {}
        self.events = 0
        self.reconnects = 0
        self.changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """LIST, then watch from the LIST's resourceVersion; returns once the watch is established."""
        rv = await self._relist()
        resp = await self._open(rv)
        if resp is None:
            raise ApiFailure(f"watch pods in {self.namespace}: 410 right after the LIST")
        self._task = asyncio.get_running_loop().create_task(self._follow(resp, rv))

    async def _relist(self) -> str:
        page = await self.api.call("GET", self._path, params={"resourceVersion": "0"})
        for obj in page.get("items") or []:
            self._observe(obj)
        return str((page.get("metadata") or {}).get("resourceVersion") or "")

    @property
    def _path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"

    async def _open(self, rv: str) -> aiohttp.ClientResponse | None:
        """An established watch from ``rv`` (the apiserver sends its headers then), or None on 410 Gone."""
        resp = await self.api.session.get(
            self.api.server + self._path,
            params={"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "3600"},
            timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
        )
        if resp.status == 410:
            resp.release()
            return None
        if resp.status != 200:
            raise ApiFailure(f"watch pods in {self.namespace}: HTTP {resp.status}: {(await resp.read())[:300]!r}")
        return resp

    async def _follow(self, resp: aiohttp.ClientResponse | None, rv: str) -> None:
        """Reads the watch; when the apiserver ends it (it closes watchers that fall behind under load),
        resumes from the last resourceVersion seen, or re-LISTs after a 410, as an informer would."""
        while True:
            if resp is None:
                rv = await self._relist()
            else:
                try:
                    async for line in resp.content:
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        self.events += 1
                        obj = event.get("object") or {}
                        kind = event.get("type")
                        if kind == "ERROR":
                            rv = ""  # 410 Gone (or worse): re-LIST
                            break
                        rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                        if kind in ("ADDED", "MODIFIED"):
                            self._observe(obj)
                finally:
                    resp.release()
                self.reconnects += 1
            resp = await self._open(rv) if rv else None

    def _observe(self, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        node = (obj.get("spec") or {}).get("nodeName")
        if node and name and name not in self.bound_at:
            phase = (meta.get("labels") or {}).get(PHASE_LABEL, "")
            self.bound_at[name] = time.monotonic()
            self.node_of[name] = node
            self.phase_of[name] = phase
            self.bound_by_phase[phase] = self.bound_by_phase.get(phase, 0) + 1
            self.changed.set()

    async def wait_bound(self, phase: str, count: int, within: float, alive: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + within
        while self.bound_by_phase.get(phase, 0) < count:
            if time.monotonic() > deadline or not alive():
                return False
            if self._task is not None and self._task.done():
                raise ApiFailure("the pods watch ended early")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), 0.5)
        return True

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class ThroughputCollector:
    """scheduler_perf's throughputCollector: samples the bound count of a phase every second."""

    def __init__(self, watch: BindWatch, phase: str) -> None:
        self.watch = watch
        self.phase = phase
        self.samples: list[float] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        last_count = self.watch.bound_by_phase.get(self.phase, 0)
        last_time = time.monotonic()
        started = False
        skipped = 0
        next_tick = time.monotonic() + SAMPLE_INTERVAL
        while True:
            await asyncio.sleep(max(0.0, next_tick - time.monotonic()))
            next_tick += SAMPLE_INTERVAL
            now = time.monotonic()
            scheduled = self.watch.bound_by_phase.get(self.phase, 0)
            if scheduled == 0:
                continue
            if not started:  # the first sample is an outlier: pod creation and sampling start independently
                started = True
                last_count, last_time = scheduled, now
                continue
            new = scheduled - last_count
            if new == 0:
                skipped += 1
                continue
            rate = new / (now - last_time)
            self.samples.extend([rate] * (skipped + 1))
            last_count, last_time, skipped = scheduled, now, 0

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def summarize(samples: Sequence[float]) -> JSON:
    """Upstream's DataItem: Average and Perc50/90/99 (index ceil(n*p/100)-1 of the sorted samples)."""
    if not samples:
        return {"average": None, "p50": None, "p90": None, "p99": None}
    ordered = sorted(samples)
    n = len(ordered)

    def perc(p: int) -> float:
        return ordered[max(0, math.ceil(n * p / 100) - 1)]

    return {"average": sum(ordered) / n, "p50": perc(50), "p90": perc(90), "p99": perc(99)}


# --- the schedulers ----------------------------------------------------------------------------------------


@dataclass
class ProcStats:
    cpu_seconds: float
    peak_rss_mib: float


def read_proc(pid: int) -> ProcStats:
    """utime + stime from /proc/<pid>/stat and VmHWM from /proc/<pid>/status."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of the whole line
    hwm_kib = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            hwm_kib = int(line.split()[1])
    return ProcStats(cpu_seconds=cpu, peak_rss_mib=hwm_kib / 1024)


def _wait_exit(process: ManagedProcess, within: float) -> None:
    popen = process._popen  # the harness keeps the Popen private; waiting beats polling
    if popen is not None:
        popen.wait(timeout=within)


class SchedulerUnderTest:
    """Starts and stops one scheduler process against the control plane."""

    def __init__(
        self, kind: str, cp: ControlPlane, log_dir: Path, profile: Path | None = None, env: Mapping[str, str] = {}
    ) -> None:
        self.kind = kind
        self.env = dict(env)  # extra environment for pyscheduler (e.g. PYSCHEDULER_GC=default for an A/B run)
        self.cp = cp
        self.log_dir = log_dir
        self.profile = profile
        self.process: ManagedProcess | None = None

    async def start(self, tag: str) -> None:
        if self.kind == UPSTREAM:
            self.process = await asyncio.to_thread(self.cp.start_kube_scheduler, qps=CLIENT_QPS, burst=CLIENT_BURST)
            return
        config = self.log_dir / "pyscheduler.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "clientConnection": {"qps": CLIENT_QPS, "burst": CLIENT_BURST},
                    "leaderElection": {"leaderElect": False},
                }
            )
        )
        port = free_port()
        python = [sys.executable]
        if self.profile is not None:
            python += ["-m", "cProfile", "-o", str(self.profile.with_suffix(f".{tag}.prof"))]
        argv = [
            *python,
            "-m",
            "scheduler",
            "run",
            "--kubeconfig",
            str(self.cp.kubeconfig),
            "--config",
            str(config),
            "--port",
            str(port),
            "--bind-address",
            "127.0.0.1",
            "-v",
            "2",
        ]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **self.env}
        self.process = ManagedProcess(PYSCHEDULER, argv, self.log_dir / f"pyscheduler.{tag}.log", env=env).start()
        deadline = time.monotonic() + 60
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
            while True:
                if not self.process.running():
                    raise RuntimeError(f"pyscheduler exited with {self.process.poll()}:\n{self.process.tail()}")
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    # The secure port (self-signed certificate); /readyz needs no token.
                    async with session.get(f"https://127.0.0.1:{port}/readyz", ssl=False) as resp:
                        if resp.status == 200:
                            return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"pyscheduler not ready after 60 s:\n{self.process.tail()}")
                await asyncio.sleep(0.1)

    @property
    def pid(self) -> int:
        assert self.process is not None and self.process.pid is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.running()

    async def stop(self) -> None:
        if self.kind == UPSTREAM:
            await asyncio.to_thread(self.cp.stop_process, "kube-scheduler")
        elif self.process is not None:
            process = self.process
            if process.pid is not None and process.running():
                os.kill(process.pid, signal.SIGTERM)  # clean exit: cProfile writes its file
                with contextlib.suppress(subprocess.TimeoutExpired):
                    await asyncio.to_thread(_wait_exit, process, 30.0)
            await asyncio.to_thread(process.stop)
        self.process = None


# --- one run -----------------------------------------------------------------------------------------------


@dataclass
class RunResult:
    workload: str
    scheduler: str
    repeat: int
    nodes: int
    init_pods: int
    pods: int
    samples: list[float]
    average: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    first_created_to_last_bound_s: float | None
    create_seconds: float
    bound: int
    all_bound: bool
    overcommitted_nodes: int
    misplaced_pods: int
    cpu_seconds: float
    cpu_seconds_measured: float
    peak_rss_mib: float
    apiserver_cpu_seconds_measured: float
    driver_cpu_seconds_measured: float
    error: str | None = None
    extra: JSON = field(default_factory=dict)


def _quantity_milli_cpu(value: str) -> int:
    return int(value[:-1]) if value.endswith("m") else int(float(value) * 1000)


_MEMORY_SUFFIXES = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4, "k": 1000, "M": 1000**2, "G": 1000**3}


def _quantity_bytes(value: str) -> int:
    for suffix, factor in _MEMORY_SUFFIXES.items():
        if value.endswith(suffix):
            return int(float(value[: -len(suffix)]) * factor)
    return int(value)


def check_placement(workload: Workload, nodes: list[JSON], pods: list[JSON]) -> tuple[int, int]:
    """(over-committed nodes, pods on a node their own constraints forbid)."""
    by_name = {n["metadata"]["name"]: n for n in nodes}
    used: dict[str, list[int]] = {}
    misplaced = 0
    for pod in pods:
        node_name = pod["spec"].get("nodeName")
        if not node_name:
            continue
        node = by_name.get(node_name)
        if node is None or not workload.allowed(pod, node):
            misplaced += 1
        totals = used.setdefault(node_name, [0, 0, 0])
        for c in pod["spec"]["containers"]:
            req = (c.get("resources") or {}).get("requests") or {}
            totals[0] += _quantity_milli_cpu(req.get("cpu", "0"))
            totals[1] += _quantity_bytes(req.get("memory", "0"))
        totals[2] += 1
    over = 0
    for name, (cpu, mem, count) in used.items():
        alloc = ((by_name.get(name) or {}).get("status") or {}).get("allocatable") or {}
        if (
            cpu > _quantity_milli_cpu(alloc.get("cpu", "0"))
            or mem > _quantity_bytes(alloc.get("memory", "0"))
            or count > int(alloc.get("pods", "0"))
        ):
            over += 1
    if isinstance(workload, _InterPodWorkload):
        misplaced += workload.violations(pods, nodes)
    return over, misplaced


def _cpu_of(pid: int | None) -> float:
    if pid is None:
        return 0.0
    with contextlib.suppress(OSError):
        return read_proc(pid).cpu_seconds
    return 0.0


def _self_cpu() -> float:
    t = os.times()
    return t.user + t.system


async def run_once(
    cp: ControlPlane,
    api: Api,
    workload: Workload,
    kind: str,
    size: Size,
    repeat: int,
    log_dir: Path,
    profile: Path | None,
) -> RunResult:
    run_id = f"{workload.name[:3]}-{'up' if kind == UPSTREAM else 'py'}-{repeat}-{secrets.token_hex(3)}"
    ctx = RunContext(workload.name, kind, f"bench-{run_id}", f"n-{run_id}-", run_id)
    await api.call(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ctx.namespace}}
    )
    if isinstance(workload, DaemonSetWorkload):
        ds = await api.call(
            "POST",
            f"/apis/apps/v1/namespaces/{ctx.namespace}/daemonsets",
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": "bench-ds"},
                "spec": {
                    "selector": {"matchLabels": {"app": "bench-ds"}},
                    "template": {
                        "metadata": {"labels": {"app": "bench-ds"}},
                        "spec": {
                            "nodeSelector": {"bench.pyscheduler.io/none": "none"},
                            "containers": [{"name": "main", "image": PAUSE_IMAGE}],
                        },
                    },
                },
            },
        )
        ctx.owner = {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": "bench-ds",
            "uid": ds["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    node_seconds = await create_ready_nodes(api, [workload.node(ctx, i) for i in range(size.nodes)])
    init_pods = [workload.init_pod(ctx, i) for i in range(size.init_pods)]
    measured = workload.measured_pods(ctx, size)
    sched = SchedulerUnderTest(kind, cp, log_dir, profile)
    watch = BindWatch(api, ctx.namespace)
    error: str | None = None
    extra: JSON = {"node_create_seconds": node_seconds, "loadavg_before": os.getloadavg()}
    samples: list[float] = []
    create_seconds = 0.0
    window: float | None = None
    cpu_before = cpu_after = 0.0
    proc = ProcStats(0.0, 0.0)
    apiserver_pid = cp.processes["kube-apiserver"].pid
    api_cpu = driver_cpu = 0.0
    try:
        started = time.monotonic()
        await sched.start(run_id)
        extra["scheduler_start_seconds"] = time.monotonic() - started
        await watch.start()
        timeout = max(120.0, size.pods / 10)
        t0 = time.monotonic()
        extra["init_create_seconds"] = await create_many(api, _pods_path, init_pods)
        if not await watch.wait_bound("init", len(init_pods), timeout, sched.alive):
            raise RuntimeError(f"init pods: {watch.bound_by_phase.get('init', 0)}/{len(init_pods)} bound")
        extra["init_seconds"] = time.monotonic() - t0
        collector = ThroughputCollector(watch, "measure")
        cpu_before, api_before, driver_before = _cpu_of(sched.pid), _cpu_of(apiserver_pid), _self_cpu()
        collector.start()
        first_created = time.monotonic()
        creating = asyncio.get_running_loop().create_task(create_many(api, _pods_path, measured))
        ok = await watch.wait_bound("measure", len(measured), timeout, sched.alive)
        create_seconds = await creating
        await collector.stop()
        samples = collector.samples
        cpu_after, api_after, driver_after = _cpu_of(sched.pid), _cpu_of(apiserver_pid), _self_cpu()
        api_cpu, driver_cpu = api_after - api_before, driver_after - driver_before
        measured_times = [t for n, t in watch.bound_at.items() if watch.phase_of[n] == "measure"]
        if measured_times:
            window = max(measured_times) - first_created
        if not ok:
            error = f"measured pods: {watch.bound_by_phase.get('measure', 0)}/{len(measured)} bound in time"
        if sched.alive():
            proc = read_proc(sched.pid)
        else:
            error = (error or "") + f" scheduler exited early ({sched.process.poll() if sched.process else '?'})"
    except Exception as exc:  # a failed run is reported, not fatal for the others
        error = f"{type(exc).__name__}: {exc}"
    finally:
        extra["loadavg_after"] = os.getloadavg()
        extra["watch_events"], extra["watch_reconnects"] = watch.events, watch.reconnects
        await watch.stop()
        await sched.stop()
    pods = await api.list_all(f"/api/v1/namespaces/{ctx.namespace}/pods")
    node_objs = await api.list_all("/api/v1/nodes", {"labelSelector": f"{RUN_LABEL}={ctx.run}"})
    over, misplaced = check_placement(workload, node_objs, pods)
    bound = sum(1 for p in pods if p["spec"].get("nodeName"))
    await cleanup(api, ctx)
    stats = summarize(samples)
    return RunResult(
        workload=workload.name,
        scheduler=kind,
        repeat=repeat,
        nodes=size.nodes,
        init_pods=size.init_pods,
        pods=len(measured),
        samples=samples,
        average=stats["average"],
        p50=stats["p50"],
        p90=stats["p90"],
        p99=stats["p99"],
        first_created_to_last_bound_s=window,
        create_seconds=create_seconds,
        bound=bound,
        all_bound=bound == len(pods) == len(init_pods) + len(measured),
        overcommitted_nodes=over,
        misplaced_pods=misplaced,
        cpu_seconds=proc.cpu_seconds,
        cpu_seconds_measured=cpu_after - cpu_before,
        peak_rss_mib=proc.peak_rss_mib,
        apiserver_cpu_seconds_measured=api_cpu,
        driver_cpu_seconds_measured=driver_cpu,
        error=error,
        extra=extra,
    )


async def cleanup(api: Api, ctx: RunContext) -> None:
    """Delete the run's pods (grace 0: no kubelet would confirm), its nodes and its namespace."""
    ns = ctx.namespace
    await api.call("DELETE", f"/api/v1/namespaces/{ns}/pods", params={"gracePeriodSeconds": "0"})
    await api.call("DELETE", "/api/v1/nodes", params={"labelSelector": f"{RUN_LABEL}={ctx.run}"})
    # Stays Terminating without a namespace controller; empty, it costs nothing.
    await api.call("DELETE", f"/api/v1/namespaces/{ns}")


# --- report ------------------------------------------------------------------------------------------------

METRICS: tuple[tuple[str, str, str], ...] = (
    ("average", "avg pods/s", "{:.0f}"),
    ("p50", "p50", "{:.0f}"),
    ("p90", "p90", "{:.0f}"),
    ("p99", "p99", "{:.0f}"),
    ("first_created_to_last_bound_s", "create->bound s", "{:.1f}"),
    ("create_seconds", "create s", "{:.1f}"),
    ("peak_rss_mib", "peak RSS MiB", "{:.0f}"),
    ("cpu_seconds", "CPU s", "{:.1f}"),
    ("cpu_seconds_measured", "CPU s (measured)", "{:.1f}"),
)


def _median(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def medians(results: Sequence[RunResult]) -> dict[tuple[str, str], JSON]:
    out: dict[tuple[str, str], JSON] = {}
    for r in results:
        out.setdefault((r.workload, r.scheduler), {"runs": []})["runs"].append(r)
    for entry in out.values():
        runs: list[RunResult] = entry["runs"]
        for key, _, _ in METRICS:
            entry[key] = _median(getattr(r, key) for r in runs)
        entry["n"] = len(runs)
        entry["ok"] = sum(
            1 for r in runs if r.all_bound and not r.overcommitted_nodes and not r.misplaced_pods and not r.error
        )
    return out


def _fmt(fmt: str, value: float | None) -> str:
    return "-" if value is None else fmt.format(value)


def render_table(results: Sequence[RunResult], workloads: Sequence[str], size: Size) -> str:
    med = medians(results)
    header = ["workload", "scheduler", *(label for _, label, _ in METRICS), "runs ok"]
    rows: list[list[str]] = []
    for w in workloads:
        up, py = med.get((w, UPSTREAM)), med.get((w, PYSCHEDULER))
        for kind, entry in ((UPSTREAM, up), (PYSCHEDULER, py)):
            if entry is None:
                continue
            rows.append([w, kind, *(_fmt(f, entry[k]) for k, _, f in METRICS), f"{entry['ok']}/{entry['n']}"])
        if up is not None and py is not None:
            ratio = []
            for k, _, _ in METRICS:
                a, b = py[k], up[k]
                ratio.append("-" if a is None or not b else f"{a / b:.2f}x")
            rows.append([w, "py/upstream", *ratio, ""])
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return (
            "| " + " | ".join(c.ljust(widths[i]) if i < 2 else c.rjust(widths[i]) for i, c in enumerate(cells)) + " |"
        )

    sep = "|" + "|".join("-" * (w + 2) if i < 2 else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|"
    title = (
        f"{size.nodes} nodes, {size.init_pods} init pods, {size.pods} measured pods; "
        f"medians of {max((e['n'] for e in med.values()), default=0)} runs"
    )
    return "\n".join([title, "", line(header), sep, *(line(r) for r in rows)])


def run_inprocess(nodes: int, pods: int, runs: int) -> JSON:
    """bench.inprocess in a subprocess (its own RSS); returns its JSON result for one node count."""
    out = Path(f"/tmp/pyscheduler-inprocess-{os.getpid()}.json")
    cmd = [
        sys.executable,
        "-m",
        "bench.inprocess",
        "--nodes",
        str(nodes),
        "--pods",
        str(pods),
        "--runs",
        str(runs),
        "--json",
        str(out),
    ]
    subprocess.run(cmd, check=True, cwd=REPO_ROOT, stdout=subprocess.DEVNULL)
    result: JSON = json.loads(out.read_text())["results"][0]
    out.unlink()
    return result


def machine() -> JSON:
    def sh(cmd: str) -> str:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, check=False).stdout.strip()

    return {
        "nproc": sh("nproc"),
        "free": sh("free -h"),
        "lscpu": sh("lscpu | head -20"),
        "python": sys.version,
        "platform": platform.platform(),
    }


async def main_async(args: argparse.Namespace) -> int:
    size = SIZES[args.size]
    size = Size(
        nodes=args.nodes or size.nodes,
        init_pods=args.init_pods if args.init_pods is not None else size.init_pods,
        pods=args.pods or size.pods,
    )
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    for w in workloads:
        if w not in WORKLOADS:
            raise SystemExit(f"unknown workload {w!r} (choose from {', '.join(WORKLOADS)})")
    schedulers = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    config = ControlPlaneConfig(
        max_requests_inflight=10000,
        max_mutating_requests_inflight=5000,
        keep_work_dir=args.keep,
        apiserver_args=("--event-ttl=5m",),
    )
    results: list[RunResult] = []
    started = time.monotonic()
    release = ""
    with ControlPlane(config) as cp:
        release = cp.release
        log_dir = cp.work_dir / "bench"
        log_dir.mkdir(parents=True, exist_ok=True)
        print(f"control plane {cp.release} up ({cp.server}); logs in {log_dir}", file=sys.stderr)
        api = Api(cp.server, cp.token)
        try:
            for w in workloads:
                for repeat in range(args.repeats):
                    for kind in schedulers:
                        profile = Path(args.profile) if args.profile and kind == PYSCHEDULER else None
                        r = await run_once(cp, api, WORKLOADS[w], kind, size, repeat, log_dir, profile)
                        results.append(r)
                        print(
                            f"[{time.monotonic() - started:6.0f}s] {w:9} {kind:14} #{repeat}: "
                            f"avg {_fmt('{:.0f}', r.average)} pods/s, p50 {_fmt('{:.0f}', r.p50)}, "
                            f"window {_fmt('{:.1f}', r.first_created_to_last_bound_s)} s, "
                            f"create {r.create_seconds:.1f} s, bound {r.bound}, over {r.overcommitted_nodes}, "
                            f"misplaced {r.misplaced_pods}, cpu {r.cpu_seconds:.1f} s "
                            f"({r.cpu_seconds_measured:.1f} measured; apiserver {r.apiserver_cpu_seconds_measured:.1f}"
                            f", driver {r.driver_cpu_seconds_measured:.1f}), rss {r.peak_rss_mib:.0f} MiB"
                            + f", load {r.extra['loadavg_before'][0]:.1f}, reconnects {r.extra.get('watch_reconnects')}"
                            + (f", ERROR {r.error}" if r.error else ""),
                            file=sys.stderr,
                            flush=True,
                        )
        finally:
            await api.close()
    inprocess: JSON | None = None
    if args.inprocess_nodes:
        inprocess = run_inprocess(args.inprocess_nodes, args.inprocess_pods, args.inprocess_runs)
    table = render_table(results, workloads, size)
    print(table)
    if inprocess is not None:
        print(
            f"\nIn-process (algorithm only, bench.inprocess): {inprocess['nodes']} nodes, {inprocess['pods']} pods: "
            f"median {inprocess['median']:.0f} pods/s (runs: {', '.join(f'{r:.0f}' for r in inprocess['rates'])}), "
            f"peak RSS {inprocess['peak_rss_mib']:.0f} MiB"
        )
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "created": datetime.now(UTC).isoformat(),
            "release": release,
            "size": asdict(size),
            "client_qps_burst": [CLIENT_QPS, CLIENT_BURST],
            "machine": machine(),
            "wall_seconds": time.monotonic() - started,
            "table": table,
            "medians": {
                f"{w}/{s}": {k: v for k, v in e.items() if k != "runs"} for (w, s), e in medians(results).items()
            },
            "runs": [asdict(r) for r in results],
            "inprocess": inprocess,
        }
        await asyncio.to_thread(path.write_text, json.dumps(doc, indent=2))
        print(f"\nraw samples: {path}", file=sys.stderr)
    failed = [r for r in results if r.error or not r.all_bound or r.overcommitted_nodes or r.misplaced_pods]
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", choices=sorted(SIZES), default="quick")
    parser.add_argument("--nodes", type=int, default=None, help="override the size's node count")
    parser.add_argument("--init-pods", type=int, default=None, help="override the size's init pod count")
    parser.add_argument("--pods", type=int, default=None, help="override the size's measured pod count")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workloads", default="basic,affinity,daemonset")
    parser.add_argument("--schedulers", default=f"{UPSTREAM},{PYSCHEDULER}")
    parser.add_argument("--json", default=None, help="write the raw samples and medians here")
    parser.add_argument("--profile", default=None, help="run pyscheduler under cProfile, writing PATH.<run>.prof")
    parser.add_argument("--keep", action="store_true", help="keep the control plane's work directory (logs)")
    parser.add_argument("--inprocess-nodes", type=int, default=0, help="also run bench.inprocess at N nodes")
    parser.add_argument("--inprocess-pods", type=int, default=2000)
    parser.add_argument("--inprocess-runs", type=int, default=3)
    args = parser.parse_args(argv)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    raise SystemExit(main())
