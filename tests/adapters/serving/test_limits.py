"""ExpensiveCallLimiter: one call in flight, a token bucket of `burst`, `rate` per second, Retry-After."""

from __future__ import annotations

import pytest

from scheduler.adapters.cluster.serving.limits import ExpensiveCallLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_one_call_in_flight_at_a_time() -> None:
    limiter = ExpensiveCallLimiter(rate=1.0, burst=5, max_in_flight=1, clock=Clock())
    assert limiter.admit() == 0.0
    delay = limiter.admit()
    assert delay >= 1.0
    assert limiter.in_flight == 1 and limiter.refused == 1
    limiter.release()
    assert limiter.admit() == 0.0


def test_burst_then_rate() -> None:
    """`burst` calls back to back, then one per 1/rate seconds; the refusal says how long to wait."""
    clock = Clock()
    limiter = ExpensiveCallLimiter(rate=2.0, burst=3, max_in_flight=1, clock=clock)
    for _ in range(3):
        assert limiter.admit() == 0.0
        limiter.release()
    delay = limiter.admit()
    assert delay == pytest.approx(0.5)
    clock.now += 0.25
    assert limiter.admit() == pytest.approx(0.25)
    clock.now += 0.25
    assert limiter.admit() == 0.0
    limiter.release()
    clock.now += 100.0  # a long pause refills the bucket up to `burst`, not beyond
    for _ in range(3):
        assert limiter.admit() == 0.0
        limiter.release()
    assert limiter.admit() > 0


@pytest.mark.parametrize(
    ("delay", "header"),
    [
        pytest.param(0.01, "1", id="at-least-one-second"),
        pytest.param(1.0, "1", id="whole"),
        pytest.param(1.2, "2", id="rounded-up"),
    ],
)
def test_retry_after_header(delay: float, header: str) -> None:
    assert ExpensiveCallLimiter.retry_after_header(delay) == header


def test_release_never_goes_negative() -> None:
    limiter = ExpensiveCallLimiter(clock=Clock())
    limiter.release()
    assert limiter.in_flight == 0
    assert limiter.admit() == 0.0


def test_bad_parameters() -> None:
    with pytest.raises(ValueError):
        ExpensiveCallLimiter(rate=0)
    with pytest.raises(ValueError):
        ExpensiveCallLimiter(burst=0)
