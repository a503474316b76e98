"""`pyscheduler run`: load the configuration, set up logging, run the cluster adapter until stopped.

Called by `scheduler.cli` (which owns argument parsing); reads kubeconfig, config, port, bind_address,
resync_period, verbosity and log_format from the parsed args.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from typing import Any

from scheduler.config.errors import ConfigError
from scheduler.config.types import SchedulerConfiguration

EXIT_USAGE = 2

# LogRecord attributes that are not `extra=` fields.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD}


class TextFormatter(logging.Formatter):
    """klog-like text: `I1129 18:50:00.123456 logger] message key=value ...` (structured fields appended)."""

    def format(self, record: logging.LogRecord) -> str:
        base = super().format(record)
        fields = " ".join(f"{k}={json.dumps(v, default=str)}" for k, v in _extras(record).items())
        return f"{base} {fields}" if fields else base


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg and the structured fields."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        doc.update(_extras(record))
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


def setup_logging(verbosity: int, log_format: str) -> None:
    """klog-style verbosity: 0-3 INFO, >= 4 DEBUG; kopf's own chatter only from -v 6."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(levelname).1s%(asctime)s %(name)s] %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbosity >= 4 else logging.INFO)
    logging.getLogger("kopf").setLevel(logging.DEBUG if verbosity >= 6 else logging.WARNING)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def load_config(path: str | None) -> SchedulerConfiguration:
    from scheduler.core.profile import default_config, load_file

    return load_file(path) if path else default_config()


def run_command(args: argparse.Namespace) -> int:
    """Load --config (exit 2 with `error: ...` when invalid), then run until SIGTERM/SIGINT."""
    try:
        config = load_config(getattr(args, "config", None))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"error: {getattr(args, 'config', '')}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    verbosity = getattr(args, "verbosity", None)
    if verbosity is None:
        verbosity = {"debug": 4, "info": 2, "warning": 0}.get(str(getattr(args, "log_level", "info")).lower(), 2)
    setup_logging(int(verbosity), str(getattr(args, "log_format", "text") or "text"))

    from scheduler.adapters.cluster.client import ClientConfigError
    from scheduler.adapters.cluster.run import run

    try:
        return asyncio.run(
            run(
                config,
                getattr(args, "kubeconfig", None),
                port=int(getattr(args, "port", 10259)),
                bind_address=str(getattr(args, "bind_address", "0.0.0.0")),
                resync_period=float(getattr(args, "resync_period", 300.0)),
            )
        )
    except ClientConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
