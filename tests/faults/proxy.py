"""A small fault-injecting proxy between a client (pyscheduler) and the kube-apiserver.

It terminates TLS with the apiserver's own serving certificate (clients use insecure-skip-tls-verify, as the
harness kubeconfig does), re-encrypts towards the apiserver and forwards bytes both ways. It understands just
enough HTTP/1.1 (request heads, Content-Length and chunked bodies; responses are forwarded as raw bytes) to
act per request. Faults:

* `cut()`: abort every open connection (both sides), as a middlebox reset or a crashed LB would.
* `partition()` / `heal()`: drop traffic. Connections open during the partition (and those opened while it
  lasts) become black holes for good: bytes are read and discarded both ways, so requests time out.
* `stall()` / `resume()`: hold the bytes (nothing is lost; they flow on resume).
* `storm(status, seconds)`: every request answered locally with `status` (429 with Retry-After, or 5xx) and
  never forwarded; open connections are cut at its start so every client meets it.
* `lose_replies(match, count, before=None, then=None)`: forward a matching request, then abort the connection
  as soon as the reply starts: the API server committed the request, the client never learns it (a lost bind
  reply). `before` runs just before each such request is forwarded, `then` right after its reply is lost (to
  start another fault at that very moment: a watch lagging before the request's own event, a storm after).
* `lag(match)` / `catch_up()`: hold (not lose) what the API server sends on connections whose request matches
  (a watch: its events arrive late, in order, on catch_up), as a lagging watch would.

Every fault also has a counter, so a test can assert that it really happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

Match = Callable[[str, str], bool]
"""(method, path with query) -> whether a request is concerned."""

READ_CHUNK = 64 * 1024


@dataclass
class ProxyStats:
    connections: int = 0
    requests: int = 0
    cut_connections: int = 0
    stormed_requests: int = 0
    lost_replies: int = 0
    dropped_bytes: int = 0
    lagged_connections: int = 0
    requests_by_path: dict[str, int] = field(default_factory=dict)


@dataclass
class _LoseReplies:
    match: Match
    remaining: int
    before: Callable[[], None] | None = None
    then: Callable[[], None] | None = None


class _Connection:
    """One client connection and its upstream connection."""

    def __init__(self, proxy: FaultProxy, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.reader = reader
        self.writer = writer
        self.up_reader: asyncio.StreamReader | None = None
        self.up_writer: asyncio.StreamWriter | None = None
        self.blackholed = False
        self.cut_on_reply = False
        self.after_lost_reply: Callable[[], None] | None = None
        self.request = ("", "")  # (method, path) of the last request, for lag()
        self.lagged = False
        self.closed = False
        self._upstream_task: asyncio.Task[None] | None = None

    def abort(self) -> None:
        """Close both sides at once (RST where possible), whatever is in flight."""
        if self.closed:
            return
        self.closed = True
        for w in (self.writer, self.up_writer):
            if w is not None:
                with contextlib.suppress(Exception):
                    w.transport.abort()

    async def serve(self) -> None:
        proxy = self.proxy
        try:
            while not self.closed:
                head = await self.reader.readuntil(b"\r\n\r\n")
                body = await self._read_body(head)
                await self._handle(head, body)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError, asyncio.LimitOverrunError, OSError):
            pass
        finally:
            self.abort()
            if self._upstream_task is not None:
                self._upstream_task.cancel()
                with contextlib.suppress(BaseException):
                    await self._upstream_task
            proxy._connections.discard(self)

    async def _read_body(self, head: bytes) -> bytes:
        headers = head.decode("latin-1").lower()
        length = 0
        chunked = False
        for line in headers.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip() == "content-length":
                length = int(value.strip() or 0)
            elif name.strip() == "transfer-encoding" and "chunked" in value:
                chunked = True
        if chunked:
            out = bytearray()
            while True:
                size_line = await self.reader.readuntil(b"\r\n")
                out += size_line
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                out += await self.reader.readexactly(size + 2)
                if size == 0:
                    return bytes(out)
        return await self.reader.readexactly(length) if length else b""

    async def _handle(self, head: bytes, body: bytes) -> None:
        proxy = self.proxy
        first = head.split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = first.partition(" ")
        path = rest.rsplit(" ", 1)[0]
        proxy.stats.requests += 1
        self.request = (method, path)
        if proxy._lag_match is not None and proxy._lag_match(method, path) and not self.lagged:
            self.lagged = True
            proxy.stats.lagged_connections += 1
        key = path.split("?")[0]
        proxy.stats.requests_by_path[key] = proxy.stats.requests_by_path.get(key, 0) + 1
        if self.blackholed:
            proxy.stats.dropped_bytes += len(head) + len(body)
            return
        if proxy._storm_status is not None and time.monotonic() < proxy._storm_until:
            proxy.stats.stormed_requests += 1
            self.writer.write(_error_response(proxy._storm_status))
            await self.writer.drain()
            return
        lose = proxy._lose_for(method, path)
        await self._upstream()
        assert self.up_writer is not None
        if lose is not None:
            self.cut_on_reply = True
            self.after_lost_reply = lose.then
            if lose.before is not None:
                lose.before()
        await proxy._flowing()
        if self.blackholed:
            return
        self.up_writer.write(head + body)
        await self.up_writer.drain()

    async def _upstream(self) -> None:
        if self.up_writer is not None:
            return
        proxy = self.proxy
        self.up_reader, self.up_writer = await asyncio.open_connection(
            proxy.upstream_host, proxy.upstream_port, ssl=proxy.client_tls, server_hostname=None
        )
        self._upstream_task = asyncio.get_running_loop().create_task(self._pump_down())

    async def _pump_down(self) -> None:
        """Upstream -> client, raw bytes (responses, watch streams)."""
        assert self.up_reader is not None
        try:
            while not self.closed:
                data = await self.up_reader.read(READ_CHUNK)
                if not data:
                    break
                if self.cut_on_reply:
                    self.proxy.stats.lost_replies += 1
                    self.abort()
                    if self.after_lost_reply is not None:
                        self.after_lost_reply()
                    break
                await self.proxy._flowing()
                if self.lagged:
                    await self.proxy._caught_up.wait()
                if self.blackholed:
                    self.proxy.stats.dropped_bytes += len(data)
                    continue
                self.writer.write(data)
                await self.writer.drain()
        except (ConnectionError, ssl.SSLError, OSError):
            pass
        finally:
            self.abort()


def _error_response(status: int) -> bytes:
    reason = {429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"}.get(status, "Error")
    body = json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f"injected by the fault proxy: {reason}",
            "reason": "TooManyRequests" if status == 429 else "InternalError",
            "details": {"retryAfterSeconds": 1},
            "code": status,
        }
    ).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class FaultProxy:
    """Listens on 127.0.0.1:<port> and forwards to the API server at upstream_host:upstream_port."""

    def __init__(self, upstream_host: str, upstream_port: int, cert: Path, key: Path) -> None:
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.server_tls.load_cert_chain(str(cert), str(key))
        self.client_tls = ssl.create_default_context()
        self.client_tls.check_hostname = False
        self.client_tls.verify_mode = ssl.CERT_NONE
        self.stats = ProxyStats()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()
        self._flow = asyncio.Event()
        self._flow.set()
        self._healed = asyncio.Event()
        self._healed.set()
        self._storm_status: int | None = None
        self._storm_until = 0.0
        self._lose: list[_LoseReplies] = []
        self._lag_match: Match | None = None
        self._caught_up = asyncio.Event()
        self._caught_up.set()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    async def start(self, port: int = 0) -> FaultProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", port, ssl=self.server_tls)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self._connections):
            conn.abort()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)
        self._flow.set()
        self._healed.set()
        self._caught_up.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stats.connections += 1
        conn = _Connection(self, reader, writer)
        conn.blackholed = not self._healed.is_set()
        self._connections.add(conn)
        await conn.serve()

    async def _flowing(self) -> None:
        await self._flow.wait()

    def _lose_for(self, method: str, path: str) -> _LoseReplies | None:
        for rule in self._lose:
            if rule.remaining > 0 and rule.match(method, path):
                rule.remaining -= 1
                return rule
        return None

    # ------------------------------------------------------------------ faults

    def cut(self) -> int:
        """Abort every open connection; returns how many."""
        conns = list(self._connections)
        for conn in conns:
            conn.abort()
        self.stats.cut_connections += len(conns)
        return len(conns)

    def partition(self) -> None:
        """Drop all traffic: open connections become black holes, new ones hang before TLS."""
        self._healed.clear()
        for conn in self._connections:
            conn.blackholed = True

    def heal(self) -> None:
        self._healed.set()

    def stall(self) -> None:
        self._flow.clear()

    def resume(self) -> None:
        self._flow.set()

    def storm(self, status: int, seconds: float) -> None:
        """Answer every request with `status` for `seconds`; open connections are cut first."""
        self._storm_status = status
        self._storm_until = time.monotonic() + seconds
        self.cut()

    def lose_replies(
        self,
        match: Match,
        count: int = 1,
        *,
        before: Callable[[], None] | None = None,
        then: Callable[[], None] | None = None,
    ) -> None:
        """The next `count` requests matching `match` reach the API server; their replies never come back.
        `before` runs just before each is forwarded, `then` right after its reply is lost."""
        self._lose.append(_LoseReplies(match, count, before, then))

    def lag(self, match: Match) -> None:
        """From now until catch_up(), hold what the API server sends on the open and new connections whose
        request matches `match` (watches: their events wait, in order)."""
        self._lag_match = match
        self._caught_up.clear()
        for conn in self._connections:
            if match(*conn.request) and not conn.lagged:
                conn.lagged = True
                self.stats.lagged_connections += 1

    def catch_up(self) -> None:
        """Deliver what lag() held, and hold nothing more."""
        self._lag_match = None
        for conn in self._connections:
            conn.lagged = False
        self._caught_up.set()

    def open_connections(self) -> int:
        return len(self._connections)


def is_binding(method: str, path: str) -> bool:
    return method == "POST" and path.split("?")[0].endswith("/binding")


def is_pod_watch(method: str, path: str) -> bool:
    """A watch of pods (any namespace, any selector), as a scheduler's pod informer opens it."""
    base, _, query = path.partition("?")
    return method == "GET" and base.endswith("/pods") and bool({"watch=true", "watch=1"} & set(query.split("&")))


def is_event_post(method: str, path: str) -> bool:
    return method == "POST" and "/events" in path.split("?")[0]


def proxy_for(server: str, pki: Path) -> FaultProxy:
    """A proxy in front of the harness API server `server` (https://127.0.0.1:PORT), with its certificate."""
    host, _, port = server.removeprefix("https://").partition(":")
    return FaultProxy(host, int(port), pki / "apiserver.crt", pki / "apiserver.key")


def write_kubeconfig(path: Path, server: str, token: str) -> Path:
    """A kubeconfig like the harness's (bearer token, insecure-skip-tls-verify) for another server URL."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "proxied", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": "proxied", "context": {"cluster": "proxied", "user": "admin"}}],
        "current-context": "proxied",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
