"""The end-to-end benchmark's pod-affinity and spread workloads check what they claim: a final state that
breaks their constraints counts as misplaced pods (bench/e2e.py check_placement)."""

from __future__ import annotations

from typing import Any

from bench.e2e import (
    WORKLOADS,
    RunContext,
    Size,
    _node_status,
    check_placement,
)

JSON = dict[str, Any]
CTX = RunContext("w", "pyscheduler", "ns", "n", "run")
SIZE = Size(nodes=6, init_pods=12, pods=6)


def _nodes() -> list[JSON]:
    return [WORKLOADS["basic"].node(CTX, i) | _node_status() for i in range(SIZE.nodes)]


def _place(pods: list[JSON], hosts: list[str]) -> list[JSON]:
    for pod, host in zip(pods, hosts, strict=True):
        pod["spec"]["nodeName"] = host
    return pods


def test_anti_affinity_counts_two_replicas_on_one_node() -> None:
    w = WORKLOADS["anti-affinity"]
    nodes = _nodes()
    names = [n["metadata"]["name"] for n in nodes]
    pods = w.measured_pods(CTX, SIZE)
    assert len(pods) == 6
    assert check_placement(w, nodes, _place(pods, names)) == (0, 0)
    assert check_placement(w, nodes, _place(pods, [names[0], *names[:5]])) == (0, 1)


def test_pod_affinity_counts_pods_outside_the_groups_zones() -> None:
    w = WORKLOADS["pod-affinity"]
    nodes = _nodes()  # zones zone-0, zone-1, zone-2 round robin
    names = [n["metadata"]["name"] for n in nodes]
    init = _place([w.init_pod(CTX, 0)], [names[0]])  # app-0 in zone-0 only
    pods = w.measured_pods(CTX, SIZE)
    assert check_placement(w, nodes, init + _place(pods, [names[0], names[3]] * 3)) == (0, 0)
    assert check_placement(w, nodes, init + _place(pods, [names[1]] * 6)) == (0, 6)


def test_hard_spread_counts_excess_skew_and_preferred_does_not() -> None:
    nodes = _nodes()
    names = [n["metadata"]["name"] for n in nodes]
    skewed = [names[0]] * 4 + [names[1], names[2]]  # zone-0: 4, zone-1: 1, zone-2: 1 -> skew 3
    hard = WORKLOADS["spread"]
    assert check_placement(hard, nodes, _place(hard.measured_pods(CTX, SIZE), names)) == (0, 0)
    assert check_placement(hard, nodes, _place(hard.measured_pods(CTX, SIZE), skewed)) == (0, 2)
    soft = WORKLOADS["preferred-spread"]
    assert check_placement(soft, nodes, _place(soft.measured_pods(CTX, SIZE), skewed)) == (0, 0)
