"""Command line: ``python -m tests.cluster up [--controller-manager] [--kube-scheduler]``.

Starts the control plane, prints how to reach it and keeps it up until Ctrl-C or SIGTERM; exits non-zero
if one of its processes dies meanwhile. For debugging and benchmarks.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from tests.cluster.harness import ControlPlane, ControlPlaneConfig, ControlPlaneError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start the control plane and wait for Ctrl-C/SIGTERM")
    up.add_argument("--controller-manager", action="store_true", help="also run kube-controller-manager")
    up.add_argument("--kube-scheduler", action="store_true", help="also run the upstream kube-scheduler")
    up.add_argument("--scheduler-qps", type=float, default=50.0, help="kube-scheduler client QPS")
    up.add_argument("--scheduler-burst", type=int, default=100, help="kube-scheduler client burst")
    up.add_argument("--bin-dir", type=Path, help="binaries (default: _build/bin/<release>)")
    up.add_argument("--work-dir", type=Path, help="data, logs and kubeconfig (kept; default: a temp dir)")
    up.add_argument("--keep", action="store_true", help="keep the temporary work dir after stopping")
    up.add_argument("-v", "--verbosity", type=int, default=0, help="--v of the Kubernetes components")
    return parser


def _up(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    # Installed before the control plane starts, so the harness's own handler chains to this one.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    config = ControlPlaneConfig(
        bin_dir=args.bin_dir,
        work_dir=args.work_dir,
        keep_work_dir=args.keep,
        controller_manager=args.controller_manager,
        kube_scheduler=args.kube_scheduler,
        scheduler_qps=args.scheduler_qps,
        scheduler_burst=args.scheduler_burst,
        verbosity=args.verbosity,
    )
    try:
        with ControlPlane(config) as plane:
            print(plane.describe())
            print(f"\nexport KUBECONFIG={plane.kubeconfig}\n\nCtrl-C or SIGTERM stops it.", flush=True)
            while not stop.wait(1.0):
                dead = [p for p in plane.processes.values() if not p.running()]
                if dead:
                    for process in dead:
                        print(
                            f"{process.name} exited with code {process.poll()}; last lines of "
                            f"{process.log_path}:\n{process.tail()}",
                            file=sys.stderr,
                        )
                    return 1
            print("stopping", flush=True)
    except ControlPlaneError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "up":
        return _up(args)
    raise AssertionError(args.command)


if __name__ == "__main__":
    sys.exit(main())
