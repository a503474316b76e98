"""The pod watch: a plain streaming WATCH of all non-terminal pods, instead of kopf's per-event machinery.

kopf spends ~2 CPU-ms per pod (worker task per object, memories, cause detection, handler invocation) on a
stream that carries ~1.6 events per scheduled pod; this `Reflector` decodes each line and hands the object to
`ClusterWatcher.dispatch`, the entry the node events (still kopf's) take too, so the LIST overlay during a
resync keeps working. Nodes stay on kopf: few objects, few events.

It starts from the resourceVersion of ClusterWatcher's initial pods LIST (no second LIST of its own), and a
410 relists through `ClusterWatcher.resync`; the reconnect rules are the reflector's (reflector.py).
"""

from __future__ import annotations

import asyncio
import logging

from scheduler.adapters.cluster.client import JSON
from scheduler.adapters.cluster.reflector import Reflector
from scheduler.adapters.cluster.streaming import READ_TIMEOUT, SERVER_TIMEOUT
from scheduler.adapters.cluster.watch import POD_FIELD_SELECTOR, PODS_PATH, ClusterWatcher


class PodWatch(Reflector):
    """WATCH /api/v1/pods from the last LIST's resourceVersion into `ClusterWatcher.dispatch`."""

    log = logging.getLogger("pyscheduler.watch.pods")

    def __init__(
        self,
        watcher: ClusterWatcher,
        *,
        server_timeout: int = SERVER_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        super().__init__(
            "pods",
            watcher.client,
            PODS_PATH,
            field_selector=POD_FIELD_SELECTOR,
            server_timeout=server_timeout,
            read_timeout=read_timeout,
            clock=watcher.clock,
        )
        self.watcher = watcher

    async def sync(self, stop: asyncio.Event) -> bool:
        """The watcher's initial LIST is this watch's: wait for it and start from its resourceVersion."""
        await self.watcher.synced.wait()
        self.resource_version = self.resource_version or self.watcher.pods_resource_version
        self.expired = not self.resource_version
        return stop.is_set()

    async def list_into_store(self) -> str:
        """A full resync (LIST + reconcile, applied at once: nothing the LIST shows is left to this watch as
        lag); the watch goes on from that LIST's resourceVersion."""
        await self.watcher.resync(lag_aware=False)
        return self.watcher.pods_resource_version

    def deliver(self, kind: str, obj: JSON) -> None:
        self.watcher.dispatch("pods", kind, obj)

    def bookmark(self) -> None:
        self.watcher.stats.last_event = self.watcher.clock()  # a quiet stream is alive (the /livez check)
