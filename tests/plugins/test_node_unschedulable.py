"""NodeUnschedulable filter (upstream plugins/nodeunschedulable)."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import NODE, ActionType, CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import NodeInfo
from scheduler.plugins.node_unschedulable import (
    ERR_REASON_UNKNOWN_CONDITION,
    ERR_REASON_UNSCHEDULABLE,
    NAME,
    TAINT_NODE_UNSCHEDULABLE,
    NodeUnschedulable,
)
from scheduler.testing import PodBuilder, make_node, make_pod


@pytest.mark.parametrize(
    ("pod", "cordoned", "fits"),
    [
        pytest.param(make_pod(), False, True, id="schedulable-node"),
        pytest.param(make_pod(), True, False, id="cordoned-no-toleration"),
        pytest.param(
            make_pod().toleration(TAINT_NODE_UNSCHEDULABLE, effect="NoSchedule"),
            True,
            True,
            id="tolerates-unschedulable-noschedule",
        ),
        pytest.param(make_pod().toleration(TAINT_NODE_UNSCHEDULABLE), True, True, id="tolerates-with-empty-effect"),
        pytest.param(
            make_pod().toleration(TAINT_NODE_UNSCHEDULABLE, effect="NoExecute"),
            True,
            False,
            id="wrong-effect",
        ),
        pytest.param(make_pod().toleration(operator="Exists"), True, True, id="tolerate-everything"),
        pytest.param(make_pod().toleration("other", effect="NoSchedule"), True, False, id="unrelated-toleration"),
    ],
)
def test_filter(pod: PodBuilder, cordoned: bool, fits: bool) -> None:
    """A cordoned node rejects unless the pod tolerates node.kubernetes.io/unschedulable:NoSchedule."""
    pl = NodeUnschedulable()
    node = NodeInfo("n1", make_node("n1").unschedulable(cordoned).info())
    info = pod.info()
    status = pl.filter(CycleState(), info, node)
    if fits:
        assert status is None
    else:
        assert status is not None
        assert (status.code, status.reasons, status.plugin) == (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            (ERR_REASON_UNSCHEDULABLE,),
            NAME,
        )
    assert pl.filter_batch(CycleState(), info, [node]) == [status]



def test_missing_node_object() -> None:
    """A NodeInfo without its Node reports unknown conditions instead of raising."""
    status = NodeUnschedulable().filter(CycleState(), make_pod().info(), NodeInfo("ghost"))
    assert status is not None and status.reasons == (ERR_REASON_UNKNOWN_CONDITION,)


def test_events_to_register() -> None:
    """An added node or an uncordon (reported as a taint update) may help."""
    events = NodeUnschedulable().events_to_register()
    assert any(e.resource == NODE and e.action & ActionType.UPDATE_NODE_TAINT for e in events)
    assert any(e.resource == NODE and e.action & ActionType.ADD for e in events)
