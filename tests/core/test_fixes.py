"""What would make a pod fit: every fix kind, proven by re-running the filters, ranked, combined when needed.

Each test builds a small cluster, explains a pod that fits nowhere, then *applies* the proposed change to
the input and checks the real scheduler places the pod on one of the predicted nodes (the fix is true).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.adapters.memory import MemoryCluster
from scheduler.core.clock import FakeClock
from scheduler.core.explain import Explanation, explain_pod, render_text
from scheduler.core.fixes import Fix, feasible_nodes
from scheduler.core.profile import build_scheduler
from scheduler.core.scheduler import Scheduler
from scheduler.testing import NodeBuilder, PodBuilder, expr, make_node, make_pod

JSON = dict[str, Any]


class Cluster:
    def __init__(self, nodes: list[NodeBuilder], pods: tuple[PodBuilder, ...] | list[PodBuilder] = ()) -> None:
        self.node_objs = [n.obj() for n in nodes]
        self.pod_objs = [p.obj() for p in pods]

    async def explain(self, pod: PodBuilder) -> Explanation:
        sched = await self._run()
        return explain_pod(sched.profiles["pyscheduler"], pod.info(), sched.cache.fresh_snapshot())

    async def place(self, pod: PodBuilder) -> str | None:
        """Where the real scheduler puts the pod in this cluster."""
        obj = pod.obj()
        cluster = MemoryCluster()
        clock = FakeClock()
        sched = build_scheduler(cluster, clock=clock, seed=0)
        cluster.attach(sched)
        for n in self.node_objs:
            cluster.apply_node(n)
        for p in self.pod_objs:
            cluster.apply_pod(p)
        cluster.apply_pod(obj)
        await sched.run_until_idle(advance=clock.advance_to)
        return cluster.node_of(obj["metadata"]["uid"])

    async def _run(self) -> Scheduler:
        cluster = MemoryCluster()
        sched = build_scheduler(cluster, clock=FakeClock(), seed=0)
        cluster.attach(sched)
        for n in self.node_objs:
            cluster.apply_node(n)
        for p in self.pod_objs:
            cluster.apply_pod(p)
        return sched


def fix_of(expl: Explanation, kind: str) -> Fix:
    found = [f for f in expl.fixes if f.kind == kind]
    assert found, f"no {kind} fix in {[f.description for f in expl.fixes]}"
    return found[0]


async def test_tolerate_taint() -> None:
    """Two GPU-tainted nodes: tolerating the taint opens both; applying it schedules the pod there."""
    cluster = Cluster([make_node(f"gpu-{i}").taint("dedicated", "gpu") for i in range(2)] + [
        make_node("cordoned").unschedulable()
    ])
    pod = make_pod("p")
    expl = await cluster.explain(pod)
    fix = fix_of(expl, "tolerate-taint")
    assert fix.description == "tolerate taint dedicated=gpu:NoSchedule"
    assert fix.nodes == ["gpu-0", "gpu-1"]
    assert fix.data["toleration"] == {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    assert await cluster.place(pod.toleration("dedicated", "gpu", "NoSchedule")) in fix.nodes


async def test_lower_request_to_the_largest_that_fits() -> None:
    """The largest free cpu over the nodes is the proposed request; with it the pod binds on that node."""
    cluster = Cluster(
        [make_node("a").capacity(cpu="4"), make_node("b").capacity(cpu="4")],
        [make_pod("ua").node("a").req(cpu="3"), make_pod("ub").node("b").req(cpu="2500m")],
    )
    pod = make_pod("p").req(cpu="2")
    expl = await cluster.explain(pod)
    fix = fix_of(expl, "lower-request")
    assert fix.data == {"resource": "cpu", "request": "1500m"}
    assert fix.nodes == ["b"]
    assert await cluster.place(make_pod("p").req(cpu="1500m")) == "b"


async def test_drop_node_selector_and_relax_affinity() -> None:
    cluster = Cluster([make_node("ssd").labels(disk="ssd", zone="a"), make_node("hdd").labels(disk="hdd", zone="b")])
    pod = make_pod("p").node_selector(disk="nvme")
    expl = await cluster.explain(pod)
    fix = fix_of(expl, "drop-node-selector")
    assert fix.description == "drop nodeSelector disk=nvme" and fix.nodes == ["hdd", "ssd"]
    pod = make_pod("p").required_term([expr("zone", "In", ["c"]), expr("disk", "In", ["ssd"])])
    expl = await cluster.explain(pod)
    relax = fix_of(expl, "relax-node-affinity")
    assert relax.description == "drop requirement zone In [c] from required node affinity term 1"
    assert relax.data == {"term": 0, "requirement": {"key": "zone", "operator": "In", "values": ["c"]}}
    assert relax.nodes == ["ssd"]
    assert await cluster.place(make_pod("p").required_term([expr("disk", "In", ["ssd"])])) == "ssd"


async def test_free_host_port_names_the_holder() -> None:
    cluster = Cluster([make_node("n1")], [make_pod("dns-old", "kube-system").node("n1").host_port(53, "UDP")])
    pod = make_pod("dns", "kube-system").host_port(53, "UDP")
    expl = await cluster.explain(pod)
    fix = fix_of(expl, "free-host-port")
    assert fix.description == "free host port UDP 0.0.0.0:53 on node n1 (move or delete pod(s) kube-system/dns-old)"
    assert fix.nodes == ["n1"]
    assert Cluster([make_node("n1")]).node_objs and await Cluster([make_node("n1")]).place(pod) == "n1"


async def test_uncordon() -> None:
    cluster = Cluster([make_node("only").unschedulable()])
    expl = await cluster.explain(make_pod("p"))
    assert [f.description for f in expl.fixes] == ["uncordon node only"]


async def test_declare_features() -> None:
    """NodeDeclaredFeatures: each node that lacks the feature is proposed, and the node declaring it (as its
    kubelet would after an upgrade) really takes the pod."""
    feature = "RestartAllContainersOnContainerExits"
    pod = make_pod("p").req(cpu="100m").restart_rule()
    expl = await Cluster([make_node("a"), make_node("b").capacity(cpu="0")]).explain(pod)
    fix = fix_of(expl, "declare-features")
    assert fix.nodes == ["a"] and fix.data == {"node": "a", "declaredFeatures": [feature]}
    assert fix.description == f"a node that declares {feature} (node a, with a kubelet that publishes it)"
    assert [f.nodes for f in expl.fixes if f.kind == "declare-features"] == [["a"]], "b stays full of cpu"
    assert await Cluster([make_node("a").declared_features(feature), make_node("b")]).place(pod) == "a"


async def test_combination_when_no_single_change_suffices() -> None:
    """A tainted node that is also too small: neither change alone opens it, both together do."""
    cluster = Cluster([make_node("gpu").taint("dedicated", "gpu").capacity(cpu="1")])
    pod = make_pod("p").req(cpu="2")
    expl = await cluster.explain(pod)
    [fix] = expl.fixes
    assert fix.kind == "combination" and fix.nodes == ["gpu"]
    assert sorted(p.kind for p in fix.parts) == ["lower-request", "tolerate-taint"]
    fixed = make_pod("p").req(cpu="1").toleration("dedicated", "gpu", "NoSchedule")
    assert await cluster.place(fixed) == "gpu"


async def test_fixes_are_ranked_by_nodes_opened() -> None:
    nodes = [make_node(f"t{i}").taint("team", "x") for i in range(3)] + [make_node("c").unschedulable()]
    expl = await Cluster(nodes).explain(make_pod("p"))
    assert [len(f.nodes) for f in expl.fixes] == sorted((len(f.nodes) for f in expl.fixes), reverse=True)
    assert expl.fixes[0].description == "tolerate taint team=x:NoSchedule"
    text = render_text(expl)
    assert "1. tolerate taint team=x:NoSchedule -> 3 node(s) [t0, t1, t2]" in text


async def test_no_fix_when_nothing_helps() -> None:
    """The only node has no cpu left at all: no request can be lowered into it; the text says so."""
    cluster = Cluster([make_node("n").capacity(cpu="1")], [make_pod("full").node("n").req(cpu="1")])
    expl = await cluster.explain(make_pod("p").req(cpu="500m"))
    assert expl.fixes == []
    assert "no single change (or pair of changes) found" in render_text(expl)


async def test_issue_22_cpu_alone_not_cpu_and_uncordon() -> None:
    """Issue 22: cpu short everywhere, one node also cordoned. Lowering cpu to the largest amount free on a
    node where cpu is the only blocker (1800m) fits alone; the cordoned node's 2 cpu is not the answer."""
    cluster = Cluster(
        [make_node("n1").capacity(cpu="4"), make_node("n2").capacity(cpu="4").unschedulable(),
         make_node("n3").capacity(cpu="4")],
        [make_pod("u1").node("n1").req(cpu="2200m"), make_pod("u2").node("n2").req(cpu="2"),
         make_pod("u3").node("n3").req(cpu="3500m")],
    )
    pod = make_pod("p").req(cpu="3")
    expl = await cluster.explain(pod)
    [fix] = expl.fixes
    assert (fix.kind, fix.data, fix.nodes) == ("lower-request", {"resource": "cpu", "request": "1800m"}, ["n1"])
    assert [(s.step, s.nodes) for s in fix.ladder] == [("cpu <= 1800m", ["n1"]), ("cpu <= 500m", ["n1", "n3"])]
    text = render_text(expl)
    assert "  1. lower the cpu request to 1800m -> 1 node(s) [n1]" in text
    assert "     ladder: cpu <= 1800m: 1 node(s); cpu <= 500m: 2 node(s)" in text
    assert await cluster.place(make_pod("p").req(cpu="1800m")) == "n1"


@pytest.mark.parametrize(
    ("frees", "steps"),
    [
        pytest.param([1500], [], id="one-node-no-ladder"),
        pytest.param([1500, 1500, 1500], [], id="same-amount-everywhere"),
        pytest.param([1500, 1000, 500], [1, 2, 3], id="three-steps"),
        pytest.param([90 * i for i in range(1, 31)], [1, 4, 10, 30], id="thirty-nodes-geometric"),
    ],
)
async def test_ladder_steps(frees: list[int], steps: list[int]) -> None:
    """A ladder appears only when larger amounts open more nodes; at most 4 steps, the last opening every
    node where cpu is the only blocker, the counts between them growing geometrically."""
    nodes = [make_node(f"n{i:02d}").capacity(cpu="4") for i in range(len(frees))]
    used = [make_pod(f"u{i:02d}").node(f"n{i:02d}").req(cpu=f"{4000 - f}m") for i, f in enumerate(frees)]
    expl = await Cluster(nodes, used).explain(make_pod("p").req(cpu="3"))
    [fix] = expl.fixes
    assert fix.data["request"] == f"{max(frees)}m"
    assert [len(s.nodes) for s in fix.ladder] == steps


async def test_pod_changes_rank_before_changes_to_other_objects() -> None:
    """Uncordoning three nodes opens more of them than a toleration opens, but the toleration (the pod's own
    change) comes first; each fix says its scope."""
    nodes = [make_node(f"c{i}").unschedulable() for i in range(3)] + [make_node("t").taint("team", "x")]
    expl = await Cluster(nodes).explain(make_pod("p"))
    assert [(f.kind, f.scope) for f in expl.fixes] == [
        ("tolerate-taint", "pod"), ("uncordon", "cluster"), ("uncordon", "cluster"), ("uncordon", "cluster")
    ]


async def test_drop_the_only_requirement_drops_the_required_affinity() -> None:
    """Issue 22: a term's only requirement cannot be dropped (an empty term matches nothing); the change is
    the whole required affinity, and its JSON says exactly what to remove."""
    term = [expr("kubernetes.io/arch", "In", ["arm64"])]
    cluster = Cluster([make_node("amd").labels(**{"kubernetes.io/arch": "amd64"})])
    expl = await cluster.explain(make_pod("p").required_term(term))
    [fix] = expl.fixes
    assert fix.kind == "drop-node-affinity" and fix.nodes == ["amd"]
    assert fix.description == "drop the required node affinity (kubernetes.io/arch In [arm64])"
    assert fix.data == {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}
    ]}}


async def test_raise_max_skew() -> None:
    """A hard zone spread blocks the emptier zones' rivals: the maxSkew that admits each node, as a ladder."""
    nodes = [make_node(f"a{i}").zone(f"z{i}").capacity(cpu="4") for i in (1, 2, 3)]
    pods = [make_pod(f"w{i}").labels(app="web").node("a1") for i in range(4)]
    pods += [make_pod(f"v{i}").labels(app="web").node("a2") for i in range(2)]
    pods.append(make_pod("fill").node("a3").req(cpu="4"))
    pod = make_pod("p").labels(app="web").req(cpu="100m")
    pod = pod.spread_constraint(1, "topology.kubernetes.io/zone", match_labels={"app": "web"})
    expl = await Cluster(nodes, pods).explain(pod)
    fix = fix_of(expl, "raise-max-skew")
    assert fix.description == "raise maxSkew of topology spread constraint 1 (topology.kubernetes.io/zone) from 1 to 3"
    assert fix.data == {"constraint": 0, "maxSkew": 3} and fix.nodes == ["a2"]
    assert [(s.step, s.nodes) for s in fix.ladder] == [("maxSkew 3", ["a2"]), ("maxSkew 5", ["a1", "a2"])]


async def test_room_for_one_more_pod() -> None:
    """A node at its pod limit: one more pod of room there (a change to the node, not the pod)."""
    cluster = Cluster([make_node("full").capacity(pods="2")], [make_pod("a").node("full"), make_pod("b").node("full")])
    expl = await cluster.explain(make_pod("p"))
    [fix] = expl.fixes
    assert (fix.kind, fix.scope, fix.nodes) == ("raise-pod-capacity", "cluster", ["full"])
    assert fix.data == {"node": "full", "allocatable": {"pods": "3"}}


async def test_allow_preemption_for_a_never_pod() -> None:
    """preemptionPolicy Never: the dry run with PreemptLowerPriority names the node and the victims."""
    cluster = Cluster([make_node("n1").capacity(cpu="2")], [make_pod("low").node("n1").req(cpu="2")])
    pod = make_pod("p").priority(1000).preemption_policy("Never").req(cpu="1")
    expl = await cluster.explain(pod)
    fix = fix_of(expl, "allow-preemption")
    assert fix.nodes == ["n1"] and fix.data == {"preemptionPolicy": "PreemptLowerPriority"}
    assert "it would evict default/low from node n1" in fix.description
    assert expl.preemption is not None and expl.preemption.outcome == "not eligible"


async def test_fixes_say_what_they_assume() -> None:
    """Every list of fixes ends with the assumption that no other pending pod takes the room."""
    expl = await Cluster([make_node("only").unschedulable()]).explain(make_pod("p"))
    assert "  (fixes assume no other pending pod takes the room first" in render_text(expl)


@pytest.mark.parametrize("count", [1, 40])
async def test_grouping_keeps_large_answers_short(count: int) -> None:
    """Nodes sharing a decisive reason are one line with a count and at most five names."""
    cluster = Cluster([make_node(f"n{i:02d}").taint("k", "v") for i in range(count)])
    expl = await cluster.explain(make_pod("p"))
    [(reason, names)] = expl.groups()
    assert reason == "TaintToleration: node(s) had untolerated taint(s)" and len(names) == count
    text = render_text(expl)
    assert f"{count} node(s): TaintToleration" in text
    assert text.count("n0") <= 2 * 5 + 1  # names in the group line and the fix line only


async def test_why_this_node_for_a_bound_pod() -> None:
    """A bound pod: its node's per-plugin scores against the runners-up."""
    cluster = Cluster([make_node("big").capacity(cpu="16"), make_node("small").capacity(cpu="2")])
    expl = await cluster.explain(make_pod("p").req(cpu="1").node("big"))
    why = expl.why()
    assert why is not None and why["node"] == "big"
    [runner] = why["runnersUp"]
    assert runner["node"] == "small" and runner["difference"]["NodeResourcesFit"] > 0
    assert "Why big: the pod is on the node with the highest total score" in render_text(expl)


async def test_feasible_nodes_runs_every_node() -> None:
    """The proof step evaluates all nodes (no percentageOfNodesToScore sampling)."""
    sched = await Cluster([make_node(f"n{i}") for i in range(300)])._run()
    assert len(feasible_nodes(sched.profiles["pyscheduler"], make_pod("p").info(), sched.cache.fresh_snapshot())) == 300


async def test_two_taints_on_one_node_are_one_combination() -> None:
    """A node with two taints the pod does not tolerate: neither toleration alone opens it (each is partial),
    the pair does, and applying both binds the pod there."""
    cluster = Cluster([make_node("n").taint("a", "1").taint("b", "2")])
    expl = await cluster.explain(make_pod("p"))
    [fix] = expl.fixes
    assert fix.kind == "combination" and fix.nodes == ["n"]
    assert fix.description == "tolerate taint a=1:NoSchedule and tolerate taint b=2:NoSchedule"
    fixed = make_pod("p").toleration("a", "1", "NoSchedule").toleration("b", "2", "NoSchedule")
    assert await cluster.place(fixed) == "n"
