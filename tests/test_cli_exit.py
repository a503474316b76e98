"""`pyscheduler simulate` as a process ends without freeing its heap (scheduler.cli._exit_without_teardown),
with its output, exit code and atexit handlers as a normal exit has them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scheduler.testing import make_node, make_pod

# The entry point as `pyscheduler` calls it, with an atexit handler and os._exit reporting its use.
CHILD = (
    "import atexit, os, sys\n"
    "atexit.register(lambda: print('ATEXIT', file=sys.stderr))\n"
    "real_exit = os._exit\n"
    "def spy(code):\n"
    "    os.write(2, b'OS_EXIT %d' % code)\n"
    "    real_exit(code)\n"
    "os._exit = spy\n"
    "from scheduler.cli import main\n"
    "sys.exit(main())\n"
)


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("exit") / "cluster.json"
    items = [make_node("n1").obj(), make_pod("fits").req(cpu="1").obj(), make_pod("big").req(cpu="64").obj()]
    for item in items:
        item["spec"].setdefault("schedulerName", "default-scheduler")
    path.write_text(json.dumps({"kind": "List", "items": items}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("args", "code", "fast"),
    [
        pytest.param(["--fail-on-pending"], 1, True, id="simulate-pending"),
        pytest.param(["-o", "json"], 0, True, id="simulate-json"),
        pytest.param(["--explain", "default/absent"], 2, False, id="usage-error-exits-normally"),
    ],
)
def test_simulate_exits_without_teardown(dump: Path, args: list[str], code: int, fast: bool) -> None:
    """A finished simulate skips teardown only (output whole, exit code kept, atexit run); an error exits as usual."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, "simulate", str(dump), *args],
        capture_output=True, text=True, check=False, timeout=120,
    )
    assert proc.returncode == code, proc.stderr
    assert "ATEXIT" in proc.stderr
    assert ("OS_EXIT" in proc.stderr) is fast
    if fast:  # the handlers ran before the process ended
        assert proc.stderr.index("ATEXIT") < proc.stderr.index("OS_EXIT")
    if code != 2:
        out = proc.stdout
        placed = json.loads(out)["pods"] if "-o" in args else out
        assert "big" in str(placed) and "fits" in str(placed)


def test_a_reader_gone_ends_simulate_quietly(dump: Path) -> None:
    """`pyscheduler simulate ... | head -0`: our stdout's reader is gone before we write; the command ends with
    the shell's SIGPIPE code and no traceback (Python ignores SIGPIPE, so the write raises BrokenPipeError)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, "simulate", str(dump)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # no reader left: the child's first write fails with EPIPE
    stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == 141, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
