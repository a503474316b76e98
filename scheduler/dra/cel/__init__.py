"""CEL for DRA device selectors, as kube-scheduler v1.37.2 evaluates them (k8s.io/dynamic-resource-allocation/cel).

The environment is upstream's stored-expressions one: the `device` variable (driver, attributes by domain,
capacity as quantities, allowMultipleAllocations), cel-go's standard library and extensions and Kubernetes'
libraries (library.py), the runtime cost limit resourceapi.CELSelectorExpressionMaxCost. Our own interpreter
(parser -> checker -> closures, see docs/dra.md "CEL" for why not a binding): compile once per expression
(CelCache), prepare each device once (prepare_device), evaluate per device (CompilationResult.device_matches).

    cache = CelCache()
    result = cache.get_or_compile('device.attributes["gpu.example.com"].memory > 8')
    if result.error is None:
        result.device_matches(prepare_device("gpu.example.com", slice_device_json))
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.dra.cel import planner
from scheduler.dra.cel.checker import check
from scheduler.dra.cel.cost import worst_case
from scheduler.dra.cel.parser import ParseError, format_error, parse
from scheduler.dra.cel.planner import PlanError, Planner
from scheduler.dra.cel.types import is_dyn
from scheduler.dra.cel.values import CelEvalError, DefaultMap, Quantity, Semver, type_name

__all__ = [
    "CEL_SELECTOR_EXPRESSION_MAX_COST",
    "MAX_COST_UNKNOWN",
    "CelCache",
    "CelError",
    "CelRuntimeError",
    "CompilationResult",
    "PreparedDevice",
    "enhance_runtime_error",
    "prepare_device",
]

CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000  # resourceapi.CELSelectorExpressionMaxCost
MAX_COST_UNKNOWN = 2**64 - 1
"""CompilationResult.max_cost: kube-scheduler's cache compiles with DisableCostEstimation (math.MaxUint64)."""

DEFAULT_CACHE_SIZE = 10  # dynamicresources.go: cel.NewCache(10, ...)

_NO_SUCH_KEY_HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for "
    "optional fields"
)


@dataclass(frozen=True)
class CelError:
    """A compile error; `message` is what upstream's CompilationResult.Error.Error() says."""

    message: str


class CelRuntimeError(Exception):
    """An evaluation error; str(e) is cel-go's message as DeviceMatches returns it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def enhance_runtime_error(message: str) -> str:
    """upstream cel.EnhanceRuntimeError: a "no such key" error gets the hint about optional chaining."""
    if "no such key:" in message and not message.endswith(_NO_SUCH_KEY_HINT):
        return message + _NO_SUCH_KEY_HINT
    return message


class PreparedDevice:
    """One device as expressions read it, converted once (see prepare_device)."""

    __slots__ = ("allow_multiple_allocations", "attributes", "capacity", "driver", "error")

    def __init__(self, driver: str, attributes: DefaultMap, capacity: DefaultMap, allow_multiple_allocations: bool,
                 error: str | None) -> None:
        self.driver = driver
        self.attributes = attributes
        self.capacity = capacity
        self.allow_multiple_allocations = allow_multiple_allocations
        self.error = error

    def cel_field(self, name: str) -> Any:
        """`device.<name>` when `device` reaches a select through dyn (cel.bind, dyn(device))."""
        if name == "driver":
            return self.driver
        if name == "attributes":
            return self.attributes
        if name == "capacity":
            return self.capacity
        if name == "allowMultipleAllocations":
            return self.allow_multiple_allocations
        raise CelEvalError(f"no such key: {name}")


def _split_name(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


def _attribute_value(name: str, attr: Any) -> Any:
    if not isinstance(attr, Mapping):
        raise CelEvalError(f"attribute {name}: unsupported attribute value")
    # upstream's order of precedence: lists first, then scalars
    if "ints" in attr:
        return tuple(int(v) for v in attr["ints"] or ())
    if "bools" in attr:
        return tuple(bool(v) for v in attr["bools"] or ())
    if "strings" in attr:
        return tuple(str(v) for v in attr["strings"] or ())
    if "versions" in attr:
        try:
            return tuple(Semver.parse(str(v)) for v in attr["versions"] or ())
        except CelEvalError as e:
            raise CelEvalError(f"attribute {name}: parse semantic version: {e.message}") from None
    if "int" in attr and attr["int"] is not None:
        return int(attr["int"])
    if "bool" in attr and attr["bool"] is not None:
        return bool(attr["bool"])
    if "string" in attr and attr["string"] is not None:
        return str(attr["string"])
    if "version" in attr and attr["version"] is not None:
        try:
            return Semver.parse(str(attr["version"]))
        except CelEvalError as e:
            raise CelEvalError(f"attribute {name}: parse semantic version: {e.message}") from None
    raise CelEvalError(f"attribute {name}: unsupported attribute value")


def prepare_device(driver: str, device: Mapping[str, Any]) -> PreparedDevice:
    """One ResourceSlice `spec.devices[]` entry of driver `driver` (v1 JSON), as expressions read it.

    A conversion problem (an unparseable version) does not raise here: device_matches raises it, with
    upstream's text ("attribute <name>: parse semantic version: ..."), as DeviceMatches does."""
    attributes: DefaultMap = DefaultMap()
    capacity: DefaultMap = DefaultMap()
    error: str | None = None
    for name, attr in (device.get("attributes") or {}).items():
        try:
            value = _attribute_value(str(name), attr)
        except (CelEvalError, TypeError, ValueError) as e:
            error = error or (e.message if isinstance(e, CelEvalError) else f"attribute {name}: {e}")
            continue
        domain, ident = _split_name(str(name), driver)
        attributes.setdefault(domain, {})[ident] = value
    for name, cap in (device.get("capacity") or {}).items():
        domain, ident = _split_name(str(name), driver)
        raw = cap.get("value") if isinstance(cap, Mapping) else None
        try:
            q = Quantity.parse(str(raw))
        except CelEvalError as e:
            error = error or f"capacity {name}: {e.message}"
            continue
        capacity.setdefault(domain, {})[ident] = q
    allow = device.get("allowMultipleAllocations") is True
    return PreparedDevice(driver, attributes, capacity, allow, error)


class CompilationResult:
    """A compiled selector (or its compile error)."""

    def __init__(self, expression: str, error: CelError | None, program: planner.Fn | None = None,
                 slots: int = planner.FIRST_SLOT, metered: bool = False) -> None:
        self.expression = expression
        self.error = error
        self.max_cost = MAX_COST_UNKNOWN
        self.metered = metered
        self._program = program
        self._slots = slots

    def evaluate(self, device: PreparedDevice) -> Any:
        """The expression's value on one device (any CEL type); raises CelRuntimeError."""
        return self.evaluate_with_cost(device)[0]

    def evaluate_with_cost(self, device: PreparedDevice) -> tuple[Any, int]:
        """The value and the runtime cost cel-go would count (0 unless metered); raises CelRuntimeError."""
        if self._program is None:
            raise RuntimeError(f"CEL expression {self.expression!r} did not compile: {self.error}")
        if device.error is not None:
            raise CelRuntimeError(device.error)
        frame: list[Any] = [device, 0]
        if self._slots > planner.FIRST_SLOT:
            frame.extend([None] * (self._slots - planner.FIRST_SLOT))
        try:
            return self._program(frame), frame[planner.COST]
        except CelEvalError as e:
            raise CelRuntimeError(e.message) from None
        except RecursionError:
            raise CelRuntimeError("max recursion depth exceeded") from None

    def device_matches(self, device: PreparedDevice) -> bool:
        """Evaluate against one device; raises CelRuntimeError with cel-go's message on a runtime error."""
        result = self.evaluate(device)
        if type(result) is bool:
            return result
        name = type_name(result)
        raise CelRuntimeError(f"CEL result of type {name} could not be converted to bool: "
                              f"{_bool_conversion_error(name)}")


def _bool_conversion_error(name: str) -> str:
    """What cel-go's ConvertToNative(bool) says for a value of another type (each type words it its own way)."""
    if name == "string":
        return "unsupported native conversion from string to 'bool'"
    if name in ("int", "uint", "double", "bytes"):
        return f"unsupported type conversion from '{name}' to bool"
    if name in ("list", "map"):
        return f"type conversion error from {name} to 'bool'"
    short = {"kubernetes.Semver": "Semver", "kubernetes.Quantity": "Quantity", "net.IP": "IP", "net.CIDR": "CIDR"}
    return f"type conversion error from '{short.get(name, name)}' to 'bool'"


def compile_expression(expression: str, cost_limit: int = CEL_SELECTOR_EXPRESSION_MAX_COST,
                       metered: bool | None = None) -> CompilationResult:
    """upstream CompileCELExpression for a selector (stored expressions, cost estimation disabled).

    `metered` forces (True) or forbids (False) cost metering; by default it is on only when the expression's
    worst case could reach `cost_limit`."""
    try:
        root = parse(expression)
        output, checked, errors = check(root)
    except ParseError as e:
        text = "\n".join(format_error(expression, err.pos, err.message) for err in e.all())
        return CompilationResult(expression, CelError("compilation failed: " + text))
    except RecursionError:
        return CompilationResult(expression, CelError("compilation failed: expression recursion limit exceeded"))
    if errors:
        text = "\n".join(format_error(expression, e.pos, e.message) for e in errors)
        return CompilationResult(expression, CelError("compilation failed: " + text))
    if output.name != "bool" and not is_dyn(output):
        return CompilationResult(expression, CelError(f"must evaluate to bool or the unknown type, not {output}"))
    try:
        if metered is None:
            metered = worst_case(root, checked) > cost_limit
        plan = Planner(checked, metered, cost_limit)
        program = plan.plan(root)
    except PlanError as e:
        return CompilationResult(expression, CelError("program instantiation failed: " + e.message))
    except Exception as e:  # a bug of ours must fail this selector, never the scheduling loop
        return CompilationResult(expression, CelError(f"unexpected compilation error: {type(e).__name__}: {e}"))
    return CompilationResult(expression, None, program, plan.slots, metered)


class CelCache:
    """Compiles each expression once (LRU of successful compilations, as upstream cel.Cache; thread-safe)."""

    def __init__(self, max_size: int = DEFAULT_CACHE_SIZE) -> None:
        self.max_size = max_size
        self._entries: OrderedDict[str, CompilationResult] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_compile(self, expression: str) -> CompilationResult:
        with self._lock:
            hit = self._entries.get(expression)
            if hit is not None:
                self._entries.move_to_end(expression)
                return hit
        result = compile_expression(expression)
        if result.error is None:
            with self._lock:
                self._entries[expression] = result
                self._entries.move_to_end(expression)
                while len(self._entries) > self.max_size:
                    self._entries.popitem(last=False)
        return result

    def __len__(self) -> int:
        return len(self._entries)
