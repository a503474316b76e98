"""One fuzz case (inputs plus what upstream's allocator did) through our allocator, with our CEL and with
upstream's CEL answers replayed: the first difference, or None."""

from __future__ import annotations

from typing import Any

from scheduler.dra.cel import CelCache
from scheduler.dra.structured import AllocationError, new_allocator
from scheduler.dra.structured import allocator as allocator_module
from tests.dra.structured.upstream_cases import (
    FIXED_SHARE_ID,
    ClassLister,
    ReplayCel,
    ReplayCelError,
    allocated_state_of,
    error_kind,
    expected_error_kind,
    features_of,
    node_of,
    normalized_results,
    strip,
)


def _run(case: dict[str, Any], cel: Any) -> tuple[Any, AllocationError | None, int]:
    allocator = new_allocator(
        features_of(case), allocated_state_of(case), ClassLister(case["classes"]), case["slices"], cel
    )
    allocator.new_share_id = lambda: FIXED_SHARE_ID
    try:
        results = allocator.allocate(node_of(case), case["claims"])
    except AllocationError as err:
        return None, err, allocator.num_allocate_one_invocations
    return normalized_results(results), None, allocator.num_allocate_one_invocations


def _difference(case: dict[str, Any], outcome: tuple[Any, AllocationError | None, int], how: str) -> str | None:
    results, err, invocations = outcome
    if (str(err) if err is not None else None) != case["error"]:
        return f"{how}: error {err!s} != upstream {case['error']}"
    if error_kind(err) != expected_error_kind(case):
        return f"{how}: error kind {error_kind(err)} != upstream {expected_error_kind(case)}"
    if case["error"] is None:
        expected = [strip(r) for r in case["results"]] if case["results"] is not None else None
        if results != expected:
            return f"{how}: results {results} != upstream {expected}"
    if invocations != case["numAllocateOneInvocations"]:
        return f"{how}: {invocations} allocateOne calls != upstream {case['numAllocateOneInvocations']}"
    return None


_CEL = CelCache(max_size=64)  # compiling is deterministic: one cache for all cases keeps the run short


def compare(case: dict[str, Any]) -> str | None:
    """The first difference from upstream (our CEL, then replayed CEL), None when there is none."""
    found = _difference(case, _run(case, _CEL), "our CEL")
    if found is not None or "cel" not in case:  # the stored slice has no CEL records to replay
        return found
    prepare, error = allocator_module._prepare_device, allocator_module._cel_runtime_error
    allocator_module._prepare_device = lambda driver, raw: (driver, raw)
    allocator_module._cel_runtime_error = lambda: ReplayCelError
    try:
        return _difference(case, _run(case, ReplayCel(case)), "replayed CEL")
    finally:
        allocator_module._prepare_device, allocator_module._cel_runtime_error = prepare, error
