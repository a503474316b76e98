"""mypy sees pyscheduler's types from a plugin package outside the checkout, with the documented install.

setuptools' default editable install puts an import hook on sys.path that mypy cannot follow (PEP 561 needs
a path), so a plugin author's mypy reported `Cannot find implementation or library stub for module named
"scheduler.framework"` and typed nothing. The documented install (`pip install -e .
--config-settings editable_mode=compat`, what scripts/setup.sh runs) writes a .pth naming the checkout
instead, and scheduler/py.typed does the rest. This runs mypy, as a plugin author would, in a temporary
directory holding only a tiny plugin package (no venv there, no PYTHONPATH): one class is right, one
returns the wrong type from `filter`, and mypy must say so in scheduler.framework's own terms. ~4 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

PLUGIN = '''
from scheduler.framework import CycleState, FilterPlugin, NodeInfo, NodeToStatus, PodInfo, Snapshot, Status


class Right(FilterPlugin):
    name = "Right"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


class Wrong(FilterPlugin):
    name = "Wrong"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 0


def exported(statuses: NodeToStatus, snapshot: Snapshot) -> int:
    return len(snapshot.node_info_list)
'''


def test_mypy_checks_a_plugin_outside_the_checkout_against_the_installed_project(tmp_path: Path) -> None:
    """Strict mypy on a plugin package in a bare directory: the framework resolves, and a wrong return
    type is reported against FilterPlugin's signature."""
    package = tmp_path / "tiny_plugins"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / ".mypy_cache"), "tiny_plugins"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = out.stdout + out.stderr
    assert "Cannot find implementation or library stub" not in report, (
        "mypy cannot see the installed pyscheduler: install it with "
        f"`pip install -e . --config-settings editable_mode=compat`:\n{report}"
    )
    assert out.returncode == 1, report
    want = (
        'tiny_plugins/__init__.py:15: error: Return type "int" of "filter" incompatible with return type '
        '"Status | None" in supertype "scheduler.framework.interface.FilterPlugin"  [override]'
    )
    assert report.splitlines()[:2] == [want, "Found 1 error in 1 file (checked 1 source file)"], report
