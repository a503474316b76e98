"""One streaming WATCH request, shared by the pod watch and the object informers.

The request asks for bookmarks and a server-side timeout, and reads with a socket timeout longer than the
bookmark period, so a half-open connection ends in a reconnect instead of silence. A 410 (the
resourceVersion was compacted away) is `ResourceExpiredError`: the caller relists. A 400/401/403/404 is
`WatchDiedError` (retrying cannot help; the process exits so it is restarted with a fixed config/RBAC).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager

import aiohttp

from scheduler.adapters.cluster.client import JSON, ApiError, KubeClient, status_message

SERVER_TIMEOUT = 300  # timeoutSeconds: must be an int (the API server answers 400 to "300.0")
READ_TIMEOUT = 90.0  # > the ~60 s bookmark period


class ReconnectBackoff:
    """When to reconnect a watch, as client-go's reflector decides: at once after a stream that delivered
    something (a healthy connection that was cut, or ended by the server), and with a delay doubling from
    `initial` to `cap` only while reconnecting keeps failing (nothing delivered: the server is down, refuses,
    or closes at once)."""

    def __init__(self, initial: float = 0.5, cap: float = 10.0) -> None:
        self.initial = initial
        self.cap = cap
        self._next = initial

    def after(self, delivered: bool) -> float:
        """Seconds to wait before the next attempt, given whether the last stream delivered anything."""
        if delivered:
            self._next = self.initial
            return 0.0
        delay = self._next
        self._next = min(delay * 2, self.cap)
        return delay


class ResourceExpiredError(Exception):
    """The watch's resourceVersion is too old (410 Gone): relist."""


class WatchDiedError(RuntimeError):
    """A watch stream stopped for good; the process should exit so that it is restarted."""


def check_event(event: JSON) -> tuple[str, JSON]:
    """(type, object) of one decoded watch event; ERROR events raise (410 -> ResourceExpiredError)."""
    kind = event.get("type")
    obj = event.get("object")
    if not isinstance(obj, dict):
        raise ValueError(f"watch event without an object: {kind}")
    if kind == "ERROR":
        if obj.get("code") == 410:
            raise ResourceExpiredError(str(obj.get("message") or "410 Gone"))
        raise ApiError(int(obj.get("code") or 0), str(obj.get("reason") or ""), str(obj.get("message") or ""), obj)
    if kind not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
        raise ValueError(f"unknown watch event type {kind!r}")
    return str(kind), obj


@asynccontextmanager
async def open_watch(
    client: KubeClient,
    path: str,
    resource_version: str,
    *,
    field_selector: str = "",
    server_timeout: int = SERVER_TIMEOUT,
    read_timeout: float = READ_TIMEOUT,
) -> AsyncIterator[AsyncIterable[bytes]]:
    """One WATCH request through the KubeClient's session (auth, TLS, rate limit); yields its lines."""
    query: list[tuple[str, str | int]] = [
        ("watch", "1"),
        ("resourceVersion", resource_version),
        ("allowWatchBookmarks", "true"),
        ("timeoutSeconds", int(server_timeout)),
    ]
    if field_selector:
        query.append(("fieldSelector", field_selector))
    timeout = aiohttp.ClientTimeout(
        total=None,
        connect=client.connect_timeout,
        sock_connect=client.connect_timeout,
        sock_read=read_timeout,
    )
    await client.limiter.acquire()
    client.stats.requests += 1
    async with asyncio.timeout(client.connect_timeout + read_timeout):
        resp = await client.api_client.call_api(
            path,
            "GET",
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=timeout,
        )
    try:
        if resp.status == 410:
            raise ResourceExpiredError(f"HTTP 410 for resourceVersion {resource_version}")
        if resp.status >= 400:
            reason, message, decoded = status_message(resp.status, await resp.read())
            if resp.status in (400, 401, 403, 404):
                raise WatchDiedError(f"watch of {path} refused (HTTP {resp.status}): {message}")
            raise ApiError(resp.status, reason, message, decoded)
        yield resp.content
    finally:
        resp.close()  # a watch cut short leaves unread data: never hand that connection back to the pool
