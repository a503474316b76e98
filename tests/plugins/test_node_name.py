"""NodeName plugin (upstream plugins/nodename, v1.37)."""

from __future__ import annotations

import pytest

from scheduler.framework.interface import NODE, ActionType, CycleState
from scheduler.framework.status import Code
from scheduler.framework.types import NodeInfo, parse_pod
from scheduler.plugins.node_name import ERR_REASON, NAME, NodeName
from scheduler.testing import make_node, make_pod


def _nodes(*names: str) -> list[NodeInfo]:
    return [NodeInfo(n, make_node(n).info()) for n in names]


@pytest.mark.parametrize(
    ("wanted", "fits"),
    [
        pytest.param("", [True, True, True], id="no-node-name-fits-all"),
        pytest.param("b", [False, True, False], id="only-named-node"),
        pytest.param("zzz", [False, False, False], id="unknown-node"),
    ],
)
def test_filter(wanted: str, fits: list[bool]) -> None:
    """spec.nodeName restricts the pod to that node; others are UnschedulableAndUnresolvable."""
    obj = make_pod().obj()
    if wanted:
        obj["spec"]["nodeName"] = wanted
    pod = parse_pod(obj)
    nodes = _nodes("a", "b", "c")
    pl = NodeName()
    statuses = pl.filter_batch(CycleState(), pod, nodes)
    assert statuses == [pl.filter(CycleState(), pod, n) for n in nodes]
    assert [s is None for s in statuses] == fits
    for s in statuses:
        if s is not None:
            assert (s.code, s.reasons, s.plugin) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON,), NAME)


def test_pre_filter_narrows_to_named_node() -> None:
    """v1.37 PreFilter returns the named node as the only candidate; no name leaves all nodes."""
    pl = NodeName()
    pinned = make_pod().node("b").info()
    result, status = pl.pre_filter(CycleState(), pinned, [])
    assert status is None and result is not None and result.node_names == {"b"}
    result, status = pl.pre_filter(CycleState(), make_pod().info(), [])
    assert result is None and status is None


def test_reason_and_events() -> None:
    """Upstream wording; only a node add may help."""
    events = NodeName().events_to_register()
    assert len(events) == 1 and events[0].resource == NODE and events[0].action == ActionType.ADD
