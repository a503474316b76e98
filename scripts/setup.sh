#!/usr/bin/env bash
# Brings a checkout to the state the tests and benchmarks need, idempotently, on a fresh Debian 12 machine
# with Python 3.11 and Go: the Debian packages the tests use (scripts/install-system-packages.sh: only the
# missing ones), .venv with the project and its test extra (reinstalled only when pyproject.toml changed) and
# the control-plane binaries (built only when missing, tests/cluster/build.sh). Called by scripts/test.sh and
# scripts/bench.sh. The image test builds its own inputs, cached under _build/image (tests/image/build.py).
#
# Usage: bash scripts/setup.sh [--no-control-plane]   (scripts/build-image.sh needs no control plane)
set -euo pipefail

control_plane=1
if [[ ${1:-} == --no-control-plane ]]; then control_plane=0; fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The Go toolchain: /usr/local/go on these machines. The pinned modules need Go 1.26 (go1.26.8 is
# installed), so GOTOOLCHAIN stays as it is; a module needing 1.27 would require GOTOOLCHAIN=go1.27.3 here.
export PATH=$PATH:/usr/local/go/bin

bash scripts/install-system-packages.sh

python=${PYTHON:-python3}
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "setup.sh: Python >= 3.11 is required, found $("$python" --version 2>&1)" >&2
    exit 1
}
if [[ ! -x .venv/bin/python ]]; then
    echo "setup.sh: creating .venv with $($python --version)"
    "$python" -m venv .venv
fi
stamp=.venv/.pyscheduler-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    echo "setup.sh: installing the project and its test dependencies into .venv"
    # compat: a .pth naming the checkout, which mypy follows (the default finder hook it cannot: PEP 561)
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]' --config-settings editable_mode=compat
    echo "$want" >"$stamp"
fi

if ((control_plane)); then
    start=$SECONDS
    bash tests/cluster/build.sh
    echo "setup.sh: control plane ready after $((SECONDS - start)) s"
fi
