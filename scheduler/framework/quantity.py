"""Kubernetes resource quantities ("500m", "1Gi", "1e3") parsed exactly, rounded up like resource.Quantity.

Parsing cost is bounded whatever the input: a quantity longer than MAX_QUANTITY_LENGTH characters or with a
magnitude beyond 10**MAX_DECIMAL_MAGNITUDE is refused (resource.Quantity would overflow int64 there anyway),
and exponents far below the nano scale are clamped (every positive amount that small rounds up to the same
smallest unit), so "1e999999999" or a thousand-digit number costs microseconds, not minutes.
"""

from __future__ import annotations

import re
from fractions import Fraction

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


# resource.Quantity's formats: how ParseQuantity remembers a quantity was written, which decides its canonical
# String() ("1Gi" stays binary, "1G" decimal, "1e9" exponent).
DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

_NANO = 10**9
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


def quantity_format(text: str) -> str:
    """The Format resource.ParseQuantity gives `text` (a valid quantity): its suffix decides it."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(f"quantities must match the regular expression, got {text!r}")
    suffix = match.group(3) or ""
    if suffix in _BINARY:
        # A binary amount between 0 and 1 is shown in decimal ("0.0001Ki" is 102400u).
        value = parse_quantity(text)
        return DECIMAL_SI if 0 < abs(value) < 1 else BINARY_SI
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return DECIMAL_EXPONENT
    return DECIMAL_SI


def round_up_to_nano(value: Fraction) -> Fraction:
    """What ParseQuantity keeps of a value: nano precision, rounded away from zero (1e-10 is 1n)."""
    if (value * _NANO).denominator == 1:
        return value
    scaled = value * _NANO
    whole = -((-scaled.numerator) // scaled.denominator) if scaled > 0 else scaled.numerator // scaled.denominator
    return Fraction(whole, _NANO)


def canonical_quantity(value: Fraction, fmt: str) -> str:
    """resource.Quantity.String() of a value (nano precision) in a format: "1Gi", "1500m", "2k", "1e3"."""
    if value == 0:
        return "0"
    if fmt == BINARY_SI and not (-1024 < value < 1024) and value.denominator == 1:
        mantissa, exponent = int(value), 0
        while mantissa % 1024 == 0 and exponent < len(_BINARY_SUFFIXES) - 1:
            mantissa //= 1024
            exponent += 1
        return f"{mantissa}{_BINARY_SUFFIXES[exponent]}"
    # Decimal: the value as mantissa * 10**exponent with the largest exponent that is a multiple of 3.
    exponent = -9
    number = int(round_up_to_nano(value) * _NANO)
    while number % 10 == 0:
        number //= 10
        exponent += 1
    while exponent % 3:
        number *= 10
        exponent -= 1
    if fmt == DECIMAL_EXPONENT:
        return f"{number}e{exponent}" if exponent else str(number)
    return f"{number}{_DECIMAL_SUFFIXES.get(exponent, '')}"


_DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SPLIT = re.compile(r"^([+-]?)0*(\d*)(?:\.(\d*))?(.*)$")


def quantity_string(text: str) -> str:
    """Quantity.String() of ParseQuantity(text) (a valid quantity), which is what JSON round-trips write.

    ParseQuantity keeps the text itself when it is already in a form String() accepts (so "1E3" and "+2"
    stay as written, "1024Mi" becomes "1Gi" and "1.5" becomes "1500m"); otherwise the canonical form.
    """
    text = text.strip()
    fmt = quantity_format(text)
    if text == "0":
        return text
    match = _SPLIT.match(text)
    if match is not None:
        num, denom, suffix = match.group(2) or "0", match.group(3) or "", match.group(4)
        if suffix in _BINARY_EXPONENTS:
            exponent, scale = _BINARY_EXPONENTS[suffix], 0
            precision = 15 - len(num) - exponent * 3 // 10 - 1 if not denom else -1
        else:
            exponent = _DECIMAL_EXPONENTS[suffix] if suffix in _DECIMAL_EXPONENTS else int(suffix[1:])
            scale, precision = exponent, 18 - len(num) - len(denom)
        if precision >= 0 and scale - len(denom) >= -9:
            scale -= len(denom)
            shifted = num + denom
            value = int(shifted)
            if suffix in _BINARY_EXPONENTS:
                if value << exponent <= 2**63 - 1 and value & 0x07 != 0:
                    return text
            elif abs(value) <= 2**63 - 1 and scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
                return text
    return canonical_quantity(round_up_to_nano(parse_quantity(text)), fmt)
