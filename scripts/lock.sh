#!/usr/bin/env bash
# Regenerates the image's lock files: every Python distribution the Dockerfile installs, pinned to one version
# with the sha256 of every file PyPI publishes for it (so `pip install --require-hashes` takes the wheel of any
# platform and nothing else):
#   requirements.lock        pyscheduler's runtime dependencies (pyproject.toml [project].dependencies and
#                            what they need): exactly what the image's /opt/venv holds besides pyscheduler;
#   requirements-build.lock  its build requirements ([build-system].requires: setuptools, wheel and theirs),
#                            installed in a throwaway build venv that builds pyscheduler's wheel.
#
# Run it after changing [project].dependencies or [build-system].requires in pyproject.toml, and commit the
# result; tests/image/test_lock.py fails when the lock no longer satisfies pyproject.toml.
#
# Usage: bash scripts/lock.sh [--upgrade]    (--upgrade: newest allowed versions instead of keeping pins)
# Needs PyPI. pip-tools runs from its own venv in _build/lock-venv (pinned below), never from .venv.
set -euo pipefail

PIP_TOOLS_VERSION=7.6.2

cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv=_build/lock-venv
if [[ ! -x $venv/bin/pip-compile ]] || [[ $($venv/bin/pip-compile --version) != *"$PIP_TOOLS_VERSION"* ]]; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pip-tools==$PIP_TOOLS_VERSION"
fi
upgrade=()
if [[ ${1:-} == --upgrade ]]; then upgrade=(--upgrade); fi
# The header names this script as the command that made the file.
compile() {
    CUSTOM_COMPILE_COMMAND="bash scripts/lock.sh" "$venv/bin/pip-compile" --quiet "${upgrade[@]}" \
        --generate-hashes --allow-unsafe --strip-extras \
        --no-emit-index-url --no-emit-find-links --no-emit-trusted-host "$@" pyproject.toml
}
compile --output-file requirements.lock
compile --all-build-deps --only-build-deps --output-file requirements-build.lock
for lock in requirements.lock requirements-build.lock; do
    echo "lock.sh: wrote $lock ($(grep -c '^[a-z]' "$lock") distributions)"
done
