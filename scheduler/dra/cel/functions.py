"""The function registry of v1.37.2's stored-expressions CEL environment, and most of its functions: cel-go's
standard library and extensions (strings v2, lists v3, sets, optional types) and Kubernetes' quantity, semver,
regex and lists libraries; net.py, formatting.py and formats.py add the rest (library.py loads them all).
Each function has its signature (for the checker), its implementation (for the interpreter) and its runtime
cost (cel-go's defaults and Kubernetes' CostEstimator).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from scheduler.dra.cel import types as t
from scheduler.dra.cel.values import (
    CIDR,
    INT64_MAX,
    INT64_MIN,
    IP,
    NONE,
    UINT64_MAX,
    URL,
    CelEvalError,
    DefaultMap,
    Optional,
    Quantity,
    Semver,
    TypeValue,
    Uint,
    compare,
    equals,
    equals_operator,
    lookup,
    no_such_overload,
    type_name,
)

Impl = Callable[..., Any]
CostFn = Callable[[list[Any], Any], int]


@dataclass
class Overload:
    """One signature of a function: member overloads take the receiver first."""

    id: str
    params: tuple[t.Type, ...]
    result: t.Type
    impl: Impl
    member: bool = False
    cost: CostFn | None = None

    def __post_init__(self) -> None:
        # per parameter, the Python types a value may have (None: any), for the run-time guard
        self.guards: tuple[frozenset[type] | None, ...] = tuple(_guard(p) for p in self.params)

    def accepts(self, args: tuple[Any, ...]) -> bool:
        """cel-go's runtime type guard for this signature."""
        return all(g is None or type(a) in g for g, a in zip(self.guards, args, strict=True))


@dataclass
class Function:
    """All overloads of a name. cel-go words a runtime mismatch three ways: standard-library functions say
    "no such overload: NAME" when the first argument lacks the trait (`trait`: the types that have it) and a bare
    "no such overload" otherwise; extension functions say "no such overload: NAME(type, ...)"."""

    name: str
    overloads: list[Overload] = field(default_factory=list)
    operator: bool = False
    trait: frozenset[type] | None = None

    def mismatch(self, values: tuple[Any, ...]) -> CelEvalError:
        if self.operator:
            # a first argument without the trait fails in the interpreter ("no such overload: _-_") unless it is
            # a receiver type (strings), whose Receive answers the bare error
            if self.trait is not None and values and type(values[0]) not in self.trait and type(values[0]) is not str:
                return CelEvalError(f"no such overload: {self.name}")
            return no_such_overload()
        return CelEvalError(f"no such overload: {self.name}({', '.join(type_name(v) for v in values)})")


RUNTIME_KINDS: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "uint": (Uint,),
    "double": (float,),
    "bool": (bool,),
    "string": (str,),
    "bytes": (bytes,),
    "null_type": (type(None),),
    "list": (list, tuple),
    "map": (dict, DefaultMap),
    "kubernetes.Quantity": (Quantity,),
    "kubernetes.Semver": (Semver,),
    "net.IP": (IP,),
    "net.CIDR": (CIDR,),
    "optional_type": (Optional,),
    "type": (TypeValue,),
    "kubernetes.URL": (URL,),
}


def _guard(param: t.Type) -> frozenset[type] | None:
    if param.name == "dyn" or param.is_param:
        return None
    return frozenset(RUNTIME_KINDS.get(param.name, ()))


def size_of(v: Any) -> int:
    """cel-go's actualSize: the size of strings, bytes, lists and maps, else 1."""
    tv = type(v)
    if tv is str or tv is bytes or tv is list or tv is tuple or tv is dict or tv is DefaultMap:
        return len(v)
    if tv is Optional and v.has_value:
        return size_of(v.value)
    return 1


def cost_ceil(x: float) -> int:
    return math.ceil(x)


def traversal_price(index: int, factor: float = 0.1) -> CostFn:
    return lambda args, result: cost_ceil(size_of(args[index]) * factor)


def unit_cost(args: list[Any], result: Any) -> int:
    return 1


def _zero(args: list[Any], result: Any) -> int:
    return 0


def _min_size(args: list[Any], result: Any) -> int:
    return cost_ceil(min(size_of(args[0]), size_of(args[1])) * 0.1)


def _equals_cost(args: list[Any], result: Any) -> int:
    if type(args[0]) in (Quantity, Semver, IP, CIDR):
        return 1
    return _min_size(args, result)


def _regex_cost(args: list[Any], result: Any) -> int:
    return cost_ceil((1.0 + size_of(args[0])) * 0.1) * cost_ceil(size_of(args[1]) * 0.25)


def _contains_cost(args: list[Any], result: Any) -> int:
    return cost_ceil(size_of(args[0]) * 0.1) * cost_ceil(size_of(args[1]) * 0.1)


def traversal_cost(v: Any) -> int:
    """Kubernetes' traversalCost: string length x 0.1 (truncated), summed over list elements and map entries."""
    tv = type(v)
    if tv is str:
        return int(len(v.encode()) * 0.1)  # Go's len(): bytes
    if tv is bytes:
        return int(len(v) * 0.1)
    if tv is list or tv is tuple:
        return sum(traversal_cost(x) for x in v)
    if tv is dict or tv is DefaultMap:
        return sum(traversal_cost(k) + traversal_cost(x) for k, x in v.items())
    return 1


def _list_traversal(args: list[Any], result: Any) -> int:
    return traversal_cost(args[0])


def _sets_cost(factor: int) -> CostFn:
    return lambda args, result: 1 + size_of(args[0]) * size_of(args[1]) * factor


FUNCTIONS: dict[str, Function] = {}


def parses(parse: Callable[..., Any]) -> Callable[..., bool]:
    """isQuantity, isSemver, isIP, ...: whether the parse succeeds, its error swallowed."""

    def check(*args: Any) -> bool:
        try:
            parse(*args)
        except CelEvalError:
            return False
        return True

    return check


def define(name: str, signature: str, impl: Impl, *, cost: CostFn | None = None, operator: bool = False) -> None:
    """Add one overload; `signature` reads like cel-go's docs: `string.contains(string) -> bool` for a member."""
    head, _, result = signature.partition("->")
    head = head.strip()
    member = False
    params: list[t.Type] = []
    if head.startswith(name + "("):
        args_text = head[len(name) + 1 : -1]
    else:
        receiver, _, rest = head.partition("." + name + "(")
        if not rest:
            raise ValueError(signature)
        member = True
        params.append(t.parse_type(receiver))
        args_text = rest[:-1]
    if args_text.strip():
        depth, start = 0, 0
        for i, c in enumerate(args_text):
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif c == "," and depth == 0:
                params.append(t.parse_type(args_text[start:i]))
                start = i + 1
        params.append(t.parse_type(args_text[start:]))
    fn = FUNCTIONS.setdefault(name, Function(name, operator=operator))
    overload_id = f"{name}_{'_'.join(str(p) for p in params)}"
    fn.overloads.append(Overload(overload_id, tuple(params), t.parse_type(result), impl, member, cost))


# ---- arithmetic ---------------------------------------------------------------------------------------------


def _check_int(v: int) -> int:
    if not INT64_MIN <= v <= INT64_MAX:
        raise CelEvalError("integer overflow")
    return v


def _check_uint(v: int) -> Uint:
    if not 0 <= v <= UINT64_MAX:
        raise CelEvalError("unsigned integer overflow")
    return Uint(v)


def _int_div(a: int, b: int) -> int:
    if b == 0:
        raise CelEvalError("division by zero")
    q = abs(a) // abs(b)
    return _check_int(q if (a >= 0) == (b >= 0) else -q)


def _int_mod(a: int, b: int) -> int:
    if b == 0:
        raise CelEvalError("modulus by zero")
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def _double_div(a: float, b: float) -> float:
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _uint_div(a: int, b: int) -> Uint:
    if b == 0:
        raise CelEvalError("division by zero")
    return Uint(a // b)


def _uint_mod(a: int, b: int) -> Uint:
    if b == 0:
        raise CelEvalError("modulus by zero")
    return Uint(a % b)


define("_+_", "_+_(int, int) -> int", lambda a, b: _check_int(a + b), operator=True)
define("_+_", "_+_(uint, uint) -> uint", lambda a, b: _check_uint(a + b), operator=True)
define("_+_", "_+_(double, double) -> double", lambda a, b: a + b, operator=True)
define("_+_", "_+_(string, string) -> string", lambda a, b: a + b, operator=True,
       cost=lambda args, r: cost_ceil((size_of(args[0]) + size_of(args[1])) * 0.1))
define("_+_", "_+_(bytes, bytes) -> bytes", lambda a, b: a + b, operator=True,
       cost=lambda args, r: cost_ceil((size_of(args[0]) + size_of(args[1])) * 0.1))
define("_+_", "_+_(list(A), list(A)) -> list(A)", lambda a, b: [*a, *b], operator=True)
define("_-_", "_-_(int, int) -> int", lambda a, b: _check_int(a - b), operator=True)
define("_-_", "_-_(uint, uint) -> uint", lambda a, b: _check_uint(a - b), operator=True)
define("_-_", "_-_(double, double) -> double", lambda a, b: a - b, operator=True)
define("_*_", "_*_(int, int) -> int", lambda a, b: _check_int(a * b), operator=True)
define("_*_", "_*_(uint, uint) -> uint", lambda a, b: _check_uint(a * b), operator=True)
define("_*_", "_*_(double, double) -> double", lambda a, b: a * b, operator=True)
define("_/_", "_/_(int, int) -> int", _int_div, operator=True)
define("_/_", "_/_(uint, uint) -> uint", _uint_div, operator=True)
define("_/_", "_/_(double, double) -> double", _double_div, operator=True)
define("_%_", "_%_(int, int) -> int", _int_mod, operator=True)
define("_%_", "_%_(uint, uint) -> uint", _uint_mod, operator=True)
define("-_", "-_(int) -> int", lambda a: _check_int(-a), operator=True)
define("-_", "-_(double) -> double", lambda a: -a, operator=True)


# Timestamps and durations exist only in signatures (nothing here makes one): `dyn - null` type-checks as in
# cel-go, through them, and fails at run time.
_TS, _DUR = "google.protobuf.Timestamp", "google.protobuf.Duration"
for _sig in (f"_+_({_TS}, {_DUR}) -> {_TS}", f"_+_({_DUR}, {_TS}) -> {_TS}", f"_+_({_DUR}, {_DUR}) -> {_DUR}"):
    define("_+_", _sig, lambda a, b: no_such_overload(), operator=True)
for _sig in (f"_-_({_TS}, {_TS}) -> {_DUR}", f"_-_({_TS}, {_DUR}) -> {_TS}", f"_-_({_DUR}, {_DUR}) -> {_DUR}"):
    define("_-_", _sig, lambda a, b: no_such_overload(), operator=True)

_NUMBERS = frozenset([int, Uint, float])
FUNCTIONS["_+_"].trait = _NUMBERS | {str, bytes, list, tuple}
FUNCTIONS["_-_"].trait = FUNCTIONS["_*_"].trait = FUNCTIONS["_/_"].trait = _NUMBERS
FUNCTIONS["_%_"].trait = frozenset([int, Uint])
FUNCTIONS["-_"].trait = frozenset([int, float, bool])  # types.Bool is a Negater (its impl then refuses it)

# ---- comparison ---------------------------------------------------------------------------------------------


def _ordered(op: Callable[[int], bool]) -> Impl:
    def impl(a: Any, b: Any) -> bool:
        ta, tb = type(a), type(b)
        nan = (ta is float and math.isnan(a)) or (tb is float and math.isnan(b))
        if nan and ta in (int, Uint, float) and tb in (int, Uint, float):
            return False
        return op(compare(a, b))

    return impl


_COMPARABLE = ["int", "uint", "double", "string", "bytes", "bool"]
_STRING_COST = {"string", "bytes"}
for _op, _cmp in (("_<_", lambda c: c < 0), ("_<=_", lambda c: c <= 0), ("_>_", lambda c: c > 0),
                  ("_>=_", lambda c: c >= 0)):
    for _a in _COMPARABLE:
        for _b in [_a] if _a not in ("int", "uint", "double") else ["int", "uint", "double"]:
            define(_op, f"{_op}({_a}, {_b}) -> bool", _ordered(_cmp), operator=True,
                   cost=_min_size if _a in _STRING_COST else None)

for _op in ("_<_", "_<=_", "_>_", "_>=_"):
    # timestamps and durations have no values here (no function makes them), but their overloads exist,
    # so `dyn < null` type-checks as in cel-go (null is assignable to them) and fails at run time
    for _t in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        define(_op, f"{_op}({_t}, {_t}) -> bool", lambda a, b: compare(a, b) < 0, operator=True)
    FUNCTIONS[_op].trait = _NUMBERS | {str, bytes, bool}

define("_==_", "_==_(A, A) -> bool", equals_operator, operator=True, cost=_equals_cost)
define("_!=_", "_!=_(A, A) -> bool", lambda a, b: not equals(a, b), operator=True, cost=_min_size)


def _in(elem: Any, container: Any) -> bool:
    tc = type(container)
    if tc is list or tc is tuple:
        return any(equals(x, elem) for x in container)
    if tc is dict or tc is DefaultMap:
        try:
            return lookup(container, elem)[0]
        except CelEvalError:
            return False
    raise no_such_overload()


define("@in", "@in(A, list(A)) -> bool", _in, operator=True, cost=lambda args, r: size_of(args[1]))
define("@in", "@in(A, map(A, B)) -> bool", _in, operator=True)


# ---- size, strings, regex -------------------------------------------------------------------------------------


def _size(v: Any) -> int:
    tv = type(v)
    if tv in (str, bytes, list, tuple, dict, DefaultMap):
        return len(v)
    raise CelEvalError("no such overload: size")


for _sig in ("string", "bytes", "list(A)", "map(A, B)"):
    define("size", f"size({_sig}) -> int", _size, operator=True)
    define("size", f"{_sig}.size() -> int", _size, operator=True)
FUNCTIONS["size"].trait = frozenset([str, bytes, list, tuple, dict, DefaultMap])

define("contains", "string.contains(string) -> bool", lambda s, sub: sub in s, cost=_contains_cost, operator=True)
define("startsWith", "string.startsWith(string) -> bool", lambda s, p: s.startswith(p), cost=traversal_price(1),
       operator=True)
define("endsWith", "string.endsWith(string) -> bool", lambda s, p: s.endswith(p), cost=traversal_price(1),
       operator=True)


_REGEX_CACHE: dict[str, re.Pattern[str]] = {}


def compile_regex(pattern: str) -> re.Pattern[str]:
    """RE2 syntax through Python's re (the common subset); invalid patterns give cel-go's error prefix."""
    compiled = _REGEX_CACHE.get(pattern)
    if compiled is None:
        try:
            compiled = re.compile(_re2_to_python(pattern))
        except re.error as e:
            # Python's reason, in RE2's frame (the corpus has no invalid pattern evaluated at run time)
            raise CelEvalError(f"error parsing regexp: {e}: `{pattern}`") from None
        if len(_REGEX_CACHE) > 256:
            _REGEX_CACHE.clear()
        _REGEX_CACHE[pattern] = compiled
    return compiled


_MULTILINE = re.compile(r"\(\?[a-zA-Z]*m[a-zA-Z]*[:)]")


def _re2_to_python(pattern: str) -> str:
    """Rewrite the RE2 syntax whose meaning differs in Python's re: `$` (end of text unless (?m)), `\\z`,
    `\\Q...\\E`, `(?<name>`; refuse what RE2 refuses (look-arounds, backreferences) with its words."""
    out: list[str] = []
    multiline = _MULTILINE.search(pattern) is not None
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            if e == "Q":
                end = pattern.find("\\E", i + 2)
                literal = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
                out.append(re.escape(literal))
                i = n if end < 0 else end + 2
                continue
            if e in "123456789" and not in_class:
                raise CelEvalError(f"error parsing regexp: invalid escape sequence: `\\{e}`")
            out.append("\\Z" if e == "z" and not in_class else c + e)
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            # a ] right after [ or [^ is a literal
            if pattern[i : i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i : i + 1] == "]":
                out.append("\\]")
                i += 1
            continue
        if c == "(" and pattern.startswith("(?", i):
            for perl in ("(?=", "(?!", "(?<=", "(?<!"):
                if pattern.startswith(perl, i):
                    raise CelEvalError(f"error parsing regexp: invalid or unsupported Perl syntax: `{perl}`")
            if pattern.startswith("(?<", i):
                out.append("(?P<")
                i += 3
                continue
        if c == "$" and not multiline:
            out.append("\\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


define("matches", "string.matches(string) -> bool", lambda s, p: compile_regex(p).search(s) is not None,
       cost=_regex_cost, operator=True)
define("matches", "matches(string, string) -> bool", lambda s, p: compile_regex(p).search(s) is not None,
       cost=_regex_cost, operator=True)


def _find(s: str, p: str) -> str:
    m = compile_regex(p).search(s)
    return m.group(0) if m else ""


def _find_all(s: str, p: str, n: int = -1) -> list[str]:
    if n == 0:
        return []
    out = [m.group(0) for m in compile_regex(p).finditer(s)]
    return out if n < 0 else out[:n]


define("find", "string.find(string) -> string", _find, cost=_regex_cost)
define("findAll", "string.findAll(string) -> list(string)", _find_all, cost=_regex_cost)
define("findAll", "string.findAll(string, int) -> list(string)", _find_all, cost=_regex_cost)


def _char_at(s: str, i: int) -> str:
    if i < 0 or i > len(s):
        raise CelEvalError(f"index out of range: {i}")
    return s[i : i + 1]


def _index_of(s: str, sub: str, offset: int = 0) -> int:
    if offset < 0:
        raise CelEvalError(f"index out of range: {offset}")
    if sub == "":
        return min(offset, len(s))
    if offset >= len(s):
        return -1
    return s.find(sub, offset)


def _last_index_of(s: str, sub: str, offset: int | None = None) -> int:
    if offset is None:
        return s.rfind(sub)
    if offset < 0:
        raise CelEvalError(f"index out of range: {offset}")
    if sub == "":
        return min(offset, len(s))
    if offset >= len(s):
        return -1
    start = min(offset, len(s) - len(sub))
    return s.rfind(sub, 0, start + len(sub)) if start >= 0 else -1


def _ascii(fn: Callable[[str], str]) -> Impl:
    return lambda s: "".join(fn(c) if c.isascii() else c for c in s)


def _replace(s: str, old: str, new: str, n: int = -1) -> str:
    return s.replace(old, new, n if n >= 0 else -1)


def _split(s: str, sep: str, n: int = -1) -> list[str]:
    if n == 0:
        return []
    if sep == "":
        chars = list(s)
        if n > 0 and len(chars) > n:
            return [*chars[: n - 1], "".join(chars[n - 1 :])]
        return chars
    return s.split(sep, n - 1) if n > 0 else s.split(sep)


def _substring(s: str, start: int, end: int | None = None) -> str:
    stop = len(s) if end is None else end
    if start < 0 or start > len(s):
        raise CelEvalError(f"index out of range: {start}")
    if stop < 0 or stop > len(s):
        raise CelEvalError(f"index out of range: {stop}")
    if start > stop:
        raise CelEvalError(f"invalid substring range. start: {start}, end: {stop}")
    return s[start:stop]


_UNICODE_SPACE = " \t\n\v\f\r\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
_UNICODE_SPACE += "\u2028\u2029\u202f\u205f\u3000"


def _join(items: Any, sep: str = "") -> str:
    for x in items:
        if type(x) is not str:
            raise no_such_overload()
    return sep.join(items)


def _quote(s: str) -> str:
    out = ['"']
    for c in s:
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif c in "\a\b\f\n\r\t\v":
            out.append({"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}[c])
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


_string_cost = traversal_price(0)
_string_cost2 = traversal_price(0, 0.2)
define("charAt", "string.charAt(int) -> string", _char_at)
define("indexOf", "string.indexOf(string) -> int", _index_of, cost=_list_traversal)
define("indexOf", "string.indexOf(string, int) -> int", _index_of, cost=_list_traversal)
define("lastIndexOf", "string.lastIndexOf(string) -> int", _last_index_of, cost=_list_traversal)
define("lastIndexOf", "string.lastIndexOf(string, int) -> int", _last_index_of, cost=_list_traversal)
define("lowerAscii", "string.lowerAscii() -> string", _ascii(str.lower), cost=_string_cost)
define("upperAscii", "string.upperAscii() -> string", _ascii(str.upper), cost=_string_cost)
define("replace", "string.replace(string, string) -> string", _replace, cost=_string_cost2)
define("replace", "string.replace(string, string, int) -> string", _replace, cost=_string_cost2)
define("split", "string.split(string) -> list(string)", _split, cost=_string_cost2)
define("split", "string.split(string, int) -> list(string)", _split, cost=_string_cost2)
define("substring", "string.substring(int) -> string", _substring, cost=_string_cost)
define("substring", "string.substring(int, int) -> string", _substring, cost=_string_cost)
define("trim", "string.trim() -> string", lambda s: s.strip(_UNICODE_SPACE), cost=_string_cost)
define("join", "list(string).join() -> string", _join, cost=lambda args, r: cost_ceil(size_of(r) * 0.2))
define("join", "list(string).join(string) -> string", _join, cost=lambda args, r: cost_ceil(size_of(r) * 0.2))
define("strings.quote", "strings.quote(string) -> string", _quote, cost=_string_cost)


# ---- conversions --------------------------------------------------------------------------------------------


def format_double(f: float) -> str:
    """Go's strconv.FormatFloat(f, 'g', -1, 64), which cel-go's string(double) uses (1e+06, 0.0001, 1.5)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0.0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digit_tuple, exponent = Decimal(repr(f)).as_tuple()
    digits = "".join(str(d) for d in digit_tuple).rstrip("0") or "0"
    assert isinstance(exponent, int)
    point = len(digit_tuple) + exponent  # the decimal point's position within digits
    prefix = "-" if sign else ""
    x = point - 1
    if x < -4 or x >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{prefix}{mantissa}e{'+' if x >= 0 else '-'}{abs(x):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return prefix + digits + "0" * (point - len(digits))
    return f"{prefix}{digits[:point]}.{digits[point:]}"


def _to_int(v: Any) -> int:
    tv = type(v)
    if tv is int:
        return int(v)
    if tv is Uint:
        if v > INT64_MAX:
            raise CelEvalError("integer overflow")
        return int(v)
    if tv is float:
        if math.isnan(v) or not (-9.223372036854775808e18 < v < 9.223372036854775807e18):
            raise CelEvalError("integer overflow")
        return int(v)
    if tv is str:
        if re.fullmatch(r"[+-]?[0-9]+", v):
            n = int(v)
            if INT64_MIN <= n <= INT64_MAX:
                return n
        raise CelEvalError("type conversion error from 'string' to 'int'")
    raise no_such_overload()


def _to_uint(v: Any) -> Uint:
    tv = type(v)
    if tv is Uint:
        return Uint(v)
    if tv is int:
        if v < 0:
            raise CelEvalError("unsigned integer overflow")
        return Uint(v)
    if tv is float:
        if math.isnan(v) or not (-1 < v < 1.8446744073709552e19):
            raise CelEvalError("unsigned integer overflow")
        return Uint(int(v))
    if tv is str:
        if re.fullmatch(r"\+?[0-9]+", v) and int(v) <= UINT64_MAX:
            return Uint(int(v))
        raise CelEvalError("type conversion error from 'string' to 'uint'")
    raise no_such_overload()


_GO_FLOAT = re.compile(r"[+-]?(?:inf(?:inity)?|nan|[0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]+)?)", re.IGNORECASE)


def _to_double(v: Any) -> float:
    tv = type(v)
    if tv is float:
        return float(v)
    if tv is int or tv is Uint:
        return float(v)
    if tv is str:
        if v and _GO_FLOAT.fullmatch(v):
            try:
                return float(v)
            except ValueError:
                pass
        raise CelEvalError("type conversion error from 'string' to 'double'")
    raise no_such_overload()


def _to_string(v: Any) -> str:
    tv = type(v)
    if tv is str:
        return str(v)
    if tv is bool:
        return "true" if v else "false"
    if tv is int or tv is Uint:
        return str(int(v))
    if tv is float:
        return format_double(v)
    if tv is bytes:
        try:
            return str(v.decode("utf-8"))
        except UnicodeDecodeError:
            raise CelEvalError("invalid UTF-8 in bytes, cannot convert to string") from None
    if tv is IP or tv is CIDR:
        return str(v)
    raise no_such_overload()


_BOOL_STRINGS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
                 "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def _to_bool(v: Any) -> bool:
    if type(v) is bool:
        return v
    if type(v) is str:
        if v in _BOOL_STRINGS:
            return _BOOL_STRINGS[v]
        raise CelEvalError("type conversion error from 'string' to 'bool'")
    raise no_such_overload()


def _to_bytes(v: Any) -> bytes:
    if type(v) is bytes:
        return v
    if type(v) is str:
        return v.encode("utf-8")
    raise no_such_overload()


for _src in ("int", "uint", "double", "string"):
    define("int", f"int({_src}) -> int", _to_int)
    define("uint", f"uint({_src}) -> uint", _to_uint)
    define("double", f"double({_src}) -> double", _to_double)
for _src in ("int", "uint", "double", "string", "bool", "bytes", "net.IP", "net.CIDR"):
    define("string", f"string({_src}) -> string", _to_string,
           cost=traversal_price(0) if _src == "bytes" else None)
define("bool", "bool(bool) -> bool", _to_bool)
define("bool", "bool(string) -> bool", _to_bool)
define("bytes", "bytes(bytes) -> bytes", _to_bytes)
define("bytes", "bytes(string) -> bytes", _to_bytes, cost=traversal_price(0))
define("dyn", "dyn(A) -> dyn", lambda v: v, cost=_zero)
define("type", "type(A) -> type(A)", lambda v: TypeValue(type_name(v)))


# ---- optionals ----------------------------------------------------------------------------------------------


def _or_value(o: Optional, default: Any) -> Any:
    return o.value if o.has_value else default


def _or(o: Optional, other: Optional) -> Optional:
    return o if o.has_value else other


def _opt_value(o: Optional) -> Any:
    if not o.has_value:
        raise CelEvalError("optional.none() dereference")
    return o.value


def _of_non_zero(v: Any) -> Optional:
    zero = v is None or v is False or (type(v) in (int, Uint, float) and v == 0) or (
        type(v) in (str, bytes, list, tuple, dict) and len(v) == 0)
    return NONE if zero else Optional(v, True)


define("optional.of", "optional.of(A) -> optional_type(A)", lambda v: Optional(v, True))
define("optional.ofNonZeroValue", "optional.ofNonZeroValue(A) -> optional_type(A)", _of_non_zero)
define("optional.none", "optional.none() -> optional_type(dyn)", lambda: NONE)
define("value", "optional_type(A).value() -> A", _opt_value)
define("hasValue", "optional_type(A).hasValue() -> bool", lambda o: o.has_value)
define("orValue", "optional_type(A).orValue(A) -> A", _or_value)
define("or", "optional_type(A).or(optional_type(A)) -> optional_type(A)", _or)


# ---- lists: Kubernetes' library and cel-go's ext.Lists v3, sets -------------------------------------------------


def _is_sorted(items: Any) -> bool:
    return all(compare(a, b) <= 0 for a, b in itertools.pairwise(items))


def _sum(zero: Any) -> Impl:
    def impl(items: Any) -> Any:
        total = zero
        for x in items:
            total = FUNCTIONS["_+_"].overloads[0].impl(total, x) if type(zero) is int else (
                _check_uint(total + x) if type(zero) is Uint else total + x)
        return total

    return impl


def _extreme(sign: int) -> Impl:
    def impl(items: Any) -> Any:
        if not items:
            raise CelEvalError(f"{'max' if sign > 0 else 'min'} called on empty list")
        best = items[0]
        for x in items[1:]:
            if compare(x, best) * sign > 0:
                best = x
        return best

    return impl


def _index(items: Any, v: Any) -> int:
    for i, x in enumerate(items):
        if equals(x, v):
            return i
    return -1


def _last_index(items: Any, v: Any) -> int:
    for i in range(len(items) - 1, -1, -1):
        if equals(items[i], v):
            return i
    return -1


def _includes(container: Any, v: Any) -> bool:
    tc = type(container)
    if tc is list or tc is tuple:
        return any(equals(x, v) for x in container)
    return equals(container, v)


for _name in ("int", "uint", "double", "bool", "string", "bytes"):
    define("isSorted", f"list({_name}).isSorted() -> bool", _is_sorted, cost=_list_traversal)
    define("max", f"list({_name}).max() -> {_name}", _extreme(1), cost=_list_traversal)
    define("min", f"list({_name}).min() -> {_name}", _extreme(-1), cost=_list_traversal)
define("sum", "list(int).sum() -> int", _sum(0), cost=_list_traversal)
define("sum", "list(uint).sum() -> uint", _sum(Uint(0)), cost=_list_traversal)
define("sum", "list(double).sum() -> double", _sum(0.0), cost=_list_traversal)
define("indexOf", "list(A).indexOf(A) -> int", _index, cost=_list_traversal)
define("lastIndexOf", "list(A).lastIndexOf(A) -> int", _last_index, cost=_list_traversal)
define("includes", "dyn.includes(dyn) -> bool", _includes, cost=_list_traversal)


def _slice(items: Any, start: int, end: int) -> list[Any]:
    if start < 0 or end < 0:
        raise CelEvalError(f"cannot slice(0, {end}), negative indexes not supported" if start >= 0 else
                           f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        raise CelEvalError(f"cannot slice({start}, {end}), start index must be less than or equal to end index")
    if end > len(items):
        raise CelEvalError(f"cannot slice({start}, {end}), list is length {len(items)}")
    return list(items[start:end])


def _flatten(items: Any, depth: int = 1) -> list[Any]:
    if depth < 0:
        raise CelEvalError("level must be non-negative")
    out: list[Any] = []
    for x in items:
        if type(x) in (list, tuple) and depth > 0:
            out.extend(_flatten(x, depth - 1))
        else:
            out.append(x)
    return out


def _distinct(items: Any) -> list[Any]:
    out: list[Any] = []
    for x in items:
        if not any(equals(x, y) for y in out):
            out.append(x)
    return out


def _sort(items: Any) -> list[Any]:
    return sorted(items, key=functools.cmp_to_key(compare))


def _range(n: int) -> list[int]:
    return list(range(n))


def _first(items: Any) -> Optional:
    return Optional(items[0], True) if items else NONE


def _last(items: Any) -> Optional:
    return Optional(items[-1], True) if items else NONE


def _output_size_cost(args: list[Any], result: Any) -> int:
    return 11 + size_of(result)  # cel-go's trackAllocatingListCall: call, list creation, output


def _flatten_cost(args: list[Any], result: Any) -> int:
    depth = args[1] if len(args) == 2 else 1
    return 11 + int(size_of(args[0]) * (depth if depth >= 0 else 1))


def self_compare_cost(items: Any) -> int:
    """cel-go's trackListSelfCompare: O(n^2) comparisons, a little more for strings."""
    n = size_of(items)
    factor = 2.1 if n and type(items[0]) in (str, bytes) else 2.0
    return 11 + int(n * n * factor)


define("slice", "list(A).slice(int, int) -> list(A)", _slice, cost=_output_size_cost)
define("flatten", "list(dyn).flatten() -> list(dyn)", _flatten, cost=_flatten_cost)
define("flatten", "list(dyn).flatten(int) -> list(dyn)", _flatten, cost=_flatten_cost)
define("distinct", "list(A).distinct() -> list(A)", _distinct, cost=lambda args, r: self_compare_cost(args[0]))
define("reverse", "list(A).reverse() -> list(A)", lambda items: list(reversed(items)), cost=_output_size_cost)
for _name in ("int", "uint", "double", "bool", "string", "bytes", "google.protobuf.Timestamp",
              "google.protobuf.Duration"):
    # one overload per comparable type, as ext.Lists declares them (a dyn receiver then sorts to dyn)
    define("sort", f"list({_name}).sort() -> list({_name})", _sort, cost=lambda args, r: self_compare_cost(args[0]),
           operator=True)
FUNCTIONS["sort"].trait = frozenset([list, tuple])  # a singleton binding with the Lister trait
define("lists.range", "lists.range(int) -> list(int)", _range, cost=_output_size_cost)
define("first", "list(A).first() -> optional_type(A)", _first)
define("last", "list(A).last() -> optional_type(A)", _last)


def _sets_contains(a: Any, b: Any) -> bool:
    return all(any(equals(x, y) for y in a) for x in b)


define("sets.contains", "sets.contains(list(A), list(A)) -> bool", _sets_contains, cost=_sets_cost(1))
define("sets.equivalent", "sets.equivalent(list(A), list(A)) -> bool",
       lambda a, b: _sets_contains(a, b) and _sets_contains(b, a), cost=_sets_cost(2))
define("sets.intersects", "sets.intersects(list(A), list(A)) -> bool",
       lambda a, b: any(equals(x, y) for x in a for y in b), cost=_sets_cost(1))


# ---- Kubernetes: quantity, semver ---------------------------------------------------------------------------


def _as_integer(q: Quantity) -> int:
    v = q.as_int64()
    if v is None:
        raise CelEvalError("cannot convert value to integer")
    return v


def _int_quantity(v: int) -> Quantity:
    return Quantity(Fraction(v), None, 0)


def _quantity_fn(s: str) -> Quantity:
    return Quantity.parse(s)


def _cmp_q(a: Quantity, b: Quantity) -> int:
    return (a.key > b.key) - (a.key < b.key)


string_parse_cost = traversal_price(0)
define("quantity", "quantity(string) -> kubernetes.Quantity", _quantity_fn, cost=string_parse_cost)
define("isQuantity", "isQuantity(string) -> bool", parses(Quantity.parse), cost=string_parse_cost)
define("sign", "sign(kubernetes.Quantity) -> int", lambda q: (q.value > 0) - (q.value < 0), cost=unit_cost)
define("isGreaterThan", "kubernetes.Quantity.isGreaterThan(kubernetes.Quantity) -> bool",
       lambda a, b: _cmp_q(a, b) == 1, cost=unit_cost)
define("isLessThan", "kubernetes.Quantity.isLessThan(kubernetes.Quantity) -> bool",
       lambda a, b: _cmp_q(a, b) == -1, cost=unit_cost)
define("compareTo", "kubernetes.Quantity.compareTo(kubernetes.Quantity) -> int", _cmp_q, cost=unit_cost)
define("asApproximateFloat", "kubernetes.Quantity.asApproximateFloat() -> double", lambda q: float(q.value),
       cost=unit_cost)
define("asInteger", "kubernetes.Quantity.asInteger() -> int", _as_integer, cost=unit_cost)
define("isInteger", "kubernetes.Quantity.isInteger() -> bool", lambda q: q.as_int64() is not None, cost=unit_cost)
define("add", "kubernetes.Quantity.add(kubernetes.Quantity) -> kubernetes.Quantity", lambda a, b: a.plus(b, 1),
       cost=unit_cost)
define("add", "kubernetes.Quantity.add(int) -> kubernetes.Quantity", lambda a, b: a.plus(_int_quantity(b), 1),
       cost=unit_cost)
define("sub", "kubernetes.Quantity.sub(kubernetes.Quantity) -> kubernetes.Quantity", lambda a, b: a.plus(b, -1),
       cost=unit_cost)
define("sub", "kubernetes.Quantity.sub(int) -> kubernetes.Quantity", lambda a, b: a.plus(_int_quantity(b), -1),
       cost=unit_cost)


def _semver_fn(s: str, normalize: bool = False) -> Semver:
    return Semver.parse_normalized(s) if normalize else Semver.parse(s)


define("semver", "semver(string) -> kubernetes.Semver", _semver_fn, cost=string_parse_cost)
define("semver", "semver(string, bool) -> kubernetes.Semver", _semver_fn, cost=string_parse_cost)
define("isSemver", "isSemver(string) -> bool", parses(_semver_fn), cost=string_parse_cost)
define("isSemver", "isSemver(string, bool) -> bool", parses(_semver_fn), cost=string_parse_cost)
define("isGreaterThan", "kubernetes.Semver.isGreaterThan(kubernetes.Semver) -> bool",
       lambda a, b: a.compare(b) == 1, cost=unit_cost)
define("isLessThan", "kubernetes.Semver.isLessThan(kubernetes.Semver) -> bool",
       lambda a, b: a.compare(b) == -1, cost=unit_cost)
define("compareTo", "kubernetes.Semver.compareTo(kubernetes.Semver) -> int", lambda a, b: a.compare(b), cost=unit_cost)
define("major", "kubernetes.Semver.major() -> int", lambda v: _check_int(v.major), cost=unit_cost)
define("minor", "kubernetes.Semver.minor() -> int", lambda v: _check_int(v.minor), cost=unit_cost)
define("patch", "kubernetes.Semver.patch() -> int", lambda v: _check_int(v.patch), cost=unit_cost)


TYPE_IDENTS: dict[str, TypeValue] = {
    name: TypeValue(name)
    for name in ("int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type")
}
TYPE_IDENTS["dyn"] = TypeValue("dyn")
for _name in ("net.IP", "net.CIDR", "kubernetes.Quantity", "kubernetes.Semver", "kubernetes.URL", "optional_type"):
    TYPE_IDENTS[_name] = TypeValue(_name)


