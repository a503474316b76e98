"""Informers for the cluster objects plugins read besides nodes and pods (Namespaces, PVCs, PDBs, ...).

One `ObjectInformer` per kind the enabled plugins declare (`Plugin.object_kinds`): a `Reflector` whose first
LIST makes it synced, whose events go to the object store (`EventHandlers.on_object_event`), and which
relists every resync period so the store converges even if a watch silently missed something.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from scheduler.adapters.cluster.client import JSON, KubeClient
from scheduler.adapters.cluster.reflector import Reflector
from scheduler.adapters.cluster.watch import DEFAULT_RESYNC_PERIOD, LIST_PAGE_SIZE
from scheduler.core.scheduler import Scheduler
from scheduler.framework.objects import KINDS


class ObjectInformer(Reflector):
    """LIST + WATCH of one kind into `EventHandlers.resync_objects` / `EventHandlers.on_object_event`."""

    log = logging.getLogger("pyscheduler.informers")

    def __init__(
        self,
        kind: str,
        scheduler: Scheduler,
        client: KubeClient,
        *,
        resync_period: float = DEFAULT_RESYNC_PERIOD,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(kind, client, KINDS[kind].list_path(), resync_period=resync_period, clock=clock)
        self.kind = kind
        self.scheduler = scheduler
        self.synced = asyncio.Event()

    async def sync(self, stop: asyncio.Event) -> bool:
        if self.synced.is_set():
            return stop.is_set()
        stopped = await super().sync(stop)
        if not stopped:
            count = self.scheduler.objects.count(self.kind)
            self.log.info("informer synced", extra={"kind": self.kind, "objects": count})
        return stopped

    async def list_into_store(self) -> str:
        items, rv = await self.client.list_all(self.path, limit=LIST_PAGE_SIZE)
        counts = self.scheduler.events.resync_objects(self.kind, list(items))
        if self.synced.is_set() and any(counts.values()):
            self.log.info("relist changed objects", extra={"kind": self.kind, **counts})
        self.synced.set()
        return rv

    def deliver(self, kind: str, obj: JSON) -> None:
        self.scheduler.events.on_object_event(self.kind, kind, obj)
