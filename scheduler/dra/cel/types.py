"""CEL's static types for the checker: cel-go's names (`list(int)`, `map(string, dyn)`, `kubernetes.Quantity`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Type:
    """A CEL type: a name and its parameters (list has one, map two); type parameters are upper-case names."""

    name: str
    params: tuple[Type, ...] = ()

    def __str__(self) -> str:
        if not self.params:
            return self.name
        return f"{self.name}({', '.join(str(p) for p in self.params)})"

    @property
    def is_param(self) -> bool:
        return len(self.name) == 1 and self.name.isupper()


def parse_type(text: str) -> Type:
    """Read a type written as cel-go prints it: `list(A)`, `map(string, dyn)`, `optional_type(int)`."""
    text = text.strip()
    if "(" not in text:
        return Type(text)
    name, _, rest = text.partition("(")
    inner = rest[:-1]
    params: list[str] = []
    depth = 0
    start = 0
    for i, c in enumerate(inner):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            params.append(inner[start:i])
            start = i + 1
    params.append(inner[start:])
    return Type(name, tuple(parse_type(p) for p in params))


INT, UINT, DOUBLE, BOOL, STRING, BYTES = Type("int"), Type("uint"), Type("double"), Type("bool"), Type("string"), Type(
    "bytes"
)
NULL, DYN, ERROR = Type("null_type"), Type("dyn"), Type("!error!")
QUANTITY, SEMVER, IP, CIDR = Type("kubernetes.Quantity"), Type("kubernetes.Semver"), Type("net.IP"), Type("net.CIDR")
TIMESTAMP, DURATION = Type("google.protobuf.Timestamp"), Type("google.protobuf.Duration")
DEVICE = Type("kubernetes.DRADevice")


def list_of(elem: Type) -> Type:
    return Type("list", (elem,))


def map_of(key: Type, value: Type) -> Type:
    return Type("map", (key, value))


def optional_of(elem: Type) -> Type:
    return Type("optional_type", (elem,))


def type_of(elem: Type) -> Type:
    return Type("type", (elem,))


# What v1.37.2's stored-expressions environment declares for `device` (the last declaration of
# kubernetes.DRADevice wins: consumable capacity and list-typed attributes, attributes as dyn).
DEVICE_FIELDS: dict[str, Type] = {
    "driver": STRING,
    "allowMultipleAllocations": BOOL,
    "attributes": map_of(STRING, map_of(STRING, DYN)),
    "capacity": map_of(STRING, map_of(STRING, QUANTITY)),
}

def is_dyn(t: Type) -> bool:
    return t.name in ("dyn", "!error!") or t.is_param


def assignable(param: Type, arg: Type, bindings: dict[str, Type]) -> bool:
    """Whether an argument of type `arg` may be passed where `param` is declared, binding type parameters as
    cel-go does: a parameter takes the most general type it meets (dyn once any argument is dyn)."""
    if param.is_param:
        bound = bindings.get(param.name)
        if bound is None:
            bindings[param.name] = arg
            return True
        if is_dyn(bound):
            return True
        if is_dyn(arg):
            bindings[param.name] = DYN
            return True
        return assignable(bound, arg, bindings) or assignable(arg, bound, {})
    if is_dyn(arg) or param.name == "dyn":
        return True
    if param.name == "type" and arg.name == "type":
        return True  # cel-go compares type values whatever they denote
    if arg == NULL and ("." in param.name or param.name == "null_type"):
        return True  # null is assignable to message and object types (timestamps, quantities, ...)
    if param.name != arg.name or len(param.params) != len(arg.params):
        return False
    return all(assignable(p, a, bindings) for p, a in zip(param.params, arg.params, strict=True))


def substitute(t: Type, bindings: dict[str, Type]) -> Type:
    """Replace the bound type parameters of `t` (unbound ones become dyn)."""
    if t.is_param:
        return bindings.get(t.name, DYN)
    if not t.params:
        return t
    return Type(t.name, tuple(substitute(p, bindings) for p in t.params))


def join_elements(current: Type | None, nxt: Type) -> Type:
    """cel-go's joinTypes for aggregate literals: the more general of two assignable types, else dyn."""
    if current is None:
        return nxt
    if current == nxt:
        return current
    if is_dyn(current) or is_dyn(nxt):
        return DYN
    if current.name == nxt.name and len(current.params) == len(nxt.params) and current.params:
        return Type(current.name, tuple(join_elements(a, b) for a, b in zip(current.params, nxt.params, strict=True)))
    return DYN


def join(a: Type, b: Type) -> Type | None:
    """The common type of two aggregate-literal elements, or None when they differ (no implicit conversion)."""
    if a == b:
        return a
    if is_dyn(a):
        return b if not is_dyn(b) else a
    if is_dyn(b):
        return a
    if a.name == "type" and b.name == "type":
        return Type("type", (DYN,))
    if a.name == b.name and len(a.params) == len(b.params):
        params = []
        for x, y in zip(a.params, b.params, strict=True):
            j = join(x, y)
            if j is None:
                return None
            params.append(j)
        return Type(a.name, tuple(params))
    return None
