"""Byte-compiling the scheduler package before a benchmark times a fresh `pyscheduler` process."""

from __future__ import annotations

import compileall
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "scheduler"


def compile_package() -> None:
    """Byte-compile the scheduler package, as the image does at build time (and pip at install time): a
    checkout run with PYTHONDONTWRITEBYTECODE=1 would otherwise compile ~80 modules on every start (~0.3 s),
    which a deployed pyscheduler never does. Writes __pycache__ (gitignored); cheap when already current."""
    compileall.compile_dir(str(PACKAGE), quiet=1)
