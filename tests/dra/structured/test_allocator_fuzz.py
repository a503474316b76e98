"""A seeded slice of the differential fuzz (upstream/fuzz_allocator.py): random slices, claims and allocated
state, each with what upstream's incubating allocator did with it, must come out the same here (results,
error text, allocateOne calls; our CEL). Longer runs: `python3 tests/dra/structured/upstream/fuzz_allocator.py
--count 2000` (needs Go), which also replays upstream's CEL answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.dra.structured.fuzz_check import compare

CASES: list[dict[str, Any]] = json.loads((Path(__file__).parent / "upstream" / "fuzz_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", [pytest.param(case, id=case["name"]) for case in CASES])
def test_fuzz_case(case: dict[str, Any]) -> None:
    """Our allocator does what upstream's did with this random case."""
    assert compare(case) is None
