"""DynamicResourcesArgs (kubescheduler.config.k8s.io/v1): decoded strictly, defaulted and validated like
upstream's (apis/config/v1/defaults.go, validation_pluginargs.go) with the gates of v1.37.2:
DRASchedulerFilterTimeout (beta, on) and DRADeviceBindingConditions + DRAResourceClaimDeviceStatus (on).

- `filterTimeout` (default 10s, >= 0; 0 turns it off): how long Filter may search devices for one node
  before the attempt fails with an Error (and is retried after backoff).
- `bindingTimeout` (default 600s, >= 1s): how long PreBind waits for the binding conditions of the
  allocated devices, and after which an allocated claim whose conditions are not met is released.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from scheduler.config.decode import (
    ARGS_ENVELOPE_FIELDS,
    FieldErrors,
    as_mapping,
    check_fields,
    check_kind,
    child,
    decode_error,
    json_quote,
    json_type,
)
from scheduler.config.load import parse_duration

DEFAULT_FILTER_TIMEOUT: Final = 10.0
DEFAULT_BINDING_TIMEOUT: Final = 600.0
_FIELDS: Final = frozenset({"filterTimeout", "bindingTimeout"}) | ARGS_ENVELOPE_FIELDS


@dataclass(frozen=True, slots=True)
class Args:
    """DynamicResourcesArgs after defaulting, in seconds."""

    filter_timeout: float = DEFAULT_FILTER_TIMEOUT
    binding_timeout: float = DEFAULT_BINDING_TIMEOUT


def go_duration(seconds: float) -> str:
    """time.Duration.String for whole nanoseconds: "10s", "1m30s", "1.5s", "500ms", "0s"."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _decimal(ns, size) + unit
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _decimal(rest, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


class GoDuration(float):
    """A duration in seconds that field errors render as Go renders a metav1.Duration (its String())."""

    def __repr__(self) -> str:
        return go_duration(self)


def _decimal(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = str(frac).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def _duration(raw: Mapping[str, Any], key: str, path: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    where = child(path, key)
    if not isinstance(value, str):
        decode_error(where, f"must be a duration string like \"10s\", got {json_type(value)} {json_quote(value)}")
    try:
        return parse_duration(value)
    except ValueError as exc:
        decode_error(where, str(exc))


def parse_args(raw: Mapping[str, Any] | None, *, path: str = "") -> Args:
    """Decode strictly, default (10s, 600s) and validate ("must be zero or positive", "must be at least 1
    second", with the value as Go prints a duration)."""
    raw = as_mapping(raw or {}, path)
    check_fields(raw, _FIELDS, path)
    check_kind(raw, "DynamicResourcesArgs", path)
    filter_timeout = _duration(raw, "filterTimeout", path)
    binding_timeout = _duration(raw, "bindingTimeout", path)
    errs = FieldErrors()
    if filter_timeout is not None and filter_timeout < 0:
        errs.invalid(child(path, "filterTimeout"), GoDuration(filter_timeout), "must be zero or positive")
    if binding_timeout is not None and binding_timeout < 1:
        errs.invalid(child(path, "bindingTimeout"), GoDuration(binding_timeout), "must be at least 1 second")
    errs.raise_if_any()
    return Args(
        DEFAULT_FILTER_TIMEOUT if filter_timeout is None else filter_timeout,
        DEFAULT_BINDING_TIMEOUT if binding_timeout is None else binding_timeout,
    )
