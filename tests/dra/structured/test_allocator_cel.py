"""Upstream's allocator table again, end to end: selectors compiled and evaluated by scheduler.dra.cel instead
of upstream's replayed answers, so CEL text (compile and runtime errors) reaches the allocator's messages as
kube-scheduler's would."""

from __future__ import annotations

import pytest

from scheduler.dra.cel import CelCache
from tests.dra.structured.test_allocator_upstream_table import CASES, run_case
from tests.dra.structured.upstream_cases import (
    error_kind,
    expected_error,
    expected_error_kind,
    strip,
)


@pytest.mark.parametrize("name", [pytest.param(name, id=name) for name in CASES])
def test_upstream_case_with_our_cel(name: str) -> None:
    """Same results, error text and allocateOne calls as upstream, CEL included."""
    case = CASES[name]
    results, err, invocations = run_case(case, CelCache())
    assert (str(err) if err is not None else None) == expected_error(case)
    assert error_kind(err) == expected_error_kind(case)
    if case["error"] is None:
        expected = [strip(r) for r in case["results"]] if case["results"] is not None else None
        assert results == expected
    assert invocations == case["numAllocateOneInvocations"]
