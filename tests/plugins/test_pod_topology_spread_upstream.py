"""PodTopologySpread against upstream's own test tables (filtering_test.go, scoring_test.go of v1.37.2).

The tables (inputs and upstream's expected results) are dumped from the upstream test files by
tests/plugins/upstream/dump_pts_tables.py into pod_topology_spread_tables.json; each case runs here under
upstream's case name. Cases that switch off a feature gate which is on in v1.37 (NodeInclusionPolicy,
MatchLabelKeys) while using that feature test behaviour v1.37 no longer has, and are left out (the last test
names them).
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code
from scheduler.framework.types import NodeInfo, PodInfo, parse_node, parse_pod
from scheduler.plugins.pod_topology_spread.args import Args, parse_args
from scheduler.plugins.pod_topology_spread.common import (
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    Constraint,
    selector_string,
)
from scheduler.plugins.pod_topology_spread.filtering import PreFilterState
from scheduler.plugins.pod_topology_spread.plugin import PodTopologySpread
from scheduler.plugins.pod_topology_spread.scoring import PreScoreState, topology_normalizing_weight
from scheduler.testing import StaticHandle

JSON = dict[str, Any]
TABLES: JSON = json.loads((Path(__file__).parent / "upstream" / "pod_topology_spread_tables.json").read_text())


def _uses(pods: Iterable[JSON | None], field: str) -> bool:
    for pod in pods:
        for c in ((pod or {}).get("spec") or {}).get("topologySpreadConstraints") or []:
            if c.get(field):
                return True
    return False


def _gated_out(case: JSON, *pod_keys: str) -> bool:
    """A case that turns off a v1.37-default gate whose feature its pods use."""
    pods = [case.get(k) for k in pod_keys]
    if not case.get("enableNodeInclusionPolicy") and (
        _uses(pods, "nodeAffinityPolicy") or _uses(pods, "nodeTaintsPolicy")
    ):
        return True
    return not case.get("enableMatchLabelKeys", True) and _uses(pods, "matchLabelKeys")


GATED_OUT: set[tuple[str, str]] = set()


def cases(test: str, *pod_keys: str) -> list[Any]:
    """The upstream cases of `test`, under upstream's names; gated-out cases are recorded, not run."""
    out = []
    for case in TABLES[test]:
        if _gated_out(case, *pod_keys):
            GATED_OUT.add((test, case["name"]))
            continue
        out.append(pytest.param(case, id=case["name"]))
    return out


def pod(obj: JSON | None) -> PodInfo:
    """Parse an upstream test pod (st.MakePod() pods have no containers, and may have no namespace)."""
    assert obj is not None
    obj = json.loads(json.dumps(obj))
    spec = obj.setdefault("spec", {})
    if not spec.get("containers"):
        spec["containers"] = [{"name": "c", "image": "pause"}]
    info = parse_pod(obj)
    info.namespace = str((obj.get("metadata") or {}).get("namespace") or "")  # "" stays "", as in Go
    return info


def snapshot(nodes: list[JSON] | None, pods: list[JSON] | None) -> Snapshot:
    """cache.NewSnapshot(pods, nodes): pods land on the node named by spec.nodeName."""
    infos = []
    by_name = {}
    for n in nodes or []:
        record = parse_node(n)
        info = NodeInfo(record.name, record)
        infos.append(info)
        by_name[record.name] = info
    for p in pods or []:
        placed = pod(p)
        if placed.node_name in by_name:
            by_name[placed.node_name].add_pod(placed)
    return Snapshot.from_node_infos(infos)


def plugin(snap: Snapshot, args: Args, objs: list[JSON] | None = None) -> PodTopologySpread:
    """The plugin over the snapshot, with the fake clientset's objects (unnamed ones get a name to be stored)."""
    named = []
    for i, obj in enumerate(objs or []):
        obj = json.loads(json.dumps(obj))
        obj.setdefault("metadata", {}).setdefault("name", f"obj-{i}")
        named.append(obj)
    return PodTopologySpread(args, StaticHandle(snap, named))


def go_args(config: JSON | None) -> Args:
    """config.PodTopologySpreadArgs as dumped (Go field names) -> our parsed Args."""
    config = config or {}
    raw: JSON = {"defaultingType": config.get("DefaultingType") or "System"}
    if config.get("DefaultConstraints"):
        raw["defaultConstraints"] = config["DefaultConstraints"]
    return parse_args(raw)


LIST_ARGS = Args(defaulting_type="List")


def check_constraints(got: tuple[Constraint, ...], want: list[JSON] | None) -> None:
    want = want or []
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.max_skew == w["MaxSkew"]
        assert g.topology_key == w["TopologyKey"]
        assert g.min_domains == w["MinDomains"]
        assert g.node_affinity_policy == w["NodeAffinityPolicy"]
        assert g.node_taints_policy == w["NodeTaintsPolicy"]
        sel = w["Selector"]
        assert g.selector.nothing == sel["nothing"]
        assert selector_string(g.selector) == sel["selector"]


def check_pre_filter_state(got: PreFilterState, want: JSON) -> None:
    check_constraints(got.constraints, want.get("Constraints"))
    want_counts = want.get("TpValueToMatchNum") or []
    assert got.tp_value_to_match_num == [dict(m or {}) for m in want_counts]
    for paths, wp in zip(got.critical_paths, want.get("CriticalPaths") or [], strict=True):
        # Upstream compares the two paths after sorting equal counts by name; the minimum is what Filter uses.
        assert sorted((n, v) for v, n in paths.paths) == sorted((p["MatchNum"], p["TopologyValue"]) for p in wp)


@pytest.mark.parametrize("case", cases("TestPreFilterState", "pod"))
def test_pre_filter_state(case: JSON) -> None:
    """PreFilter's domain counts and critical paths (upstream TestPreFilterState)."""
    snap = snapshot(case.get("nodes"), case.get("existingPods"))
    pl = plugin(snap, Args(tuple(case.get("defaultConstraints") or ()), "List"), case.get("objs"))
    state = CycleState()
    _, status = pl.pre_filter(state, pod(case["pod"]), snap.node_info_list)
    want_status = case.get("wantPrefilterStatus")
    if want_status is not None:
        assert status is not None and status.code == want_status["code"]
        assert list(status.reasons) == list(want_status.get("reasons") or [])
        return
    assert status is None
    check_pre_filter_state(state[PRE_FILTER_STATE_KEY], case["want"])


def _add_remove_state(case: JSON, delta: int) -> None:
    snap = snapshot(case.get("nodes"), case.get("existingPods"))
    pl = plugin(snap, LIST_ARGS)
    state = CycleState()
    preemptor = pod(case["preemptor"])
    _, status = pl.pre_filter(state, preemptor, snap.node_info_list)
    assert status is None
    node = snap.node_info_map[case["nodes"][case.get("nodeIdx", 0)]["metadata"]["name"]]
    if delta > 0:
        assert pl.add_pod(state, preemptor, pod(case["addedPod"]), node) is None
    else:
        existing = case.get("existingPods") or []
        idx = case.get("deletedPodIdx", 0)
        victim = existing[idx] if 0 <= idx < len(existing) else case["deletedPod"]
        assert pl.remove_pod(state, preemptor, pod(victim), node) is None
    check_pre_filter_state(state[PRE_FILTER_STATE_KEY], case["want"])


@pytest.mark.parametrize("case", cases("TestPreFilterStateAddPod", "preemptor", "addedPod"))
def test_pre_filter_state_add_pod(case: JSON) -> None:
    """AddPod updates counts and critical paths (upstream TestPreFilterStateAddPod)."""
    _add_remove_state(case, 1)


@pytest.mark.parametrize("case", cases("TestPreFilterStateRemovePod", "preemptor", "deletedPod"))
def test_pre_filter_state_remove_pod(case: JSON) -> None:
    """RemovePod updates counts and critical paths (upstream TestPreFilterStateRemovePod)."""
    _add_remove_state(case, -1)


def _filter_case(case: JSON) -> None:
    snap = snapshot(case.get("nodes"), case.get("existingPods"))
    pl = plugin(snap, LIST_ARGS)
    state = CycleState()
    p = pod(case["pod"])
    _, status = pl.pre_filter(state, p, snap.node_info_list)
    assert status is None
    want = case.get("wantStatusCode") or {}
    assert want, "every upstream filter case names its expected codes"
    got = {}
    for n in case["nodes"]:
        name = n["metadata"]["name"]
        st = pl.filter(state, p, snap.node_info_map[name])
        got[name] = Code.SUCCESS if st is None else st.code
    assert got == {k: Code(v) for k, v in want.items() if k in got}
    # The batch form agrees with the per-node form.
    batch = pl.filter_batch(state, p, snap.node_info_list)
    assert {
        n.name: (Code.SUCCESS if s is None else s.code) for n, s in zip(snap.node_info_list, batch, strict=True)
    } == got


@pytest.mark.parametrize("case", cases("TestSingleConstraint", "pod"))
def test_single_constraint(case: JSON) -> None:
    """Filter with one hard constraint (upstream TestSingleConstraint)."""
    _filter_case(case)


@pytest.mark.parametrize("case", cases("TestMultipleConstraints", "pod"))
def test_multiple_constraints(case: JSON) -> None:
    """Filter with several hard constraints (upstream TestMultipleConstraints)."""
    _filter_case(case)


@pytest.mark.parametrize("case", cases("TestPreScoreSkip", "pod"))
def test_pre_score_skip(case: JSON) -> None:
    """PreScore skips pods without soft constraints (upstream TestPreScoreSkip)."""
    snap = snapshot(case.get("nodes"), None)
    pl = plugin(snap, go_args(case.get("config")), case.get("objs"))
    status = pl.pre_score(CycleState(), pod(case["pod"]), snap.node_info_list)
    assert status is not None and status.code == Code.SKIP


@pytest.mark.parametrize("case", cases("TestPreScoreStateEmptyNodes", "pod"))
def test_pre_score_state(case: JSON) -> None:
    """PreScore's ignored nodes, domain counts and weights (upstream TestPreScoreStateEmptyNodes)."""
    snap = snapshot(case.get("nodes"), None)
    pl = plugin(snap, go_args(case.get("config")), case.get("objs"))
    state = CycleState()
    assert pl.pre_score(state, pod(case["pod"]), snap.node_info_list) is None
    got: PreScoreState = state[PRE_SCORE_STATE_KEY]
    want = case["want"]
    check_constraints(got.constraints, want.get("Constraints"))
    assert got.ignored_nodes == set(want.get("IgnoredNodes") or {})
    assert got.topology_value_to_pod_counts == [dict(m or {}) for m in want.get("TopologyValueToPodCounts") or []]
    assert got.topology_normalizing_weight == pytest.approx(want.get("TopologyNormalizingWeight") or [], abs=0)


@pytest.mark.parametrize("case", cases("TestPodTopologySpreadScore", "pod"))
def test_score(case: JSON) -> None:
    """Score + NormalizeScore with System defaulting (upstream TestPodTopologySpreadScore)."""
    nodes = list(case.get("nodes") or [])
    snap = snapshot(nodes + list(case.get("failedNodes") or []), case.get("existingPods"))
    pl = plugin(snap, Args(), case.get("objs"))
    state = CycleState()
    p = pod(case["pod"])
    feasible = [snap.node_info_map[n["metadata"]["name"]] for n in nodes]
    assert pl.pre_score(state, p, feasible) is None
    scores = pl.score_batch(state, p, feasible)
    assert pl.normalize_score(state, p, scores) is None
    assert [{"Name": n.name, "Score": s} for n, s in zip(feasible, scores, strict=True)] == case["want"]


# math.Log(n) as Go v1.26 on amd64 prints it (Float64bits), for sizes where glibc's log differs by one ulp.
GO_LOG_BITS = {
    3: "3ff193ea7aad030a",
    14: "40051cca16d7bba8",
    48: "400ef8383c50bb74",
    74: "4011375cd6fcab1c",
    176: "4014ae935b3cb89e",
    99894: "402706132812c27c",
}


@pytest.mark.parametrize("n", sorted(GO_LOG_BITS))
def test_weights_are_gos_log(n: int) -> None:
    """ln(size + 2) is Go's math.Log bit for bit (Python's math.log is one ulp off for these)."""
    want = struct.unpack("<d", bytes.fromhex(GO_LOG_BITS[n])[::-1])[0]
    assert topology_normalizing_weight(n - 2) == want
    assert math.log(n) != want


def test_only_cases_of_switched_off_gates_are_left_out() -> None:
    """Exactly the upstream cases that test MatchLabelKeys with its gate off are not run (it is on in v1.37)."""
    left_out = {
        ("TestPreFilterState", "matchLabelKeys ignored when feature gate disabled"),
        ("TestPreFilterState", "no pod is matched when LabelSelector is nil when feature gate disabled"),
        ("TestPodTopologySpreadScore", "matchLabelKeys ignored when feature gate disabled"),
    }
    assert left_out == GATED_OUT
    # Every dumped table runs here but TestPodTopoSignatures (SignPod, for opportunistic batching, which the
    # framework does not have): 139 cases, 136 of them run.
    ported = {k: len(v) for k, v in TABLES.items() if k not in ("upstream", "TestPodTopoSignatures")}
    assert sum(ported.values()) == 139
