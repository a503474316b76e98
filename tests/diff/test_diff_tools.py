"""The differential tooling without a cluster: klog parsing, the outcome comparison and the generator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.diff.klog import (
    BOUND,
    FINAL_SCORE,
    OUR_FAILURE,
    PLUGIN_SCORED,
    UPSTREAM_NO_FIT,
    LogIndex,
    PodLog,
    parse_line,
)
from tests.diff.runner import (
    SHARED_PORT_FREED,
    Difference,
    Outcome,
    compare,
    explain,
    same_filter_error_but_the_device,
    shared_ports_freed_upstream,
)
from tests.diff.scenario import ExistingPod, Features, Scenario, generate

UPSTREAM_LINE = (
    'I1130 22:58:35.988932   27074 schedule_one.go:984] "Plugin scored node for pod" pod="ns/p-up" '
    'plugin="NodeResourcesFit" node="n1" score=85'
)
OUR_LINE = (
    'I1130 22:58:36.002504   27094 schedule_one.py:238] "Plugin scored node for pod" pod="ns/p-py" '
    'plugin="NodeResourcesFit" node="n1" score=85'
)


@pytest.mark.parametrize("line", [UPSTREAM_LINE, OUR_LINE], ids=["kube-scheduler", "pyscheduler"])
def test_parse_line_reads_both_schedulers(line: str) -> None:
    """The same parser reads kube-scheduler's klog lines and pyscheduler's klog-style ones."""
    parsed = parse_line(line)
    assert parsed is not None
    msg, fields = parsed
    assert msg == PLUGIN_SCORED
    assert fields["plugin"] == "NodeResourcesFit" and fields["node"] == "n1" and fields["score"] == 85


def test_parse_line_quoted_values_and_non_klog_lines() -> None:
    """Quoted values may hold spaces and escaped quotes; other output is not a klog line."""
    parsed = parse_line('E0101 00:00:00.000000 1 x.go:1] "oops" err="a \\"b\\" c" n=3')
    assert parsed == ("oops", {"err": 'a "b" c', "n": 3})
    assert parse_line("goroutine 1 [running]:") is None


def test_log_index_tails_and_groups_by_pod(tmp_path: Path) -> None:
    """Lines appended later are read on the next refresh; a half-written line waits for its end."""
    path = tmp_path / "s.log"
    head = "I0101 00:00:00.000000 1 s.go:1] "
    path.write_text(
        head
        + f'"{PLUGIN_SCORED}" pod="ns/a" plugin="P" node="n1" score=3\n'
        + head
        + f'"{PLUGIN_SCORED}" pod="ns/a" plugin="P" node="n2" score=5\n'
        + head
        + f'"{FINAL_SCORE}" pod="ns/a" node="n1" score=3\n'
        + head
        + f'"{BOUND}" pod="ns/a" node="n2" evaluatedNodes=4 feasibleNodes=2\n'
        + head
        + '"Successfully bou'
    )
    index = LogIndex(path)
    log = index.get("ns/a")
    assert log is not None
    assert log.scores == {("P", "n1"): 3, ("P", "n2"): 5} and log.totals == {"n1": 3}
    assert (log.bound_to, log.evaluated_nodes, log.feasible_nodes) == ("n2", 4, 2)
    with path.open("a") as f:
        f.write('nd pod to node" pod="ns/b" node="n1" evaluatedNodes=1 feasibleNodes=1\n')
    later = index.get("ns/b")
    assert later is not None and later.bound_to == "n1"


NOMINATING = (
    "0/2 nodes are available: 2 Insufficient cpu. "
    "preemption: found a potential placement for pod on node n1, preempting 1 victims"
)


def test_log_index_keeps_each_unschedulable_attempt(tmp_path: Path) -> None:
    """Both schedulers' failure lines are kept in order (upstream's err=, ours error= when Unschedulable);
    our SchedulerError attempts are not (upstream logs those under another message)."""
    path = tmp_path / "s.log"
    head = "I0101 00:00:00.000000 1 s.go:1] "
    path.write_text(
        head
        + f'"{UPSTREAM_NO_FIT}" pod="ns/a-up" err="{NOMINATING}"\n'
        + head
        + f'"{BOUND}" pod="ns/a-up" node="n1" evaluatedNodes=1 feasibleNodes=1\n'
        + head
        + f'"{OUR_FAILURE}" pod="ns/a-py" reason="SchedulerError" error="boom"\n'
        + head
        + f'"{OUR_FAILURE}" pod="ns/a-py" reason="Unschedulable" error="{NOMINATING}"\n'
        + head
        + f'"{OUR_FAILURE}" pod="ns/a-py" reason="Unschedulable" error="again"\n'
    )
    index = LogIndex(path)
    up, py = index.get("ns/a-up"), index.get("ns/a-py")
    assert up is not None and py is not None
    assert up.failures == [NOMINATING] and up.bound_to == "n1"
    assert py.failures == [NOMINATING, "again"] and py.bound_to is None


def _bound(node: str, scores: dict[tuple[str, str], int], feasible: int | None = None) -> Outcome:
    totals: dict[str, int] = {}
    for (_, n), v in scores.items():
        totals[n] = totals.get(n, 0) + v
    nodes = {n for _, n in scores} or {node}
    log = PodLog(
        scores=dict(scores), totals=totals, bound_to=node, evaluated_nodes=3, feasible_nodes=feasible or len(nodes)
    )
    return Outcome(node=node, log=log)


def _preemptor(node: str, failures: list[str], evaluated: int = 1) -> Outcome:
    """Bound on the only feasible node after the logged unschedulable attempts."""
    log = PodLog(bound_to=node, evaluated_nodes=evaluated, feasible_nodes=1, failures=list(failures))
    return Outcome(node=node, log=log)


IMPLEMENTED = frozenset({"A", "B"})


@pytest.mark.parametrize(
    ("up", "py", "kinds"),
    [
        pytest.param(
            _bound("n1", {("A", "n1"): 10, ("A", "n2"): 5}),
            _bound("n1", {("A", "n1"): 10, ("A", "n2"): 5}),
            [],
            id="equal",
        ),
        pytest.param(
            _bound("n1", {("A", "n1"): 10, ("A", "n2"): 10}),
            _bound("n2", {("A", "n1"): 10, ("A", "n2"): 10}),
            [],
            id="ties-may-pick-differently",
        ),
        pytest.param(
            _bound("n1", {("A", "n1"): 10, ("A", "n2"): 5}),
            _bound("n1", {("A", "n1"): 10, ("A", "n2"): 6}),
            ["score", "total"],
            id="one-score-differs",
        ),
        pytest.param(
            _bound("n1", {("A", "n1"): 10, ("A", "n2"): 5}),
            _bound("n2", {("A", "n1"): 10, ("A", "n2"): 5}),
            ["pick"],
            id="not-a-top-node",
        ),
        pytest.param(
            _bound("n1", {("A", "n1"): 10, ("A", "n2"): 5, ("Upstream", "n1"): 7}),
            _bound("n1", {("A", "n1"): 10, ("A", "n2"): 5}),
            ["upstream-only-score", "total"],
            id="upstream-only-plugin-scoring",
        ),
        pytest.param(
            _bound("n1", {("A", "n1"): 10, ("A", "n2"): 5, ("B", "n1"): 1, ("B", "n2"): 1}),
            _bound("n1", {("A", "n1"): 10, ("A", "n2"): 5}),
            ["plugins", "total", "total"],
            id="plugin-skipped-by-one-side",
        ),
        pytest.param(
            _bound("n1", {("A", "n1"): 10, ("A", "n2"): 5}),
            _bound("n1", {("A", "n1"): 10, ("A", "n3"): 5}),
            ["feasible-nodes"],
            id="different-feasible-nodes",
        ),
        pytest.param(_bound("n1", {}), _bound("n2", {}), ["pick"], id="single-feasible-node-differs"),
        pytest.param(
            _preemptor("n1", [NOMINATING]),
            _preemptor("n1", [NOMINATING]),
            [],
            id="both-bound-after-the-same-preemption",
        ),
        pytest.param(
            _preemptor("n1", [NOMINATING]),
            _preemptor("n1", [], evaluated=2),
            ["earlier-attempts", "counts"],
            id="one-bound-without-preempting",
        ),
        pytest.param(
            _bound("n1", {}),
            Outcome(message="0/3 nodes are available: 3 Insufficient cpu.", reason="Unschedulable"),
            ["feasibility"],
            id="bound-vs-pending",
        ),
        pytest.param(
            Outcome(
                message="0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
                "3 No preemption victims found for incoming pod.",
                reason="Unschedulable",
            ),
            Outcome(message="0/3 nodes are available: 3 Insufficient cpu.", reason="Unschedulable"),
            ["message"],
            id="preemption-suffix-compared",
        ),
        pytest.param(
            Outcome(message="0/3 nodes are available: 3 Insufficient cpu.", reason="Unschedulable"),
            Outcome(message="0/3 nodes are available: 3 Insufficient memory.", reason="Unschedulable"),
            ["message"],
            id="message-differs",
        ),
    ],
)
def test_compare(up: Outcome, py: Outcome, kinds: list[str]) -> None:
    """compare reports each kind of difference, and nothing for equal outcomes or tie-breaking."""
    assert sorted(d.kind for d in compare(7, "p", up, py, IMPLEMENTED)) == sorted(kinds)


def test_upstream_only_plugin_scoring_zero_is_not_a_difference() -> None:
    """VolumeBinding/DynamicResources-like plugins pyscheduler lacks may score 0 without a difference."""
    up = _bound("n1", {("A", "n1"): 10, ("A", "n2"): 5, ("Upstream", "n1"): 0, ("Upstream", "n2"): 0})
    py = _bound("n1", {("A", "n1"): 10, ("A", "n2"): 5})
    assert compare(7, "p", up, py, IMPLEMENTED) == []


def test_generate_is_reproducible() -> None:
    """A seed names a scenario: the same seed and features give the same objects, another seed others."""
    a, b = generate(42), generate(42)
    assert json.dumps([a.nodes, [p.manifest for p in a.existing], a.pending]) == json.dumps(
        [b.nodes, [p.manifest for p in b.existing], b.pending]
    )
    assert json.dumps(generate(43).nodes) != json.dumps(a.nodes)


def test_default_features_cover_affinity_and_spread_but_not_priorities_or_owners() -> None:
    """By default pods carry pod (anti-)affinity and spread constraints (both plugins are proven now); the
    features that need a special control plane (owners) or victim restoration (priorities) stay off."""
    defaults = [generate(seed) for seed in range(1, 60)]
    pending = [p["spec"] for sc in defaults for p in sc.pending]
    assert any("topologySpreadConstraints" in spec for spec in pending)
    assert any("podAntiAffinity" in (spec.get("affinity") or {}) for spec in pending)
    assert any("podAffinity" in (spec.get("affinity") or {}) for spec in pending)
    assert not any("priorityClassName" in spec for spec in pending)
    assert not any(sc.objects for sc in defaults)  # no Services or ReplicaSets
    every = Features.parse("all")
    assert every.pod_affinity and every.spread_constraints and every.owners and every.priorities
    hooked = [generate(s, every) for s in range(1, 40)]
    assert any("priorityClassName" in p["spec"] for sc in hooked for p in sc.pending)
    assert any(sc.objects for sc in hooked)
    with pytest.raises(ValueError, match="unknown features"):
        Features.parse("nope")


def test_priorities_give_bound_pods_priorities_and_their_own_start_times() -> None:
    """With priorities, some bound pods have a priority and all start at distinct times (no preemption tie
    kube-scheduler would break at random); without, the scenario is what it was (no start time added)."""
    every = Features.parse("all")
    unstarted = 0
    classes: set[str] = set()
    for seed in range(1, 40):
        existing = generate(seed, every).existing
        classes.update(p.manifest["spec"].get("priorityClassName", "") for p in existing)
        starts = [(p.status or {}).get("startTime") for p in existing]
        assert None not in starts and len(set(starts)) == len(starts)
        plain = [(p.status or {}).get("startTime") for p in generate(seed).existing]
        assert set(plain) <= {None, "2025-01-01T00:00:00Z"}  # only the resize statuses' one
        unstarted += plain.count(None)
    assert unstarted > 0
    assert classes == {"", "difffuzz-low", "difffuzz-high"}


def test_generated_nodes_and_pods_are_well_formed() -> None:
    """Unique node names, at least two nodes, node field selectors with exactly one value (API rules)."""
    for seed in range(1, 200):
        sc = generate(seed)
        names = sc.node_names()
        assert len(names) == len(set(names)) >= 2
        for pod in sc.pending:
            for term in (
                ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution", {})
                .get("nodeSelectorTerms", [])
            ):
                for field in term.get("matchFields", []):
                    assert len(field["values"]) == 1


def _port_pod(name: str, node: str | None, port: int, phase: str | None = None) -> ExistingPod:
    spec: dict[str, object] = {"containers": [{"name": "c", "ports": [{"containerPort": port, "hostPort": port}]}]}
    if node is not None:
        spec["nodeName"] = node
    return ExistingPod({"metadata": {"name": name}, "spec": spec}, {"phase": phase} if phase else None)


def test_shared_port_freed_upstream_is_explained_only_when_it_applies() -> None:
    """A port two bound pods share on a node, one of them ended, excuses differences of pods wanting it."""
    sc = Scenario(1, existing=[_port_pod("a", "n1", 53, "Failed"), _port_pod("b", "n1", 53), _port_pod("c", "n2", 80)])
    assert shared_ports_freed_upstream(sc) == [("0.0.0.0", "TCP", 53)]
    wants_53 = [Difference(1, "p", "message", "x")]
    explain(sc, _port_pod("p", None, 53).manifest, wants_53)
    assert wants_53[0].explained == SHARED_PORT_FREED
    wants_80 = [Difference(1, "q", "message", "x")]
    explain(sc, _port_pod("q", None, 80).manifest, wants_80)
    assert not wants_80[0].explained
    both_alive = Scenario(2, existing=[_port_pod("a", "n1", 53), _port_pod("b", "n1", 53)])
    assert shared_ports_freed_upstream(both_alive) == []


CEL_ERROR = (
    'running "DynamicResources" filter plugin: claim difffuzz/p4-c0: selector #0 on device {device}: CEL runtime '
    "error: no such key: mig. consider using CEL optional chaining (.? followed by orValue()) or guarding the "
    "check with has() for optional fields"
)


@pytest.mark.parametrize(
    ("up", "py", "explained"),
    [
        pytest.param("d.example.com/s9-n6/dev-0", "d.example.com/s9-n2/dev-0", True, id="another-node"),
        pytest.param("d.example.com/s9-n6/dev-0", "d.example.com/s9-n6/dev-3", True, id="another-device"),
        pytest.param("d.example.com/s9-n6/dev-0", "d.example.com/s9-n6/dev-0", False, id="same-message"),
    ],
)
def test_a_filter_error_naming_another_device_is_explained(up: str, py: str, explained: bool) -> None:
    """The same CEL runtime error at another node's device is upstream's parallel Filter race, nothing else."""
    found = [Difference(1, "p", "message", "x")]
    up_outcome, py_outcome = (Outcome(message=CEL_ERROR.format(device=d)) for d in (up, py))
    explain(Scenario(1), {"spec": {}}, found, up_outcome, py_outcome)
    assert bool(found[0].explained) is explained
    assert same_filter_error_but_the_device(CEL_ERROR.format(device=up), CEL_ERROR.format(device=py)) is explained


def test_a_constraint_error_at_another_node_is_explained() -> None:
    """The All-request constraint error names its device as CEL errors do: another node's device is the race."""
    text = (
        'running "DynamicResources" filter plugin: claim difffuzz/p1-c0, request r0: cannot add device {} because '
        "a claim constraint would not be satisfied"
    )
    up, py = text.format("nic.example.com/s74-n5/dev-3"), text.format("nic.example.com/s74-n4/dev-0")
    assert same_filter_error_but_the_device(up, py)


def test_another_error_text_is_not_explained() -> None:
    """Messages that differ in anything but the device stay differences."""
    up = CEL_ERROR.format(device="d/p/dev-0")
    py = CEL_ERROR.format(device="d/q/dev-1").replace("mig", "version")
    assert not same_filter_error_but_the_device(up, py)
    assert not same_filter_error_but_the_device("0/3 nodes are available: 3 cannot allocate all claims.", "x")


@pytest.mark.parametrize(
    ("up_node", "py_node", "differs"),
    [
        pytest.param("n1", "n1", True, id="same-node-other-devices"),
        pytest.param("n1", "n2", False, id="tie-broken-elsewhere"),
    ],
)
def test_devices_are_compared_on_the_same_node(up_node: str, py_node: str, differs: bool) -> None:
    """Two schedulers binding to one node must allocate the same devices; on different nodes they cannot."""
    up = Outcome(node=up_node, allocations={"c0": [{"device": "dev-0"}]})
    py = Outcome(node=py_node, allocations={"c0": [{"device": "dev-1"}]})
    assert any(d.kind == "devices" for d in compare(1, "p", up, py, frozenset())) is differs


def test_the_dra_feature_adds_claims_without_changing_the_rest() -> None:
    """`dra` draws after everything else: nodes and pods stay the seed's; the claims it adds are referenced by
    their pods' containers, the slices name nodes of the scenario, every request names a class it created."""
    for seed in range(1, 60):
        plain, dra = generate(seed), generate(seed, Features(dra=True))
        assert plain.nodes == dra.nodes and len(plain.pending) == len(dra.pending)
        assert plain.dra is None and dra.dra is not None
        classes = {c["metadata"]["name"] for c in dra.dra.classes}
        for slice_ in dra.dra.slices:
            spec = slice_["spec"]
            assert spec.get("allNodes") or spec["nodeName"] in dra.node_names()
        for pod in dra.pending:
            entries = [e for e, _ in dra.dra.claims.get(pod["metadata"]["name"], [])]
            assert [r["name"] for r in pod["spec"].get("resourceClaims", [])] == entries
            assert [c["name"] for c in pod["spec"]["containers"][0].get("resources", {}).get("claims", [])] == entries
            for _, spec in dra.dra.claims.get(pod["metadata"]["name"], []):
                for request in spec["devices"]["requests"]:
                    for body in request.get("firstAvailable") or [request.get("exactly")]:
                        assert body["deviceClassName"] in classes
