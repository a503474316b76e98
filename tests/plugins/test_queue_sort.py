"""PrioritySort queue ordering (upstream plugins/queuesort/priority_sort.go)."""

from __future__ import annotations

from scheduler.plugins import queue_sort
from scheduler.plugins.queue_sort import NAME, PrioritySort
from scheduler.testing import StaticHandle


def _less(pl: PrioritySort, a: tuple[int, float, int], b: tuple[int, float, int]) -> bool:
    return pl.sort_key(*a) < pl.sort_key(*b)


def test_higher_priority_pops_first() -> None:
    """A higher priority wins even when it was enqueued later."""
    pl = PrioritySort()
    assert _less(pl, (10, 5.0, 2), (1, 1.0, 1))
    assert not _less(pl, (1, 1.0, 1), (10, 5.0, 2))


def test_equal_priority_earlier_timestamp_first() -> None:
    """Ties on priority go to the pod queued first."""
    pl = PrioritySort()
    assert _less(pl, (3, 1.0, 9), (3, 2.0, 1))


def test_seq_breaks_exact_ties() -> None:
    """Same priority and timestamp: arrival sequence decides, so the order is total and stable."""
    pl = PrioritySort()
    assert _less(pl, (0, 1.0, 1), (0, 1.0, 2))


def test_negative_priorities_sort_below_zero() -> None:
    """Priorities are signed int32s; negative ones pop after the default 0."""
    entries = [(-5, 0.0, 0), (0, 9.0, 1), (2, 9.5, 2), (0, 3.0, 3)]
    pl = PrioritySort()
    ordered = sorted(entries, key=lambda e: pl.sort_key(*e))
    assert [e[2] for e in ordered] == [2, 3, 1, 0]


def test_factory_and_name() -> None:
    """The registry factory builds the plugin under its upstream name."""
    pl = queue_sort.new(None, StaticHandle())
    assert isinstance(pl, PrioritySort)
    assert pl.name == NAME == "PrioritySort"
