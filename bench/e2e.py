"""End-to-end throughput on a real control plane: pyscheduler side by side with upstream kube-scheduler.

One etcd + kube-apiserver (inflight limits raised, no kubelets, no controller-manager) serves every run. For
each workload and repeat, upstream kube-scheduler (the same release as the apiserver) and pyscheduler run one
after the other, never together, both with ``clientConnection`` qps/burst 5000 and leader election off; even
repeats run upstream first, odd ones pyscheduler first. Three methods (``--methods``, default ``create``):

create (upstream scheduler_perf's SchedulingThroughput), on a fresh namespace and fresh Ready nodes per run:
1. create the nodes (Ready, ``cpu 4, memory 32Gi, pods 110``) and the ``--density`` pods, start the scheduler,
   wait until it is ready;
2. create the init pods and wait until all are bound (not measured);
3. create the measured pods (50 requests in flight) while a watch counts pods whose ``spec.nodeName`` goes
   from empty to set, sampled every second as upstream scheduler_perf's SchedulingThroughput does: the first
   non-empty sample is skipped, empty intervals fold into the next, average and p50/p90/p99 pods/s;
4. read the scheduler's peak RSS (``/proc/<pid>/status`` VmHWM) and CPU seconds (``/proc/<pid>/stat`` utime +
   stime) while it still runs, stop it, then check that every pod is bound, no node is over-committed (sum of
   requests <= allocatable) and every pod sits on a node its constraints allow.
   The figures are bounded by how fast the driver can create pods: a scheduler that keeps up shows that rate.

backlog: per workload one namespace with its Ready nodes, the ``--density`` pods and the init pods, all bound at
   creation (spec.nodeName set; no scheduler involved), is shared by all its backlog and ceiling runs.
   A run creates every measured pod while no scheduler runs, starts the watch, then the scheduler, and times
   process start -> last measured pod bound, /readyz -> last bound and first bound -> last bound (pods/s over
   that), the scheduler's CPU from ready to last bound per pod and its peak RSS; then the same checks, and the
   measured pods are deleted for the next run.
ceiling: the same pending measured pods bound by the driver itself: ``pods/<name>/binding`` POSTs, 50 in
   flight, to nodes chosen round robin among those with room that the workload's node-level constraints allow
   (computed before the clock starts). No scheduling: the most this apiserver accepts, which every backlog
   figure is also shown as a fraction of.

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

Sizes: quick (100 nodes), full (1000 nodes; 3000 measured pods for create, 4000 for backlog/ceiling), xl (5000
nodes, 10000 measured pods).

    .venv/bin/python -m bench.e2e --size quick --repeats 1
    .venv/bin/python -m bench.e2e --size full --repeats 3 --json bench/results/$(date +%Y%m%dT%H%M%S).json
    .venv/bin/python -m bench.e2e --size full --methods backlog,ceiling --density 30 --workloads basic

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
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from bench.bytecode import compile_package
from tests.cluster.harness import REPO_ROOT, ControlPlane, ControlPlaneConfig, ManagedProcess, free_port

JSON = dict[str, Any]

UPSTREAM = "kube-scheduler"
PYSCHEDULER = "pyscheduler"
CEILING = "ceiling"  # not a scheduler: the driver binds round robin (run_ceiling)
SCHEDULER_NAMES = {UPSTREAM: "default-scheduler", PYSCHEDULER: "pyscheduler", CEILING: "bench-ceiling"}
PREBOUND_SCHEDULER = "bench-prebound"  # pods bound at creation (density, backlog init pods): nobody schedules them
CREATE, BACKLOG = "create", "backlog"
METHODS = (CREATE, BACKLOG, CEILING)
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
DENSITY_REQUESTS = {"cpu": "10m", "memory": "50Mi"}
CLK_TCK = os.sysconf("SC_CLK_TCK")
SAMPLE_INTERVAL = 1.0
READY_TIMEOUT = 300.0  # process start -> /readyz; informers LIST every pre-bound pod first


@dataclass(frozen=True)
class Size:
    nodes: int
    init_pods: int
    pods: int
    backlog_pods: int | None = None  # measured pods of the backlog and ceiling methods (default: pods)

    def for_method(self, method: str) -> Size:
        """The size a method measures: backlog and ceiling take ``backlog_pods`` measured pods when set."""
        if method == CREATE or self.backlog_pods is None:
            return self
        return Size(nodes=self.nodes, init_pods=self.init_pods, pods=self.backlog_pods)


SIZES: Mapping[str, Size] = {
    "quick": Size(nodes=100, init_pods=100, pods=500),
    "full": Size(nodes=1000, init_pods=500, pods=3000, backlog_pods=4000),
    # scheduler_perf's 5000Nodes shapes have 1000 init pods; 2 measured pods per node.
    "xl": Size(nodes=5000, init_pods=1000, pods=10000),
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


def _pod(
    name: str,
    namespace: str,
    scheduler_name: str,
    kind: str,
    phase: str,
    requests: Mapping[str, str] | None = None,
    **spec: Any,
) -> JSON:
    container = {
        "name": "main",
        "image": PAUSE_IMAGE,
        "resources": {"requests": dict(requests or {"cpu": f"{POD_CPU_MILLI}m", "memory": "500Mi"})},
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


WATCHED_PHASES = f"{PHASE_LABEL} in (init,measure)"  # not the density pods: a --density LIST would be huge


class BindWatch:
    """A watch on the run's namespace (its init and measured pods): when each pod's spec.nodeName went from empty
    to set (monotonic time)."""

    def __init__(self, api: Api, namespace: str, selector: str = WATCHED_PHASES) -> None:
        self.api = api
        self.namespace = namespace
        self.selector = selector
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
        page = await self.api.call("GET", self._path, params={"resourceVersion": "0", "labelSelector": self.selector})
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
            params={
                "watch": "1",
                "resourceVersion": rv,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": "3600",
                "labelSelector": self.selector,
            },
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
        self,
        kind: str,
        cp: ControlPlane,
        log_dir: Path,
        profile: Path | None = None,
        env: Mapping[str, str] = {},
        profiles: Sequence[JSON] | None = None,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.kind = kind
        self.profiles = profiles  # pyscheduler's KubeSchedulerConfiguration profiles (default: its default one)
        self.extra_args = list(extra_args)  # more `pyscheduler run` flags (e.g. --enable-debug-handlers)
        self.port = 0  # pyscheduler's secure port once started
        self.env = dict(env)  # extra environment for pyscheduler (e.g. PYSCHEDULER_GC=default for an A/B run)
        self.cp = cp
        self.log_dir = log_dir
        self.profile = profile
        self.process: ManagedProcess | None = None

    async def start(self, tag: str) -> None:
        if self.kind == UPSTREAM:
            self.process = await asyncio.to_thread(self.cp.start_kube_scheduler, qps=CLIENT_QPS, burst=CLIENT_BURST)
            return
        compile_package()
        config = self.log_dir / "pyscheduler.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "clientConnection": {"qps": CLIENT_QPS, "burst": CLIENT_BURST},
                    "leaderElection": {"leaderElect": False},
                    **({"profiles": list(self.profiles)} if self.profiles is not None else {}),
                }
            )
        )
        port = free_port()
        python = [sys.executable]
        if self.profile is not None:
            # Timed by the CPU clock: on a shared machine wall-clock times include waiting for a CPU.
            python += ["-m", "bench.cpu_profile", "-o", str(self.profile.with_suffix(f".{tag}.prof"))]
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
            *self.extra_args,
        ]
        self.port = port
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **self.env}
        self.process = ManagedProcess(PYSCHEDULER, argv, self.log_dir / f"pyscheduler.{tag}.log", env=env).start()
        deadline = time.monotonic() + READY_TIMEOUT
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
                    raise RuntimeError(f"pyscheduler not ready after {READY_TIMEOUT:.0f} s:\n{self.process.tail()}")
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
    method: str = CREATE
    density: int = 0  # pods bound to each node at creation
    # backlog and ceiling (times from the watch's view of the measured pods' bindings):
    start_to_last_bound_s: float | None = None  # scheduler process started -> last measured pod bound
    ready_to_last_bound_s: float | None = None  # scheduler's /readyz answered 200 -> last bound
    first_to_last_bound_s: float | None = None  # first measured pod bound -> last bound
    drain_pods_per_s: float | None = None  # measured pods / first_to_last_bound_s
    cpu_ms_per_pod: float | None = None  # scheduler CPU from ready to last bound / measured pods
    # the same until the scheduler's events for the measured pods landed too (some trail the last bind)
    cpu_ms_per_pod_with_events: float | None = None
    apiserver_ms_per_pod: float | None = None  # kube-apiserver CPU over the same window / measured pods

    @property
    def ok(self) -> bool:
        return self.all_bound and not self.overcommitted_nodes and not self.misplaced_pods and not self.error


def _quantity_milli_cpu(value: str) -> int:
    return int(value[:-1]) if value.endswith("m") else int(float(value) * 1000)


_MEMORY_SUFFIXES = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4, "k": 1000, "M": 1000**2, "G": 1000**3}


def _quantity_bytes(value: str) -> int:
    for suffix, factor in _MEMORY_SUFFIXES.items():
        if value.endswith(suffix):
            return int(float(value[: -len(suffix)]) * factor)
    return int(value)


def pod_requests(pod: JSON) -> tuple[int, int]:
    """(milli-CPU, bytes) the pod's containers request (the bench's pods have no init containers)."""
    cpu = mem = 0
    for c in pod["spec"]["containers"]:
        req = (c.get("resources") or {}).get("requests") or {}
        cpu += _quantity_milli_cpu(req.get("cpu", "0"))
        mem += _quantity_bytes(req.get("memory", "0"))
    return cpu, mem


def _allocatable(node: JSON) -> tuple[int, int, int]:
    alloc = (node.get("status") or {}).get("allocatable") or {}
    return (
        _quantity_milli_cpu(alloc.get("cpu", "0")),
        _quantity_bytes(alloc.get("memory", "0")),
        int(alloc.get("pods", "0")),
    )


def usage(pods: Iterable[JSON]) -> dict[str, list[int]]:
    """Node name -> [milli-CPU, bytes, pod count] that the bound pods among ``pods`` request there."""
    used: dict[str, list[int]] = {}
    for pod in pods:
        node_name = pod["spec"].get("nodeName")
        if node_name:
            cpu, mem = pod_requests(pod)
            totals = used.setdefault(node_name, [0, 0, 0])
            totals[0] += cpu
            totals[1] += mem
            totals[2] += 1
    return used


class NoRoom(ValueError):
    pass


def plan_bindings(
    pods: Sequence[JSON],
    nodes: Sequence[JSON],
    used: Mapping[str, Sequence[int]],
    allowed: Callable[[JSON, JSON], bool],
) -> list[str]:
    """A node for each pod, round robin and nothing more: the next node after the previous pod's one that still
    has room for the pod's requests (``used`` plus what this plan put there, against allocatable) and that
    ``allowed(pod, node)`` accepts (the workload's node-level constraints; pod-level ones are not considered).
    Raises NoRoom when a pod fits on no node."""
    names = [n["metadata"]["name"] for n in nodes]
    alloc = [_allocatable(n) for n in nodes]
    taken = {name: list(used.get(name, (0, 0, 0))) for name in names}
    out: list[str] = []
    cursor = 0
    for pod in pods:
        cpu, mem = pod_requests(pod)
        for step in range(len(nodes)):
            k = (cursor + step) % len(nodes)
            have, limit = taken[names[k]], alloc[k]
            if (
                have[0] + cpu <= limit[0]
                and have[1] + mem <= limit[1]
                and have[2] + 1 <= limit[2]
                and allowed(pod, nodes[k])
            ):
                have[0] += cpu
                have[1] += mem
                have[2] += 1
                out.append(names[k])
                cursor = k + 1
                break
        else:
            raise NoRoom(
                f"pod {pod['metadata']['name']} ({cpu}m, {mem // 1024**2}Mi) fits on none of the {len(nodes)} nodes "
                f"after {len(out)} pods were placed"
            )
    return out


def density_pods(ctx: RunContext, nodes: int, per_node: int) -> list[JSON]:
    """``per_node`` small pods (DENSITY_REQUESTS) bound to each node at creation, as a real cluster carries."""
    pods = []
    for i in range(nodes):
        for j in range(per_node):
            pod = _pod(
                f"dens-{i:05d}-{j:03d}", ctx.namespace, PREBOUND_SCHEDULER, "density", "density", DENSITY_REQUESTS
            )
            pod["spec"]["nodeName"] = ctx.node_name(i)
            pods.append(pod)
    return pods


def prebound_layout(
    workload: Workload, ctx: RunContext, size: Size, density: int, bind_init: bool
) -> tuple[list[JSON], list[JSON]]:
    """The nodes (with the Ready status the driver gives them) and the pods bound at creation: ``density`` per
    node and, with ``bind_init``, the init pods, placed by plan_bindings (round robin where the workload allows
    them and they fit)."""
    nodes = [workload.node(ctx, i) | _node_status() for i in range(size.nodes)]
    prebound = density_pods(ctx, size.nodes, density)
    if bind_init and size.init_pods:
        init = [workload.init_pod(ctx, i) for i in range(size.init_pods)]
        for pod, host in zip(init, plan_bindings(init, nodes, usage(prebound), workload.allowed), strict=True):
            pod["spec"]["nodeName"] = host
            pod["spec"]["schedulerName"] = PREBOUND_SCHEDULER
        prebound += init
    return nodes, prebound


def check_fits(workload: Workload, ctx: RunContext, size: Size, density: int, bind_init: bool) -> None:
    """Raises NoRoom when the pods a run leaves to the scheduler (measured pods, plus the init pods unless they
    are bound at creation) cannot all be placed round robin next to the pre-bound ones (e.g. a --density that
    fills the nodes' pod or CPU capacity)."""
    nodes, prebound = prebound_layout(workload, ctx, size, density, bind_init)
    pending = workload.measured_pods(ctx, size)
    if not bind_init:
        pending = [workload.init_pod(ctx, i) for i in range(size.init_pods)] + pending
    plan_bindings(pending, nodes, usage(prebound), workload.allowed)


def check_placement(workload: Workload, nodes: list[JSON], pods: list[JSON], pod_level: bool = True) -> tuple[int, int]:
    """(over-committed nodes, pods on a node their own constraints forbid). Density pods are placed by the
    driver on every node and are only counted for the over-commit; ``pod_level=False`` leaves out the inter-pod
    constraints (the ceiling's round robin does not consider them)."""
    by_name = {n["metadata"]["name"]: n for n in nodes}
    misplaced = 0
    for pod in pods:
        node_name = pod["spec"].get("nodeName")
        if not node_name or pod["metadata"]["labels"].get(PHASE_LABEL) == "density":
            continue
        node = by_name.get(node_name)
        if node is None or not workload.allowed(pod, node):
            misplaced += 1
    over = 0
    for name, (cpu, mem, count) in usage(pods).items():
        limit = _allocatable(by_name.get(name) or {})
        if cpu > limit[0] or mem > limit[1] or count > limit[2]:
            over += 1
    if pod_level and isinstance(workload, _InterPodWorkload):
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


async def setup(api: Api, workload: Workload, ctx: RunContext, size: Size, density: int, bind_init: bool) -> JSON:
    """The run's namespace (and DaemonSet owner), its Ready nodes and the pods bound at creation (prebound_layout:
    ``density`` per node, and the init pods when ``bind_init``); returns how long the creations took."""
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
    _, prebound = prebound_layout(workload, ctx, size, density, bind_init)
    prebound_seconds = await create_many(api, _pods_path, prebound)
    return {"node_create_seconds": node_seconds, "prebound_pods": len(prebound), "prebound_seconds": prebound_seconds}


async def run_once(
    cp: ControlPlane,
    api: Api,
    workload: Workload,
    kind: str,
    size: Size,
    repeat: int,
    log_dir: Path,
    profile: Path | None,
    density: int = 0,
) -> RunResult:
    """The create method: the scheduler runs while the driver creates the init, then the measured pods."""
    run_id = f"{workload.name[:3]}-{'up' if kind == UPSTREAM else 'py'}-{repeat}-{secrets.token_hex(3)}"
    ctx = RunContext(workload.name, kind, f"bench-{run_id}", f"n-{run_id}-", run_id)
    extra: JSON = await setup(api, workload, ctx, size, density, bind_init=False)
    init_pods = [workload.init_pod(ctx, i) for i in range(size.init_pods)]
    measured = workload.measured_pods(ctx, size)
    sched = SchedulerUnderTest(kind, cp, log_dir, profile)
    watch = BindWatch(api, ctx.namespace)
    error: str | None = None
    extra["loadavg_before"] = os.getloadavg()
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
        bound_window = _bound_window(watch)
        if bound_window:
            window = bound_window[1] - first_created
        error, proc = _outcome(ok, watch, sched, len(measured))
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
    expected = len(init_pods) + len(measured) + extra["prebound_pods"]
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
        all_bound=bound == len(pods) == expected,
        overcommitted_nodes=over,
        misplaced_pods=misplaced,
        cpu_seconds=proc.cpu_seconds,
        cpu_seconds_measured=cpu_after - cpu_before,
        peak_rss_mib=proc.peak_rss_mib,
        apiserver_cpu_seconds_measured=api_cpu,
        driver_cpu_seconds_measured=driver_cpu,
        error=error,
        extra=extra,
        density=density,
    )


@dataclass
class Prepared:
    """A cluster state shared by all the backlog and ceiling runs of a workload: namespace, Ready nodes,
    pre-bound density and init pods. Each run adds the measured pods (pending), binds them and deletes them
    again, so each starts from the same state (and the --density pods are created once, not per run)."""

    ctx: RunContext
    nodes: list[JSON]
    used: dict[str, list[int]]
    prebound: int
    extra: JSON


async def prepare(api: Api, workload: Workload, size: Size, density: int) -> Prepared:
    run_id = f"{workload.name[:3]}-bl-{secrets.token_hex(3)}"
    ctx = RunContext(workload.name, CEILING, f"bench-{run_id}", f"n-{run_id}-", run_id)
    extra = await setup(api, workload, ctx, size, density, bind_init=True)
    nodes, prebound = prebound_layout(workload, ctx, size, density, bind_init=True)
    return Prepared(ctx, nodes, usage(prebound), len(prebound), extra)


async def delete_measured(api: Api, namespace: str, within: float = 300.0) -> None:
    """Delete the measured pods (grace 0: gone at once, no kubelet to confirm) and wait until none is listed."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    selector = f"{PHASE_LABEL}=measure"
    await api.call("DELETE", path, params={"labelSelector": selector, "gracePeriodSeconds": "0"})
    deadline = time.monotonic() + within
    while (await api.call("GET", path, params={"labelSelector": selector, "limit": "1"})).get("items"):
        if time.monotonic() > deadline:
            raise ApiFailure(f"measured pods in {namespace} still listed {within:.0f} s after their deletion")
        await asyncio.sleep(0.5)


async def _final_check(
    api: Api, workload: Workload, prep: Prepared, expected: int, pod_level: bool = True
) -> tuple[int, bool, int, int]:
    """(bound pods, all bound, over-committed nodes, misplaced pods) of the namespace's final state."""
    pods = await api.list_all(f"/api/v1/namespaces/{prep.ctx.namespace}/pods")
    node_objs = await api.list_all("/api/v1/nodes", {"labelSelector": f"{RUN_LABEL}={prep.ctx.run}"})
    over, misplaced = check_placement(workload, node_objs, pods, pod_level)
    bound = sum(1 for p in pods if p["spec"].get("nodeName"))
    return bound, bound == len(pods) == expected, over, misplaced


def _outcome(ok: bool, watch: BindWatch, sched: SchedulerUnderTest, pods: int) -> tuple[str | None, ProcStats]:
    """After waiting for the measured pods: (the run's error, if any; the scheduler's CPU and peak RSS, read
    while it still runs)."""
    error = None if ok else f"measured pods: {watch.bound_by_phase.get('measure', 0)}/{pods} bound in time"
    if sched.alive():
        return error, read_proc(sched.pid)
    exited = sched.process.poll() if sched.process else "?"
    return (error or "") + f" scheduler exited early ({exited})", ProcStats(0.0, 0.0)


def _bound_window(watch: BindWatch) -> tuple[float, float] | None:
    """(first, last) monotonic time a measured pod was seen bound."""
    times = [t for n, t in watch.bound_at.items() if watch.phase_of[n] == "measure"]
    return (min(times), max(times)) if times else None


async def quiesce(cp: ControlPlane, *, idle: float = 0.15, within: float = 90.0) -> float:
    """Wait until etcd and kube-apiserver together use less than `idle` of a CPU over one second (the previous
    run's deletions, compactions and event writes done), so each measured run starts from a quiet control
    plane whoever ran before it; returns the seconds waited (at most `within`)."""
    pids = [p.pid for name, p in cp.processes.items() if name in ("etcd", "kube-apiserver") and p.pid]
    start = time.monotonic()
    while time.monotonic() - start < within:
        before = sum(_cpu_of(pid) for pid in pids)
        await asyncio.sleep(1.0)
        if sum(_cpu_of(pid) for pid in pids) - before < idle:
            break
    return time.monotonic() - start


async def apiserver_requests(api: Api) -> dict[str, float]:
    """apiserver_request_total summed by verb/resource/subresource (from the apiserver's /metrics)."""
    async with api.session.get(api.server + "/metrics") as resp:
        text = await resp.text()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, _, value = line[len("apiserver_request_total{") :].rpartition("} ")
        labels = dict(part.split("=", 1) for part in labels_text.split(",") if "=" in part)
        key = "/".join(
            v.strip('"') for v in (labels.get("verb", ""), labels.get("resource", ""), labels.get("subresource", ""))
        ).rstrip("/")
        out[key] = out.get(key, 0.0) + float(value)
    return out


EVENTS_WAIT = 30.0  # seconds after the last bind for the scheduler's queued events to land


async def wait_for_events(api: Api, before: Mapping[str, float], pods: int) -> dict[str, float]:
    """apiserver_request_total once `pods` more event POSTs than in `before` were made (one `Scheduled` per
    measured pod), or after EVENTS_WAIT seconds, whichever comes first."""
    deadline = time.monotonic() + EVENTS_WAIT
    while True:
        now = await apiserver_requests(api)
        if now.get("POST/events", 0.0) - before.get("POST/events", 0.0) >= pods or time.monotonic() > deadline:
            return now
        await asyncio.sleep(0.2)


def requests_per_pod(before: Mapping[str, float], after: Mapping[str, float], pods: int) -> dict[str, float]:
    """The API requests made between two /metrics reads, per measured pod (keys with at least 0.01 per pod)."""
    diff = {k: (after.get(k, 0.0) - before.get(k, 0.0)) / max(pods, 1) for k in after}
    return {k: round(v, 3) for k, v in sorted(diff.items()) if v >= 0.01}


class Neighbours:
    """`count` CPU-burning processes (a busy loop each) sharing the machine with the run: the scheduler's node
    is rarely its own in a cluster. Started after the control plane quiesced, stopped when the run ends."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        for _ in range(self.count):
            self._procs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))

    def stop(self) -> float:
        """Stop them; the CPU seconds they got (what they took from the schedulers and the apiserver)."""
        cpu = 0.0
        for proc in self._procs:
            cpu += _cpu_of(proc.pid)
            proc.kill()
            proc.wait()
        self._procs.clear()
        return cpu


async def run_backlog(
    cp: ControlPlane,
    api: Api,
    workload: Workload,
    prep: Prepared,
    kind: str,
    size: Size,
    repeat: int,
    log_dir: Path,
    profile: Path | None,
    density: int,
    neighbours: int = 0,
) -> RunResult:
    """The backlog method: every measured pod is created (pending) while no scheduler runs; then the scheduler
    starts and the clock runs until the last one is bound (beside `neighbours` CPU-burning processes)."""
    ctx = replace(prep.ctx, scheduler=kind)
    measured = workload.measured_pods(ctx, size)
    create_seconds = await create_many(api, _pods_path, measured)
    quiet_after = await quiesce(cp)
    watch = BindWatch(api, ctx.namespace)
    sched = SchedulerUnderTest(kind, cp, log_dir, profile)
    collector = ThroughputCollector(watch, "measure")
    apiserver_pid = cp.processes["kube-apiserver"].pid
    extra: JSON = {
        **prep.extra,
        "loadavg_before": os.getloadavg(),
        "measured_create_seconds": create_seconds,
        "quiesce_seconds": quiet_after,
    }
    error: str | None = None
    spawned = ready = 0.0
    cpu_ready = cpu_end = cpu_events = api_ready = api_end = driver_ready = driver_end = 0.0
    proc = ProcStats(0.0, 0.0)
    burners = Neighbours(neighbours)
    try:
        burners.start()
        await watch.start()
        requests_before = await apiserver_requests(api)
        spawned = time.monotonic()
        await sched.start(f"backlog-{ctx.run}-{kind}")
        ready = time.monotonic()
        cpu_ready, api_ready, driver_ready = _cpu_of(sched.pid), _cpu_of(apiserver_pid), _self_cpu()
        collector.start()
        ok = await watch.wait_bound("measure", len(measured), max(120.0, size.pods / 10), sched.alive)
        cpu_end, api_end, driver_end = _cpu_of(sched.pid), _cpu_of(apiserver_pid), _self_cpu()
        bound_at = time.monotonic()
        await collector.stop()
        # Queued event writes are part of the cost per pod: wait for one event per measured pod (at most
        # EVENTS_WAIT), and read the scheduler's CPU again then.
        requests_after = await wait_for_events(api, requests_before, len(measured))
        cpu_events = _cpu_of(sched.pid)
        extra["events_landed_after_last_bind_s"] = round(time.monotonic() - bound_at, 2)
        extra["apiserver_requests_per_pod"] = requests_per_pod(requests_before, requests_after, len(measured))
        error, proc = _outcome(ok, watch, sched, len(measured))
    except Exception as exc:  # a failed run is reported, not fatal for the others
        error = f"{type(exc).__name__}: {exc}"
    finally:
        extra["neighbours"], extra["neighbour_cpu_seconds"] = neighbours, burners.stop()
        extra["loadavg_after"] = os.getloadavg()
        extra["watch_events"], extra["watch_reconnects"] = watch.events, watch.reconnects
        extra["ready_seconds"] = ready - spawned if ready else None
        await collector.stop()
        await watch.stop()
        await sched.stop()
    window = _bound_window(watch)
    bound, all_bound, over, misplaced = await _final_check(api, workload, prep, prep.prebound + len(measured))
    await delete_measured(api, ctx.namespace)
    stats = summarize(collector.samples)
    n = len(measured)
    first_to_last = window[1] - window[0] if window else None
    return RunResult(
        workload=workload.name,
        scheduler=kind,
        repeat=repeat,
        nodes=size.nodes,
        init_pods=size.init_pods,
        pods=n,
        samples=collector.samples,
        average=stats["average"],
        p50=stats["p50"],
        p90=stats["p90"],
        p99=stats["p99"],
        first_created_to_last_bound_s=None,
        create_seconds=create_seconds,
        bound=bound,
        all_bound=all_bound,
        overcommitted_nodes=over,
        misplaced_pods=misplaced,
        cpu_seconds=proc.cpu_seconds,
        cpu_seconds_measured=cpu_end - cpu_ready,
        peak_rss_mib=proc.peak_rss_mib,
        apiserver_cpu_seconds_measured=api_end - api_ready,
        driver_cpu_seconds_measured=driver_end - driver_ready,
        error=error,
        extra=extra,
        method=BACKLOG,
        density=density,
        start_to_last_bound_s=window[1] - spawned if window else None,
        ready_to_last_bound_s=window[1] - ready if window and ready else None,
        first_to_last_bound_s=first_to_last,
        drain_pods_per_s=n / first_to_last if first_to_last else None,
        cpu_ms_per_pod=1000 * (cpu_end - cpu_ready) / n if n and cpu_end else None,
        cpu_ms_per_pod_with_events=1000 * (cpu_events - cpu_ready) / n if n and cpu_events else None,
        apiserver_ms_per_pod=1000 * (api_end - api_ready) / n if n and api_end else None,
    )


def _binding(namespace: str, name: str, node: str) -> tuple[str, bytes]:
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    return f"/api/v1/namespaces/{namespace}/pods/{name}/binding", json.dumps(body).encode()


async def post_all(api: Api, requests: Sequence[tuple[str, bytes]]) -> float:
    """POST every (path, body) with IN_FLIGHT requests in flight; returns the seconds it took."""
    queue = iter(requests)
    start = time.monotonic()

    async def worker() -> None:
        for path, body in queue:
            await api.call("POST", path, body)

    await asyncio.gather(*(worker() for _ in range(min(IN_FLIGHT, len(requests)) or 1)))
    return time.monotonic() - start


async def run_ceiling(
    cp: ControlPlane,
    api: Api,
    workload: Workload,
    prep: Prepared,
    size: Size,
    repeat: int,
    density: int,
    neighbours: int = 0,
) -> RunResult:
    """The ceiling: the same pending measured pods, bound by the driver itself: ``pods/<name>/binding`` POSTs,
    IN_FLIGHT in flight, to nodes picked round robin among those with room (plan_bindings, computed before the
    clock starts). No scheduler runs; what it measures is how fast this apiserver accepts bindings."""
    ctx = replace(prep.ctx, scheduler=CEILING)
    measured = workload.measured_pods(ctx, size)
    create_seconds = await create_many(api, _pods_path, measured)
    targets = plan_bindings(measured, prep.nodes, prep.used, workload.allowed)
    requests = [_binding(ctx.namespace, p["metadata"]["name"], t) for p, t in zip(measured, targets, strict=True)]
    quiet_after = await quiesce(cp)
    watch = BindWatch(api, ctx.namespace)
    apiserver_pid = cp.processes["kube-apiserver"].pid
    extra: JSON = {
        **prep.extra,
        "loadavg_before": os.getloadavg(),
        "measured_create_seconds": create_seconds,
        "quiesce_seconds": quiet_after,
    }
    error: str | None = None
    api_before = api_end = driver_before = driver_end = 0.0
    burners = Neighbours(neighbours)
    try:
        burners.start()
        await watch.start()
        api_before, driver_before = _cpu_of(apiserver_pid), _self_cpu()
        extra["post_seconds"] = await post_all(api, requests)
        ok = await watch.wait_bound("measure", len(measured), max(120.0, size.pods / 10), lambda: True)
        api_end, driver_end = _cpu_of(apiserver_pid), _self_cpu()
        if not ok:
            error = f"measured pods: {watch.bound_by_phase.get('measure', 0)}/{len(measured)} bound in time"
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    finally:
        extra["neighbours"], extra["neighbour_cpu_seconds"] = neighbours, burners.stop()
        extra["loadavg_after"] = os.getloadavg()
        extra["watch_events"], extra["watch_reconnects"] = watch.events, watch.reconnects
        await watch.stop()
    window = _bound_window(watch)
    bound, all_bound, over, misplaced = await _final_check(
        api, workload, prep, prep.prebound + len(measured), pod_level=False
    )
    await delete_measured(api, ctx.namespace)
    n = len(measured)
    first_to_last = window[1] - window[0] if window else None
    return RunResult(
        workload=workload.name,
        scheduler=CEILING,
        repeat=repeat,
        nodes=size.nodes,
        init_pods=size.init_pods,
        pods=n,
        samples=[],
        average=None,
        p50=None,
        p90=None,
        p99=None,
        first_created_to_last_bound_s=None,
        create_seconds=create_seconds,
        bound=bound,
        all_bound=all_bound,
        overcommitted_nodes=over,
        misplaced_pods=misplaced,
        cpu_seconds=0.0,
        cpu_seconds_measured=0.0,
        peak_rss_mib=0.0,
        apiserver_cpu_seconds_measured=api_end - api_before,
        driver_cpu_seconds_measured=driver_end - driver_before,
        error=error,
        extra=extra,
        method=CEILING,
        density=density,
        first_to_last_bound_s=first_to_last,
        drain_pods_per_s=n / first_to_last if first_to_last else None,
        apiserver_ms_per_pod=1000 * (api_end - api_before) / n if n and api_end else None,
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


# The backlog table: (RunResult field, column, format, how it compares with the ceiling: "rate" = value /
# ceiling pods/s, "time" = ceiling first->last / value, i.e. the rate that window means for the same pods
# against the ceiling's; None: no counterpart).
BACKLOG_METRICS: tuple[tuple[str, str, str, str | None], ...] = (
    ("start_to_last_bound_s", "start->last s", "{:.1f}", "time"),
    ("ready_to_last_bound_s", "ready->last s", "{:.1f}", "time"),
    ("first_to_last_bound_s", "first->last s", "{:.1f}", "time"),
    ("drain_pods_per_s", "pods/s", "{:.0f}", "rate"),
    ("cpu_ms_per_pod", "CPU ms/pod", "{:.2f}", None),
    ("cpu_ms_per_pod_with_events", "CPU ms/pod + events", "{:.2f}", None),
    ("cpu_seconds", "CPU s", "{:.1f}", None),
    ("peak_rss_mib", "peak RSS MiB", "{:.0f}", None),
    ("apiserver_ms_per_pod", "apiserver CPU ms/pod", "{:.2f}", None),
)
CEILING_COLUMNS = frozenset({"first_to_last_bound_s", "drain_pods_per_s", "apiserver_ms_per_pod"})
CREATE_KEYS = tuple(key for key, _, _ in METRICS)
BACKLOG_KEYS = tuple(key for key, _, _, _ in BACKLOG_METRICS)


def medians(results: Sequence[RunResult], keys: Iterable[str] = CREATE_KEYS) -> dict[tuple[str, str], JSON]:
    out: dict[tuple[str, str], JSON] = {}
    for r in results:
        out.setdefault((r.workload, r.scheduler), {"runs": []})["runs"].append(r)
    keys = tuple(keys)
    for entry in out.values():
        runs: list[RunResult] = entry["runs"]
        for key in keys:
            entry[key] = _median(getattr(r, key) for r in runs)
        entry["n"] = len(runs)
        entry["ok"] = sum(1 for r in runs if r.ok)
    return out


def _fmt(fmt: str, value: float | None) -> str:
    return "-" if value is None else fmt.format(value)


def ratio(a: float | None, b: float | None) -> str:
    """a/b as "1.23x", "-" when either is missing or b is zero."""
    return "-" if a is None or not b else f"{a / b:.2f}x"


def ceiling_fraction(compare: str | None, value: float | None, ceiling: Mapping[str, Any] | None) -> float | None:
    """A backlog figure as a fraction of the ceiling's: a rate against the ceiling's pods/s, a duration as the
    ceiling's first->last window over it (both: the ceiling's speed = 1). None when there is nothing to compare."""
    if compare is None or value is None or ceiling is None or not value:
        return None
    if compare == "rate":
        top = ceiling.get("drain_pods_per_s")
        return value / top if top else None
    window = ceiling.get("first_to_last_bound_s")
    return window / value if window is not None else None


def run_order(items: Sequence[str], repeat: int) -> list[str]:
    """Even repeats keep the order, odd ones reverse it, so neither scheduler always runs first (on a fresher
    apiserver, or right after the other one's run)."""
    return list(items) if repeat % 2 == 0 else list(reversed(items))


def _markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return (
            "| " + " | ".join(c.ljust(widths[i]) if i < 2 else c.rjust(widths[i]) for i, c in enumerate(cells)) + " |"
        )

    sep = "|" + "|".join("-" * (w + 2) if i < 2 else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|"
    return [line(header), sep, *(line(r) for r in rows)]


def render_table(results: Sequence[RunResult], workloads: Sequence[str], size: Size, density: int = 0) -> str:
    """The create method's table (results of other methods are left out)."""
    med = medians([r for r in results if r.method == CREATE])
    header = ["workload", "scheduler", *(label for _, label, _ in METRICS), "runs ok"]
    rows: list[list[str]] = []
    for w in workloads:
        up, py = med.get((w, UPSTREAM)), med.get((w, PYSCHEDULER))
        for kind, entry in ((UPSTREAM, up), (PYSCHEDULER, py)):
            if entry is None:
                continue
            rows.append([w, kind, *(_fmt(f, entry[k]) for k, _, f in METRICS), f"{entry['ok']}/{entry['n']}"])
        if up is not None and py is not None:
            rows.append([w, "py/upstream", *(ratio(py[k], up[k]) for k, _, _ in METRICS), ""])
    title = (
        f"{size.nodes} nodes, {size.init_pods} init pods, {size.pods} measured pods"
        + (f", {density} pods per node bound at creation" if density else "")
        + f"; medians of {max((e['n'] for e in med.values()), default=0)} runs"
    )
    return "\n".join([title, "", *_markdown(header, rows)])


def render_backlog_table(results: Sequence[RunResult], workloads: Sequence[str], size: Size, density: int = 0) -> str:
    """The backlog and ceiling methods' table: per workload the two schedulers (figures with their fraction of
    the ceiling), their ratio and the ceiling itself."""
    keys = BACKLOG_KEYS
    med = medians([r for r in results if r.method in (BACKLOG, CEILING)], keys)
    header = ["workload", "scheduler", *(label for _, label, _, _ in BACKLOG_METRICS), "runs ok"]
    rows: list[list[str]] = []
    for w in workloads:
        up, py, top = med.get((w, UPSTREAM)), med.get((w, PYSCHEDULER)), med.get((w, CEILING))
        for kind, entry in ((UPSTREAM, up), (PYSCHEDULER, py)):
            if entry is None:
                continue
            cells = []
            for k, _, f, compare in BACKLOG_METRICS:
                cell = _fmt(f, entry[k])
                frac = ceiling_fraction(compare, entry[k], top)
                cells.append(cell if frac is None else f"{cell} ({frac:.0%})")
            rows.append([w, kind, *cells, f"{entry['ok']}/{entry['n']}"])
        if up is not None and py is not None:
            rows.append([w, "py/upstream", *(ratio(py[k], up[k]) for k in keys), ""])
        if top is not None:
            cells = [_fmt(f, top[k]) if k in CEILING_COLUMNS else "-" for k, _, f, _ in BACKLOG_METRICS]
            rows.append([w, "ceiling", *cells, f"{top['ok']}/{top['n']}"])
    title = (
        f"backlog: {size.nodes} nodes, {size.init_pods} init pods"
        + (f" and {density} pods per node" if density else "")
        + f" bound at creation, {size.pods} measured pods created before the scheduler starts; "
        f"medians of {max((e['n'] for e in med.values()), default=0)} runs"
    )
    legend = (
        "start/ready/first -> last: from the scheduler's process start, its /readyz, the first measured pod bound, to "
        "the last one bound; pods/s = measured pods / first->last; CPU ms/pod = scheduler CPU from ready to last "
        "bound / pods; + events: until its Scheduled events for the measured pods landed too (they may trail the "
        f"binds; at most {EVENTS_WAIT:.0f} s after the last). (NN%) = fraction of the ceiling measured in this "
        "invocation (ceiling = the driver's raw "
        f"pods/<name>/binding POSTs, {IN_FLIGHT} in flight, round robin, no scheduler): pods/s over the ceiling's, "
        "a duration as the ceiling's first->last over it."
    )
    return "\n".join([title, "", *_markdown(header, rows), "", legend])


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
        backlog_pods=args.pods or size.backlog_pods,
    )
    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    for w in workloads:
        if w not in WORKLOADS:
            raise SystemExit(f"unknown workload {w!r} (choose from {', '.join(WORKLOADS)})")
    schedulers = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for m in methods:
        if m not in METHODS:
            raise SystemExit(f"unknown method {m!r} (choose from {', '.join(METHODS)})")
    density = args.density
    for m in methods:
        for w in workloads:
            try:
                check_fits(
                    WORKLOADS[w], RunContext(w, CEILING, "ns", "n-", "run"), size.for_method(m), density, m != CREATE
                )
            except NoRoom as exc:
                raise SystemExit(f"{m}/{w}: the pods do not fit next to --density {density}: {exc}") from None
    config = ControlPlaneConfig(
        max_requests_inflight=10000,
        max_mutating_requests_inflight=5000,
        keep_work_dir=args.keep,
        # deletecollection (the cleanups, never inside a measured window) deletes one pod at a time by default:
        # ~5.7 ms per pod here, minutes for a --density 30 namespace.
        apiserver_args=("--event-ttl=5m", "--delete-collection-workers=8"),
        startup_timeout=READY_TIMEOUT,  # also upstream kube-scheduler's /readyz wait
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
                workload = WORKLOADS[w]
                for repeat in range(args.repeats if CREATE in methods else 0):
                    for kind in run_order(schedulers, repeat):
                        profile = Path(args.profile) if args.profile and kind == PYSCHEDULER else None
                        r = await run_once(cp, api, workload, kind, size, repeat, log_dir, profile, density)
                        results.append(r)
                        _progress(started, r)
                drained = [*(schedulers if BACKLOG in methods else ()), *((CEILING,) if CEILING in methods else ())]
                if not drained:
                    continue
                bsize = size.for_method(BACKLOG)
                prep = await prepare(api, workload, bsize, density)
                try:
                    for repeat in range(args.repeats):
                        for kind in run_order(drained, repeat):
                            if kind == CEILING:
                                r = await run_ceiling(
                                    cp, api, workload, prep, bsize, repeat, density, args.neighbours
                                )
                            else:
                                profile = Path(args.profile) if args.profile and kind == PYSCHEDULER else None
                                r = await run_backlog(
                                    cp, api, workload, prep, kind, bsize, repeat, log_dir, profile, density,
                                    args.neighbours,
                                )
                            results.append(r)
                            _progress(started, r)
                finally:
                    await cleanup(api, prep.ctx)
        finally:
            await api.close()
    inprocess: JSON | None = None
    if args.inprocess_nodes:
        inprocess = run_inprocess(args.inprocess_nodes, args.inprocess_pods, args.inprocess_runs)
    tables = []
    if CREATE in methods:
        tables.append(render_table(results, workloads, size, density))
    if BACKLOG in methods or CEILING in methods:
        tables.append(render_backlog_table(results, workloads, size.for_method(BACKLOG), density))
    if args.neighbours and (BACKLOG in methods or CEILING in methods):
        tables.append(f"Backlog and ceiling runs beside {args.neighbours} CPU-burning neighbour process(es).")
    table = "\n\n".join(tables)
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
            "methods": methods,
            "density": density,
            "client_qps_burst": [CLIENT_QPS, CLIENT_BURST],
            "machine": machine(),
            "wall_seconds": time.monotonic() - started,
            "table": table,
            "medians": {
                f"{w}/{s}": {k: v for k, v in e.items() if k != "runs"}
                for (w, s), e in medians([r for r in results if r.method == CREATE]).items()
            },
            "backlog_medians": {
                f"{w}/{s}": {k: v for k, v in e.items() if k != "runs"}
                for (w, s), e in medians([r for r in results if r.method != CREATE], BACKLOG_KEYS).items()
            },
            "runs": [asdict(r) for r in results],
            "inprocess": inprocess,
        }
        await asyncio.to_thread(path.write_text, json.dumps(doc, indent=2))
        print(f"\nraw samples: {path}", file=sys.stderr)
    return 0 if all(r.ok for r in results) else 1


def _progress(started: float, r: RunResult) -> None:
    """One line per run on stderr."""
    head = f"[{time.monotonic() - started:6.0f}s] {r.method:7} {r.workload:9} {r.scheduler:14} #{r.repeat}: "
    tail = (
        f", bound {r.bound}, over {r.overcommitted_nodes}, misplaced {r.misplaced_pods}"
        + f", load {r.extra['loadavg_before'][0]:.1f}, reconnects {r.extra.get('watch_reconnects')}"
        + (f", ERROR {r.error}" if r.error else "")
    )
    if r.method == CREATE:
        body = (
            f"avg {_fmt('{:.0f}', r.average)} pods/s, p50 {_fmt('{:.0f}', r.p50)}, "
            f"window {_fmt('{:.1f}', r.first_created_to_last_bound_s)} s, "
            f"create {r.create_seconds:.1f} s, cpu {r.cpu_seconds:.1f} s "
            f"({r.cpu_seconds_measured:.1f} measured; apiserver {r.apiserver_cpu_seconds_measured:.1f}"
            f", driver {r.driver_cpu_seconds_measured:.1f}), rss {r.peak_rss_mib:.0f} MiB"
        )
    elif r.method == BACKLOG:
        body = (
            f"start->last {_fmt('{:.1f}', r.start_to_last_bound_s)} s, "
            f"ready->last {_fmt('{:.1f}', r.ready_to_last_bound_s)} s, "
            f"first->last {_fmt('{:.1f}', r.first_to_last_bound_s)} s = {_fmt('{:.0f}', r.drain_pods_per_s)} pods/s, "
            f"cpu {_fmt('{:.2f}', r.cpu_ms_per_pod)} ms/pod ({r.cpu_seconds:.1f} s in all), "
            f"{_fmt('{:.2f}', r.cpu_ms_per_pod_with_events)} ms/pod until its events landed "
            f"({r.extra.get('events_landed_after_last_bind_s')} s after the last bind), "
            f"apiserver {_fmt('{:.2f}', r.apiserver_ms_per_pod)} ms/pod, rss {r.peak_rss_mib:.0f} MiB, "
            f"pending pods created in {r.create_seconds:.1f} s, "
            f"API requests per pod {r.extra.get('apiserver_requests_per_pod')}, "
            f"control plane quiet after {r.extra.get('quiesce_seconds', 0.0):.0f} s"
        )
    else:
        body = (
            f"first->last {_fmt('{:.1f}', r.first_to_last_bound_s)} s = {_fmt('{:.0f}', r.drain_pods_per_s)} pods/s, "
            f"POSTs {r.extra.get('post_seconds', 0.0):.1f} s, apiserver {_fmt('{:.2f}', r.apiserver_ms_per_pod)} "
            f"ms/pod, driver {r.driver_cpu_seconds_measured:.1f} s"
        )
    print(head + body + tail, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", choices=sorted(SIZES), default="quick")
    parser.add_argument("--nodes", type=int, default=None, help="override the size's node count")
    parser.add_argument("--init-pods", type=int, default=None, help="override the size's init pod count")
    parser.add_argument("--pods", type=int, default=None, help="override the size's measured pod count")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workloads", default="basic,affinity,daemonset")
    parser.add_argument("--schedulers", default=f"{UPSTREAM},{PYSCHEDULER}")
    parser.add_argument(
        "--methods",
        "--method",
        default=CREATE,
        help="comma-separated: create (pods created while the scheduler runs), backlog (all created before it "
        "starts), ceiling (the same backlog bound by raw binding POSTs, no scheduler)",
    )
    parser.add_argument(
        "--density",
        type=int,
        default=0,
        help=f"bind N pods ({DENSITY_REQUESTS['cpu']}/{DENSITY_REQUESTS['memory']}) to every node at creation, "
        "before the scheduler starts",
    )
    parser.add_argument(
        "--neighbours",
        type=int,
        default=0,
        help="backlog and ceiling runs share the machine with N CPU-burning processes (a busy loop each)",
    )
    parser.add_argument("--json", default=None, help="write the raw samples and medians here")
    parser.add_argument(
        "--profile", default=None, help="run pyscheduler under cProfile (CPU clock), writing PATH.<run>.prof"
    )
    parser.add_argument("--keep", action="store_true", help="keep the control plane's work directory (logs)")
    parser.add_argument("--inprocess-nodes", type=int, default=0, help="also run bench.inprocess at N nodes")
    parser.add_argument("--inprocess-pods", type=int, default=2000)
    parser.add_argument("--inprocess-runs", type=int, default=3)
    args = parser.parse_args(argv)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    raise SystemExit(main())
