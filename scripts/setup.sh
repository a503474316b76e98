#!/usr/bin/env bash
# Brings a checkout to the state the tests and benchmarks need, idempotently: .venv with the project and its
# test extra (reinstalled only when pyproject.toml changed) and the control-plane binaries (built only when
# missing, tests/cluster/build.sh). Called by scripts/test.sh and scripts/bench.sh.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The Go toolchain: /usr/local/go on these machines. The pinned modules need Go 1.26 (go1.26.8 is
# installed), so GOTOOLCHAIN stays as it is; a module needing 1.27 would require GOTOOLCHAIN=go1.27.3 here.
export PATH=$PATH:/usr/local/go/bin

python=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
    echo "setup.sh: creating .venv with $($python --version)"
    "$python" -m venv .venv
fi
stamp=.venv/.pyscheduler-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    echo "setup.sh: installing the project and its test dependencies into .venv"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
    echo "$want" >"$stamp"
fi

bash tests/cluster/build.sh
