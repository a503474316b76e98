"""podman as these machines need it, with this checkout's own image store, and containers that never outlive us.

What works here (Debian 12, root, cgroups v1 hybrid mode, no systemd, no registry): Debian's podman with
``--runtime /usr/sbin/runc --cgroup-manager cgroupfs`` (crun fails in hybrid mode), explicit
``--ulimit nofile=1024:1024 --ulimit nproc=4096:4096`` (podman's defaults are refused), ``--network host``
(no bridge networking needed, and the container reaches the loopback API server) and the ``file`` events
backend (no journald). Those flags live here only: ``Podman.argv`` adds the global ones, ``RUN_OPTIONS`` the
per-container ones, for builds and runs alike.

The image store is private to the checkout (``_build/image/podman``): builds, layer cache and base images
never touch, or depend on, the machine's default store, and removing ``_build/image`` resets everything.

A running container is watched by ``conmon``, which podman double-forks away from the caller and starts with
an environment of its own, so scripts/test.sh's leftover check (the PYSCHEDULER_TEST_RUN variable) cannot
see it. ``Container.remove`` therefore removes the container (``podman rm --force``) and then waits until its
conmon has exited; test containers are named after the test run's marker, which scripts/test.sh also looks
for in command lines.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.cluster.harness import REPO_ROOT

#: The image store of this checkout (graph root, run root, podman's tmpdir).
DEFAULT_STATE_DIR = REPO_ROOT / "_build" / "image" / "podman"
RUNC = "/usr/sbin/runc"
#: Per-container options every build step and every run needs on these machines (see the module docstring).
RUN_OPTIONS: tuple[str, ...] = ("--network", "host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096")


class PodmanError(RuntimeError):
    """A podman command failed; the message holds the command and its output."""


def missing_tools() -> dict[str, str]:
    """{program: Debian package} of what this module runs and is not installed; empty when all is there."""
    missing = {name: name for name in ("podman", "conmon") if shutil.which(name) is None}
    if not os.access(RUNC, os.X_OK):
        missing[RUNC] = "runc"
    return missing


@dataclass(frozen=True)
class Podman:
    """Runs podman as root with the private store in ``state_dir`` and the runtime these machines need."""

    state_dir: Path = DEFAULT_STATE_DIR
    executable: str = "podman"

    def argv(self, *args: str) -> list[str]:
        """The full command line of ``podman <args>`` with the global flags."""
        return [
            self.executable,
            "--root", str(self.state_dir / "storage"),
            "--runroot", str(self.state_dir / "run"),
            "--tmpdir", str(self.state_dir / "tmp"),
            "--storage-driver", "overlay",
            "--runtime", RUNC,
            "--cgroup-manager", "cgroupfs",
            "--events-backend", "file",
            *args,
        ]  # fmt: skip

    def run(self, *args: str, timeout: float = 120.0, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Runs ``podman <args>`` to completion, capturing its output; raises PodmanError if ``check`` fails."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        argv = self.argv(*args)
        result = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL
        )
        if check and result.returncode != 0:
            raise PodmanError(
                f"{' '.join(argv)} exited with {result.returncode}:\n{result.stderr.strip() or result.stdout.strip()}"
            )
        return result

    def image_exists(self, ref: str) -> bool:
        return self.run("image", "exists", ref, check=False).returncode == 0

    def inspect_image(self, ref: str) -> dict[str, Any]:
        """``podman image inspect`` of one image, as a dict."""
        answer = json.loads(self.run("image", "inspect", ref).stdout)
        assert isinstance(answer, list) and len(answer) == 1, answer
        image: dict[str, Any] = answer[0]
        return image

    def container(self, name: str) -> Container:
        return Container(self, name)


@dataclass
class Container:
    """One named container: started detached, stopped like a kubelet would, always removed in the end."""

    podman: Podman
    name: str
    conmon_pid: int | None = field(default=None, init=False)

    def start(self, image: str, options: Sequence[str], args: Sequence[str]) -> None:
        """``podman run --detach`` with ``RUN_OPTIONS``, ``options`` (before the image) and ``args`` (after)."""
        self.podman.run("run", "--detach", "--name", self.name, *RUN_OPTIONS, *options, image, *args)
        self.conmon_pid = self.state().get("ConmonPid") or None

    def state(self) -> dict[str, Any]:
        """``.State`` of ``podman container inspect`` (Status, Running, ExitCode, Pid, ConmonPid, ...)."""
        answer = json.loads(self.podman.run("container", "inspect", self.name).stdout)
        state: dict[str, Any] = answer[0]["State"]
        return state

    def running(self) -> bool:
        return bool(self.state().get("Running"))

    def logs(self) -> str:
        """Everything the container wrote to stdout and stderr so far."""
        result = self.podman.run("logs", self.name, check=False)
        return result.stdout + result.stderr

    def stop(self, grace_seconds: int = 30) -> int:
        """SIGTERM (``podman stop``), SIGKILL after ``grace_seconds`` as a kubelet does; the exit code."""
        self.podman.run("stop", "--time", str(grace_seconds), self.name, timeout=grace_seconds + 60)
        code = self.podman.run("wait", self.name, timeout=60).stdout.strip()
        return int(code)

    def remove(self, within: float = 30.0) -> None:
        """Removes the container whatever its state, then waits for its conmon to exit. Idempotent."""
        self.podman.run("rm", "--force", "--ignore", "--time", "0", self.name, check=False, timeout=60)
        if self.conmon_pid is not None:
            wait_for_exit(self.conmon_pid, within=within, what=f"conmon of container {self.name}")
            self.conmon_pid = None


def process_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, which nothing may reap here, counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    # The state follows the parenthesised command name, which may itself contain spaces or parentheses.
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_for_exit(pid: int, *, within: float, what: str) -> None:
    """Waits until ``pid`` has exited; raises PodmanError naming ``what`` if it is still there after ``within``."""
    deadline = time.monotonic() + within
    while process_alive(pid):
        if time.monotonic() > deadline:
            raise PodmanError(f"{what} (pid {pid}) still runs {within:.0f} s after the container was removed")
        time.sleep(0.1)
