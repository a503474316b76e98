"""The end-to-end benchmark's logic that needs no server (bench/e2e.py): the order of the runs, the ceiling's
round-robin binding targets, the pods bound at creation (--density, backlog init pods) and the fit check,
ratios and ceiling fractions, and the rendered tables."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from bench.e2e import (
    BACKLOG,
    CEILING,
    CREATE,
    PHASE_LABEL,
    PREBOUND_SCHEDULER,
    PYSCHEDULER,
    SIZES,
    UPSTREAM,
    WORKLOADS,
    Neighbours,
    NoRoom,
    RunContext,
    RunResult,
    Size,
    _cpu_of,
    _node_status,
    ceiling_fraction,
    check_fits,
    check_placement,
    density_pods,
    plan_bindings,
    prebound_layout,
    ratio,
    render_backlog_table,
    render_table,
    run_order,
    usage,
)

JSON = dict[str, Any]
CTX = RunContext("basic", "pyscheduler", "ns", "n-", "run")


def _nodes(count: int, workload: str = "basic") -> list[JSON]:
    return [WORKLOADS[workload].node(CTX, i) | _node_status() for i in range(count)]


def _pods(count: int) -> list[JSON]:
    return WORKLOADS["basic"].measured_pods(CTX, Size(nodes=1, init_pods=0, pods=count))


def _result(method: str, scheduler: str, **figures: Any) -> RunResult:
    base: JSON = {
        "workload": "basic",
        "scheduler": scheduler,
        "repeat": 0,
        "nodes": 100,
        "init_pods": 100,
        "pods": 500,
        "samples": [],
        "average": None,
        "p50": None,
        "p90": None,
        "p99": None,
        "first_created_to_last_bound_s": None,
        "create_seconds": 1.0,
        "bound": 600,
        "all_bound": True,
        "overcommitted_nodes": 0,
        "misplaced_pods": 0,
        "cpu_seconds": 0.0,
        "cpu_seconds_measured": 0.0,
        "peak_rss_mib": 0.0,
        "apiserver_cpu_seconds_measured": 0.0,
        "driver_cpu_seconds_measured": 0.0,
        "method": method,
    }
    return RunResult(**(base | figures))


# --- order ---------------------------------------------------------------------------------------------------


def test_run_order_alternates_which_scheduler_goes_first() -> None:
    both = [UPSTREAM, PYSCHEDULER]
    assert [run_order(both, r)[0] for r in range(4)] == [UPSTREAM, PYSCHEDULER, UPSTREAM, PYSCHEDULER]
    with_ceiling = [UPSTREAM, PYSCHEDULER, CEILING]
    assert run_order(with_ceiling, 0) == with_ceiling
    assert run_order(with_ceiling, 1) == [CEILING, PYSCHEDULER, UPSTREAM]
    assert run_order([PYSCHEDULER], 1) == [PYSCHEDULER]


# --- round-robin binding targets ---------------------------------------------------------------------------


def test_plan_bindings_is_round_robin() -> None:
    nodes = _nodes(3)
    names = [n["metadata"]["name"] for n in nodes]
    assert plan_bindings(_pods(5), nodes, {}, WORKLOADS["basic"].allowed) == [names[i] for i in (0, 1, 2, 0, 1)]


def test_plan_bindings_skips_full_nodes_and_counts_its_own_placements() -> None:
    nodes = _nodes(3)
    names = [n["metadata"]["name"] for n in nodes]
    # node 0 has 109 of its 110 pods, node 1 has 3950m of its 4000m CPU: one pod still fits on node 0, none on 1.
    used = {names[0]: [0, 0, 109], names[1]: [3950, 0, 1]}
    assert plan_bindings(_pods(4), nodes, used, WORKLOADS["basic"].allowed) == [
        names[0],
        names[2],
        names[2],
        names[2],
    ]
    assert used[names[0]] == [0, 0, 109]  # the caller's usage is not changed


def test_plan_bindings_keeps_to_the_nodes_the_workload_allows() -> None:
    w = WORKLOADS["affinity"]  # nodes 3, 7: tainted; g0 = even nodes; pod 0 needs g0, pod 1 tolerates the taint
    nodes = [w.node(CTX, i) | _node_status() for i in range(8)]
    pods = w.measured_pods(CTX, Size(nodes=8, init_pods=0, pods=8))
    targets = plan_bindings(pods, nodes, {}, w.allowed)
    by_name = {n["metadata"]["name"]: n for n in nodes}
    assert all(w.allowed(p, by_name[t]) for p, t in zip(pods, targets, strict=True))
    for p, t in zip(pods, targets, strict=True):
        p["spec"]["nodeName"] = t
    assert check_placement(w, nodes, pods) == (0, 0)


def test_plan_bindings_raises_when_a_pod_fits_nowhere() -> None:
    nodes = _nodes(2)
    full = {n["metadata"]["name"]: [0, 0, 110] for n in nodes}
    with pytest.raises(NoRoom):
        plan_bindings(_pods(1), nodes, full, WORKLOADS["basic"].allowed)


# --- pods bound at creation and the fit check -------------------------------------------------------------


def test_density_pods_are_bound_evenly_with_small_requests() -> None:
    pods = density_pods(CTX, nodes=4, per_node=3)
    assert len(pods) == 12
    per_node = usage(pods)
    assert sorted(per_node) == [CTX.node_name(i) for i in range(4)]
    assert all(v == [30, 3 * 50 * 1024**2, 3] for v in per_node.values())
    assert {p["spec"]["schedulerName"] for p in pods} == {PREBOUND_SCHEDULER}
    assert {p["metadata"]["labels"][PHASE_LABEL] for p in pods} == {"density"}


def test_prebound_layout_binds_init_pods_only_for_the_backlog() -> None:
    size = SIZES["quick"]
    w = WORKLOADS["affinity"]
    nodes, created = prebound_layout(w, CTX, size, density=2, bind_init=False)
    assert len(nodes) == 100 and len(created) == 200
    nodes, created = prebound_layout(w, CTX, size, density=2, bind_init=True)
    init = [p for p in created if p["metadata"]["labels"][PHASE_LABEL] == "init"]
    assert len(init) == size.init_pods and all(p["spec"]["nodeName"] for p in init)
    # the init pods avoid the tainted nodes; the density pods sit on every node and are not "misplaced"
    assert check_placement(w, nodes, created) == (0, 0)


def test_check_fits_accepts_the_sizes_with_30_pods_per_node_and_refuses_a_full_node() -> None:
    for name in ("quick", "full"):
        for method in (CREATE, BACKLOG):
            for w in ("basic", "affinity", "daemonset"):
                check_fits(WORKLOADS[w], CTX, SIZES[name].for_method(method), 30, method != CREATE)
    # 105 of 110 pods taken on each of 100 nodes: 500 free slots for 100 init + 500 measured pods
    with pytest.raises(NoRoom):
        check_fits(WORKLOADS["basic"], CTX, SIZES["quick"], 105, bind_init=True)


def test_sizes() -> None:
    assert SIZES["xl"].nodes == 5000 and SIZES["xl"].for_method(BACKLOG).pods == 10000
    assert SIZES["full"].for_method(CREATE).pods == 3000
    assert SIZES["full"].for_method(BACKLOG).pods == 4000
    assert SIZES["full"].for_method(CEILING).nodes == 1000
    assert SIZES["quick"].for_method(BACKLOG) == SIZES["quick"]


# --- ratios, fractions, tables ----------------------------------------------------------------------------


def test_ratio() -> None:
    assert ratio(3.0, 2.0) == "1.50x"
    assert ratio(None, 2.0) == "-"
    assert ratio(1.0, None) == "-"
    assert ratio(1.0, 0.0) == "-"


def test_ceiling_fraction_of_a_rate_and_of_a_duration() -> None:
    ceiling = {"drain_pods_per_s": 1000.0, "first_to_last_bound_s": 0.5}
    assert ceiling_fraction("rate", 250.0, ceiling) == 0.25
    assert ceiling_fraction("time", 2.0, ceiling) == 0.25  # 2 s where the ceiling needs 0.5 s
    assert ceiling_fraction(None, 2.0, ceiling) is None
    assert ceiling_fraction("rate", 250.0, None) is None
    assert ceiling_fraction("time", None, ceiling) is None
    assert ceiling_fraction("time", 0.0, ceiling) is None
    assert ceiling_fraction("rate", 250.0, {"drain_pods_per_s": None}) is None


def _backlog(scheduler: str, first_to_last: float, **more: Any) -> RunResult:
    return _result(
        BACKLOG,
        scheduler,
        start_to_last_bound_s=first_to_last + 2,
        ready_to_last_bound_s=first_to_last + 0.5,
        first_to_last_bound_s=first_to_last,
        drain_pods_per_s=500 / first_to_last,
        cpu_ms_per_pod=2.0,
        cpu_ms_per_pod_with_events=2.5,
        cpu_seconds=5.0,
        peak_rss_mib=100.0,
        apiserver_ms_per_pod=4.0,
        **more,
    )


def _row(table: str, scheduler: str) -> list[str]:
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 1 and cells[1] == scheduler:
            return cells
    raise AssertionError(f"no {scheduler} row in\n{table}")


def test_backlog_table_shows_medians_ratios_and_fractions_of_the_ceiling() -> None:
    results = [
        _backlog(UPSTREAM, 2.0),
        _backlog(UPSTREAM, 4.0),
        _backlog(UPSTREAM, 3.0, repeat=2),  # median first->last 3.0 s, 167 pods/s
        _backlog(PYSCHEDULER, 1.5),
        _backlog(PYSCHEDULER, 1.5),
        _backlog(PYSCHEDULER, 9.0, all_bound=False),  # median 1.5 s; one run not ok
        _result(CEILING, CEILING, first_to_last_bound_s=0.5, drain_pods_per_s=1000.0, apiserver_ms_per_pod=3.0),
        _result(CREATE, UPSTREAM, average=99.0),  # another method: not in this table
    ]
    table = render_backlog_table(results, ["basic"], SIZES["quick"], density=30)
    assert "30 pods per node" in table and "medians of 3 runs" in table
    up = _row(table, UPSTREAM)
    # start->last 5.0 s: the ceiling's 0.5 s is 10% of it; pods/s 167 of 1000
    assert up[2:6] == ["5.0 (10%)", "3.5 (14%)", "3.0 (17%)", "167 (17%)"]
    assert up[6:] == ["2.00", "2.50", "5.0", "100", "4.00", "3/3"]
    py = _row(table, PYSCHEDULER)
    assert py[4:6] == ["1.5 (33%)", "333 (33%)"] and py[-1] == "2/3"
    assert _row(table, "py/upstream")[2:6] == ["0.70x", "0.57x", "0.50x", "2.00x"]
    ceiling = _row(table, CEILING)
    assert ceiling[2:] == ["-", "-", "0.5", "1000", "-", "-", "-", "-", "3.00", "1/1"]
    assert "99" not in table


def test_backlog_table_without_a_ceiling_shows_no_fractions() -> None:
    table = render_backlog_table([_backlog(UPSTREAM, 2.0), _backlog(PYSCHEDULER, 1.0)], ["basic"], SIZES["quick"])
    assert "%)" not in "\n".join(line for line in table.splitlines() if line.startswith("|"))
    assert _row(table, "py/upstream")[5] == "2.00x"


def test_create_table_keeps_its_columns_and_ignores_the_backlog_runs() -> None:
    results = [
        _result(CREATE, UPSTREAM, average=100.0, p50=90.0, cpu_seconds=10.0),
        _result(CREATE, PYSCHEDULER, average=150.0, p50=90.0, cpu_seconds=5.0),
        _backlog(UPSTREAM, 2.0),
    ]
    table = render_table(results, ["basic"], SIZES["quick"])
    assert table.splitlines()[0] == "100 nodes, 100 init pods, 500 measured pods; medians of 1 runs"
    assert _row(table, "scheduler")[2:4] == ["avg pods/s", "p50"]
    assert _row(table, UPSTREAM)[2] == "100"
    assert _row(table, "py/upstream")[2:4] == ["1.50x", "1.00x"]
    assert "with 30" not in render_table(results, ["basic"], SIZES["quick"], density=30)
    assert "30 pods per node bound at creation" in render_table(results, ["basic"], SIZES["quick"], density=30)


def test_neighbours_burn_cpu_until_stopped() -> None:
    """--neighbours N starts N busy processes; stopping them reports the CPU they took and ends them."""
    burners = Neighbours(1)
    burners.start()
    pids = [p.pid for p in burners._procs]
    deadline = time.monotonic() + 20
    while _cpu_of(pids[0]) < 0.05 and time.monotonic() < deadline:  # the machine may be busy
        time.sleep(0.1)
    assert burners.stop() >= 0.05
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert Neighbours(0).stop() == 0.0
