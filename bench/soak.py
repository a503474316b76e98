"""Soak: create/delete churn on a real control plane for a bounded time; RSS and every structure's size over time.

One etcd + kube-apiserver (tests/cluster/harness.py), `--nodes` Ready nodes, and pyscheduler run as in
production (`bench/soak_scheduler.py`: `pyscheduler run` plus a JSON line of `Scheduler.state_sizes()`,
`ClusterWriter.state_sizes()` and VmRSS every `--sample` seconds). For `--minutes` the driver creates
`--rate` pods per second and deletes each one `--lifetime` seconds later:

  normal         fit (100m cpu): bound, then deleted;
  unschedulable  ask for more cpu than any node has: FailedScheduling, PodScheduled=False, kept in the
                 unschedulable queue until deleted;
  refused        a shape pyscheduler refuses fail-closed (the first entry of scheduler.core.unsupported whose
                 plugin this build lacks, e.g. spec.resourceClaims) or, when every plugin exists, one it cannot
                 parse that the API accepts: reported once, kept as refused until deleted.

Then it drains (deletes everything, waits for the structures to settle) and reports RSS over time (after a
warm-up of `--warmup` minutes: growth and least-squares slope) and every structure's size at the baseline,
at its peak and after the drain (each must be back at its baseline: nothing kept for pods that are gone).

    .venv/bin/python -m bench.soak --minutes 20           # scripts/soak.sh
    .venv/bin/python -m bench.soak --minutes 2 --rate 5   # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.e2e import Api, ApiFailure
from scheduler.core.unsupported import UNSUPPORTED
from scheduler.plugins.registry import REGISTRY
from tests.cluster.harness import REPO_ROOT, ControlPlane, ControlPlaneConfig, ManagedProcess, free_port
from tests.e2e.kube import node_manifest, node_status, pod_manifest

JSON = dict[str, Any]
NAMESPACE = "soak"
MiB = 1024 * 1024

# Pod spec fragments the API server accepts and pyscheduler refuses fail-closed, by unsupported feature.
REFUSED_SHAPES: dict[str, JSON] = {
    "resourceClaims": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "soak-claim"}]},
    "persistentVolumeClaim": {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "soak-pvc"}}]},
    "podAntiAffinity": {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"soak": "x"}}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }
    },
    "topologySpreadConstraints": {
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}
        ]
    },
}


def refused_shape() -> tuple[str, JSON]:
    """(what, spec fragment) of a pod this build of pyscheduler refuses but the API accepts."""
    plugins = {entry.feature: entry.plugin for entry in UNSUPPORTED}
    for feature, shape in REFUSED_SHAPES.items():  # the least likely to gain its plugin soon first
        plugin = plugins.get(feature)
        if plugin is not None and plugin not in REGISTRY:
            return f"fail-closed {feature} ({plugin} missing)", shape
    # Every plugin exists: an extended resource request whose name our parser refuses is no longer possible
    # either, so fall back to another unschedulable kind and say so in the report.
    return "none left (every fail-closed plugin exists): nodeSelector nobody matches", {
        "nodeSelector": {"soak.pyscheduler.io/nowhere": "true"}
    }


@dataclass
class Report:
    minutes: float
    rate: float
    lifetime: float
    nodes: int
    refused: str
    created: dict[str, int] = field(default_factory=lambda: {"normal": 0, "unschedulable": 0, "refused": 0})
    deleted: int = 0
    samples: list[JSON] = field(default_factory=list)
    baseline: JSON = field(default_factory=dict)
    drained: JSON = field(default_factory=dict)
    peak: dict[str, int] = field(default_factory=dict)


def read_samples(path: Path) -> list[JSON]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


def sizes(sample: JSON) -> dict[str, int]:
    return {**{f"scheduler.{k}": v for k, v in sample["scheduler"].items()},
            **{f"writer.{k}": v for k, v in sample.get("writer", {}).items()}}


def slope_mib_per_hour(points: list[tuple[float, int]]) -> float:
    """Least-squares slope of RSS over time, in MiB per hour."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mr = sum(r for _, r in points) / n
    num = sum((t - mt) * (r - mr) for t, r in points)
    den = sum((t - mt) ** 2 for t, _ in points) or 1.0
    return num / den * 3600 / MiB


async def churn(api: Api, report: Report, deadline: float, rng: random.Random, shape: JSON) -> None:
    """Create `rate` pods/s (60% normal, 20% unschedulable, 20% refused); delete each after `lifetime`."""
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"
    live: list[tuple[float, str]] = []
    seq = 0
    interval = 1.0 / report.rate
    pending: set[asyncio.Task[Any]] = set()

    async def create(name: str, kind: str) -> None:
        if kind == "normal":
            pod = pod_manifest(name, requests={"cpu": "100m", "memory": "64Mi"})
        elif kind == "unschedulable":
            pod = pod_manifest(name, requests={"cpu": "64"})
        else:
            pod = pod_manifest(name, spec=shape)
        pod["metadata"]["labels"] = {"soak": kind}
        with contextlib.suppress(ApiFailure):
            await api.call("POST", path, pod, ok=(201, 409))
            report.created[kind] += 1

    async def delete(name: str) -> None:
        with contextlib.suppress(ApiFailure):
            await api.call("DELETE", f"{path}/{name}", params={"gracePeriodSeconds": "0"}, ok=(200, 202, 404))
            report.deleted += 1

    def spawn(coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        pending.add(task)
        task.add_done_callback(pending.discard)

    next_at = time.monotonic()
    while time.monotonic() < deadline:
        roll = rng.random()
        kind = "normal" if roll < 0.6 else "unschedulable" if roll < 0.8 else "refused"
        name = f"{kind[:4]}-{seq:07d}"
        seq += 1
        spawn(create(name, kind))
        live.append((time.monotonic() + report.lifetime, name))
        while live and live[0][0] <= time.monotonic():
            spawn(delete(live.pop(0)[1]))
        next_at += interval
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
    for _, name in live:
        spawn(delete(name))
    while pending:
        await asyncio.gather(*list(pending), return_exceptions=True)


async def run(args: argparse.Namespace, work: Path) -> Report:
    rng = random.Random(args.seed)
    what, shape = refused_shape()
    report = Report(args.minutes, args.rate, args.lifetime, args.nodes, what)
    stats = work / "stats.jsonl"
    plane = ControlPlane(ControlPlaneConfig(keep_work_dir=args.keep)).start()
    api = Api(plane.server, plane.token)
    process: ManagedProcess | None = None
    try:
        await api.call("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}}, ok=(201, 409))
        for i in range(args.nodes):
            name = f"soak-node-{i:03d}"
            node = await api.call("POST", "/api/v1/nodes", node_manifest(name, zone=f"zone-{i % 3}"), ok=(201,))
            node["status"] = node_status(cpu="4", memory="32Gi", pods=110)
            await api.call("PUT", f"/api/v1/nodes/{name}/status", node)
        config = work / "config.yaml"
        config.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            "leaderElection:\n  leaderElect: false\n"
        )
        argv = [sys.executable, "-m", "bench.soak_scheduler", "--stats-file", str(stats)]
        argv += ["--stats-period", str(args.sample), "--", "run", "--kubeconfig", str(plane.kubeconfig)]
        argv += ["--config", str(config), "--port", str(free_port()), "--bind-address", "127.0.0.1", "-v", "1"]
        argv += ["--resync-period", str(args.resync)]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        process = ManagedProcess("pyscheduler-soak", argv, work / "pyscheduler.log", env=env).start()
        while not read_samples(stats):
            if not process.running():
                raise RuntimeError(f"pyscheduler exited:\n{process.tail()}")
            await asyncio.sleep(0.5)
        await asyncio.sleep(3 * args.sample)  # caches synced, nothing queued yet
        report.baseline = read_samples(stats)[-1]
        print(f"soak: {args.minutes:g} min, {args.rate:g} pods/s, lifetime {args.lifetime:g} s, {args.nodes} nodes; "
              f"refused shape: {what}; baseline RSS {report.baseline['rss'] / MiB:.1f} MiB", flush=True)
        started = time.monotonic()
        deadline = started + args.minutes * 60
        progress = asyncio.ensure_future(churn(api, report, deadline, rng, shape))
        last_print = started
        while not progress.done():
            await asyncio.sleep(1.0)
            if not process.running():
                raise RuntimeError(f"pyscheduler exited during the soak:\n{process.tail()}")
            if time.monotonic() - last_print >= 60:
                last_print = time.monotonic()
                latest = read_samples(stats)[-1]
                s = latest["scheduler"]
                print(f"  {(last_print - started) / 60:5.1f} min: RSS {latest['rss'] / MiB:6.1f} MiB, "
                      f"pending {s['pending']}, cache pods {s['cache_pods']}, unsupported {s['unsupported']}, "
                      f"event cache {latest.get('writer', {}).get('event_cache')}, bound {latest['bound']}",
                      flush=True)
        await progress
        # Drain: everything deleted; wait until the structures stop changing and the writer's queues are empty.
        await asyncio.sleep(max(3 * args.sample, 10))
        for _ in range(60):
            latest = read_samples(stats)[-1]
            s = latest["scheduler"]
            w = latest.get("writer", {})
            if not (s["pending"] or s["cache_pods"] or s["unsupported"] or w.get("queued_status")
                    or w.get("queued_events") or s["bind_tasks"]):
                break
            await asyncio.sleep(args.sample)
        await asyncio.sleep(2 * args.sample)
        report.samples = read_samples(stats)
        report.drained = report.samples[-1]
        for sample in report.samples:
            for key, value in sizes(sample).items():
                report.peak[key] = max(report.peak.get(key, 0), value)
    finally:
        if process is not None:
            process.stop()
        await api.close()
        plane.stop()
    return report


def summarize(report: Report, warmup_minutes: float) -> tuple[str, bool]:
    """The printed report and whether RSS was flat and every structure back at its baseline."""
    samples = report.samples
    t0 = report.baseline["ts"]
    lines = [f"refused shape: {report.refused}", f"created {report.created}, deleted {report.deleted}"]
    lines.append("RSS over time (MiB):")
    step = max(1, len(samples) // 24)
    for sample in samples[::step]:
        lines.append(f"  {(sample['ts'] - t0) / 60:6.1f} min  {sample['rss'] / MiB:7.1f}")
    warm = [s for s in samples if s["ts"] - t0 >= warmup_minutes * 60]
    ok = True
    if len(warm) >= 2:
        first, last = warm[0]["rss"], warm[-1]["rss"]
        peak = max(s["rss"] for s in warm)
        slope = slope_mib_per_hour([(s["ts"], s["rss"]) for s in warm])
        growth = (last - first) / MiB
        lines.append(
            f"after {warmup_minutes:g} min warm-up: RSS {first / MiB:.1f} -> {last / MiB:.1f} MiB "
            f"(growth {growth:+.1f} MiB, peak {peak / MiB:.1f}, slope {slope:+.2f} MiB/hour)"
        )
    else:
        lines.append("too short for a warm-up figure")
    lines.append("structure sizes: baseline / peak / after drain")
    base, drained = sizes(report.baseline), sizes(report.drained)
    for key in sorted(base):
        back = drained.get(key) == base[key]
        if key.endswith("snapshot_nodes"):  # empty until the first cycle; then the nodes of the last cycle
            back = drained.get(key, 0) <= drained.get("scheduler.cache_tree_nodes", 0)
        mark = "" if back else "   <-- not back at its baseline"
        ok = ok and back
        lines.append(f"  {key:34s} {base[key]:7d} {report.peak.get(key, 0):7d} {drained.get(key, 0):7d}{mark}")
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=20.0, help="churn duration (default 20)")
    parser.add_argument("--rate", type=float, default=10.0, help="pods created per second (default 10)")
    parser.add_argument("--lifetime", type=float, default=30.0, help="seconds each pod lives (default 30)")
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--sample", type=float, default=5.0, help="seconds between samples (default 5)")
    parser.add_argument("--warmup", type=float, default=5.0, help="minutes of warm-up before RSS must be flat")
    parser.add_argument("--resync", type=float, default=60.0, help="pyscheduler --resync-period (default 60)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None, help="write the samples and the report here")
    parser.add_argument("--work-dir", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the control plane's work directory")
    args = parser.parse_args(argv)
    work = Path(args.work_dir or f"/tmp/pyscheduler-soak-{os.getpid()}")
    work.mkdir(parents=True, exist_ok=True)
    (work / "stats.jsonl").unlink(missing_ok=True)
    report = asyncio.run(run(args, work))
    text, ok = summarize(report, min(args.warmup, args.minutes / 2))
    print(text)
    if args.json is not None:
        args.json.write_text(json.dumps(report.__dict__, indent=1, default=str) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
