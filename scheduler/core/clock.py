"""Clocks: the real monotonic one and a settable one for simulations and tests."""

from __future__ import annotations


class FakeClock:
    """A clock that only moves when told; `advance_to` never goes backwards."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def advance_to(self, when: float) -> None:
        self.now = max(self.now, when)
