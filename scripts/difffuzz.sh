#!/usr/bin/env bash
# The differential fuzz in one command: random clusters scheduled by the upstream kube-scheduler (same release as
# the apiserver) and by pyscheduler on one real etcd + kube-apiserver, every difference in feasibility, message or
# score reported with its seed (bench/difffuzz.py, tests/diff/). Exits 1 when any difference was found.
#
#   bash scripts/difffuzz.sh                         # 500 scenarios from seed 1 (~7 min on 2 loaded cores)
#   bash scripts/difffuzz.sh --count 20 --seed 900   # extra args go to `python -m bench.difffuzz`
#
# The report (summary and every difference) goes to bench/results/difffuzz-<timestamp>.json (gitignored).
# Results and the differences found so far: docs/difffuzz.md.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin
bash scripts/setup.sh

mkdir -p bench/results
out=bench/results/difffuzz-$(date -u +%Y%m%dT%H%M%SZ).json
exec .venv/bin/python -m bench.difffuzz --count 500 --seed 1 --features owners,dra --json "$out" "$@"
