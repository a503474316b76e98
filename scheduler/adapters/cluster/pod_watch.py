"""The pod watch: a plain streaming WATCH of all non-terminal pods, instead of kopf's per-event machinery.

kopf spends ~2 CPU-ms per pod (worker task per object, memories, cause detection, handler invocation) on a
stream that carries ~1.6 events per scheduled pod; this loop decodes each line and hands the object to the
same `ClusterWatcher._dispatch` the node events (still kopf's) go through, so the LIST overlay during a
resync keeps working. Nodes stay on kopf: few objects, few events.

It starts from the resourceVersion of ClusterWatcher's initial pods LIST (no second LIST), asks for
bookmarks and a server-side timeout, and reads with a socket timeout longer than the bookmark period, so a
half-open connection ends in a reconnect instead of silence. A 410 (the resourceVersion was compacted
away) relists through `ClusterWatcher.resync` and goes on from that LIST's resourceVersion; any other end
reconnects from the last resourceVersion seen: at once after a stream that delivered events or bookmarks
(a cut connection must not stall binds), with a backoff of 0.5 s doubling to 10 s only while reconnecting
keeps failing (`ReconnectBackoff`, client-go's reflector rule).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager

import aiohttp

from scheduler.adapters.cluster.client import JSON, ApiError, wait_or_stop
from scheduler.adapters.cluster.streaming import (
    READ_TIMEOUT,
    SERVER_TIMEOUT,
    ReconnectBackoff,
    ResourceExpiredError,
    check_event,
    open_watch,
)
from scheduler.adapters.cluster.watch import POD_FIELD_SELECTOR, PODS_PATH, ClusterWatcher

log = logging.getLogger("pyscheduler.watch.pods")

__all__ = ["PodWatch", "ResourceExpiredError"]

BACKOFF_MIN = 0.5
BACKOFF_MAX = 10.0


class PodWatch:
    """WATCH /api/v1/pods from the last LIST's resourceVersion into `watcher._dispatch`."""

    def __init__(
        self,
        watcher: ClusterWatcher,
        *,
        server_timeout: int = SERVER_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        self.watcher = watcher
        self.client = watcher.client
        self.server_timeout = int(server_timeout)
        self.read_timeout = read_timeout
        self.resource_version = ""
        self.relists = 0
        self.reconnects = 0  # every new WATCH request after the first
        self.backoffs = 0  # reconnects that waited (the stream before delivered nothing)
        self.lines = 0  # watch lines received (events and bookmarks), whatever ended their stream
        self.backoff = ReconnectBackoff(BACKOFF_MIN, BACKOFF_MAX)

    async def run(self, stop: asyncio.Event) -> None:
        """Watch until `stop` is set; starts once the initial LIST is applied."""
        await self.watcher.synced.wait()
        self.resource_version = self.resource_version or self.watcher.pods_resource_version
        expired = not self.resource_version
        while not stop.is_set():
            before = self.lines
            error: Exception | None = None
            try:
                if expired:
                    await self.relist()
                    expired = False
                async with self._open() as lines:
                    await self.consume(lines)  # until the server ends the watch (timeoutSeconds)
            except ResourceExpiredError:
                log.info("pod watch resourceVersion expired; relisting", extra={"rv": self.resource_version})
                expired = True
                continue
            except (ApiError, aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
                error = exc
            delay = self.backoff.after(delivered=self.lines > before)
            self.reconnects += 1
            if error is not None:
                level = logging.WARNING if delay else logging.INFO
                log.log(
                    level,
                    "pod watch failed; reconnecting",
                    extra={"error": repr(error), "rv": self.resource_version, "delay": delay},
                )
            if delay:
                self.backoffs += 1
                if await wait_or_stop(stop, delay):
                    return

    async def relist(self) -> None:
        """A full resync (LIST + reconcile); the watch goes on from that LIST's resourceVersion, so everything
        the LIST shows is applied now (nothing is left to this watch as lag)."""
        await self.watcher.resync(lag_aware=False)
        self.resource_version = self.watcher.pods_resource_version
        self.relists += 1

    async def consume(self, lines: AsyncIterable[bytes]) -> int:
        """Apply every event of one watch response; returns how many lines it carried."""
        count = 0
        async for line in lines:
            if line.strip():
                self.lines += 1
                self.handle(json.loads(line))
                count += 1
        return count

    def handle(self, event: JSON) -> None:
        """One decoded watch event: dispatch it, remember its resourceVersion; 410 raises."""
        kind, obj = check_event(event)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            self.watcher.stats.last_event = self.watcher.clock()
        else:
            self.watcher._dispatch("pods", kind, obj)
        if rv:
            self.resource_version = str(rv)

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[AsyncIterable[bytes]]:
        """One WATCH request from the last resourceVersion; yields its lines."""
        async with open_watch(
            self.client,
            PODS_PATH,
            self.resource_version,
            field_selector=POD_FIELD_SELECTOR,
            server_timeout=self.server_timeout,
            read_timeout=self.read_timeout,
        ) as lines:
            yield lines
