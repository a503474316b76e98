"""The Dockerfile, read statically: pinned base, pinned and hash-checked Python installs, a lean non-root runtime.

The image is also built and run for real by tests/e2e/test_image.py (podman); these checks hold for what a
user builds with the default, public base too, and they run in a second with no container engine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
CHART_VALUES = REPO / "helm" / "pyscheduler" / "values.yaml"

Instruction = tuple[str, str]
"""(INSTRUCTION, arguments) of one logical Dockerfile line."""

BUILD_TOOLS = re.compile(
    r"\b(gcc|g\+\+|clang|make|build-essential|cmake|python3?-dev|libc6?-dev|git|curl|wget|cargo|rustc)\b"
)
PINNED_BASE = re.compile(r"python:3\.11\.\d+-slim-bookworm@sha256:[0-9a-f]{64}")


def logical_lines() -> list[Instruction]:
    """Every instruction, continuation lines joined and comments dropped."""
    lines: list[Instruction] = []
    buf = ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line.startswith("#") or (not buf and not line):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        instruction, _, args = (buf + line).partition(" ")
        lines.append((instruction.upper(), args.strip()))
        buf = ""
    return lines


def global_args() -> dict[str, str]:
    """The ARGs declared before the first FROM, with their defaults."""
    args: dict[str, str] = {}
    for instruction, rest in logical_lines():
        if instruction == "FROM":
            break
        if instruction == "ARG":
            name, _, default = rest.partition("=")
            args[name] = default
    return args


def stages() -> list[tuple[str, list[Instruction]]]:
    """[(FROM image with global ARGs substituted, [instructions of the stage])]."""
    defaults = global_args()
    found: list[tuple[str, list[Instruction]]] = []
    for instruction, rest in logical_lines():
        if instruction == "FROM":
            image = re.sub(r"\$\{(\w+)\}", lambda m: defaults[m.group(1)], rest.split()[0])
            found.append((image, []))
        elif found:
            found[-1][1].append((instruction, rest))
    return found


def test_both_stages_start_from_the_pinned_base_argument() -> None:
    """BASE_IMAGE defaults to the public python image pinned by exact tag and digest; every stage uses it."""
    base = global_args().get("BASE_IMAGE", "")
    assert PINNED_BASE.fullmatch(base), f"BASE_IMAGE must be python:3.11.N-slim-bookworm@sha256:..., got {base!r}"
    found = stages()
    assert len(found) >= 2, "the Dockerfile must be multi-stage"
    assert all(image == base for image, _ in found), [image for image, _ in found]


def test_python_installs_are_pinned_and_hash_checked() -> None:
    """Every pip install takes a lock file with --require-hashes, or the wheel just built, with no index."""
    installs = [rest for _, instructions in stages() for ins, rest in instructions if ins == "RUN" and "pip" in rest]
    commands = [c for rest in installs for c in re.split(r"&&|;", rest) if re.search(r"\bpip\b.*\binstall\b", c)]
    assert commands, "no pip install in the Dockerfile"
    for command in commands:
        locked = "--require-hashes" in command and re.search(r"-r requirements(-build)?\.lock\b", command)
        local_wheel = "--no-index" in command and "/tmp/dist/pyscheduler-" in command
        assert locked or local_wheel, f"unpinned install: {command.strip()}"
        assert "--only-binary=:all:" in command or local_wheel, f"may compile from an sdist: {command.strip()}"


def test_runtime_stage_is_non_root_lean_and_runs_the_scheduler() -> None:
    """Numeric non-root USER equal to the chart's, ENTRYPOINT pyscheduler run, nothing installed, no build tools."""
    _, instructions = stages()[-1]
    users = [rest for ins, rest in instructions if ins == "USER"]
    assert users, "the final stage must set USER"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) != 0, f"USER must be a numeric non-root UID, got {users[-1]}"
    security = yaml.safe_load(CHART_VALUES.read_text(encoding="utf-8"))["podSecurityContext"]
    assert (int(uid), int(gid)) == (security["runAsUser"], security["runAsGroup"])

    entrypoints = [rest for ins, rest in instructions if ins == "ENTRYPOINT"]
    assert entrypoints and json.loads(entrypoints[-1]) == ["pyscheduler", "run"]
    for ins, rest in instructions:
        if ins == "RUN":
            assert not re.search(r"\b(apt-get|apt|apk|pip\d?)\s+install\b", rest), f"install in final stage: {rest}"
            assert not BUILD_TOOLS.search(rest), f"build tool in final stage: {rest}"
        if ins in ("COPY", "ADD"):
            assert rest.startswith("--from="), f"final stage copies from the build context: {rest}"


def test_build_context_holds_what_the_build_stage_copies() -> None:
    """Each COPY source exists and is let through .dockerignore, which excludes everything else."""
    ignore = DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
    assert "**" in ignore, ".dockerignore should exclude everything but the sources"
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    copied: set[str] = set()
    for _, instructions in stages()[:-1]:
        for ins, rest in instructions:
            if ins != "COPY" or rest.startswith("--from="):
                continue
            *sources, _dest = rest.split()
            copied.update(s.rstrip("/") for s in sources)
    for source in copied:
        assert (REPO / source).exists(), source
        assert source in allowed, f"{source} is excluded by .dockerignore"
    assert {"requirements.lock", "requirements-build.lock", "pyproject.toml", "scheduler"} <= copied
    # The entry point the image runs is the console script pyproject.toml declares.
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^pyscheduler = "scheduler\.cli:main"$', pyproject, re.MULTILINE)
