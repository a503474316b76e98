"""Latency of `pyscheduler explain` from the scheduler's cache, at realistic density.

A cluster of `--nodes` nodes (3 zones, a third of them tainted, some cordoned), each carrying `--pods-per-node`
bound pods (requests, labels, a ReplicaSet owner), is loaded into a real Scheduler (in-memory adapter);
then three pods are explained against the cache's snapshot, as the live `/debug/explain` endpoint and
`pyscheduler explain --server` do:

- `fits`: an ordinary pod (every node evaluated, every feasible node scored, "why this node");
- `pending`: a pod that fits nowhere (a request no node has free and no toleration): every node evaluated,
  then the fix search (each candidate re-runs all filters on all nodes);
- `combination`: a pod needing two changes at once (the bounded pair search).

Prints the median of `--runs` runs per case (seconds), the number of fixes found, and the machine's load.

    .venv/bin/python -m bench.explain --nodes 5000 --pods-per-node 30 --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

from scheduler.adapters.memory import MemoryCluster
from scheduler.core.clock import FakeClock
from scheduler.core.explain import explain_pod
from scheduler.core.profile import build_scheduler
from scheduler.core.scheduler import Scheduler
from scheduler.testing import PodBuilder, make_node, make_pod


async def load(nodes: int, per_node: int) -> Scheduler:
    cluster = MemoryCluster()
    sched = build_scheduler(cluster, clock=FakeClock(), seed=0)
    cluster.attach(sched)
    for i in range(nodes):
        node = make_node(f"node-{i}").capacity(cpu="32", memory="128Gi", pods="110").zone(f"zone-{i % 3}", "r")
        if i % 3 == 0:
            node.taint("dedicated", f"team-{i % 7}")
        if i % 50 == 0:
            node.unschedulable()
        cluster.apply_node(node.obj())
    for i in range(nodes * per_node):
        pod = (
            make_pod(f"app-{i}", f"ns-{i % 20}")
            .labels(app=f"app-{i % 40}")
            .req(cpu="500m", memory="2Gi")
            .owner("ReplicaSet", f"app-{i % 40}-abc")
            .node(f"node-{i % nodes}")
        )
        cluster.apply_pod(pod.obj())
    return sched


def cases() -> dict[str, PodBuilder]:
    return {
        "fits": make_pod("web", "default").req(cpu="1", memory="1Gi"),
        "pending": make_pod("huge", "default").req(cpu="20", memory="8Gi"),
        "combination": make_pod("gpu", "default").req(cpu="20").node_selector(disk="nvme"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    sched = asyncio.run(load(args.nodes, args.pods_per_node))
    print(f"loaded {args.nodes} nodes, {args.nodes * args.pods_per_node} pods in {time.perf_counter() - started:.1f} s")
    fwk = sched.profiles["pyscheduler"]
    print(f"{'case':<12} {'median s':>9} {'runs':>24} {'feasible':>9} {'fixes':>6}")
    for name, builder in cases().items():
        pod = builder.info()
        times = []
        for _ in range(args.runs):
            snapshot = sched.cache.fresh_snapshot()  # what /debug/explain evaluates: a private clone
            t = time.perf_counter()
            expl = explain_pod(fwk, pod, snapshot)
            times.append(time.perf_counter() - t)
        feasible = sum(1 for v in expl.nodes if v.feasible)
        runs = ", ".join(f"{x:.3f}" for x in times)
        print(f"{name:<12} {statistics.median(times):>9.3f} {runs:>24} {feasible:>9} {len(expl.fixes):>6}")
        sys.stdout.flush()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
