"""Helpers for strict decoding error messages, shared by the config loader and plugin args parsers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


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
