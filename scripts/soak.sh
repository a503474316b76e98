#!/usr/bin/env bash
# Soak test: create/delete churn of normal, unschedulable and refused pods against a real control plane for a
# bounded time (default 20 minutes), reporting pyscheduler's RSS over time and the size of every per-pod and
# per-node structure (baseline / peak / after the drain). Exits 1 when a structure is not back at its baseline.
# See docs/robustness.md for the figures.
#
#   bash scripts/soak.sh                          # 20 minutes, 10 pods/s, each pod lives 30 s
#   bash scripts/soak.sh --minutes 60 --rate 20   # extra args go to `python -m bench.soak`
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin
bash scripts/setup.sh
exec .venv/bin/python -m bench.soak "$@"
