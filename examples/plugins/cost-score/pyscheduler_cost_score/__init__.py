"""CostScore: a pyscheduler Score plugin that prefers cheaper nodes, read from a node label.

Nodes carry their hourly price as a label (default `example.com/hourly-cost`, a decimal number). The cheapest
feasible node scores 100, the most expensive 0, the others in proportion; a node without the label (or
with a value that is not a number) costs `defaultCost` (default: as much as the most expensive labelled
node, so unlabelled nodes are never preferred). Enable it with a weight in a profile:

    profiles:
    - schedulerName: pyscheduler
      plugins:
        multiPoint:
          enabled: [{name: CostScore, weight: 3}]
      pluginConfig:
      - name: CostScore
        args: {label: example.com/hourly-cost}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from scheduler.framework import MAX_NODE_SCORE, CycleState, Handle, NodeInfo, PodInfo, ScorePlugin, Status

DEFAULT_LABEL = "example.com/hourly-cost"


@dataclass(frozen=True)
class CostScoreArgs:
    """The plugin's pluginConfig args, validated."""

    label: str = DEFAULT_LABEL
    default_cost: float | None = None  # None: as expensive as the most expensive labelled node


class CostScore(ScorePlugin):
    """Score = how cheap the node is among the feasible ones (min-max normalized to 0..100)."""

    name: ClassVar[str] = "CostScore"
    has_normalize: ClassVar[bool] = True

    def __init__(self, args: CostScoreArgs | None, handle: Handle) -> None:
        self.args = args or CostScoreArgs()

    @staticmethod
    def parse_args(raw: Mapping[str, Any] | None) -> CostScoreArgs:
        """Strict: unknown fields and wrong types are errors naming the field (pyscheduler adds the path)."""
        raw = dict(raw or {})
        unknown = sorted(set(raw) - {"label", "defaultCost"})
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r}")
        label = raw.get("label", DEFAULT_LABEL)
        if not isinstance(label, str) or not label:
            raise ValueError(f"label: must be a non-empty string, got {label!r}")
        default = raw.get("defaultCost")
        if default is not None and (isinstance(default, bool) or not isinstance(default, int | float) or default < 0):
            raise ValueError(f"defaultCost: must be a number >= 0, got {default!r}")
        return CostScoreArgs(label, None if default is None else float(default))

    def cost(self, node: NodeInfo) -> float | None:
        """The node's cost from its label, None when absent or not a finite number >= 0."""
        raw = node.node.labels.get(self.args.label) if node.node is not None else None
        try:
            value = float(raw) if raw is not None else math.nan
        except ValueError:
            return None
        return value if math.isfinite(value) and value >= 0 else None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        # Raw score: the cost in milli-units (an int, as scores are); normalize_score turns it into 0..100.
        cost = self.cost(node)
        return -1 if cost is None else round(cost * 1000)

    def score_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        return [self.score(state, pod, n) for n in nodes]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[int]) -> Status | None:
        default = self.args.default_cost
        fallback = max((s for s in scores if s >= 0), default=0) if default is None else round(default * 1000)
        raw = [s if s >= 0 else fallback for s in scores]
        lo, hi = min(raw, default=0), max(raw, default=0)
        for i, s in enumerate(raw):
            scores[i] = MAX_NODE_SCORE if hi == lo else (hi - s) * MAX_NODE_SCORE // (hi - lo)
        return None
