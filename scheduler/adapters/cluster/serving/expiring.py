"""A bounded, expiring LRU map with single-flight loading: how long an authn/authz answer is believed.

kube-scheduler's delegated authenticator and authorizer cache the API server's TokenReview and
SubjectAccessReview answers for 10 s each (allowed and denied answers with their own TTLs), so a scraper
polling every few seconds costs one review per token per 10 s, not one per request. Here the same, with:

- a size bound (least recently used entries go first), so a flood of distinct tokens cannot grow memory;
- single flight: concurrent requests with the same key share one review instead of sending one each;
- errors are never remembered: a transient API failure must not lock a caller out for the whole TTL.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class ExpiringCache(Generic[K, V]):
    """At most `max_entries` values, each forgotten `ttl` seconds after it was stored (per entry)."""

    def __init__(self, max_entries: int, clock: Callable[[], float] = time.monotonic) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._loading: dict[K, asyncio.Task[V]] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        """The live value of `key` (and mark it recently used), or None when absent or expired."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self._clock() >= expires:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V, ttl: float) -> None:
        """Remember `value` for `ttl` seconds (not at all when ttl <= 0); evicts the least recently used."""
        if ttl <= 0:
            self._entries.pop(key, None)
            return
        self._entries[key] = (self._clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    async def get_or_load(self, key: K, load: Callable[[], Awaitable[V]], ttl: Callable[[V], float]) -> V:
        """The cached value, else the result of `load()` (shared by concurrent callers), cached for ttl(value).

        The load runs in its own task: a caller that goes away (a client disconnect cancels its handler)
        does not cancel the load other callers wait for. An exception reaches every waiter and is not cached.
        """
        found = self.get(key)
        if found is not None:
            self.hits += 1
            return found
        self.misses += 1
        task = self._loading.get(key)
        if task is None:
            task = asyncio.get_running_loop().create_task(_call(load))
            self._loading[key] = task
            # Added before any waiter's callback, so the value is stored before the waiters resume.
            task.add_done_callback(functools.partial(self._loaded, key, ttl))
        return await asyncio.shield(task)

    def _loaded(self, key: K, ttl: Callable[[V], float], task: asyncio.Task[V]) -> None:
        if self._loading.get(key) is task:
            del self._loading[key]
        if task.cancelled() or task.exception() is not None:  # retrieving it also silences "never retrieved"
            return
        value = task.result()
        self.put(key, value, ttl(value))


async def _call(load: Callable[[], Awaitable[V]]) -> V:
    return await load()
