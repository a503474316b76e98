"""The `pyscheduler` command: run (in a cluster), simulate (offline from a YAML dump), explain."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from scheduler.config.errors import ConfigError
from scheduler.config.types import SchedulerConfiguration

EXIT_USAGE = 2


def load_config_or_report(path: str | None) -> SchedulerConfiguration | None:
    """The configuration --config names; None after printing `error: <field>: <problem>` when it is invalid."""
    from scheduler.core.profile import config_from_path

    try:
        return config_from_path(path)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def _split_pod_ref(ref: str) -> tuple[str, str]:
    namespace, sep, name = ref.partition("/")
    if not sep:
        return "default", namespace
    return namespace, name


def cmd_simulate(args: argparse.Namespace) -> int:
    from scheduler.core.explain import render_text
    from scheduler.simulate import InputError, load_documents, render_table, simulate

    config = load_config_or_report(args.config)
    if config is None:
        return EXIT_USAGE
    try:
        if args.cluster == "-":
            text = sys.stdin.read()
        else:
            with open(args.cluster, encoding="utf-8") as fh:
                text = fh.read()
    except OSError as exc:
        print(f"error: {args.cluster}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        objects = load_documents(text, args.cluster)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    result = simulate(objects, config, seed=args.seed)
    explanation = None
    if args.explain:
        ns, name = _split_pod_ref(args.explain)
        try:
            explanation = result.explain(ns, name)
        except KeyError as exc:
            print(f"error: {exc.args[0]}", file=sys.stderr)
            return EXIT_USAGE
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
    return 0


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
    run.add_argument("--port", type=int, default=10259, help="HTTP port for health, metrics and debug endpoints")
    run.add_argument("--bind-address", default="0.0.0.0", help="address the HTTP endpoints listen on")
    run.add_argument("--resync-period", type=float, default=300.0, help="seconds between cache re-LISTs")
    run.add_argument("-v", "--v", dest="verbosity", type=int, default=2, help="log verbosity (klog-style 0-10)")
    run.add_argument("--log-format", choices=("text", "json"), default="text")
    run.add_argument(
        "--enable-debug-handlers",
        action="store_true",
        help="serve /debug/flags/v (PUT to change -v at runtime), /debug/cache, /debug/cache/compare and "
        "/debug/explain/NS/NAME on --port (off by default: they expose cluster state)",
    )
    run.set_defaults(func=cmd_run)

    sim = sub.add_parser("simulate", help="replay a cluster dump offline and show where every pod goes")
    sim.add_argument("cluster", help="YAML file with Nodes, Pods, DaemonSets (or a v1 List); - for stdin")
    sim.add_argument("--config", default=None, help="KubeSchedulerConfiguration file")
    sim.add_argument("--output", "-o", choices=("table", "json"), default="table")
    sim.add_argument("--seed", type=int, default=0, help="seed for breaking ties between equally good nodes")
    sim.add_argument("--explain", metavar="NS/NAME", default=None, help="explain one pod node by node")
    sim.set_defaults(func=cmd_simulate)

    exp = sub.add_parser("explain", help="explain node by node why a live pod is where it is or is Pending")
    exp.add_argument("pod", metavar="NS/NAME", help="the pod (a bare NAME is in namespace default)")
    exp.add_argument("--kubeconfig", default=None, help="kubeconfig path (in-cluster config when omitted)")
    exp.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="ask a running pyscheduler (started with --enable-debug-handlers), e.g. http://127.0.0.1:10259; "
        "without it, LIST the cluster and explain locally",
    )
    exp.add_argument("--config", default=None, help="KubeSchedulerConfiguration file (without --server)")
    exp.add_argument("--output", "-o", choices=("text", "json"), default="text")
    exp.set_defaults(func=cmd_explain)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code
