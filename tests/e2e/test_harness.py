"""The control-plane harness cleans up after itself: on stop, on a failed start, and on SIGTERM to the CLI."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.cluster.harness import REPO_ROOT, ControlPlane, ControlPlaneConfig, ControlPlaneError

pytestmark = pytest.mark.e2e


def processes_mentioning(text: str) -> list[int]:
    """PIDs of live processes whose command line contains ``text``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().split(") ", 1)[1][:1]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if text in cmdline and state != "Z":
            pids.append(int(entry.name))
    return pids


def test_stop_ends_every_process_and_removes_the_work_dir(tmp_path: Path) -> None:
    """stop() leaves no etcd or kube-apiserver process behind and deletes the temporary work directory."""
    plane = ControlPlane(ControlPlaneConfig())
    with plane:
        work_dir = plane.work_dir
        assert sorted(plane.processes) == ["etcd", "kube-apiserver"]
        assert len(processes_mentioning(str(work_dir))) >= 2
        assert "current-context: pyscheduler-e2e" in plane.kubeconfig.read_text()

    assert processes_mentioning(str(work_dir)) == []
    assert not work_dir.exists()


def test_failed_start_reports_the_log_and_stops_what_it_started(tmp_path: Path) -> None:
    """A kube-apiserver that cannot start raises an error quoting its log, and etcd is stopped again."""
    plane = ControlPlane(ControlPlaneConfig(work_dir=tmp_path, apiserver_args=("--no-such-flag",)))

    with pytest.raises(ControlPlaneError) as failure:
        plane.start()

    assert "kube-apiserver exited" in str(failure.value)
    assert "unknown flag: --no-such-flag" in str(failure.value)
    assert processes_mentioning(str(tmp_path)) == []


def test_cli_up_stops_everything_on_sigterm() -> None:
    """`python -m tests.cluster up` serves until SIGTERM, then exits 0 leaving no process behind."""
    cli = subprocess.Popen(
        [sys.executable, "-m", "tests.cluster", "up"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def read_output() -> None:
        for line in cli.stdout or ():
            lines.put(line)

    threading.Thread(target=read_output, daemon=True).start()
    try:
        kubeconfig = None
        deadline = time.monotonic() + 120
        seen: list[str] = []
        while kubeconfig is None and time.monotonic() < deadline and cli.poll() is None:
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                continue
            match = re.match(r"export KUBECONFIG=(\S+)", seen[-1])
            kubeconfig = Path(match.group(1)) if match else None
        assert kubeconfig is not None, "no KUBECONFIG line:\n" + "".join(seen)
        work_dir = str(kubeconfig.parent)
        assert len(processes_mentioning(work_dir)) >= 2

        cli.send_signal(signal.SIGTERM)

        assert cli.wait(timeout=60) == 0
        assert processes_mentioning(work_dir) == []
        assert not kubeconfig.parent.exists()
    finally:
        if cli.poll() is None:
            os.kill(cli.pid, signal.SIGKILL)
            cli.wait()


SIGTERM_DURING_STOP = """
import os, signal, threading
from tests.cluster.harness import ControlPlane
plane = ControlPlane().start()
print(plane.work_dir, flush=True)
threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM)).start()
plane.stop()
threading.Event().wait(30)
"""


def test_sigterm_while_stopping_still_cleans_up() -> None:
    """A SIGTERM that interrupts stop() ends the process only after every child and the work dir are gone."""
    script = subprocess.run(
        [sys.executable, "-c", SIGTERM_DURING_STOP],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )

    assert script.returncode == -signal.SIGTERM, script.stdout + script.stderr
    work_dir = script.stdout.splitlines()[0]
    assert processes_mentioning(work_dir) == []
    assert not Path(work_dir).exists()
