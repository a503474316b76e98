"""A seeded slice of the differential fuzz (upstream/fuzz_allocator.py): random slices, claims and allocated
state, each with what upstream's incubating allocator did with it, must come out the same here (results,
error text, allocateOne calls; our CEL). Longer runs: `python3 tests/dra/structured/upstream/fuzz_allocator.py
--count 2000` (needs Go), which also replays upstream's CEL answers."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests.dra.structured.fuzz_check import compare

CASES: list[dict[str, Any]] = json.loads((Path(__file__).parent / "upstream" / "fuzz_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", [pytest.param(case, id=case["name"]) for case in CASES])
def test_fuzz_case(case: dict[str, Any]) -> None:
    """Our allocator does what upstream's did with this random case."""
    assert compare(case) is None


GARBAGE: tuple[Any, ...] = (None, 5, -1, "x", [], {}, [1], {"a": 1}, True, 1.5)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _paths(item, (*path, i))
    return out


class _Classes:
    """A lister that finds a class even when other classes are broken (the informer only holds valid ones)."""

    def __init__(self, classes: list[Any]) -> None:
        self.classes = classes

    def get(self, name: str) -> Any:
        for cls in self.classes:
            meta = cls.get("metadata") if isinstance(cls, dict) else None
            if isinstance(meta, dict) and meta.get("name") == name:
                return cls
        return None


@pytest.mark.parametrize("seed", [pytest.param(seed, id=f"seed-{seed}") for seed in range(4)])
def test_malformed_input_is_an_allocation_error(seed: int) -> None:
    """One field of a claim, slice or class replaced by a value of the wrong shape: the allocator answers or
    raises AllocationError, never anything else (a pod it cannot understand must not stop the others)."""
    from scheduler.dra.cel import CelCache
    from scheduler.dra.structured import AllocationError, AllocationTrace, new_allocator
    from tests.dra.structured.upstream_cases import allocated_state_of, features_of, node_of

    rng = random.Random(seed)
    cel = CelCache(max_size=64)
    for _ in range(100):
        case = copy.deepcopy(rng.choice(CASES))
        target = rng.choice(["claims", "slices", "classes"])
        path = rng.choice(_paths(case[target])[1:] or [()])
        if not path:
            continue
        holder = case[target]
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = rng.choice(GARBAGE)
        try:
            allocator = new_allocator(
                features_of(case), allocated_state_of(case), _Classes(case["classes"]), case["slices"], cel
            )
            allocator.allocate(node_of(case), case["claims"], AllocationTrace())
        except AllocationError:
            pass
