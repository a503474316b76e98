"""PrioritySort: the default QueueSort plugin (upstream plugins/queuesort/priority_sort.go)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from scheduler.framework.interface import Handle, QueueSortPlugin

NAME = "PrioritySort"


class PrioritySort(QueueSortPlugin):
    """Orders the active queue: higher priority first, then earlier enqueue time (then arrival order)."""

    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def sort_key(self, priority: int, timestamp: float, seq: int) -> tuple[int, float, int]:
        """Heap key equivalent to upstream Less; seq breaks exact timestamp ties deterministically."""
        return (-priority, timestamp, seq)


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> PrioritySort:
    """Registry factory; PrioritySort takes no arguments."""
    return PrioritySort(raw_args, handle)
