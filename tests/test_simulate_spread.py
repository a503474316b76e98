"""`simulate` with topology spreading: the system default constraints decide where a ReplicaSet's pods go,
and pods are created the way kube-apiserver creates them (matchLabelKeys merged into the selector)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from scheduler.admission import admit_pod
from scheduler.cli import main
from scheduler.config.load import load_config
from scheduler.plugins.registry import REGISTRY, implements, parse_plugin_args
from scheduler.simulate import simulate
from scheduler.testing import make_node, make_pod

JSON = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"


def replica_set() -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-5d8f", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d8f"}}},
    }


def web_pod(name: str, node: str | None = None) -> JSON:
    b = make_pod(name).labels(app="web", **{"pod-template-hash": "5d8f"}).owner("ReplicaSet", "web-5d8f")
    if node:
        b.node(node)
    return b.obj()


def cluster() -> list[JSON]:
    """Zone a holds the ReplicaSet's running pods; zone b's nodes are busier with another app's big pod.

    Resource scores prefer zone a (less allocated); only spreading the ReplicaSet prefers zone b.
    """
    objs: list[JSON] = [replica_set()]
    for name, zone in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b")]:
        objs.append(make_node(name).zone(zone).capacity(cpu="4", memory="16Gi").obj())
    objs += [web_pod("web-1", "a1"), web_pod("web-2", "a1"), web_pod("web-3", "a2"), web_pod("web-4", "a2")]
    objs += [make_pod(f"batch-{n}").req(cpu="1500m", memory="6Gi").node(n).obj() for n in ("b1", "b2")]
    return objs


def without_spread() -> Any:
    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "PodTopologySpread"}]}}}],
    }
    return load_config(raw, REGISTRY.keys(), parse_plugin_args, implements=implements)


def test_system_default_spreading_decides_placement() -> None:
    """A new ReplicaSet pod goes to zone b with the default profile, to zone a without PodTopologySpread."""
    spread = simulate([*cluster(), web_pod("web-5")])
    assert [(o.name, o.node) for o in spread.outcomes][-1][1] in ("b1", "b2")
    plain = simulate([*cluster(), web_pod("web-5")], without_spread())
    assert plain.outcomes[-1].node in ("a1", "a2")


def test_system_default_spreading_only_counts_the_pods_own_group() -> None:
    """A pod of no Service or controller has no default constraints: resources decide, as without the plugin."""
    loner = make_pod("loner").labels(app="web", **{"pod-template-hash": "5d8f"}).obj()
    with_plugin = simulate([*cluster(), loner]).outcomes[-1].node
    assert with_plugin == simulate([*cluster(), loner], without_spread()).outcomes[-1].node


def test_hard_zone_spreading_and_its_message() -> None:
    """maxSkew 1 over zones alternates zones; when only the full zone is left, the next pod is refused with
    upstream's words (the FitError part; DefaultPreemption, once present, appends its own " preemption:")."""
    objs: list[JSON] = [
        make_node("a1").zone("a").capacity(pods="3").obj(),
        make_node("b1").zone("b").capacity(pods="1").obj(),
    ]
    for i in range(4):
        objs.append(make_pod(f"s{i}").labels(app="s").spread_constraint(1, ZONE, "DoNotSchedule", {"app": "s"}).obj())
    result = simulate(objs)
    assert [o.node for o in result.outcomes][:2] in (["a1", "b1"], ["b1", "a1"])
    assert result.outcomes[2].node == "a1"
    last = result.outcomes[3]
    assert last.node is None and last.message is not None
    assert last.message.startswith(
        "0/2 nodes are available: 1 Too many pods, 1 node(s) didn't match pod topology spread constraints."
    ), last.message


def test_pods_are_created_as_kube_apiserver_creates_them() -> None:
    """matchLabelKeys values are merged into the stored labelSelector at create (gate SelectorMerge, v1.37)."""
    pod = (
        make_pod("p")
        .labels(app="web", **{"pod-template-hash": "5d8f"})
        .spread_constraint(1, ZONE, "DoNotSchedule", {"app": "web"}, matchLabelKeys=["pod-template-hash", "absent"])
        .spread_constraint(1, "kubernetes.io/hostname", "ScheduleAnyway", None, matchLabelKeys=["app"])
        .obj()
    )
    created = admit_pod(pod)
    first, second = created["spec"]["topologySpreadConstraints"]
    assert first["labelSelector"] == {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "pod-template-hash", "operator": "In", "values": ["5d8f"]}],
    }
    assert "labelSelector" not in second  # a nil selector matches nothing and stays nil
    assert "matchExpressions" not in pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]  # input untouched
    result = simulate([make_node("n1").zone("a").obj(), pod])
    assert result.cluster is not None
    stored = next(iter(result.cluster.pods.values()))
    assert stored["spec"]["topologySpreadConstraints"][0]["labelSelector"] == first["labelSelector"]
    assert result.outcomes[0].node == "n1"


def test_topology_spread_example(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/topology-spread.yaml: the ReplicaSet's pod goes to the other zone; ledger-3 fits nowhere, and
    its explanation shows the domain counts and the skew."""
    example = str(Path(__file__).resolve().parent.parent / "examples" / "topology-spread.yaml")
    assert main(["simulate", example, "--explain", "shop/ledger-3"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^shop\s+web-3\s+b1\s*$", out, re.M), out
    assert (
        "ledger-3  <pending>  0/3 nodes are available: 1 Too many pods, 2 node(s) didn't match pod topology "
        "spread constraints." in out
    )
    assert (
        "domain topology.kubernetes.io/zone=a has 2 matching pod(s) + this pod; global minimum 1 over 2 eligible "
        "domain(s) (minDomains 1); skew 2+1-1 = 2 > maxSkew 1" in out
    )
