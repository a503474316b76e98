"""Watch reconnects (fault run defect 1) and the LIST overlay, without an API server.

A cut after a stream that delivered events reconnects at once, as client-go's reflector does; only attempts
that deliver nothing back off (0.5 s doubling to 10 s). The pod watch and the object informers share that
loop (reflector.py): the streams here are scripted by a fake `open_watch`, and the sleeps between attempts
are recorded instead of slept. tests/e2e/test_watch_faults.py cuts real connections through a TCP proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio.client import Configuration

from scheduler.adapters.cluster import reflector
from scheduler.adapters.cluster.client import KubeClient
from scheduler.adapters.cluster.informers import ObjectInformer
from scheduler.adapters.cluster.pod_watch import PodWatch
from scheduler.adapters.cluster.streaming import ReconnectBackoff
from scheduler.adapters.cluster.watch import ClusterWatcher, _event_is_older
from scheduler.adapters.cluster.writer import ClusterWriter
from scheduler.core.profile import build_scheduler, default_config
from scheduler.testing import make_pod

JSON = dict[str, Any]
CUT = aiohttp.ClientPayloadError("Response payload is not completed")
REFUSED = aiohttp.ClientConnectionError("Cannot connect to host")

# A script step: a list of events to deliver, then the exception that ends the stream (None: a clean end);
# an exception alone fails the request itself.
Step = tuple[list[JSON], BaseException | None] | BaseException


def _event(i: int) -> JSON:
    pod = make_pod(f"p{i}", "ns").uid(f"u{i}").obj()
    pod["metadata"]["resourceVersion"] = str(100 + i)
    return {"type": "ADDED", "object": pod}


def test_reconnect_backoff_resets_after_a_stream_that_delivered() -> None:
    """0.5, 1, 2, ... capped at 10 while nothing comes; 0 (at once) after any delivery, and it starts over."""
    backoff = ReconnectBackoff(0.5, 10.0)
    assert [backoff.after(delivered=False) for _ in range(7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert backoff.after(delivered=True) == 0.0
    assert backoff.after(delivered=False) == 0.5


@pytest.fixture
async def client() -> AsyncIterator[KubeClient]:
    kube = KubeClient(Configuration(host="https://127.0.0.1:9"), qps=0, burst=1)  # never contacted
    try:
        yield kube
    finally:
        await kube.close()


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The delays the watches wait between attempts (recorded, not slept)."""
    delays: list[float] = []

    async def record(stop: asyncio.Event, seconds: float) -> bool:
        delays.append(seconds)
        return stop.is_set()

    monkeypatch.setattr(reflector, "wait_or_stop", record)
    return delays


def _scripted(steps: list[Step], stop: asyncio.Event) -> Iterator[contextlib.AbstractAsyncContextManager[Any]]:
    """One async context manager per WATCH request, following the script; the last step sets `stop`."""
    for index, step in enumerate(steps):
        last = index == len(steps) - 1

        @contextlib.asynccontextmanager
        async def opened(step: Step = step, last: bool = last) -> AsyncIterator[AsyncIterator[bytes]]:
            if isinstance(step, BaseException):
                if last:
                    stop.set()
                raise step
            events, end = step

            async def lines() -> AsyncIterator[bytes]:
                for event in events:
                    yield json.dumps(event).encode() + b"\n"
                if last:
                    stop.set()
                if end is not None:
                    raise end

            yield lines()

        yield opened()
    raise AssertionError("the watch opened a stream after it was stopped")


SCRIPTS = [
    pytest.param(
        [([_event(i)], CUT) for i in range(6)],
        [],
        id="six-cuts-of-healthy-streams-reconnect-at-once",
    ),
    pytest.param(
        [REFUSED, REFUSED, REFUSED, ([_event(1)], CUT), REFUSED, ([], CUT), ([_event(2)], None)],
        [0.5, 1.0, 2.0, 0.5, 1.0],
        id="backoff-only-while-reconnecting-fails",
    ),
    pytest.param(
        [([_event(1), _event(2)], None), ([], None), ([], None)],
        [0.5, 1.0],
        id="server-closing-at-once-backs-off",
    ),
]


@pytest.mark.parametrize(("script", "delays"), SCRIPTS)
async def test_pod_watch_reconnects_at_once_after_a_healthy_stream(
    client: KubeClient,
    slept: list[float],
    script: list[Step],
    delays: list[float],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pod watch waits only after attempts that delivered nothing; every event reaches the cache."""
    scheduler = build_scheduler(ClusterWriter(client), default_config())
    watcher = ClusterWatcher(scheduler, client)
    watcher.synced.set()
    watch = PodWatch(watcher)
    watch.resource_version = "1"
    stop = asyncio.Event()
    streams = _scripted(script, stop)
    monkeypatch.setattr(reflector, "open_watch", lambda *a, **k: next(streams))
    await asyncio.wait_for(watch.run(stop), 10)
    assert slept == delays
    assert watch.backoffs == len(delays)
    delivered = {e["object"]["metadata"]["uid"] for step in script if isinstance(step, tuple) for e in step[0]}
    assert {uid for uid in delivered if scheduler.pending.get(uid)} == delivered


@pytest.mark.parametrize(("script", "delays"), SCRIPTS)
async def test_informer_reconnects_at_once_after_a_healthy_stream(
    client: KubeClient,
    slept: list[float],
    script: list[Step],
    delays: list[float],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same rule for the informers of the other kinds."""
    scheduler = build_scheduler(ClusterWriter(client), default_config())
    informer = ObjectInformer("Namespace", scheduler, client)
    informer.synced.set()
    stop = asyncio.Event()
    streams = _scripted(
        [
            s if isinstance(s, BaseException) else ([_namespace(e) for e in s[0]], s[1])
            for s in script
        ],
        stop,
    )
    monkeypatch.setattr(reflector, "open_watch", lambda *a, **k: next(streams))
    await asyncio.wait_for(informer.run(stop), 10)
    assert slept == delays
    assert informer.backoffs == len(delays)


def _namespace(event: JSON) -> JSON:
    meta = event["object"]["metadata"]
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": meta["uid"], "resourceVersion": "5"}}
    return {"type": event["type"], "object": ns}


@pytest.mark.parametrize(
    ("event_rv", "listed_rv", "list_rv", "older"),
    [
        pytest.param("120", "110", "130", False, id="newer-than-listed-wins"),
        pytest.param("100", "110", "130", True, id="older-than-listed-loses"),
        pytest.param("140", None, "130", False, id="created-after-the-list"),
        pytest.param("120", None, "130", True, id="not-listed-and-older-than-the-list-was-deleted"),
        pytest.param("x", "110", "130", False, id="unparsable-event-rv-wins"),
        pytest.param("120", None, "", False, id="unknown-list-rv-event-wins"),
    ],
)
def test_overlay_keeps_the_newer_of_event_and_list(
    event_rv: str, listed_rv: str | None, list_rv: str, older: bool
) -> None:
    """An event recorded during the LIST replaces the listed object only when it is newer (a watch that is
    catching up delivers older events, which must not roll the LIST back)."""
    event = {"metadata": {"resourceVersion": event_rv}}
    listed = {"metadata": {"resourceVersion": listed_rv}} if listed_rv is not None else None
    assert _event_is_older(event, listed, list_rv) is older
