"""Fixtures every test directory may use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scheduler import caching


@pytest.fixture
def caches_on() -> Iterator[None]:
    """The caches on for a test of a cache itself, whatever PYSCHEDULER_DISABLE_CACHES says for the run."""
    with caching.caches_enabled():
        yield
