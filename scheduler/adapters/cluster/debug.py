"""Debug endpoints (`pyscheduler run --enable-debug-handlers`, off by default) and the SIGUSR2 comparison.

  GET  /debug/flags/v                      the current log verbosity (plain integer)
  PUT  /debug/flags/v                      body: an integer; changes the verbosity at once (as kube-scheduler)
  GET  /debug/cache                        nodes, pods, assumed pods and queues as JSON            (limited)
  GET  /debug/cache/compare                the cache against a fresh LIST: missing, extra, stale  (limited)
  GET  /debug/explain/{namespace}/{name}   per-node, per-plugin explanation for a live pod        (limited)
  GET  /debug/pyscheduler/stats            watch, writer, client, queue and leader-election counters

They expose the cluster's pods and nodes and change the log level, which is why they are behind a switch
and, on the secure port, behind authorization like every path but the health checks (RBAC
`nonResourceURLs: ["/debug/*"]`, verb `get`, and `put` for the verbosity).

The three marked "limited" are expensive and share one ExpensiveCallLimiter (one in flight, a small token
bucket, 429 with Retry-After beyond). They also keep the scheduling loop responsive while they compute:
- compare: the LISTed objects are parsed in slices of PARSE_SLICE with `await asyncio.sleep(0)` between
  slices; the comparison with the cache itself then runs on the loop in one go (it reads the live cache,
  which only the loop may touch);
- explain: runs in a worker thread on `Scheduler.explain_environment`, made on the loop: a private snapshot
  (every NodeInfo cloned; the NodeRecord/PodInfo records they share are never mutated after parsing), a copy
  of the object store and nominations, and fresh instances of the profile's plugins whose Handle returns
  those copies. Nothing the scheduling loop mutates is reachable from the thread, whatever a plugin reads
  (its own state, `handle.snapshot()`, `handle.objects`). The pod is parsed from a fresh GET.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from scheduler.adapters.cluster.client import ApiError, KubeClient, pod_path
from scheduler.adapters.cluster.serving.guard import request_user
from scheduler.adapters.cluster.serving.limits import ExpensiveCallLimiter
from scheduler.core.event_handlers import TERMINAL_PHASES
from scheduler.core.scheduler import Scheduler
from scheduler.framework.types import NodeRecord, ParseError, PodInfo, parse_node, parse_pod
from scheduler.logging_setup import get_verbosity, set_verbosity

log = logging.getLogger("pyscheduler.debug")

JSON = dict[str, Any]
ListCluster = Callable[[], Awaitable[tuple[list[JSON], list[JSON]]]]
GetPod = Callable[[str, str], Awaitable[JSON | None]]
"""Fetch one pod (namespace, name) from the API; None when it does not exist."""

MAX_VERBOSITY = 10
PARSE_SLICE = 500
"""Objects of a LIST parsed between two yields to the event loop in /debug/cache/compare."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Stats = Callable[[], dict[str, Any]]


def _json_response(doc: Any, status: int = 200) -> web.Response:
    return web.Response(
        text=json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n",
        status=status,
        content_type="application/json",
    )


def parse_verbosity(body: str) -> int:
    """The PUT /debug/flags/v body as a verbosity; ValueError with the message to return otherwise."""
    text = body.strip()
    try:
        value = int(text)
    except ValueError:
        raise ValueError(
            f"invalid verbosity {text!r}: the request body must be an integer between 0 and {MAX_VERBOSITY}"
        ) from None
    if not 0 <= value <= MAX_VERBOSITY:
        raise ValueError(f"invalid verbosity {value}: must be between 0 and {MAX_VERBOSITY}")
    return value


@dataclass
class _Listed:
    """A LIST parsed for the comparison: node records, assigned pods, pending pods of our profiles."""

    records: list[NodeRecord] = field(default_factory=list)
    assigned: list[PodInfo] = field(default_factory=list)
    unparsable: list[str] = field(default_factory=list)
    pending: dict[str, str] = field(default_factory=dict)  # uid -> ns/name

    def add_nodes(self, nodes: list[JSON]) -> None:
        for obj in nodes:
            try:
                self.records.append(parse_node(obj))
            except ParseError:
                self.unparsable.append(f"node/{(obj.get('metadata') or {}).get('name')}")

    def add_pods(self, scheduler: Scheduler, pods: list[JSON]) -> None:
        for obj in pods:
            try:
                pod = parse_pod(obj)
            except ParseError:
                meta = obj.get("metadata") or {}
                self.unparsable.append(f"pod/{meta.get('namespace')}/{meta.get('name')}")
                continue
            if pod.phase in TERMINAL_PHASES:
                continue
            if pod.node_name:
                self.assigned.append(pod)
            elif pod.scheduler_name in scheduler.profiles:
                self.pending[pod.uid] = pod.key


def compare(scheduler: Scheduler, nodes: list[JSON], pods: list[JSON]) -> JSON:
    """The cache and the pending set against a LIST: {"missing": ..., "extra": ..., "stale": ..., "counts": ...}.

    Nodes and assigned pods are compared by the cache (Cache.compare: assumed pods still binding are not
    drift); unassigned pods of our profiles against the pods the scheduler tracks as pending.
    """
    listed = _Listed()
    listed.add_nodes(nodes)
    listed.add_pods(scheduler, pods)
    return _comparison(scheduler, listed, len(nodes), len(pods))


async def compare_in_slices(scheduler: Scheduler, nodes: list[JSON], pods: list[JSON]) -> JSON:
    """`compare`, yielding to the event loop every PARSE_SLICE parsed objects (a big LIST parses for long)."""
    listed = _Listed()
    for start in range(0, len(nodes), PARSE_SLICE):
        listed.add_nodes(nodes[start : start + PARSE_SLICE])
        await asyncio.sleep(0)
    for start in range(0, len(pods), PARSE_SLICE):
        listed.add_pods(scheduler, pods[start : start + PARSE_SLICE])
        await asyncio.sleep(0)
    return _comparison(scheduler, listed, len(nodes), len(pods))


def _comparison(scheduler: Scheduler, listed: _Listed, node_count: int, pod_count: int) -> JSON:
    drift = scheduler.cache.compare(listed.records, listed.assigned).to_dict()
    tracked = {p.uid: p.key for p in scheduler.pending_pods()}
    missing_pending = sorted(key for uid, key in listed.pending.items() if uid not in tracked)
    # A pod the LIST shows unbound while we track it as pending is fine; one we track as pending that the
    # LIST no longer has (deleted, or bound by someone else) is extra unless our own bind is in flight.
    extra_pending = sorted(
        key for uid, key in tracked.items() if uid not in listed.pending and not scheduler.cache.is_assumed(uid)
    )
    doc: JSON = {
        "missing": {"nodes": drift["missing_nodes"], "pods": drift["missing_pods"], "pending_pods": missing_pending},
        "extra": {"nodes": drift["extra_nodes"], "pods": drift["extra_pods"], "pending_pods": extra_pending},
        "stale": {"nodes": drift["stale_nodes"], "pods": drift["stale_pods"]},
        "unparsable": sorted(listed.unparsable),
    }
    counts: dict[str, int] = {}
    for kind in ("missing", "extra", "stale"):
        for what, names in doc[kind].items():
            counts[f"{kind}_{what}"] = len(names)
    counts["total"] = sum(counts.values())
    doc["counts"] = counts
    doc["listed"] = {"nodes": node_count, "pods": pod_count}
    doc["cached"] = {
        "nodes": scheduler.cache.node_count(),
        "pods": scheduler.cache.pod_count(),
        "pending_pods": len(tracked),
    }
    return doc


def log_comparison(doc: Mapping[str, Any]) -> None:
    """One structured line with the counts and the differing names (warning when anything differs)."""
    counts = doc["counts"]
    names = {
        f"{kind}_{what}": list(values)
        for kind in ("missing", "extra", "stale")
        for what, values in doc[kind].items()
        if values
    }
    level = logging.WARNING if counts["total"] else logging.INFO
    log.log(
        level,
        "cache comparison" + (": the cache differs from the API" if counts["total"] else ": no drift"),
        extra={"counts": {k: v for k, v in counts.items() if v or k == "total"}, "names": names, **doc["listed"]},
    )


def dump(scheduler: Scheduler) -> JSON:
    """Nodes (with their pods), every cached pod with its node, assumed pods, the queues and the nominations."""
    doc = scheduler.cache.dump()
    pods: dict[str, str] = {}
    for name, node in doc["nodes"].items():
        for key in node["pods"]:
            pods[key] = name
    doc["pods"] = dict(sorted(pods.items()))
    doc["queues"] = scheduler.queue.dump()
    doc["nominated_pods"] = scheduler.nominator.dump()  # node -> pods nominated there by preemption
    doc["pending_pods"] = sorted(p.key for p in scheduler.pending_pods())
    doc["counts"]["pending_pods"] = len(doc["pending_pods"])
    return doc


class DebugHandlers:
    """The /debug/* routes over one scheduler; `list_cluster` and `get_pod` reach the API server."""

    def __init__(
        self,
        scheduler: Scheduler,
        list_cluster: ListCluster,
        get_pod: GetPod,
        *,
        stats: Stats | None = None,
        limiter: ExpensiveCallLimiter | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.list_cluster = list_cluster
        self.get_pod = get_pod
        self.stats = stats
        self.limiter = limiter or ExpensiveCallLimiter()

    def register(self, app: web.Application, wrap: Callable[[Handler], Handler] = lambda h: h) -> None:
        """Add the routes; `wrap` runs each handler where the scheduler lives (run.py serves from another
        loop and forwards them to the scheduling loop)."""
        app.router.add_get("/debug/flags/v", wrap(self.get_v))
        app.router.add_put("/debug/flags/v", wrap(self.put_v))
        app.router.add_get("/debug/cache", wrap(self.limited(self.cache)))
        app.router.add_get("/debug/cache/compare", wrap(self.limited(self.compare)))
        app.router.add_get("/debug/explain/{namespace}/{name}", wrap(self.limited(self.explain)))
        if self.stats is not None:
            app.router.add_get("/debug/pyscheduler/stats", wrap(self.get_stats))

    def limited(self, handler: Handler) -> Handler:
        """`handler` behind the shared limiter of expensive calls: 429 with Retry-After when refused."""
        limiter = self.limiter

        async def limited_handler(request: web.Request) -> web.StreamResponse:
            delay = limiter.admit()
            if delay > 0:
                retry = limiter.retry_after_header(delay)
                return web.Response(
                    status=429,
                    text=f"too many expensive debug requests (at most {limiter.max_in_flight} at a time, "
                    f"{limiter.burst} in a burst, {limiter.rate:g}/s): retry after {retry}s\n",
                    headers={"Retry-After": retry},
                )
            try:
                return await handler(request)
            finally:
                limiter.release()

        return limited_handler

    async def get_v(self, _: web.Request) -> web.Response:
        return web.Response(text=f"{get_verbosity()}\n")

    async def put_v(self, request: web.Request) -> web.Response:
        try:
            value = parse_verbosity(await request.text())
        except ValueError as exc:
            return web.Response(text=f"{exc}\n", status=400)
        old = get_verbosity()
        set_verbosity(value)
        user = request_user(request)
        log.info("log verbosity changed", extra={"from": old, "to": value, "user": user.name if user else None})
        return web.Response(text=f"successfully set verbosity to {value}\n")

    async def get_stats(self, _: web.Request) -> web.Response:
        assert self.stats is not None
        return _json_response(self.stats())

    async def cache(self, _: web.Request) -> web.Response:
        return _json_response(dump(self.scheduler))

    async def compare(self, _: web.Request) -> web.Response:
        try:
            nodes, pods = await self.list_cluster()
        except Exception as exc:
            return _json_response({"error": f"LIST failed: {exc}"}, status=502)
        return _json_response(await compare_in_slices(self.scheduler, nodes, pods))

    async def explain(self, request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        fmt = request.query.get("format", "json")
        if fmt not in ("json", "text"):
            return web.Response(text=f"unknown format {fmt!r}: use json or text\n", status=400)
        try:
            obj = await self.get_pod(namespace, name)
        except Exception as exc:
            return _json_response({"error": f"reading pod {namespace}/{name} failed: {exc}"}, status=502)
        if obj is None:
            message = f'pods "{name}" not found in namespace "{namespace}"'
            if fmt == "text":
                return web.Response(text=f"{message}\n", status=404)
            return _json_response({"error": message}, status=404)
        try:
            pod = parse_pod(obj)
        except ParseError as exc:
            return _json_response({"error": f"pod {namespace}/{name} cannot be parsed: {exc}"}, status=422)
        # Private copies and fresh plugin instances, made on the loop; the thread touches nothing else.
        fwk, snapshot = self.scheduler.explain_environment(pod.scheduler_name)
        # Imported here: explanations (and their fix search) are only needed when asked for, and importing
        # them costs ~0.15 s of every start.
        from scheduler.core.explain import explain_pod, render_text

        expl = await asyncio.to_thread(explain_pod, fwk, pod, snapshot)
        if fmt == "text":
            return web.Response(text=render_text(expl) + "\n")
        return _json_response(expl.to_json())


def pod_getter(client: KubeClient) -> GetPod:
    """GetPod over the API: GET /api/v1/namespaces/{ns}/pods/{name}, None on 404."""

    async def get(namespace: str, name: str) -> JSON | None:
        try:
            obj: JSON = await client.request("GET", pod_path(namespace, name))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return obj

    return get


def signal_comparer(scheduler: Scheduler, list_cluster: ListCluster) -> Callable[[], None]:
    """The SIGUSR2 handler: compare the cache with a fresh LIST in a task and log one line (like upstream)."""
    running: set[asyncio.Task[None]] = set()

    async def run_comparison() -> None:
        try:
            nodes, pods = await list_cluster()
        except Exception as exc:
            log.error("cache comparison failed: LIST failed", extra={"error": str(exc)})
            return
        log_comparison(await compare_in_slices(scheduler, nodes, pods))

    def on_signal() -> None:
        if running:
            log.info("cache comparison already running; signal ignored")
            return
        task = asyncio.get_running_loop().create_task(run_comparison(), name="cache-compare")
        running.add(task)
        task.add_done_callback(running.discard)

    return on_signal
