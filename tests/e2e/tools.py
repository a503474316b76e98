"""Tests that need a program from the system's packages: skip where it cannot be had, never in CI.

scripts/setup.sh installs every such program (Debian packages, as root). Where that is impossible (no root,
no apt) the tests that need one are skipped with a message naming what is missing and the package that
provides it; README.md says what is then not tested. Under CI (CI set, as .ci/run does) a missing program
fails the test instead: CI must never pass by skipping.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

import pytest


def missing_programs(packages: Mapping[str, str]) -> dict[str, str]:
    """The entries of ``packages`` ({program: Debian package}) whose program is not on PATH."""
    return {program: package for program, package in packages.items() if shutil.which(program) is None}


def require(missing: Mapping[str, str], *, needed_for: str, root: bool = False) -> None:
    """Skips (fails under CI) when ``missing`` ({program: Debian package}) is not empty, or without root."""
    problems = [f"{program} (Debian package {package})" for program, package in sorted(missing.items())]
    if root and os.geteuid() != 0:
        problems.append("root (rootful podman)")
    if not problems:
        return
    message = f"{needed_for} needs {', '.join(problems)}; `bash scripts/setup.sh` installs the packages as root"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)
