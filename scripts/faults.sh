#!/usr/bin/env bash
# The long fault suite: tests/e2e/test_faults.py at the fault run's size (200 nodes, 1500 pods per scenario),
# printing each scenario's recovery times. The default `bash scripts/test.sh` runs the same scenarios small.
#
#   bash scripts/faults.sh                         # long version, a fresh seed (printed per scenario)
#   PYSCHEDULER_FAULTS_SEED=123 bash scripts/faults.sh -k etcd   # replay one scenario; extra args go to pytest
#   PYSCHEDULER_FAULTS_REPORT=faults.json bash scripts/faults.sh # also write the outcomes as JSON
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin
bash scripts/setup.sh
export PYSCHEDULER_FAULTS=${PYSCHEDULER_FAULTS:-long}
exec .venv/bin/python -m pytest -s -p no:cacheprovider tests/e2e/test_faults.py "$@"
