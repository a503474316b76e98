"""Kubernetes' format library for CEL: named string formats (format.dns1123Label(), format.named(...)) and
validate(), with apimachinery's validation messages."""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.dra.cel.functions import (
    RUNTIME_KINDS,
    cost_ceil,
    define,
    size_of,
    unit_cost,
)
from scheduler.dra.cel.net import parse_url
from scheduler.dra.cel.values import (
    NONE,
    TYPE_NAMES,
    CelEvalError,
    Optional,
)
from scheduler.framework.labels import label_key_errors, label_value_errors, regex_error

# ---- Kubernetes: the format library (named string formats and their validators) ------------------------------

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + "(\\." + _DNS1123_LABEL + ")*"
_DNS1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?"


def _full(regex: str) -> re.Pattern[str]:
    return re.compile("^(?:" + regex + ")$")


_RX = {name: _full(rx) for name, rx in (("label", _DNS1123_LABEL), ("subdomain", _DNS1123_SUBDOMAIN),
                                        ("1035", _DNS1035_LABEL))}
_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
              "start and end with an alphanumeric character")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                  "and must start and end with an alphanumeric character")
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character")

def _go_len(s: str) -> int:
    return len(s.encode())


def _dns1123_label(s: str) -> list[str]:
    errs = []
    if _go_len(s) > 63:
        errs.append("must be no more than 63 characters")
    if not _RX["label"].match(s):
        if _RX["subdomain"].match(s):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_LABEL_MSG, _DNS1123_LABEL, "my-name", "123-abc"))
    return errs


def _dns1123_subdomain(s: str, unit: str = "characters") -> list[str]:
    errs = []
    if _go_len(s) > 253:
        errs.append(f"must be no more than 253 {unit}")
    if not _RX["subdomain"].match(s):
        errs.append(regex_error(_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN, "example.com"))
    return errs


def _dns1035_label(s: str) -> list[str]:
    errs = []
    if _go_len(s) > 63:
        errs.append("must be no more than 63 characters")
    if not _RX["1035"].match(s):
        errs.append(regex_error(_DNS1035_MSG, _DNS1035_LABEL, "my-name", "abc-123"))
    return errs


def _mask_trailing_dash(s: str) -> str:
    return s[:-2] + "a" if len(s) > 1 and s.endswith("-") else s


def _uri(s: str) -> list[str]:
    try:
        parse_url(s)
    except CelEvalError:
        return [f'parse "{s}": invalid URI for request']
    return []


_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.IGNORECASE)
_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
_TIME_OF_DAY = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")


def _is_date(s: str) -> bool:
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", s)
    if m is None:
        return False
    try:
        datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return False
    return True


def _is_datetime(s: str) -> bool:
    if len(s) < 4:
        return False
    parts = s.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _TIME_OF_DAY.search(parts[1])
    return m is not None and m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


@dataclass(frozen=True)
class NamedFormat:
    """kubernetes.NamedFormat: a named string format with its validator (format.dns1123Label(), ...)."""

    name: str
    validate: Callable[[str], list[str]]
    max_regex_size: int


FORMATS: dict[str, NamedFormat] = {
    "dns1123Label": NamedFormat("DNS1123Label", _dns1123_label, 30),
    "dns1123Subdomain": NamedFormat("DNS1123Subdomain", _dns1123_subdomain, 60),
    "dns1035Label": NamedFormat("DNS1035Label", _dns1035_label, 30),
    "qualifiedName": NamedFormat("QualifiedName", label_key_errors, 60),
    "dns1123LabelPrefix": NamedFormat("DNS1123LabelPrefix", lambda s: _dns1123_label(_mask_trailing_dash(s)), 30),
    "dns1123SubdomainPrefix": NamedFormat("DNS1123SubdomainPrefix",
                                          lambda s: _dns1123_subdomain(_mask_trailing_dash(s)), 60),
    "dns1035LabelPrefix": NamedFormat("DNS1035LabelPrefix", lambda s: _dns1035_label(_mask_trailing_dash(s)), 30),
    "labelValue": NamedFormat("LabelValue", label_value_errors, 40),
    "uri": NamedFormat("URI", _uri, 1103),
    "uuid": NamedFormat("uuid", lambda s: [] if _UUID.match(s) else ["does not match the UUID format"], 61),
    "byte": NamedFormat("byte", lambda s: [] if _BASE64.match(s) else ["invalid base64"], 84),
    "date": NamedFormat("date", lambda s: [] if _is_date(s) else ["invalid date"], len(_TIME_OF_DAY.pattern)),
    "datetime": NamedFormat("datetime", lambda s: [] if _is_datetime(s) else ["invalid datetime"],
                            len(_TIME_OF_DAY.pattern)),
}


def _format_validate(fmt: NamedFormat, s: str) -> Optional:
    errors = fmt.validate(s)
    return Optional(errors, True) if errors else NONE


def _validate_cost(args: list[Any], result: Any) -> int:
    return cost_ceil((1.0 + size_of(args[1])) * 0.1) * cost_ceil(args[0].max_regex_size * 0.25)


RUNTIME_KINDS["kubernetes.NamedFormat"] = (NamedFormat,)
TYPE_NAMES[NamedFormat] = "kubernetes.NamedFormat"
define("validate", "kubernetes.NamedFormat.validate(string) -> optional_type(list(string))", _format_validate,
       cost=_validate_cost)
define("format.named", "format.named(string) -> optional_type(kubernetes.NamedFormat)",
       lambda name: Optional(FORMATS[name], True) if name in FORMATS else NONE, cost=unit_cost)
for _key, _fmt in FORMATS.items():
    define(f"format.{_key}", f"format.{_key}() -> kubernetes.NamedFormat", lambda f=_fmt: f)
