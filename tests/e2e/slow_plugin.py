"""A Filter plugin that blocks the scheduling loop on purpose (tests/e2e/test_isolation.py loads it with
`--plugin tests.e2e.slow_plugin:SlowFilter`): a pod labelled `example.com/block-seconds: "30"` makes its
first Filter call sleep that long, synchronously, as a plugin doing blocking I/O would."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, ClassVar

from scheduler.framework import CycleState, FilterPlugin, Handle, NodeInfo, PodInfo, Status

LABEL = "example.com/block-seconds"


class SlowFilter(FilterPlugin):
    """time.sleep(label seconds) once per pod; every node passes."""

    name: ClassVar[str] = "SlowFilter"

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.slept: set[str] = set()

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        seconds = pod.labels.get(LABEL)
        if seconds and pod.uid not in self.slept:
            self.slept.add(pod.uid)
            time.sleep(float(seconds))
        return None
