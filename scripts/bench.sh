#!/usr/bin/env bash
# The whole end-to-end comparison in one command, from a fresh checkout: pyscheduler vs upstream kube-scheduler
# (same release as the apiserver) on one real etcd + kube-apiserver. See docs/benchmarks.md. Five parts, each
# one `python -m bench.e2e` invocation (its own control plane), 3 repeats each:
#
#   create   the create method (pods created while the scheduler runs), workloads basic, affinity, daemonset,
#            1000 nodes / 3000 measured pods, plus the in-process algorithm figure at 5000 nodes
#   backlog  backlog + ceiling methods, workload basic, 1000 nodes / 4000 measured pods
#   density  the same with 30 pods per node bound before the scheduler starts (30,000 pods)
#   xl       backlog + ceiling, workload basic, 5000 nodes / 10000 measured pods
#   neighbour  the backlog part again beside one CPU-burning process (bench.e2e --neighbours 1)
#
# At the end it prints every part's table again, together. Raw samples go to
# bench/results/<timestamp>-<part>.json (gitignored).
#
#   bash scripts/bench.sh                            # all five parts, full size: ~29 min (create 7, backlog 3.5, density 5,
#                                                    # xl 9, neighbour 4)
#   bash scripts/bench.sh --quick                    # create, backlog, density at 100 nodes, 1 repeat (~3 min)
#   bash scripts/bench.sh --parts backlog,xl         # only these parts
#   bash scripts/bench.sh --size quick --repeats 1   # as before: --size/--repeats apply to every part, and an
#                                                    # explicit --size skips xl (whose size is its point)
#   bash scripts/bench.sh --workloads basic --keep   # any other argument goes to every bench.e2e invocation
#
# Through scripts/setup.sh (shared with scripts/test.sh) it creates/refreshes .venv only when needed and builds the
# control-plane binaries only when they are missing (tests/cluster/build.sh).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH=$PATH:/usr/local/go/bin

parts=create,backlog,density,xl,neighbour
size=full
repeats=3
size_given=0
extra=()
while (($#)); do
    case "$1" in
        --quick) size=quick repeats=1 size_given=1 ;;
        --parts) parts=$2; shift ;;
        --parts=*) parts=${1#*=} ;;
        --size) size=$2 size_given=1; shift ;;
        --size=*) size=${1#*=} size_given=1 ;;
        --repeats) repeats=$2; shift ;;
        --repeats=*) repeats=${1#*=} ;;
        *) extra+=("$1") ;;
    esac
    shift
done

bash scripts/setup.sh

mkdir -p bench/results
stamp=$(date -u +%Y%m%dT%H%M%SZ)
echo "bench.sh: machine: $(nproc) CPUs, $(free -h | awk '/^Mem:/ {print $2}') RAM, load $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
outputs=()

run_part() {  # name, then bench.e2e arguments (the pass-through ones go last, so they win)
    local name=$1
    shift
    local out=bench/results/$stamp-$name.json
    echo "bench.sh: part $name: bench.e2e $* ${extra[*]}" >&2
    if .venv/bin/python -m bench.e2e "$@" --json "$out" "${extra[@]}"; then :; else status=1; fi
    [[ -f $out ]] && outputs+=("$name=$out")
    return 0
}

for part in ${parts//,/ }; do
    case "$part" in
        create)
            run_part create --size "$size" --repeats "$repeats" --methods create \
                --workloads basic,affinity,daemonset --inprocess-nodes 5000 ;;
        backlog)
            run_part backlog --size "$size" --repeats "$repeats" --methods backlog,ceiling --workloads basic ;;
        density)
            run_part density --size "$size" --repeats "$repeats" --methods backlog,ceiling --workloads basic \
                --density 30 ;;
        xl)
            if ((size_given)); then
                echo "bench.sh: part xl skipped (--size/--quick given: its 5000 nodes are its point)" >&2
            else
                run_part xl --size xl --repeats "$repeats" --methods backlog,ceiling --workloads basic
            fi ;;
        neighbour)
            run_part neighbour --size "$size" --repeats "$repeats" --methods backlog,ceiling --workloads basic \
                --neighbours 1 ;;
        *) echo "bench.sh: unknown part '$part' (create, backlog, density, xl, neighbour)" >&2; exit 2 ;;
    esac
done

echo
echo "==================== all parts ($stamp) ===================="
for entry in "${outputs[@]}"; do
    .venv/bin/python - "${entry%%=*}" "${entry#*=}" <<'EOF'
import json
import sys

name, path = sys.argv[1], sys.argv[2]
doc = json.load(open(path))
print(f"\n## {name} ({path}; {doc['wall_seconds'] / 60:.1f} min)\n")
print(doc["table"])
inprocess = doc.get("inprocess")
if inprocess:
    print(
        f"\nIn-process (algorithm only): {inprocess['nodes']} nodes, {inprocess['pods']} pods: "
        f"median {inprocess['median']:.0f} pods/s, peak RSS {inprocess['peak_rss_mib']:.0f} MiB"
    )
EOF
done
exit $status
