"""A lean keep-alive HTTP/1.1 client for the scheduler's hot writes: one binding and one event per pod.

Why: aiohttp's request machinery (its request and response objects, multidict headers, tracing hooks, timers,
connection-pool bookkeeping) costs ~230 µs of CPU per small POST over TLS on this project's machine, an
asyncio stream round trip ~100 µs; at two writes per pod that is over a tenth of pyscheduler's CPU per pod.
This client writes the request in one buffer and reads the answer with an asyncio stream; everything else
(rate limits, retries, timeouts, metrics, error mapping) stays in `KubeClient.request`, which uses it only
for the requests that ask for it, without a proxy (`KubeClient._lean_pool`).

What it speaks: requests with a Content-Length body; answers with Content-Length, chunked or read-until-close
bodies; `Connection: close`. A connection carries one request at a time, goes back to the pool when the answer
was read whole, and is closed once idle for `IDLE_SECONDS` (less than the server keeps it; checked whenever a
connection comes back, so a burst's extra connections do not linger) or on any error. A request whose reused
connection turns out closed before any byte of the answer arrived is sent once more on a new connection (the
API server drops idle connections; a binding or an event sent twice meets a 409 that the writer already
resolves).
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from multidict import CIMultiDict, CIMultiDictProxy

IDLE_SECONDS: Final = 30.0  # kube-apiserver closes keep-alive connections idle for 90 s (its IdleTimeout)
MAX_HEADER_LINES: Final = 200
MAX_BODY: Final = 64 * 1024 * 1024


class Http1Error(OSError):
    """The connection failed or the answer was not HTTP/1.1 (the caller treats it like a connection error)."""


@dataclass(slots=True)
class Response:
    status: int
    headers: CIMultiDictProxy[str]
    body: bytes


@dataclass(slots=True)
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    used: float  # monotonic time the last answer was read

    def close(self) -> None:
        self.writer.close()


class _Stale(Exception):
    """A reused connection was closed before the answer started."""


class Http1Pool:
    """Keep-alive connections to one API server (`host:port`, TLS when `ssl_context` is given), at most `limit`."""

    def __init__(
        self,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext | None,
        *,
        server_hostname: str | None = None,
        limit: int = 16,
        connect_timeout: float = 5.0,
    ) -> None:
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.server_hostname = server_hostname
        self.connect_timeout = connect_timeout
        self._idle: collections.deque[_Connection] = collections.deque()
        self._slots = asyncio.Semaphore(limit)
        default_port = 443 if ssl_context is not None else 80
        authority = f"[{host}]" if ":" in host else host
        self._host_header = authority if port == default_port else f"{authority}:{port}"
        self.opened = 0  # connections opened (for tests and stats)

    async def close(self) -> None:
        while self._idle:
            self._idle.pop().close()

    async def request(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None) -> Response:
        """Send one request and read its whole answer (the caller bounds the time it may take)."""
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self._host_header}"]
        lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() not in ("host", "content-length")]
        lines.append(f"Content-Length: {len(body) if body else 0}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        data = head + body if body else head
        async with self._slots:
            conn = self._take()
            if conn is not None:
                try:
                    return await self._exchange(conn, data, reused=True)
                except _Stale:
                    pass  # the server had closed it: once more on a new connection
            conn = await self._open()
            try:
                return await self._exchange(conn, data, reused=False)
            except _Stale as exc:
                raise Http1Error("the API server closed the connection before answering") from exc

    def _take(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()  # the most recently used: the likeliest to be alive
            if now - conn.used < IDLE_SECONDS and not conn.writer.is_closing():
                return conn
            conn.close()
        return None

    async def _open(self) -> _Connection:
        try:
            async with asyncio.timeout(self.connect_timeout):
                reader, writer = await asyncio.open_connection(
                    self.host,
                    self.port,
                    ssl=self.ssl_context,
                    server_hostname=(self.server_hostname or self.host) if self.ssl_context is not None else None,
                    limit=1 << 20,
                )
        except TimeoutError as exc:
            raise Http1Error(f"connecting to {self.host}:{self.port} timed out") from exc
        self.opened += 1
        return _Connection(reader, writer, time.monotonic())

    async def _exchange(self, conn: _Connection, data: bytes, *, reused: bool) -> Response:
        keep = False
        try:
            try:
                conn.writer.write(data)
                status_line = await conn.reader.readline()
            except (ConnectionError, ssl.SSLError) as exc:
                if reused:
                    raise _Stale from exc
                raise Http1Error(str(exc) or type(exc).__name__) from exc
            if not status_line:
                if reused:
                    raise _Stale
                raise Http1Error("the API server closed the connection before answering")
            response, keep = await _read_answer(conn.reader, status_line)
            return response
        except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            raise Http1Error(str(exc) or type(exc).__name__) from exc
        finally:
            if keep:
                conn.used = now = time.monotonic()
                self._idle.append(conn)
                idle = self._idle
                while idle and now - idle[0].used >= IDLE_SECONDS:  # least recently used first: close the stale
                    idle.popleft().close()
            else:  # an error, a cancellation or `Connection: close`: never reused
                conn.close()


async def _read_answer(reader: asyncio.StreamReader, status_line: bytes) -> tuple[Response, bool]:
    """The answer after its status line, and whether the connection may carry another request."""
    parts = status_line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise Http1Error(f"not an HTTP/1.1 answer: {status_line[:80]!r}")
    status = int(parts[1])
    headers: CIMultiDict[str] = CIMultiDict()
    for _ in range(MAX_HEADER_LINES):
        line = await reader.readline()
        if line in (b"\r\n", b"\n"):
            break
        if not line:
            raise Http1Error("the answer's headers were cut short")
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep:
            raise Http1Error(f"malformed header line {line[:80]!r}")
        headers.add(name.strip(), value.strip())
    else:
        raise Http1Error("too many header lines")
    keep = headers.get("Connection", "").lower() != "close" and parts[0] != b"HTTP/1.0"
    length = headers.get("Content-Length")
    if status in (204, 304) or 100 <= status < 200:
        body = b""
    elif "chunked" in headers.get("Transfer-Encoding", "").lower():
        body = await _read_chunked(reader)
    elif length is not None:
        if not length.isdigit() or int(length) > MAX_BODY:
            raise Http1Error(f"bad Content-Length {length!r}")
        body = await reader.readexactly(int(length))
    else:  # delimited by the end of the connection
        body = await reader.read(MAX_BODY)
        keep = False
    return Response(status, CIMultiDictProxy(headers), body), keep


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    out = bytearray()
    while True:
        size_line = await reader.readline()
        size_text = size_line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError as exc:
            raise Http1Error(f"bad chunk size {size_line[:40]!r}") from exc
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return bytes(out)
        if len(out) + size > MAX_BODY:
            raise Http1Error("answer too large")
        out += await reader.readexactly(size)
        await reader.readexactly(2)  # the CRLF after the chunk
