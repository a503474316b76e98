"""The one LIST + WATCH loop, as client-go's reflector runs it; the pod watch and the object informers are
two configurations of it (pod_watch.py, informers.py).

`Reflector.run`: `sync` (the first LIST, or waiting for whoever does it), then `watch` until stopped: one
streaming WATCH request after another from the last resourceVersion seen (streaming.open_watch), each line
handed to `deliver`. A 410 (the resourceVersion was compacted away) relists and goes on from that LIST's
resourceVersion; with a `resync_period` the loop also relists that often, so the store converges even if a
watch silently missed something. Any other end reconnects: at once after a stream that delivered events or
bookmarks, or after a LIST that worked (a cut connection must not stall binds), and with a backoff of 0.5 s
doubling to 10 s only while reconnecting keeps failing (`ReconnectBackoff`). A 400/401/403/404 ends the
loop (`WatchDiedError`): the process exits so that it is restarted with a fixed configuration or RBAC.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import AsyncIterable, Callable
from typing import ClassVar

import aiohttp

from scheduler.adapters.cluster.client import JSON, ApiError, KubeClient, wait_or_stop
from scheduler.adapters.cluster.streaming import (
    READ_TIMEOUT,
    SERVER_TIMEOUT,
    ReconnectBackoff,
    ResourceExpiredError,
    WatchDiedError,
    check_event,
    open_watch,
)

BACKOFF_MIN = 0.5
BACKOFF_MAX = 10.0


class Reflector:
    """LIST + WATCH of one collection (`path`) into a store; subclasses say how to LIST and where events go."""

    log: ClassVar[logging.Logger] = logging.getLogger("pyscheduler.watch")

    def __init__(
        self,
        name: str,
        client: KubeClient,
        path: str,
        *,
        field_selector: str = "",
        resync_period: float | None = None,
        server_timeout: int = SERVER_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name  # for logs: "pods", or the kind
        self.client = client
        self.path = path
        self.field_selector = field_selector
        self.resync_period = resync_period  # None: never relist but after a 410
        self.server_timeout = int(server_timeout)
        self.read_timeout = read_timeout
        self.clock = clock
        self.resource_version = ""
        self.expired = False  # the next WATCH needs a LIST first (a 410, or nothing to start from)
        self.events = 0  # watch events delivered (bookmarks excluded)
        self.lines = 0  # watch lines received (events and bookmarks), whatever ended their stream
        self.relists = 0
        self.reconnects = 0  # every new WATCH request after the first
        self.backoffs = 0  # reconnects that waited (the stream before delivered nothing)
        self.last_activity = 0.0  # clock time of the latest line or LIST
        self.backoff = ReconnectBackoff(BACKOFF_MIN, BACKOFF_MAX)

    # ------------------------------------------------------------------ what a configuration provides

    async def list_into_store(self) -> str:
        """LIST the collection and converge the store to it; returns the LIST's resourceVersion."""
        raise NotImplementedError

    def deliver(self, kind: str, obj: JSON) -> None:
        """Apply one watch event (ADDED, MODIFIED, DELETED) to the store."""
        raise NotImplementedError

    def bookmark(self) -> None:
        """A BOOKMARK arrived: the stream is alive (its resourceVersion is already remembered)."""

    async def sync(self, stop: asyncio.Event) -> bool:
        """The first LIST, retried until it works; True if stopped first. A 401/403 ends the loop."""
        delay = BACKOFF_MIN
        while True:
            try:
                await self.relist()
                return False
            except ApiError as exc:
                if exc.status in (401, 403):
                    raise WatchDiedError(f"LIST {self.path} refused (HTTP {exc.status}): {exc.message}") from exc
                self.log.error("LIST failed; retrying", extra={"watch": self.name, "error": exc.message})
                if await wait_or_stop(stop, delay):
                    return True
                delay = min(delay * 2, BACKOFF_MAX)

    # ------------------------------------------------------------------ the loop

    async def run(self, stop: asyncio.Event) -> None:
        """Sync, then watch until `stop` is set."""
        if not await self.sync(stop):
            await self.watch(stop)

    async def relist(self) -> None:
        """LIST into the store; the watch goes on from that LIST's resourceVersion."""
        self.resource_version = await self.list_into_store()
        self.relists += 1
        self.last_activity = self.clock()

    async def watch(self, stop: asyncio.Event) -> None:
        """WATCH request after WATCH request until `stop` is set (relisting on 410 and every resync period)."""
        next_relist = self._next_relist()
        while not stop.is_set():
            before = self.lines
            error: Exception | None = None
            try:
                if self.expired or self.clock() >= next_relist:
                    await self.relist()
                    next_relist = self._next_relist()
                    self.expired = False
                    before = self.lines - 1  # a LIST that worked is progress too
                async with open_watch(
                    self.client,
                    self.path,
                    self.resource_version,
                    field_selector=self.field_selector,
                    server_timeout=self.server_timeout,
                    read_timeout=self.read_timeout,
                ) as lines:
                    await self.consume(lines, next_relist)  # until the server ends it (timeoutSeconds)
            except ResourceExpiredError:
                self.log.info("watch resourceVersion expired; relisting", extra={"watch": self.name})
                self.expired = True
                continue
            except (ApiError, aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
                error = exc
            delay = self.backoff.after(delivered=self.lines > before)
            self.reconnects += 1
            if error is not None:
                self.log.log(
                    logging.WARNING if delay else logging.INFO,
                    "watch failed; reconnecting",
                    extra={"watch": self.name, "error": repr(error), "rv": self.resource_version, "delay": delay},
                )
            if delay:
                self.backoffs += 1
                if await wait_or_stop(stop, delay):
                    return

    def _next_relist(self) -> float:
        return self.clock() + self.resync_period if self.resync_period is not None else math.inf

    async def consume(self, lines: AsyncIterable[bytes], until: float = math.inf) -> int:
        """Apply the events of one watch response until it ends or `until` (clock) passes; returns the count."""
        count = 0
        async for line in lines:
            if line.strip():
                self.lines += 1
                self.handle(json.loads(line))
                count += 1
            if self.clock() >= until:
                break
        return count

    def handle(self, event: JSON) -> None:
        """One decoded watch line: deliver it, remember its resourceVersion; an ERROR line raises (410:
        ResourceExpiredError)."""
        kind, obj = check_event(event)
        self.last_activity = self.clock()
        if kind == "BOOKMARK":
            self.bookmark()
        else:
            self.events += 1
            self.deliver(kind, obj)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv:
            self.resource_version = str(rv)
