"""`pyscheduler run` exactly as in production, plus a JSON line of state sizes and RSS every few seconds.

The soak driver (bench/soak.py) starts this instead of `python -m scheduler run` so it can see, without any
HTTP endpoint, the size of every per-pod and per-node structure (`Scheduler.state_sizes()` and
`ClusterWriter.state_sizes()`) next to the process's resident memory. The only difference from production:
`build_scheduler` is wrapped to keep a reference to the scheduler and its writer, and a task samples them on
the scheduler's own event loop (the structures are not thread-safe).

    python -m bench.soak_scheduler --stats-file stats.jsonl --stats-period 5 -- run --kubeconfig ... -v 1
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import scheduler.adapters.cluster.run as run_module
from scheduler.adapters.cluster.writer import ClusterWriter
from scheduler.cli import main as pyscheduler_main
from scheduler.core.scheduler import Scheduler


def rss_bytes() -> int:
    """VmRSS of this process (/proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def sample(scheduler: Scheduler, writer: ClusterWriter | None) -> dict[str, Any]:
    doc: dict[str, Any] = {"ts": round(time.time(), 3), "rss": rss_bytes(), "gc_objects": len(gc.get_objects())}
    doc["scheduler"] = scheduler.state_sizes()
    if writer is not None:
        doc["writer"] = writer.state_sizes()
        doc["writer_stats"] = {k: v for k, v in dataclasses.asdict(writer.stats).items() if isinstance(v, int)}
    doc["bound"] = scheduler.bound_count
    return doc


def install(stats_file: Path, period: float) -> None:
    """Wrap build_scheduler so the sampling task starts on the scheduler's loop as soon as it exists."""
    original: Callable[..., Scheduler] = getattr(run_module, "build_scheduler")  # noqa: B009 - not re-exported

    def build_and_watch(api: Any, *args: Any, **kwargs: Any) -> Scheduler:
        scheduler = original(api, *args, **kwargs)
        writer = api if isinstance(api, ClusterWriter) else None

        async def sampler() -> None:
            with stats_file.open("a", encoding="utf-8") as out:
                while True:
                    out.write(json.dumps(sample(scheduler, writer)) + "\n")
                    out.flush()
                    await asyncio.sleep(period)

        # Created before kopf starts, so kopf leaves it alone; it ends with the process.
        task = asyncio.get_running_loop().create_task(sampler(), name="soak-sampler")
        def report(t: asyncio.Task[None]) -> None:
            if not t.cancelled() and t.exception() is not None:
                print(f"soak sampler failed: {t.exception()!r}", file=sys.stderr, flush=True)

        task.add_done_callback(report)
        return scheduler

    setattr(run_module, "build_scheduler", build_and_watch)  # noqa: B010 - the one wrapped call


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stats-file", type=Path, required=True)
    parser.add_argument("--stats-period", type=float, default=5.0)
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="-- then the `pyscheduler` arguments (run ...)")
    args = parser.parse_args(argv)
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    install(args.stats_file, args.stats_period)
    with contextlib.suppress(KeyboardInterrupt):
        return pyscheduler_main(rest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
