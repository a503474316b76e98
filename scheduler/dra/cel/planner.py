"""Turns a checked expression into nested Python closures: compiled once, evaluated per device.

A closure takes the evaluation frame, a list: [device, cost, slot...] (comprehension variables live in slots
fixed at plan time, so evaluations never share state and a CompilationResult can be used from several threads).
Two plans exist per expression: the plain one, and one that also adds cel-go's runtime cost at every step and
stops at the limit ("operation cancelled: actual cost limit exceeded"); the second is only used when the
expression's worst case could reach the limit (see cost.py), so selectors the API server accepted run plain.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

from scheduler.dra.cel import ast
from scheduler.dra.cel import types as t
from scheduler.dra.cel.checker import Checked
from scheduler.dra.cel.library import FUNCTIONS, TYPE_IDENTS, Overload, self_compare_cost, size_of
from scheduler.dra.cel.values import (
    EMPTY,
    GO_TYPE_NAMES,
    NONE,
    CelEvalError,
    CostLimitExceeded,
    DefaultMap,
    Fatal,
    Optional,
    Semver,
    Uint,
    compare,
    equals,
    lookup,
    no_such_overload,
    type_name,
)

Frame = list[Any]
Fn = Callable[[Frame], Any]
COST = 1  # frame index of the running cost
FIRST_SLOT = 2
COST_LIMIT_MESSAGE = "operation cancelled: actual cost limit exceeded"


def _key_text(key: Any) -> str:
    if type(key) is bool:
        return "true" if key else "false"
    return str(key)


def select_value(operand: Any, name: str) -> Any:
    """`operand.name` at run time: a map key (device maps default to empty), or the device's own fields."""
    to = type(operand)
    if to is DefaultMap:
        return operand[name]
    if to is dict:
        try:
            return operand[name]
        except KeyError:
            raise CelEvalError(f"no such key: {name}") from None
    getter = getattr(operand, "cel_field", None)
    if getter is not None:
        return getter(name)
    if to is list or to is tuple:
        raise CelEvalError("unsupported index type 'string' in list")
    raise CelEvalError(f"no such key: {name}")


def index_value(operand: Any, key: Any) -> Any:
    """`operand[key]`: lists by int/uint/integral double, maps by key (cel-go's words when it fails)."""
    to = type(operand)
    if to is list or to is tuple:
        tk = type(key)
        if tk is int or tk is Uint or (tk is float and key.is_integer()):
            i = int(key)
        elif tk is float:
            raise CelEvalError(f"unsupported index value {key} in list")
        else:
            raise CelEvalError(f"unsupported index type '{type_name(key)}' in list")
        if i < 0 or i >= len(operand):
            raise CelEvalError(f"index out of bounds: {i}")
        return operand[i]
    if to is DefaultMap:
        if type(key) is not str:
            raise CelEvalError("unsupported key type")
        return operand[key]
    if to is dict:
        found, value = lookup(operand, key)
        if not found:
            raise CelEvalError(f"no such key: {_key_text(key)}")
        return value
    raise CelEvalError(f"no such key: {_key_text(key)}")


def iterate(value: Any) -> list[Any] | tuple[Any, ...]:
    """A comprehension's range: a list's elements or a map's keys."""
    tv = type(value)
    if tv is list or tv is tuple:
        return value  # type: ignore[no-any-return]
    if tv is dict or tv is DefaultMap:
        return list(value)
    raise CelEvalError(f"got '{GO_TYPE_NAMES.get(tv, tv.__name__)}', expected iterable type")


class PlanError(Exception):
    """cel-go's program instantiation failed (a constant conversion that errs, folded at plan time)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# cel-go's optimizer evaluates these on constant arguments when the program is planned (overloads.go).
CONVERSIONS = frozenset(["bool", "bytes", "double", "duration", "dyn", "int", "string", "timestamp", "type", "uint"])
_NOT_CONSTANT = object()
# Functions whose value depends on their (constant) arguments only and never changes, so an unmetered plan
# may compute them once: cel-go evaluates them per device, which only its cost counting can observe.
PURE_CONSTRUCTORS = frozenset(["quantity", "semver", "ip", "cidr", "url", "isQuantity", "isSemver", "isIP", "isCIDR"])


class Planner:
    """Builds the closures of one checked expression; `tracked` adds the cost bookkeeping."""

    def __init__(self, checked: Checked, tracked: bool, limit: int) -> None:
        self.checked = checked
        self.tracked = tracked
        self.limit = limit
        self.scopes: list[dict[str, int]] = []
        self.slots = FIRST_SLOT
        # values of the nodes cel-go's optimizer folds: literals, constant list/map literals, conversions of them
        self.constants: dict[int, Any] = {}
        self.bind_slots: set[int] = set()

    def plan(self, node: ast.Node) -> Fn:
        return self.visit(node)

    def constant(self, node: ast.Node) -> Any:
        if isinstance(node, ast.Literal):
            return node.value
        return self.constants.get(id(node), _NOT_CONSTANT)

    def add_cost(self, fn: Fn, amount: int) -> Fn:
        """Wrap fn so that it adds a fixed cost after it ran (what cel-go's cost observer does)."""
        if not self.tracked or amount == 0:
            return fn
        limit = self.limit

        def costed(f: Frame) -> Any:
            value = fn(f)
            f[COST] += amount
            if f[COST] > limit:
                raise CostLimitExceeded(COST_LIMIT_MESSAGE)
            return value

        return costed

    def visit(self, node: ast.Node) -> Fn:
        if isinstance(node, ast.Literal):
            value = node.value
            return lambda f: value
        if isinstance(node, ast.Ident):
            return self.ident(node)
        if isinstance(node, ast.Select):
            return self.select(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.CreateList):
            return self.create_list(node)
        if isinstance(node, ast.CreateMap):
            return self.create_map(node)
        if isinstance(node, ast.Comprehension):
            return self.comprehension(node)
        raise TypeError(type(node).__name__)

    def ident(self, node: ast.Ident) -> Fn:
        if node.name.startswith("."):
            if node.name == ".device":
                return self.add_cost(lambda f: f[0], 1)
            value = TYPE_IDENTS[node.name[1:]]
            self.constants[id(node)] = value
            return lambda f: value
        slot = next((scope[node.name] for scope in reversed(self.scopes) if node.name in scope), None)
        if slot is not None:
            if slot in self.bind_slots:
                def bound(f: Frame) -> Any:
                    value = f[slot]
                    if type(value) is _Lazy:
                        value = f[slot] = value.init(f)
                    return value

                return self.add_cost(bound, 1)
            return self.add_cost(lambda f: f[slot], 1)
        if node.name == "device":
            return self.add_cost(lambda f: f[0], 1)
        value = TYPE_IDENTS[node.name]  # a type name: a constant, as cel-go's checker resolves it
        self.constants[id(node)] = value
        return lambda f: value

    def select(self, node: ast.Select) -> Fn:
        qualified = self.checked.qualified.get(id(node))
        if qualified is not None:
            type_value = TYPE_IDENTS[qualified]
            self.constants[id(node)] = type_value
            return lambda f: type_value
        operand = self.visit(node.operand)
        name = node.field
        if node.test_only:
            def has(f: Frame) -> bool:
                o = operand(f)
                to = type(o)
                if to is DefaultMap:
                    return True  # upstream's mapper finds every domain (as an empty map)
                if to is dict:
                    return name in o
                if getattr(o, "cel_field", None) is not None:
                    return True
                if to is list or to is tuple:
                    raise CelEvalError("unsupported index type 'string' in list")
                return False

            return has
        if node.optional:
            def opt_select(f: Frame) -> Optional:
                o = operand(f)
                if type(o) is Optional:
                    if not o.has_value:
                        return NONE
                    o = o.value
                if type(o) is dict:
                    return Optional(o[name], True) if name in o else NONE
                if type(o) is DefaultMap:
                    return Optional(o[name], True)
                if type(o) in (list, tuple) or getattr(o, "cel_field", None) is not None:
                    return Optional(select_value(o, name), True)
                return NONE  # a scalar has no fields: cel-go answers none, not an error

            return opt_select  # an optional qualifier is not observed by cel-go's cost tracker
        if isinstance(node.operand, ast.Ident) and node.operand.name == "device" and not self.shadowed("device"):
            attr = {"driver": "driver", "allowMultipleAllocations": "allow_multiple_allocations",
                    "attributes": "attributes", "capacity": "capacity"}[name]
            if attr == "driver":
                fn: Fn = lambda f: f[0].driver  # noqa: E731
            elif attr == "attributes":
                fn = lambda f: f[0].attributes  # noqa: E731
            elif attr == "capacity":
                fn = lambda f: f[0].capacity  # noqa: E731
            else:
                fn = lambda f: f[0].allow_multiple_allocations  # noqa: E731
            return self.add_cost(fn, 2)
        return self.add_cost(lambda f: select_value(operand(f), name), 1)

    def device_domain(self, node: ast.Call) -> Fn | None:
        """`device.attributes["domain"]` (or capacity) with a constant domain: one closure, the hot path of
        nearly every selector. Unmetered only (metering counts the three steps)."""
        operand, key = node.args
        if self.tracked or not isinstance(key, ast.Literal) or type(key.value) is not str:
            return None
        if not (isinstance(operand, ast.Select) and not operand.test_only and not operand.optional
                and operand.field in ("attributes", "capacity") and isinstance(operand.operand, ast.Ident)
                and operand.operand.name == "device" and not self.shadowed("device")):
            return None
        domain = key.value
        if operand.field == "attributes":
            return lambda f: f[0].attributes[domain]
        return lambda f: f[0].capacity[domain]

    def shadowed(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    def call(self, node: ast.Call) -> Fn:
        name = node.function
        if name == "_&&_":
            return self.logical(node, False)
        if name == "_||_":
            return self.logical(node, True)
        if name == "_?_:_":
            return self.conditional(node)
        if name == "!_":
            arg = self.visit(node.args[0])

            def not_(f: Frame) -> bool:
                v = arg(f)
                if type(v) is not bool:
                    raise no_such_overload()
                return not v

            return self.add_cost(not_, 1)
        if name == "_[_]":
            fused = self.device_domain(node)
            if fused is not None:
                return fused
            operand, key = self.visit(node.args[0]), self.visit(node.args[1])
            return self.add_cost(lambda f: index_value(*_both(operand, key, f)), 1)
        if name == "_[?_]":
            return self.add_cost(self.optional_index(node), 1)
        qualified = self.checked.qualified.get(id(node))
        args = [self.visit(a) for a in node.args]
        if name in CONVERSIONS and node.target is None and len(node.args) == 1:
            value = self.constant(node.args[0])
            if value is not _NOT_CONSTANT:
                folded = self.dispatch(name, True, self.checked.overloads.get(id(node)) or FUNCTIONS[name].overloads,
                                       [lambda f: value], node)
                try:
                    result = folded([None, 0])
                except CelEvalError as e:
                    raise PlanError(e.message) from None
                self.constants[id(node)] = result
                return lambda f: result
        if name == "@in":
            members = self.constant(node.args[1])
            if type(members) is list and all(type(m) in _SET_MEMBER_TYPES for m in members):
                return _set_membership(args[0], members)
        if node.target is not None and qualified is None:
            target = self.visit(node.target)
            if name in LISTER_COST_TRACKED:
                target = _lister_or_panic(target)
            args.insert(0, target)
        fname = qualified or name
        function = FUNCTIONS[fname]
        overloads = self.checked.overloads.get(id(node)) or [
            o for o in function.overloads if o.member == (node.target is not None and qualified is None)
            and len(o.params) == len(args)
        ]
        planned = self.dispatch(fname, function.operator, overloads, args, node)
        if not self.tracked and fname in PURE_CONSTRUCTORS and all(
            self.constant(a) is not _NOT_CONSTANT for a in node.args
        ):
            # quantity("40Gi"), semver("1.2.0"), ...: the same value for every device, computed once
            # (a failing one keeps failing at run time, with its error, as upstream evaluates it there)
            try:
                value = planned([None, 0])
            except CelEvalError:
                return planned
            return lambda f: value
        return planned

    def dispatch(self, name: str, operator: bool, overloads: list[Overload], args: list[Fn], node: ast.Call) -> Fn:
        """A call's closure: the one overload the checker left (type-guarded unless the static types settle it,
        as cel-go's guards would never fail then), or a run-time choice among several."""
        arg_types = [self.checked.type_of(a) for a in ([node.target] if node.target is not None and
                                                       id(node) not in self.checked.qualified else []) + node.args]
        mismatch = FUNCTIONS[name].mismatch
        tracked, limit = self.tracked, self.limit
        if len(overloads) != 1 and name in ORDERING and not tracked:
            return _ordering(name, args[0], args[1], overloads, mismatch)
        if len(overloads) != 1:
            # dispatched at run time, cel-go prices the call by function name only (Kubernetes' estimator,
            # equality), else 1: the overload-specific prices need the overload the checker did not pick
            named_cost = name in NAME_PRICED

            def multi(f: Frame) -> Any:
                values = _all(args, f)
                for ov in overloads:
                    if ov.accepts(values):
                        result = ov.impl(*values)
                        if tracked:
                            f[COST] += ov.cost(list(values), result) if named_cost and ov.cost else 1
                            if f[COST] > limit:
                                raise CostLimitExceeded(COST_LIMIT_MESSAGE)
                        return result
                raise mismatch(values)

            return multi
        ov = overloads[0]
        impl, cost_fn = ov.impl, ov.cost
        static = all(not _loose(a) for a in arg_types) and all(not _loose(p) for p in ov.params)
        guards = tuple(None if static else g for g in ov.guards)
        if len(args) == 1:
            a0, g0 = args[0], guards[0]

            def unary(f: Frame) -> Any:
                v = a0(f)
                if g0 is not None and type(v) not in g0:
                    raise mismatch((v,))
                result = impl(v)
                if tracked:
                    f[COST] += 1 if cost_fn is None else cost_fn([v], result)
                    if f[COST] > limit:
                        raise CostLimitExceeded(COST_LIMIT_MESSAGE)
                return result

            if g0 is None and not tracked:
                return lambda f: impl(a0(f))
            return unary
        if len(args) == 2:
            a0, a1 = args
            g0, g1 = guards

            def binary(f: Frame) -> Any:
                v0, v1 = _both(a0, a1, f)
                if (g0 is not None and type(v0) not in g0) or (g1 is not None and type(v1) not in g1):
                    raise mismatch((v0, v1))
                result = impl(v0, v1)
                if tracked:
                    f[COST] += 1 if cost_fn is None else cost_fn([v0, v1], result)
                    if f[COST] > limit:
                        raise CostLimitExceeded(COST_LIMIT_MESSAGE)
                return result

            if g0 is None and g1 is None and not tracked:
                def plain(f: Frame) -> Any:
                    return impl(*_both(a0, a1, f))

                return plain
            return binary

        def nary(f: Frame) -> Any:
            values = _all(args, f)
            for g, v in zip(guards, values, strict=True):
                if g is not None and type(v) not in g:
                    raise mismatch(values)
            result = impl(*values)
            if tracked:
                f[COST] += 1 if cost_fn is None else cost_fn(list(values), result)
                if f[COST] > limit:
                    raise CostLimitExceeded(COST_LIMIT_MESSAGE)
            return result

        return nary

    def logical(self, node: ast.Call, is_or: bool) -> Fn:
        left, right = self.visit(node.args[0]), self.visit(node.args[1])
        stop = is_or  # the value that decides: true for ||, false for &&

        def guarded(f: Frame) -> bool:
            # cel-go's evalAnd/evalOr: a deciding term wins; otherwise the first term that is an error, or
            # not a bool ("no such overload"), is the answer
            error: CelEvalError | None = None
            try:
                lv = left(f)
            except Fatal:
                raise
            except CelEvalError as e:
                error, lv = e, None
            else:
                if lv is stop:
                    return bool(stop)
                if type(lv) is not bool:
                    error = no_such_overload()
            try:
                rv = right(f)
            except Fatal:
                raise
            except CelEvalError as e:
                raise (error or e) from None
            if rv is stop:
                return bool(stop)
            if error is not None:
                raise error
            if type(rv) is not bool:
                raise no_such_overload()
            return not stop

        return guarded

    def conditional(self, node: ast.Call) -> Fn:
        cond = self.visit(node.args[0])
        then, other = (self.unobserved(a) if _is_attribute(a) else self.visit(a) for a in node.args[1:])

        def ternary(f: Frame) -> Any:
            c = cond(f)
            if c is True:
                return then(f)
            if c is False:
                return other(f)
            raise no_such_overload()

        return ternary

    def unobserved(self, node: ast.Node) -> Fn:
        """Plan a node without cost bookkeeping (what cel-go does not observe)."""
        tracked = self.tracked
        self.tracked = False
        try:
            return self.visit(node)
        finally:
            self.tracked = tracked

    def optional_index(self, node: ast.Call) -> Fn:
        operand, key = self.visit(node.args[0]), self.visit(node.args[1])

        def opt_index(f: Frame) -> Optional:
            o = operand(f)
            if type(o) is Optional:
                if not o.has_value:
                    return NONE
                o = o.value
            k = key(f)
            try:
                return Optional(index_value(o, k), True)
            except CelEvalError:
                return NONE

        return opt_index

    def create_list(self, node: ast.CreateList) -> Fn:
        elements = [self.visit(e) for e in node.elements]
        optional = node.optional
        consts = [self.constant(e) for e in node.elements]
        if not optional and all(c is not _NOT_CONSTANT for c in consts):
            values = consts
            self.constants[id(node)] = values
            return lambda f: values
        if optional:
            def build_opt(f: Frame) -> list[Any]:
                out = []
                for i, e in enumerate(elements):
                    v = e(f)
                    if i in optional:
                        if type(v) is not Optional:
                            raise no_such_overload()
                        if v.has_value:
                            out.append(v.value)
                    else:
                        out.append(v)
                return out

            return self.add_cost(build_opt, 10)
        return self.add_cost(lambda f: [e(f) for e in elements], 10)

    def create_map(self, node: ast.CreateMap) -> Fn:
        entries = [(self.visit(k), self.visit(v), opt) for k, v, opt in node.entries]
        constant = not any(opt for _, _, opt in node.entries) and all(
            self.constant(k) is not _NOT_CONSTANT and self.constant(v) is not _NOT_CONSTANT
            for k, v, _ in node.entries)

        def build(f: Frame) -> dict[Any, Any]:
            out: dict[Any, Any] = {}
            for k, v, opt in entries:
                key = k(f)
                if type(key) not in (str, int, Uint, bool):
                    raise CelEvalError(f"unsupported key type: {type_name(key)}")
                value = v(f)
                if opt:
                    if type(value) is not Optional:
                        raise no_such_overload()
                    if not value.has_value:
                        continue
                    value = value.value
                if lookup(out, key)[0]:
                    raise CelEvalError(f"Failed with repeated key: {_key_text(key)}")
                out[key] = value
            return out

        if constant:
            # cel-go's optimizer builds a constant map literal once (so it costs nothing at run time)
            try:
                value = build([None, 0])
            except CelEvalError as e:
                raise PlanError(e.message) from None
            self.constants[id(node)] = value
            return lambda f: value
        return self.add_cost(build, 30)

    def comprehension(self, node: ast.Comprehension) -> Fn:
        rng = self.visit(node.range)
        slot = self.slots
        self.slots += 1
        if node.kind == "bind":
            self.bind_slots.add(slot)
        slot2 = None
        scope = {node.var: slot}
        if node.var2 is not None:
            slot2 = self.slots
            self.slots += 1
            scope[node.var2] = slot2
        self.scopes.append(scope)
        body = [self.visit(b) for b in node.body]
        self.scopes.pop()
        return _COMPREHENSIONS[node.kind](self, rng, slot, slot2, body)


ORDERING: dict[str, Callable[[Any, Any], bool]] = {
    "_<_": operator.lt, "_<=_": operator.le, "_>_": operator.gt, "_>=_": operator.ge,
}
_FAST_ORDERED = frozenset([int, str, float])


def _ordering(name: str, left: Fn, right: Fn, overloads: list[Overload],
              mismatch: Callable[[tuple[Any, ...]], CelEvalError]) -> Fn:
    """`<` and friends through dyn: same-typed ints, strings and doubles compare directly (what every
    overload would do), anything else goes through the overloads' guards."""
    op = ORDERING[name]

    def ordered(f: Frame) -> Any:
        a, b = _both(left, right, f)
        ta = type(a)
        if ta is type(b) and ta in _FAST_ORDERED:
            return op(a, b) if ta is not float or (a == a and b == b) else False
        values = (a, b)
        for ov in overloads:
            if ov.accepts(values):
                return ov.impl(a, b)
        raise mismatch(values)

    return ordered


# Functions Kubernetes' CostEstimator (or cel-go's equality) prices by name, whatever the overload.
NAME_PRICED = frozenset(
    [
        "_==_", "_!=_", "isSorted", "sum", "max", "min", "indexOf", "lastIndexOf", "includes", "url", "lowerAscii",
        "upperAscii", "substring", "trim", "replace", "split", "join", "find", "findAll", "cidr", "isIP", "isCIDR",
        "ip", "ip.isCanonical", "containsIP", "containsCIDR", "quantity", "isQuantity", "semver", "isSemver",
        "validate", "format.named", "sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan",
        "isLessThan", "compareTo", "add", "sub", "major", "minor", "patch", "getScheme", "getHostname", "getHost",
        "getPort", "getEscapedPath", "getQuery", "masked", "prefixLength", "family", "isUnspecified", "isLoopback",
        "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast",
    ]
)
# ext.Lists' cost trackers of these functions cast their receiver to traits.Lister, even when it is an error
# or not a list (cel-go's cost tracking is always on in Kubernetes), and the panic becomes the answer.
LISTER_COST_TRACKED = frozenset(["distinct"])  # sort has one overload per type: a dyn receiver is dispatched
_GO_LISTER_MISSING = {str: ("types.String", "Contains"), int: ("types.Int", "Contains"),
                      Uint: ("types.Uint", "Contains"), float: ("types.Double", "Contains"),
                      bytes: ("types.Bytes", "Contains"), bool: ("types.Bool", "Add")}


def _lister_or_panic(target: Fn) -> Fn:
    def receiver(f: Frame) -> Any:
        try:
            value = target(f)
        except Fatal:
            raise
        except CelEvalError:
            raise Fatal("internal error: interface conversion: *types.Err is not traits.Lister: "
                        "missing method Add") from None
        if type(value) not in (list, tuple):
            go_name, missing = _GO_LISTER_MISSING.get(type(value), (GO_TYPE_NAMES.get(type(value), "ref.Val"), "Add"))
            raise Fatal(f"internal error: interface conversion: {go_name} is not traits.Lister: "
                        f"missing method {missing}")
        return value

    return receiver


_SET_MEMBER_TYPES = frozenset([bool, int, Uint, float, str])
# Go values that cannot be map keys: cel-go's set lookup panics on them, and reports the panic
_UNHASHABLE = {Semver: "cel.Semver", bytes: "types.Bytes"}


def _set_membership(element: Fn, members: list[Any]) -> Fn:
    """`x in [constants]`: cel-go's optimizer turns it into a Go map lookup (free of cost, and failing on
    values Go cannot hash)."""
    if not members:
        return lambda f: False

    def member(f: Frame) -> bool:
        v = element(f)
        go_name = _UNHASHABLE.get(type(v))
        if go_name is None and type(v).__name__ == "NamedFormat":
            go_name = "cel.Format"
        if go_name is not None:
            raise Fatal(f"internal error: runtime error: hash of unhashable type {go_name}")
        return any(equals(v, m) for m in members)

    return member


def _both(a: Fn, b: Fn, f: Frame) -> tuple[Any, Any]:
    """Evaluate two arguments as cel-go does: both, then the first error (unless the second is fatal)."""
    try:
        va = a(f)
    except Fatal:
        raise
    except CelEvalError:
        try:
            b(f)
        except Fatal:
            raise
        except CelEvalError:
            pass
        raise
    return va, b(f)


def _all(args: list[Fn], f: Frame) -> tuple[Any, ...]:
    """Every argument, in order; the first error once all ran (a later fatal error wins)."""
    values: list[Any] = []
    first: CelEvalError | None = None
    for a in args:
        try:
            values.append(a(f))
        except Fatal:
            raise
        except CelEvalError as e:
            first = first or e
            values.append(None)
    if first is not None:
        raise first
    return tuple(values)


def _is_attribute(node: ast.Node) -> bool:
    """An ident/select/index chain with constant keys: what cel-go plans as an attribute."""
    if isinstance(node, ast.Ident):
        return True
    if isinstance(node, ast.Select):
        return not node.test_only and _is_attribute(node.operand)
    if isinstance(node, ast.Call) and node.function in ("_[_]", "_[?_]"):
        return isinstance(node.args[1], ast.Literal) and _is_attribute(node.args[0])
    return False


def _loose(typ: t.Type) -> bool:
    """A type that does not settle the run-time type: dyn, a type parameter, or either inside."""
    return t.is_dyn(typ) or any(_loose(p) for p in typ.params)


def _pairs(value: Any, two: bool) -> list[tuple[Any, Any]]:
    tv = type(value)
    if tv is list or tv is tuple:
        return list(enumerate(value)) if two else [(x, None) for x in value]
    if tv is dict or tv is DefaultMap:
        return list(value.items())
    go_name = GO_TYPE_NAMES.get(tv, tv.__name__)
    if two:
        raise CelEvalError(f"unsupported comprehension range type: {go_name}")
    raise CelEvalError(f"got '{go_name}', expected iterable type")


def _bind(self: Planner, rng: Fn, slot: int, slot2: int | None, body: list[Fn]) -> Fn:
    inner = body[0]

    def bind(f: Frame) -> Any:
        # cel-go initializes the accumulator on its first use: an unused binding is never evaluated
        f[slot] = _Lazy(rng)
        return inner(f)

    return bind


class _Lazy:
    """A cel.bind value not computed yet (see Planner.ident)."""

    __slots__ = ("init",)

    def __init__(self, init: Fn) -> None:
        self.init = init


def _charge(f: Frame, amount: int, limit: int) -> None:
    f[COST] += amount
    if f[COST] > limit:
        raise CostLimitExceeded(COST_LIMIT_MESSAGE)


def _quantifier(kind: str) -> Callable[[Planner, Fn, int, int | None, list[Fn]], Fn]:
    decides = kind.startswith("exists")  # exists stops at the first true, all at the first false
    # cel-go's expansion: condition @not_strictly_false(accu) (exists: of !accu) before every element, step
    # `accu && pred` (exists: ||), result accu; the accumulator's first error stays unless a later
    # predicate decides.
    condition_cost = 3 if decides else 2

    def build(self: Planner, rng: Fn, slot: int, slot2: int | None, body: list[Fn]) -> Fn:
        pred = body[0]
        tracked, limit = self.tracked, self.limit

        def quantify(f: Frame) -> bool:
            error: CelEvalError | None = None
            pairs = _pairs(rng(f), slot2 is not None)
            last = len(pairs) - 1
            for i, (k, v) in enumerate(pairs):
                f[slot] = k
                if slot2 is not None:
                    f[slot2] = v
                if tracked:
                    _charge(f, condition_cost + 1, limit)
                try:
                    r = pred(f)
                except Fatal:
                    raise
                except CelEvalError as e:
                    error = error or e
                    continue
                if r is decides:
                    if tracked:
                        # one more condition if elements remain, then the result
                        _charge(f, (condition_cost if i < last else 0) + 1, limit)
                    return bool(decides)
                if type(r) is not bool:
                    error = error or no_such_overload()
            if tracked:
                _charge(f, 1, limit)
            if error is not None:
                raise error
            return not decides

        return quantify

    return build


def _exists_one(self: Planner, rng: Fn, slot: int, slot2: int | None, body: list[Fn]) -> Fn:
    pred = body[0]
    tracked, limit = self.tracked, self.limit

    def exists_one(f: Frame) -> bool:
        # step `pred ? accu + 1 : accu`: an erring predicate becomes the accumulator, so the last error wins
        count = 0
        error: CelEvalError | None = None
        for k, v in _pairs(rng(f), slot2 is not None):
            f[slot] = k
            if slot2 is not None:
                f[slot2] = v
            try:
                r = pred(f)
            except Fatal:
                raise
            except CelEvalError as e:
                error = e
                continue
            if type(r) is not bool:
                error = no_such_overload()
                continue
            if r:
                count += 1
                if tracked:
                    _charge(f, 2, limit)
        if tracked:
            _charge(f, 2, limit)
        if error is not None:
            raise error
        return count == 1

    return exists_one


# per kept element, what cel-go's step costs beyond the transform: `accu + [e]` (ident, list, +) for lists,
# `cel.@mapInsert(accu, k, e)` (ident, ident, call) for transformMap, `cel.@mapInsert(accu, e)` for entries
_STEP_COST = {"map": 12, "filter": 13, "transformList": 12, "transformMap": 3, "transformMapEntry": 2}


def _collect(kind: str) -> Callable[[Planner, Fn, int, int | None, list[Fn]], Fn]:
    step_cost = _STEP_COST[kind]

    def build(self: Planner, rng: Fn, slot: int, slot2: int | None, body: list[Fn]) -> Fn:
        pred = body[0] if len(body) == 2 or kind == "filter" else None
        transform = body[-1]
        tracked, limit = self.tracked, self.limit

        def collect(f: Frame) -> Any:
            out_list: list[Any] = []
            out_map: dict[Any, Any] = {}
            error: CelEvalError | None = None  # the accumulator once an error replaced it
            for k, v in _pairs(rng(f), slot2 is not None):
                f[slot] = k
                if slot2 is not None:
                    f[slot2] = v
                if pred is not None:
                    try:
                        keep = pred(f)
                    except Fatal:
                        raise
                    except CelEvalError as e:
                        error = e  # `pred ? ... : accu` with an erring predicate
                        continue
                    if type(keep) is not bool:
                        error = no_such_overload()
                        continue
                    if not keep:
                        continue
                if error is not None:
                    continue  # `accu + [...]` keeps the accumulator's error
                if tracked:
                    _charge(f, step_cost, limit)
                if kind == "filter":
                    out_list.append(k if slot2 is None else v)
                    continue
                try:
                    value = transform(f)
                except Fatal:
                    raise
                except CelEvalError as e:
                    error = e
                    continue
                if kind == "transformMap":
                    out_map[k] = value
                elif kind == "transformMapEntry":
                    if type(value) is not dict:
                        error = no_such_overload()
                        continue
                    for ek, ev in value.items():
                        if lookup(out_map, ek)[0]:
                            raise CelEvalError(f"insert failed: key {_key_text(ek)} already exists")
                        out_map[ek] = ev
                else:
                    out_list.append(value)
            if tracked:
                _charge(f, 1, limit)
            if error is not None:
                raise error
            return out_map if kind.startswith("transformMap") else out_list

        return collect

    return build


def _sort_by(self: Planner, rng: Fn, slot: int, slot2: int | None, body: list[Fn]) -> Fn:
    key_fn = body[0]
    tracked, limit = self.tracked, self.limit

    def sort_by(f: Frame) -> list[Any]:
        items = rng(f)
        if type(items) not in (list, tuple):
            raise no_such_overload()
        keyed = []
        for x in items:
            f[slot] = x
            keyed.append((key_fn(f), x))
            if tracked:
                _charge(f, 12, limit)  # the keys are a map() comprehension upstream
        if tracked:
            _charge(f, 1 + self_compare_cost([k for k, _ in keyed]), limit)
        keyed.sort(key=functools.cmp_to_key(_compare_keys))
        return [x for _, x in keyed]

    return sort_by


def _compare_keys(a: tuple[Any, Any], b: tuple[Any, Any]) -> int:
    return compare(a[0], b[0])


def _opt_map(flat: bool) -> Callable[[Planner, Fn, int, int | None, list[Fn]], Fn]:
    def build(self: Planner, rng: Fn, slot: int, slot2: int | None, body: list[Fn]) -> Fn:
        inner = body[0]

        def opt_map(f: Frame) -> Any:
            o = rng(f)
            if type(o) is not Optional:
                raise no_such_overload()
            if not o.has_value:
                return NONE
            f[slot] = o.value
            v = inner(f)
            if flat:
                if type(v) is not Optional:
                    raise no_such_overload()
                return v
            return Optional(v, True)

        return opt_map

    return build


_COMPREHENSIONS: dict[str, Callable[[Planner, Fn, int, int | None, list[Fn]], Fn]] = {
    "bind": _bind,
    "all": _quantifier("all"),
    "exists": _quantifier("exists"),
    "exists_one": _exists_one,
    "existsOne": _exists_one,
    "map": _collect("map"),
    "filter": _collect("filter"),
    "transformList": _collect("transformList"),
    "transformMap": _collect("transformMap"),
    "transformMapEntry": _collect("transformMapEntry"),
    "sortBy": _sort_by,
    "optMap": _opt_map(False),
    "optFlatMap": _opt_map(True),
}

__all__ = ["COST_LIMIT_MESSAGE", "EMPTY", "DefaultMap", "Planner", "equals", "iterate", "size_of"]
