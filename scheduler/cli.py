"""The `pyscheduler` command: run (in a cluster), simulate (offline from a YAML dump), explain.

Each command imports what it needs when it runs: `explain --server` is one HTTP request and must not pay for
the scheduler's framework, plugins and Kubernetes client at every start."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler.config.types import SchedulerConfiguration

EXIT_USAGE = 2
EXIT_PENDING = 1  # simulate --fail-on-pending: some pod stayed Pending (like diff's 1: "differences found")
EXIT_BROKEN_PIPE = 141  # the reader of our output went away (`| head`): a shell's code for a command SIGPIPE ended


def _split_pod_ref(ref: str) -> tuple[str, str]:
    namespace, sep, name = ref.partition("/")
    if not sep:
        return "default", namespace
    return namespace, name


def cmd_simulate(args: argparse.Namespace) -> int:
    from scheduler.config.errors import ConfigError
    from scheduler.core import gc_policy
    from scheduler.core.explain import render_text
    from scheduler.core.profile import load_config_or_report
    from scheduler.progress import Progress
    from scheduler.simulate import InputError, read_cluster, render_table, simulate

    config = load_config_or_report(args.config, plugins=args.plugin)
    if config is None:
        return EXIT_USAGE
    config = _with_scheduler_names(config, args.scheduler_name)
    gc_policy.tune()
    progress = Progress()  # silent unless it takes more than 2 s
    try:
        with gc_policy.bulk_load():  # a whole dump's objects, all alive until the end: no collections meanwhile
            objects = read_cluster(args.cluster, progress.phase)
    except OSError as exc:
        progress.done("failed")
        print(f"error: {args.cluster}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except InputError as exc:
        progress.done("failed")
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    progress.phase(f"scheduling {len(objects):,} objects")
    try:
        result = simulate(objects, config, seed=args.seed, own_objects=True)
    except ConfigError as exc:  # a plugin that fails to start
        progress.done("failed")
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    explanation = None
    if args.explain:
        progress.phase(f"explaining {args.explain}")
        ns, name = _split_pod_ref(args.explain)
        try:
            explanation = result.explain(ns, name)
        except KeyError as exc:
            progress.done("failed")
            print(f"error: {exc.args[0]}", file=sys.stderr)
            return EXIT_USAGE
    progress.done()
    _warn_other_schedulers(result.other_schedulers(), [p.scheduler_name for p in config.profiles])
    if args.output == "json":
        doc: dict[str, object] = result.to_json()
        if explanation is not None:
            doc["explain"] = explanation.to_json()
        print(json.dumps(doc, indent=2))
    else:
        print(render_table(result))
        if explanation is not None:
            print()
            print(render_text(explanation))
    global _HEAP_DISPOSABLE
    _HEAP_DISPOSABLE = True
    return EXIT_PENDING if args.fail_on_pending and result.pending() else 0


def _with_scheduler_names(config: SchedulerConfiguration, names: Sequence[str]) -> SchedulerConfiguration:
    """--scheduler-name: pods naming these schedulers are simulated with the first profile's plugins too."""
    known = {p.scheduler_name for p in config.profiles}
    new = [n for n in dict.fromkeys(names) if n not in known]
    extra = tuple(dataclasses.replace(config.profiles[0], scheduler_name=n) for n in new)
    return dataclasses.replace(config, profiles=config.profiles + extra) if extra else config


def _warn_other_schedulers(others: dict[str, int], profiles: Sequence[str]) -> None:
    """A dump's pending pods that name another scheduler were left alone: say so, and how to include them."""
    if not others:
        return
    counts = ", ".join(f"{name} ({n})" for name, n in sorted(others.items(), key=lambda kv: (-kv[1], kv[0])))
    flags = " ".join(f"--scheduler-name {name}" for name in sorted(others))
    print(
        f"warning: {sum(others.values())} pod(s) without a node name another scheduler and were not simulated: "
        f"{counts}. Only pods whose schedulerName is a profile ({', '.join(profiles)}) are placed; to place "
        f"these too, with the same plugins, pass {flags}",
        file=sys.stderr,
    )


def cmd_run(args: argparse.Namespace) -> int:
    from scheduler.adapters.cluster.cli import run_command

    return run_command(args)


def cmd_explain(args: argparse.Namespace) -> int:
    from scheduler.adapters.cluster.explain_cli import explain_command

    return explain_command(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyscheduler",
        description="A secondary Kubernetes scheduler with kube-scheduler's semantics and messages.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="schedule pods that name this scheduler in a live cluster")
    run.add_argument("--kubeconfig", default=None, help="kubeconfig path (in-cluster config when omitted)")
    run.add_argument("--config", default=None, help="KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1)")
    run.add_argument(
        "--port",
        type=int,
        default=10259,
        help="HTTPS port for health, metrics and debug endpoints (kube-scheduler's secure port 10259)",
    )
    run.add_argument(
        "--bind-address", default="0.0.0.0", help="IP address the endpoints listen on (default: all interfaces)"
    )
    run.add_argument(
        "--tls-cert-file",
        default=None,
        metavar="PATH",
        help="PEM serving certificate (chain, server certificate first); without it and --tls-private-key-file a "
        "self-signed certificate is generated in memory at start",
    )
    run.add_argument("--tls-private-key-file", default=None, metavar="PATH", help="PEM key of --tls-cert-file")
    run.add_argument(
        "--client-ca-file",
        default=None,
        metavar="PATH",
        help="also authenticate callers by a client certificate signed by this CA (CN user, O groups)",
    )
    run.add_argument(
        "--authorization-always-allow-paths",
        default="/healthz,/readyz,/livez",
        metavar="PATHS",
        help="comma-separated paths served to anyone without authentication or authorization (a trailing * "
        "matches a prefix; empty: none). Every other path needs a caller the API server authenticates "
        "(TokenReview) and authorizes (SubjectAccessReview)",
    )
    run.add_argument(
        "--insecure-serving",
        action="store_true",
        help="FOR LOCAL DEBUGGING ONLY: serve plain HTTP with no authentication and no authorization, so "
        "anyone who reaches the port can read metrics and (with --enable-debug-handlers) cluster state",
    )
    run.add_argument("--resync-period", type=float, default=300.0, help="seconds between cache re-LISTs")
    run.add_argument("-v", "--v", dest="verbosity", type=int, default=2, help="log verbosity (klog-style 0-10)")
    run.add_argument("--log-format", choices=("text", "json"), default="text")
    run.add_argument(
        "--enable-debug-handlers",
        action="store_true",
        help="serve /debug/flags/v (PUT to change -v at runtime), /debug/cache, /debug/cache/compare, "
        "/debug/explain/NS/NAME and /debug/pyscheduler/stats on --port (off by default: they expose cluster "
        "state; callers need RBAC on nonResourceURLs /debug/*)",
    )
    run.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE:CLASS",
        help="load an out-of-tree plugin class (repeatable); enable it by name in --config's profiles. "
        "Installed packages with a 'pyscheduler.plugins' entry point are loaded without this flag",
    )
    run.set_defaults(func=cmd_run)

    sim = sub.add_parser("simulate", help="replay a cluster dump offline and show where every pod goes")
    sim.add_argument("cluster", help="YAML file with Nodes, Pods, DaemonSets (or a v1 List); - for stdin")
    sim.add_argument("--config", default=None, help="KubeSchedulerConfiguration file")
    sim.add_argument("--output", "-o", choices=("table", "json"), default="table")
    sim.add_argument("--seed", type=int, default=0, help="seed for breaking ties between equally good nodes")
    sim.add_argument("--explain", metavar="NS/NAME", default=None, help="explain one pod node by node")
    sim.add_argument(
        "--scheduler-name",
        action="append",
        default=[],
        metavar="NAME",
        help="also place the pods whose schedulerName is NAME, with the first profile's plugins (repeatable; "
        "a dump's pods mostly name default-scheduler)",
    )
    sim.add_argument(
        "--fail-on-pending",
        action="store_true",
        help="exit 1 when a pod stays Pending (for CI gates); exit codes: 0 all placed, 1 some Pending (only "
        "with this flag), 2 bad input or configuration",
    )
    sim.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE:CLASS",
        help="load an out-of-tree plugin class (repeatable); enable it by name in --config's profiles. "
        "Installed packages with a 'pyscheduler.plugins' entry point are loaded without this flag",
    )
    sim.set_defaults(func=cmd_simulate)

    exp = sub.add_parser("explain", help="explain node by node why a live pod is where it is or is Pending")
    exp.add_argument("pod", metavar="[NS/]NAME", help="the pod (a bare NAME is in namespace default, or -n)")
    exp.add_argument("-n", "--namespace", default=None, help="the pod's namespace (as kubectl's -n)")
    exp.add_argument(
        "--kubeconfig",
        default=None,
        help="kubeconfig path (default as kubectl: $KUBECONFIG, ~/.kube/config, else in-cluster)",
    )
    exp.add_argument("--context", default=None, help="kubeconfig context (default: its current-context)")
    exp.add_argument("--all-nodes", action="store_true", help="list every node's verdict, not groups of nodes")
    exp.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="ask a running pyscheduler (started with --enable-debug-handlers), e.g. https://127.0.0.1:10259; "
        "without it, LIST the cluster and explain locally",
    )
    exp.add_argument(
        "--token",
        default=None,
        help="bearer token for --server (default: the kubeconfig user's token, else the in-cluster one)",
    )
    exp.add_argument(
        "--certificate-authority",
        default=None,
        metavar="PATH",
        help="CA file to verify the --server certificate with (default: the system CAs)",
    )
    exp.add_argument(
        "--insecure-skip-tls-verify",
        action="store_true",
        help="do not verify the --server certificate (needed for pyscheduler's default self-signed one)",
    )
    exp.add_argument("--config", default=None, help="KubeSchedulerConfiguration file (without --server)")
    exp.add_argument("--output", "-o", choices=("text", "json"), default="text")
    exp.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE:CLASS",
        help="load an out-of-tree plugin class (repeatable); enable it by name in --config's profiles. "
        "Installed packages with a 'pyscheduler.plugins' entry point are loaded without this flag",
    )
    exp.set_defaults(func=cmd_explain)
    return parser


# Set by a command whose objects are all garbage once it returns (simulate's whole dump): the process may end
# without freeing them (at 5000 nodes x 10 kubectl-shaped pods, freeing ~1.4 GB of dicts costs ~0.6 s of CPU).
_HEAP_DISPOSABLE = False


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (argv None: the process's own, and main is the process's entry point)."""
    global _HEAP_DISPOSABLE
    _HEAP_DISPOSABLE = False
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        sys.stdout.flush()  # a reader gone after the last write is seen here, not at interpreter exit
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE
    if argv is None and _HEAP_DISPOSABLE:
        _exit_without_teardown(code)
    return code


def _discard_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null: the interpreter's own flush at exit then finds nothing to
    complain about, so `pyscheduler simulate ... | head -1` ends without a traceback, like other commands."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor (an in-process caller's captured stdout)
        pass


def _exit_without_teardown(code: int) -> None:
    """End the process now, as a normal exit would but without freeing the heap: output flushed, atexit
    handlers run (logging's flush among them). Returns (the normal exit follows) if the output cannot be
    flushed, so a closed pipe is reported as it always is."""
    import atexit
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


def kubectl_main(argv: Sequence[str] | None = None) -> int:
    """`kubectl pyscheduler ...`: the kubectl plugin (an executable named kubectl-pyscheduler on the PATH).

    `kubectl pyscheduler explain -n NS POD [-o json] [--context CTX]` uses the user's kubeconfig and context
    like any kubectl plugin; every `pyscheduler` subcommand works the same way after `kubectl pyscheduler`.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(
            "usage: kubectl pyscheduler explain [-n NAMESPACE] POD [-o text|json] [--context CTX] [--all-nodes]\n"
            "       kubectl pyscheduler simulate CLUSTER.yaml [--explain NS/NAME]\n"
            "Why is my pod Pending? pyscheduler's node-by-node answer and what would make it fit."
        )
        return 0 if args else EXIT_USAGE
    return main(args)
