"""`pyscheduler simulate` end to end on a large cluster dump: wall time and peak RSS of the CLI process.

Writes a dump of `--nodes` nodes (3 zones, labels, some taints, images) and `--pods-per-node` bound pods per node
(requests, labels, a ReplicaSet owner, like `kubectl get nodes,pods -A -o yaml` prints them) plus `--pending`
pods to schedule, as YAML and as JSON (a v1 List), then runs `python -m scheduler simulate FILE` (and with
`--explain` for one pending pod) `--runs` times each in a fresh process. Prints the median wall seconds and
the peak RSS (MiB) per case; the time includes interpreter start and parsing (the package byte-compiled
first, as pip and the image install it: a checkout under PYTHONDONTWRITEBYTECODE=1 would compile it per run).

    .venv/bin/python -m bench.simulate_scale --nodes 5000 --pods-per-node 10 --runs 3
    .venv/bin/python -m bench.simulate_scale --nodes 5000 --pods-per-node 10 --runs 3 --lean   # ~10 MB of YAML
    .venv/bin/python -m bench.simulate_scale --shape kubectl --pending 1 --runs 3 --dir /tmp/simscale  # 224 MB

Each run also times merely loading the file with every JSON or YAML parser installed (a fresh process each,
interleaved with pyscheduler's runs) and prints pyscheduler's time as a multiple of the fastest one's: the
ratio of the medians, the median of each round's ratio (the two ran back to back) and the ratio of the two
fastest runs (a busy stretch of the machine slows the parser's allocations and our interpreter differently).
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

from bench.bytecode import compile_package

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


def kubectl_node(i: int) -> JSON:
    """A node as `kubectl get nodes -o yaml` prints one of a managed cloud cluster (about 5 KB of YAML)."""
    obj = node(i)
    zone = obj["metadata"]["labels"]["topology.kubernetes.io/zone"]
    obj["metadata"]["labels"].update({
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/instance-type": obj["metadata"]["labels"]["node.kubernetes.io/instance-type"],
        "failure-domain.beta.kubernetes.io/zone": zone,
        "failure-domain.beta.kubernetes.io/region": "r1",
        "node.kubernetes.io/pool": f"pool-{i % 4}",
    })
    obj["metadata"]["annotations"] = {
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        "csi.volume.kubernetes.io/nodeid": json.dumps({"ebs.csi.aws.com": f"i-{i:017x}"}),
    }
    obj["metadata"]["resourceVersion"] = str(1_000_000 + i)
    obj["spec"].update({"podCIDR": f"10.{i // 256}.{i % 256}.0/24", "providerID": f"aws:///{zone}/i-{i:017x}"})
    ip = f"10.{100 + i // 65536}.{(i // 256) % 256}.{i % 256}"
    beat = "2026-01-01T10:00:00Z"
    status = obj["status"]
    status["addresses"] = [
        {"address": ip, "type": "InternalIP"},
        {"address": f"ip-{ip.replace('.', '-')}.ec2.internal", "type": "InternalDNS"},
        {"address": f"ip-{ip.replace('.', '-')}.ec2.internal", "type": "Hostname"},
    ]
    status["conditions"] = [
        {"lastHeartbeatTime": beat, "lastTransitionTime": "2026-01-01T00:00:30Z", "message": message,
         "reason": reason, "status": state, "type": kind}
        for kind, state, reason, message in (
            ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        )
    ]
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
    status["images"] = [
        {"names": [f"registry.example/team-{k}/service@sha256:{(i * 31 + k):064x}",
                   f"registry.example/team-{k}/service:v1.{k}.{i % 5}"], "sizeBytes": 50_000_000 + k * 1_000_003}
        for k in range(12)
    ] + obj["status"]["images"]
    status["nodeInfo"] = {
        "architecture": "amd64", "bootID": f"{i:08x}-0000-4000-8000-000000000000",
        "containerRuntimeVersion": "containerd://2.1.4", "kernelVersion": "6.12.0-1.amzn2023.x86_64",
        "kubeProxyVersion": "", "kubeletVersion": "v1.37.2", "machineID": f"ec2{i:029x}",
        "operatingSystem": "linux", "osImage": "Amazon Linux 2023",
        "systemUUID": f"ec2{i:05x}-0000-0000-0000-000000000000",
    }
    return obj


def kubectl_pod(n: int, node_name: str) -> JSON:
    """A running Deployment pod as `kubectl get pods -o yaml` prints it: defaults, the service-account volume,
    conditions, container statuses (about 3.5 KB of YAML)."""
    obj = bound_pod(n, node_name)
    meta, spec = obj["metadata"], obj["spec"]
    app = meta["labels"]["app"]
    meta["generateName"] = f"{app}-5d8f7c-"
    meta["resourceVersion"] = str(2_000_000 + n)
    meta["annotations"] = {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}
    main = spec["containers"][0]
    main.update({
        "env": [{"name": "APP", "value": app}, {"name": "POD_NAME", "valueFrom": {"fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.name"}}}],
        "imagePullPolicy": "IfNotPresent",
        "livenessProbe": {"failureThreshold": 3, "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                          "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access",
                          "readOnly": True}],
    })
    spec.update({
        "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
        "restartPolicy": "Always", "securityContext": {}, "serviceAccount": "default",
        "serviceAccountName": "default", "terminationGracePeriodSeconds": 30,
        "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
            {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                        "path": "namespace"}]}},
        ]}}],
    })
    spec["tolerations"].append({"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
                                "tolerationSeconds": 300})
    ip = f"10.{n // 65536}.{(n // 256) % 256}.{n % 256}"
    started = "2026-01-01T00:00:12Z"
    obj["status"] = {
        "conditions": [
            {"lastProbeTime": None, "lastTransitionTime": started, "status": "True", "type": kind}
            for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
        ],
        "containerStatuses": [{
            "containerID": f"containerd://{n:064x}", "image": "registry.example/web:1.0",
            "imageID": f"registry.example/web@sha256:{n * 7:064x}", "lastState": {}, "name": "main", "ready": True,
            "restartCount": 0, "started": True, "state": {"running": {"startedAt": started}},
            "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                              "name": "kube-api-access", "readOnly": True, "recursiveReadOnly": "Disabled"}],
        }],
        "hostIP": "10.100.0.1", "hostIPs": [{"ip": "10.100.0.1"}], "phase": "Running", "podIP": ip,
        "podIPs": [{"ip": ip}], "qosClass": "Burstable", "startTime": "2026-01-01T00:00:10Z",
    }
    return obj


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


SHAPES = {
    "lean": (node, lean_pod),
    "scheduler": (node, bound_pod),
    "kubectl": (kubectl_node, kubectl_pod),
}


def dump(nodes: int, per_node: int, pending: int, *, shape: str = "scheduler") -> list[JSON]:
    """The cluster's objects: nodes, then their bound pods node by node, then the pending pods."""
    make_node, make_pod = SHAPES[shape]
    objs = [make_node(i) for i in range(nodes)]
    n = 0
    for i in range(nodes):
        for _ in range(per_node):
            objs.append(make_pod(n, f"node-{i:05d}"))
            n += 1
    objs += [pending_pod(k) for k in range(pending)]
    return objs


# The child's own peak RSS: /proc's VmHWM belongs to the process image, where getrusage's ru_maxrss also
# counts the image before exec, i.e. this bench process at the moment it spawned the child (5.4 GB right after
# generating a 5000-node dump, which then read as every child's peak).
PEAK_RSS_KIB = (
    "def peak_rss_kib():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            return int(line.split()[1])\n"
    "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss"
)

CHILD = (
    "import atexit, resource, sys\n"
    f"{PEAK_RSS_KIB}\n"
    "atexit.register(lambda: print('MAXRSS', peak_rss_kib(), file=sys.stderr))\n"
    "from scheduler.cli import main\n"
    "sys.exit(main())\n"  # the process's entry point, as `pyscheduler` (argv None: sys.argv[1:])
)

# Merely loading the file: read it and build its Python objects, each parser in a fresh process. Those not
# installed are skipped (the ones pyscheduler depends on always are: json, msgspec, PyYAML, yaml-rs).
PARSERS: dict[str, tuple[str, str]] = {
    "json": ("json", "import json; json.loads(open(P, 'rb').read())"),
    "msgspec": ("json", "import msgspec; msgspec.json.decode(open(P, 'rb').read())"),
    "orjson": ("json", "import orjson; orjson.loads(open(P, 'rb').read())"),
    "pysimdjson": ("json", "import simdjson; simdjson.loads(open(P, 'rb').read())"),
    "pyyaml-libyaml": ("yaml", "import yaml; yaml.load(open(P, 'rb'), Loader=yaml.CSafeLoader)"),
    "yaml-rs": ("yaml", "import yaml_rs; yaml_rs.loads(open(P).read(), parse_datetime=False)"),
    "oryaml": ("yaml", "import oryaml; oryaml.loads(open(P, 'rb').read())"),
    "ryaml": ("yaml", "import ryaml; ryaml.loads(open(P).read())"),
}
LOAD_CHILD = (
    "import gc, resource, sys, time\n"
    f"{PEAK_RSS_KIB}\n"
    "P = sys.argv[1]\n"
    "{imports}\n"
    "gc.disable()\n"
    "t = time.perf_counter()\n"
    "{load}\n"
    "print('TOOK', time.perf_counter() - t, peak_rss_kib())\n"
)


def load_once(parser: str, path: Path) -> tuple[float, float] | None:
    """Seconds to read and parse the file with one parser (interpreter start and import excluded), and the
    process's peak RSS (MiB); None when the parser is not installed."""
    statement = PARSERS[parser][1]
    imports, load = statement.split("; ", 1)
    proc = subprocess.run(
        [sys.executable, "-c", LOAD_CHILD.format(imports=imports, load=load), str(path)],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        if "ModuleNotFoundError" in proc.stderr:
            return None
        raise SystemExit(f"{parser} failed on {path}: {proc.stderr[-2000:]}")
    took, rss = proc.stdout.split()[1:3]
    return float(took), int(rss) / 1024.0


def run_once(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one CLI process running `pyscheduler ARGS`."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # 1: some pod stayed Pending, which the dump contains on purpose
        raise SystemExit(f"{args} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    peak = [line.split()[1] for line in proc.stderr.splitlines() if line.startswith("MAXRSS ")]
    return took, int(peak[-1]) / 1024.0


def write_files(args: argparse.Namespace) -> dict[str, Path]:
    """The dump as a v1 List in JSON (indented as kubectl prints it) and YAML (keys sorted, as kubectl), kept
    in --dir between runs (rebuilt when missing)."""
    out = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="simscale-"))
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{args.shape}-{args.nodes}x{args.pods_per_node}-{args.pending}"
    files = {fmt: out / f"{stem}.{fmt}" for fmt in args.formats.split(",")}
    missing = [fmt for fmt, path in files.items() if not path.exists()]
    if missing:
        objs = dump(args.nodes, args.pods_per_node, args.pending, shape=args.shape)
        doc = {"apiVersion": "v1", "items": objs, "kind": "List", "metadata": {"resourceVersion": ""}}
        for fmt in missing:
            with open(files[fmt], "w", encoding="utf-8") as fh:
                if fmt == "json":
                    json.dump(doc, fh, indent=4, sort_keys=True)
                else:
                    yaml.dump(doc, fh, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=True)
    return files


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.simulate_scale", description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods-per-node", type=int, default=10)
    p.add_argument("--pending", type=int, default=5)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--formats", default="json,yaml")
    p.add_argument("--shape", choices=sorted(SHAPES), default="scheduler",
                   help="kubectl: objects as `kubectl get -o yaml` prints them (~4 KB each); scheduler: the fields "
                   "a scheduler reads plus a few; lean: only those (~200 B)")
    p.add_argument("--lean", action="store_const", const="lean", dest="shape", help="the same as --shape lean")
    p.add_argument("--dir", default=None, help="keep the generated files here and reuse them")
    p.add_argument("--no-plain", action="store_true", help="only `simulate --explain`, not plain `simulate`")
    p.add_argument("--parsers", default=",".join(PARSERS),
                   help="parsers to time merely loading the file (comma-separated; PyYAML's libyaml loader needs "
                   "~40 s and 7 GB for the 224 MB kubectl YAML)")
    args = p.parse_args(argv)

    files = write_files(args)
    compile_package()  # timed as an installed pyscheduler runs: its bytecode compiled, as pip and the image do
    print(
        f"{args.shape}: {args.nodes} nodes, {args.nodes * args.pods_per_node} bound pods, {args.pending} pending; "
        f"load {os.getloadavg()[0]:.1f}; " + ", ".join(f"{k} {f.stat().st_size / 1e6:.1f} MB" for k, f in files.items())
    )
    cases = [("simulate --explain", ["--explain", "default/new-0"])]
    if not args.no_plain:
        cases.insert(0, ("simulate", []))
    for fmt, path in files.items():
        loads: dict[str, list[float]] = {}
        ends: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in cases}
        for _ in range(args.runs):  # interleaved, so the parsers and pyscheduler see the same machine load
            for parser, (kind, _) in PARSERS.items():
                if kind != fmt or loads.get(parser) == [] or parser not in args.parsers.split(","):
                    continue
                got = load_once(parser, path)
                loads.setdefault(parser, [])
                if got is not None:
                    loads[parser].append(got[0])
            for label, extra in cases:
                ends[label].append(run_once(["simulate", str(path), *extra]))
        measured = {name: statistics.median(times) for name, times in loads.items() if times}
        fastest = min(measured, key=measured.__getitem__)
        for name, times in loads.items():
            if times:
                runs = ", ".join(f"{t:.2f}" for t in times)
                print(f"{fmt:4s} load {name:16s} median {measured[name]:6.2f} s (runs {runs})")
        for label, results in ends.items():
            times = [t for t, _ in results]
            median = statistics.median(times)
            print(
                f"{fmt:4s} {label:21s} median {median:6.2f} s (runs {', '.join(f'{t:.2f}' for t in times)}); "
                f"peak RSS {max(r for _, r in results):.0f} MiB; {median / measured[fastest]:.2f}x the fastest load "
                f"({fastest})"
            )
            # Two estimates that a slow stretch of the machine moves less than the ratio of medians: each round's
            # ratio (the two ran back to back) and the ratio of each side's fastest run (its least disturbed one).
            rounds = [t / load for t, load in zip(times, loads[fastest], strict=True)]
            print(
                f"{fmt:4s} {label:21s} per round {statistics.median(rounds):.2f}x "
                f"({', '.join(f'{r:.2f}' for r in rounds)}); fastest against fastest "
                f"{min(times) / min(loads[fastest]):.2f}x"
            )
        sys.stdout.flush()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
