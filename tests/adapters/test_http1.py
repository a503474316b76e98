"""The lean HTTP/1.1 pool of the hot writes (scheduler/adapters/cluster/http1.py) against a local server that
answers as told: keep-alive reuse, the body framings, a server that drops idle connections, bad answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest

from scheduler.adapters.cluster.http1 import Http1Error, Http1Pool

Answer = Callable[[bytes, bytes], bytes]  # (request head, request body) -> raw answer bytes


def _ok(head: bytes, body: bytes) -> bytes:
    return b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body),
        body,
    )


@dataclass
class Server:
    """Reads each request (Content-Length bodies) and writes what `answer` returns; counts connections."""

    answer: Answer = _ok
    close_after: int = 0  # close each connection after this many answers (0: never)
    connections: int = 0
    heads: list[bytes] = field(default_factory=list)
    server: asyncio.base_events.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        served = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.heads.append(head)
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length)
                writer.write(self.answer(head, body))
                await writer.drain()
                served += 1
                if self.close_after and served >= self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    srv = Server()
    srv.server = await asyncio.start_server(srv.handle, "127.0.0.1", 0)
    try:
        yield srv
    finally:
        srv.server.close()


def _pool(server: Server) -> Http1Pool:
    return Http1Pool("127.0.0.1", server.port, None, connect_timeout=2.0)


async def test_requests_reuse_one_connection_and_send_what_they_were_given(server: Server) -> None:
    """Sequential requests ride one keep-alive connection; method, target, headers and body arrive as given."""
    pool = _pool(server)
    for i in range(5):
        answer = await pool.request("POST", f"/api/v1/x/{i}", {"Authorization": "Bearer t"}, b'{"n": %d}' % i)
        assert (answer.status, answer.body) == (201, b'{"n": %d}' % i)
        assert answer.headers["content-type"] == "application/json"
    assert server.connections == 1 and pool.opened == 1
    assert server.heads[0].startswith(b"POST /api/v1/x/0 HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nAuthorization: Bearer t\r\n" in server.heads[0] and b"\r\nContent-Length: 8\r\n" in server.heads[0]
    await pool.close()


@pytest.mark.parametrize(
    ("raw", "body"),
    [
        pytest.param(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
            b"abcde",
            id="chunked",
        ),
        pytest.param(b"HTTP/1.1 204 No Content\r\n\r\n", b"", id="no-content"),
        pytest.param(
            b"HTTP/1.1 409 Conflict\r\ncontent-length: 2\r\nRetry-After: 1\r\n\r\n{}", b"{}", id="lower-case-length"
        ),
    ],
)
async def test_body_framings(server: Server, raw: bytes, body: bytes) -> None:
    """Chunked bodies (with extensions) are joined, 204 has none, header names are case-insensitive."""
    server.answer = lambda head, got: raw
    pool = _pool(server)
    for _ in range(2):  # and the connection is still good for the next one
        answer = await pool.request("POST", "/", {}, b"x")
        assert answer.body == body
    assert pool.opened == 1
    await pool.close()


async def test_connection_close_and_read_until_close_are_not_reused(server: Server) -> None:
    """`Connection: close`, or a body delimited by the end of the connection: the next request opens anew."""
    answers = [
        b"HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 201 Created\r\n\r\nuntil the end",
    ]
    server.answer = lambda head, got: answers.pop(0) if answers else _ok(head, got)
    server.close_after = 1
    pool = _pool(server)
    assert (await pool.request("POST", "/", {}, b"a")).body == b"ok"
    assert (await pool.request("POST", "/", {}, b"b")).body == b"until the end"
    assert (await pool.request("POST", "/", {}, b"c")).body == b"c"
    assert pool.opened == 3
    await pool.close()


async def test_a_connection_the_server_dropped_is_replaced_without_an_error(server: Server) -> None:
    """The server closes each connection after one answer (as it does with idle ones): the next request finds
    its pooled connection dead before any answer byte and is sent again on a new one."""
    server.close_after = 1
    pool = _pool(server)
    for i in range(3):
        await asyncio.sleep(0.05)  # let the server's close arrive
        assert (await pool.request("POST", "/", {}, b"%d" % i)).body == b"%d" % i
    assert server.connections == 3
    await pool.close()


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"SSH-2.0-OpenSSH\r\n\r\n", id="not-http"),
        pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", id="body-cut-short"),
        pytest.param(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", id="bad-chunk-size"),
        pytest.param(b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", id="bad-header"),
    ],
)
async def test_bad_answers_raise_a_connection_error(server: Server, raw: bytes) -> None:
    """What is not a whole HTTP/1.1 answer raises Http1Error (an OSError: KubeClient retries it)."""
    server.answer = lambda head, got: raw
    server.close_after = 1
    pool = _pool(server)
    with pytest.raises(Http1Error):
        await pool.request("POST", "/", {}, b"x")
    assert not pool._idle  # the connection is not kept
    await pool.close()


async def test_a_cancelled_request_does_not_leave_its_connection_in_the_pool(server: Server) -> None:
    """A request cut by the caller's timeout closes its connection: a later answer cannot be misread."""

    def slow(head: bytes, body: bytes) -> bytes:
        return b""  # never answers

    server.answer = slow
    pool = _pool(server)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await pool.request("POST", "/", {}, b"x")
    assert not pool._idle
    server.answer = _ok
    assert (await pool.request("POST", "/", {}, b"y")).body == b"y"
    assert pool.opened == 2
    await pool.close()


async def test_connections_idle_too_long_are_closed_when_another_comes_back(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A burst opens several connections; those left idle past IDLE_SECONDS are closed (not kept half-open)
    as soon as a request returns its connection, and the pool keeps the one in use."""
    import scheduler.adapters.cluster.http1 as http1

    pool = _pool(server)
    await asyncio.gather(*(pool.request("POST", "/", {}, b"%d" % i) for i in range(4)))
    assert len(pool._idle) == 4
    monkeypatch.setattr(http1, "IDLE_SECONDS", 0.05)
    await asyncio.sleep(0.1)
    await pool.request("POST", "/", {}, b"x")
    assert len(pool._idle) == 1
    await pool.close()
