"""Every function of the DRA CEL environment, registered: functions.py (cel-go's standard library and
extensions, Kubernetes' quantity, semver, regex and lists) and the modules of the larger libraries."""

from __future__ import annotations

from scheduler.dra.cel import formats, formatting, net
from scheduler.dra.cel.formatting import FORMAT_CLAUSE_TYPES, format_clauses
from scheduler.dra.cel.functions import (
    FUNCTIONS,
    TYPE_IDENTS,
    Function,
    Overload,
    compile_regex,
    self_compare_cost,
    size_of,
)

__all__ = [
    "FORMAT_CLAUSE_TYPES",
    "FUNCTIONS",
    "TYPE_IDENTS",
    "Function",
    "Overload",
    "compile_regex",
    "format_clauses",
    "formats",
    "formatting",
    "net",
    "self_compare_cost",
    "size_of",
]
