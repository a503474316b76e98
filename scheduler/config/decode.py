"""Strict decoding of configuration and plugin args, with upstream's error texts: the helpers the config
loader and every plugin's args parser share (which fields a block may have, which types its values must be),
and the field-error list that validation collects, formatted like apimachinery's `field.Error`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, NoReturn

from scheduler.config.errors import ConfigError

ARGS_ENVELOPE_FIELDS: Final = frozenset({"apiVersion", "kind"})
"""The fields any plugin's args may carry besides its own."""


def json_type(value: Any) -> str:
    """The JSON/YAML type name of a decoded value, for decoding errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__


def json_quote(value: Any) -> str:
    """A value as it would appear in JSON/YAML: strings in double quotes."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def child(path: str, name: str) -> str:
    """field.Path.Child: "a.b", or just "b" at the root."""
    return f"{path}.{name}" if path else name


# ---------------------------------------------------------------------------------------------------------
# Field errors, formatted like k8s.io/apimachinery/pkg/util/validation/field


def go_value(value: Any) -> str:
    """Render a bad value the way field.Error.ErrorBody does (%v for numbers, %q for strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


class FieldErrors:
    """Collects validation errors and raises them as one ConfigError, like field.ErrorList.ToAggregate."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def _add(self, msg: str) -> None:
        if msg not in self.messages:  # ToAggregate drops duplicate messages
            self.messages.append(msg)

    def invalid(self, path: str, value: Any, detail: str) -> None:
        self._add(f"{path}: Invalid value: {go_value(value)}: {detail}")

    def required(self, path: str, detail: str) -> None:
        self._add(f"{path}: Required value: {detail}")

    def forbidden(self, path: str, detail: str) -> None:
        self._add(f"{path}: Forbidden: {detail}")

    def duplicate(self, path: str, value: Any) -> None:
        self._add(f"{path}: Duplicate value: {go_value(value)}")

    def not_supported(self, path: str, value: Any, supported: Sequence[str]) -> None:
        values = ", ".join(go_value(v) for v in sorted(supported))
        self._add(f"{path}: Unsupported value: {go_value(value)}: supported values: {values}")

    def raise_if_any(self) -> None:
        """Raise the aggregate: one message as is, several as "[a, b]" (utilerrors.aggregate.Error)."""
        if not self.messages:
            return
        if len(self.messages) == 1:
            raise ConfigError(self.messages[0])
        raise ConfigError("[" + ", ".join(self.messages) + "]")


def decode_error(path: str, detail: str) -> NoReturn:
    """A decoding (not validation) failure: upstream aborts before validating anything."""
    raise ConfigError(f"{path}: {detail}" if path else detail)


def check_fields(raw: Mapping[str, Any], allowed: frozenset[str], path: str) -> None:
    """Strict decoding: any key outside `allowed` is an error naming where it sits."""
    for key in raw:
        if key not in allowed:
            decode_error(path, f"unknown field {json_quote(key)}")


def as_mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        decode_error(path, f"must be a mapping, got {json_type(value)}")
    return value


def as_list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        decode_error(path, f"must be a list, got {json_type(value)}")
    return list(value)


def as_int(value: Any, path: str, bits: int = 64) -> int:
    """An integer field (Go int32/int64): other types and out-of-range values are decoding errors."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        decode_error(path, f"must be an integer, got {json_type(value)} {json_quote(value)}")
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        decode_error(path, f"out of range, got {value}")
    return value


def as_str(value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        decode_error(path, f"must be a string, got {json_type(value)} {json_quote(value)}")
    return value


def check_kind(raw: Mapping[str, Any], kind: str, path: str) -> None:
    """Args may carry apiVersion/kind; a different kind is the wrong args type for this plugin."""
    got = raw.get("kind")
    if got not in (None, "", kind):
        decode_error(child(path, "kind"), f"want args to be of type {kind}, got {json_quote(got)}")
