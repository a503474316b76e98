"""`pyscheduler simulate` end to end on a large cluster dump: wall time and peak RSS of the CLI process.

Writes a dump of `--nodes` nodes (3 zones, labels, some taints, images) and `--pods-per-node` bound pods per node
(requests, labels, a ReplicaSet owner, like `kubectl get nodes,pods -A -o yaml` prints them) plus `--pending`
pods to schedule, as YAML and as JSON (a v1 List), then runs `python -m scheduler simulate FILE` (and with
`--explain` for one pending pod) `--runs` times each in a fresh process. Prints the median wall seconds and
the peak RSS (MiB) per case; the time includes interpreter start and parsing.

    .venv/bin/python -m bench.simulate_scale --nodes 5000 --pods-per-node 10 --runs 3
    .venv/bin/python -m bench.simulate_scale --nodes 5000 --pods-per-node 10 --runs 3 --lean   # ~10 MB of YAML
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

JSON = dict[str, Any]


def node(i: int) -> JSON:
    name = f"node-{i:05d}"
    taints = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}] if i % 10 == 0 else []
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"00000000-0000-0000-0000-{i:012d}",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": f"zone-{i % 3}",
                "topology.kubernetes.io/region": "r1",
                "node.kubernetes.io/instance-type": ("m5.2xlarge", "m5.4xlarge")[i % 2],
            },
        },
        "spec": {"taints": taints} if taints else {},
        "status": {
            "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi"},
            "allocatable": {"cpu": "15890m", "memory": "62Gi", "pods": "110", "ephemeral-storage": "95Gi"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}],
            "images": [
                {"names": ["registry.example/web:1.0"], "sizeBytes": 180_000_000},
                {"names": [f"registry.example/tool:{i % 7}"], "sizeBytes": 90_000_000},
            ],
        },
    }


def lean_pod(n: int, node_name: str) -> JSON:
    """A bound pod with only what a scheduler reads (about 200 bytes of YAML: the issue's 10 MB dump)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p-{n:06d}", "namespace": f"team-{n % 20}", "labels": {"app": f"a{n % 50}"}},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "image": "registry.example/web:1.0",
                            "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}}}],
        },
    }


def bound_pod(n: int, node_name: str) -> JSON:
    app = ("web", "api", "cache", "worker")[n % 4]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{app}-{n:06d}",
            "namespace": f"team-{n % 20}",
            "uid": f"10000000-0000-0000-0000-{n:012d}",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": app, "pod-template-hash": "5d8f7c"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{app}-5d8f7c", "uid": f"rs-{app}",
                 "controller": True}
            ],
        },
        "spec": {
            "nodeName": node_name,
            "schedulerName": "default-scheduler",
            "priority": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/web:1.0",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
                }
            ],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                 "tolerationSeconds": 300}
            ],
        },
        "status": {"phase": "Running", "startTime": "2026-01-01T00:00:10Z"},
    }


def pending_pod(n: int) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"new-{n}", "namespace": "default", "labels": {"app": "new"}},
        "spec": {
            "schedulerName": "pyscheduler",
            "containers": [
                {"name": "c", "image": "registry.example/web:1.0",
                 "resources": {"requests": {"cpu": "2" if n else "64", "memory": "1Gi"}}}
            ],
        },
    }


def dump(nodes: int, per_node: int, pending: int, *, lean: bool = False) -> list[JSON]:
    objs = [node(i) for i in range(nodes)]
    make = lean_pod if lean else bound_pod
    n = 0
    for i in range(nodes):
        for _ in range(per_node):
            objs.append(make(n, f"node-{i:05d}"))
            n += 1
    objs += [pending_pod(k) for k in range(pending)]
    return objs


CHILD = (
    "import atexit, resource, sys\n"
    "atexit.register(lambda: print('MAXRSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr))\n"
    "from scheduler.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def run_once(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one CLI process running `pyscheduler ARGS`."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # 1: some pod stayed Pending, which the dump contains on purpose
        raise SystemExit(f"{args} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    peak = [line.split()[1] for line in proc.stderr.splitlines() if line.startswith("MAXRSS ")]
    return took, int(peak[-1]) / 1024.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.simulate_scale", description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods-per-node", type=int, default=10)
    p.add_argument("--pending", type=int, default=5)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--formats", default="json,yaml")
    p.add_argument("--lean", action="store_true", help="bound pods with only what a scheduler reads (~200 B each)")
    args = p.parse_args(argv)

    objs = dump(args.nodes, args.pods_per_node, args.pending, lean=args.lean)
    tmp = Path(tempfile.mkdtemp(prefix="simscale-"))
    files = {}
    if "json" in args.formats:
        files["json"] = tmp / "cluster.json"
        files["json"].write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    if "yaml" in args.formats:
        files["yaml"] = tmp / "cluster.yaml"
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        files["yaml"].write_text(yaml.dump_all(objs, Dumper=dumper, sort_keys=False))
    print(
        f"{args.nodes} nodes, {args.nodes * args.pods_per_node} bound pods, {args.pending} pending; load "
        f"{os.getloadavg()[0]:.1f}; "
        + ", ".join(f"{k} {f.stat().st_size / 1e6:.1f} MB" for k, f in files.items())
    )
    for fmt, path in files.items():
        for label, extra in (("simulate", []), ("simulate --explain", ["--explain", "default/new-0"])):
            cmd = ["simulate", str(path), *extra]
            times, peaks = [], []
            for _ in range(args.runs):
                took, peak = run_once(cmd)
                times.append(took)
                peaks.append(peak)
            print(
                f"{fmt:4s} {label:20s} median {statistics.median(times):6.2f} s "
                f"(runs {', '.join(f'{t:.2f}' for t in times)}); peak RSS {max(peaks):.0f} MiB"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
