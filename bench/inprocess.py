"""In-process throughput of the scheduling algorithm, modelled on upstream scheduler_perf SchedulingBasic.

No API server: nodes `cpu 4, memory 32Gi, pods 110` in 3 zones, `--init-pods` pods already bound, then
`--pods` pods requesting `100m/500Mi` scheduled through the real Scheduler with the in-memory adapter.
Prints pods/s (median of --runs runs) and peak RSS.

    .venv/bin/python -m bench.inprocess --nodes 5000 --pods 2000 --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import statistics
import sys
import time
from typing import Any

from scheduler.adapters.memory import MemoryCluster
from scheduler.core.clock import FakeClock
from scheduler.core.profile import build_scheduler
from scheduler.testing import make_node, make_pod


def _nodes(n: int) -> list[dict[str, Any]]:
    return [
        make_node(f"node-{i}").capacity(cpu="4", memory="32Gi", pods="110").zone(f"zone-{i % 3}", "region").obj()
        for i in range(n)
    ]


async def _run_once(nodes: int, init_pods: int, pods: int, seed: int) -> float:
    cluster = MemoryCluster()
    clock = FakeClock()
    scheduler = build_scheduler(cluster, clock=clock, seed=seed)
    cluster.attach(scheduler)
    for obj in _nodes(nodes):
        cluster.apply_node(obj)
    for i in range(init_pods):
        pod = make_pod(f"init-{i}", "bench").req(cpu="100m", memory="500Mi").node(f"node-{i % nodes}").obj()
        cluster.apply_pod(pod)
    measured = [make_pod(f"pod-{i}", "bench").req(cpu="100m", memory="500Mi").obj() for i in range(pods)]
    gc.collect()
    start = time.perf_counter()
    for obj in measured:
        cluster.apply_pod(obj)
    await scheduler.run_until_idle(advance=clock.advance_to)
    elapsed = time.perf_counter() - start
    bound = len(cluster.bindings)
    if bound != pods:
        raise SystemExit(f"only {bound}/{pods} pods were bound")
    return pods / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 1000, 5000])
    parser.add_argument("--init-pods", type=int, default=None, help="default: one per node")
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", default=None, help="write raw results to this file")
    args = parser.parse_args(argv)
    results = []
    print(f"{'nodes':>6} {'pods':>6} {'median pods/s':>14} {'runs':>30} {'peak RSS MiB':>13}")
    for n in args.nodes:
        init = n if args.init_pods is None else args.init_pods
        rates = [asyncio.run(_run_once(n, init, args.pods, seed)) for seed in range(args.runs)]
        rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        med = statistics.median(rates)
        runs = ", ".join(f"{r:.0f}" for r in rates)
        print(f"{n:>6} {args.pods:>6} {med:>14.0f} {runs:>30} {rss_mib:>13.0f}")
        results.append({"nodes": n, "init_pods": init, "pods": args.pods, "rates": rates, "median": med,
                        "peak_rss_mib": rss_mib})
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"python": sys.version, "results": results}, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
