"""DefaultNormalizeScore (upstream plugins/helper/normalize_score.go)."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import MAX_NODE_SCORE
from scheduler.plugins.normalize import default_normalize_score


def _expected(scores: list[int], reverse: bool) -> list[int]:
    """The documented formula, written independently of the implementation."""
    top = max(scores, default=0)
    if top == 0:
        return [MAX_NODE_SCORE] * len(scores) if reverse else list(scores)
    out = [MAX_NODE_SCORE * s // top for s in scores]
    return [MAX_NODE_SCORE - s for s in out] if reverse else out


@pytest.mark.parametrize(
    ("scores", "reverse", "want"),
    [
        pytest.param([0, 2, 5], False, [0, 40, 100], id="proportional-to-max"),
        pytest.param([0, 2, 5], True, [100, 60, 0], id="reversed"),
        pytest.param([1, 3], False, [33, 100], id="truncating-division"),
        pytest.param([1, 3], True, [67, 0], id="reverse-after-truncation"),
        pytest.param([0, 0, 0], False, [0, 0, 0], id="all-zero-unchanged"),
        pytest.param([0, 0, 0], True, [100, 100, 100], id="all-zero-reversed-is-max"),
        pytest.param([], True, [], id="empty"),
        pytest.param([7], False, [100], id="single-node-is-max"),
    ],
)
def test_default_normalize_score(scores: list[int], reverse: bool, want: list[int]) -> None:
    """Scores are rescaled in place to [0, 100] relative to the maximum, optionally reversed."""
    got = list(scores)
    assert default_normalize_score(MAX_NODE_SCORE, reverse, got) is None
    assert got == want
    assert got == _expected(scores, reverse)


def test_custom_max_priority() -> None:
    """The ceiling is the max_priority argument, not a hard-coded 100."""
    got = [1, 2, 4]
    default_normalize_score(10, False, got)
    assert got == [10 * 1 // 4, 10 * 2 // 4, 10]
