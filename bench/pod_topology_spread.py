"""PodTopologySpread cost with the system default constraints, where every Deployment pod pays it.

Two measurements, both in-process (no API server):

1. The plugin alone: a snapshot of N nodes in 3 zones with 30 running pods per node, each owned by one of
   `--replicasets` ReplicaSets (pod-template-hash selectors, as Deployments make). For an incoming pod of one
   ReplicaSet: PreScore + Score over the feasible sample upstream would score (percentageOfNodesToScore's
   adaptive share), cold (first pod of the ReplicaSet: every node counted) and warm (the next pod: only the
   node its predecessor went to changed, every other count comes from the node memo).
2. End to end: `--pods` more pods of one ReplicaSet scheduled through the real Scheduler with the default
   profile, pods per CPU-second with PodTopologySpread enabled vs disabled.

Times are the process's CPU time, not wall time: on a shared machine wall time mostly measures the neighbours.

    .venv/bin/python -m bench.pod_topology_spread --nodes 1000 5000
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from typing import Any

from scheduler.adapters.memory import MemoryCluster
from scheduler.config.load import load_config
from scheduler.core.clock import FakeClock
from scheduler.core.profile import build_scheduler
from scheduler.core.schedule_one import num_feasible_nodes_to_find
from scheduler.framework.interface import CycleState
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo
from scheduler.plugins.pod_topology_spread import PodTopologySpread, parse_args
from scheduler.plugins.registry import REGISTRY, implements, parse_plugin_args
from scheduler.testing import StaticHandle, make_node, make_pod

JSON = dict[str, Any]
PODS_PER_NODE = 30


def replica_set(i: int) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": f"app-{i}-h{i}", "namespace": "bench"},
        "spec": {"selector": {"matchLabels": {"app": f"app-{i}", "pod-template-hash": f"h{i}"}}},
    }


def rs_pod(name: str, rs: int) -> Any:
    return (
        make_pod(name, "bench")
        .labels(app=f"app-{rs}", **{"pod-template-hash": f"h{rs}"})
        .owner("ReplicaSet", f"app-{rs}-h{rs}")
        .req(cpu="10m", memory="50Mi")
    )


def cluster_nodes(n: int, replicasets: int) -> list[NodeInfo]:
    infos = []
    for i in range(n):
        record = make_node(f"node-{i}").capacity(cpu="32", memory="256Gi", pods="110").zone(f"zone-{i % 3}").info()
        info = NodeInfo(record.name, record)
        for j in range(PODS_PER_NODE):
            info.add_pod(rs_pod(f"p-{i}-{j}", (i * PODS_PER_NODE + j) % replicasets).node(record.name).info())
        infos.append(info)
    return infos


def plugin_alone(n: int, replicasets: int, repeats: int) -> dict[str, float]:
    """CPU milliseconds of PreFilter + PreScore + Score + NormalizeScore over the scored sample, cold and warm
    (medians)."""
    nodes = cluster_nodes(n, replicasets)
    objects = [replica_set(i) for i in range(replicasets)]
    handle = StaticHandle(Snapshot.from_node_infos(nodes), objects)
    pl = PodTopologySpread(parse_args(None), handle)
    sample = nodes[: num_feasible_nodes_to_find(0, n)]
    cold: list[float] = []
    warm: list[float] = []
    for r in range(repeats):
        for info in nodes:  # a new ReplicaSet's first pod: nothing memoized for its selector
            info.memo.clear()
        for phase in (cold, warm):
            pod = rs_pod(f"in-{r}-{len(phase)}", 0).info()
            state = CycleState()
            gc.disable()
            t = time.process_time()  # CPU time: the machine is shared, wall time measures the neighbours too
            pl.pre_filter(state, pod, nodes)
            pl.pre_score(state, pod, sample)
            scores = pl.score_batch(state, pod, sample)
            pl.normalize_score(state, pod, scores)
            phase.append((time.process_time() - t) * 1000)
            gc.enable()
            # The pod lands on the best node: only that node's counts are recomputed next time.
            best = sample[max(range(len(scores)), key=scores.__getitem__)]
            best.add_pod(pod.with_node(best.name))
    return {"cold_ms": statistics.median(cold), "warm_ms": statistics.median(warm), "scored": float(len(sample))}


async def end_to_end(n: int, replicasets: int, pods: int, with_spread: bool) -> float:
    """Pods per CPU-second scheduling `pods` pods of ReplicaSet 0 onto the loaded cluster."""
    config = None
    if not with_spread:
        raw = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "pyscheduler",
                    "plugins": {"multiPoint": {"disabled": [{"name": "PodTopologySpread"}]}},
                }
            ],
        }
        config = load_config(raw, REGISTRY.keys(), parse_plugin_args, implements=implements)
    cluster = MemoryCluster()
    clock = FakeClock()
    scheduler = build_scheduler(cluster, config, clock=clock, seed=0)
    cluster.attach(scheduler)
    for i in range(replicasets):
        cluster.apply_object(replica_set(i))
    for i in range(n):
        cluster.apply_node(
            make_node(f"node-{i}").capacity(cpu="32", memory="256Gi", pods="110").zone(f"zone-{i % 3}").obj()
        )
    for i in range(n):
        for j in range(PODS_PER_NODE):
            cluster.apply_pod(rs_pod(f"p-{i}-{j}", (i * PODS_PER_NODE + j) % replicasets).node(f"node-{i}").obj())
    await scheduler.run_until_idle(advance=clock.advance_to)
    measured = [rs_pod(f"new-{i}", 0).obj() for i in range(pods)]
    gc.collect()
    start = time.process_time()
    for obj in measured:
        cluster.apply_pod(obj)
    await scheduler.run_until_idle(advance=clock.advance_to)
    elapsed = time.process_time() - start
    bound = sum(1 for obj in measured if cluster.node_of(str(obj["metadata"]["uid"])))
    if bound != pods:
        raise SystemExit(f"only {bound}/{pods} pods were bound")
    return pods / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--replicasets", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pods", type=int, default=300)
    args = parser.parse_args(argv)
    print("CPU time (the machine is shared): plugin ms per pod, and pods per CPU-second with / without the plugin")
    print(f"{'nodes':>6} {'pods':>7} {'scored':>6} {'cold ms':>8} {'warm ms':>8} {'pods/s with':>12} {'without':>8}")
    for n in args.nodes:
        alone = plugin_alone(n, args.replicasets, args.repeats)
        with_rate = asyncio.run(end_to_end(n, args.replicasets, args.pods, True))
        without_rate = asyncio.run(end_to_end(n, args.replicasets, args.pods, False))
        print(
            f"{n:>6} {n * PODS_PER_NODE:>7} {alone['scored']:>6.0f} {alone['cold_ms']:>8.1f} {alone['warm_ms']:>8.1f}"
            f" {with_rate:>12.0f} {without_rate:>8.0f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
