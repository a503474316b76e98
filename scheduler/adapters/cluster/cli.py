"""`pyscheduler run`: load the configuration, set up logging, run the cluster adapter until stopped.

Called by `scheduler.cli` (which owns argument parsing); reads kubeconfig, config, port, bind_address,
resync_period, verbosity, log_format and enable_debug_handlers from the parsed args.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

EXIT_USAGE = 2


def setup_logging(verbosity: int, log_format: str) -> None:
    """klog-style verbosity and text/JSON lines (scheduler.logging_setup); kopf's own chatter only from -v 6."""
    from scheduler.logging_setup import setup_logging as setup

    setup(verbosity, log_format)


def run_command(args: argparse.Namespace) -> int:
    """Load --config (exit 2 with `error: ...` when invalid), then run until SIGTERM/SIGINT."""
    from scheduler.core.profile import load_config_or_report

    config = load_config_or_report(getattr(args, "config", None), plugins=getattr(args, "plugin", None) or ())
    if config is None:
        return EXIT_USAGE
    verbosity = getattr(args, "verbosity", None)
    if verbosity is None:
        verbosity = {"debug": 4, "info": 2, "warning": 0}.get(str(getattr(args, "log_level", "info")).lower(), 2)
    setup_logging(int(verbosity), str(getattr(args, "log_format", "text") or "text"))

    from scheduler.adapters.cluster.client import ClientConfigError
    from scheduler.adapters.cluster.run import run
    from scheduler.config.errors import ConfigError

    try:
        return asyncio.run(
            run(
                config,
                getattr(args, "kubeconfig", None),
                port=int(getattr(args, "port", 10259)),
                bind_address=str(getattr(args, "bind_address", "0.0.0.0")),
                resync_period=float(getattr(args, "resync_period", 300.0)),
                debug_handlers=bool(getattr(args, "enable_debug_handlers", False)),
            )
        )
    except ClientConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except ConfigError as exc:  # a plugin that fails to start
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
