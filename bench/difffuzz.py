"""Differential fuzz: random clusters scheduled by kube-scheduler and pyscheduler, every difference reported.

One control plane (etcd + kube-apiserver), both schedulers started once and kept for the whole run, one
namespace; scenario after scenario (seeds `--seed` .. `--seed + --count - 1`, see tests/diff/scenario.py)
is created, each pending pod is scheduled by kube-scheduler then by pyscheduler on the same cluster, and the
outcomes are compared (tests/diff/runner.py): bound vs pending, the whole pending message, the feasible
nodes, every plugin's score per node and the totals.

    .venv/bin/python -m bench.difffuzz --count 500 --seed 1 --json bench/results/difffuzz.json
    bash scripts/difffuzz.sh --count 500          # the same, after the venv/binaries setup

Exit code 1 when any difference was found (each is printed with its seed: rerun one with `--seed N --count 1`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from tests.cluster.harness import ControlPlane, ControlPlaneConfig
from tests.diff.runner import Api, DiffRunner, ScenarioResult, SchedulerUnderTest, log_index, summarize
from tests.diff.scenario import Features, generate
from tests.diff.schedulers import PYSCHEDULER_NAME, UPSTREAM_SCHEDULER_NAME, start_pyscheduler, start_upstream

NAMESPACE = "difffuzz"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.difffuzz", description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=20, help="number of scenarios (default 20)")
    p.add_argument("--seed", type=int, default=1, help="first seed (default 1)")
    p.add_argument("--features", default="", help="extra generator features, comma separated, or 'all'")
    p.add_argument("--max-nodes", type=int, default=12, help="nodes per scenario, at most (default 12)")
    p.add_argument("--max-pending", type=int, default=8, help="pending pods per scenario, at most (default 8)")
    p.add_argument("--json", type=Path, help="write the report (summary and every difference) here")
    p.add_argument("--work-dir", type=Path, help="keep the control plane's data and the schedulers' logs here")
    return p


async def run(args: argparse.Namespace) -> int:
    features = Features.parse(args.features)
    config = ControlPlaneConfig(work_dir=args.work_dir, keep_work_dir=args.work_dir is not None)
    plane = ControlPlane(config)
    await asyncio.to_thread(plane.start)
    api = Api(plane.server, plane.token)
    results: list[ScenarioResult] = []
    started = time.monotonic()
    try:
        await api.call(
            "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
        upstream = await asyncio.to_thread(start_upstream, plane)
        ours = await start_pyscheduler(plane, plane.work_dir / "difffuzz")
        schedulers = [
            SchedulerUnderTest("up", UPSTREAM_SCHEDULER_NAME, log_index(upstream.log_path)),
            SchedulerUnderTest("py", PYSCHEDULER_NAME, log_index(ours.log_path)),
        ]
        runner = DiffRunner(api, NAMESPACE, schedulers, run_id=secrets.token_hex(4))
        for seed in range(args.seed, args.seed + args.count):
            for name, process in (("kube-scheduler", upstream), ("pyscheduler", ours)):
                if not process.running():
                    raise RuntimeError(f"{name} exited with {process.poll()}:\n{process.tail()}")
            scenario = generate(seed, features, max_nodes=args.max_nodes, max_pending=args.max_pending)
            result = await runner.run(scenario)
            results.append(result)
            unexplained = result.unexplained()
            status = "ok" if not unexplained else f"{len(unexplained)} DIFFERENCES"
            if len(result.differences) > len(unexplained):
                status += f" ({len(result.differences) - len(unexplained)} explained)"
            print(
                f"[{len(results)}/{args.count}] {scenario.describe()}: {result.count('bound')} bound, "
                f"{result.count('pending')} pending, {result.count('scored')} scored; {result.seconds:.1f} s; {status}",
                flush=True,
            )
            for diff in result.differences:
                print(f"    {diff}", flush=True)
        ours.stop()
    finally:
        await api.close()
        await asyncio.to_thread(plane.stop)
    summary = summarize(results)
    summary["wall_seconds"] = round(time.monotonic() - started, 1)
    summary["first_seed"] = args.seed
    summary["features"] = {k: v for k, v in vars(features).items()}
    print(json.dumps(summary, indent=2))
    if args.json is not None:
        report: dict[str, Any] = {
            "summary": summary,
            "machine": {"python": platform.python_version(), "platform": platform.platform()},
            "differences": [vars(d) for r in results for d in r.unexplained()],
            "explained_differences": [vars(d) for r in results for d in r.differences if d.explained],
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 1 if summary["differences"] else 0


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(run(_parser().parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
