"""Two schedulers sharing nodes over-commit them: the race every secondary scheduler has, measured.

Each scheduler decides from its own cache; a pod the other one bound a moment ago is not in it yet, so both
can place a pod in the same last free cpu. kube-scheduler has the same race against any second scheduler
(upstream documents running several schedulers, not coordination between them); in a real cluster the
kubelet then rejects the late pod (`OutOfcpu`) and its controller makes a new one.

One etcd + kube-apiserver (no kubelets: a bound pod stays bound, so what is counted is what the schedulers
decided). Per run: 25 Ready nodes of 4 cpu (100 cpu of room), two schedulers started and ready, then 60
one-cpu pods for each (120 cpu of demand) created at once, interleaved, 50 requests in flight; when no
binding happened for `--settle` seconds the nodes are read: a node whose bound pods request more than its 4
cpu is over-committed, and the pods beyond its capacity are counted. Pairs (`--pairs`):

  upstream+upstream     kube-scheduler (default-scheduler) and a second kube-scheduler whose one profile is
                        `pyscheduler`, the same binary and release
  upstream+pyscheduler  kube-scheduler (default-scheduler) and pyscheduler
  dedicated             the remedy: 13 of the nodes tainted `dedicated=pyscheduler:NoSchedule` (pyscheduler's
                        pods tolerate it, so kube-scheduler's stay off them) and pyscheduler's profile given
                        NodeAffinityArgs `addedAffinity` for those nodes' label (so it stays off the others):
                        no node is shared, none is over-committed (each scheduler leaves its surplus Pending)

Runs alternate between the pairs; nodes and pods are deleted between runs.

    .venv/bin/python -m bench.overcommit --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import yaml

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
)
from tests.cluster.harness import ControlPlane, ManagedProcess, free_port

NAMESPACE = "overcommit"
NODES = 25
NODE_CPU = 4
PODS_EACH = 60
SECOND = "pyscheduler"  # the scheduler name of the second scheduler in both pairs
PAIRS = ("upstream+upstream", "upstream+pyscheduler", "dedicated")
DEDICATED = "bench.pyscheduler.io/pool"  # label and taint key of the nodes dedicated to pyscheduler
DEDICATED_NODES = 13
DEDICATED_PROFILE: JSON = {
    "schedulerName": SECOND,
    "pluginConfig": [
        {
            "name": "NodeAffinity",
            "args": {
                "addedAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": DEDICATED, "operator": "In", "values": [SECOND]}]}
                        ]
                    }
                }
            },
        }
    ],
}
READY_TIMEOUT = 120.0


def node(run: int, i: int, dedicated: bool) -> JSON:
    name = f"oc{run}-{i:02d}"
    obj: JSON = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "bench.pyscheduler.io/run": str(run)}},
    }
    if dedicated:
        obj["metadata"]["labels"][DEDICATED] = SECOND
        obj["spec"] = {"taints": [{"key": DEDICATED, "value": SECOND, "effect": "NoSchedule"}]}
    return obj


def pod(name: str, scheduler: str, tolerate: bool) -> JSON:
    spec: JSON = {
        "schedulerName": scheduler,
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "1"}}}],
    }
    if tolerate:
        spec["tolerations"] = [{"key": DEDICATED, "operator": "Equal", "value": SECOND, "effect": "NoSchedule"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}


class SecondUpstream:
    """A second kube-scheduler process whose only profile is `SECOND` (its own config, port and certificates)."""

    def __init__(self, cp: ControlPlane, log_dir: Path) -> None:
        self.cp = cp
        self.log_dir = log_dir
        self.process: ManagedProcess | None = None

    async def start(self, tag: str) -> None:
        port = free_port()
        config = self.log_dir / "second-kube-scheduler.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "clientConnection": {
                        "kubeconfig": str(self.cp.kubeconfig), "qps": CLIENT_QPS, "burst": CLIENT_BURST
                    },
                    "leaderElection": {"leaderElect": False},
                    "profiles": [{"schedulerName": SECOND}],
                }
            )
        )
        argv = [
            str(self.cp.binary("kube-scheduler")),
            f"--config={config}",
            f"--authentication-kubeconfig={self.cp.kubeconfig}",
            f"--authorization-kubeconfig={self.cp.kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={self.log_dir / 'second-pki'}",
            "--v=1",
        ]
        log = self.log_dir / f"second-kube-scheduler.{tag}.log"
        self.process = ManagedProcess("second-kube-scheduler", argv, log).start()
        deadline = time.monotonic() + READY_TIMEOUT
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
            while True:
                if not self.process.running():
                    raise RuntimeError(f"second kube-scheduler exited:\n{self.process.tail()}")
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with session.get(f"https://127.0.0.1:{port}/readyz", ssl=False) as resp:
                        if resp.status == 200:
                            return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"second kube-scheduler not ready:\n{self.process.tail()}")
                await asyncio.sleep(0.25)

    async def stop(self) -> None:
        if self.process is not None:
            await asyncio.to_thread(self.process.stop)
            self.process = None


@dataclass
class Outcome:
    pair: str
    run: int
    bound: dict[str, int]  # scheduler name -> pods it bound
    overcommitted_nodes: int
    pods_beyond: int  # pods on over-committed nodes beyond their capacity (1-cpu pods on 4-cpu nodes)
    settled_after: float


async def bound_pods(api: Api) -> list[JSON]:
    return [p for p in await api.list_all(f"/api/v1/namespaces/{NAMESPACE}/pods") if p["spec"].get("nodeName")]


async def wait_settled(api: Api, settle: float, within: float = 180.0) -> float:
    """Seconds until no new binding happened for `settle` seconds."""
    start = time.monotonic()
    last_count, last_change = -1, time.monotonic()
    while time.monotonic() - start < within:
        count = len(await bound_pods(api))
        if count != last_count:
            last_count, last_change = count, time.monotonic()
        elif time.monotonic() - last_change >= settle:
            return last_change - start
        await asyncio.sleep(0.25)
    raise RuntimeError(f"bindings still changing after {within:.0f} s")


async def one_run(cp: ControlPlane, api: Api, pair: str, run: int, log_dir: Path, settle: float) -> Outcome:
    dedicated = pair == "dedicated"
    nodes = [node(run, i, dedicated and i < DEDICATED_NODES) for i in range(NODES)]
    await create_ready_nodes(api, nodes)
    first = SchedulerUnderTest(UPSTREAM, cp, log_dir)
    second: SchedulerUnderTest | SecondUpstream
    if pair == "upstream+upstream":
        second = SecondUpstream(cp, log_dir)
    else:
        second = SchedulerUnderTest(PYSCHEDULER, cp, log_dir, profiles=[DEDICATED_PROFILE] if dedicated else None)
    await first.start(f"oc{run}")
    try:
        await second.start(f"oc{run}")
        try:
            pods = [
                p
                for i in range(PODS_EACH)
                for p in (pod(f"a{i:02d}", "default-scheduler", False), pod(f"b{i:02d}", SECOND, dedicated))
            ]
            await create_many(api, lambda _: f"/api/v1/namespaces/{NAMESPACE}/pods", pods)
            settled = await wait_settled(api, settle)
        finally:
            await second.stop()
    finally:
        await first.stop()
    bound = await bound_pods(api)
    per_node: dict[str, int] = {}
    by_scheduler = {"default-scheduler": 0, SECOND: 0}
    for p in bound:
        per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + 1
        by_scheduler[p["spec"]["schedulerName"]] += 1
    over = {n: c - NODE_CPU for n, c in per_node.items() if c > NODE_CPU}
    await api.call("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods", params={"gracePeriodSeconds": "0"})
    for n in nodes:
        await api.call("DELETE", f"/api/v1/nodes/{n['metadata']['name']}")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # polling the API: no event to wait on
        if not await api.list_all(f"/api/v1/namespaces/{NAMESPACE}/pods"):
            break
        await asyncio.sleep(0.25)
    return Outcome(pair, run, by_scheduler, len(over), sum(over.values()), settled)


async def run(args: argparse.Namespace) -> int:
    with ControlPlane() as cp:
        api = Api(cp.server, cp.token)
        try:
            await api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                           "metadata": {"name": NAMESPACE}})
            log_dir = Path(tempfile.mkdtemp(prefix="overcommit-"))
            outcomes: list[Outcome] = []
            for r in range(args.repeats):
                order = list(args.pairs) if r % 2 == 0 else list(reversed(args.pairs))
                for pair in order:
                    o = await one_run(cp, api, pair, len(outcomes), log_dir, args.settle)
                    outcomes.append(o)
                    print(
                        f"{pair:22s} run {r}: bound {o.bound['default-scheduler']} + {o.bound[SECOND]} = "
                        f"{sum(o.bound.values())} pods on {NODES * NODE_CPU} cpu; {o.overcommitted_nodes} node(s) "
                        f"over-committed, {o.pods_beyond} pod(s) beyond capacity "
                        f"(settled after {o.settled_after:.1f} s; load {os.getloadavg()[0]:.1f})",
                        flush=True,
                    )
            print()
            print("| pair | pods bound (runs) | over-committed nodes (runs) | pods beyond capacity (runs) |")
            print("|---|---:|---:|---:|")
            for pair in args.pairs:
                mine = [o for o in outcomes if o.pair == pair]
                cells = [
                    [sum(o.bound.values()) for o in mine],
                    [o.overcommitted_nodes for o in mine],
                    [o.pods_beyond for o in mine],
                ]
                text = " | ".join(f"{statistics.median(c):g} ({', '.join(map(str, c))})" for c in cells)
                print(f"| {pair} | {text} |")
            if args.json:
                text = json.dumps([o.__dict__ for o in outcomes], indent=2)
                await asyncio.to_thread(Path(args.json).write_text, text)
        finally:
            await api.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.overcommit", description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--pairs", nargs="+", choices=PAIRS, default=list(PAIRS))
    p.add_argument("--settle", type=float, default=5.0, help="seconds without a new binding that end a run")
    p.add_argument("--json", default=None, help="also write every run's outcome to this file")
    return asyncio.run(run(p.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
