"""DynamicResources end to end: upstream scheduler_perf's DRA workloads, pyscheduler side by side with upstream.

The workloads of kubernetes v1.37.2 test/integration/scheduler_perf/dra/performance-config.yaml
(SchedulingWithResourceClaimTemplate): ``--nodes`` Ready nodes, each with one ResourceSlice of 10 devices of
scheduler_perf's `resourceslice-basic-devices.yaml` (its attributes and capacities), the DeviceClass
`device.driver == "test-driver.cdi.k8s.io"`, ``--init-claims`` claims allocated beforehand (spread over the
nodes, as `allocResourceClaims` leaves them), a ResourceClaimTemplate asking one device (`--selector` adds
scheduler_perf's "selector" variant's CEL), and pods using it; kube-controller-manager runs only its
resourceclaim controller, which makes each pod's claim (and deallocates a deleted pod's), as in scheduler_perf.

  burst   (5000pods_500nodes): the scheduler running, the measured pods are created (50 requests in flight); the
          throughput is sampled every second from a watch, as scheduler_perf's SchedulingThroughput.
  steady  (empty_500nodes, half_..., full_...: steadyState): ``--in-flight`` pods exist at any time; each pod
          bound is deleted and replaced by a new one; pods/s bound over ``--duration`` seconds after a warm-up.
  --stuck N adds N pods whose claim nothing satisfies, pending throughout: every claim change may retry them
          (upstream's queueing hints retry them only when a change could help), which costs CPU and throughput.

Each run starts from a quiet control plane (bench.e2e.quiesce) on fresh nodes, slices and claims; upstream and
pyscheduler alternate (even repeats upstream first); the report gives medians over ``--repeats``, the
scheduler's CPU seconds per bound pod over the measured window, and checks that no device was allocated twice
and every bound pod's claim is allocated on its node.

    .venv/bin/python -m bench.dra_e2e --mode burst --nodes 500 --init-claims 2500 --pods 2500 --repeats 3
    .venv/bin/python -m bench.dra_e2e --mode steady --nodes 500 --init-claims 0 --duration 30 --repeats 3
    .venv/bin/python -m bench.dra_e2e --mode steady --nodes 50 --duration 10 --repeats 1   # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.e2e import (
    CLIENT_BURST,
    CLIENT_QPS,
    IN_FLIGHT,
    PAUSE_IMAGE,
    PHASE_LABEL,
    PYSCHEDULER,
    RUN_LABEL,
    SCHEDULER_NAMES,
    UPSTREAM,
    Api,
    BindWatch,
    SchedulerUnderTest,
    ThroughputCollector,
    _cpu_of,
    _node,
    create_many,
    create_ready_nodes,
    quiesce,
    read_proc,
    summarize,
)
from tests.cluster.harness import ControlPlane, ControlPlaneConfig

JSON = dict[str, Any]
DRIVER = "test-driver.cdi.k8s.io"
RESOURCE = "/apis/resource.k8s.io/v1"
DEVICES_PER_NODE = 10
PCI_ROOTS = 2
# scheduler_perf's "selector" variant: every device matches, but the expression is evaluated.
SELECTOR = (
    f'device.attributes["{DRIVER}"].model == "B60" && '
    f'device.capacity["{DRIVER}"].memory.compareTo(quantity("1Gi")) >= 0'
)
MERGE = "application/merge-patch+json"


def basic_device(i: int) -> JSON:
    """scheduler_perf's resourceslice-basic-devices.yaml device (an Intel GPU's attributes)."""
    root = i % PCI_ROOTS
    strings = {
        "driver": "xe",
        "resource.k8s.io/pciRoot": str(root),
        "family": "Arc Pro B-Series",
        "health": "Healthy",
        "model": "B60",
        "pciAddress": f"0000:0{i}:00.0",
        "pciId": "0xe211",
        "pciRoot": f"0{root}",
        "resource.kubernetes.io/pciBusID": f"0000:0{i}:00.0",
        "resource.kubernetes.io/pciRoot": f"pci0000:0{root}",
        "type": "gpu",
    }
    attributes: JSON = {k: {"string": v} for k, v in strings.items()}
    attributes["driverVersion"] = {"version": "1.2.3"}
    attributes["sriov"] = {"bool": True}
    return {
        "name": f"basic-device-{i}",
        "attributes": attributes,
        "capacity": {"memory": {"value": "24480Mi"}, "millicores": {"value": "1k"}},
    }


@dataclass
class Run:
    """The names of one run."""

    scheduler: str
    run: str
    nodes: list[str]

    @property
    def namespace(self) -> str:
        return f"dra-{self.run}"

    @property
    def pods_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"

    @property
    def device_class(self) -> str:
        return f"test-class-{self.run}"

    def pod(self, i: int, *, stuck: bool = False) -> JSON:
        """A measured pod (claim template test-claim-template), or a stuck one, whose template nothing satisfies."""
        template = "never-claim-template" if stuck else "test-claim-template"
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{'stuck' if stuck else 'test'}-{i:06d}",
                "namespace": self.namespace,
                "labels": {RUN_LABEL: self.run, PHASE_LABEL: "stuck" if stuck else "measure"},
            },
            "spec": {
                "schedulerName": SCHEDULER_NAMES[self.scheduler],
                "resourceClaims": [{"name": "resource", "resourceClaimTemplateName": template}],
                "containers": [
                    {"name": "pause", "image": PAUSE_IMAGE, "resources": {"claims": [{"name": "resource"}]}}
                ],
                "terminationGracePeriodSeconds": 0,
            },
        }


async def setup(api: Api, run: Run, init_claims: int, selector: bool) -> None:
    """Namespace, nodes, slices, class, the allocated init claims and the template."""
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": run.namespace}}
    await api.call("POST", "/api/v1/namespaces", namespace)
    await create_ready_nodes(api, [_node(name, run.run, {}) for name in run.nodes])
    slices = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-slice", "labels": {RUN_LABEL: run.run}},
            "spec": {
                "driver": DRIVER,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [basic_device(i) for i in range(DEVICES_PER_NODE)],
            },
        }
        for node in run.nodes
    ]
    await create_many(api, lambda _: f"{RESOURCE}/resourceslices", slices)
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": run.device_class, "labels": {RUN_LABEL: run.run}},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
    await api.call("POST", f"{RESOURCE}/deviceclasses", device_class)
    claims_path = f"{RESOURCE}/namespaces/{run.namespace}/resourceclaims"
    exactly: JSON = {"deviceClassName": run.device_class, "allocationMode": "ExactCount", "count": 1}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": SELECTOR}}]
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "test-claim-template"},
        "spec": {"spec": {"devices": {"requests": [{"name": "req-0", "exactly": exactly}]}}},
    }
    await api.call("POST", f"{RESOURCE}/namespaces/{run.namespace}/resourceclaimtemplates", template)
    never = {**exactly, "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "none"'}}]}
    template["metadata"] = {"name": "never-claim-template"}
    template["spec"] = {"spec": {"devices": {"requests": [{"name": "req-0", "exactly": never}]}}}
    await api.call("POST", f"{RESOURCE}/namespaces/{run.namespace}/resourceclaimtemplates", template)
    sem = asyncio.Semaphore(IN_FLIGHT)
    one = {"deviceClassName": run.device_class, "allocationMode": "ExactCount", "count": 1}
    request = {"name": "req-0", "exactly": one}

    async def allocated(i: int) -> None:
        node = run.nodes[i % len(run.nodes)]
        name = f"init-{i:06d}"
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": {"devices": {"requests": [request]}},
        }
        async with sem:
            claim = await api.call("POST", claims_path, body)
            device = f"basic-device-{i // len(run.nodes)}"
            result = {"request": "req-0", "driver": DRIVER, "pool": node, "device": device}
            term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            selector = {"nodeSelectorTerms": [term]}
            claim["status"] = {"allocation": {"devices": {"results": [result]}, "nodeSelector": selector}}
            await api.call("PUT", f"{claims_path}/{name}/status", claim)

    await asyncio.gather(*(allocated(i) for i in range(init_claims)))


async def check(api: Api, run: Run) -> JSON:
    """Devices allocated twice, and bound pods whose claim is not allocated on their node."""
    claims = await api.list_all(f"{RESOURCE}/namespaces/{run.namespace}/resourceclaims")
    holders: dict[tuple[str, str], int] = {}
    by_name: dict[str, JSON] = {}
    for claim in claims:
        by_name[claim["metadata"]["name"]] = claim
        for r in (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []:
            holders[(r["pool"], r["device"])] = holders.get((r["pool"], r["device"]), 0) + 1
    pods = await api.list_all(f"/api/v1/namespaces/{run.namespace}/pods")
    misplaced = 0
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if not node:
            continue
        names = [s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []]
        mine = by_name.get(names[0] or "") if names else None
        results = (((mine or {}).get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
        if not results or results[0]["pool"] != node:
            misplaced += 1
    twice = sum(1 for n in holders.values() if n > 1)
    return {"double_allocated": twice, "misplaced": misplaced, "claims": len(claims)}


async def cleanup(api: Api, run: Run) -> None:
    ns = run.namespace
    await api.call("DELETE", f"/api/v1/namespaces/{ns}/pods", params={"gracePeriodSeconds": "0"})
    claims = await api.list_all(f"{RESOURCE}/namespaces/{ns}/resourceclaims")
    sem = asyncio.Semaphore(IN_FLIGHT)

    async def drop(claim: JSON) -> None:
        async with sem:
            path = f"{RESOURCE}/namespaces/{ns}/resourceclaims/{claim['metadata']['name']}"
            if claim["metadata"].get("finalizers"):
                await api.call("PATCH", path, {"metadata": {"finalizers": None}}, content_type=MERGE, ok=(200, 404))
            await api.call("DELETE", path, ok=(200, 202, 404))

    await asyncio.gather(*(drop(c) for c in claims))
    selector = {"labelSelector": f"{RUN_LABEL}={run.run}"}
    await api.call("DELETE", f"{RESOURCE}/resourceslices", params=selector)
    await api.call("DELETE", f"{RESOURCE}/deviceclasses", params=selector)
    await api.call("DELETE", "/api/v1/nodes", params=selector)
    await api.call("DELETE", f"/api/v1/namespaces/{ns}")


@dataclass
class Result:
    scheduler: str
    repeat: int
    mode: str
    bound: int
    seconds: float  # the measured window
    pods_per_second: float
    samples: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0  # the scheduler's, over the measured window
    cpu_ms_per_pod: float | None = None
    peak_rss_mib: float = 0.0
    checks: JSON = field(default_factory=dict)
    error: str | None = None


Measured = tuple[int, float, list[float], float]  # pods bound, seconds, per-second samples, scheduler CPU seconds


async def measure_burst(api: Api, run: Run, sched: SchedulerUnderTest, watch: BindWatch, pods: int) -> Measured:
    """Create the pods while the scheduler runs; first created -> last bound."""
    collector = ThroughputCollector(watch, "measure")
    collector.start()
    cpu = _cpu_of(sched.pid)
    first = time.monotonic()
    manifests = [run.pod(i) for i in range(pods)]
    creating = asyncio.get_running_loop().create_task(create_many(api, lambda _: run.pods_path, manifests))
    ok = await watch.wait_bound("measure", pods, max(120.0, pods / 5), sched.alive)
    cpu = _cpu_of(sched.pid) - cpu
    await creating
    await collector.stop()
    last = max(watch.bound_at.values()) if watch.bound_at else time.monotonic()
    if not ok:
        raise RuntimeError(f"{watch.bound_by_phase.get('measure', 0)}/{pods} bound")
    return pods, last - first, collector.samples, cpu


async def measure_steady(
    api: Api, run: Run, sched: SchedulerUnderTest, watch: BindWatch, in_flight: int, warmup: float, duration: float
) -> Measured:
    """Keep `in_flight` pods: each bound pod is deleted and replaced; the pods bound within the window."""
    created = 0
    replaced: set[str] = set()
    pods_path = run.pods_path
    cpu: float | None = None
    tasks: set[asyncio.Task[Any]] = set()

    async def replace(name: str | None) -> None:
        nonlocal created
        if name is not None:
            await api.call("DELETE", f"{pods_path}/{name}", params={"gracePeriodSeconds": "0"}, ok=(200, 202, 404))
        created += 1
        await api.call("POST", pods_path, run.pod(created))

    await asyncio.gather(*(replace(None) for _ in range(in_flight)))
    start = time.monotonic()
    window_start = start + warmup
    end = window_start + duration
    while time.monotonic() < end:
        if cpu is None and time.monotonic() >= window_start:
            cpu = _cpu_of(sched.pid)
        if not sched.alive():
            raise RuntimeError("the scheduler exited")
        for name in [n for n in watch.bound_at if n not in replaced]:
            replaced.add(name)
            task = asyncio.get_running_loop().create_task(replace(name))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        watch.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watch.changed.wait(), 0.05)
    cpu = _cpu_of(sched.pid) - (cpu or 0.0)
    await asyncio.gather(*tasks)
    bound = sum(1 for t in watch.bound_at.values() if window_start <= t < end)
    return bound, duration, [], cpu


async def one_run(
    cp: ControlPlane, api: Api, args: argparse.Namespace, scheduler: str, repeat: int, log_dir: Path
) -> Result:
    tag = f"{'up' if scheduler == UPSTREAM else 'py'}{repeat}-{secrets.token_hex(2)}"
    run = Run(scheduler, tag, [f"dra-{tag}-n{i:04d}" for i in range(args.nodes)])
    result = Result(scheduler, repeat, args.mode, 0, 0.0, 0.0)
    await setup(api, run, args.init_claims, args.selector)
    sched = SchedulerUnderTest(scheduler, cp, log_dir)
    watch = BindWatch(api, run.namespace, selector=f"{PHASE_LABEL}=measure")
    try:
        await quiesce(cp)
        await sched.start(tag)
        await watch.start()
        if args.stuck:  # pods DynamicResources rejects, retried on claim events while the others are measured
            stuck = [run.pod(i, stuck=True) for i in range(args.stuck)]
            await create_many(api, lambda _: run.pods_path, stuck)
            await asyncio.sleep(args.warmup)
        if args.mode == "burst":
            measured = await measure_burst(api, run, sched, watch, args.pods)
        else:
            measured = await measure_steady(api, run, sched, watch, args.in_flight, args.warmup, args.duration)
        bound, seconds, samples, result.cpu_seconds = measured
        result.peak_rss_mib = read_proc(sched.pid).peak_rss_mib
        result.bound, result.seconds, result.samples = bound, seconds, samples
        result.pods_per_second = bound / seconds if seconds else 0.0
        if args.mode == "burst":  # scheduler_perf's figure: the average of the per-second samples
            result.pods_per_second = summarize(samples)["average"] or result.pods_per_second
        result.cpu_ms_per_pod = 1000 * result.cpu_seconds / bound if bound else None
    except Exception as exc:  # reported with the run, the other runs go on
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        await watch.stop()
        await sched.stop()
    result.checks = await check(api, run)
    await cleanup(api, run)
    return result


def report(results: list[Result]) -> str:
    lines = [f"{'scheduler':<16}{'pods/s (median)':>17}{'CPU ms/pod':>12}{'peak RSS MiB':>14}  runs"]
    for scheduler in (UPSTREAM, PYSCHEDULER):
        mine = [r for r in results if r.scheduler == scheduler and r.error is None]
        if not mine:
            continue
        rate = statistics.median(r.pods_per_second for r in mine)
        cpu = statistics.median(r.cpu_ms_per_pod for r in mine if r.cpu_ms_per_pod is not None)
        rss = statistics.median(r.peak_rss_mib for r in mine)
        each = ", ".join(f"{r.pods_per_second:.0f}" for r in mine)
        lines.append(f"{scheduler:<16}{rate:>17.1f}{cpu:>12.1f}{rss:>14.0f}  {each}")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> int:
    config = ControlPlaneConfig(
        max_requests_inflight=10000,
        max_mutating_requests_inflight=5000,
        apiserver_args=("--event-ttl=5m", "--delete-collection-workers=8"),
    )
    results: list[Result] = []
    with ControlPlane(config) as cp:
        # scheduler_perf runs the controller in process with the test's client; KCM's default 20 QPS would be
        # the bottleneck (a claim create, a pod status update, a deallocation and a finalizer update per pod).
        qps = (f"--kube-api-qps={CLIENT_QPS}", f"--kube-api-burst={CLIENT_BURST}")
        cp.start_controller_manager(controllers=["resourceclaim-controller"], extra_args=qps)
        log_dir = cp.work_dir / "bench"
        log_dir.mkdir(parents=True, exist_ok=True)
        api = Api(cp.server, cp.token)
        try:
            for repeat in range(args.repeats):
                order = (UPSTREAM, PYSCHEDULER) if repeat % 2 == 0 else (PYSCHEDULER, UPSTREAM)
                for scheduler in order:
                    if scheduler not in args.schedulers:
                        continue
                    r = await one_run(cp, api, args, scheduler, repeat, log_dir)
                    results.append(r)
                    status = r.error or "ok"
                    print(
                        f"[{scheduler} #{repeat}] {r.bound} bound in {r.seconds:.1f} s: "
                        f"{r.pods_per_second:.1f} pods/s, "
                        f"CPU {r.cpu_seconds:.1f} s ({r.cpu_ms_per_pod or 0:.1f} ms/pod), checks {r.checks}; {status}",
                        flush=True,
                    )
        finally:
            await api.close()
    print(report(results))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "args": {k: str(v) for k, v in vars(args).items()},
            "loadavg": os.getloadavg(),
            "results": [asdict(r) for r in results],
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    bad = [r for r in results if r.error or r.checks.get("double_allocated") or r.checks.get("misplaced")]
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.dra_e2e", description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("burst", "steady"), default="steady")
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--init-claims", type=int, default=0, help="claims allocated beforehand (half: 5 x nodes)")
    p.add_argument("--pods", type=int, default=2500, help="burst: measured pods")
    p.add_argument("--in-flight", type=int, default=10, help="steady: pods that exist at any time")
    p.add_argument("--warmup", type=float, default=5.0, help="steady: seconds before the window")
    p.add_argument("--duration", type=float, default=30.0, help="steady: the measured window, seconds")
    p.add_argument("--selector", action="store_true", help="scheduler_perf's selector variant (a CEL selector)")
    p.add_argument(
        "--stuck", type=int, default=0, help="pods whose claim nothing satisfies, pending throughout (queueing hints)"
    )
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--schedulers", default=f"{UPSTREAM},{PYSCHEDULER}")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    args.schedulers = [s.strip() for s in args.schedulers.split(",")]
    if args.init_claims + (args.pods if args.mode == "burst" else args.in_flight) > args.nodes * DEVICES_PER_NODE:
        raise SystemExit("more claims than devices: lower --init-claims or --pods")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
