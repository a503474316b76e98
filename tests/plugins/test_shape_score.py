"""Scores off a utilization shape (plugins/shape_score.py): upstream's TestBrokenLinearFunction
(noderesources/requested_to_capacity_ratio_test.go, v1.37.2) and Go's integer division under it."""

from __future__ import annotations

import pytest

from scheduler.config.plugin_args import UtilizationShapePoint
from scheduler.plugins.shape_score import broken_linear, build_broken_linear_function, go_div


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        pytest.param(7, 2, 3, id="positive"),
        pytest.param(-7, 2, -3, id="negative-truncates-up"),
        pytest.param(7, -2, -3, id="negative-divisor"),
        pytest.param(-8, 2, -4, id="exact"),
    ],
)
def test_go_div(a: int, b: int, want: int) -> None:
    """Integer division truncates toward zero as in Go, not toward minus infinity."""
    assert go_div(a, b) == want


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        pytest.param(
            [(10, 1), (90, 9)],
            [
                (-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1),
                (20, 2), (89, 8), (90, 9), (99, 9), (100, 9), (110, 9),
            ],
            id="case_0",
        ),
        pytest.param(
            [(0, 2), (40, 10), (100, 0)],
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
            id="case_1",
        ),
        pytest.param(
            [(0, 2), (40, 2), (100, 2)],
            [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
            id="case_2",
        ),
    ],
)
def test_broken_linear_function(points: list[tuple[int, int]], assertions: list[tuple[int, int]]) -> None:
    """Upstream's TestBrokenLinearFunction cases, point by point."""
    function = build_broken_linear_function(points)
    assert [(p, function(p)) for p, _ in assertions] == assertions


@pytest.mark.parametrize(
    ("shape", "want"),
    [
        pytest.param([(0, 0), (100, 10)], {0: 0, 1: 1, 50: 50, 99: 99, 100: 100}, id="linear"),
        pytest.param([(10, 1), (90, 9)], {0: 10, 10: 10, 15: 15, 50: 50, 90: 90, 100: 90}, id="scaled-before"),
        pytest.param([(0, 10), (100, 0)], {0: 100, 33: 67, 100: 0}, id="decreasing-truncates-toward-zero"),
    ],
)
def test_shape_table_scales_before_interpolating(shape: list[tuple[int, int]], want: dict[int, int]) -> None:
    """A configured shape's scores are scaled by 10 first and then interpolated, as upstream scales its
    shape points before BuildBrokenLinearFunction (15 % between (10, 1) and (90, 9) scores 15, not 10)."""
    table = broken_linear([UtilizationShapePoint(u, score) for u, score in shape])
    assert len(table) == 101
    assert {p: table[p] for p in want} == want
