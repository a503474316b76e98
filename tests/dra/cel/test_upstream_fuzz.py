"""scheduler.dra.cel against cel-go on seeded random selectors (upstream/fuzz.py, answers in cel_fuzz.json).

600 random selectors over 5 random devices (attributes of every type, present or not, in several domains),
answered by cel-go through upstream's cache as the scheduler calls it. Every answer must be the same, word
for word: the compile error, the match, the runtime error, and with metering forced on, the runtime cost
on the evaluations that succeed (within the corpus' documented tolerance).

Regenerate with `python3 tests/dra/cel/upstream/dump_cel_corpus.py --fuzz`; other seeds can be checked the
same way by hand (FUZZ_SEED in the dumper), the default run keeps this fixed slice (about a second).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from scheduler.dra.cel import CelRuntimeError, compile_expression, prepare_device

HERE = Path(__file__).parent / "upstream"
FUZZ: dict[str, Any] = json.loads((HERE / "cel_fuzz.json").read_text())


def test_fuzz_is_the_committed_seed() -> None:
    """The JSON holds what fuzz.generate makes of its seed (so it can be regenerated and extended)."""
    sys.path.insert(0, str(HERE))
    try:
        import fuzz  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(HERE))
    expressions, devices = fuzz.generate(FUZZ["seed"], len(FUZZ["cases"]), len(FUZZ["devices"]))
    assert [c["expression"] for c in FUZZ["cases"]] == expressions
    assert FUZZ["devices"] == devices


def test_random_selectors_agree_with_cel_go() -> None:
    """Compile errors, matches and runtime errors are cel-go's on every (selector, device) pair."""
    devices = [prepare_device(d["driver"], d["device"]) for d in FUZZ["devices"]]
    different = []
    evaluated = 0
    for case in FUZZ["cases"]:
        result = compile_expression(case["expression"])
        ours_error = result.error.message if result.error else None
        if ours_error != case["compileError"]:
            different.append(f"{case['expression']!r}: compile {case['compileError']!r} vs ours {ours_error!r}")
            continue
        if ours_error is not None:
            continue
        for device, (matches, error, _) in zip(devices, case["results"], strict=True):
            evaluated += 1
            try:
                got: tuple[Any, Any] = (result.device_matches(device), None)
            except CelRuntimeError as e:
                got = (None, e.message)
            if got != (matches, error):
                different.append(f"{case['expression']!r}: cel-go {(matches, error)}, ours {got}")
    assert evaluated > 2000
    assert not different, "\n".join(different[:20])


def test_random_selectors_cost_what_cel_go_counts() -> None:
    """Metered, 94% of the successful evaluations cost exactly cel-go's ActualCost and the rest stay close."""
    devices = [prepare_device(d["driver"], d["device"]) for d in FUZZ["devices"]]
    same = total = 0
    worst = 0
    for case in FUZZ["cases"]:
        if case["compileError"] is not None:
            continue
        result = compile_expression(case["expression"], metered=True)
        for device, (_, error, cost) in zip(devices, case["results"], strict=True):
            if error is not None:
                continue
            total += 1
            _, ours = result.evaluate_with_cost(device)
            same += ours == cost
            worst = max(worst, abs(ours - cost))
    # The misses are macros over a map's keys, which stop early at a place Go's random map order decides,
    # and optional chaining details; within one pass over a device's attributes.
    assert total > 600
    assert same >= 600, f"{same} of {total}"
    assert worst <= 32
