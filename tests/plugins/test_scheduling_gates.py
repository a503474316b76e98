"""SchedulingGates PreEnqueue (upstream plugins/schedulinggates)."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import ActionType
from scheduler.framework.status import Code
from scheduler.framework.types import PodInfo, parse_pod
from scheduler.plugins.scheduling_gates import NAME, SchedulingGates
from scheduler.testing import make_pod


def _gated(*gates: str) -> PodInfo:
    obj = make_pod("gated").obj()
    if gates:
        obj["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    return parse_pod(obj)


@pytest.mark.parametrize(
    ("gates", "want"),
    [
        pytest.param((), None, id="no-gates"),
        pytest.param(("example.com/one",), "waiting for scheduling gates: [example.com/one]", id="one-gate"),
        pytest.param(("b", "a"), "waiting for scheduling gates: [b a]", id="two-gates-in-spec-order"),
    ],
)
def test_pre_enqueue(gates: tuple[str, ...], want: str | None) -> None:
    """Gated pods are held with Go's %v rendering of the gate names; ungated pods pass."""
    status = SchedulingGates().pre_enqueue(_gated(*gates))
    if want is None:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons, status.plugin) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (want,), NAME)


def test_events_to_register() -> None:
    """Only the removal of the pod's gates re-queues it."""
    (event,) = SchedulingGates().events_to_register()
    assert event.action == ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
