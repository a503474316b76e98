"""requirements.lock and requirements-build.lock (made by scripts/lock.sh) still satisfy pyproject.toml.

The image installs exactly these pins with ``--require-hashes``; a dependency added to or tightened in
pyproject.toml without rerunning scripts/lock.sh would otherwise only show up when an image is built.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
RUNTIME_LOCK = REPO / "requirements.lock"
BUILD_LOCK = REPO / "requirements-build.lock"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) \\$")
HASH = re.compile(r"^\s+--hash=sha256:[0-9a-f]{64}( \\)?$")


def pins(lock: Path) -> dict[str, tuple[Version, int]]:
    """{canonical name: (pinned version, number of hashes)} of a pip-compile --generate-hashes file."""
    found: dict[str, tuple[Version, int]] = {}
    current: str | None = None
    for line in lock.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        pin = PIN.match(line)
        if pin:
            current = canonicalize_name(pin.group(1))
            assert current not in found, f"{lock.name}: {current} pinned twice"
            found[current] = (Version(pin.group(2)), 0)
            continue
        assert current is not None and HASH.match(line), f"{lock.name}: not a pin or a sha256 hash: {line!r}"
        version, hashes = found[current]
        found[current] = (version, hashes + 1)
    return found


def pyproject() -> dict[str, object]:
    with (REPO / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def runtime_requirements() -> list[str]:
    project = pyproject()["project"]
    assert isinstance(project, dict)
    return list(project["dependencies"])


def build_requirements() -> list[str]:
    build = pyproject()["build-system"]
    assert isinstance(build, dict)
    return list(build["requires"])


@pytest.mark.parametrize(
    ("lock", "requirements"),
    [
        pytest.param(RUNTIME_LOCK, runtime_requirements(), id="runtime"),
        pytest.param(BUILD_LOCK, build_requirements(), id="build"),
    ],
)
def test_lock_pins_every_requirement_within_its_specifier(lock: Path, requirements: list[str]) -> None:
    """Each requirement of pyproject.toml is pinned in the lock to a version its specifier allows."""
    pinned = pins(lock)
    for text in requirements:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{lock.name} lacks {name}: run `bash scripts/lock.sh`"
        version, _ = pinned[name]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{lock.name} pins {name}=={version}, outside {requirement}: run `bash scripts/lock.sh`"
        )


@pytest.mark.parametrize("lock", [RUNTIME_LOCK, BUILD_LOCK], ids=["runtime", "build"])
def test_every_pin_carries_hashes_and_the_lock_says_how_it_was_made(lock: Path) -> None:
    """pip --require-hashes needs a hash on every pin; the header names scripts/lock.sh."""
    pinned = pins(lock)
    assert pinned, f"{lock.name} pins nothing"
    assert all(hashes > 0 for _, hashes in pinned.values()), {n: h for n, (_, h) in pinned.items() if not h}
    assert "#    bash scripts/lock.sh\n" in lock.read_text(encoding="utf-8")


def test_runtime_lock_holds_no_build_tool() -> None:
    """pip, setuptools and wheel are build-time only: the image's venv must not get them from the runtime lock."""
    assert not {"pip", "setuptools", "wheel"} & set(pins(RUNTIME_LOCK))
