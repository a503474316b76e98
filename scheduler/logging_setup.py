"""klog-like logging on top of the standard library: verbosity levels, text or JSON lines, structured fields.

Only stdlib `logging` is used here, so the core may import the level constants (`V2`, `V4`, ...).

Verbosity (`-v N`, changeable at runtime with `set_verbosity`, e.g. from PUT /debug/flags/v):
  V(0)   errors, warnings and info (`log.info`) always print
  V(1)   little extra
  V(2)   scheduling decisions summary ("Successfully bound pod to node", ...): the recommended default
  V(4)   per-pod detail
  V(5+)  debug (`log.debug` counts as V(5)); kopf's own chatter from V(6)
  V(10)  every plugin's score for every node ("Plugin scored node for pod", as kube-scheduler at -v=10)

`log.log(V2, "msg", extra={...})` logs at V(2). A V(n) record is a stdlib record at level INFO - n, except
V(10), which sits just below DEBUG (INFO - 10 is DEBUG's own number, already V(5)); the root logger's level
follows the verbosity so disabled calls cost one `isEnabledFor` check, and a handler filter drops the V
levels that the coarse logger level still lets through (e.g. V(7) at -v 5, where DEBUG is on).

Text, like klog:  I1129 19:00:00.123456   12345 scheduler.py:390] "Successfully bound pod to node" pod="ns/p"
JSON, one object per line: {"ts": 1732906800.123, "caller": "scheduler.py:390", "level": "info", "v": 2,
"logger": "pyscheduler.scheduler", "msg": "...", "pod": "ns/p", "node": "n1"}. `extra=` fields become
key=value pairs (text) or top-level keys (JSON).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from datetime import datetime
from typing import Any, TextIO

DEBUG_V = 5  # `log.debug` records count as V(5)
KOPF_V = 6  # kopf's own info/debug logs from this verbosity
MAX_V = 10


def v_level(n: int) -> int:
    """The stdlib level of a V(n) record: INFO for V(0), INFO - n up to V(9), DEBUG - 1 for V(10)."""
    n = max(0, min(n, MAX_V))
    if n >= MAX_V:
        return logging.DEBUG - 1
    return logging.INFO - n


V1, V2, V3, V4, V5 = v_level(1), v_level(2), v_level(3), v_level(4), v_level(5)
V10 = v_level(10)

for _n in range(1, MAX_V + 1):
    logging.addLevelName(v_level(_n), f"V{_n}")

_lock = threading.Lock()
_verbosity = 0


def record_v(record: logging.LogRecord) -> int:
    """The verbosity a record needs to be printed."""
    if record.levelno >= logging.INFO:
        return 0
    if record.levelno == logging.DEBUG:
        return DEBUG_V
    if record.levelno < logging.DEBUG:
        return MAX_V
    return logging.INFO - record.levelno


def get_verbosity() -> int:
    return _verbosity


def _root_level(verbosity: int) -> int:
    if verbosity >= DEBUG_V:
        return min(logging.DEBUG, v_level(verbosity))
    return v_level(verbosity)


def set_verbosity(verbosity: int) -> None:
    """Change the verbosity now; affects every record logged afterwards."""
    global _verbosity
    if verbosity < 0:
        raise ValueError(f"verbosity must be >= 0, got {verbosity}")
    with _lock:
        _verbosity = verbosity
        logging.getLogger().setLevel(_root_level(verbosity))
        logging.getLogger("kopf").setLevel(logging.DEBUG if verbosity >= KOPF_V else logging.WARNING)
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


class VerbosityFilter(logging.Filter):
    """Drops V(n) records above the current verbosity (the root level alone is too coarse above -v 5)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record_v(record) <= _verbosity


# LogRecord attributes that are not `extra=` fields.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


def extras(record: logging.LogRecord) -> dict[str, Any]:
    """The record's structured fields (what was passed as `extra=`)."""
    return {k: v for k, v in vars(record).items() if k not in _STANDARD}


def _severity(levelno: int) -> str:
    if levelno >= logging.CRITICAL:
        return "F"
    if levelno >= logging.ERROR:
        return "E"
    if levelno >= logging.WARNING:
        return "W"
    return "I"


def _value(value: Any) -> str:
    """klog-style value: strings quoted, numbers and booleans bare, the rest as JSON."""
    return json.dumps(value, default=str, ensure_ascii=False)


class KlogTextFormatter(logging.Formatter):
    """`I1129 19:00:00.123456 <pid> file:line] "message" key="value" ...`, klog's text format."""

    def __init__(self) -> None:
        super().__init__()
        self.pid = os.getpid()

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created).strftime("%m%d %H:%M:%S.%f")
        header = f"{_severity(record.levelno)}{stamp} {self.pid:7d} {record.filename}:{record.lineno}]"
        parts = [header, _value(record.getMessage())]
        parts.extend(f"{k}={_value(v)}" for k, v in extras(record).items())
        line = " ".join(parts)
        if record.exc_info:
            line += f" err={_value(str(record.exc_info[1]))}\n" + self.formatException(record.exc_info)
        return line


class KlogJsonFormatter(logging.Formatter):
    """One JSON object per line: ts, caller, level, v (info levels), logger, msg, then the fields."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": round(record.created, 6),
            "caller": f"{record.filename}:{record.lineno}",
            "level": {"I": "info", "W": "warning", "E": "error", "F": "critical"}[_severity(record.levelno)],
        }
        if record.levelno < logging.WARNING:
            doc["v"] = record_v(record)
        doc["logger"] = record.name
        doc["msg"] = record.getMessage()
        for key, value in extras(record).items():
            doc.setdefault(key, value)
        if record.exc_info:
            doc["err"] = str(record.exc_info[1])
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str, ensure_ascii=False)


def make_handler(log_format: str = "text", stream: TextIO | None = None) -> logging.Handler:
    """A stream handler with the klog formatter for `log_format` ("text" or "json") and the V filter."""
    if log_format not in ("text", "json"):
        raise ValueError(f"log format must be text or json, got {log_format!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(KlogJsonFormatter() if log_format == "json" else KlogTextFormatter())
    handler.addFilter(VerbosityFilter())
    return handler


def setup_logging(verbosity: int, log_format: str = "text", stream: TextIO | None = None) -> None:
    """Replace the root handlers with one klog-style handler and set the verbosity."""
    root = logging.getLogger()
    root.handlers[:] = [make_handler(log_format, stream)]
    set_verbosity(verbosity)
