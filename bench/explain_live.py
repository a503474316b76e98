"""`pyscheduler explain` from the command line against a real control plane at realistic size.

One etcd + kube-apiserver; `--nodes` Ready nodes (3 zones) and `--pods-per-node` bound pods per node
(bench/startup.py's shapes); pyscheduler runs with `--enable-debug-handlers`, and a pending pod it cannot
place (64 cpu) is explained `--runs` times, alternating, each a fresh CLI process (byte-compiled, as
installed):

- `GET /debug/explain` answered by the running scheduler (timed in this process: the server's share);
- `pyscheduler explain --server URL`: the whole command, interpreter start and imports included;
- the LISTs `explain` without `--server` makes (nodes, pods, and the kinds the plugins read, paged as it
  pages them), timed in this process with the same client;
- `pyscheduler explain` without `--server`: LIST, load an in-memory scheduler, explain.

Prints medians (and each run) and the load average.

    .venv/bin/python -m bench.explain_live --nodes 5000 --pods-per-node 30 --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from bench.bytecode import compile_package
from bench.e2e import Api
from bench.startup import NAMESPACE, populate
from scheduler.adapters.cluster.client import KubeClient
from scheduler.adapters.cluster.watch import LIST_PAGE_SIZE, NODES_PATH, POD_FIELD_SELECTOR, PODS_PATH
from scheduler.framework.objects import KINDS
from tests.cluster.harness import REPO_ROOT, ControlPlane, ControlPlaneConfig, ManagedProcess, free_port

PENDING = "huge"
# The kinds the default profile's plugins read (what `explain` LISTs besides nodes and pods).
DEFAULT_KINDS = sorted(KINDS)


async def start_pyscheduler(cp: ControlPlane, log_dir: Path) -> tuple[ManagedProcess, str]:
    """pyscheduler with its debug handlers on the secure port (self-signed), ready; and its URL. Leader
    election off, as in bench/e2e.py: on a loaded machine a missed renewal would end the run."""
    compile_package()
    port = free_port()
    config = log_dir / "pyscheduler.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "clientConnection: {qps: 5000, burst: 5000}\nleaderElection: {leaderElect: false}\n"
    )
    argv = [
        sys.executable, "-m", "scheduler", "run", "--kubeconfig", str(cp.kubeconfig), "--config", str(config),
        "--port", str(port), "--bind-address", "127.0.0.1", "--enable-debug-handlers", "-v", "1",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = ManagedProcess("pyscheduler", argv, log_dir / "pyscheduler.log", env=env).start()
    url = f"https://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
        while time.monotonic() < deadline:
            if not process.running():
                raise RuntimeError(f"pyscheduler exited:\n{process.tail()}")
            try:
                async with session.get(f"{url}/readyz", ssl=False) as resp:
                    if resp.status == 200:
                        return process, url
            except (aiohttp.ClientError, TimeoutError):
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError("pyscheduler not ready")


def cli(*args: str) -> float:
    """Wall seconds of one `pyscheduler` command in a fresh process (it must succeed)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "scheduler", *args], capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if proc.returncode != 0 or "Message:" not in proc.stdout:
        raise RuntimeError(f"pyscheduler {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return took


async def server_time(url: str, token: str) -> float:
    """Seconds for the running scheduler to answer GET /debug/explain (text)."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        start = time.perf_counter()
        async with session.get(
            f"{url}/debug/explain/{NAMESPACE}/{PENDING}", params={"format": "text"},
            headers={"Authorization": f"Bearer {token}"}, ssl=False,
        ) as resp:
            await resp.read()
            if resp.status != 200:
                raise RuntimeError(f"/debug/explain answered {resp.status}")
        return time.perf_counter() - start


async def list_time(kubeconfig: Path) -> float:
    """Seconds for the LISTs `explain` makes without --server, decoded by the same client."""
    client = await KubeClient.create(str(kubeconfig), qps=5000, burst=5000)
    try:
        start = time.perf_counter()
        await asyncio.gather(
            client.list_all(NODES_PATH, limit=LIST_PAGE_SIZE),
            client.list_all(PODS_PATH, field_selector=POD_FIELD_SELECTOR, limit=LIST_PAGE_SIZE),
            *(client.list_all(KINDS[kind].list_path(), limit=LIST_PAGE_SIZE) for kind in DEFAULT_KINDS),
        )
        return time.perf_counter() - start
    finally:
        await client.close()


def _report(label: str, times: list[float]) -> float:
    median = statistics.median(times)
    print(f"  {label:34s} median {median:6.2f} s (runs {', '.join(f'{t:.2f}' for t in times)})", flush=True)
    return median


async def run(args: argparse.Namespace) -> int:
    config = ControlPlaneConfig(max_requests_inflight=10000, max_mutating_requests_inflight=5000)
    with ControlPlane(config) as cp:
        api = Api(cp.server, cp.token)
        process = None
        try:
            took = await populate(api, args.nodes, args.pods_per_node)
            print(f"{args.nodes} nodes, {args.nodes * args.pods_per_node} bound pods created in {took:.0f} s")
            pending = {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": PENDING, "namespace": NAMESPACE},
                "spec": {"schedulerName": "pyscheduler", "containers": [
                    {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "64"}}}
                ]},
            }
            await api.call("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", pending)
            process, url = await start_pyscheduler(cp, Path(tempfile.mkdtemp(prefix="explain-live-")))
            ref = f"{NAMESPACE}/{PENDING}"
            kubeconfig = str(cp.kubeconfig)
            times: dict[str, list[float]] = {"server": [], "cli --server": [], "lists": [], "cli": []}
            for _ in range(args.runs):
                times["server"].append(await server_time(url, cp.token))
                times["cli --server"].append(
                    await asyncio.to_thread(cli, "explain", ref, "--server", url, "--kubeconfig", kubeconfig,
                                            "--insecure-skip-tls-verify")
                )
                times["lists"].append(await list_time(cp.kubeconfig))
                times["cli"].append(await asyncio.to_thread(cli, "explain", ref, "--kubeconfig", kubeconfig))
            print(f"{args.nodes} nodes x {args.pods_per_node} pods, load {os.getloadavg()[0]:.1f}:")
            _report("GET /debug/explain (the server)", times["server"])
            remote = _report("pyscheduler explain --server", times["cli --server"])
            lists = _report("the LISTs alone", times["lists"])
            local = _report("pyscheduler explain (LIST + local)", times["cli"])
            print(f"  explain --server {remote:.2f} s (target < 1 s); explain {local / lists:.2f}x the LISTs "
                  "(target <= 2x)")
            print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        finally:
            if process is not None:
                process.stop()
            await api.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.explain_live", description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods-per-node", type=int, default=30)
    p.add_argument("--runs", type=int, default=3)
    return asyncio.run(run(p.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
