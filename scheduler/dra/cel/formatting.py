"""string.format as cel-go's strings extension v2 prints it (its en_US number printer included), and the
static check cel-go makes of a literal template."""

from __future__ import annotations

import math
import re
from typing import Any

from scheduler.dra.cel.functions import (
    define,
    format_double,
    traversal_price,
)
from scheduler.dra.cel.net import go_quote
from scheduler.dra.cel.values import (
    CelEvalError,
    DefaultMap,
    TypeValue,
    Uint,
    type_name,
)

# ---- strings: format (strings v2's formatting, with its en_US number printer) -------------------------------

_FORMAT_VERB = re.compile(r"%(?:\.(\d+))?(.)", re.DOTALL)
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _format_error(what: str, v: Any) -> CelEvalError:
    return CelEvalError(f"error during formatting: {what}, was given {type_name(v)}")


def _fixed(v: Any, precision: int | None) -> str:
    tv = type(v)
    if tv is str and v in ("NaN", "Infinity", "-Infinity"):
        return str(v)
    if tv is not float:
        raise _format_error("fixed-point clause can only be used on doubles", v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    return f"{v:,.{6 if precision is None else precision}f}"  # golang.org/x/text's en printer groups digits


def _scientific(v: Any) -> str:
    tv = type(v)
    if tv is str and v in ("NaN", "Infinity", "-Infinity"):
        return str(v)
    if tv is not float:
        raise _format_error("scientific clause can only be used on doubles", v)
    # cel-go formats "%<precision>e" (a width, not a precision): always six digits, printed by the en printer
    mantissa, _, exponent = f"{v:.6e}".partition("e")
    exp = int(exponent)
    return f"{mantissa}×10{'⁻' if exp < 0 else ''}{f'{abs(exp):02d}'.translate(_SUPERSCRIPT)}"


def _format_decimal(v: Any) -> str:
    if type(v) in (int, Uint):
        return str(int(v))
    raise _format_error("decimal clause can only be used on integers", v)


def _format_string(v: Any) -> str:
    tv = type(v)
    if tv in (list, tuple):
        return "[" + ", ".join(_quoted(x, _format_by_type(x)) for x in v) + "]"
    if tv in (dict, DefaultMap):
        pairs = []
        for k, x in v.items():
            if type(k) in (str, bool):
                key = _quoted(k, _format_string(k))
            elif type(k) in (int, Uint):
                key = str(int(k))
            else:
                raise CelEvalError(f"no formatting function for map key of type {type_name(k)}")
            pairs.append((key, _quoted(x, _format_by_type(x))))
        pairs.sort(key=lambda p: p[0])
        return "{" + ", ".join(f"{k}:{x}" for k, x in pairs) + "}"
    if tv is str:
        return str(v)
    if tv is bool:
        return "true" if v else "false"
    if tv in (int, Uint):
        return str(int(v))
    if tv is float:
        return format_double(v)
    if v is None:
        return "null"
    if tv is bytes:
        return str(v.decode("utf-8", errors="replace"))
    if tv is TypeValue:
        return str(v.name)
    raise _format_error("string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, "
                        "types, durations, and timestamps", v)


def _format_by_type(v: Any) -> str:
    """clauseForType: how a list element or map value prints inside %s."""
    tv = type(v)
    if tv in (int, Uint):
        return _format_decimal(v)
    if tv is float:
        return _fixed(v, None)
    return _format_string(v)


def _quoted(v: Any, text: str) -> str:
    tv = type(v)
    if tv is str:
        return go_quote(text)
    if tv is bytes:
        return "b" + go_quote(text)
    if tv is float and (math.isinf(v) or math.isnan(v)):
        return go_quote(text)
    return text


def _hex(v: Any, upper: bool) -> str:
    tv = type(v)
    if tv in (int, Uint):
        text = format(int(v), "x")
    elif tv is str:
        text = v.encode().hex()
    elif tv is bytes:
        text = v.hex()
    else:
        raise _format_error("only integers, byte buffers, and strings can be formatted as hex", v)
    return text.upper() if upper else text


def _format_value(verb: str, precision: str | None, v: Any) -> str:
    tv = type(v)
    if verb == "s":
        return _format_string(v)
    if verb == "d":
        return _format_decimal(v)
    if verb == "f":
        return _fixed(v, int(precision) if precision is not None else None)
    if verb == "e":
        return _scientific(v)
    if verb in "xX":
        return _hex(v, verb == "X")
    if verb == "o":
        if tv in (int, Uint):
            return format(int(v), "o")
        raise _format_error("octal clause can only be used on integers", v)
    if tv in (int, Uint):
        return format(int(v), "b")
    if tv is bool:
        return "1" if v else "0"
    raise _format_error("only integers and bools can be formatted as binary", v)


def format_clauses(template: str) -> list[tuple[str, str | None]]:
    """The (verb, precision) of each clause; raises CelEvalError for an unknown one (cel-go's words)."""
    clauses = []
    for m in _FORMAT_VERB.finditer(template):
        verb = m.group(2)
        if verb == "%":
            continue
        if verb not in "sdfeExXob":
            raise CelEvalError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')
        clauses.append((verb, m.group(1)))
    return clauses


def _format(template: str, args: Any) -> str:
    out: list[str] = []
    pos = 0
    index = 0
    for m in _FORMAT_VERB.finditer(template):
        out.append(template[pos : m.start()])
        pos = m.end()
        verb = m.group(2)
        if verb == "%":
            out.append("%")
            continue
        if verb not in "sdfeExXob":
            raise CelEvalError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')
        if index >= len(args):
            raise CelEvalError(f"index {index} out of range")
        out.append(_format_value("e" if verb == "E" else verb, m.group(1), args[index]))
        index += 1
    out.append(template[pos:])
    return "".join(out)


# The static types each clause accepts (the format validator's check of a literal call).
FORMAT_CLAUSE_TYPES: dict[str, tuple[frozenset[str], str]] = {
    "d": (frozenset(["int", "uint"]), "decimal clause can only be used on integers"),
    "f": (frozenset(["double", "string"]), "fixed-point clause can only be used on doubles"),
    "e": (frozenset(["double", "string"]), "scientific clause can only be used on doubles"),
    "o": (frozenset(["int", "uint"]), "octal clause can only be used on integers"),
    "b": (frozenset(["int", "uint", "bool"]), "only integers and bools can be formatted as binary"),
    "x": (frozenset(["int", "uint", "string", "bytes"]),
          "only integers, byte buffers, and strings can be formatted as hex"),
    "s": (frozenset(["string", "bool", "bytes", "int", "uint", "double", "map", "list", "type", "null_type",
                     "google.protobuf.Timestamp", "google.protobuf.Duration"]),
          "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, "
          "and timestamps"),
}


define("format", "string.format(list(dyn)) -> string", _format, cost=traversal_price(0))
