"""Installing an example plugin package from outside the repository, as a user's pip would."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster.harness import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples" / "plugins"


def install_example(name: str, factory: pytest.TempPathFactory) -> Path:
    """pip-install examples/plugins/<name> into a directory of its own (a site-packages to put on PYTHONPATH);
    built from a copy, so setuptools never writes into the repository."""
    target = factory.mktemp("site")
    source = factory.mktemp("src") / name
    shutil.copytree(EXAMPLES / name, source)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "--target", str(target), str(source)],
        check=True,
        timeout=120,
    )
    assert list(target.glob("*.dist-info/entry_points.txt")), f"{name} was installed without its entry points"
    return target
