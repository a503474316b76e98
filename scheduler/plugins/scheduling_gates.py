"""SchedulingGates: keeps gated pods out of the active queue (upstream plugins/schedulinggates)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from scheduler.framework.interface import (
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
    EnqueueExtensions,
    Handle,
    PreEnqueuePlugin,
)
from scheduler.framework.status import Status, unresolvable
from scheduler.framework.types import PodInfo

NAME = "SchedulingGates"

# fmt.Sprintf("waiting for scheduling gates: %v", gates) with gates a []string renders "[a b]".
REASON_FORMAT = "waiting for scheduling gates: [{gates}]"


def gates_reason(gates: tuple[str, ...]) -> str:
    """The PreEnqueue rejection text for these gate names, as Go's %v prints a string slice."""
    return REASON_FORMAT.format(gates=" ".join(gates))


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    """Rejects pods at PreEnqueue while spec.schedulingGates is non-empty."""

    name: ClassVar[str] = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        """None when ungated; otherwise UnschedulableAndUnresolvable naming the gates in spec order."""
        if not pod.scheduling_gates:
            return None
        return unresolvable(gates_reason(pod.scheduling_gates), plugin=NAME)

    def events_to_register(self) -> list[ClusterEvent]:
        """Only removing the pod's own gates can let it in (upstream TargetPod/UpdatePodSchedulingGatesEliminated)."""
        return [ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)]


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> SchedulingGates:
    """Registry factory; SchedulingGates takes no arguments."""
    return SchedulingGates(raw_args, handle)
