"""A plugin's failure can be debugged: its message keeps the exception type inside upstream's frame, its
traceback is logged (once a minute per plugin and point, counting the rest), Unreserve failures are
logged, and a broken QueueSort or QueueingHint cannot stop the queue. QueueSort's `less` and QueueingHint
functions do what upstream's do."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pytest

from scheduler.framework import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    NodeInfo,
    NodeRecord,
    Plugin,
    PodInfo,
    QueuedPodInfo,
    QueueingHint,
    QueueSortPlugin,
    ReservePlugin,
    Status,
    unschedulable,
)
from scheduler.framework.runtime import PluginErrorLog
from scheduler.testing import SchedulerHarness, configuration, make_node, make_pod


class BoomFilter(FilterPlugin):
    """Raises KeyError('team-db') on pods labelled boom=yes."""

    name: ClassVar[str] = "BoomFilter"

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if pod.labels.get("boom") == "yes":
            raise KeyError("team-db")
        return None


class FailingUnreserve(ReservePlugin):
    """Reserve rejects pods labelled refuse=yes; its Unreserve then raises."""

    name: ClassVar[str] = "FailingUnreserve"

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.handle = handle

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return unschedulable("refused") if pod.labels.get("refuse") == "yes" else None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise RuntimeError("lost the reservation ledger")


def harness(plugin: type[Plugin], *nodes: str) -> SchedulerHarness:
    h = SchedulerHarness(configuration({"multiPoint": {"enabled": [{"name": plugin.name}]}}), plugins=[plugin])
    h.add(*(make_node(n) for n in nodes or ("n1",)))
    return h


async def test_the_message_keeps_the_exception_type_and_the_traceback_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`running "BoomFilter" filter plugin: KeyError: 'team-db'` (upstream's frame, Python's type inside),
    a SchedulerError condition, and the traceback in the log with the plugin, point and pod."""
    h = harness(BoomFilter)
    with caplog.at_level(logging.ERROR, logger="pyscheduler.framework"):
        pod = h.add_pod(make_pod("p").label("boom", "yes"))
        await h.settle(advance_clock=False)
    cond = h.condition(pod)
    assert cond is not None and cond.reason == "SchedulerError"
    assert cond.message == "running \"BoomFilter\" filter plugin: KeyError: 'team-db'"
    [record] = caplog.records
    assert record.getMessage() == "plugin raised an exception"
    assert (record.plugin, record.extensionPoint, record.pod) == ("BoomFilter", "Filter", "default/p")  # type: ignore[attr-defined]
    assert record.exc_info is not None and record.exc_info[0] is KeyError
    assert "raise KeyError(\"team-db\")" in caplog.text


def test_tracebacks_are_rate_limited_per_plugin_and_point(caplog: pytest.LogCaptureFixture) -> None:
    """One traceback per (plugin, point) a minute; the next one says how many were held back."""
    now = [0.0]
    errors = PluginErrorLog(period=60.0, clock=lambda: now[0])
    with caplog.at_level(logging.ERROR, logger="pyscheduler.framework"):
        logged = [errors.report("A", "Filter", KeyError("x")) for _ in range(5)]
        logged.append(errors.report("A", "Score", KeyError("x")))
        now[0] = 61.0
        logged.append(errors.report("A", "Filter", KeyError("x")))
    assert logged == [True, False, False, False, False, True, True]
    assert [getattr(r, "suppressed", 0) for r in caplog.records] == [0, 0, 4]


async def test_an_unreserve_failure_is_logged_and_the_pod_still_requeued(caplog: pytest.LogCaptureFixture) -> None:
    """Unreserve is best effort, as upstream; its exception is logged with the pod, not swallowed."""
    h = harness(FailingUnreserve)
    with caplog.at_level(logging.ERROR, logger="pyscheduler.framework"):
        pod = h.add_pod(make_pod("p").label("refuse", "yes"))
        await h.settle(advance_clock=False)
    assert h.message(pod) == "0/1 nodes are available: 1 refused."
    [record] = caplog.records
    assert (record.plugin, record.extensionPoint) == ("FailingUnreserve", "Unreserve")  # type: ignore[attr-defined]
    assert record.error == "RuntimeError: lost the reservation ledger"  # type: ignore[attr-defined]


class ByName(QueueSortPlugin):
    """Upstream's Less form: pods pop in reverse name order (raises for a pod named 'bad')."""

    name: ClassVar[str] = "ByName"

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.handle = handle

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        if "bad" in (a.pod.name, b.pod.name):
            raise ValueError("cannot order")
        return a.pod.name > b.pod.name


def sorted_harness() -> SchedulerHarness:
    plugins = {"queueSort": {"enabled": [{"name": "ByName"}], "disabled": [{"name": "*"}]}}
    h = SchedulerHarness(configuration(plugins), plugins=[ByName])
    h.add(make_node("n1"))
    return h


async def test_queue_sort_less_orders_the_queue() -> None:
    """A QueueSort defining only `less` orders activeQ by it (PrioritySort keeps its heap key)."""
    h = sorted_harness()
    for name in ("b", "d", "a", "c"):
        h.add(make_pod(name))
    await h.settle()
    assert [key for key, _ in h.cluster.bindings] == ["default/d", "default/c", "default/b", "default/a"]


async def test_a_raising_less_is_contained(caplog: pytest.LogCaptureFixture) -> None:
    """`less` raising while pods are queued: the watch goes on, the pods are ordered like PrioritySort and
    bound, and the error is logged with the plugin."""
    h = sorted_harness()
    with caplog.at_level(logging.ERROR, logger="pyscheduler.framework"):
        for name in ("x", "bad", "y"):
            h.add(make_pod(name))
        await h.settle()
    assert len(h.cluster.bindings) == 3
    assert {(r.plugin, r.extensionPoint) for r in caplog.records} == {("ByName", "QueueSort")}  # type: ignore[attr-defined]


class NeedsGpuNode(FilterPlugin, EnqueueExtensions):
    """Rejects every node without label gpu=yes; a QueueingHint lets only a node add with that label requeue
    its pods (and raises on nodes labelled hint=raise)."""

    name: ClassVar[str] = "NeedsGpuNode"

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        labels = node.node.labels if node.node is not None else {}
        return None if labels.get("gpu") == "yes" else unschedulable("no gpu")

    def events_to_register(self) -> Sequence[ClusterEvent | ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD), self.hint)]

    @staticmethod
    def hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        assert old is None and isinstance(new, NodeRecord)
        if new.labels.get("hint") == "raise":
            raise RuntimeError("hint broke")
        return QueueingHint.QUEUE if new.labels.get("gpu") == "yes" else QueueingHint.QUEUE_SKIP


@pytest.mark.parametrize(
    ("labels", "queue"),
    [
        pytest.param({}, "unschedulable", id="skip"),
        pytest.param({"gpu": "yes"}, "active", id="queue"),
        pytest.param({"hint": "raise"}, "active", id="raising-hint-queues"),
    ],
)
async def test_queueing_hints_decide_which_events_requeue_a_pod(labels: dict[str, str], queue: str) -> None:
    """A node add without the gpu label is skipped for the rejected pod; one with it requeues it; a hint
    that raises counts as QUEUE (a buggy hint never strands a pod)."""
    h = harness(NeedsGpuNode)
    pod = h.add_pod(make_pod("p"))
    await h.settle(advance_clock=False)
    uid = pod["metadata"]["uid"]
    assert h.scheduler.queue.queue_of(uid) == "unschedulable"
    node = make_node("n2")
    for key, value in labels.items():
        node.label(key, value)
    h.clock.advance(60)  # past the pod's backoff: a requeue goes straight to activeQ
    h.add(node)
    assert h.scheduler.queue.queue_of(uid) == queue


class BadEvents(FilterPlugin, EnqueueExtensions):
    """events_to_register returns a string instead of events."""

    name: ClassVar[str] = "BadEvents"

    def __init__(self, args: Mapping[str, Any] | None, handle: Handle) -> None:
        self.handle = handle

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None

    def events_to_register(self) -> Sequence[ClusterEvent | ClusterEventWithHint]:
        return ["NodeAdd"]  # type: ignore[list-item]


def test_garbage_from_events_to_register_stops_the_startup_naming_the_plugin() -> None:
    """A configuration error (one line, exit 2 from the CLI), not a traceback or a plugin never requeued."""
    with pytest.raises(ValueError) as err:
        harness(BadEvents)
    want = "plugin 'BadEvents': events_to_register returned str, want ClusterEvent or ClusterEventWithHint"
    assert str(err.value) == want
