"""`pyscheduler explain NS/NAME`: why a live pod is where it is, or why it is Pending, node by node.

With `--server URL` the running scheduler answers (GET URL/debug/explain/NS/NAME; it needs
`--enable-debug-handlers`) from its own cache. Without it, the command LISTs nodes and pods from the API
server (kubeconfig or in-cluster config), loads them into an in-memory scheduler built from `--config`,
and explains the pod locally: it works with no scheduler running, from the API's view of the cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from typing import Any

import aiohttp

from scheduler.adapters.cluster.client import ApiError, ClientConfigError, KubeClient
from scheduler.adapters.cluster.debug import pod_getter
from scheduler.adapters.cluster.watch import LIST_PAGE_SIZE, NODES_PATH, POD_FIELD_SELECTOR, PODS_PATH
from scheduler.adapters.memory import MemoryCluster
from scheduler.config.errors import ConfigError
from scheduler.config.types import SchedulerConfiguration
from scheduler.core.explain import Explanation, explain_pod, render_text
from scheduler.core.profile import build_scheduler
from scheduler.framework.objects import KINDS
from scheduler.framework.types import ParseError, parse_pod

EXIT_USAGE = 2
EXIT_FAILED = 1
HTTP_TIMEOUT = 30.0


class ExplainError(Exception):
    """The explanation could not be produced; the message is printed as `error: ...`."""


def split_pod_ref(ref: str) -> tuple[str, str]:
    """NAMESPACE/NAME -> (namespace, name); a bare NAME is in "default"."""
    namespace, sep, name = ref.partition("/")
    if not sep:
        return "default", namespace
    if not namespace or not name or "/" in name:
        raise ExplainError(f"invalid pod reference {ref!r}: expected NAMESPACE/NAME")
    return namespace, name


async def from_server(server: str, namespace: str, name: str, output: str) -> str:
    """Ask a running scheduler (GET /debug/explain/NS/NAME) and return what to print."""
    url = f"{server.rstrip('/')}/debug/explain/{namespace}/{name}"
    fmt = "json" if output == "json" else "text"
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=HTTP_TIMEOUT)) as session,
            session.get(url, params={"format": fmt}) as resp,
        ):
            body = await resp.text()
            status = resp.status
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ExplainError(f"{url}: {exc or type(exc).__name__}") from exc
    if status == 404 and "not found" not in body:
        raise ExplainError(f"{url}: 404 (is the scheduler running with --enable-debug-handlers?)")
    if status != 200:
        detail = body.strip()
        if fmt == "json":
            with contextlib.suppress(ValueError, AttributeError):
                detail = str(json.loads(body).get("error") or detail)
        raise ExplainError(detail or f"{url}: HTTP {status}")
    if fmt == "json":
        return json.dumps(json.loads(body), indent=2)
    return body.rstrip("\n")


async def explain_from_api(
    config: SchedulerConfiguration, kubeconfig: str | None, namespace: str, name: str
) -> Explanation:
    """LIST the cluster, load it into an in-memory scheduler and explain the pod against it."""
    client = await KubeClient.create(
        kubeconfig or (config.client_connection.kubeconfig or None),
        qps=config.client_connection.qps,
        burst=config.client_connection.burst,
    )
    cluster = MemoryCluster()
    scheduler = build_scheduler(cluster, config)
    cluster.attach(scheduler)
    kinds = sorted({kind for fwk in scheduler.profiles.values() for kind in fwk.object_kinds()})
    try:
        target = await pod_getter(client)(namespace, name)
        if target is None:
            raise ExplainError(f'pods "{name}" not found in namespace "{namespace}"')
        (nodes, _), (pods, _), *others = await asyncio.gather(
            client.list_all(NODES_PATH, limit=LIST_PAGE_SIZE),
            client.list_all(PODS_PATH, field_selector=POD_FIELD_SELECTOR, limit=LIST_PAGE_SIZE),
            *(client.list_all(KINDS[kind].list_path(), limit=LIST_PAGE_SIZE) for kind in kinds),
        )
    except ApiError as exc:
        raise ExplainError(f"the API server answered {exc.status}: {exc.message}") from exc
    finally:
        await client.close()
    for kind, (objects, _) in zip(kinds, others, strict=True):
        scheduler.resync_objects(kind, list(objects))
    for node in nodes:
        cluster.apply_node(node)
    for obj in pods:
        cluster.apply_pod(obj)
    try:
        pod = parse_pod(target)
    except ParseError as exc:
        raise ExplainError(f"pod {namespace}/{name} cannot be parsed: {exc}") from exc
    fwk = scheduler.profiles.get(pod.scheduler_name) or next(iter(scheduler.profiles.values()))
    return explain_pod(fwk, pod, scheduler.cache.fresh_snapshot())


async def explain_async(args: argparse.Namespace, config: SchedulerConfiguration) -> str:
    namespace, name = split_pod_ref(args.pod)
    output = str(args.output)
    if args.server:
        return await from_server(args.server, namespace, name, output)
    expl = await explain_from_api(config, args.kubeconfig, namespace, name)
    doc: Any = expl.to_json()
    return json.dumps(doc, indent=2) if output == "json" else render_text(expl)


def explain_command(args: argparse.Namespace) -> int:
    """Print the explanation; exit 2 on a bad --config, 1 when the pod or the cluster cannot be read."""
    from scheduler.core.profile import load_config_or_report

    config = load_config_or_report(args.config, plugins=getattr(args, "plugin", None) or ())
    if config is None:
        return EXIT_USAGE
    try:
        text = asyncio.run(explain_async(args, config))
    except (ExplainError, ClientConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except ConfigError as exc:  # a plugin that fails to start
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(text)
    return 0
