"""Preemption through the whole scheduler over an in-memory cluster: nomination, victims, binding on a later
pass, nominated pods respected by other pods' Filter runs, nominations cleared, and victims that terminate
slowly (a cluster whose kubelets finish deletions only when told)."""

from __future__ import annotations

from typing import Any

from scheduler.adapters.memory import MemoryCluster
from scheduler.core.event_handlers import MODIFIED
from scheduler.core.explain import explain_pod, render_text
from scheduler.framework.types import PodInfo
from scheduler.testing import PodBuilder, SchedulerHarness, make_node, make_pod

JSON = dict[str, Any]


class SlowKubelets(MemoryCluster):
    """Deletions leave pods terminating (deletionTimestamp set) until `finish()`; records NNN patches."""

    def __init__(self) -> None:
        super().__init__()
        self.nominations: list[tuple[str, str]] = []  # (pod, nominatedNodeName written; "" = cleared)
        self.hold = False

    async def delete_preempted_pod(self, victim: PodInfo) -> bool:
        obj = self.pods.get(victim.uid)
        if obj is None:
            return False
        if not self.hold:
            return await super().delete_preempted_pod(victim)
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        if self.scheduler is not None:
            self.scheduler.events.on_pod_event(MODIFIED, obj)
        return True

    def finish(self) -> None:
        for uid, obj in list(self.pods.items()):
            if obj["metadata"].get("deletionTimestamp"):
                self.delete_pod(uid)

    def _set_nominated(self, uid: str, node_name: str) -> None:
        name = self.pods[uid]["metadata"]["name"] if uid in self.pods else uid
        self.nominations.append((name, node_name))
        super()._set_nominated(uid, node_name)


def victim(name: str, node: str, priority: int, cpu: str = "1", started: int = 0) -> PodBuilder:
    return (
        make_pod(name)
        .uid(name)
        .priority(priority)
        .req(cpu=cpu)
        .node(node)
        .scheduler_name("other")
        .start_time(f"2026-01-01T00:00:{started:02d}Z")
    )


def pending(name: str, priority: int, cpu: str = "1") -> PodBuilder:
    return make_pod(name).uid(name).priority(priority).req(cpu=cpu)


async def test_preemptor_evicts_the_cheapest_victims_and_binds_on_a_later_pass() -> None:
    """The preemptor is nominated (in memory and in its status), its victims evicted with events, and it
    binds to the nominated node once they are gone; the nomination ends with the binding."""
    env = SchedulerHarness(cluster=SlowKubelets())
    env.cluster.apply_node(make_node("n1").capacity(cpu="4").obj())
    for i in range(4):
        env.add_pod(victim(f"v{i}", "n1", 100, started=i))
    env.add_pod(pending("big", 1000, cpu="2"))
    await env.settle()
    assert env.node_of("big") == "n1"
    assert env.notes("big") == [
        "0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential placement for pod on node n1, "
        "preempting 2 victims"
    ]
    assert sorted(e.name for e in env.cluster.events if e.reason == "Preempted") == ["v2", "v3"]
    assert {"v0", "v1"} <= set(env.cluster.pods) and not {"v2", "v3"} & set(env.cluster.pods)
    assert isinstance(env.cluster, SlowKubelets) and env.cluster.nominations == [("big", "n1")]
    assert env.scheduler.nominator.node_of("big") is None


async def test_lower_priority_pods_yield_to_a_nomination_higher_ones_do_not() -> None:
    """A pod nominated to n1 (that cannot bind yet) keeps its room from pods of lower or equal priority."""
    env = SchedulerHarness()
    env.cluster.apply_node(make_node("n1").capacity(cpu="2").obj())
    env.add_pod(victim("hold", "n1", 5000, cpu="1"))
    # Does not fit now, and with policy Never its failure leaves its nomination as it is (ModeNoop).
    nominee = pending("nominee", 1000, cpu="2").preemption_policy("Never").nominated_node("n1")
    env.add_pod(nominee)
    env.add_pod(pending("low", 10))
    env.add_pod(pending("equal", 1000))
    await env.settle()
    assert env.scheduler.nominator.node_of("nominee") == "n1", "its status.nominatedNodeName is honoured"
    assert env.node_of("low") is None and env.node_of("equal") is None
    assert env.message("low").startswith("0/1 nodes are available: 1 Insufficient cpu.")
    env.add_pod(pending("higher", 2000))
    await env.settle()
    assert env.node_of("higher") == "n1", "a higher-priority pod does not yield"


async def test_no_candidate_clears_a_stale_nomination() -> None:
    """A pod nominated earlier whose preemption cannot help any more gets its nominatedNodeName removed."""
    cluster = SlowKubelets()
    env = SchedulerHarness(cluster=cluster)
    env.cluster.apply_node(make_node("n1").capacity(cpu="2").obj())
    env.add_pod(victim("hold", "n1", 5000, cpu="2"))
    env.add_pod(pending("p", 1000).nominated_node("n1"))
    await env.settle()
    assert cluster.nominations == [("p", "")]
    assert "nominatedNodeName" not in cluster.pods["p"]["status"]
    assert env.message("p") == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    assert env.scheduler.nominator.node_of("p") is None


async def test_preemptor_waits_for_terminating_victims_and_loses_its_nomination_to_a_higher_pod() -> None:
    """While its victims terminate the preemptor is not eligible to preempt again; a higher-priority pod that
    preempts more on the node clears its nomination; once the victims are gone the higher one binds and the
    lower one is re-evaluated (not stuck) with the reason it cannot preempt."""
    cluster = SlowKubelets()
    cluster.hold = True
    env = SchedulerHarness(cluster=cluster)
    env.cluster.apply_node(make_node("pa").capacity(cpu="4").obj())
    for i in range(4):
        env.add_pod(victim(f"pa-v{i}", "pa", 100, started=i))
    env.add_pod(pending("low", 500, cpu="2"))
    await env.settle()
    terminating = {n for n, o in cluster.pods.items() if o["metadata"].get("deletionTimestamp")}
    assert terminating == {"pa-v2", "pa-v3"}
    assert cluster.pods["low"]["status"]["nominatedNodeName"] == "pa"
    assert env.message("low") == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to a terminating pod on the "
        "nominated node."
    ), "retried while its victims terminate: it does not preempt again"
    env.add_pod(pending("high", 1000, cpu="3"))
    await env.settle()
    terminating = {n for n, o in cluster.pods.items() if o["metadata"].get("deletionTimestamp")}
    assert terminating == {"pa-v1", "pa-v2", "pa-v3"}
    assert "nominatedNodeName" not in cluster.pods["low"]["status"], "cleared by high's preemption"
    cluster.finish()
    await env.settle()
    assert env.node_of("high") == "pa" and env.node_of("low") is None
    assert env.message("low") == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Insufficient cpu."
    )
    assert cluster.nominations == [("low", "pa"), ("high", "pa"), ("low", "")]


async def test_equal_priority_and_policy_never_evict_nothing() -> None:
    env = SchedulerHarness()
    env.cluster.apply_node(make_node("n1").capacity(cpu="1").obj())
    env.add_pod(victim("v", "n1", 1000))
    env.add_pod(pending("peer", 1000))
    env.add_pod(pending("never", 5000).preemption_policy("Never"))
    await env.settle()
    assert "v" in env.cluster.pods and not env.cluster.evictions
    assert env.message("peer").endswith(
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    assert env.message("never").endswith("preemption: not eligible due to preemptionPolicy=Never.")


# --------------------------------------------------------------------------------------------- explain


async def test_explain_shows_which_pods_would_be_evicted_where_and_why_that_node() -> None:
    """For a pending pod that fits nowhere the explanation dry-runs DefaultPreemption (nothing is evicted):
    the chosen node, its victims, the criterion that chose it, the other candidates, and the message."""
    env = SchedulerHarness()
    env.cluster.apply_node(make_node("a").capacity(cpu="2").obj())
    env.cluster.apply_node(make_node("b").capacity(cpu="2").obj())
    env.add_pod(victim("a-high", "a", 500, cpu="2"))
    env.add_pod(victim("b-low", "b", 100, cpu="2"))
    await env.settle()
    preemptor = make_pod("big").uid("big").priority(1000).req(cpu="2").info()
    fwk = env.scheduler.profiles["pyscheduler"]
    expl = explain_pod(fwk, preemptor, env.scheduler.cache.fresh_snapshot())
    assert expl.preemption is not None
    assert (expl.preemption.outcome, expl.preemption.node) == ("preempt", "b")
    assert expl.preemption.criterion == "lowest priority of its most important victim"
    assert {n: [v.pod for v in vs] for n, vs, _ in expl.preemption.candidates} == {
        "a": ["default/a-high"],
        "b": ["default/b-low"],
    }
    assert expl.message.endswith("preemption: found a potential placement for pod on node b, preempting 1 victims")
    doc = expl.to_json()["preemption"]
    assert doc["nominatedNode"] == "b" and doc["why"] == "lowest priority of its most important victim"
    text = render_text(expl)
    assert "would evict default/b-low (priority 100) from b" in text
    assert "why b: lowest priority of its most important victim" in text
    assert "also possible: a: evict default/a-high (priority 500)" in text
    assert not env.cluster.evictions and "b-low" in env.cluster.pods, "explaining evicts nothing"
