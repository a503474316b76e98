"""Informers for the cluster objects plugins read besides nodes and pods (Namespaces, PVCs, PDBs, ...).

One `ObjectInformer` per kind the enabled plugins declare (`Plugin.object_kinds`): LIST (the informer is
synced once its first LIST is applied), then a streaming WATCH from the LIST's resourceVersion. A 410
relists; any other failure reconnects, at once after a stream that delivered events (as client-go's
reflector does) and with a backoff doubling from 0.5 s to 10 s while reconnecting keeps failing. A fresh
LIST every resync period converges the store even if a watch silently missed something.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterable, Callable

import aiohttp

from scheduler.adapters.cluster.client import JSON, ApiError, KubeClient, wait_or_stop
from scheduler.adapters.cluster.streaming import (
    ReconnectBackoff,
    ResourceExpiredError,
    WatchDiedError,
    check_event,
    open_watch,
)
from scheduler.adapters.cluster.watch import DEFAULT_RESYNC_PERIOD, LIST_PAGE_SIZE
from scheduler.core.scheduler import Scheduler
from scheduler.framework.objects import KINDS

log = logging.getLogger("pyscheduler.informers")

BACKOFF_MIN = 0.5
BACKOFF_MAX = 10.0


class ObjectInformer:
    """LIST + WATCH of one kind into `Scheduler.resync_objects` / `Scheduler.on_object_event`."""

    def __init__(
        self,
        kind: str,
        scheduler: Scheduler,
        client: KubeClient,
        *,
        resync_period: float = DEFAULT_RESYNC_PERIOD,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kind = kind
        self.path = KINDS[kind].list_path()
        self.scheduler = scheduler
        self.client = client
        self.resync_period = resync_period
        self.clock = clock
        self.synced = asyncio.Event()
        self.resource_version = ""
        self.events = 0
        self.lines = 0  # watch lines received (events and bookmarks), whatever ended their stream
        self.relists = 0
        self.reconnects = 0
        self.backoffs = 0  # reconnects that waited (the stream before delivered nothing)
        self.last_activity = 0.0

    async def relist(self) -> None:
        """LIST the kind and converge the store to it; the watch goes on from its resourceVersion."""
        items, rv = await self.client.list_all(self.path, limit=LIST_PAGE_SIZE)
        counts = self.scheduler.resync_objects(self.kind, list(items))
        self.resource_version = rv
        self.relists += 1
        self.last_activity = self.clock()
        if self.synced.is_set() and any(counts.values()):
            log.info("relist changed objects", extra={"kind": self.kind, **counts})
        self.synced.set()

    async def run(self, stop: asyncio.Event) -> None:
        """LIST until it works, then WATCH until `stop` is set (relisting on 410 and every resync period)."""
        delay = BACKOFF_MIN
        while not self.synced.is_set():
            try:
                await self.relist()
                count = self.scheduler.objects.count(self.kind)
                log.info("informer synced", extra={"kind": self.kind, "objects": count})
            except ApiError as exc:
                if exc.status in (401, 403):
                    raise WatchDiedError(f"LIST {self.path} refused (HTTP {exc.status}): {exc.message}") from exc
                log.error("informer LIST failed; retrying", extra={"kind": self.kind, "error": exc.message})
                if await wait_or_stop(stop, delay):
                    return
                delay = min(delay * 2, BACKOFF_MAX)
        next_relist = self.clock() + self.resync_period
        backoff = ReconnectBackoff(BACKOFF_MIN, BACKOFF_MAX)
        expired = False
        while not stop.is_set():
            before = self.lines
            error: Exception | None = None
            try:
                if expired or self.clock() >= next_relist:
                    await self.relist()
                    next_relist = self.clock() + self.resync_period
                    expired = False
                    before = self.lines - 1  # a LIST that worked is progress too
                async with open_watch(self.client, self.path, self.resource_version) as lines:
                    await self.consume(lines, next_relist)
            except ResourceExpiredError:
                expired = True
                continue
            except WatchDiedError:
                raise
            except (ApiError, aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
                error = exc
            # At once after a stream that delivered something (cut, ended by the server or by the resync
            # deadline); back off only while reconnecting keeps failing.
            delay = backoff.after(delivered=self.lines > before)
            self.reconnects += 1
            if error is not None:
                level = logging.WARNING if delay else logging.INFO
                log.log(
                    level,
                    "informer watch failed; reconnecting",
                    extra={"kind": self.kind, "error": repr(error), "delay": delay},
                )
            if delay:
                self.backoffs += 1
                if await wait_or_stop(stop, delay):
                    return

    async def consume(self, lines: AsyncIterable[bytes], until: float) -> int:
        """Apply the events of one watch response until it ends or `until` (clock) passes; return the count."""
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
        """One decoded watch event into the store (BOOKMARKs only move the resourceVersion)."""
        kind, obj = check_event(event)
        self.last_activity = self.clock()
        if kind != "BOOKMARK":
            self.events += 1
            self.scheduler.on_object_event(self.kind, kind, obj)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv:
            self.resource_version = str(rv)
