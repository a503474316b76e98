"""The pod watch: a plain streaming WATCH of all non-terminal pods, instead of kopf's per-event machinery.

kopf spends ~2 CPU-ms per pod (worker task per object, memories, cause detection, handler invocation) on a
stream that carries ~1.6 events per scheduled pod; this loop decodes each line and hands the object to the
same `ClusterWatcher._dispatch` the node events (still kopf's) go through, so the LIST overlay during a
resync keeps working. Nodes stay on kopf: few objects, few events.

It starts from the resourceVersion of ClusterWatcher's initial pods LIST (no second LIST), asks for
bookmarks and a server-side timeout, and reads with a socket timeout longer than the bookmark period, so a
half-open connection ends in a reconnect instead of silence. A 410 (the resourceVersion was compacted
away) relists through `ClusterWatcher.resync` and goes on from that LIST's resourceVersion; any other
failure reconnects from the last resourceVersion seen, with a backoff of 0.5 s doubling to 10 s.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager

import aiohttp

from scheduler.adapters.cluster.client import JSON, ApiError, status_message
from scheduler.adapters.cluster.watch import POD_FIELD_SELECTOR, PODS_PATH, ClusterWatcher, WatchDiedError, wait_or_stop

log = logging.getLogger("pyscheduler.watch.pods")

SERVER_TIMEOUT = 300  # timeoutSeconds: must be an int (the API server answers 400 to "300.0")
READ_TIMEOUT = 90.0  # > the ~60 s bookmark period
BACKOFF_MIN = 0.5
BACKOFF_MAX = 10.0


class ResourceExpiredError(Exception):
    """The watch's resourceVersion is too old (410 Gone): relist."""


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
        self.reconnects = 0

    async def run(self, stop: asyncio.Event) -> None:
        """Watch until `stop` is set; starts once the initial LIST is applied."""
        await self.watcher.synced.wait()
        self.resource_version = self.resource_version or self.watcher.pods_resource_version
        expired = not self.resource_version
        delay = BACKOFF_MIN
        while not stop.is_set():
            try:
                if expired:
                    await self.relist()
                    expired = False
                async with self._open() as lines:
                    if await self.consume(lines):
                        delay = BACKOFF_MIN
                        continue  # the server ended the watch (timeoutSeconds): reconnect at once
            except ResourceExpiredError:
                log.info("pod watch resourceVersion expired; relisting", extra={"rv": self.resource_version})
                expired = True
                continue
            except (ApiError, aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
                log.warning(
                    "pod watch failed; reconnecting",
                    extra={"error": repr(exc), "rv": self.resource_version, "delay": delay},
                )
            self.reconnects += 1
            if await wait_or_stop(stop, delay):
                return
            delay = min(delay * 2, BACKOFF_MAX)

    async def relist(self) -> None:
        """A full resync (LIST + reconcile); the watch goes on from that LIST's resourceVersion."""
        await self.watcher.resync()
        self.resource_version = self.watcher.pods_resource_version
        self.relists += 1

    async def consume(self, lines: AsyncIterable[bytes]) -> int:
        """Apply every event of one watch response; returns how many lines it carried."""
        count = 0
        async for line in lines:
            if line.strip():
                self.handle(json.loads(line))
                count += 1
        return count

    def handle(self, event: JSON) -> None:
        """One decoded watch event: dispatch it, remember its resourceVersion; 410 raises."""
        kind = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            raise ValueError(f"watch event without an object: {kind}")
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise ResourceExpiredError(str(obj.get("message") or "410 Gone"))
            raise ApiError(int(obj.get("code") or 0), str(obj.get("reason") or ""), str(obj.get("message") or ""), obj)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            self.watcher.stats.last_event = self.watcher.clock()
        elif kind in ("ADDED", "MODIFIED", "DELETED"):
            self.watcher._dispatch("pods", kind, obj)
        else:
            raise ValueError(f"unknown watch event type {kind!r}")
        if rv:
            self.resource_version = str(rv)

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[AsyncIterable[bytes]]:
        """One WATCH request through the KubeClient's session (auth, TLS, rate limit); yields its lines."""
        query: list[tuple[str, str | int]] = [
            ("watch", "1"),
            ("resourceVersion", self.resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", self.server_timeout),
            ("fieldSelector", POD_FIELD_SELECTOR),
        ]
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=self.client.connect_timeout,
            sock_connect=self.client.connect_timeout,
            sock_read=self.read_timeout,
        )
        await self.client.limiter.acquire()
        self.client.stats.requests += 1
        async with asyncio.timeout(self.client.connect_timeout + self.read_timeout):
            resp = await self.client.api_client.call_api(
                PODS_PATH,
                "GET",
                query_params=query,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=timeout,
            )
        try:
            if resp.status == 410:
                raise ResourceExpiredError(f"HTTP 410 for resourceVersion {self.resource_version}")
            if resp.status >= 400:
                reason, message, decoded = status_message(resp.status, await resp.read())
                if resp.status in (400, 401, 403, 404):
                    raise WatchDiedError(f"pod watch refused (HTTP {resp.status}): {message}")
                raise ApiError(resp.status, reason, message, decoded)
            yield resp.content
        finally:
            resp.close()  # a watch cut short leaves unread data: never hand that connection back to the pool
