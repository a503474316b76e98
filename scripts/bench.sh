#!/usr/bin/env bash
# The whole end-to-end comparison in one command, from a fresh checkout: pyscheduler vs upstream kube-scheduler
# (same release as the apiserver) on one real etcd + kube-apiserver, workloads basic, affinity and daemonset,
# 3 repeats each, plus the in-process algorithm figure at 5000 nodes. Prints the medians table; raw samples go
# to bench/results/<timestamp>.json (gitignored). See docs/benchmarks.md.
#
#   bash scripts/bench.sh                      # full size (1000 nodes / 3000 measured pods), ~20-25 min
#   bash scripts/bench.sh --size quick --repeats 1   # extra args go to `python -m bench.e2e`
#
# Through scripts/setup.sh (shared with scripts/test.sh) it creates/refreshes .venv only when needed and builds the
# control-plane binaries only when they are missing (tests/cluster/build.sh).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin
bash scripts/setup.sh

mkdir -p bench/results
out=bench/results/$(date -u +%Y%m%dT%H%M%SZ).json
echo "bench.sh: machine: $(nproc) CPUs, $(free -h | awk '/^Mem:/ {print $2}') RAM, load $(cut -d' ' -f1-3 /proc/loadavg)"
exec .venv/bin/python -m bench.e2e --size full --repeats 3 --workloads basic,affinity,daemonset \
    --inprocess-nodes 5000 --json "$out" "$@"
