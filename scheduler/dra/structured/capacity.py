"""Consumable capacity (DRAConsumableCapacity): what a request consumes of a device's capacities and whether it
fits (upstream structured/internal/incubating/consumable_capacity.go).

Amounts are exact rationals; each keeps the Format it was written in (`Qty`) because a consumed amount ends up
in the claim's status, where resource.Quantity renders it canonically in that format ("1Gi", "500m"). The
int64 range checks and the int64 arithmetic of the step rounding are upstream's (an unrepresentable request is
a fatal error, not a device that does not fit).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from scheduler.caching import switchable_lru_cache
from scheduler.framework.quantity import (
    DECIMAL_SI,
    QuantityError,
    canonical_quantity,
    parse_quantity,
    quantity_format,
    quantity_string,
    round_up_to_nano,
)

MAX_INT64 = 2**63 - 1

ERR_NOT_REPRESENTABLE = "capacity request cannot be represented in the device's range arithmetic"
ERR_NEGATIVE = "capacity value is negative"


class CapacityError(ValueError):
    """A capacity request the allocator must refuse outright (upstream aborts the allocation with it)."""


@dataclass(frozen=True, slots=True)
class Qty:
    """A resource.Quantity: its value, the Format that decides how it is written, and the text it was parsed
    from when resource.Quantity keeps that text (String() gives it back unchanged)."""

    value: Fraction
    fmt: str = DECIMAL_SI
    text: str | None = None

    def __str__(self) -> str:
        return self.text if self.text is not None else canonical_quantity(self.value, self.fmt)


@switchable_lru_cache(maxsize=4096)
def _parse_qty_text(raw: str) -> Qty:
    return Qty(round_up_to_nano(parse_quantity(raw)), quantity_format(raw), quantity_string(raw))


def parse_qty(raw: Any) -> Qty:
    """A quantity as the API serves it (a string, or a number in hand-written input); QuantityError if invalid."""
    if isinstance(raw, str):
        return _parse_qty_text(raw)
    if isinstance(raw, int) and not isinstance(raw, bool):
        return Qty(parse_quantity(raw))
    raise QuantityError(f"quantity must be a string, got {raw!r}")


@dataclass(frozen=True, slots=True)
class ValidRange:
    """CapacityRequestPolicyRange."""

    min: Qty | None
    max: Qty | None
    step: Qty | None


@dataclass(frozen=True, slots=True)
class RequestPolicy:
    """CapacityRequestPolicy: default, validValues or validRange."""

    default: Qty | None
    valid_values: tuple[Qty, ...] | None
    valid_range: ValidRange | None


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    """One entry of a device's `capacity`; `plain`: no request policy and not negative."""

    value: Qty
    policy: RequestPolicy | None
    plain: bool = False

    @classmethod
    def of(cls, value: Qty, policy: RequestPolicy | None) -> DeviceCapacity:
        return cls(value, policy, policy is None and value.value >= 0)


def plain_capacity(capacity: Mapping[str, DeviceCapacity]) -> bool:
    """No request policies and no negative values: asking nothing of such a device always fits it alone."""
    for cap in capacity.values():  # noqa: SIM110 -- no generator on the slice preparation path
        if not cap.plain:
            return False
    return True


def _opt_qty(raw: Mapping[str, Any], key: str) -> Qty | None:
    value = raw.get(key)
    return None if value is None else parse_qty(value)


@switchable_lru_cache(maxsize=1024)
def _plain_device_capacity(value: str) -> DeviceCapacity:
    return DeviceCapacity.of(parse_qty(value), None)


def parse_device_capacity(raw: Mapping[str, Any]) -> DeviceCapacity:
    """A DeviceCapacity object ({value, requestPolicy}); QuantityError/ValueError if malformed."""
    if len(raw) == 1:
        value = raw.get("value")
        if type(value) is str:  # the common shape, the same for every device of a model: parsed once
            return _plain_device_capacity(value)
    policy_raw = raw.get("requestPolicy")
    policy = None
    if isinstance(policy_raw, Mapping):
        values_raw = policy_raw.get("validValues")
        range_raw = policy_raw.get("validRange")
        policy = RequestPolicy(
            default=_opt_qty(policy_raw, "default"),
            valid_values=None if values_raw is None else tuple(parse_qty(v) for v in values_raw),
            valid_range=(
                None
                if not isinstance(range_raw, Mapping)
                else ValidRange(_opt_qty(range_raw, "min"), _opt_qty(range_raw, "max"), _opt_qty(range_raw, "step"))
            ),
        )
    elif policy_raw is not None:
        raise ValueError("requestPolicy must be an object")
    return DeviceCapacity.of(parse_qty(raw.get("value", "0")), policy)


def go_quote(text: str) -> str:
    """strconv.Quote for the printable names capacities have ("%q")."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _wrap64(value: int) -> int:
    """int64 arithmetic wraps around."""
    return (value + 2**63) % 2**64 - 2**63


def _go_div(a: int, b: int) -> int:
    """Go's integer division truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _go_mod(a: int, b: int) -> int:
    return a - b * _go_div(a, b)


def _scaled(value: Fraction, factor: int) -> int:
    """Quantity.Value()/MilliValue(): the scaled value rounded away from zero."""
    scaled = value * factor
    if scaled.denominator == 1:
        return scaled.numerator
    whole = abs(scaled.numerator) // scaled.denominator + 1
    return whole if scaled > 0 else -whole


def _safe_milli(q: Qty) -> int | None:
    """safeMilliValue: the milli value when it is exact and fits int64, else None."""
    milli = q.value * 1000
    if milli.denominator != 1 or abs(milli.numerator) > MAX_INT64:
        return None
    return milli.numerator


def _use_milli(valid: ValidRange, fractional: bool) -> bool:
    """Milli arithmetic when DRAFractionalCapacityRange is on and min/max/step are all exact in milli units."""
    if not fractional:
        return False
    for i, q in enumerate((valid.min, valid.max, valid.step)):
        if q is None:
            continue
        milli = _safe_milli(q)
        if milli is None or (i == 2 and milli < 1):
            return False
    return True


def _round_up_range(requested: Qty, valid: ValidRange, fractional: bool) -> Qty:
    """roundUpRange: at least min, then up to the next step from min."""
    assert valid.min is not None
    if requested.value < valid.min.value:
        return valid.min
    step = valid.step
    if step is None:
        return requested
    if _use_milli(valid, fractional):
        requested_milli = _safe_milli(requested)
        if requested_milli is None:
            raise CapacityError(f"{ERR_NOT_REPRESENTABLE}: request {requested} is not a representable milli value")
        step_milli = _scaled(step.value, 1000)
        min_milli = _scaled(valid.min.value, 1000)
        added = _wrap64(requested_milli - min_milli)
        n = _go_div(added, step_milli)
        if _go_mod(added, step_milli) != 0:
            n += 1
        if n > _go_div(_wrap64(MAX_INT64 - min_milli), step_milli):
            raise CapacityError(
                f"{ERR_NOT_REPRESENTABLE}: rounding request {requested} up to the next step passes the "
                "milli-value range"
            )
        value_milli = _wrap64(min_milli + _wrap64(step_milli * n))
        return Qty(Fraction(value_milli, 1000), step.fmt)
    if requested.value > MAX_INT64:
        raise CapacityError(f"{ERR_NOT_REPRESENTABLE}: request {requested} exceeds MaxInt64")
    requested_int = _scaled(requested.value, 1)
    step_int = _scaled(step.value, 1)
    min_int = _scaled(valid.min.value, 1)
    if step_int == 0:  # validation forbids a zero step; upstream would divide by zero
        raise CapacityError(f"{ERR_NOT_REPRESENTABLE}: step {step} is zero")
    added = _wrap64(requested_int - min_int)
    n = _go_div(added, step_int)
    if _go_mod(added, step_int) != 0:
        n += 1
    if min_int >= 0 and n > _go_div(MAX_INT64 - min_int, step_int):
        raise CapacityError(
            f"{ERR_NOT_REPRESENTABLE}: rounding request {requested} up to the next step passes MaxInt64"
        )
    return Qty(Fraction(_wrap64(min_int + _wrap64(step_int * n))), step.fmt)


def _round_up_valid_values(requested: Qty, values: tuple[Qty, ...]) -> Qty:
    """The first valid value at least the request (the list is sorted), else the request itself."""
    for value in values:
        if requested.value <= value.value:
            return value
    return requested


def consumed_amount(requested: Qty | None, capacity: DeviceCapacity, fractional: bool) -> Qty:
    """calculateConsumedCapacity: what a request (None: nothing asked for this capacity) consumes."""
    policy = capacity.policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return policy.default
        return capacity.value
    if policy is None:
        return requested
    if policy.valid_range is not None and policy.valid_range.min is not None:
        return _round_up_range(requested, policy.valid_range, fractional)
    if policy.valid_values is not None:
        return _round_up_valid_values(requested, policy.valid_values)
    return requested


def _violates_range(requested: Qty, valid: ValidRange, fractional: bool) -> bool:
    if valid.max is not None and requested.value > valid.max.value:
        return True
    if valid.step is not None:
        minimum = valid.min.value if valid.min is not None else Fraction(0)
        if _use_milli(valid, fractional):
            amount = _safe_milli(requested)
            if amount is None:
                return True
            step, low = _scaled(valid.step.value, 1000), _scaled(minimum, 1000)
        else:
            amount, step, low = _scaled(requested.value, 1), _scaled(valid.step.value, 1), _scaled(minimum, 1)
        if step == 0 or _go_mod(amount - low, step) != 0:  # a zero step (invalid) admits nothing
            return True
    return False


def violates_policy(requested: Qty, policy: RequestPolicy | None, fractional: bool) -> bool:
    """violatesPolicy: the consumed amount is not one the device's policy allows."""
    if policy is None:
        return False
    # Upstream compares the Quantity structs; validation keeps the default valid, so equal values suffice.
    if policy.default is not None and requested.value == policy.default.value:
        return False
    if policy.valid_range is not None:
        return _violates_range(requested, policy.valid_range, fractional)
    if policy.valid_values:
        return all(requested.value != value.value for value in policy.valid_values)
    return False


def request_fits(
    consumed_so_far: Mapping[str, Fraction],
    requests: Mapping[str, Qty] | None,
    capacity: Mapping[str, DeviceCapacity],
    allocating: Mapping[str, Fraction] | None,
    fractional: bool,
    plain: bool = False,
) -> bool:
    """CmpRequestOverCapacity: whether the request fits next to what allocated and allocating shares consume.

    False when the device lacks a requested capacity, a policy rejects the amount or the total passes the
    capacity; CapacityError (fatal) when an amount cannot be represented or is negative. `plain` is
    plain_capacity(capacity), which makes the common case (nothing asked, nothing shared) one test.
    """
    if plain and not requests and not consumed_so_far and not allocating:
        return True  # each amount consumed is the capacity itself
    if requests:
        for name in requests:
            if name not in capacity:
                return False
    consumed: dict[str, Qty] = {}
    for name, cap in capacity.items():
        requested = requests.get(name) if requests else None
        try:
            amount = consumed_amount(requested, cap, fractional)
        except CapacityError as err:
            raise CapacityError(f"capacity {go_quote(name)}: {err}") from None
        if amount.value < 0:
            raise CapacityError(f"capacity {go_quote(name)}: {ERR_NEGATIVE}")
        consumed[name] = amount
    for name, cap in capacity.items():
        amount = consumed[name]
        if violates_policy(amount, cap.policy, fractional):
            return False
        total = consumed_so_far.get(name, Fraction(0)) + amount.value
        if allocating is not None and name in allocating:
            total += allocating[name]
        if total > cap.value.value:
            return False
    return True


def consumed_by_request(
    requests: Mapping[str, Qty] | None, capacity: Mapping[str, DeviceCapacity], fractional: bool
) -> dict[str, Qty]:
    """GetConsumedCapacityFromRequest: what one share consumes of every capacity of the device."""
    consumed: dict[str, Qty] = {}
    for name, cap in capacity.items():
        requested = requests.get(name) if requests else None
        try:
            consumed[name] = consumed_amount(requested, cap, fractional)
        except CapacityError as err:
            raise CapacityError(f"capacity {go_quote(name)}: {err}") from None
    return consumed
