"""The limiter of expensive debug calls: one in flight, a small token bucket, 429 beyond.

`/debug/cache/compare` LISTs every node and pod of the cluster and parses them; `/debug/explain/NS/NAME` runs
every filter and score plugin over every node; `/debug/cache` serializes the whole cache. Each costs CPU in
the process that schedules, so an eager script (or a dashboard polling them) must not turn debugging into an
outage: at most `max_in_flight` of them run at once, at most `burst` back to back and `rate` per second on
average. A refused call gets 429 with `Retry-After` (whole seconds, at least 1), never a queue.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

DEFAULT_RATE = 1.0
DEFAULT_BURST = 5
DEFAULT_MAX_IN_FLIGHT = 1


class ExpensiveCallLimiter:
    """Admission for expensive calls: `admit()` is 0.0 (go; call `release()` when done) or seconds to wait."""

    def __init__(
        self,
        rate: float = DEFAULT_RATE,
        burst: int = DEFAULT_BURST,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate <= 0 or burst < 1 or max_in_flight < 1:
            raise ValueError(f"rate, burst and max_in_flight must be positive: {rate}, {burst}, {max_in_flight}")
        self.rate = rate
        self.burst = burst
        self.max_in_flight = max_in_flight
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self.in_flight = 0
        self.refused = 0

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
        self._last = now

    def admit(self) -> float:
        """0.0 when the call may start now (it then holds a slot until `release()`), else a retry delay."""
        self._refill()
        if self.in_flight >= self.max_in_flight:
            self.refused += 1
            # Unknown when the running call ends: a second, or longer when the bucket is empty too.
            return max(1.0, (1.0 - self._tokens) / self.rate)
        if self._tokens < 1.0:
            self.refused += 1
            return (1.0 - self._tokens) / self.rate
        self._tokens -= 1.0
        self.in_flight += 1
        return 0.0

    def release(self) -> None:
        """The admitted call finished (successfully or not)."""
        self.in_flight = max(0, self.in_flight - 1)

    @staticmethod
    def retry_after_header(delay: float) -> str:
        """Retry-After in whole seconds, rounded up, at least 1."""
        return str(max(1, math.ceil(delay)))
