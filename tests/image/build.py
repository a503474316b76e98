"""Builds the repository's Dockerfile with podman on a machine that reaches no container registry.

Three steps, each cached under ``_build/image/`` and keyed by its inputs, so a rerun costs seconds:

1. **base**: a minimal Debian (``mmdebstrap --variant=essential``, bookworm, python3 3.11 from Debian's
   packages) as a tarball ``base-<key>.tar``, imported into the private podman store as
   ``localhost/pyscheduler-base:<key>``. Key: the suite, packages, mirrors, dpkg filters and the mmdebstrap
   version. It stands in for the Dockerfile's default ``BASE_IMAGE`` (the public python image).
2. **wheelhouse**: ``pip download --require-hashes`` of requirements.lock and requirements-build.lock, wheels
   only, for CPython 3.11 on this architecture, into ``wheelhouse-<key>/``. Key: the lock files' content and
   the target tags. The build installs from it with ``--no-index``: the package index may not be reachable
   from inside a build.
3. **image**: ``podman build`` of the Dockerfile with ``BASE_IMAGE`` and ``WHEELHOUSE`` set and the wheelhouse
   mounted read-only; podman's layer cache makes an unchanged rebuild a matter of seconds.

``python -m tests.image build`` (``bash scripts/build-image.sh``) runs it from the command line.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.cluster.harness import REPO_ROOT
from tests.image.podman import RUN_OPTIONS, Podman, missing_tools

CACHE_DIR = REPO_ROOT / "_build" / "image"
LOCK_FILES = (REPO_ROOT / "requirements.lock", REPO_ROOT / "requirements-build.lock")
DOCKERFILE = REPO_ROOT / "Dockerfile"
DEFAULT_TAG = "localhost/pyscheduler:dev"
BASE_REPOSITORY = "localhost/pyscheduler-base"
#: Where the build stage sees the wheelhouse (a read-only bind mount); the Dockerfile's WHEELHOUSE argument.
WHEELHOUSE_MOUNT = "/wheels"
#: The Python of the image: Debian bookworm's python3, and the public base's minor version.
IMAGE_PYTHON = "3.11"



def missing_build_tools() -> dict[str, str]:
    """{program: Debian package} of what building the image needs and is not installed."""
    missing = missing_tools()
    if shutil.which("mmdebstrap") is None:
        missing["mmdebstrap"] = "mmdebstrap"
    return missing


@dataclass(frozen=True)
class BaseSpec:
    """What goes into the locally made base image; its hash is the cache key."""

    suite: str = "bookworm"
    # python3-venv: the Dockerfile's build stage makes a venv with pip (ensurepip), as the public image can.
    # netbase (/etc/services, /etc/protocols) and ca-certificates: what the public slim image also carries.
    packages: tuple[str, ...] = ("python3", "python3-venv", "netbase", "ca-certificates")
    mirrors: tuple[str, ...] = (
        "deb http://deb.debian.org/debian bookworm main",
        "deb http://deb.debian.org/debian bookworm-updates main",
        "deb http://deb.debian.org/debian-security bookworm-security main",
    )
    # Documentation, manuals and translations are dropped, as in Debian's slim images.
    dpkg_options: tuple[str, ...] = (
        "path-exclude=/usr/share/man/*",
        "path-exclude=/usr/share/info/*",
        "path-exclude=/usr/share/locale/*",
        "path-exclude=/usr/share/doc/*",
        "path-include=/usr/share/doc/*/copyright",
    )

    def mmdebstrap_argv(self, output: Path) -> list[str]:
        # The merged-usr hook sets up /usr symlinks itself; otherwise apt picks the usrmerge package, which
        # drags perl (30 MB) into the image.
        argv = [
            "mmdebstrap",
            "--variant=essential",
            "--format=tar",  # not guessed from the name: the output is written under a temporary one
            "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
        ]
        argv.append("--include=" + ",".join(self.packages))
        argv += [f"--dpkgopt={opt}" for opt in self.dpkg_options]
        return [*argv, self.suite, str(output), *self.mirrors]

    def key(self) -> str:
        version = subprocess.run(["mmdebstrap", "--version"], capture_output=True, text=True, check=True).stdout
        payload = json.dumps({"argv": self.mmdebstrap_argv(Path("OUT")), "mmdebstrap": version.strip()})
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Step:
    """One step of a build: how long it took and whether it was served from the cache."""

    name: str
    seconds: float
    cached: bool
    detail: str = ""


@dataclass
class BuildReport:
    """What ``build_image`` did: the image, its size and the time of each step."""

    tag: str
    base: str
    wheelhouse: Path
    steps: list[Step] = field(default_factory=list)
    image_id: str = ""
    size_bytes: int = 0

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    @property
    def cold(self) -> bool:
        """True when no step came from a cache (a first build on this checkout)."""
        return not any(s.cached for s in self.steps)

    def summary(self) -> str:
        lines = [f"image {self.tag} ({self.image_id[:12]}): {self.size_bytes / 1e6:.1f} MB, base {self.base}"]
        for s in self.steps:
            state = "cached" if s.cached else "built"
            lines.append(f"  {s.name:<11} {s.seconds:7.1f} s  {state}{'  ' + s.detail if s.detail else ''}")
        lines.append(f"  {'total':<11} {self.seconds:7.1f} s")
        return "\n".join(lines)


def _timed(name: str, cached: bool, started: float, detail: str = "") -> Step:
    return Step(name, time.monotonic() - started, cached, detail)


def ensure_base(podman: Podman, spec: BaseSpec | None = None, cache_dir: Path = CACHE_DIR) -> tuple[str, Step]:
    """The local base image (made and imported only when missing); returns its reference and the step."""
    spec = spec or BaseSpec()
    started = time.monotonic()
    key = spec.key()
    ref = f"{BASE_REPOSITORY}:{key}"
    tarball = cache_dir / f"base-{key}.tar"
    cached = True
    if not tarball.is_file():
        cached = False
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = tarball.with_suffix(".tar.partial")
        log = cache_dir / f"base-{key}.log"
        with log.open("w") as out:
            # stdin: with no mirror on the command line mmdebstrap would read sources from it.
            result = subprocess.run(
                spec.mmdebstrap_argv(partial), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
            )
        if result.returncode != 0:
            partial.unlink(missing_ok=True)
            raise RuntimeError(f"mmdebstrap failed ({result.returncode}); its log: {log}\n{_tail(log)}")
        partial.rename(tarball)
        _drop_stale(cache_dir, "base-*", keep=(tarball, log))
    if not podman.image_exists(ref):
        cached = False
        podman.run("import", "--change", 'CMD ["python3"]', str(tarball), ref, timeout=300)
        # Bases made from older inputs: refused (and kept) while an image still builds on them.
        for old in podman.run("images", "--format", "{{.Repository}}:{{.Tag}}", BASE_REPOSITORY).stdout.split():
            if old != ref:
                podman.run("rmi", old, check=False)
    return ref, _timed("base", cached, started, f"{tarball.stat().st_size / 1e6:.0f} MB tarball")


def wheelhouse_platforms(machine: str | None = None) -> list[str]:
    """The manylinux tags a wheel may carry to install on Debian bookworm (glibc 2.36) on this architecture."""
    arch = machine or platform.machine()
    return [f"manylinux_2_{minor}_{arch}" for minor in (36, 34, 31, 28, 27, 24, 17, 12, 5)] + [
        f"manylinux2014_{arch}",
        f"manylinux2010_{arch}",
        f"manylinux1_{arch}",
    ]


def ensure_wheelhouse(locks: Sequence[Path] = LOCK_FILES, cache_dir: Path = CACHE_DIR) -> tuple[Path, Step]:
    """Wheels of every pinned distribution of ``locks`` for the image's Python, downloaded only when missing."""
    started = time.monotonic()
    platforms = wheelhouse_platforms()
    key_input = b"".join(lock.read_bytes() for lock in locks) + json.dumps([IMAGE_PYTHON, platforms]).encode()
    key = hashlib.sha256(key_input).hexdigest()[:16]
    target = cache_dir / f"wheelhouse-{key}"
    if target.is_dir():
        count = len(list(target.glob("*.whl")))
        return target, _timed("wheelhouse", True, started, f"{count} wheels")
    cache_dir.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=".partial-wheelhouse-", dir=cache_dir))
    argv = [
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--require-hashes", "--no-deps", "--only-binary=:all:",
        "--python-version", IMAGE_PYTHON, "--implementation", "cp",
        "--abi", "cp" + IMAGE_PYTHON.replace(".", ""), "--abi", "abi3", "--abi", "none",
        *(arg for tag in [*platforms, "any"] for arg in ("--platform", tag)),
        *(arg for lock in locks for arg in ("--requirement", str(lock))),
        "--dest", str(partial),
    ]  # fmt: skip
    # The machine's own pip settings (a find-links of its own, say) must not change what is downloaded.
    env = {k: v for k, v in os.environ.items() if k not in ("PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_REQUIRE_HASHES")}
    result = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        names = ", ".join(lock.name for lock in locks)
        raise RuntimeError(f"pip download of {names} failed ({result.returncode}):\n{result.stderr.strip()}")
    partial.rename(target)
    _drop_stale(cache_dir, "wheelhouse-*", keep=(target,))
    count = len(list(target.glob("*.whl")))
    return target, _timed("wheelhouse", False, started, f"{count} wheels")


def build_image(
    podman: Podman | None = None,
    *,
    tag: str = DEFAULT_TAG,
    base: str | None = None,
    cache_dir: Path = CACHE_DIR,
    extra_args: Sequence[str] = (),
) -> BuildReport:
    """Base (unless ``base`` names one), wheelhouse, then ``podman build`` of the Dockerfile as ``tag``."""
    podman = podman or Podman()
    steps: list[Step] = []
    if base is None:
        base, step = ensure_base(podman, cache_dir=cache_dir)
        steps.append(step)
    wheelhouse, step = ensure_wheelhouse(cache_dir=cache_dir)
    steps.append(step)

    started = time.monotonic()
    before = podman.run("image", "inspect", "--format", "{{.Id}}", tag, check=False).stdout.strip()
    log = cache_dir / "podman-build.log"
    argv = podman.argv(
        "build",
        *RUN_OPTIONS,
        "--file", str(DOCKERFILE),
        "--build-arg", f"BASE_IMAGE={base}",
        "--build-arg", f"WHEELHOUSE={WHEELHOUSE_MOUNT}",
        "--volume", f"{wheelhouse}:{WHEELHOUSE_MOUNT}:ro",
        "--tag", tag,
        *extra_args,
        str(REPO_ROOT),
    )  # fmt: skip
    with log.open("w") as out:
        result = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"podman build failed ({result.returncode}); its log: {log}\n{_tail(log, 60)}")
    image = podman.inspect_image(tag)
    report = BuildReport(tag=tag, base=base, wheelhouse=wheelhouse, image_id=image["Id"], size_bytes=image["Size"])
    reused = image["Id"] == before
    if before and not reused:
        # The previous build of this tag is untagged now; removing it also frees its unshared parent layers
        # (the 70 MB venv layer), so edit-and-rebuild cycles do not fill the disk. Kept if something uses it.
        podman.run("rmi", before, check=False)
    steps.append(_timed("image", reused, started, "unchanged" if reused else "new image"))
    report.steps = steps
    return report


def _drop_stale(cache_dir: Path, pattern: str, keep: Sequence[Path]) -> None:
    """Removes cache entries made from other inputs: only the current key's entry is ever used again."""
    for path in cache_dir.glob(pattern):
        if path in keep:
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
