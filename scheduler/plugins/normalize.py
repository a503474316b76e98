"""Score normalization shared by plugins (upstream plugins/helper/normalize_score.go DefaultNormalizeScore)."""

from __future__ import annotations

from collections.abc import MutableSequence

from scheduler.framework.status import Status


def default_normalize_score(max_priority: int, reverse: bool, scores: MutableSequence[int]) -> Status | None:
    """Rescale scores in place to [0, max_priority] relative to the highest one; reverse flips them.

    When every score is 0 they stay 0, or all become max_priority when reverse (nothing to prefer against).
    Scores are non-negative, so Python's floor division equals Go's truncating int64 division here.
    """
    max_count = max(scores, default=0)
    if max_count <= 0:
        if reverse:
            scores[:] = [max_priority] * len(scores)  # in place, at C speed (no untolerated soft taint anywhere)
        return None
    if reverse:
        scores[:] = [max_priority - max_priority * score // max_count for score in scores]
    else:
        scores[:] = [max_priority * score // max_count for score in scores]
    return None
