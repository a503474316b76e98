"""Values as a person writes them in a manifest: YAML flow style (`[arm64, amd64]`, `{app: web}`).

Explanations quote the pod's own values back to its author ("drop requirement kubernetes.io/arch In
[arm64]"); Python's reprs (`['arm64']`) would be neither YAML nor what the manifest says. A string stays
plain unless YAML 1.1 (what kubectl reads) would take it for something else (`yes`, `1.5`, `~`, a leading
`*`, a `: ` inside...); then it is double-quoted, so the text can be pasted back into the manifest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

# A plain scalar that cannot start an indicator or hold one (conservative: anything else is quoted).
_PLAIN: Final = re.compile(r"[A-Za-z_/][A-Za-z0-9_./@+-]*")
# YAML 1.1 booleans and nulls, which a plain scalar of these words would become.
_NOT_STRINGS: Final = frozenset(
    {"y", "n", "yes", "no", "true", "false", "on", "off", "null", "~", "nan", "inf"}
)


def scalar(value: Any) -> str:
    """One scalar: plain when YAML 1.1 reads it back as the same string, else double-quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    text = str(value)
    if _PLAIN.fullmatch(text) and text.lower() not in _NOT_STRINGS:
        return text
    return json.dumps(text, ensure_ascii=False)


def flow(value: Any) -> str:
    """A value in YAML flow style: sequences `[a, b]`, mappings `{k: v}` (in their own order), scalars."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{scalar(k)}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return "[" + ", ".join(flow(v) for v in items) + "]"
    return scalar(value)
