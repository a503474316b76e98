"""CostScore through pyscheduler's real framework and in-memory cluster (no API server needed)."""

from __future__ import annotations

from typing import Any

import pytest
from pyscheduler_cost_score import DEFAULT_LABEL, CostScore, CostScoreArgs

from scheduler.adapters.memory import MemoryCluster
from scheduler.config.errors import ConfigError
from scheduler.config.load import load_config
from scheduler.core.clock import FakeClock
from scheduler.core.profile import build_scheduler
from scheduler.plugins.registry import PluginRegistry
from scheduler.testing import make_node, make_pod


def registry() -> PluginRegistry:
    return PluginRegistry.with_out_of_tree(["pyscheduler_cost_score:CostScore"], entry_points=False)


def config(args: dict[str, Any] | None = None, weight: int = 10) -> dict[str, Any]:
    profile: dict[str, Any] = {
        "schedulerName": "pyscheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "CostScore", "weight": weight}]}},
    }
    if args is not None:
        profile["pluginConfig"] = [{"name": "CostScore", "args": args}]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [profile]}


async def place(nodes: dict[str, str | None], args: dict[str, Any] | None = None) -> str | None:
    reg = registry()
    cfg = load_config(config(args), reg.keys(), reg.parse_args, implements=reg.implements)
    cluster, clock = MemoryCluster(), FakeClock()
    sched = build_scheduler(cluster, cfg, clock=clock, seed=0, registry=reg)
    cluster.attach(sched)
    for name, cost in nodes.items():
        node = make_node(name)
        if cost is not None:
            node.label(DEFAULT_LABEL, cost)
        cluster.apply_node(node.obj())
    pod = make_pod("p").obj()
    cluster.apply_pod(pod)
    await sched.run_until_idle(advance=clock.advance_to)
    return cluster.node_of(pod["metadata"]["uid"])


@pytest.mark.parametrize(
    ("nodes", "want"),
    [
        pytest.param({"a": "0.50", "b": "0.10", "c": "0.30"}, "b", id="cheapest-wins"),
        pytest.param({"a": None, "b": "0.90"}, "b", id="unlabelled-is-not-preferred"),
        pytest.param({"a": "cheap", "b": "0.20"}, "b", id="garbage-label-counts-as-unlabelled"),
    ],
)
async def test_placement(nodes: dict[str, str | None], want: str) -> None:
    assert await place(nodes) == want


async def test_default_cost_makes_unlabelled_nodes_cheap() -> None:
    assert await place({"a": None, "b": "0.90"}, {"defaultCost": 0}) == "a"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param({"labell": "x"}, "unknown field 'labell'", id="typo"),
        pytest.param({"label": 3}, "label: must be a non-empty string", id="label-type"),
        pytest.param({"defaultCost": -1}, "defaultCost: must be a number >= 0", id="negative"),
    ],
)
def test_bad_args_name_the_field(args: dict[str, Any], message: str) -> None:
    reg = registry()
    with pytest.raises(ConfigError, match=rf"profiles\[0\]\.pluginConfig\[0\]\.args: {message}"):
        load_config(config(args), reg.keys(), reg.parse_args, implements=reg.implements)


def test_normalize_is_min_max_and_inverted() -> None:
    plugin = CostScore(CostScoreArgs(), handle=None)  # type: ignore[arg-type]
    scores = [500, 100, 300, -1]
    plugin.normalize_score(None, None, scores)  # type: ignore[arg-type]
    assert scores == [0, 100, 50, 0]
