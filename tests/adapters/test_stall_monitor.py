"""The stall monitor names the plugin call that blocks the scheduling loop, from another thread.

A real loop in a thread of its own plays the scheduling loop and runs a plugin's Filter that sleeps 1.5 s;
the monitor (probing every 50 ms, blocked after 0.3 s) must blame that plugin and extension point once,
log it with the plugin's name, and log when the loop answers again. ~2 s.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

from scheduler.adapters.cluster.stall_monitor import StallMonitor, plugin_methods
from scheduler.framework import CycleState, FilterPlugin, Handle, NodeInfo, PodInfo, ScorePlugin, Status
from scheduler.testing import make_node, make_pod, node_info


class Sleepy(FilterPlugin):
    name: ClassVar[str] = "Sleepy"

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        time.sleep(1.5)
        return None


class Batched(ScorePlugin):
    name: ClassVar[str] = "Batched"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 0


def test_only_the_plugins_own_methods_are_mapped() -> None:
    """Sleepy's filter is mapped to Filter; FilterPlugin's default filter_batch (which calls it) is not, so
    the plugin's own frame is the one blamed."""
    methods = plugin_methods([Sleepy(), Batched()])
    assert sorted(methods.values()) == [("Batched", "Score"), ("Sleepy", "Filter")]
    assert Sleepy.filter.__code__ in methods and FilterPlugin.filter_batch.__code__ not in methods


async def test_a_blocking_filter_is_blamed_logged_and_counted_once(caplog: pytest.LogCaptureFixture) -> None:
    """One 1.5 s Filter call: one long call counted for (Sleepy, Filter), a warning naming it, and a
    warning when the loop answers again."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        ident = thread.ident
        assert ident is not None
        counted: list[tuple[str, str]] = []
        monitor = StallMonitor(
            loop, ident, [Sleepy()], lambda p, e: counted.append((p, e)), probe_period=0.05, blocked_after=0.3
        )
        stopping = asyncio.Event()
        with caplog.at_level(logging.WARNING, logger="pyscheduler.stall"):
            watching = asyncio.create_task(monitor.run(stopping))
            await asyncio.sleep(0.2)  # a few probes answered: the loop is idle
            plugin, pod, node = Sleepy(), make_pod("p").info(), node_info(make_node("n1"))
            blocking = asyncio.wrap_future(
                asyncio.run_coroutine_threadsafe(_call(plugin.filter_batch, pod, [node]), loop)
            )
            await blocking
            await asyncio.sleep(0.3)  # the next probe is answered: the stall is over
            stopping.set()
            await watching
        assert counted == [("Sleepy", "Filter")]
        messages = [
            (r.getMessage(), getattr(r, "plugin", None), getattr(r, "extensionPoint", None)) for r in caplog.records
        ]
        assert messages[0][1:] == ("Sleepy", "Filter")
        assert messages[0][0].startswith("a plugin call is blocking the scheduling loop")
        assert messages[-1] == ("the scheduling loop answers again", "Sleepy", "Filter")
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


async def _call(batch: Any, pod: PodInfo, nodes: list[NodeInfo]) -> None:
    batch(CycleState(), pod, nodes)
