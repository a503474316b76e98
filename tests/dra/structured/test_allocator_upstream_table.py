"""Upstream's own allocator test table (structured/internal/allocatortesting, v0.37.2), case by case.

Each case was run through upstream's incubating allocator (the one kube-scheduler v1.37.2 uses) by
upstream/dump_allocator_tables.py, only after all of upstream's assertions on it passed; we must give the
same results (same devices, same order, same configs and node selector), the same error text, and make the
same number of allocateOne calls. CEL answers are upstream's own, replayed, so this proves the allocator
alone; test_allocator_cel.py runs the same cases through scheduler.dra.cel.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from scheduler import caching
from scheduler.dra.structured import AllocationError, new_allocator
from scheduler.dra.structured import allocator as allocator_module
from tests.dra.structured.upstream_cases import (
    FIXED_SHARE_ID,
    ClassLister,
    ReplayCel,
    ReplayCelError,
    allocated_state_of,
    error_kind,
    expected_error,
    expected_error_kind,
    features_of,
    load_cases,
    node_of,
    normalized_results,
    strip,
)

CASES = load_cases()


def run_case(case: dict[str, Any], cel: Any) -> tuple[Any, AllocationError | None, int]:
    """Our allocator on one case: (normalized results, error, allocateOne calls)."""
    allocator = new_allocator(
        features_of(case), allocated_state_of(case), ClassLister(case["classes"]), case["slices"] or [], cel
    )
    allocator.new_share_id = lambda: FIXED_SHARE_ID
    try:
        results = allocator.allocate(node_of(case), case["claims"] or [])
    except AllocationError as err:
        return None, err, allocator.num_allocate_one_invocations
    return normalized_results(results), None, allocator.num_allocate_one_invocations


@pytest.fixture
def replay_cel(monkeypatch: pytest.MonkeyPatch) -> None:
    """The allocator hands devices to the replayed CEL as (driver, raw device)."""
    monkeypatch.setattr(allocator_module, "_prepare_device", lambda driver, raw: (driver, raw))
    monkeypatch.setattr(allocator_module, "_cel_runtime_error", lambda: ReplayCelError)


@pytest.mark.usefixtures("replay_cel")
@pytest.mark.parametrize("name", [pytest.param(name, id=name) for name in CASES])
def test_upstream_case(name: str) -> None:
    """Same results, error and number of allocateOne calls as upstream's incubating allocator."""
    case = CASES[name]
    before = copy.deepcopy(case)
    results, err, invocations = run_case(case, ReplayCel(case))
    assert (str(err) if err is not None else None) == expected_error(case)
    assert error_kind(err) == expected_error_kind(case)
    if case["error"] is None:
        expected = [strip(r) for r in case["results"]] if case["results"] is not None else None
        assert results == expected
    assert invocations == case["numAllocateOneInvocations"]
    assert case == before, "the allocator modified its input"


@pytest.mark.usefixtures("replay_cel")
def test_upstream_cases_without_caches() -> None:
    """With every cache off (prepared slices, per-node pools, CEL memo) each case gives the same outcome."""
    for name, case in CASES.items():
        with caching.caches_enabled():
            cached = run_case(case, ReplayCel(case))
        with caching.caches_disabled():
            plain = run_case(case, ReplayCel(case))
        assert (cached[0], str(cached[1]), cached[2]) == (plain[0], str(plain[1]), plain[2]), name
