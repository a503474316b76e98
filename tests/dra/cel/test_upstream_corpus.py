"""scheduler.dra.cel against cel-go itself: every corpus case of upstream/cel_corpus.json, answered by
k8s.io/dynamic-resource-allocation/cel v0.37.2 (cel-go v0.29.2) as kube-scheduler calls it.

The corpus gathers the expressions of upstream's own tests (DRA's cel and allocator tests, the DRA e2e and
integration selectors, apiserver's CEL library tests, cel-go's extension tests) and probes of the semantics
they leave implicit, each against every device of the corpus; upstream/dump_cel_corpus.py regenerates it.
A case agrees when the compile error, the match result or the runtime error is the same, word for word. The
known differences are classified below, each with why, and KNOWN_DIFFERENCE_COUNTS pins how many there are.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from scheduler.dra.cel import (
    CelRuntimeError,
    CompilationResult,
    PreparedDevice,
    compile_expression,
    enhance_runtime_error,
    prepare_device,
)
from scheduler.dra.cel.values import DefaultMap, Optional, TypeValue, Uint, type_name

JSON = dict[str, Any]
CORPUS: JSON = json.loads((Path(__file__).parent / "upstream" / "cel_corpus.json").read_text())
CASES: list[JSON] = CORPUS["cases"]

# Why a case may differ from cel-go (anything else fails the test):
# - syntax: a syntax error's wording (cel-go's comes from ANTLR's error recovery, ours from our own parser);
#   both must fail to compile, at the same line and column.
KNOWN_DIFFERENCE_COUNTS = {"syntax": 18}

_POSITION = re.compile(r"ERROR: <input>:(\d+):(\d+):")


@cache
def _devices() -> dict[str, PreparedDevice]:
    return {name: prepare_device(d["driver"], d["device"]) for name, d in CORPUS["devices"].items()}


@cache
def _compiled(expression: str) -> CompilationResult:
    return compile_expression(expression)


def _answer(case: JSON) -> JSON:
    """Our answer in the corpus' shape (computed once per case)."""
    return _answer_for(case["expression"], case["deviceName"])


@cache
def _answer_for(expression: str, device: str) -> JSON:
    case = {"expression": expression, "deviceName": device}
    result = _compiled(case["expression"])
    if result.error is not None:
        return {"compileError": result.error.message, "matches": None, "error": None}
    try:
        return {"compileError": None, "matches": result.device_matches(_devices()[case["deviceName"]]), "error": None}
    except CelRuntimeError as e:
        return {"compileError": None, "matches": None, "error": e.message}


def classify(case: JSON, ours: JSON) -> str:
    """'same', a KNOWN_DIFFERENCE_COUNTS key, or 'different'."""
    want = case["expected"]
    if (want["compileError"], want["matches"], want["error"]) == (ours["compileError"], ours["matches"],
                                                                   ours["error"]):
        return "same"
    theirs_c, ours_c = want["compileError"] or "", ours["compileError"] or ""
    first_theirs, first_ours = _POSITION.search(theirs_c), _POSITION.search(ours_c)
    if "Syntax error" in theirs_c and first_theirs and first_ours and first_theirs.groups() == first_ours.groups():
        return "syntax"
    return "different"


def _group(case: JSON) -> str:
    """The test file (or 'probe') a case comes from: one test per source keeps the run fast and the ids useful."""
    return str(case["source"]).rsplit("/", 1)[-1]


GROUPS = sorted({_group(c) for c in CASES})


@pytest.mark.parametrize("group", [pytest.param(g, id=g) for g in GROUPS])
def test_cases_agree_with_cel_go(group: str) -> None:
    """Every case of one source: our compile error, match or runtime error is cel-go's, or a known difference."""
    different = []
    for case in CASES:
        if _group(case) != group:
            continue
        ours = _answer(case)
        if classify(case, ours) == "different":
            different.append(f"{case['id']} {case['expression']!r}: cel-go {case['expected']}, ours {ours}")
    assert not different, "\n".join(different)


def test_known_differences_are_exactly_the_documented_ones() -> None:
    """The known differences stay what the module docstring says: no more, no fewer (a fix updates the count)."""
    counts = Counter(classify(c, _answer(c)) for c in CASES)
    assert {k: counts.get(k, 0) for k in KNOWN_DIFFERENCE_COUNTS} == KNOWN_DIFFERENCE_COUNTS
    assert counts["same"] == len(CASES) - sum(KNOWN_DIFFERENCE_COUNTS.values())


def test_corpus_covers_every_source() -> None:
    """The corpus holds the DRA tests' expressions, the libraries' tests and the probes, against every device."""
    sources = Counter(c["source"].split("/")[0].split("@")[0] for c in CASES)
    assert sources["k8s.io"] >= 500 and sources["github.com"] >= 300 and sources["probe"] >= 600
    assert {c["deviceName"] for c in CASES} == set(CORPUS["devices"])


def test_enhanced_no_such_key_error_is_upstreams() -> None:
    """enhance_runtime_error adds upstream's optional-chaining hint to exactly the errors EnhanceRuntimeError does."""
    checked = 0
    for case in CASES:
        want = case["expected"]
        if want["error"] is None:
            continue
        assert enhance_runtime_error(want["error"]) == want["enhancedError"]
        checked += 1
    assert checked > 100


def _encode(v: Any) -> Any:
    """A value in the dump's encoding (eval_corpus.go.txt's encode); quantities are left out (see below)."""
    tv = type(v)
    if tv is bool:
        return {"t": "bool", "v": v}
    if tv is Uint:
        return {"t": "uint", "v": str(int(v))}
    if tv is int:
        return {"t": "int", "v": str(v)}
    if tv is float:
        if math.isnan(v) or math.isinf(v):
            return {"t": "double", "v": "NaN" if math.isnan(v) else ("+Inf" if v > 0 else "-Inf")}
        return {"t": "double", "v": v}
    if tv is str:
        return {"t": "string", "v": v}
    if tv is bytes:
        return {"t": "bytes", "v": base64.b64encode(v).decode()}
    if v is None:
        return {"t": "null"}
    if tv in (list, tuple):
        return {"t": "list", "v": [_encode(x) for x in v] or None}
    if tv in (dict, DefaultMap):
        pairs = [[_encode(k), _encode(x)] for k, x in v.items()]
        pairs.sort(key=lambda p: json.dumps(p[0], separators=(",", ":"), sort_keys=True))
        return {"t": "map", "v": pairs or None}
    if tv is TypeValue:
        return {"t": "type", "v": v.name}
    if tv is Optional:
        return {"t": "optional", "v": _encode(v.value)} if v.has_value else {"t": "optional"}
    return {"t": type_name(v), "v": str(v)}


def _value_cases() -> list[JSON]:
    out = []
    for c in CASES:
        value = c["expected"]["value"]
        # The Go side's value path reads device maps without upstream's empty-map default (has(), missing
        # domains); quantities print in resource.Quantity's canonical form, which we do not reproduce.
        if value is None or "device" in c["expression"] or "kubernetes.Quantity" in json.dumps(value):
            continue
        out.append(c)
    return out


def test_values_agree_with_cel_go() -> None:
    """dyn(expression) evaluates to cel-go's value (type and value) for every device-free expression."""
    cases = _value_cases()
    different = []
    for case in cases:
        result = compile_expression("dyn(" + case["expression"] + ")")
        got = _encode(result.evaluate(_devices()[case["deviceName"]])) if result.error is None else result.error
        want = case["expected"]["value"]
        if not _numbers_equal(got, want):
            different.append(f"{case['id']} {case['expression']!r}: cel-go {want}, ours {got}")
    assert len(cases) > 400
    assert not different, "\n".join(different)


def _numbers_equal(a: Any, b: Any) -> bool:
    """JSON-encoded values equal, doubles compared as numbers (Go prints 50703 for 50703.0)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_numbers_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_numbers_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return bool(a == b)


# Evaluations (that do not err) whose metered cost is cel-go's actual cost, exactly. The rest are
# optimizer details we do not mirror (cel-go's sortBy expansion, `in` against a constant list, optional
# field selection), each within a few units.
SAME_COST_FLOOR = 825


def test_metered_cost_is_cel_gos_actual_cost() -> None:
    """With metering on, our cost count equals cel-go's ActualCost on (nearly) every successful evaluation."""
    same = total = 0
    for case in CASES:
        want = case["expected"]
        device = _devices()[case["deviceName"]]
        if want["compileError"] is not None or want["error"] is not None or device.error is not None:
            continue
        result = compile_expression(case["expression"], metered=True)
        assert result.error is None, result.error
        total += 1
        _, cost = result.evaluate_with_cost(device)
        same += cost == want["actualCost"]
    assert total > 850
    assert same >= SAME_COST_FLOOR, f"{same} of {total}"
