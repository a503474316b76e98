"""scheduler.dra.cel's contract: the device as expressions see it, the cache, errors, and the cost limit."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from scheduler.dra.cel import (
    CEL_SELECTOR_EXPRESSION_MAX_COST,
    MAX_COST_UNKNOWN,
    CelCache,
    CelRuntimeError,
    compile_expression,
    enhance_runtime_error,
    prepare_device,
)

GPU = "gpu.example.com"
DEVICE: dict[str, Any] = {
    "name": "gpu-0",
    "attributes": {
        "model": {"string": "a100"},
        "memoryGiB": {"int": 80},
        "mig": {"bool": True},
        "driverVersion": {"version": "535.104.5"},
        "numa.example.com/node": {"int": 1},
        "cores": {"ints": [0, 1, 2, 3]},
    },
    "capacity": {"memory": {"value": "80Gi"}, "numa.example.com/slots": {"value": "4"}},
    "allowMultipleAllocations": True,
}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param(f'device.driver == "{GPU}"', True, id="driver"),
        pytest.param(f'device.attributes["{GPU}"].model == "a100"', True, id="string-attribute"),
        pytest.param(f'device.attributes["{GPU}"].memoryGiB >= 40', True, id="int-attribute"),
        pytest.param(f'device.attributes["{GPU}"].mig', True, id="bool-attribute"),
        pytest.param(f'device.attributes["{GPU}"].driverVersion.isGreaterThan(semver("535.0.0"))', True,
                     id="version-attribute"),
        pytest.param('device.attributes["numa.example.com"].node == 1', True, id="qualified-attribute-domain"),
        pytest.param(f'device.attributes["{GPU}"].cores.size() == 4', True, id="list-attribute"),
        pytest.param(f'device.capacity["{GPU}"].memory.compareTo(quantity("40Gi")) > 0', True, id="capacity"),
        pytest.param('device.capacity["numa.example.com"].slots == quantity("4")', True, id="qualified-capacity"),
        pytest.param("device.allowMultipleAllocations", True, id="allow-multiple-allocations"),
        pytest.param('"no.such.domain" in device.attributes', False, id="missing-domain-in"),
        pytest.param('device.attributes["no.such.domain"].size() == 0', True, id="missing-domain-is-empty"),
        pytest.param(f'device.attributes["{GPU}"].?nosuch.orValue(0) == 0', True, id="optional-chaining"),
    ],
)
def test_device_as_expressions_read_it(expression: str, expected: bool) -> None:
    """prepare_device gives expressions upstream's `device`: driver, attributes and capacity by domain, flags."""
    result = compile_expression(expression)
    assert result.error is None, result.error
    assert result.device_matches(prepare_device(GPU, DEVICE)) is expected


def test_device_without_the_flag_does_not_allow_multiple_allocations() -> None:
    """allowMultipleAllocations unset reads false, as ptr.Deref(nil, false) upstream."""
    result = compile_expression("device.allowMultipleAllocations == false")
    assert result.device_matches(prepare_device(GPU, {"name": "d"}))


@pytest.mark.parametrize(
    ("device", "message"),
    [
        pytest.param({"name": "d", "attributes": {"v": {"version": "1.a.0"}}},
                     'attribute v: parse semantic version: Invalid character(s) found in minor number "a"',
                     id="bad-version"),
        pytest.param({"name": "d", "attributes": {"v": {}}}, "attribute v: unsupported attribute value",
                     id="no-value"),
    ],
)
def test_conversion_problems_surface_from_device_matches(device: dict[str, Any], message: str) -> None:
    """A device upstream cannot convert fails every selector with DeviceMatches' error, even one not reading it."""
    prepared = prepare_device(GPU, device)
    with pytest.raises(CelRuntimeError) as err:
        compile_expression("true").device_matches(prepared)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param(f'device.attributes["{GPU}"].nosuch == 1', "no such key: nosuch", id="no-such-key"),
        pytest.param(f'device.attributes["{GPU}"].model > 1', "no such overload", id="no-such-overload"),
        pytest.param(f'device.attributes["{GPU}"].memoryGiB', "CEL result of type int could not be converted to "
                     "bool: unsupported type conversion from 'int' to bool", id="not-a-bool"),
        pytest.param("9223372036854775807 + dyn(1) > 0", "integer overflow", id="overflow"),
    ],
)
def test_runtime_errors_have_cel_go_words(expression: str, message: str) -> None:
    """Runtime errors raise CelRuntimeError whose text is cel-go's (the corpus proves the rest)."""
    with pytest.raises(CelRuntimeError) as err:
        compile_expression(expression).device_matches(prepare_device(GPU, DEVICE))
    assert str(err.value) == message


def test_errors_absorbed_as_cel_does() -> None:
    """`||` and `&&` absorb an error when the other side decides, in either order."""
    device = prepare_device(GPU, DEVICE)
    for expression, expected in (
        (f'device.attributes["{GPU}"].nosuch == 1 || true', True),
        (f'true || device.attributes["{GPU}"].nosuch == 1', True),
        (f'device.attributes["{GPU}"].nosuch == 1 && false', False),
    ):
        assert compile_expression(expression).device_matches(device) is expected


def test_enhance_runtime_error_adds_the_hint_once() -> None:
    """The optional-chaining hint is appended to "no such key" errors, once, and nothing else changes."""
    enhanced = enhance_runtime_error("no such key: x")
    assert enhanced.startswith("no such key: x. consider using CEL optional chaining")
    assert enhance_runtime_error(enhanced) == enhanced
    assert enhance_runtime_error("no such overload") == "no such overload"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param("1", "must evaluate to bool or the unknown type, not int", id="not-bool"),
        pytest.param("device.nosuch", "compilation failed: ERROR: <input>:1:7: undefined field 'nosuch'\n"
                     " | device.nosuch\n | ......^", id="undefined-field"),
        pytest.param('int("x") == 1', "program instantiation failed: type conversion error from 'string' to 'int'",
                     id="folded-conversion"),
    ],
)
def test_compile_errors(expression: str, message: str) -> None:
    """A compile error carries upstream's CompilationResult.Error text; max_cost is then the unknown sentinel."""
    result = compile_expression(expression)
    assert result.error is not None and result.error.message == message
    assert result.max_cost == MAX_COST_UNKNOWN


def test_cache_compiles_each_expression_once_and_evicts_the_oldest() -> None:
    """get_or_compile returns the same result for a cached expression; beyond max_size the least recent goes."""
    cache = CelCache(max_size=2)
    first = cache.get_or_compile("device.driver == 'a'")
    assert cache.get_or_compile("device.driver == 'a'") is first
    second = cache.get_or_compile("device.driver == 'b'")
    cache.get_or_compile("device.driver == 'a'")  # now most recent
    cache.get_or_compile("device.driver == 'c'")  # evicts 'b'
    assert len(cache) == 2
    assert cache.get_or_compile("device.driver == 'a'") is first
    assert cache.get_or_compile("device.driver == 'b'") is not second


def test_cache_does_not_keep_compile_errors() -> None:
    """As upstream, only successful compilations are stored."""
    cache = CelCache()
    assert cache.get_or_compile("1 +").error is not None
    assert len(cache) == 0


def test_default_cache_size_is_the_schedulers() -> None:
    """dynamicresources.go uses cel.NewCache(10, ...)."""
    assert CelCache().max_size == 10


def test_plain_selectors_run_unmetered_and_bounded_ones_stay_exact() -> None:
    """A selector whose worst case is under the limit is not metered; an unbounded one is, and stops at it."""
    assert not compile_expression(f'device.attributes["{GPU}"].cores.exists(c, c == 3)').metered
    heavy = compile_expression("lists.range(1000).all(i, lists.range(1000).all(j, i + j >= 0))")
    assert heavy.metered
    with pytest.raises(CelRuntimeError) as err:
        heavy.device_matches(prepare_device(GPU, DEVICE))
    assert str(err.value) == "operation cancelled: actual cost limit exceeded"
    light = compile_expression("lists.range(10).all(i, i >= 0)")
    assert light.metered and light.device_matches(prepare_device(GPU, DEVICE))
    assert CEL_SELECTOR_EXPRESSION_MAX_COST == 1_000_000


def test_one_result_is_safe_to_share_between_threads() -> None:
    """Comprehension variables live in each evaluation's frame, so concurrent evaluations do not interfere."""
    result = compile_expression(f'device.attributes["{GPU}"].cores.all(c, c < device.attributes["{GPU}"].limit)')
    devices = [prepare_device(GPU, {"name": "d", "attributes": {"cores": {"ints": list(range(50))},
                                                                 "limit": {"int": limit}}}) for limit in (10, 100)]
    answers: list[tuple[int, bool]] = []

    def run(i: int) -> None:
        for _ in range(200):
            answers.append((i, result.device_matches(devices[i])))

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {a for a in answers} == {(0, False), (1, True)}
