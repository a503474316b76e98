"""The GC policy: tuned thresholds, a paused collector during bulk loads, PYSCHEDULER_GC=default to turn it off."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from scheduler.core import gc_policy


@pytest.fixture(autouse=True)
def restore_gc() -> Iterator[None]:
    thresholds, was_enabled = gc.get_threshold(), gc.isenabled()
    yield
    gc.set_threshold(*thresholds)
    gc.unfreeze()
    if was_enabled:
        gc.enable()


def test_tune_raises_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(gc_policy.ENV, raising=False)
    gc.set_threshold(700, 10, 10)
    gc_policy.tune()
    assert gc.get_threshold() == gc_policy.THRESHOLDS


def test_default_leaves_thresholds_and_never_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(gc_policy.ENV, "default")
    gc.set_threshold(700, 10, 10)
    gc_policy.tune()
    assert gc.get_threshold() == (700, 10, 10)
    frozen = gc.get_freeze_count()
    with gc_policy.bulk_load():
        assert gc.isenabled()
    assert gc.get_freeze_count() == frozen


def test_bulk_load_pauses_then_freezes_what_it_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(gc_policy.ENV, raising=False)
    gc.enable()
    gc.unfreeze()
    with gc_policy.bulk_load():
        assert not gc.isenabled()
        built = [{"n": i} for i in range(1000)]
        with gc_policy.bulk_load():  # nested: the inner one neither re-enables nor freezes early
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(built)


def test_bulk_load_restores_the_collector_after_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(gc_policy.ENV, raising=False)
    gc.enable()
    with pytest.raises(RuntimeError), gc_policy.bulk_load():
        raise RuntimeError("LIST failed")
    assert gc.isenabled()
