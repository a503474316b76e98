"""Scores read off a utilization shape: upstream plugins/helper/shape_score.go `BuildBrokenLinearFunction`,
which NodeResourcesFit's RequestedToCapacityRatio strategy and VolumeBinding's storage-capacity score share,
with Go's integer division."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scheduler.config.plugin_args import MAX_CUSTOM_PRIORITY_SCORE, MAX_UTILIZATION, UtilizationShapePoint
from scheduler.framework.interface import MAX_NODE_SCORE


def go_div(a: int, b: int) -> int:
    """Go's int64 division, which truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def build_broken_linear_function(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """helper.BuildBrokenLinearFunction: (utilization, score) points joined by straight segments, flat
    before the first point and after the last."""

    def f(p: int) -> int:
        for i, (u, s) in enumerate(shape):
            if p <= u:
                if i == 0:
                    return shape[0][1]
                u0, s0 = shape[i - 1]
                return s0 + go_div((s - s0) * (p - u0), u - u0)
        return shape[-1][1]

    return f


def broken_linear(shape: Sequence[UtilizationShapePoint]) -> list[int]:
    """The function of a configured shape, its scores scaled to node scores (MaxNodeScore /
    MaxCustomPriorityScore, as requestedToCapacityRatioScorer and the volume scorer scale them), tabulated
    for utilization 0..100."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    f = build_broken_linear_function([(p.utilization, p.score * scale) for p in shape])
    return [f(p) for p in range(MAX_UTILIZATION + 1)]
