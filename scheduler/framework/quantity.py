"""Kubernetes resource quantities ("500m", "1Gi", "1e3") parsed exactly, rounded up like resource.Quantity.

Parsing cost is bounded whatever the input: a quantity longer than MAX_QUANTITY_LENGTH characters or with a
magnitude beyond 10**MAX_DECIMAL_MAGNITUDE is refused (resource.Quantity would overflow int64 there anyway),
and exponents far below the nano scale are clamped (every positive amount that small rounds up to the same
smallest unit), so "1e999999999" or a thousand-digit number costs microseconds, not minutes.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Final

from scheduler.caching import switchable_lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# ASCII digits only, as Go's parser: Python's \d (and Fraction, int) also take "١" (ARABIC-INDIC DIGIT ONE).
_QUANTITY = re.compile(r"^([+-]?)([0-9]+\.?[0-9]*|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")


MAX_QUANTITY_LENGTH = 100
MAX_DECIMAL_MAGNITUDE = 30  # 10**30 is far beyond int64 (9.2e18) even in milli units
_MIN_EXPONENT = -40  # below this every positive value rounds up to the same 1n / 1m / 1


class QuantityError(ValueError):
    """A string that is not a valid Kubernetes quantity."""


@switchable_lru_cache(maxsize=4096, typed=True)
def parse_quantity(text: str | int | float) -> Fraction:
    """Parse a quantity into an exact rational number of base units (cores, bytes, ...)."""
    if isinstance(text, bool):
        raise QuantityError(f"quantity must be a string or number, got {text!r}")
    if isinstance(text, int):
        if abs(text) >= 10**MAX_DECIMAL_MAGNITUDE:
            raise QuantityError(f"quantity too large: {str(text)[:20]}... ({len(str(text))} digits)")
        return Fraction(text)
    if isinstance(text, float):
        if text != text or text in (float("inf"), float("-inf")) or abs(text) >= 10.0**MAX_DECIMAL_MAGNITUDE:
            raise QuantityError(f"quantity out of range: {text!r}")
        return Fraction(str(text))
    if not isinstance(text, str):
        raise QuantityError(f"quantity must be a string or number, got {type(text).__name__}")
    if len(text) > MAX_QUANTITY_LENGTH:
        raise QuantityError(f"quantity too long ({len(text)} characters): {text[:20]!r}...")
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(
            f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', "
            f"got {text!r}"
        )
    sign, number, suffix = match.groups()
    value = Fraction(number)
    if value == 0:
        return value
    integer_digits = len(number.split(".")[0].lstrip("0"))
    if suffix:
        if suffix in _BINARY:
            value *= _BINARY[suffix]
            integer_digits += len(str(_BINARY[suffix]))
        elif suffix in _DECIMAL:
            value *= _DECIMAL[suffix]
        else:
            exponent = int(suffix[1:]) if len(suffix) < 12 else (1 if suffix[1] != "-" else -1) * 10**12
            if integer_digits + exponent > MAX_DECIMAL_MAGNITUDE:
                raise QuantityError(f"quantity too large: {text!r}")
            value *= Fraction(10) ** max(exponent, _MIN_EXPONENT)
            integer_digits += exponent
    if integer_digits > MAX_DECIMAL_MAGNITUDE and value != 0:
        raise QuantityError(f"quantity too large: {text!r}")
    return -value if sign == "-" else value


_DECIMAL_SUFFIXES: Final = ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, ""), (-3, "m"),
                            (-6, "u"), (-9, "n"))
_BINARY_SUFFIXES: Final = ((60, "Ei"), (50, "Pi"), (40, "Ti"), (30, "Gi"), (20, "Mi"), (10, "Ki"))


def canonical(text: str | int | float) -> str:
    """Quantity.String() of a valid quantity, as field errors print it: "1.5" is "1500m", "1024Mi" "1Gi",
    "2000" "2k"; binary suffixes stay binary for whole values of 1024 or more; below 1n rounds up to it."""
    value = parse_quantity(text)
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    value = abs(value)
    binary = isinstance(text, str) and text.strip().endswith("i")
    if binary and value >= 1024 and value.denominator == 1:
        number = int(value)
        for shift, suffix in _BINARY_SUFFIXES:
            if number % (1 << shift) == 0:
                return f"{sign}{number >> shift}{suffix}"
        return f"{sign}{number}"
    exponent_form = isinstance(text, str) and ("e" in text or "E" in text)
    nanos = _ceil(value * 10**9)
    for power, suffix in _DECIMAL_SUFFIXES:
        if nanos % 10 ** (power + 9) == 0:
            mantissa = nanos // 10 ** (power + 9)
            if exponent_form:
                return f"{sign}{mantissa}" + (f"e{power}" if power else "")
            return f"{sign}{mantissa}{suffix}"
    return f"{sign}{nanos}n"  # pragma: no cover - every integer is a multiple of 10**0


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


@switchable_lru_cache(maxsize=4096, typed=True)
def value_of(text: str | int | float) -> int:
    """Quantity.Value(): the integer value, rounded up (so "0.5" bytes is 1)."""
    return _ceil(parse_quantity(text))


@switchable_lru_cache(maxsize=4096, typed=True)
def milli_value_of(text: str | int | float) -> int:
    """Quantity.MilliValue(): thousandths, rounded up (so "0.0001" cpu is 1m)."""
    return _ceil(parse_quantity(text) * 1000)
