"""Type-checks a parsed expression against the DRA environment, as cel-go's checker does before a program exists.

It infers each node's type (so the output can be validated: a selector must be bool or dyn), resolves calls to
the overloads of library.FUNCTIONS that can match, and reports cel-go's messages: `undeclared reference to
'x' (in container '')`, `undefined field 'x'`, `found no matching overload for '_<_' applied to '(string,
int)'`, `expected type 'int' but found 'string'`. Where a type is dyn the choice is left to run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.dra.cel import ast
from scheduler.dra.cel import types as t
from scheduler.dra.cel.library import (
    FORMAT_CLAUSE_TYPES,
    FUNCTIONS,
    TYPE_IDENTS,
    Overload,
    compile_regex,
    format_clauses,
)
from scheduler.dra.cel.values import CelEvalError, Uint


class CheckError(Exception):
    """One type error at an offset (the first one found)."""

    def __init__(self, pos: int, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


@dataclass
class Checked:
    """What the planner needs: each node's type and, for calls, the overloads that can apply."""

    types: dict[int, t.Type] = field(default_factory=dict)
    overloads: dict[int, list[Overload]] = field(default_factory=dict)
    # Calls written as `ns.fn(...)` whose target is a namespace, not a value (optional.none(), sets.contains).
    qualified: dict[int, str] = field(default_factory=dict)

    def type_of(self, node: ast.Node) -> t.Type:
        return self.types.get(id(node), t.DYN)


_LOGICAL = {"_&&_", "_||_"}
# Functions the environment declares on types no selector can reach (the authorizer library's), so cel-go knows
# their names: calling one is a type error, not an undeclared reference.
DECLARED_ELSEWHERE = frozenset(
    [
        "path", "group", "resource", "subresource", "namespace", "name", "check", "allowed", "reason", "error",
        "errored", "serviceAccount", "fieldSelector", "labelSelector",
    ]
)


def qualified_name(node: ast.Node) -> str | None:
    """`a.b.c` written as identifiers and selections, as one dotted name (for namespaced functions)."""
    if isinstance(node, ast.Ident):
        return node.name
    if isinstance(node, ast.Select) and not node.test_only and not node.optional:
        inner = qualified_name(node.operand)
        return f"{inner}.{node.field}" if inner is not None else None
    return None


class Checker:
    """Checks one expression; `scopes` holds comprehension variables (innermost last)."""

    def __init__(self) -> None:
        self.result = Checked()
        self.scopes: list[dict[str, t.Type]] = []
        self.heterogeneous_ok: set[int] = set()
        self.errors: list[CheckError] = []
        # cel-go's homogeneous-literal validator runs only on a program that type-checked: candidates wait here
        self.heterogeneous: list[tuple[int, CheckError]] = []
        self.reported: set[tuple[int, str]] = set()
        self.format_errors: list[CheckError] = []

    def check(self, node: ast.Node) -> t.Type:
        try:
            typ = self.visit(node)
        except CheckError as e:
            self.errors.append(e)
            typ = t.ERROR
        self.result.types[id(node)] = typ
        return typ

    def finish(self) -> list[CheckError]:
        """All errors, by position (cel-go's order); the literal checks only when nothing else failed."""
        errors = self.errors
        if not errors:
            errors = [e for owner, e in self.heterogeneous if owner not in self.heterogeneous_ok]
            errors += self.format_errors
        return sorted(errors, key=lambda e: e.pos)

    def lookup_var(self, name: str) -> t.Type | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name == "device":
            return t.DEVICE
        return None

    def visit(self, node: ast.Node) -> t.Type:
        if isinstance(node, ast.Literal):
            return _literal_type(node.value)
        if isinstance(node, ast.Ident):
            name = node.name
            var = self.lookup_var(name) if not name.startswith(".") else (
                t.DEVICE if name == ".device" else None)
            if var is not None:
                return var
            if name.lstrip(".") in TYPE_IDENTS:
                return t.type_of(t.Type(name.lstrip(".")))
            raise CheckError(node.pos, f"undeclared reference to '{name}' (in container '')")
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
        if isinstance(node, ast.CreateStruct):
            for _, value in node.fields:
                self.check(value)
            raise CheckError(node.pos, f"undeclared reference to '{node.type_name}' (in container '')")
        raise CheckError(node.pos, f"unexpected node {type(node).__name__}")

    def select(self, node: ast.Select) -> t.Type:
        qualified = qualified_name(node)
        if qualified in TYPE_IDENTS and self.lookup_var(qualified.split(".")[0]) is None:
            self.result.qualified[id(node)] = qualified
            return t.type_of(t.Type(qualified))
        operand = self.check(node.operand)
        if node.optional and operand.name == "optional_type":
            operand = operand.params[0]
        if operand == t.DEVICE:
            ft = t.DEVICE_FIELDS.get(node.field)
            if ft is None:
                raise CheckError(node.pos, f"undefined field '{node.field}'")
            value = ft
        elif operand.name == "map":
            value = operand.params[1]
        elif t.is_dyn(operand):
            value = t.DYN
        else:
            raise CheckError(node.pos, f"type '{operand}' does not support field selection")
        if node.test_only:
            return t.BOOL
        if node.optional:
            return t.optional_of(value)
        return value

    def call(self, node: ast.Call) -> t.Type:
        name = node.function
        if name in _LOGICAL:
            for arg in node.args:
                self.expect_bool(arg, name)
            return t.BOOL
        if name == "!_":
            self.expect_bool(node.args[0], name)
            return t.BOOL
        if name == "_?_:_":
            self.expect_bool(node.args[0], name)
            a, b = self.check(node.args[1]), self.check(node.args[2])
            if t.join(a, b) is None:
                raise CheckError(node.pos, f"found no matching overload for '_?_:_' applied to "
                                           f"'(bool, {_shown(a)}, {_shown(b)})'")
            return t.join_elements(a, b)
        if name in ("_[_]", "_[?_]"):
            return self.index(node)
        target_type: t.Type | None = None
        if node.target is not None:
            qualified = qualified_name(node.target)
            if qualified is not None and self.lookup_var(qualified.split(".")[0]) is None and (
                f"{qualified}.{name}" in FUNCTIONS
            ):
                self.result.qualified[id(node)] = f"{qualified}.{name}"
                name = f"{qualified}.{name}"
            else:
                target_type = self.check(node.target)
        fn = FUNCTIONS.get(name)
        if name == "format":
            # cel-go's homogeneous-literal validator exempts format()'s argument list (and what it holds)
            self.heterogeneous_ok.update(_literal_ids(node.args))
        arg_types = [self.check(a) for a in node.args]
        if (target_type == t.ERROR or t.ERROR in arg_types) and fn is None:
            if name not in DECLARED_ELSEWHERE:
                raise CheckError(node.pos, f"undeclared reference to '{name}' (in container '')")
            return t.ERROR
        if name == "format" and isinstance(node.target, ast.Literal) and isinstance(node.target.value, str) and (
            len(node.args) == 1 and isinstance(node.args[0], ast.CreateList)
        ):
            self.format_errors.extend(_check_format(node, node.target.value, node.args[0], self.result))
        if name == "matches" and isinstance(node.args[-1], ast.Literal) and isinstance(node.args[-1].value, str):
            try:
                compile_regex(node.args[-1].value)
            except CelEvalError:
                raise CheckError(node.args[-1].pos, "invalid matches argument") from None
        if fn is None:
            if name in DECLARED_ELSEWHERE:
                shown = ", ".join(str(a) for a in ([target_type] if target_type else []) + arg_types)
                raise CheckError(node.pos, f"found no matching overload for '{name}' applied to '({shown})'")
            raise CheckError(node.pos, f"undeclared reference to '{name}' (in container '')")
        member = target_type is not None
        all_types = ([target_type] if target_type is not None else []) + arg_types
        matches: list[Overload] = []
        results: list[t.Type] = []
        for ov in fn.overloads:
            if ov.member != member or len(ov.params) != len(all_types):
                continue
            bindings: dict[str, t.Type] = {}
            if all(t.assignable(p, a, bindings) for p, a in zip(ov.params, all_types, strict=True)):
                matches.append(ov)
                results.append(t.substitute(ov.result, bindings))
        if not matches:
            if target_type is not None:
                shown = f"{_shown(target_type)}.({', '.join(_shown(a) for a in arg_types)})"
            else:
                shown = f"({', '.join(_shown(a) for a in arg_types)})"
            raise CheckError(node.pos, f"found no matching overload for '{name}' applied to '{shown}'")
        self.result.overloads[id(node)] = matches
        if name == "dyn":
            return t.DYN
        first = results[0]
        return first if all(r == first for r in results) else t.DYN

    def expect_bool(self, node: ast.Node, function: str) -> None:
        typ = self.check(node)
        if typ != t.BOOL and not t.is_dyn(typ):
            raise CheckError(node.pos, f"found no matching overload for '{function}' applied to '({typ})'")

    def index(self, node: ast.Call) -> t.Type:
        operand, key = self.check(node.args[0]), self.check(node.args[1])
        optional = node.function == "_[?_]"
        if optional and operand.name == "optional_type":
            operand = operand.params[0]
        if operand.name == "list":
            if key != t.INT and not t.is_dyn(key):
                raise CheckError(node.pos, f"found no matching overload for '_[_]' applied to '({operand}, {key})'")
            value = operand.params[0]
        elif operand.name == "map":
            if not t.is_dyn(key) and not t.is_dyn(operand.params[0]) and t.join(key, operand.params[0]) is None:
                raise CheckError(node.pos, f"found no matching overload for '_[_]' applied to '({operand}, {key})'")
            value = operand.params[1]
        elif t.is_dyn(operand):
            value = t.DYN
        else:
            raise CheckError(node.pos, f"found no matching overload for '_[_]' applied to '({operand}, {key})'")
        return t.optional_of(value) if optional else value

    def create_list(self, node: ast.CreateList) -> t.Type:
        elem: t.Type | None = None
        first: t.Type | None = None
        for i, e in enumerate(node.elements):
            et = self.check(e)
            if i in node.optional:
                et = et.params[0] if et.name == "optional_type" else t.DYN
            if first is None:
                first = et
            else:
                self.homogeneous(node, "list", e, first, et)
            elem = t.join_elements(elem, et)
        return t.list_of(elem or t.DYN)

    def homogeneous(self, owner: ast.Node, part: str, element: ast.Node, first: t.Type, typ: t.Type) -> None:
        """Queue cel-go's homogeneous-literal error for the first element (key, value) of a literal whose type
        differs from the first one's (dyn matches anything)."""
        if first != typ and not t.is_dyn(first) and not t.is_dyn(typ) and (id(owner), part) not in self.reported:
            self.reported.add((id(owner), part))
            message = f"expected type '{_shown(first)}' but found '{_shown(typ)}'"
            self.heterogeneous.append((id(owner), CheckError(element.pos, message)))

    def create_map(self, node: ast.CreateMap) -> t.Type:
        key_type: t.Type | None = None
        value_type: t.Type | None = None
        first: tuple[t.Type, t.Type] | None = None
        for k, v, opt in node.entries:
            kt, vt = self.check(k), self.check(v)
            if opt:
                vt = vt.params[0] if vt.name == "optional_type" else t.DYN
            if first is None:
                first = (kt, vt)
            else:
                self.homogeneous(node, "key", k, first[0], kt)
                self.homogeneous(node, "value", v, first[1], vt)
            key_type, value_type = t.join_elements(key_type, kt), t.join_elements(value_type, vt)
        return t.map_of(key_type or t.DYN, value_type or t.DYN)

    def comprehension(self, node: ast.Comprehension) -> t.Type:
        rng = self.check(node.range)
        if node.kind == "bind":
            self.scopes.append({node.var: rng})
            body = self.check(node.body[0])
            self.scopes.pop()
            return body
        if node.kind in ("optMap", "optFlatMap"):
            inner = rng.params[0] if rng.name == "optional_type" else t.DYN
            self.scopes.append({node.var: inner})
            body = self.check(node.body[0])
            self.scopes.pop()
            if node.kind == "optMap":
                return t.optional_of(body)
            return body
        if rng.name == "list":
            first, second = (t.INT, rng.params[0]) if node.var2 else (rng.params[0], t.DYN)
        elif rng.name == "map":
            first, second = rng.params[0], rng.params[1]
        elif t.is_dyn(rng):
            first, second = t.DYN, t.DYN
        else:
            raise CheckError(node.range.pos, f"expression of type '{rng}' cannot be range of a comprehension "
                                             "(must be list, map, or dynamic)")
        scope = {node.var: first}
        if node.var2:
            scope[node.var2] = second
        self.scopes.append(scope)
        body_types = [self.check(b) for b in node.body]
        self.scopes.pop()
        kind = node.kind
        predicate_kinds = ("all", "exists", "exists_one", "existsOne")
        has_predicate = kind in predicate_kinds or kind == "filter" or (
            kind in ("map", "transformList", "transformMap", "transformMapEntry") and len(node.body) == 2)
        if has_predicate and body_types[0] != t.BOOL and not t.is_dyn(body_types[0]):
            pred = body_types[0]
            # the error cel-go's checker finds in the macro's expansion
            if kind == "all":
                shown, function = f"(bool, {pred})", "_&&_"
            elif kind == "exists":
                shown, function = f"(bool, {pred})", "_||_"
            else:
                function = "_?_:_"
                filtered = t.list_of(second if node.var2 else first)
                accu = {"exists_one": "int", "existsOne": "int", "filter": str(filtered),
                        "map": str(t.list_of(body_types[-1])), "transformList": str(t.list_of(body_types[-1])),
                        "transformMap": str(t.map_of(first, body_types[-1])),
                        "transformMapEntry": "map(dyn, dyn)"}[kind]
                shown = f"({pred}, {accu}, {accu})"
            raise CheckError(node.pos, f"found no matching overload for '{function}' applied to '{shown}'")
        if kind in predicate_kinds:
            return t.BOOL
        if kind == "filter":
            return t.list_of(first) if not node.var2 else t.list_of(second)
        if kind in ("map", "transformList"):
            return t.list_of(body_types[-1])
        if kind == "sortBy":
            return rng
        if kind == "transformMap":
            return t.map_of(first, body_types[-1])
        entry = body_types[-1]
        if entry.name != "map" and not t.is_dyn(entry):
            raise CheckError(node.pos, "found no matching overload for 'cel.@mapInsert' applied to "
                                       f"'(map(dyn, dyn), {entry})'")
        return entry if entry.name == "map" else t.map_of(t.DYN, t.DYN)


def _literal_ids(nodes: list[ast.Node]) -> set[int]:
    """The list and map literals in these nodes, nested ones included."""
    out: set[int] = set()
    for n in nodes:
        if isinstance(n, ast.CreateList):
            out.add(id(n))
            out |= _literal_ids(n.elements)
        elif isinstance(n, ast.CreateMap):
            out.add(id(n))
            out |= _literal_ids([v for _, v, _ in n.entries] + [k for k, _, _ in n.entries])
    return out


def _check_format(node: ast.Call, template: str, args: ast.CreateList, checked: Checked) -> list[CheckError]:
    """cel-go's string-format validator on a literal template with a list literal of arguments."""
    try:
        clauses = format_clauses(template)
    except CelEvalError as e:
        return [CheckError(node.pos, e.message)]
    for i, (verb, _) in enumerate(clauses):
        if i >= len(args.elements):
            return [CheckError(node.pos, f"index {i} out of range")]
        arg = args.elements[i]
        typ = checked.type_of(arg)
        allowed, what = FORMAT_CLAUSE_TYPES["x" if verb == "X" else ("e" if verb == "E" else verb)]
        if not t.is_dyn(typ) and typ.name not in allowed:
            return [CheckError(arg.pos, f"error during formatting: {what}, was given {typ}")]
    if len(args.elements) > len(clauses):
        return [CheckError(node.pos, "too many arguments supplied to string.format "
                                     f"(expected {len(clauses)}, got {len(args.elements)})")]
    return []


def _shown(typ: t.Type) -> str:
    """Types as cel-go's checker messages name them (null_type reads 'null' there)."""
    if typ.params:
        return f"{typ.name}({', '.join(_shown(p) for p in typ.params)})"
    return "null" if typ == t.NULL else str(typ)


def _literal_type(value: object) -> t.Type:
    if value is None:
        return t.NULL
    tv = type(value)
    if tv is bool:
        return t.BOOL
    if tv is Uint:
        return t.UINT
    if tv is int:
        return t.INT
    if tv is float:
        return t.DOUBLE
    if tv is str:
        return t.STRING
    return t.BYTES


def check(node: ast.Node) -> tuple[t.Type, Checked, list[CheckError]]:
    """Check a parsed expression: its output type, the annotations and the errors (sorted by position)."""
    checker = Checker()
    output = checker.check(node)
    return output, checker.result, checker.finish()
