"""ExpiringCache: per-entry TTL, LRU size bound, single-flight loads, failures never cached."""

from __future__ import annotations

import asyncio

import pytest

from scheduler.adapters.cluster.serving.expiring import ExpiringCache


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_entry_expires_after_its_own_ttl() -> None:
    """Each entry lives for the TTL it was stored with, then reads as absent."""
    clock = Clock()
    cache: ExpiringCache[str, str] = ExpiringCache(10, clock)
    cache.put("short", "a", 5.0)
    cache.put("long", "b", 10.0)
    clock.now += 4.9
    assert (cache.get("short"), cache.get("long")) == ("a", "b")
    clock.now += 0.1
    assert (cache.get("short"), cache.get("long")) == (None, "b")
    clock.now += 5.0
    assert cache.get("long") is None
    assert len(cache) == 0


def test_non_positive_ttl_stores_nothing() -> None:
    cache: ExpiringCache[str, str] = ExpiringCache(10, Clock())
    cache.put("k", "v", 0.0)
    assert cache.get("k") is None and len(cache) == 0


def test_size_is_bounded_least_recently_used_goes_first() -> None:
    """Past max_entries the least recently *used* entry is evicted, not the oldest stored."""
    cache: ExpiringCache[int, int] = ExpiringCache(3, Clock())
    for i in range(3):
        cache.put(i, i, 60.0)
    assert cache.get(0) == 0  # 0 is now the most recently used; 1 is the least
    cache.put(3, 3, 60.0)
    assert len(cache) == 3
    assert cache.get(1) is None
    assert [cache.get(k) for k in (0, 2, 3)] == [0, 2, 3]
    for i in range(100, 200):
        cache.put(i, i, 60.0)
    assert len(cache) == 3


def test_max_entries_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        ExpiringCache(0)


async def test_concurrent_loads_of_one_key_share_one_call() -> None:
    """Ten callers asking for the same key at once cause one load; the value is then cached."""
    cache: ExpiringCache[str, str] = ExpiringCache(10, Clock())
    calls = 0
    release = asyncio.Event()

    async def load() -> str:
        nonlocal calls
        calls += 1
        await release.wait()
        return "user"

    waiters = [asyncio.create_task(cache.get_or_load("token", load, lambda _: 10.0)) for _ in range(10)]
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(*waiters) == ["user"] * 10
    assert calls == 1
    assert await cache.get_or_load("token", load, lambda _: 10.0) == "user"
    assert calls == 1 and cache.hits == 1


async def test_a_failed_load_reaches_every_waiter_and_is_not_cached() -> None:
    cache: ExpiringCache[str, str] = ExpiringCache(10, Clock())
    attempts = 0

    async def flaky() -> str:
        nonlocal attempts
        attempts += 1
        await asyncio.sleep(0)
        if attempts == 1:
            raise ConnectionError("API server unreachable")
        return "ok"

    results = await asyncio.gather(
        cache.get_or_load("k", flaky, lambda _: 10.0),
        cache.get_or_load("k", flaky, lambda _: 10.0),
        return_exceptions=True,
    )
    assert [type(r) for r in results] == [ConnectionError, ConnectionError]
    assert attempts == 1
    assert await cache.get_or_load("k", flaky, lambda _: 10.0) == "ok"
    assert attempts == 2


async def test_a_cancelled_waiter_does_not_cancel_the_shared_load() -> None:
    cache: ExpiringCache[str, str] = ExpiringCache(10, Clock())
    release = asyncio.Event()

    async def load() -> str:
        await release.wait()
        return "v"

    first = asyncio.create_task(cache.get_or_load("k", load, lambda _: 10.0))
    second = asyncio.create_task(cache.get_or_load("k", load, lambda _: 10.0))
    await asyncio.sleep(0)
    first.cancel()
    release.set()
    assert await second == "v"
    assert cache.get("k") == "v"


async def test_ttl_depends_on_the_value() -> None:
    """The TTL function sees the loaded value (how allowed and denied answers get different TTLs)."""
    clock = Clock()
    cache: ExpiringCache[str, bool] = ExpiringCache(10, clock)

    async def yes() -> bool:
        return True

    async def no() -> bool:
        return False

    def ttl(value: bool) -> float:
        return 30.0 if value else 2.0

    await cache.get_or_load("allowed", yes, ttl)
    await cache.get_or_load("denied", no, ttl)
    clock.now += 2.0
    assert cache.get("allowed") is True and cache.get("denied") is None
