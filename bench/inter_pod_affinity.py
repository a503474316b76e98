"""In-process throughput with pod (anti-)affinity in the cluster, modelled on upstream scheduler_perf's
SchedulingPodAntiAffinity / SchedulingPodAffinity / SchedulingPreferredPodAffinity workloads.

No API server. Nodes `cpu 64, memory 256Gi, pods 110` in 3 zones with hostname labels; `--pods-per-node`
pods already bound on every node, in 50 app groups; one in ten of them has required hostname
anti-affinity to its own group and one in ten a preferred zone affinity to it (so every node has pods
with affinity, as in a cluster of many Deployments). Then `--pods` pods of one workload are scheduled
through the real Scheduler with the in-memory adapter (after one warm-up pod); pods/s is the median of
--runs runs, and pods per CPU-second (this process's CPU time) is printed too: on a shared, loaded machine
it is the steadier figure.

    PYTHONPATH=. .venv/bin/python -m bench.inter_pod_affinity --nodes 1000 5000 --pods 500

Workloads: `plain` (no affinity of its own: pays for the existing pods' terms), `anti` (required hostname
anti-affinity to its own new group: spreads one per node), `affinity` (required zone affinity to an
existing group), `preferred` (preferred anti-affinity to an existing group: scores every pod).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import sys
import time
from typing import Any

from scheduler.adapters.memory import MemoryCluster
from scheduler.core.clock import FakeClock
from scheduler.core.profile import build_scheduler
from scheduler.testing import PodBuilder, make_node, make_pod

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
GROUPS = 50
WORKLOADS = ("plain", "anti", "affinity", "preferred")


def _nodes(n: int) -> list[dict[str, Any]]:
    return [
        make_node(f"node-{i}").capacity(cpu="64", memory="256Gi", pods="110").zone(f"zone-{i % 3}", "region").obj()
        for i in range(n)
    ]


def _init_pod(i: int, node: str) -> dict[str, Any]:
    group = f"svc-{i % GROUPS}"
    b = make_pod(f"init-{i}", "bench").labels(app=group).req(cpu="100m", memory="100Mi").node(node)
    if i % 10 == 3:
        b.pod_affinity_term("podAntiAffinity", HOST, {"app": group})
    elif i % 10 == 7:
        b.pod_affinity_term("podAffinity", ZONE, {"app": group}, weight=10)
    return b.obj()


def _measured(workload: str, i: int) -> dict[str, Any]:
    b: PodBuilder = make_pod(f"{workload}-{i}", "bench").req(cpu="100m", memory="100Mi")
    if workload == "plain":
        b.labels(app="plain")
    elif workload == "anti":
        b.labels(app="spread").pod_affinity_term("podAntiAffinity", HOST, {"app": "spread"})
    elif workload == "affinity":
        b.labels(app="follower").pod_affinity_term("podAffinity", ZONE, {"app": "svc-1"})
    else:
        b.labels(app="shy").pod_affinity_term("podAntiAffinity", HOST, {"app": "svc-2"}, weight=50)
    return b.obj()


async def _warm_up(cluster: MemoryCluster, scheduler: Any, clock: FakeClock) -> None:
    """Schedule one plain pod first: its cycle parses every bound pod's terms once (PodInfo.derived), as a
    running scheduler has long done for pods bound before the measured ones arrive."""
    cluster.apply_pod(make_pod("warm-up", "bench").req(cpu="100m", memory="100Mi").obj())
    await scheduler.run_until_idle(advance=clock.advance_to)


async def _run_once(workload: str, nodes: int, per_node: int, pods: int, seed: int) -> tuple[float, float, float]:
    """(pods per wall second, pods per CPU second of this process, seconds to load the bound pods)."""
    cluster = MemoryCluster()
    clock = FakeClock()
    scheduler = build_scheduler(cluster, clock=clock, seed=seed)
    cluster.attach(scheduler)
    t0 = time.perf_counter()
    for obj in _nodes(nodes):
        cluster.apply_node(obj)
    for i in range(nodes * per_node):
        cluster.apply_pod(_init_pod(i, f"node-{i // per_node}"))  # 3 anti, 3 preferred per node
    await _warm_up(cluster, scheduler, clock)
    load = time.perf_counter() - t0
    measured = [_measured(workload, i) for i in range(pods)]
    gc.collect()
    start, cpu_start = time.perf_counter(), time.process_time()
    for obj in measured:
        cluster.apply_pod(obj)
    await scheduler.run_until_idle(advance=clock.advance_to)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    bound = len(cluster.bindings) - 1  # the warm-up pod
    if bound != pods:
        raise SystemExit(f"{workload}: only {bound}/{pods} pods were bound")
    if workload == "anti":
        hosts = [node for _, node in cluster.bindings[1:]]
        if len(set(hosts)) != len(hosts):
            raise SystemExit("anti: two replicas share a node")
    return pods / elapsed, pods / cpu, load


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--pods-per-node", type=int, default=30)
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    args = parser.parse_args(argv)
    print(
        f"{'workload':>10} {'nodes':>6} {'bound pods':>10} {'pods':>5} {'median pods/s':>14} {'pods/CPU-s':>11} "
        f"{'runs (pods/s)':>20} {'load s':>7} {'peak RSS MiB':>13}"
    )
    for n in args.nodes:
        for workload in args.workloads:
            results = [asyncio.run(_run_once(workload, n, args.pods_per_node, args.pods, s)) for s in range(args.runs)]
            rates = [r for r, _, _ in results]
            cpu_rate = statistics.median(c for _, c, _ in results)
            rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            runs = ", ".join(f"{r:.0f}" for r in rates)
            print(
                f"{workload:>10} {n:>6} {n * args.pods_per_node:>10} {args.pods:>5} {statistics.median(rates):>14.0f} "
                f"{cpu_rate:>11.0f} {runs:>20} {results[0][2]:>7.1f} {rss_mib:>13.0f}"
            )
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
