"""Startup at realistic density: process start to /readyz, pyscheduler vs upstream kube-scheduler.

One etcd + kube-apiserver per node count; `--nodes` Ready nodes (3 zones) and `--pods-per-node` bound pods per
node (requests, labels, a ReplicaSet-like owner reference, bound through spec.nodeName at creation) are created
once; then each scheduler is started and stopped `--runs` times, alternating, both with leader election off and
qps/burst 5000. The figure is the time from starting the process to its /readyz answering 200 (both gate
readiness on their informers being synced); the harness polls upstream every 0.25 s, pyscheduler every
0.1 s, which bounds the resolution. Also the peak RSS (VmHWM) once ready: what the synced cache costs. Prints
medians and the ratios.

    .venv/bin/python -m bench.startup --nodes 1000 --pods-per-node 30 --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from bench.e2e import (
    CLIENT_BURST,
    CLIENT_QPS,
    JSON,
    PYSCHEDULER,
    UPSTREAM,
    Api,
    SchedulerUnderTest,
    create_many,
    create_ready_nodes,
    read_proc,
)
from tests.cluster.harness import ControlPlane, ControlPlaneConfig

NAMESPACE = "startup"


def node(i: int) -> JSON:
    name = f"s-{i:05d}"
    labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"zone-{i % 3}"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def pod(n: int, node_name: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p-{n:06d}", "namespace": NAMESPACE, "labels": {"app": f"a{n % 50}"}},
        "spec": {
            "nodeName": node_name,
            "schedulerName": "nobody",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
                }
            ],
        },
    }


async def populate(api: Api, nodes: int, per_node: int) -> float:
    start = time.monotonic()
    await api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": NAMESPACE}})
    await create_ready_nodes(api, [node(i) for i in range(nodes)])
    pods = [pod(i * per_node + j, f"s-{i:05d}") for i in range(nodes) for j in range(per_node)]
    await create_many(api, lambda _: f"/api/v1/namespaces/{NAMESPACE}/pods", pods)
    return time.monotonic() - start


async def explain_peak(api: Api, cp: ControlPlane, sched: SchedulerUnderTest, tag: str) -> float:
    """Peak RSS (MiB) after the scheduler explained, through /debug/explain, a pod that fits nowhere (every
    node evaluated, the fix search, the preemption dry run, on a private copy of the cache)."""
    name = f"too-big-{tag}"
    big = pod(0, "")
    big["metadata"]["name"] = name
    del big["spec"]["nodeName"]
    big["spec"]["schedulerName"] = PYSCHEDULER
    big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "64"}}
    await api.call("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", big)
    url = f"https://127.0.0.1:{sched.port}/debug/explain/{NAMESPACE}/{name}"
    headers = {"Authorization": f"Bearer {cp.token}"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        for _ in range(60):  # the pod reaches the scheduler's cache through its watch
            async with session.get(url, params={"format": "text"}, headers=headers, ssl=False) as resp:
                if resp.status == 200:
                    break
            await asyncio.sleep(0.5)
        else:
            raise RuntimeError(f"{url}: HTTP {resp.status}")
    await api.call("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")
    return read_proc(sched.pid).peak_rss_mib


async def measure(
    cp: ControlPlane,
    kind: str,
    log_dir: Path,
    tag: str,
    profile: Path | None = None,
    env: dict[str, str] | None = None,
    api: Api | None = None,
) -> tuple[float, float, float | None]:
    """(seconds from process start to /readyz 200, peak RSS MiB once ready: the synced cache's cost, and with
    `api` the peak RSS after an explanation through the debug handlers)."""
    explain = api is not None and kind == PYSCHEDULER
    extra = ["--enable-debug-handlers"] if explain else []
    sched = SchedulerUnderTest(
        kind, cp, log_dir, profile if kind == PYSCHEDULER else None, env or {}, extra_args=extra
    )
    start = time.monotonic()
    await sched.start(tag)
    took = time.monotonic() - start
    rss = read_proc(sched.pid).peak_rss_mib
    after = await explain_peak(api, cp, sched, tag) if explain and api is not None else None
    await sched.stop()
    return took, rss, after


async def run(args: argparse.Namespace) -> int:
    for nodes in args.nodes:
        config = ControlPlaneConfig(
            max_requests_inflight=10000, max_mutating_requests_inflight=5000, apiserver_args=("--event-ttl=5m",)
        )
        with ControlPlane(config) as cp:
            api = Api(cp.server, cp.token)
            try:
                took = await populate(api, nodes, args.pods_per_node)
                print(f"{nodes} nodes, {nodes * args.pods_per_node} bound pods created in {took:.0f} s", flush=True)
                log_dir = Path(tempfile.mkdtemp(prefix="startup-"))
                variants: dict[str, tuple[str, dict[str, str]]] = {
                    UPSTREAM: (UPSTREAM, {}),
                    PYSCHEDULER: (PYSCHEDULER, {}),
                }
                for assignment in args.pyscheduler_env:  # an A/B variant: pyscheduler with NAME=VALUE set
                    name, _, value = assignment.partition("=")
                    variants[f"{PYSCHEDULER}[{assignment}]"] = (PYSCHEDULER, {name: value})
                if args.pyscheduler_only:
                    del variants[UPSTREAM]
                times: dict[str, list[float]] = {label: [] for label in variants}
                rss: dict[str, list[float]] = {label: [] for label in variants}
                explained: list[float] = []
                for r in range(args.runs):
                    order = list(variants) if r % 2 == 0 else list(reversed(variants))  # alternate who goes first
                    for label in order:
                        kind, env = variants[label]
                        took, peak, after = await measure(
                            cp, kind, log_dir, f"{nodes}-{r}", args.profile, env, api if args.explain else None
                        )
                        times[label].append(took)
                        rss[label].append(peak)
                        more = f", {after:.0f} MiB after an explanation" if after is not None else ""
                        if after is not None:
                            explained.append(after)
                        print(
                            f"  {label:14s} run {r}: ready after {took:.2f} s, peak RSS {peak:.0f} MiB{more}",
                            flush=True,
                        )
                if args.pyscheduler_only:
                    py, py_rss = statistics.median(times[PYSCHEDULER]), statistics.median(rss[PYSCHEDULER])
                    more = f", {statistics.median(explained):.0f} MiB after an explanation" if explained else ""
                    print(
                        f"{nodes} nodes x {args.pods_per_node} pods: pyscheduler ready after {py:.2f} s, peak RSS "
                        f"{py_rss:.0f} MiB{more} (medians of {args.runs}; load {os.getloadavg()[0]:.1f})",
                        flush=True,
                    )
                    continue
                up, py = statistics.median(times[UPSTREAM]), statistics.median(times[PYSCHEDULER])
                up_rss, py_rss = statistics.median(rss[UPSTREAM]), statistics.median(rss[PYSCHEDULER])
                for label in list(variants)[2:]:
                    v = statistics.median(times[label])
                    print(f"  {label}: median {v:.2f} s ({v / up:.2f}x upstream)", flush=True)
                print(
                    f"{nodes} nodes x {args.pods_per_node} pods: kube-scheduler {up:.2f} s, pyscheduler {py:.2f} s "
                    f"(ratio {py / up:.2f}x; medians of {args.runs}; qps/burst {CLIENT_QPS}/{CLIENT_BURST}; "
                    f"load {os.getloadavg()[0]:.1f}); peak RSS once ready: kube-scheduler {up_rss:.0f} MiB, "
                    f"pyscheduler {py_rss:.0f} MiB ({py_rss / up_rss:.2f}x)",
                    flush=True,
                )
            finally:
                await api.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, nargs="+", default=[1000])
    p.add_argument("--pods-per-node", type=int, default=30)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument(
        "--pyscheduler-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="also measure pyscheduler with this environment variable set (an A/B variant; repeatable)",
    )
    p.add_argument("--profile", type=Path, help="run pyscheduler under cProfile, writing PATH.<nodes>-<run>.prof")
    p.add_argument("--pyscheduler-only", action="store_true", help="measure pyscheduler alone (sizing points)")
    p.add_argument(
        "--explain",
        action="store_true",
        help="once ready, also explain a pod that fits nowhere through /debug/explain and report the peak RSS after",
    )
    return asyncio.run(run(p.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
