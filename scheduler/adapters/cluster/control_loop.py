"""A second event loop, in a thread of its own, for what must keep its deadlines whatever a plugin does.

The scheduling loop runs plugins synchronously: a Filter that sleeps 30 s stalls it for 30 s. Leader election
and the health, metrics and debug HTTP server therefore run here, so renewals and probes keep their deadlines
meanwhile (kube-scheduler gets this from goroutines). The two loops share no asyncio object: work crosses
over only through `run_coroutine_threadsafe`/`call_soon_threadsafe` (`call`, `on_main`, `set_stopping`), and
what this loop reads of the scheduler (counters, queue lengths, the lease's timing) are plain attribute and
container reads that hold under the GIL.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from aiohttp import web

log = logging.getLogger("pyscheduler.run")

T = TypeVar("T")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

JOIN_TIMEOUT = 10.0
"""How long stop() waits for the thread (its tasks are cancelled first, so this is a backstop)."""


class ControlLoop:
    """An asyncio loop running in a daemon thread; start() before use, stop() at the end."""

    def __init__(self, name: str = "pyscheduler-control") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._ready = threading.Event()
        # Set (on this loop) when the process stops: what the tasks running here wait on instead of the
        # scheduling loop's stop event, which belongs to the other loop.
        self.stopping = asyncio.Event()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    def start(self) -> None:
        self._thread.start()
        self._ready.wait()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `coro` on this loop; its result (or exception) arrives in the returned future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """From the scheduling loop: run `coro` here and await its result (cancelling the await cancels it)."""
        return await asyncio.wrap_future(self.submit(coro))

    def set_stopping(self) -> None:
        """From any thread: tell the tasks of this loop that the process stops."""
        self.loop.call_soon_threadsafe(self.stopping.set)

    async def stop(self) -> None:
        """From the scheduling loop: cancel what still runs here, stop the loop and join its thread."""
        if not self._thread.is_alive():
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.call(cancel_all()), JOIN_TIMEOUT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        await asyncio.to_thread(self._thread.join, JOIN_TIMEOUT)
        if self._thread.is_alive():
            log.error("the control loop's thread did not stop in time")


def on_loop(loop: asyncio.AbstractEventLoop, handler: Handler, timeout: float) -> Handler:
    """An aiohttp handler served here that runs `handler` on `loop` (the scheduling loop: debug handlers read
    the cache, which only that loop touches). The request body is read here first, so the handler never
    touches this loop's transport; a busy scheduling loop answers 503 after `timeout` seconds."""

    async def forwarded(request: web.Request) -> web.StreamResponse:
        await request.read()  # cached on the request: the handler's request.text() reads no socket
        future = asyncio.run_coroutine_threadsafe(_call(handler, request), loop)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except TimeoutError:
            text = f"the scheduling loop did not answer within {timeout:g}s (a plugin may be blocking it)\n"
            return web.Response(status=503, text=text)

    return forwarded


async def _call(handler: Handler, request: web.Request) -> web.StreamResponse:
    return await handler(request)
