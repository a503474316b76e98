"""Quantity parsing: exact values and the round-up of Quantity.Value()/MilliValue()."""

from __future__ import annotations

from fractions import Fraction

import pytest

from scheduler.framework.quantity import QuantityError, milli_value_of, parse_quantity, quantity_string, value_of


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("0", Fraction(0), id="zero"),
        pytest.param("1", Fraction(1), id="plain"),
        pytest.param("500m", Fraction(1, 2), id="milli"),
        pytest.param("1.5", Fraction(3, 2), id="decimal-fraction"),
        pytest.param(".5", Fraction(1, 2), id="leading-dot"),
        pytest.param("1.", Fraction(1), id="trailing-dot"),
        pytest.param("+2", Fraction(2), id="plus-sign"),
        pytest.param("-2", Fraction(-2), id="minus-sign"),
        pytest.param("100n", Fraction(1, 10**7), id="nano"),
        pytest.param("3u", Fraction(3, 10**6), id="micro"),
        pytest.param("1k", Fraction(1000), id="kilo"),
        pytest.param("1M", Fraction(10**6), id="mega"),
        pytest.param("2G", Fraction(2 * 10**9), id="giga"),
        pytest.param("1T", Fraction(10**12), id="tera"),
        pytest.param("1P", Fraction(10**15), id="peta"),
        pytest.param("1E", Fraction(10**18), id="exa"),
        pytest.param("1Ki", Fraction(1024), id="kibi"),
        pytest.param("1Mi", Fraction(2**20), id="mebi"),
        pytest.param("1.5Gi", Fraction(3 * 2**29), id="fractional-gibi"),
        pytest.param("1Ti", Fraction(2**40), id="tebi"),
        pytest.param("1Pi", Fraction(2**50), id="pebi"),
        pytest.param("1Ei", Fraction(2**60), id="exbi"),
        pytest.param("1e3", Fraction(1000), id="exponent"),
        pytest.param("1E3", Fraction(1000), id="capital-exponent"),
        pytest.param("5e-3", Fraction(5, 1000), id="negative-exponent"),
        pytest.param("2e+2", Fraction(200), id="explicit-positive-exponent"),
        pytest.param(3, Fraction(3), id="json-integer"),
        pytest.param(0.25, Fraction(1, 4), id="json-float"),
        pytest.param(" 1Gi ", Fraction(2**30), id="surrounding-space-trimmed-like-json-decoding"),
    ],
)
def test_parse_quantity(text: str | int | float, want: Fraction) -> None:
    """Every suffix family parses to the exact number of base units."""
    assert parse_quantity(text) == want


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("abc", id="letters"),
        pytest.param("1 Gi", id="inner-space"),
        pytest.param("1K", id="capital-k-is-not-a-suffix"),
        pytest.param("1KB", id="bytes-suffix"),
        pytest.param("1ki", id="lowercase-binary"),
        pytest.param("1e", id="exponent-without-digits"),
        pytest.param("1Gi1", id="trailing-digits"),
        pytest.param("--1", id="double-sign"),
        pytest.param("1.2.3", id="two-dots"),
        pytest.param(True, id="boolean"),
        pytest.param("\u0661", id="arabic-indic-digit"),  # Python's \d and Fraction take it; Go's parser does not
        pytest.param("1\u0660m", id="arabic-indic-zero-inside"),
        pytest.param("\uff11Gi", id="fullwidth-digit"),
        pytest.param("1e\u0663", id="non-ascii-exponent"),
    ],
)
def test_invalid_quantities(text: str | bool) -> None:
    """Malformed quantities raise QuantityError (a ValueError) instead of parsing to something."""
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        pytest.param("1", 1, 1000, id="one"),
        pytest.param("100m", 1, 100, id="milli-rounds-value-up"),
        pytest.param("0.0001", 1, 1, id="sub-milli-rounds-up"),
        pytest.param("1.0005", 2, 1001, id="half-milli-rounds-up"),
        pytest.param("1n", 1, 1, id="nano"),
        pytest.param("250m", 1, 250, id="quarter"),
        pytest.param("1Gi", 2**30, 2**30 * 1000, id="gibi"),
        pytest.param("0.5Ki", 512, 512_000, id="half-kibi"),
        pytest.param("0", 0, 0, id="zero"),
    ],
)
def test_value_and_milli_value_round_up(text: str, value: int, milli: int) -> None:
    """Value() and MilliValue() are ceilings, so a tiny request never becomes zero."""
    assert value_of(text) == value
    assert milli_value_of(text) == milli


def test_error_names_the_bad_text() -> None:
    """The error message quotes the offending text so the caller can name the field."""
    with pytest.raises(QuantityError, match="'12ab'"):
        parse_quantity("12ab")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("1e999999999", id="huge-exponent"),
        pytest.param("9" * 99, id="99-digits"),
        pytest.param("1" * 101, id="too-long"),
        pytest.param("1e30", id="beyond-bound"),
        pytest.param(10**40, id="huge-int"),
        pytest.param(float("inf"), id="inf"),
    ],
)
def test_absurd_quantities_are_refused_at_once(text: str | int | float) -> None:
    """Parsing cost is bounded: what no int64 quantity can be is refused, not computed."""
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        pytest.param("1e-999999999", 1, 1, id="tiny-rounds-up"),
        pytest.param("0e999999999", 0, 0, id="zero-any-exponent"),
        pytest.param("1e29", 10**29, 10**32, id="largest-accepted-magnitude"),
    ],
)
def test_extreme_but_exact(text: str, value: int, milli: int) -> None:
    """Tiny positive amounts still round up to one unit; zero is zero whatever the exponent."""
    assert value_of(text) == value
    assert milli_value_of(text) == milli


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # Printed by resource.MustParse(text).String() of k8s.io/apimachinery v0.37.2.
        pytest.param("1Gi", "1Gi", id="1Gi"),
        pytest.param("1024Mi", "1Gi", id="1024Mi"),
        pytest.param("1536Mi", "1536Mi", id="1536Mi"),
        pytest.param("1500m", "1500m", id="1500m"),
        pytest.param("1.5", "1500m", id="1.5"),
        pytest.param("0.1", "100m", id="0.1"),
        pytest.param("1000", "1k", id="1000"),
        pytest.param("1k", "1k", id="1k"),
        pytest.param("2048", "2048", id="2048"),
        pytest.param("1e3", "1e3", id="1e3"),
        pytest.param("1E3", "1E3", id="1E3"),
        pytest.param("100m", "100m", id="100m"),
        pytest.param("0", "0", id="0"),
        pytest.param("1M", "1M", id="1M"),
        pytest.param("1500", "1500", id="1500"),
        pytest.param("0.5Ki", "512", id="0.5Ki"),
        pytest.param("1023Ki", "1023Ki", id="1023Ki"),
        pytest.param("-1Gi", "-1Gi", id="-1Gi"),
        pytest.param("12e-1", "1200e-3", id="12e-1"),
        pytest.param("1.0000000001", "1000000001n", id="1.0000000001"),
        pytest.param("0.0001Ki", "102400u", id="0.0001Ki"),
        pytest.param("1000000000000000000000", "1", id="1000000000000000000000"),
        pytest.param("1000000000000000000002", "1000000000000000000002", id="1000000000000000000002"),
        pytest.param("3Mi", "3Mi", id="3Mi"),
        pytest.param("1025", "1025", id="1025"),
        pytest.param("123456789", "123456789", id="123456789"),
        pytest.param("7e9", "7e9", id="7e9"),
        pytest.param("0.000001", "1u", id="0.000001"),
        pytest.param("1u", "1u", id="1u"),
        pytest.param("2n", "2n", id="2n"),
        pytest.param("+2", "+2", id="+2"),
        pytest.param("0012", "0012", id="0012"),
        pytest.param("00", "0", id="00"),
        pytest.param("0.50", "500m", id="0.50"),
        pytest.param("2.5Gi", "2560Mi", id="2.5Gi"),
        pytest.param("8Gi", "8Gi", id="8Gi"),
        pytest.param("9Gi", "9Gi", id="9Gi"),
        pytest.param("1.000", "1", id="1.000"),
        pytest.param("10e3", "10e3", id="10e3"),
        pytest.param("0.3", "300m", id="0.3"),
        pytest.param("300m", "300m", id="300m"),
        pytest.param("4", "4", id="4"),
        pytest.param("250m", "250m", id="250m"),
        pytest.param("1Ki", "1Ki", id="1Ki"),
        pytest.param("1536", "1536", id="1536"),
        pytest.param("1.5k", "1500", id="1.5k"),
        pytest.param("100000", "100k", id="100000"),
        pytest.param("1e-3", "1e-3", id="1e-3"),
        pytest.param("5e-12", "1e-9", id="5e-12"),
    ],
)
def test_quantity_string(text: str, want: str) -> None:
    """Quantity.String() after ParseQuantity, as Go writes it back: kept text or canonical form, byte for byte."""
    assert quantity_string(text) == want
