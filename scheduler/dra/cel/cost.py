"""A conservative worst-case cost of an expression over any device, to decide whether evaluation must be metered.

cel-go meters every evaluation against resourceapi.CELSelectorExpressionMaxCost. Metering in Python costs
time on every node, so an expression whose worst case (bounded by the API's limits on a device: 32 attributes
and capacities per device and per domain, 64-character strings, 48 list values) stays under the limit runs
unmetered: it cannot reach the limit. The API server rejects new selectors whose estimate exceeds the limit, so
in practice every selector runs unmetered; anything this estimator cannot bound (a comprehension over a range
of unknown size, a string built at run time fed to a size-priced function) is metered.

This is not cel-go's EstimateCost (kube-scheduler disables estimation: its CompilationResult.MaxCost is
math.MaxUint64), only an upper bound on the runtime cost our metered plan would count.
"""

from __future__ import annotations

import math

from scheduler.dra.cel import ast
from scheduler.dra.cel import types as t
from scheduler.dra.cel.checker import Checked

UNBOUNDED = math.inf
MAX_ATTRIBUTES = 32  # resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice
MAX_STRING = 64  # resourceapi.DeviceAttributeMaxValueLength
MAX_LIST = 48  # resourceapi.ResourceSliceMaxAttributeValuesPerDevice
MAX_DOMAIN = 63  # resourceapi.DeviceMaxDomainLength
MAX_DRIVER = 63  # resourceapi.DriverNameMaxLength

_FIXED_COST = frozenset(
    [
        "sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan", "compareTo", "add",
        "sub", "major", "minor", "patch", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
        "isLinkLocalUnicast", "isGlobalUnicast", "masked", "prefixLength", "size", "int", "uint", "double", "bool",
        "type", "hasValue", "value", "orValue", "or", "optional.of", "optional.none", "optional.ofNonZeroValue", "-_",
        "_+_", "_-_", "_*_", "_/_", "_%_", "_<_", "_<=_", "_>_", "_>=_", "charAt", "indexOf", "lastIndexOf", "dyn",
    ]
)


# results no bigger than their inputs (the sum of them for `+`)
_SIZE_PRESERVING = frozenset(
    [
        "_+_", "lowerAscii", "upperAscii", "trim", "substring", "charAt", "reverse", "sort", "distinct", "slice", "dyn",
        "first", "last", "value", "orValue",
    ]
)


def _ceil(x: float) -> float:
    return x if math.isinf(x) else math.ceil(x)


class Estimator:
    """Walks a checked AST; each visit returns (worst cost, worst size of the value) with inf for unknown."""

    def __init__(self, checked: Checked) -> None:
        self.checked = checked
        self.var_sizes: list[dict[str, float]] = []

    def estimate(self, node: ast.Node) -> tuple[float, float]:
        if isinstance(node, ast.Literal):
            v = node.value
            return 0, len(v) if isinstance(v, (str, bytes)) else 1
        if isinstance(node, ast.Ident):
            for scope in reversed(self.var_sizes):
                if node.name in scope:
                    return 1, scope[node.name]
            return 1, 1
        if isinstance(node, ast.Select):
            cost, _ = self.estimate(node.operand)
            size = self.size_of_path(node)
            return cost + 1 + (1 if self.is_device_field(node) else 0), size
        if isinstance(node, ast.CreateList):
            costs = [self.estimate(e) for e in node.elements]
            return 10 + sum(c for c, _ in costs), len(node.elements)
        if isinstance(node, ast.CreateMap):
            total = 30.0
            for k, v, _ in node.entries:
                total += self.estimate(k)[0] + self.estimate(v)[0]
            return total, len(node.entries)
        if isinstance(node, ast.Comprehension):
            return self.comprehension(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        return UNBOUNDED, UNBOUNDED

    def is_device_field(self, node: ast.Select) -> bool:
        return isinstance(node.operand, ast.Ident) and node.operand.name == "device"

    def size_of_path(self, node: ast.Node) -> float:
        """Size bounds of values read from the device: its maps, their keys and attribute values."""
        typ = self.checked.type_of(node)
        if typ.name == "map":
            return MAX_ATTRIBUTES
        if typ == t.STRING:
            return MAX_DRIVER
        if t.is_dyn(typ):
            return max(MAX_STRING, MAX_LIST)
        return 1

    def call(self, node: ast.Call) -> tuple[float, float]:
        parts = [self.estimate(a) for a in node.args]
        if node.target is not None and id(node) not in self.checked.qualified:
            parts.insert(0, self.estimate(node.target))
        cost = sum(c for c, _ in parts)
        sizes = [s for _, s in parts]
        name = self.checked.qualified.get(id(node), node.function)
        if name in ("_&&_", "_||_", "_?_:_"):
            return cost, max(sizes[1:] or [1])
        if name in ("_[_]", "_[?_]"):
            return cost + 1, self.size_of_path(node)
        if name == "!_":
            return cost + 1, 1
        result_type = self.checked.type_of(node)
        sized = result_type.name in ("list", "map", "string", "bytes") or t.is_dyn(result_type)
        biggest = max(sizes or [1])
        if name in _SIZE_PRESERVING:
            result_size = sum(sizes) if name == "_+_" else biggest
        else:
            result_size = UNBOUNDED if sized else 1
        if name in _FIXED_COST:
            if name == "_+_" and result_type in (t.STRING, t.BYTES):
                return cost + _ceil(sum(sizes) * 0.1), result_size
            return cost + 1, result_size
        # size-priced functions: bounded when their inputs are
        if biggest == UNBOUNDED:
            return UNBOUNDED, UNBOUNDED
        product = 1.0
        for size in sizes:
            product *= max(size, 1) * 0.25 + 1
        return cost + _ceil(product) + biggest, result_size

    def comprehension(self, node: ast.Comprehension) -> tuple[float, float]:
        range_cost, range_size = self.estimate(node.range)
        if node.kind == "bind":
            self.var_sizes.append({node.var: range_size})
            body_cost, body_size = self.estimate(node.body[0])
            self.var_sizes.pop()
            return range_cost + body_cost, body_size
        if range_size == UNBOUNDED:
            return UNBOUNDED, UNBOUNDED
        elem = self.size_of_element(node.range)
        scope = {node.var: elem}
        if node.var2:
            scope[node.var2] = elem
        self.var_sizes.append(scope)
        body = [self.estimate(b) for b in node.body]
        self.var_sizes.pop()
        per_item = 16 + sum(c for c, _ in body)
        size = range_size if node.kind not in ("all", "exists", "exists_one", "existsOne") else 1
        return range_cost + 2 + range_size * per_item, size

    def size_of_element(self, node: ast.Node) -> float:
        if isinstance(node, ast.CreateList):
            sizes = [self.estimate(e)[1] for e in node.elements]
            return max(sizes or [1])
        return max(MAX_STRING, MAX_DOMAIN)


def worst_case(node: ast.Node, checked: Checked) -> float:
    """An upper bound of the metered runtime cost on any valid device (math.inf when none is known)."""
    return Estimator(checked).estimate(node)[0]
