"""CostScore through pyscheduler's real scheduler in memory (scheduler.testing's harness: no API server),
using only the public face: scheduler.framework and scheduler.testing."""

from __future__ import annotations

from typing import Any

import pytest
from pyscheduler_cost_score import DEFAULT_LABEL, CostScore, CostScoreArgs

from scheduler.testing import SchedulerHarness, configuration, make_node, make_pod


def harness(args: dict[str, Any] | None = None, weight: int = 10) -> SchedulerHarness:
    """pyscheduler's scheduler in memory with CostScore enabled (a bad config raises a ValueError)."""
    plugins = {"multiPoint": {"enabled": [{"name": "CostScore", "weight": weight}]}}
    config = configuration(plugins, {"CostScore": args} if args is not None else None)
    return SchedulerHarness(config, plugins=[CostScore])


async def place(nodes: dict[str, str | None], args: dict[str, Any] | None = None) -> str | None:
    h = harness(args)
    for name, cost in nodes.items():
        node = make_node(name)
        if cost is not None:
            node.label(DEFAULT_LABEL, cost)
        h.add(node)
    pod = h.add_pod(make_pod("p"))
    await h.settle()
    return h.node_of(pod)


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
    with pytest.raises(ValueError, match=rf"profiles\[0\]\.pluginConfig\[0\]\.args: {message}"):
        harness(args)


def test_normalize_is_min_max_and_inverted() -> None:
    plugin = CostScore(CostScoreArgs(), handle=None)  # type: ignore[arg-type]
    scores = [500, 100, 300, -1]
    plugin.normalize_score(None, None, scores)  # type: ignore[arg-type]
    assert scores == [0, 100, 50, 0]
