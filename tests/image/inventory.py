"""What an image holds, read from its mounted file system (no container started): Python distributions in
/opt/venv and Debian packages. A bill of materials for the build's output and the test's assertions.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
from collections.abc import Iterator
from pathlib import Path

from tests.image.podman import Podman

VENV_SITE_PACKAGES = "opt/venv/lib/python3.11/site-packages"


@contextlib.contextmanager
def mounted(podman: Podman, ref: str) -> Iterator[Path]:
    """The image's root file system, mounted read-only on the host for the duration of the block."""
    root = Path(podman.run("image", "mount", ref).stdout.strip())
    try:
        yield root
    finally:
        podman.run("image", "unmount", ref, check=False)


def python_distributions(podman: Podman, ref: str) -> list[tuple[str, str]]:
    """(name, version) of every distribution installed in the image's /opt/venv, sorted by lower-cased name."""
    with mounted(podman, ref) as root:
        found = [
            (str(d.metadata["Name"]), d.version)
            for d in importlib.metadata.distributions(path=[str(root / VENV_SITE_PACKAGES)])
        ]
    return sorted(found, key=lambda item: item[0].lower())


def debian_packages(podman: Podman, ref: str) -> list[tuple[str, str]]:
    """(package, version) of every Debian package dpkg records as installed in the image."""
    with mounted(podman, ref) as root:
        status = (root / "var/lib/dpkg/status").read_text(encoding="utf-8", errors="replace")
    packages: list[tuple[str, str]] = []
    for stanza in status.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line.startswith(" ")
        )
        if fields.get("Status", "").endswith(" installed"):
            packages.append((fields["Package"], fields.get("Version", "")))
    return sorted(packages)
