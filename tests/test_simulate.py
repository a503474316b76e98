"""`pyscheduler simulate`: the three field stories, JSON output, input validation, DaemonSets and seeds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.adapters.memory import MemoryCluster
from scheduler.cli import main
from scheduler.core.explain import render_text
from scheduler.simulate import InputError, SimulationResult, load_documents, render_table, simulate
from scheduler.testing import make_node, make_pod

JSON = dict[str, Any]
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PORTS = "node(s) didn't have free ports for the requested pod ports"
ABSENT_NA = "node(s) didn't satisfy plugin(s) [NodeAffinity]"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
# The example pods all have priority 0: DefaultPreemption finds no victim on the one node it could try.
PORTS_MESSAGE = (
    f"0/4 nodes are available: 1 {PORTS}, 3 {ABSENT_NA}. preemption: 0/4 nodes are available: 1 {NO_VICTIMS}, "
    f"3 {NOT_HELPFUL}."
)


def _run_example(name: str, seed: int = 0) -> SimulationResult:
    path = EXAMPLES / name
    return simulate(load_documents(path.read_text(encoding="utf-8"), str(path)), seed=seed)


def _placements(result: SimulationResult) -> dict[str, str | None]:
    return {f"{o.namespace}/{o.name}": o.node for o in result.outcomes}


def _messages(result: SimulationResult) -> dict[str, str | None]:
    return {f"{o.namespace}/{o.name}": o.message for o in result.outcomes}


def test_vanished_node_story_binds_every_daemon_pod_once_per_node() -> None:
    """kubernetes#91601: after the worker joins, all 4 node-exporter pods bind, one per node."""
    result = _run_example("vanished-node.yaml")
    placed = _placements(result)
    nodes = ["ss-stg-ma-01", "ss-stg-ma-02", "ss-stg-ma-03", "ss-stg-test-01"]
    exporters = {k: v for k, v in placed.items() if k.startswith("monitoring/node-exporter-")}
    assert exporters == {f"monitoring/node-exporter-{n}": n for n in nodes}
    assert placed["kube-system/etcd-backup"] in nodes[:3]
    assert all(o.message is None for o in result.outcomes)


@pytest.mark.parametrize(
    ("pod", "holder", "port"),
    [
        pytest.param("coredns-node-a", "kube-system/metrics-proxy-old", "TCP 0.0.0.0:9153", id="terminating-holder"),
        pytest.param("coredns-node-b", "kube-system/node-local-dns-7xk2p", "UDP 169.254.20.10:53", id="specific-ip"),
        pytest.param("coredns-node-c", "ingress/ingress-nginx-controller-5d9f", "TCP 0.0.0.0:8080", id="ingress"),
    ],
)
def test_host_ports_story(pod: str, holder: str, port: str) -> None:
    """CoreDNS stays pending where a declared host port clashes, with the NodePorts message and its holder named."""
    result = _run_example("host-ports.yaml")
    placed = _placements(result)
    assert placed["kube-system/coredns-node-d"] == "node-d"
    assert placed[f"kube-system/{pod}"] is None
    assert _messages(result)[f"kube-system/{pod}"] == PORTS_MESSAGE
    expl = result.explain("kube-system", pod)
    node = pod.removeprefix("coredns-")
    [verdict] = [v for v in expl.nodes if v.node == node]
    holders = [(d.data["pod"], d.data["port"]) for plugin, d in verdict.details if plugin == "NodePorts"]
    assert [k for k, _ in holders] == [holder]
    assert port in dict(holders)[holder]
    assert all(v.excluded_by == ABSENT_NA for v in expl.nodes if v.node != node)
    assert expl.message == PORTS_MESSAGE


def test_host_ports_explain_cli_names_holder(capsys: pytest.CaptureFixture[str]) -> None:
    """--explain prints which pod holds the clashing port."""
    code = main(["simulate", str(EXAMPLES / "host-ports.yaml"), "--explain", "kube-system/coredns-node-b"])
    out = capsys.readouterr().out
    assert code == 0
    assert "kube-system/node-local-dns-7xk2p" in out
    assert "1/4 pods scheduled" in out


def test_placement_factors_story() -> None:
    """Requests not limits, nodeSelector, Gt affinity, taints, cordon, extended resources, nodeName: exact messages."""
    result = _run_example("placement-factors.yaml")
    assert _placements(result) == {
        "shop/web": "worker-1",
        "shop/batch-huge": None,
        "shop/db": None,
        "shop/analytics": "worker-2",
        "ml/trainer": None,
        "shop/late-arrival": None,
    }
    taint = "node(s) had untolerated taint(s)"
    cordon = "node(s) were unschedulable"
    # Requests beyond a node's allocatable are Unresolvable: preemption could only help late-arrival's node.
    not_helpful = f" preemption: 0/3 nodes are available: 3 {NOT_HELPFUL}."
    assert _messages(result) == {
        "shop/web": None,
        "shop/batch-huge": f"0/3 nodes are available: 1 {cordon}, 2 Insufficient cpu." + not_helpful,
        "shop/db": (
            f"0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 {taint}, 1 {cordon}."
            + not_helpful
        ),
        "shop/analytics": None,
        "ml/trainer": f"0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 1 {taint}, 1 {cordon}." + not_helpful,
        "shop/late-arrival": (
            f"0/3 nodes are available: 1 Insufficient cpu, 1 {taint}, 1 {cordon}."
            f" preemption: 0/3 nodes are available: 1 {NO_VICTIMS}, 2 {NOT_HELPFUL}."
        ),
    }


def test_volumes_story() -> None:
    """Local PVs and a zonal provisioning class: db-0 lands on the node of the only PV large enough, the cache
    claim is provisioned in zone a, db-1 finds no PV; claims and PVs end bound to each other, as a PV
    controller and a provisioner would leave them."""
    result = _run_example("volumes.yaml")
    assert result.cluster is not None
    placed = _placements(result)
    assert placed["shop/db-0"] == "node-c"
    assert placed["shop/cache-0"] in ("node-a", "node-b")
    assert placed["shop/db-1"] is None
    assert _messages(result)["shop/db-1"] == (
        "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind."
        f" preemption: 0/3 nodes are available: 3 {NOT_HELPFUL}."
    )
    objects = result.cluster.objects
    db0 = objects.get(("PersistentVolumeClaim", "shop", "data-db-0"))
    pv = objects.get(("PersistentVolume", "", "local-pv-c"))
    assert db0 is not None and pv is not None
    assert db0["spec"]["volumeName"] == "local-pv-c" and db0["status"]["phase"] == "Bound"
    assert pv["spec"]["claimRef"]["name"] == "data-db-0" and pv["status"]["phase"] == "Bound"
    cache = objects.get(("PersistentVolumeClaim", "shop", "cache"))
    assert cache is not None and cache["status"]["phase"] == "Bound"
    provisioned = objects.get(("PersistentVolume", "", cache["spec"]["volumeName"]))
    assert provisioned is not None and provisioned["spec"]["claimRef"]["name"] == "cache"
    terms = provisioned["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == [placed["shop/cache-0"]]
    db1 = objects.get(("PersistentVolumeClaim", "shop", "data-db-1"))
    assert db1 is not None and "volumeName" not in db1["spec"]
    small = objects.get(("PersistentVolume", "", "local-pv-a"))
    assert small is not None and "claimRef" not in small["spec"]
    expl = result.explain("shop", "db-1")
    details = {v.node: [d.text for plugin, d in v.details if plugin == "VolumeBinding"] for v in expl.nodes}
    assert details["node-a"] == [
        "claim shop/data-db-1: no available PersistentVolume of class 'local-storage' fits it on this node; "
        "StorageClass 'local-storage' cannot provision (provisioner 'kubernetes.io/no-provisioner')"
    ]


def test_a_malformed_pv_fails_its_own_class_and_does_not_stall_provisioning() -> None:
    """Found by test_input_properties: local-pv-a's capacity a map instead of a quantity. The local-storage pods
    fail with a message naming the field; the provisioning claim of another class is still provisioned (the
    in-memory PV controller used to stop matching at the unreadable PV, and PreBind then polled for
    bindTimeoutSeconds, 600 s of real time, before the simulation could end)."""
    path = EXAMPLES / "volumes.yaml"
    objects = load_documents(path.read_text(encoding="utf-8"), str(path))
    for obj in objects:
        if obj["kind"] == "PersistentVolume" and obj["metadata"]["name"] == "local-pv-a":
            obj["spec"]["capacity"]["storage"] = {"not": "a quantity"}
    result = simulate(objects)
    assert _placements(result)["shop/cache-0"] in ("node-a", "node-b")
    bad = "PersistentVolume local-pv-a spec.capacity.storage: quantity must be a string or number, got dict"
    assert _messages(result)["shop/db-0"] == f'running "VolumeBinding" filter plugin: {bad}'


def test_json_output_shape(capsys: pytest.CaptureFixture[str]) -> None:
    """--output json prints exactly {"pods": [{"namespace","name","node","message","preemptedBy","devices"}],
    "preemptions": [...]}."""
    code = main(["simulate", str(EXAMPLES / "host-ports.yaml"), "--output", "json"])
    captured = capsys.readouterr()
    assert code == 0
    doc = json.loads(captured.out)
    assert list(doc) == ["pods", "preemptions"]
    assert all(list(p) == ["namespace", "name", "node", "message", "preemptedBy", "devices"] for p in doc["pods"])
    assert doc["pods"] == [
        {
            "namespace": "kube-system",
            "name": f"coredns-node-{n}",
            "node": None,
            "message": PORTS_MESSAGE,
            "preemptedBy": None,
            "devices": [],
        }
        for n in "abc"
    ] + [
        {
            "namespace": "kube-system",
            "name": "coredns-node-d",
            "node": "node-d",
            "message": None,
            "preemptedBy": None,
            "devices": [],
        }
    ]
    assert doc["preemptions"] == []


def _write(tmp_path: Path, docs: list[JSON]) -> Path:
    import yaml

    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("docs", "fragments"),
    [
        pytest.param(
            [make_node("n1").obj(), make_pod("bad").req(cpu="lots").obj()],
            ["document 2", "Pod bad", "spec.containers[0].resources.requests[cpu]", "lots"],
            id="bad-quantity",
        ),
        pytest.param(
            [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}],
            ["document 1", "kind", "'Secret'"],
            id="unknown-kind",
        ),
        pytest.param(
            [make_node("n1").obj(), {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "empty"}, "spec": {}}],
            ["document 2", "Pod empty", "spec.containers"],
            id="pod-without-containers",
        ),
        pytest.param(
            [{"apiVersion": "v1", "kind": "List", "items": [make_node("n1").obj(), {"kind": "Pod", "spec": {}}]}],
            ["document 1", "items[1]", "metadata.name"],
            id="bad-list-item",
        ),
    ],
)
def test_malformed_input_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docs: list[JSON], fragments: list[str]
) -> None:
    """Malformed input: exit 2, the error names the document and the field, nothing on stdout."""
    path = _write(tmp_path, docs)
    code = main(["simulate", str(path)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    for fragment in fragments:
        assert fragment in captured.err
    with pytest.raises(InputError):
        load_documents(path.read_text(encoding="utf-8"), str(path))


def test_invalid_yaml_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A YAML syntax error exits 2 naming the file."""
    path = tmp_path / "broken.yaml"
    path.write_text("kind: Node\nmetadata: {name: [\n", encoding="utf-8")
    code = main(["simulate", str(path)])
    captured = capsys.readouterr()
    assert (code, captured.out) == (2, "")
    assert str(path) in captured.err and "invalid YAML" in captured.err


def test_v1_list_input() -> None:
    """A v1 List of Nodes and Pods is accepted and its items scheduled."""
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [make_node("n1").obj(), make_pod("p1").req(cpu="1").obj(), make_pod("p2").req(cpu="1").obj()],
    }
    objects = load_documents(json.dumps(doc))
    assert [o["kind"] for o in objects] == ["Node", "Pod", "Pod"]
    assert _placements(simulate(objects)) == {"default/p1": "n1", "default/p2": "n1"}


def _daemonset(**template_spec: Any) -> JSON:
    spec: JSON = {"schedulerName": "pyscheduler", "containers": [{"name": "a", "image": "x"}], **template_spec}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "ops"},
        "spec": {"template": {"spec": spec}},
    }


def test_daemonset_pods_for_nodes_added_later() -> None:
    """A DaemonSet created before its nodes gets one pinned pod per node as each node appears."""
    result = simulate([_daemonset(), make_node("n1").obj(), make_node("n2").obj(), make_node("n3").obj()])
    assert _placements(result) == {"ops/agent-n1": "n1", "ops/agent-n2": "n2", "ops/agent-n3": "n3"}


@pytest.mark.parametrize(
    ("template", "nodes"),
    [
        pytest.param(
            {}, [make_node("n1").obj(), make_node("n2").taint("dedicated", "x").obj()], id="untolerated-taint"
        ),
        pytest.param(
            {"nodeSelector": {"role": "edge"}},
            [make_node("n1").label("role", "edge").obj(), make_node("n2").obj()],
            id="template-node-selector",
        ),
    ],
)
def test_daemonset_skips_nodes_controller_would_not_run_on(template: JSON, nodes: list[JSON]) -> None:
    """Upstream creates no daemon pod where the template's affinity or untolerated NoSchedule taints rule it out."""
    result = simulate([_daemonset(**template), *nodes])
    assert _placements(result) == {"ops/agent-n1": "n1"}


def test_daemonset_tolerates_cordoned_node() -> None:
    """Daemon pods tolerate node.kubernetes.io/unschedulable, so a cordoned node still gets its pod."""
    result = simulate([make_node("n1").unschedulable().obj(), _daemonset()])
    assert _placements(result) == {"ops/agent-n1": "n1"}


def _tie_cluster() -> list[JSON]:
    nodes = [make_node(f"n{i}").obj() for i in range(4)]
    pods = [make_pod(f"p{i}").req(cpu="100m", memory="100Mi").obj() for i in range(6)]
    return nodes + pods


def test_same_seed_same_placements() -> None:
    """A seed makes tie-breaking, hence every placement, reproducible."""
    for seed in (0, 1, 12345):
        assert _placements(simulate(_tie_cluster(), seed=seed)) == _placements(simulate(_tie_cluster(), seed=seed))


def test_different_seeds_break_ties_differently() -> None:
    """Across 10 fixed seeds identical nodes are not always chosen in the same order."""
    runs = {tuple(_placements(simulate(_tie_cluster(), seed=s)).values()) for s in range(10)}
    assert len(runs) >= 2


def test_cli_seed_reproducible(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`--seed` gives the same JSON twice."""
    path = _write(tmp_path, _tie_cluster())
    outs = []
    for _ in range(2):
        assert main(["simulate", str(path), "--seed", "7", "-o", "json"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]


_node_st = st.tuples(
    st.sampled_from(["z1", "z2", "z3"]),
    st.sampled_from([1, 2, 4]),  # cpu cores
    st.sampled_from([1, 2, 4]),  # memory GiB
    st.integers(min_value=1, max_value=4),  # max pods
)
_pod_st = st.tuples(st.integers(min_value=0, max_value=3000), st.integers(min_value=0, max_value=3072))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_node_st, min_size=1, max_size=5), st.lists(_pod_st, max_size=14))
def test_simulate_never_overcommits(nodes: list[tuple[str, int, int, int]], pods: list[tuple[int, int]]) -> None:
    """Random clusters: no node gets more cpu, memory or pods than allocatable; pending messages are FitErrors."""
    objects: list[JSON] = [
        make_node(f"node-{i}").zone(z).capacity(cpu=str(c), memory=f"{m}Gi", pods=str(p)).obj()
        for i, (z, c, m, p) in enumerate(nodes)
    ]
    requests = {f"default/pod-{i}": (cpu, mem) for i, (cpu, mem) in enumerate(pods)}
    for i, (cpu, mem) in enumerate(pods):
        objects.append(make_pod(f"pod-{i}").req(cpu=f"{cpu}m", memory=f"{mem}Mi").obj())
    result = simulate(objects)
    used: dict[str, list[int]] = {f"node-{i}": [0, 0, 0] for i in range(len(nodes))}
    for o in result.outcomes:
        key = f"{o.namespace}/{o.name}"
        if o.node is None:
            assert o.message is not None
            assert o.message.startswith(f"0/{len(nodes)} nodes are available: ")
            continue
        cpu, mem = requests[key]
        used[o.node][0] += cpu
        used[o.node][1] += mem
        used[o.node][2] += 1
    for i, (_, c, m, p) in enumerate(nodes):
        cpu, mem, count = used[f"node-{i}"]
        assert cpu <= c * 1000
        assert mem <= m * 1024
        assert count <= p


# --------------------------------------------------------------------------------------------- priority and preemption


def test_preemption_story_shows_who_evicted_whom(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/preemption.yaml: the PDB steers the preemption to node-b, whose two youngest batch pods go;
    the pod whose class forbids preempting stays Pending and says why."""
    result = _run_example("preemption.yaml")
    assert _placements(result) == {"shop/reports": None, "shop/payments": "node-b"}
    assert _messages(result)["shop/reports"] == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    )
    assert [p.to_json() for p in result.preemptions] == [
        {"preemptor": "shop/payments", "node": "node-b", "victims": ["shop/batch-b3", "shop/batch-b4"]}
    ]
    code = main(["simulate", str(EXAMPLES / "preemption.yaml")])
    out = capsys.readouterr().out
    assert code == 0
    assert "shop/payments evicted shop/batch-b3, shop/batch-b4 from node-b" in out


def test_a_preemption_that_always_fails_cannot_keep_a_simulation_busy(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by test_input_properties (a victim whose status was a list): a failed preemption re-activates its
    preemptor at once, as upstream's does, and without a clock that retry loop never idled. run_until_idle now
    gives up after SPIN_BUDGET attempts per queued pod without a binding: the preemptor stays pending."""

    async def refuse(self: MemoryCluster, victim: Any, message: str) -> bool:
        raise RuntimeError("refused")

    monkeypatch.setattr(MemoryCluster, "patch_disruption_target", refuse)
    result = _run_example("preemption.yaml")
    assert _placements(result) == {"shop/reports": None, "shop/payments": None}
    assert result.preemptions == []
    assert "simulation stopped retrying" in caplog.text


def test_a_pod_placed_earlier_and_then_evicted_is_reported_as_preempted() -> None:
    """A pod pyscheduler placed is later a victim: its row says by whom, in JSON and in the table."""
    docs = [
        make_node("n1").capacity(cpu="1").obj(),
        make_pod("first", "ns").req(cpu="1").obj(),
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "urgent"},
            "value": 1000,
        },
        make_pod("urgent", "ns").req(cpu="1").obj() | {},
    ]
    docs[3]["spec"]["priorityClassName"] = "urgent"
    result = simulate(load_documents(_yaml(docs)))
    by_name = {o.name: o for o in result.outcomes}
    assert by_name["first"].to_json() == {
        "namespace": "ns",
        "name": "first",
        "node": None,
        "message": None,
        "preemptedBy": "ns/urgent",
        "devices": [],
    }
    assert by_name["urgent"].node == "n1"
    assert "<preempted>" in render_table(result) and "evicted by ns/urgent" in render_table(result)


def _yaml(docs: list[JSON]) -> str:
    import yaml

    return yaml.safe_dump_all(docs)


def _priority_class(name: str, value: int, **extra: Any) -> JSON:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }


def _spec_of(objects: list[JSON], name: str) -> JSON:
    return next(o["spec"] for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == name)


def test_priority_admission_resolves_classes_defaults_and_system_classes() -> None:
    """Like the Priority admission plugin: the class's value and preemptionPolicy; the lowest globalDefault
    class for pods without one; the system classes always exist; 0 and PreemptLowerPriority otherwise."""
    docs = [
        _priority_class("default-high", 300, globalDefault=True),
        _priority_class("default-low", 200, globalDefault=True),
        _priority_class("never", 50, preemptionPolicy="Never"),
        make_pod("plain").obj(),
        make_pod("classed").obj(),
        make_pod("critical").obj(),
    ]
    _spec_of(docs, "classed")["priorityClassName"] = "never"
    _spec_of(docs, "critical")["priorityClassName"] = "system-node-critical"
    objects = load_documents(_yaml(docs))
    assert (_spec_of(objects, "plain")["priority"], _spec_of(objects, "plain")["priorityClassName"]) == (
        200,
        "default-low",
    )
    assert (_spec_of(objects, "classed")["priority"], _spec_of(objects, "classed")["preemptionPolicy"]) == (50, "Never")
    assert _spec_of(objects, "critical")["priority"] == 2_000_001_000
    no_classes = load_documents(_yaml([make_pod("bare").obj()]))
    assert (_spec_of(no_classes, "bare")["priority"], _spec_of(no_classes, "bare")["preemptionPolicy"]) == (
        0,
        "PreemptLowerPriority",
    )


def test_priority_of_a_dump_is_kept_when_its_class_is_not_in_the_file() -> None:
    """`kubectl get pods -o yaml` carries spec.priority already; without the PriorityClass it is trusted."""
    obj = make_pod("dumped").priority(777).obj()
    obj["spec"]["priorityClassName"] = "not-in-file"
    [loaded] = load_documents(_yaml([obj]))
    assert loaded["spec"]["priority"] == 777


@pytest.mark.parametrize(
    ("docs", "fragment"),
    [
        pytest.param(
            [make_pod("p").obj() | {"spec": {**make_pod("p").obj()["spec"], "priorityClassName": "missing"}}],
            "Pod p: no PriorityClass with name missing was found",
            id="unknown-class",
        ),
        pytest.param(
            [
                _priority_class("high", 1000),
                make_pod("p").priority(5).obj()
                | {"spec": {**make_pod("p").priority(5).obj()["spec"], "priorityClassName": "high"}},
            ],
            "the integer value of priority (5) must not be provided in pod spec; priority admission controller "
            "computed 1000 from the given PriorityClass name",
            id="contradicting-priority",
        ),
        pytest.param(
            [make_pod("p").preemption_policy("Never").obj()],
            "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission "
            "controller computed PreemptLowerPriority from the given PriorityClass name",
            id="policy-without-class",
        ),
        pytest.param(
            [{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "default"},
              "spec": {"template": {"spec": {"priorityClassName": "missing",
                                             "containers": [{"name": "a", "image": "agent"}]}}}}],
            "input: DaemonSet agent: spec.template: no PriorityClass with name missing was found",
            id="daemonset-unknown-class",
        ),
        pytest.param(
            [_priority_class("high", 1000) | {"value": ":"}, make_pod("p").obj()],
            "PriorityClass high: value: must be a 32-bit integer, got ':'",
            id="class-value-not-an-integer",
        ),
        pytest.param(
            [_priority_class("high", 1000) | {"value": 2**31}, make_pod("p").obj()],
            "PriorityClass high: value: must be a 32-bit integer",
            id="class-value-out-of-range",
        ),
        pytest.param(
            [_priority_class("high", 1000) | {"preemptionPolicy": "Sometimes"}, make_pod("p").obj()],
            "PriorityClass high: preemptionPolicy: Unsupported value: 'Sometimes'",
            id="class-policy-unknown",
        ),
    ],
)
def test_priority_admission_errors_are_input_errors(docs: list[JSON], fragment: str) -> None:
    with pytest.raises(InputError) as info:
        load_documents(_yaml(docs))
    assert fragment in str(info.value)


# ---------------------------------------------------------------------------------------------------------
# Pod (anti-)affinity through simulate

HOSTNAME = "kubernetes.io/hostname"
ANTI_MESSAGE = (
    "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are "
    "available: 3 No preemption victims found for incoming pod."
)


def _replica(name: str, **labels: str) -> JSON:
    obj = (
        make_pod(name).labels(app="web", **labels).pod_affinity_term("podAntiAffinity", HOSTNAME, {"app": "web"}).obj()
    )
    return obj


def test_replicas_with_hostname_anti_affinity_spread_one_per_node() -> None:
    """A Deployment-like set with required hostname anti-affinity: one replica per node, the 4th Pending."""
    objects = [make_node(f"n{i}").obj() for i in range(3)]
    objects += [_replica(f"web-{i}") for i in range(4)]
    placed = _placements(simulate(objects))
    assert sorted(str(v) for k, v in placed.items() if k != "default/web-3") == ["n0", "n1", "n2"]
    assert placed["default/web-3"] is None
    assert _messages(simulate(objects))["default/web-3"] == ANTI_MESSAGE


def test_match_label_keys_are_merged_for_pods_not_created_yet() -> None:
    """Rolling update: the new replica's anti-affinity names its own pod-template-hash through matchLabelKeys,
    so the old replica (created, selector merged against its own hash) does not keep it off the only node.
    Without the API server's merge the new pod would be Pending; live and offline agree."""
    old = _replica("web-old", **{"pod-template-hash": "v1"})
    old["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    old["spec"]["nodeName"] = "n0"
    old_term = old["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    old_term["matchLabelKeys"] = ["pod-template-hash"]
    old_term["labelSelector"]["matchExpressions"] = [{"key": "pod-template-hash", "operator": "In", "values": ["v1"]}]
    new = _replica("web-new", **{"pod-template-hash": "v2"})
    new["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
        "matchLabelKeys"
    ] = ["pod-template-hash"]
    result = simulate([make_node("n0").obj(), old, new])
    assert _placements(result)["default/web-new"] == "n0"
    # Without the key the new replica's selector (app=web) matches the old one: Pending, upstream's words.
    del new["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
        "matchLabelKeys"
    ]
    result = simulate([make_node("n0").obj(), old, new])
    assert (
        _messages(result)["default/web-new"]
        == "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules. preemption: 0/1 nodes are "
        "available: 1 No preemption victims found for incoming pod."
    )


def test_explain_names_the_replica_holding_the_node() -> None:
    """--explain for the Pending replica names, per node, the replica whose labels its term matches."""
    objects = [make_node(f"n{i}").obj() for i in range(3)] + [_replica(f"web-{i}") for i in range(4)]
    result = simulate(objects)
    expl = result.explain("default", "web-3")
    holders = {
        v.node: [
            d.data["pod"]
            for plugin, d in v.details
            if plugin == "InterPodAffinity" and d.data.get("kind") == "podAntiAffinity"
        ]
        for v in expl.nodes
    }
    placed = _placements(result)
    assert holders == {node: [pod] for pod, node in placed.items() if node is not None}
    assert expl.message == ANTI_MESSAGE


# ------------------------------------------------------------------------------------- preemption with pod affinity


def _classed(builder: Any, cls: str) -> JSON:
    obj: JSON = builder.obj()
    obj["spec"]["priorityClassName"] = cls
    return obj


def _affinity_preemption_docs(anti_guard: bool) -> list[JSON]:
    """node1 holds a low-priority pod (with or without anti-affinity against app=x); node2 a middle one. The
    app=x preemptor fits neither until something goes."""
    guard = make_pod("guard", "ns").req(cpu="100m")
    if anti_guard:
        guard.pod_affinity_term("podAntiAffinity", HOSTNAME, {"app": "x"})
    return [
        _priority_class("low", 10),
        _priority_class("mid", 20),
        _priority_class("high", 1000),
        make_node("node1").capacity(cpu="1").obj(),
        make_node("node2").capacity(cpu="1").obj(),
        _classed(guard.node("node1"), "low"),
        _classed(make_pod("filler", "ns").req(cpu="100m").node("node1"), "low"),
        _classed(make_pod("big", "ns").req(cpu="1").node("node2"), "mid"),
        _classed(make_pod("p", "ns").labels(app="x").req(cpu="850m"), "high"),
    ]


@pytest.mark.parametrize("anti_guard", [True, False], ids=["existing-anti-affinity", "plain"])
def test_preemption_sees_the_node_after_evictions_through_inter_pod_affinity(anti_guard: bool) -> None:
    """The dry run removes victims through InterPodAffinity's RemovePod: node1 is chosen (its victims have the
    lowest priority) whether or not the guard's anti-affinity keeps app=x out before the evictions, and with
    the anti-affinity the guard is never reprieved (the preemptor could not stay beside it)."""
    result = simulate(load_documents(_yaml(_affinity_preemption_docs(anti_guard))))
    assert _placements(result)["ns/p"] == "node1"
    [preemption] = [p.to_json() for p in result.preemptions]
    assert preemption["node"] == "node1"
    # cpu alone needs one of the two 100m pods gone; the guard must go when its anti-affinity matches app=x.
    if anti_guard:
        assert "ns/guard" in preemption["victims"]
    assert len(preemption["victims"]) == 1


def test_a_node_whose_only_affinity_match_is_a_victim_is_no_candidate() -> None:
    """As upstream's SelectVictimsOnNode: every lower-priority pod is removed before the filters run, so a
    preemptor whose required affinity matches only a lower-priority pod cannot preempt on that node."""
    docs = [
        _priority_class("low", 10),
        _priority_class("high", 1000),
        make_node("node1").capacity(cpu="1").obj(),
        _classed(make_pod("db", "ns").labels(app="db").req(cpu="600m").node("node1"), "low"),
        _classed(
            make_pod("p", "ns").req(cpu="600m").pod_affinity_term("podAffinity", HOSTNAME, {"app": "db"}), "high"
        ),
    ]
    result = simulate(load_documents(_yaml(docs)))
    assert _placements(result)["ns/p"] is None
    assert result.preemptions == []
    assert _messages(result)["ns/p"] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 node(s) didn't "
        "match pod affinity rules."
    )


def test_explain_scores_images_on_the_explained_snapshot() -> None:
    """A pod no cycle has scheduled gets ImageLocality from the snapshot being explained, not an empty one."""
    docs = [
        make_node("a").image("registry.example/big:latest", 800 * 2**20).obj(),
        make_node("b").obj(),
        make_pod("other", "ns").scheduler_name("default-scheduler").image("registry.example/big").obj(),
    ]
    result = simulate(docs)
    expl = result.explain("ns", "other")
    scores = {v.node: dict(v.scores)["ImageLocality"] for v in expl.nodes}
    # 100 * (800Mi * 1/2 - 23Mi) / (1000Mi - 23Mi) = 38 on the node holding the image
    assert scores == {"a": 38, "b": 0}
    assert expl.best == ["a"]


def test_pods_are_parsed_once_after_priority_admission() -> None:
    """load_documents hands simulate each pod's PodInfo, parsed after admission wrote spec.priority, so the
    scheduler sees what it would have parsed itself; a pod admission rewrites (matchLabelKeys) is re-parsed."""
    from scheduler.framework.types import parse_pod

    docs = load_documents(_yaml([_priority_class("high", 1000), make_pod("p").obj() | {"spec": {
        **make_pod("p").obj()["spec"], "priorityClassName": "high"}}]))
    pod = docs[-1]
    info = docs.parsed[id(pod)]
    assert info.priority == 1000 == parse_pod(pod).priority
    assert info.spec_fingerprint == parse_pod(pod).spec_fingerprint


def test_simulate_leaves_the_callers_pods_alone_unless_it_owns_them() -> None:
    """Binding writes spec.nodeName; a caller's list can be simulated twice with the same outcome."""
    objs = [make_node("n").obj(), make_pod("p").obj()]
    first = simulate(objs)
    assert "nodeName" not in objs[1]["spec"]
    assert [o.node for o in simulate(objs).outcomes] == [o.node for o in first.outcomes] == ["n"]
    simulate(objs, own_objects=True)
    assert objs[1]["spec"]["nodeName"] == "n"


@pytest.mark.parametrize(
    ("example", "pod", "fix"),
    [
        pytest.param(
            "host-ports.yaml",
            "kube-system/coredns-node-b",
            "  1. free host port UDP 169.254.20.10:53 on node node-b (move or delete pod(s) "
            "kube-system/node-local-dns-7xk2p) -> 1 node(s) [node-b]",
            id="story-2-host-port",
        ),
        pytest.param(
            "placement-factors.yaml", "shop/db", "  1. drop nodeSelector disktype=nvme -> 1 node(s) [worker-1]",
            id="story-3-node-selector",
        ),
    ],
)
def test_field_stories_end_with_the_fix_the_readme_shows(
    example: str, pod: str, fix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README quotes these lines; the first ranked fix is exactly this."""
    main(["simulate", str(EXAMPLES / example), "--explain", pod])
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("What would make it fit (each change checked by re-running the filters on every node):")
    assert lines[start + 1] == fix
    readme = (EXAMPLES.parent / "README.md").read_text()
    assert fix.strip() in readme


def test_dra_example_places_every_gpu_once_and_explains_the_pod_left_out() -> None:
    """examples/dra.yaml: a claim, a template's claim (made by the simulated controller), an extended resource
    backed by DRA each get one of node-b's three GPUs; the pod wanting two 80Gi GPUs is told which claim holds
    the only one."""
    result = simulate(load_documents((EXAMPLES / "dra.yaml").read_text(encoding="utf-8")))
    got = {o.name: (o.node, [(d.request, d.device) for d in o.devices]) for o in result.outcomes}
    assert got["trainer"] == ("node-b", [("gpu", "gpu-0")])
    assert got["worker"] == ("node-b", [("gpu", "gpu-1")])
    assert got["legacy"] == ("node-b", [("container-0-request-0", "gpu-2")])
    assert got["eval"] == (None, [])
    assert _messages(result)["ml/eval"] == (
        "0/2 nodes are available: 2 cannot allocate all claims. preemption: 0/2 nodes are available: 2 "
        "Preemption is not helpful for scheduling."
    )
    worker = next(o for o in result.outcomes if o.name == "worker")
    assert worker.devices[0].claim.startswith("ml/worker-gpu-")
    assert "DEVICES" in render_table(result) and "trainer-gpu/gpu=gpu.example.com/node-b/gpu-0" in render_table(result)
    text = render_text(result.explain("ml", "eval"))
    assert "node-a: no ResourceSlice publishes devices for this node" in text
    assert f"device gpu.example.com/node-b/gpu-1: already allocated to claim {worker.devices[0].claim}" in text


@pytest.mark.parametrize("pinned", [pytest.param(True, id="created-with-node-name"),
                                    pytest.param(False, id="bound-by-the-scheduler")])
def test_bound_pods_get_their_nodes_topology_labels(pinned: bool) -> None:
    """PodTopologyLabelsAdmission (beta, on in v1.37): kube-apiserver copies the node's zone and region labels
    onto a pod bound to it (seen on the test control plane for both ways of binding), so a later pod's
    affinity to `topology.kubernetes.io/zone=z1` pods finds it; without the copy it would stay Pending."""
    first = make_pod("first").labels(app="db")
    first = first.node("a") if pinned else first.node_selector(**{"kubernetes.io/hostname": "a"})
    follower = make_pod("follower").pod_affinity_term(
        "podAffinity", "kubernetes.io/hostname", {"topology.kubernetes.io/zone": "z1", "app": "db"}
    )
    objects = [make_node("a").zone("z1", "r1").obj(), make_node("b").zone("z2", "r1").obj(), first.obj(),
               follower.obj()]
    if pinned:
        objects[2]["status"] = {"phase": "Running"}
    result = simulate(objects)
    assert result.cluster is not None
    stored = next(p for p in result.cluster.pods.values() if p["metadata"]["name"] == "first")
    assert stored["metadata"]["labels"] == {"app": "db", "topology.kubernetes.io/zone": "z1",
                                            "topology.kubernetes.io/region": "r1"}
    assert _placements(result)["default/follower"] == "a"


def test_a_pod_with_null_labels_bound_to_a_zoned_node_gets_the_zone_labels() -> None:
    """`labels: null` is no labels to kube-apiserver: PodTopologyLabels admission gives the pod its node's
    zone and region (found by tests/test_input_properties.py: the copy had raised AttributeError)."""
    pod = make_pod("first").node("a").obj()
    pod["metadata"]["labels"] = None
    dump = {"kind": "List", "items": [make_node("a").zone("z1", "r1").obj(), pod]}
    result = simulate(load_documents(json.dumps(dump)))
    assert result.cluster is not None
    stored = next(p for p in result.cluster.pods.values() if p["metadata"]["name"] == "first")
    assert stored["metadata"]["labels"] == {"topology.kubernetes.io/zone": "z1",
                                            "topology.kubernetes.io/region": "r1"}
