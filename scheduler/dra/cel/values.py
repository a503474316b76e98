"""CEL's runtime values in Python, with cel-go's equality, ordering and error words.

Plain Python values stand for CEL's primitives (bool, int, float as double, str, bytes, None as null, list,
dict); `Uint` marks an unsigned int; Kubernetes' extension types (Quantity, Semver, IP, CIDR) and Optional
are small classes. Dispatch reads `type(v)` (never isinstance: bool is an int in Python, CEL keeps them apart).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

INT64_MIN, INT64_MAX, UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


class CelEvalError(Exception):
    """A CEL runtime error; str(e) is cel-go's message ("no such key: x", "no such overload", ...)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Fatal(CelEvalError):
    """An error that ends the whole evaluation in cel-go (a cancellation or a recovered panic): `||`, `&&`
    and macros never absorb it."""


class CostLimitExceeded(Fatal):
    """The runtime cost limit was reached (cel-go cancels the evaluation)."""


NO_SUCH_OVERLOAD = "no such overload"


def no_such_overload() -> CelEvalError:
    return CelEvalError(NO_SUCH_OVERLOAD)


class DefaultMap(dict[str, Any]):
    """device.attributes and device.capacity: an unknown domain reads as an empty map (upstream's mapper)."""

    __slots__ = ()

    def __missing__(self, key: str) -> dict[str, Any]:
        return EMPTY


EMPTY: dict[str, Any] = {}


class Uint(int):
    """CEL's uint (a distinct type: 1u == 1 is true only through dyn, 1u + 1 is no overload)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


@dataclass(frozen=True, slots=True)
class TypeValue:
    """A CEL type as a value (`type(1) == int`)."""

    name: str

    def __str__(self) -> str:
        return self.name


class Optional:
    """CEL's optional_type value: optional.of(v) or optional.none()."""

    __slots__ = ("has_value", "value")

    def __init__(self, value: Any = None, has_value: bool = False) -> None:
        self.value = value
        self.has_value = has_value

    def __repr__(self) -> str:
        return f"optional.of({self.value!r})" if self.has_value else "optional.none()"


NONE = Optional()

ERR_FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DECIMAL_SUFFIXES = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_MAX_ALLOWED = 2**63 - 1
_NANO = 10**9


def _fits_int64(v: int) -> bool:
    return INT64_MIN <= v <= INT64_MAX


def _parse_quantity(text: str) -> tuple[Fraction, int | None]:
    """resource.ParseQuantity's scanner and rounding (up to 1n, binary amounts capped at 2^63-1).

    Returns the value and, when upstream stores it as an int64 mantissa (its fast path), that mantissa's decimal
    scale; None when it is stored as an inf.Dec (then AsInt64, so isInteger()/asInteger(), always fails)."""
    if not text:
        raise CelEvalError(ERR_FORMAT_WRONG)
    if text == "0":
        return Fraction(0), 0
    pos, end = 0, len(text)
    negative = text[0] == "-"
    if text[0] in "+-":
        pos += 1
    while pos < end and text[pos] == "0":
        pos += 1
    start = pos
    while pos < end and text[pos] in "0123456789":
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in "0123456789":
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in "0123456789":
        pos += 1
    if pos < end:
        raise CelEvalError(ERR_FORMAT_WRONG)
    suffix = text[suffix_start:]
    digits = int(num + denom)
    amount = Fraction(digits, 10 ** len(denom))
    scale: int | None = None
    if suffix in _BINARY_SUFFIXES:
        exponent = _BINARY_SUFFIXES[suffix]
        amount *= 2**exponent
        if not denom and 15 - len(num) - int(exponent * 3 / 10) - 1 >= 0 and _fits_int64(digits << exponent):
            scale = 0
        if amount > _MAX_ALLOWED:
            amount = Fraction(_MAX_ALLOWED)
    else:
        if suffix in _DECIMAL_SUFFIXES:
            exponent = _DECIMAL_SUFFIXES[suffix]
        elif suffix[:1] in ("e", "E") and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
            exponent = int(suffix[1:])
            if abs(exponent) > 10_000:
                raise CelEvalError("unable to parse numeric part of quantity")
        else:
            raise CelEvalError("unable to parse quantity's suffix")
        amount *= Fraction(10) ** exponent
        if 18 - len(num) - len(denom) >= 0 and exponent - len(denom) >= -9 and _fits_int64(digits):
            scale = exponent - len(denom)
    if scale is None and amount and (amount * _NANO).denominator != 1:
        amount = Fraction(-((-amount.numerator * _NANO) // amount.denominator), _NANO)
    return (-amount if negative else amount), scale


class Quantity:
    """kubernetes.Quantity: an exact value, plus how upstream stores it (what isInteger()/asInteger() depend on).

    `scale` is the decimal scale of upstream's int64 mantissa (value = mantissa * 10^scale), None for an inf.Dec.
    `pointer` marks results of add()/sub(): upstream returns *Quantity there, whose Equal accepts a Quantity,
    while Quantity.Equal refuses a *Quantity ("no such overload"); kept so `==` answers as cel-go does.
    """

    __slots__ = ("key", "pointer", "scale", "text", "value")

    def __init__(self, value: Fraction, text: str | None = None, scale: int | None = 0, pointer: bool = False):
        self.value = value
        self.text = text
        self.scale = scale
        self.pointer = pointer
        # every quantity is a whole number of nano-units (parsing rounds up to 1n), so comparisons can use
        # an int instead of Fraction arithmetic
        nanos = value * _NANO
        self.key: int | Fraction = nanos.numerator if nanos.denominator == 1 else nanos

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """resource.ParseQuantity: raises CelEvalError with its error text."""
        value, scale = _parse_quantity(text)
        return cls(value, text, scale)

    def as_int64(self) -> int | None:
        """resource.Quantity.AsInt64: only an int64 mantissa of scale >= 0 that fits converts."""
        if self.scale is None or self.scale < 0:
            return None
        v = self.value
        if v.denominator != 1 or not _fits_int64(v.numerator):
            return None
        return v.numerator

    def plus(self, other: Quantity, sign: int) -> Quantity:
        """Quantity.Add/Sub: int64 mantissas at the smaller scale while they fit, else an inf.Dec."""
        value = self.value + sign * other.value
        scale: int | None = None
        if self.scale is not None and other.scale is not None:
            s = min(self.scale, other.scale)
            mantissa = value / Fraction(10) ** s
            if mantissa.denominator == 1 and _fits_int64(mantissa.numerator) and all(
                _fits_int64(int(q.value / Fraction(10) ** s)) for q in (self, other)
            ):
                scale = s
        return Quantity(value, None, scale, pointer=True)

    def __repr__(self) -> str:
        return f"quantity({self.text or str(self.value)!r})"


_NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")


def _semver_number(part: str, what: str) -> int:
    if not set(part) <= _NUMBERS:
        raise CelEvalError(f'Invalid character(s) found in {what} number "{part}"')
    if len(part) > 1 and part[0] == "0":
        raise CelEvalError(f'{what.capitalize()} number must not contain leading zeroes "{part}"')
    if not part:
        raise CelEvalError('strconv.ParseUint: parsing "": invalid syntax')
    value = int(part)
    if value > UINT64_MAX:
        raise CelEvalError(f'strconv.ParseUint: parsing "{part}": value out of range')
    return value


class Semver:
    """kubernetes.Semver: blang/semver v4's Version, parsed and compared as it does (build metadata ignored)."""

    __slots__ = ("build", "major", "minor", "patch", "pre")

    def __init__(self, major: int, minor: int, patch: int, pre: tuple[int | str, ...], build: tuple[str, ...]):
        self.major, self.minor, self.patch, self.pre, self.build = major, minor, patch, pre, build

    @classmethod
    def parse(cls, s: str) -> Semver:
        """semver.Parse (strict); raises CelEvalError with blang/semver's message."""
        if not s:
            raise CelEvalError("Version string empty")
        parts = s.split(".", 2)
        if len(parts) != 3:
            raise CelEvalError("No Major.Minor.Patch elements found")
        major = _semver_number(parts[0], "major")
        minor = _semver_number(parts[1], "minor")
        rest = parts[2]
        build: list[str] = []
        pre_parts: list[str] = []
        if "+" in rest:
            rest, _, meta = rest.partition("+")
            build = meta.split(".")
        if "-" in rest:
            rest, _, pre_text = rest.partition("-")
            pre_parts = pre_text.split(".")
        patch = _semver_number(rest, "patch")
        pre: list[int | str] = []
        for p in pre_parts:
            if not p:
                raise CelEvalError("Prerelease is empty")
            if set(p) <= _NUMBERS:
                if len(p) > 1 and p[0] == "0":
                    raise CelEvalError(f'Numeric PreRelease version must not contain leading zeroes "{p}"')
                pre.append(int(p))
            elif set(p) <= _ALPHANUM:
                pre.append(p)
            else:
                raise CelEvalError(f'Invalid character(s) found in prerelease "{p}"')
        for b in build:
            if not b:
                raise CelEvalError("Build meta data is empty")
            if not set(b) <= _ALPHANUM:
                raise CelEvalError(f'Invalid character(s) found in build meta data "{b}"')
        return cls(major, minor, patch, tuple(pre), tuple(build))

    @classmethod
    def parse_normalized(cls, s: str) -> Semver:
        """The semver(s, true) form: a leading v, leading zeroes and missing minor/patch are tolerated."""
        s = s.removeprefix("v")
        parts = s.split(".", 2)
        for i, p in enumerate(parts):
            if len(p) > 1:
                p = p.lstrip("0")
                if not p or p[0] not in "0123456789":
                    p = "0" + p
                parts[i] = p
        if len(parts) < 3:
            if "+" in parts[-1] or "-" in parts[-1]:
                raise CelEvalError("short version cannot contain PreRelease/Build meta data")
            parts += ["0"] * (3 - len(parts))
        return cls.parse(".".join(parts))

    def compare(self, other: Semver) -> int:
        a = (self.major, self.minor, self.patch)
        b = (other.major, other.minor, other.patch)
        if a != b:
            return 1 if a > b else -1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for x, y in zip(self.pre, other.pre, strict=False):
            if x == y:
                continue
            if type(x) is not type(y):
                return -1 if type(x) is int else 1
            return 1 if x > y else -1  # type: ignore[operator]
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(p) for p in self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self) -> str:
        return f"semver({str(self)!r})"


class IP:
    """net.IP: one address (netip.Addr; IPv4-mapped IPv6 addresses are refused on parse as upstream does)."""

    __slots__ = ("addr",)

    def __init__(self, addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
        self.addr = addr

    def __str__(self) -> str:
        return str(self.addr)

    def __repr__(self) -> str:
        return f"ip({str(self)!r})"


class CIDR:
    """net.CIDR: an address with a prefix length (netip.Prefix, not masked)."""

    __slots__ = ("addr", "bits")

    def __init__(self, addr: ipaddress.IPv4Address | ipaddress.IPv6Address, bits: int) -> None:
        self.addr = addr
        self.bits = bits

    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(f"{self.addr}/{self.bits}", strict=False)

    def __str__(self) -> str:
        return f"{self.addr}/{self.bits}"

    def __repr__(self) -> str:
        return f"cidr({str(self)!r})"


class URL:
    """kubernetes.URL: a parsed absolute URL (Go's url.URL as far as selectors read it)."""

    __slots__ = ("parts",)

    def __init__(self, parts: Any) -> None:
        self.parts = parts

    def __repr__(self) -> str:
        return f"url({self.parts.geturl()!r})"


TYPE_NAMES: dict[type, str] = {
    bool: "bool",
    int: "int",
    Uint: "uint",
    float: "double",
    str: "string",
    bytes: "bytes",
    type(None): "null_type",
    list: "list",
    tuple: "list",
    dict: "map",
    DefaultMap: "map",
    Quantity: "kubernetes.Quantity",
    Semver: "kubernetes.Semver",
    IP: "net.IP",
    CIDR: "net.CIDR",
    Optional: "optional_type",
    TypeValue: "type",
    URL: "kubernetes.URL",
}
# cel-go's Go type names, as `got 'types.Int', expected iterable type` shows them.
GO_TYPE_NAMES: dict[type, str] = {
    bool: "types.Bool",
    int: "types.Int",
    Uint: "types.Uint",
    float: "types.Double",
    str: "types.String",
    bytes: "types.Bytes",
    type(None): "types.Null",
    Quantity: "cel.Quantity",
    Semver: "cel.Semver",
    IP: "cel.IP",
    CIDR: "cel.CIDR",
    Optional: "*types.Optional",
    TypeValue: "*types.Type",
}


def type_name(value: Any) -> str:
    """The CEL type name of a runtime value (for type() and messages)."""
    return TYPE_NAMES.get(type(value), "dyn")


_NUMERIC = (int, Uint, float)
def equals(a: Any, b: Any) -> bool:
    """CEL's equality as containers use it (heterogeneous: different types are unequal, numbers compare by value
    across int/uint/double). Never raises: `in`, includes() and `!=` treat cel-go's Equal errors as unequal."""
    ta, tb = type(a), type(b)
    if ta is DefaultMap:
        ta = dict
    if tb is DefaultMap:
        tb = dict
    if ta is tb or (ta in _LISTS and tb in _LISTS):
        if ta is list or ta is tuple:
            return len(a) == len(b) and all(equals(x, y) for x, y in zip(a, b, strict=True))
        if ta is dict:
            if len(a) != len(b):
                return False
            for k, v in a.items():
                try:
                    found, other = lookup(b, k)
                except CelEvalError:
                    return False
                if not found or not equals(v, other):
                    return False
            return True
        if ta is Quantity:
            return not (b.pointer and not a.pointer) and bool(a.key == b.key)
        if ta is Semver:
            return bool(a.compare(b) == 0)
        if ta is IP:
            return bool(a.addr == b.addr)
        if ta is CIDR:
            return bool(a.addr == b.addr and a.bits == b.bits)
        if ta is Optional:
            if a.has_value != b.has_value:
                return False
            return not a.has_value or equals(a.value, b.value)
        return bool(a == b)
    if ta in _NUMERIC and tb in _NUMERIC:
        return bool(a == b)
    return False


def equals_operator(a: Any, b: Any) -> bool:
    """`==` itself: as equals, but a Kubernetes type on the left refuses another type ("no such overload"), as
    their Equal methods do (and a Quantity refuses the *Quantity that add() and sub() return)."""
    ta = type(a)
    if ta in _OPAQUE and a is not None and b is not None:
        tb = type(b)
        if tb is not ta or (ta is Quantity and b.pointer and not a.pointer):
            raise no_such_overload()
    return equals(a, b)


_LISTS = (list, tuple)
_OPAQUE = frozenset([Quantity, Semver, IP, CIDR])


def lookup(m: dict[Any, Any], key: Any) -> tuple[bool, Any]:
    """A map lookup with CEL's key rules: int, uint and integral doubles find each other; other doubles find
    nothing; only strings, ints, uints and bools are keys."""
    tk = type(key)
    if tk is float:
        if not key.is_integer():
            return False, None
        key = int(key)
    elif tk is not str and tk is not int and tk is not Uint and tk is not bool:
        if key is None:
            return False, None
        raise no_such_overload()
    if key in m:
        return True, m[key]
    return False, None


def compare(a: Any, b: Any) -> int:
    """CEL's ordering (<, <=, >, >=): numbers across int/uint/double, strings, bytes, bools; else no overload."""
    ta, tb = type(a), type(b)
    if ta in _NUMERIC and tb in _NUMERIC:
        return int((a > b) - (a < b))  # NaN orders as equal here; the operators answer false for it first
    if ta is tb and ta in (str, bytes, bool):
        return int((a > b) - (a < b))
    raise no_such_overload()
