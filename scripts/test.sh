#!/usr/bin/env bash
# Every check CI runs, in one command: ruff, mypy, import-linter, then pytest (unit and e2e tests; the e2e
# tests run a real etcd + kube-apiserver + kube-controller-manager built from Go modules, and the image test
# builds the Dockerfile with podman and runs it against them).
# First scripts/setup.sh, idempotent: installs the missing Debian packages (scripts/install-system-packages.sh),
# creates the venv / reinstalls the project only when pyproject.toml changed, and builds the control-plane
# binaries only when they are missing (tests/cluster/build.sh). Arguments go to pytest (e.g. -m 'not image').
# Exits non-zero if any check fails, if pytest ran no test at all (its exit code 5), or if a process started
# by the tests outlives them.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin
bash scripts/setup.sh

failed=()
run() {
    echo "==> $*"
    if ! "$@"; then failed+=("$1"); fi
}

run .venv/bin/ruff check .
# mypy gets the configured directories that exist (a missing one is an error for mypy).
mypy_paths=()
for dir in scheduler tests bench examples/plugins; do [[ -d $dir ]] && mypy_paths+=("$dir"); done
run .venv/bin/mypy "${mypy_paths[@]}"
run .venv/bin/lint-imports

echo "==> pytest"
# Every process pytest starts inherits this marker, so leftovers can be told from processes of others
# (e.g. a `python -m tests.cluster up` in another terminal).
run_marker=PYSCHEDULER_TEST_RUN=$$-$RANDOM$RANDOM
set +e
env "$run_marker" .venv/bin/python -m pytest "$@"
status=$?
set -e
if ((status == 5)); then
    echo "test.sh: pytest collected no tests" >&2
    failed+=(pytest)
elif ((status != 0)); then
    failed+=(pytest)
fi

# No process started by the tests may outlive them: none with the marker in its environment, and none with
# it in its command line (podman's conmon gets an environment of its own; test containers are named after the
# marker: tests/e2e/test_image.py).
leftovers=()
for proc in /proc/[0-9]*; do
    if grep -qaxz -- "$run_marker" "$proc/environ" 2>/dev/null ||
        grep -qaF -- "${run_marker#*=}" "$proc/cmdline" 2>/dev/null; then
        leftovers+=("${proc#/proc/}")
    fi
done
if ((${#leftovers[@]})); then
    echo "test.sh: processes left behind by the tests:" >&2
    ps -o pid,args -p "$(IFS=,; echo "${leftovers[*]}")" >&2 || true
    failed+=(leftover-processes)
fi

if ((${#failed[@]})); then
    echo "test.sh: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "test.sh: all checks passed"
