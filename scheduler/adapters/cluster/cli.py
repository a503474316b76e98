"""`pyscheduler run`: load the configuration, set up logging, run the cluster adapter until stopped.

Called by `scheduler.cli` (which owns argument parsing); reads kubeconfig, config, the serving flags (port,
bind_address, tls_cert_file, tls_private_key_file, client_ca_file, authorization_always_allow_paths,
insecure_serving), resync_period, verbosity, log_format and enable_debug_handlers from the parsed args.
A serving flag that cannot be used ends the command with one `error: --flag: ...` line and exit code 2,
before the API server is contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler.adapters.cluster.serving.options import ServingOptions

EXIT_USAGE = 2


def setup_logging(verbosity: int, log_format: str) -> None:
    """klog-style verbosity and text/JSON lines (scheduler.logging_setup); kopf's own chatter only from -v 6."""
    from scheduler.logging_setup import setup_logging as setup

    setup(verbosity, log_format)


def serving_options(args: argparse.Namespace) -> ServingOptions:
    """The serving flags of `pyscheduler run` as ServingOptions (defaults for flags a caller left out)."""
    from scheduler.adapters.cluster.serving.options import ServingOptions, split_paths

    defaults = ServingOptions()
    paths = getattr(args, "authorization_always_allow_paths", None)
    return ServingOptions(
        bind_address=str(getattr(args, "bind_address", defaults.bind_address)),
        port=int(getattr(args, "port", defaults.port)),
        insecure=bool(getattr(args, "insecure_serving", False)),
        tls_cert_file=getattr(args, "tls_cert_file", None),
        tls_private_key_file=getattr(args, "tls_private_key_file", None),
        client_ca_file=getattr(args, "client_ca_file", None),
        always_allow_paths=defaults.always_allow_paths if paths is None else split_paths(str(paths)),
    )


def run_command(args: argparse.Namespace) -> int:
    """Load --config and the serving flags (exit 2 with `error: ...` when invalid), then run until SIGTERM."""
    from scheduler.adapters.cluster.serving.options import ServingConfigError, prepare_serving
    from scheduler.core.profile import load_config_or_report

    config = load_config_or_report(getattr(args, "config", None), plugins=getattr(args, "plugin", None) or ())
    if config is None:
        return EXIT_USAGE
    try:
        serving = prepare_serving(serving_options(args))
    except ServingConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    verbosity = getattr(args, "verbosity", None)
    if verbosity is None:
        verbosity = {"debug": 4, "info": 2, "warning": 0}.get(str(getattr(args, "log_level", "info")).lower(), 2)
    if not 0 <= int(verbosity) <= 10:
        print(f"error: -v: {verbosity} is not a verbosity (0-10)", file=sys.stderr)
        return EXIT_USAGE
    resync = float(getattr(args, "resync_period", 300.0))
    if not math.isfinite(resync) or resync < 1.0:
        print(f"error: --resync-period: {resync} is not a number of seconds >= 1", file=sys.stderr)
        return EXIT_USAGE
    setup_logging(int(verbosity), str(getattr(args, "log_format", "text") or "text"))

    from scheduler.adapters.cluster.client import ClientConfigError
    from scheduler.adapters.cluster.run import run
    from scheduler.config.errors import ConfigError
    from scheduler.core import gc_policy

    gc_policy.tune()
    try:
        return asyncio.run(
            run(
                config,
                getattr(args, "kubeconfig", None),
                serving=serving,
                resync_period=resync,
                debug_handlers=bool(getattr(args, "enable_debug_handlers", False)),
            )
        )
    except ClientConfigError as exc:  # a missing, unreadable or malformed kubeconfig: fix the input
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as exc:  # a plugin that fails to start
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
