"""Start the two schedulers of a differential run with the log verbosity that prints every plugin's scores."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import aiohttp
import yaml

from tests.cluster.harness import REPO_ROOT, ControlPlane, ManagedProcess, free_port

UPSTREAM_SCHEDULER_NAME = "default-scheduler"
PYSCHEDULER_NAME = "pyscheduler"
# kube-scheduler: V(2) everywhere ("Successfully bound pod to node"), V(10) in schedule_one.go only ("Plugin
# scored node for pod"): the scores without -v=10's request and response dumps.
UPSTREAM_LOG_ARGS = ("--v=2", "--vmodule=schedule_one=10")
PYSCHEDULER_VERBOSITY = 10
READY_TIMEOUT = 60.0


def start_upstream(control_plane: ControlPlane) -> ManagedProcess:
    """kube-scheduler (default profile, leader election off) logging plugin scores; waits for /readyz."""
    return control_plane.start_kube_scheduler(extra_args=UPSTREAM_LOG_ARGS)


def _write_config(work_dir: Path, tag: str) -> Path:
    work_dir.mkdir(parents=True, exist_ok=True)
    config = work_dir / f"pyscheduler-{tag}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
            }
        )
    )
    return config


async def start_pyscheduler(control_plane: ControlPlane, work_dir: Path, tag: str = "diff") -> ManagedProcess:
    """`pyscheduler run` at -v 10 (leader election off), ready when its /readyz answers 200 (for bench runs; the
    e2e tests use conftest's start_pyscheduler factory with `-v 10`)."""
    config = _write_config(work_dir, tag)
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "scheduler",
        "run",
        "--kubeconfig",
        str(control_plane.kubeconfig),
        "--config",
        str(config),
        "--port",
        str(port),
        "--bind-address",
        "127.0.0.1",
        "-v",
        str(PYSCHEDULER_VERBOSITY),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = ManagedProcess("pyscheduler", argv, work_dir / f"pyscheduler-{tag}.log", env=env).start()
    deadline = time.monotonic() + READY_TIMEOUT
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
        while True:
            if not process.running():
                raise RuntimeError(f"pyscheduler exited with {process.poll()}:\n{process.tail()}")
            try:  # the secure port (a self-signed certificate); /readyz needs no token
                async with session.get(f"https://127.0.0.1:{port}/readyz", ssl=False) as resp:
                    if resp.status == 200:
                        return process
            except (aiohttp.ClientError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                process.stop()
                raise RuntimeError(f"pyscheduler not ready after {READY_TIMEOUT:.0f} s:\n{process.tail()}")
            await asyncio.sleep(0.1)
