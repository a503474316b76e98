"""Tells which plugin call is blocking the scheduling loop, from the control loop's thread.

Every PROBE_PERIOD the monitor posts a no-op to the scheduling loop; when one has waited BLOCKED_AFTER
seconds the loop is blocked, and the monitor reads the scheduling thread's stack (`sys._current_frames`)
for the innermost frame of a plugin's extension-point method: the code objects of every enabled plugin's
methods are mapped to (plugin, extension point) up front, so the hot path pays nothing. Each blocking call
is logged with the plugin's name and extension point (at most once a minute per plugin and point, saying
how many were held back) and counted in `pyscheduler_plugin_long_calls_total`; when the loop answers again
the duration is logged too. A stall outside any plugin is logged with the frame it is in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Callable, Iterable
from types import CodeType, FrameType

from scheduler.framework.interface import Plugin

log = logging.getLogger("pyscheduler.stall")

PROBE_PERIOD = 0.25
BLOCKED_AFTER = 1.0
LOG_PERIOD = 60.0

# Method name -> extension point, for every method the framework calls on a plugin.
POINTS = {
    "pre_enqueue": "PreEnqueue",
    "less": "QueueSort",
    "sort_key": "QueueSort",
    "pre_filter": "PreFilter",
    "add_pod": "PreFilter",
    "remove_pod": "PreFilter",
    "filter": "Filter",
    "filter_batch": "Filter",
    "post_filter": "PostFilter",
    "pre_score": "PreScore",
    "score": "Score",
    "score_batch": "Score",
    "normalize_score": "Score",
    "reserve": "Reserve",
    "unreserve": "Unreserve",
    "permit": "Permit",
    "pre_bind": "PreBind",
    "bind": "Bind",
    "post_bind": "PostBind",
    "on_object_event": "ObjectEvent",
    "events_to_register": "EnqueueExtensions",
}

LongCall = Callable[[str, str], None]
"""Told (plugin, extension point) once per call found blocking the loop (the metric)."""


def plugin_methods(plugins: Iterable[Plugin]) -> dict[CodeType, tuple[str, str]]:
    """Code object of each extension-point method a plugin class defines itself -> (plugin, point).

    Methods inherited from the framework's base classes (the default filter_batch looping over filter) are
    left out: the plugin's own method inside them is the one to blame."""
    out: dict[CodeType, tuple[str, str]] = {}
    for plugin in plugins:
        for klass in type(plugin).__mro__:
            if klass.__module__.startswith("scheduler.framework"):
                continue
            for method, point in POINTS.items():
                code = getattr(klass.__dict__.get(method), "__code__", None)
                if isinstance(code, CodeType):
                    out.setdefault(code, (plugin.name, point))
    return out


def blame(frame: FrameType | None, methods: dict[CodeType, tuple[str, str]]) -> tuple[str, str] | None:
    """(plugin, point) of the innermost plugin method on a stack, or None."""
    while frame is not None:
        found = methods.get(frame.f_code)
        if found is not None:
            return found
        frame = frame.f_back
    return None


def where(frame: FrameType | None) -> str:
    """`file:line function` of a stack's innermost frame."""
    if frame is None:
        return "unknown"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}"


class StallMonitor:
    """Runs on the control loop; watches the scheduling loop `loop` running in thread `thread_id`."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        thread_id: int,
        plugins: Iterable[Plugin],
        on_long_call: LongCall,
        *,
        probe_period: float = PROBE_PERIOD,
        blocked_after: float = BLOCKED_AFTER,
        log_period: float = LOG_PERIOD,
    ) -> None:
        self.loop = loop
        self.thread_id = thread_id
        self.methods = plugin_methods(plugins)
        self.on_long_call = on_long_call
        self.probe_period = probe_period
        self.blocked_after = blocked_after
        self.log_period = log_period
        self._posted = 0.0  # when the outstanding probe was posted (0: none outstanding)
        self._answered = True
        self._blamed: list[tuple[str, str] | None] = []  # what this stall was found in, in order
        self._last_log: dict[tuple[str, str] | None, float] = {}
        self._held: dict[tuple[str, str] | None, int] = {}
        self._logged = False  # the current stall's start was logged
        self.stalls = 0  # plugin calls found blocking the loop

    def _answer(self) -> None:  # runs on the scheduling loop: one attribute write
        self._answered = True

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            self.check(time.monotonic())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), self.probe_period)

    def check(self, now: float) -> None:
        """One tick: post a probe if none is outstanding; look at the stack while one waits too long."""
        if self._answered:
            if self._blamed:
                self._ended(now)
            self._answered = False
            self._posted = now
            self.loop.call_soon_threadsafe(self._answer)
            return
        if now - self._posted < self.blocked_after:
            return
        frame = sys._current_frames().get(self.thread_id)
        found = blame(frame, self.methods)
        if not self._blamed or self._blamed[-1] != found:
            self._started(found, frame, now)

    def _started(self, found: tuple[str, str] | None, frame: FrameType | None, now: float) -> None:
        self._blamed.append(found)
        if found is not None:
            self.stalls += 1
            self.on_long_call(*found)
        last = self._last_log.get(found)
        if last is not None and now - last < self.log_period:
            self._held[found] = self._held.get(found, 0) + 1
            return
        self._last_log[found] = now
        self._logged = True
        fields: dict[str, object] = {"blockedSeconds": round(now - self._posted, 1), "at": where(frame)}
        held = self._held.pop(found, 0)
        if held:
            fields["suppressed"] = held
        if found is None:
            log.warning("the scheduling loop is blocked outside any plugin", extra=fields)
        else:
            plugin, point = found
            log.warning(
                "a plugin call is blocking the scheduling loop; plugins must not block (see docs/plugins.md)",
                extra={"plugin": plugin, "extensionPoint": point, **fields},
            )

    def _ended(self, now: float) -> None:
        """The loop answered: say how long the stall lasted, if its start was logged."""
        last = self._blamed[-1]
        self._blamed = []
        if not self._logged:
            return
        self._logged = False
        fields: dict[str, object] = {"seconds": round(now - self._posted, 1)}
        if last is not None:
            fields.update({"plugin": last[0], "extensionPoint": last[1]})
        log.warning("the scheduling loop answers again", extra=fields)
