"""Turns a checked expression into nested Python closures: compiled once, evaluated per device.

A closure takes the evaluation frame, a list: [device, cost, slot...] (comprehension variables live in slots
fixed at plan time, so evaluations never share state and a CompilationResult can be used from several threads).
Two plans exist per expression: the plain one, and one that also adds cel-go's runtime cost at every step and
stops at the limit ("operation cancelled: actual cost limit exceeded"); the second is only used when the
expression's worst case could reach the limit (see cost.py), so selectors the API server accepted run plain.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from scheduler.dra.cel import ast
from scheduler.dra.cel import types as t
from scheduler.dra.cel.checker import Checked
from scheduler.dra.cel.functions import FUNCTIONS, TYPE_IDENTS, Overload, size_of
from scheduler.dra.cel.values import (
    EMPTY,
    GO_TYPE_NAMES,
    NONE,
    CelEvalError,
    CostLimitExceeded,
    DefaultMap,
    Optional,
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
    raise CelEvalError(f"no such key: {name}" if to is Optional else no_such_overload().message)


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
            raise no_such_overload()
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
    raise no_such_overload()


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
            return self.add_cost(lambda f: value, 1)
        slot = next((scope[node.name] for scope in reversed(self.scopes) if node.name in scope), None)
        if slot is not None:
            return self.add_cost(lambda f: f[slot], 1)
        if node.name == "device":
            return self.add_cost(lambda f: f[0], 1)
        value = TYPE_IDENTS[node.name]
        return self.add_cost(lambda f: value, 1)

    def select(self, node: ast.Select) -> Fn:
        qualified = self.checked.qualified.get(id(node))
        if qualified is not None:
            type_value = TYPE_IDENTS[qualified]
            return self.add_cost(lambda f: type_value, 1)
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
                raise CelEvalError(f"invalid type for field selection: {type_name(o)}")

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
                return Optional(select_value(o, name), True)

            return self.add_cost(opt_select, 1)
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
            operand, key = self.visit(node.args[0]), self.visit(node.args[1])
            return self.add_cost(lambda f: index_value(operand(f), key(f)), 1)
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
        if node.target is not None and qualified is None:
            args.insert(0, self.visit(node.target))
        fname = qualified or name
        function = FUNCTIONS[fname]
        overloads = self.checked.overloads.get(id(node)) or [
            o for o in function.overloads if o.member == (node.target is not None and qualified is None)
            and len(o.params) == len(args)
        ]
        return self.dispatch(fname, function.operator, overloads, args, node)

    def dispatch(self, name: str, operator: bool, overloads: list[Overload], args: list[Fn], node: ast.Call) -> Fn:
        """A call's closure: the one overload the checker left (type-guarded unless the static types settle it,
        as cel-go's guards would never fail then), or a run-time choice among several."""
        arg_types = [self.checked.type_of(a) for a in ([node.target] if node.target is not None and
                                                       id(node) not in self.checked.qualified else []) + node.args]
        mismatch = FUNCTIONS[name].mismatch
        tracked, limit = self.tracked, self.limit
        if len(overloads) != 1:
            def multi(f: Frame) -> Any:
                values = tuple(a(f) for a in args)
                for ov in overloads:
                    if ov.accepts(values):
                        result = ov.impl(*values)
                        if tracked:
                            f[COST] += 1 if ov.cost is None else ov.cost(list(values), result)
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
                v0, v1 = a0(f), a1(f)
                if (g0 is not None and type(v0) not in g0) or (g1 is not None and type(v1) not in g1):
                    raise mismatch((v0, v1))
                result = impl(v0, v1)
                if tracked:
                    f[COST] += 1 if cost_fn is None else cost_fn([v0, v1], result)
                    if f[COST] > limit:
                        raise CostLimitExceeded(COST_LIMIT_MESSAGE)
                return result

            if g0 is None and g1 is None and not tracked:
                return lambda f: impl(a0(f), a1(f))
            return binary

        def nary(f: Frame) -> Any:
            values = tuple(a(f) for a in args)
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
            error: CelEvalError | None = None
            try:
                lv = left(f)
            except CostLimitExceeded:
                raise
            except CelEvalError as e:
                error, lv = e, None
            if lv is stop:
                return bool(stop)
            try:
                rv = right(f)
            except CostLimitExceeded:
                raise
            except CelEvalError:
                if error is not None:
                    raise error from None
                raise
            if rv is stop:
                return bool(stop)
            if error is not None:
                raise error
            if type(lv) is not bool or type(rv) is not bool:
                raise no_such_overload()
            return not stop

        return guarded

    def conditional(self, node: ast.Call) -> Fn:
        cond, then, other = (self.visit(a) for a in node.args)

        def ternary(f: Frame) -> Any:
            c = cond(f)
            if c is True:
                return then(f)
            if c is False:
                return other(f)
            raise no_such_overload()

        return ternary

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
                if type(o) in (dict, DefaultMap, list, tuple):
                    return NONE
                raise

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

        return self.add_cost(build, 30)

    def comprehension(self, node: ast.Comprehension) -> Fn:
        rng = self.visit(node.range)
        slot = self.slots
        self.slots += 1
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


def _loose(typ: t.Type) -> bool:
    """A type that does not settle the run-time type: dyn, a type parameter, or either inside."""
    return t.is_dyn(typ) or any(_loose(p) for p in typ.params)


def _pairs(value: Any, two: bool) -> list[tuple[Any, Any]]:
    tv = type(value)
    if tv is list or tv is tuple:
        return list(enumerate(value)) if two else [(x, None) for x in value]
    if tv is dict or tv is DefaultMap:
        return list(value.items())
    raise CelEvalError(f"got '{GO_TYPE_NAMES.get(tv, tv.__name__)}', expected iterable type")


def _bind(self: Planner, rng: Fn, slot: int, slot2: int | None, body: list[Fn]) -> Fn:
    inner = body[0]

    def bind(f: Frame) -> Any:
        f[slot] = rng(f)
        return inner(f)

    return bind


def _quantifier(kind: str) -> Callable[[Planner, Fn, int, int | None, list[Fn]], Fn]:
    decides = kind.startswith("exists")  # exists stops at the first true, all at the first false

    def build(self: Planner, rng: Fn, slot: int, slot2: int | None, body: list[Fn]) -> Fn:
        pred = body[0]
        tracked, limit = self.tracked, self.limit
        # cel-go's loop: condition @not_strictly_false(accu) (2, or 3 with the ! of exists), step accu op pred (1)
        step_cost = 4 if decides else 3

        def quantify(f: Frame) -> bool:
            error: CelEvalError | None = None
            for k, v in _pairs(rng(f), slot2 is not None):
                if tracked:
                    f[COST] += step_cost
                    if f[COST] > limit:
                        raise CostLimitExceeded(COST_LIMIT_MESSAGE)
                f[slot] = k
                if slot2 is not None:
                    f[slot2] = v
                try:
                    r = pred(f)
                except CostLimitExceeded:
                    raise
                except CelEvalError as e:
                    error = error or e
                    continue
                if r is decides:
                    if tracked:
                        f[COST] += 1
                    return bool(decides)
                if type(r) is not bool:
                    error = error or no_such_overload()
            if tracked:
                f[COST] += 1
            if error is not None:
                raise error
            return not decides

        return quantify

    return build


def _exists_one(self: Planner, rng: Fn, slot: int, slot2: int | None, body: list[Fn]) -> Fn:
    pred = body[0]
    tracked, limit = self.tracked, self.limit

    def exists_one(f: Frame) -> bool:
        count = 0
        for k, v in _pairs(rng(f), slot2 is not None):
            f[slot] = k
            if slot2 is not None:
                f[slot2] = v
            r = pred(f)
            if type(r) is not bool:
                raise no_such_overload()
            if tracked:
                f[COST] += 2 if r else 1
                if f[COST] > limit:
                    raise CostLimitExceeded(COST_LIMIT_MESSAGE)
            count += r
        if tracked:
            f[COST] += 2
        return count == 1

    return exists_one


def _collect(kind: str) -> Callable[[Planner, Fn, int, int | None, list[Fn]], Fn]:
    def build(self: Planner, rng: Fn, slot: int, slot2: int | None, body: list[Fn]) -> Fn:
        pred = body[0] if len(body) == 2 or kind == "filter" else None
        transform = body[-1]
        tracked, limit = self.tracked, self.limit

        def collect(f: Frame) -> Any:
            out_list: list[Any] = []
            out_map: dict[Any, Any] = {}
            for k, v in _pairs(rng(f), slot2 is not None):
                f[slot] = k
                if slot2 is not None:
                    f[slot2] = v
                if pred is not None:
                    keep = pred(f)
                    if type(keep) is not bool:
                        raise no_such_overload()
                    if tracked:
                        f[COST] += 1
                    if not keep:
                        continue
                if kind == "filter":
                    out_list.append(k if slot2 is None else v)
                    if tracked:
                        f[COST] += 12
                    continue
                value = transform(f)
                if tracked:
                    f[COST] += 12
                    if f[COST] > limit:
                        raise CostLimitExceeded(COST_LIMIT_MESSAGE)
                if kind == "transformMap":
                    out_map[k] = value
                elif kind == "transformMapEntry":
                    if type(value) is not dict:
                        raise no_such_overload()
                    for ek, ev in value.items():
                        if lookup(out_map, ek)[0]:
                            raise CelEvalError(f"insert failed: key {_key_text(ek)} already exists")
                        out_map[ek] = ev
                else:
                    out_list.append(value)
            if tracked:
                f[COST] += 1
            return out_map if kind.startswith("transformMap") else out_list

        return collect

    return build


def _sort_by(self: Planner, rng: Fn, slot: int, slot2: int | None, body: list[Fn]) -> Fn:
    key_fn = body[0]

    def sort_by(f: Frame) -> list[Any]:
        items = rng(f)
        if type(items) not in (list, tuple):
            raise no_such_overload()
        keyed = []
        for x in items:
            f[slot] = x
            keyed.append((key_fn(f), x))
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
