"""One switch for every exact-result cache and fast path, so their results can be checked against the plain path.

The scheduler keeps results it could recompute (NodeInfo.memo, lru_caches of parsed quantities and label
checks, incremental cluster-wide sums in InterPodAffinity and PodTopologySpread, ...) and takes shortcuts
that must give what the general code gives (the snapshot's same-order patch, the node tree's strided
interleave, inlined score loops, ...). Each of them reads `ENABLED` here; when it is False each takes its
plain path: nothing is stored, nothing is looked up, everything is computed from the objects at hand.
Decisions must not change (tests/test_caching_parity.py runs seeded workloads both ways and compares every
placement and every message); the switch exists for that test and for checking a suspected cache bug:

    PYSCHEDULER_DISABLE_CACHES=1 pyscheduler simulate cluster.yaml   # a whole process without them

or, in a test, `with caches_disabled(): ...`. Flip it between runs, not during one: caches filled while
enabled are ignored while disabled (no site reads them) but not emptied, except the process-wide ones,
which `set_enabled` clears.

This module is the lowest layer (no scheduler imports): the framework, the plugins, the backend and the
config loader all read it. Filter and Score loops over nodes check the flag once per batch; per-node helpers
only on their miss or failure path (a memo store, a failing node's Status); other sites once per call (the
switchable lru_caches: one global read on top of the lru lookup).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache, update_wrapper
from typing import Any, Protocol, TypeVar, cast

ENV_VAR = "PYSCHEDULER_DISABLE_CACHES"

ENABLED: bool = os.environ.get(ENV_VAR, "").strip().lower() not in ("1", "true", "yes", "on")
"""False: every cache and fast path takes its plain path (read it as `caching.ENABLED`, never import the name)."""

_clearers: list[Callable[[], None]] = []

A = TypeVar("A")
R = TypeVar("R")


def enabled() -> bool:
    return ENABLED


def set_enabled(flag: bool) -> None:
    """Turn every cache on or off for the whole process; the process-wide caches are emptied either way."""
    global ENABLED
    ENABLED = flag
    clear_all()


def clear_all() -> None:
    """Empty every process-wide cache that registered itself (lru_caches, module-level dicts)."""
    for clear in _clearers:
        clear()


def register_clear(clear: Callable[[], None]) -> Callable[[], None]:
    """Have `clear` called by `set_enabled`/`clear_all` (a module-level cache's `.clear`)."""
    _clearers.append(clear)
    return clear


@contextmanager
def caches_disabled() -> Iterator[None]:
    """Run the block with every cache and fast path off (restores the previous setting after)."""
    with _switched(False):
        yield


@contextmanager
def caches_enabled() -> Iterator[None]:
    """Run the block with the caches on, whatever PYSCHEDULER_DISABLE_CACHES says (tests of a cache itself)."""
    with _switched(True):
        yield


@contextmanager
def _switched(flag: bool) -> Iterator[None]:
    before = ENABLED
    set_enabled(flag)
    try:
        yield
    finally:
        set_enabled(before)


class SwitchableCache(Protocol[A, R]):
    """What `switchable_lru_cache` returns: the cached function, its plain one and the lru_cache controls."""

    __wrapped__: Callable[[A], R]

    def __call__(self, arg: A, /) -> R: ...

    def cache_clear(self) -> None: ...

    def cache_info(self) -> Any: ...


def switchable_lru_cache(maxsize: int, typed: bool = False) -> Callable[[Callable[[A], R]], SwitchableCache[A, R]]:
    """functools.lru_cache(maxsize, typed) for a one-argument function, bypassed while caches are disabled.

    The enabled path costs one global read on top of the lru_cache lookup; disabled, the plain function runs.
    """

    def wrap(fn: Callable[[A], R]) -> SwitchableCache[A, R]:
        cached = lru_cache(maxsize=maxsize, typed=typed)(fn)

        def call(arg: A, /) -> R:
            if ENABLED:
                try:
                    return cached(arg)
                except TypeError:
                    try:
                        hash(arg)
                    except TypeError:  # unhashable (a map where a string belongs): fn's own error, as uncached
                        return fn(arg)
                    raise
            return fn(arg)

        update_wrapper(call, fn)  # sets __wrapped__ = fn
        out = cast(SwitchableCache[A, R], call)
        out.cache_clear = cached.cache_clear  # type: ignore[method-assign]
        out.cache_info = cached.cache_info  # type: ignore[method-assign]
        register_clear(cached.cache_clear)
        return out

    return wrap
