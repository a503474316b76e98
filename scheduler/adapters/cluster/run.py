"""`pyscheduler run`: the scheduler against a live cluster, with health/metrics endpoints and clean shutdown.

Task layout, on the scheduling loop (the main thread; plugins and the cache live here):
  writer-N        ClusterWriter workers (events, PodScheduled patches)
  cache-sync      initial LIST ("caches synced"), then periodic resync
  pod-watch       PodWatch: the pods WATCH from the initial LIST's resourceVersion (relists on 410)
  informer-KIND   ObjectInformer: LIST+WATCH of each other kind the enabled plugins read (Namespaces, PVCs...)
  scheduling      waits for caches synced, kopf's node watch LISTed and leadership, then Scheduler.run
  watch-watchdog  opens that node-watch gate (readiness too), then ends the process if a kopf watcher dies
  kopf-operator   kopf's node watch (spawned last: kopf cancels tasks created after it started)
and on the control loop (a thread of its own, control_loop.py), so that a plugin blocking the scheduling
loop cannot cost the lease or the probes, each with a proxy task on the scheduling loop that supervises it:
  leader-election LeaseElector (leaderElection.leaderElect, its own client): campaigns, then renews; ends the
                  process if lost
  stall-monitor   StallMonitor: logs and counts the plugin call that blocks the scheduling loop
  the aiohttp server for /healthz /livez /readyz /metrics /configz (+ /debug/* with --enable-debug-handlers,
                  which run on the scheduling loop: they read the cache): HTTPS with delegated authentication
                  and authorization like kube-scheduler's secure port (serving/), or plain HTTP with no checks
                  under --insecure-serving. The TokenReviews and SubjectAccessReviews go through a client of
                  their own (own rate limit and connections, 10 s bound), so checking a scraper never waits
                  behind binds.

Every task is supervised: if one ends while we are not stopping, the process logs it and exits non-zero so
Kubernetes restarts it rather than leaving it half-alive. SIGTERM/SIGINT stop scheduling, wait for in-flight
binds, flush queued writes, stop kopf and close the clients, in that order.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, disable_created_metrics, generate_latest
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from scheduler.adapters.cluster.client import KubeClient
from scheduler.adapters.cluster.control_loop import ControlLoop, on_loop
from scheduler.adapters.cluster.debug import DebugHandlers, pod_getter, signal_comparer
from scheduler.adapters.cluster.informers import ObjectInformer
from scheduler.adapters.cluster.leader import LeaseElector
from scheduler.adapters.cluster.metrics import SchedulerMetrics, SchedulerStateCollector
from scheduler.adapters.cluster.pod_watch import PodWatch
from scheduler.adapters.cluster.serving.authn import REVIEW_TIMEOUT, DelegatingAuthenticator, token_reviewer
from scheduler.adapters.cluster.serving.authz import DelegatingAuthorizer, subject_access_reviewer
from scheduler.adapters.cluster.serving.guard import guard
from scheduler.adapters.cluster.serving.options import Serving, ServingOptions, prepare_serving
from scheduler.adapters.cluster.stall_monitor import StallMonitor
from scheduler.adapters.cluster.watch import DEFAULT_RESYNC_PERIOD, ClusterWatcher
from scheduler.adapters.cluster.writer import ClusterWriter
from scheduler.config.types import LeaderElection, SchedulerConfiguration
from scheduler.core.profile import build_scheduler
from scheduler.core.scheduler import Scheduler
from scheduler.framework.observer import Observer

log = logging.getLogger("pyscheduler.run")

LOOP_STALL_SECONDS = 60.0
SHUTDOWN_BIND_TIMEOUT = 30.0
SHUTDOWN_WRITE_TIMEOUT = 5.0
KOPF_STOP_TIMEOUT = 15.0
DEBUG_HANDLER_TIMEOUT = 60.0
"""A /debug/* request waits this long for the scheduling loop (where it runs) before answering 503."""
# The delegated authn/authz client's limits: upstream's delegating clients use qps 200 / burst 400 "since this
# will effectively limit API server responsiveness"; one retry, and every review bounded by REVIEW_TIMEOUT.
AUTH_QPS = 200.0
AUTH_BURST = 400
AUTH_MAX_RETRIES = 1

LeaderGate = Callable[[], Awaitable[None]]
"""Awaited before scheduling starts; returns once this instance leads. With leaderElection.leaderElect (and
no gate passed in) it is LeaseElector.wait_leading; watches and cache run before, so a standby is warm.
Losing the lease ends the process (exit non-zero), as kube-scheduler does, rather than stop in place."""


async def always_leader() -> None:
    """The LeaderGate without leader election (leaderElect: false, a single replica)."""


def jsonable(value: Any) -> Any:
    """The effective configuration as JSON (dataclasses, mapping proxies, enums, tuples, plugin args)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, Enum):
        return jsonable(value.value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if hasattr(value, "__dict__"):
        return {k: jsonable(v) for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)


class Health:
    """What /livez, /healthz and /readyz report."""

    def __init__(
        self,
        scheduler: Scheduler,
        watcher: ClusterWatcher,
        *,
        loop_stall: float = LOOP_STALL_SECONDS,
        watch_stale: float,
    ) -> None:
        self.scheduler = scheduler
        self.watcher = watcher
        self.loop_stall = loop_stall
        self.watch_stale = watch_stale
        self.scheduling_started = False
        self.kopf_task: asyncio.Task[None] | None = None
        self.informers: list[ObjectInformer] = []
        self.started = time.monotonic()

    def live_checks(self) -> dict[str, str | None]:
        """Check name -> failure reason (None when fine)."""
        now = time.monotonic()
        checks: dict[str, str | None] = {"ping": None}
        idle = self.scheduler.clock() - self.scheduler.last_loop_activity
        checks["scheduling-loop"] = (
            f"the scheduling loop has not run for {idle:.0f}s"
            if self.scheduling_started and idle > self.loop_stall
            else None
        )
        kopf_dead = self.kopf_task is not None and self.kopf_task.done()
        checks["kopf"] = "the watch operator has stopped" if kopf_dead else None
        last = self.watcher.last_activity() or self.started
        quiet = now - last
        checks["watch"] = (
            f"no watch event and no successful LIST for {quiet:.0f}s" if quiet > self.watch_stale else None
        )
        return checks

    def ready_checks(self) -> dict[str, str | None]:
        checks = self.live_checks()
        unsynced = [i.kind for i in self.informers if not i.synced.is_set()]
        if not self.watcher.synced.is_set():
            unsynced.insert(0, "nodes/pods")
        elif not self.watcher.node_watch_live.is_set():
            unsynced.insert(0, "node watch")
        checks["informer-sync"] = f"caches not synced yet: {', '.join(unsynced)}" if unsynced else None
        return checks


def _check_response(checks: dict[str, str | None], verbose: bool) -> web.Response:
    """k8s-style health answer: "ok", or a per-check listing with HTTP 500 when something failed."""
    failed = {k: v for k, v in checks.items() if v}
    if not failed and not verbose:
        return web.Response(text="ok")
    lines = [f"[-]{k} failed: {v}" if v else f"[+]{k} ok" for k, v in checks.items()]
    lines.append("healthz check failed" if failed else "healthz check passed")
    return web.Response(text="\n".join(lines) + "\n", status=500 if failed else 200)


def metrics_registry(scheduler: Scheduler, metrics: SchedulerMetrics) -> CollectorRegistry:
    """The registry /metrics serves: the observer's metrics, scrape-time state gauges, process/platform/gc.

    A dedicated registry (not prometheus_client's global REGISTRY) so two schedulers in one process (tests)
    never collide and nothing imported by accident shows up in the exposition.
    """
    # kube-scheduler exposes no `_created` series; without them each counter/histogram child is one series less.
    # (A process-wide switch of prometheus_client: this process serves only this registry.)
    disable_created_metrics()  # type: ignore[no-untyped-call]
    registry = metrics.registry
    for fwk in scheduler.profiles.values():  # a zero series per plugin and point, so rates exist from the start
        for plugin, point in fwk.plugin_points():
            metrics.plugin_errors.labels(plugin, point)
    registry.register(SchedulerStateCollector(scheduler))
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def build_app(
    health: Health,
    config: SchedulerConfiguration,
    registry: CollectorRegistry | None = None,
    *,
    middlewares: Sequence[Any] = (),
) -> web.Application:
    """The endpoints kube-scheduler serves; `middlewares` puts the secure port's guard in front of them."""
    metrics_source = registry if registry is not None else CollectorRegistry()

    async def livez(request: web.Request) -> web.Response:
        return _check_response(health.live_checks(), "verbose" in request.query)

    async def readyz(request: web.Request) -> web.Response:
        return _check_response(health.ready_checks(), "verbose" in request.query)

    async def metrics(_: web.Request) -> web.Response:
        body = generate_latest(metrics_source)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    configz_body = json.dumps({"componentconfig": jsonable(config)}, indent=2, sort_keys=True)

    async def configz(_: web.Request) -> web.Response:
        return web.Response(text=configz_body, content_type="application/json")

    app = web.Application(middlewares=list(middlewares))
    app.router.add_get("/healthz", livez)
    app.router.add_get("/livez", livez)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/configz", configz)
    return app


@dataclass(frozen=True)
class _App:
    """What the HTTP server is made of (built on the control loop by `_serve`)."""

    health: Health
    config: SchedulerConfiguration
    registry: CollectorRegistry
    serving: Serving
    metrics: SchedulerMetrics
    client: KubeClient
    debug: DebugHandlers | None
    scheduling_loop: asyncio.AbstractEventLoop


async def _serve(parts: _App) -> tuple[web.AppRunner, KubeClient | None]:
    """On the control loop: the secure port's client and guard, the app, listening. Debug handlers read the
    cache, so they are forwarded to the scheduling loop; everything else answers from here."""
    serving = parts.serving
    auth_client: KubeClient | None = None
    middlewares: list[Any] = []
    if serving.secure:
        auth_client = KubeClient(
            parts.client.configuration,
            qps=AUTH_QPS,
            burst=AUTH_BURST,
            request_timeout=REVIEW_TIMEOUT,
            max_retries=AUTH_MAX_RETRIES,
        )
        auth_client.request_observer = parts.metrics.rest_request
        authenticator = DelegatingAuthenticator(token_reviewer(auth_client))
        authorizer = DelegatingAuthorizer(subject_access_reviewer(auth_client), serving.always_allow)
        middlewares.append(guard(authenticator, authorizer))
    else:
        log.warning("--insecure-serving: plain HTTP, no authentication, no authorization; for local debugging only")
    app = build_app(parts.health, parts.config, parts.registry, middlewares=middlewares)
    if parts.debug is not None:
        parts.debug.register(app, wrap=lambda h: on_loop(parts.scheduling_loop, h, DEBUG_HANDLER_TIMEOUT))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, serving.bind_address, serving.port, ssl_context=serving.ssl_context)
        await site.start()
    except BaseException:
        await _close(runner, auth_client, None)
        raise
    return runner, auth_client


async def _close(runner: web.AppRunner | None, *clients: KubeClient | None) -> None:
    """On the control loop: stop serving, close the clients made there."""
    if runner is not None:
        with contextlib.suppress(Exception):
            await runner.cleanup()
    for c in clients:
        if c is not None:
            with contextlib.suppress(Exception):
                await c.close()


async def _lease_elector(client: KubeClient, config: LeaderElection) -> tuple[KubeClient, LeaseElector]:
    """On the control loop: leader election with a client of its own, whose connections belong to that loop
    (kube-scheduler gives leader election its own client too)."""
    lease_client = KubeClient(client.configuration, qps=client.limiter.qps, burst=client.limiter.burst)
    lease_client.request_observer = client.request_observer
    return lease_client, LeaseElector.for_cluster(lease_client, config)


async def _leading(control: ControlLoop, elector: LeaseElector) -> None:
    """The LeaderGate of an elector on the control loop: returns once it leads (or the process stops)."""
    await control.call(elector.wait_leading(control.stopping))


async def run(
    config: SchedulerConfiguration,
    kubeconfig: str | None,
    stop: asyncio.Event | None = None,
    serving: Serving | None = None,
    *,
    resync_period: float = DEFAULT_RESYNC_PERIOD,
    leader_gate: LeaderGate = always_leader,
    observer: Observer | None = None,
    install_signal_handlers: bool = True,
    debug_handlers: bool = False,
) -> int:
    """Run the scheduler until `stop` is set (or SIGTERM/SIGINT); returns the process exit code.

    0 after a requested stop; 1 when a background task died or the API server could not be reached at all.
    `observer` defaults to a SchedulerMetrics on a fresh registry; /metrics serves that registry (or a fresh
    one holding only the state gauges and process metrics when another kind of Observer is given).
    `serving` defaults to kube-scheduler's: HTTPS on 0.0.0.0:10259 with a self-signed certificate.
    """
    stop = stop or asyncio.Event()
    serving = serving or prepare_serving(ServingOptions())
    loop = asyncio.get_running_loop()
    client = await KubeClient.create(
        kubeconfig or (config.client_connection.kubeconfig or None),
        qps=config.client_connection.qps,
        burst=config.client_connection.burst,
    )
    writer = ClusterWriter(client)
    metrics = observer if isinstance(observer, SchedulerMetrics) else SchedulerMetrics(CollectorRegistry())
    client.request_observer = metrics.rest_request
    scheduler = build_scheduler(writer, config, observer=observer or metrics)
    registry = metrics_registry(scheduler, metrics)
    watcher = ClusterWatcher(scheduler, client, writer, resync_period=resync_period)
    health = Health(scheduler, watcher, watch_stale=2 * resync_period + 60.0)
    kinds = sorted({kind for fwk in scheduler.profiles.values() for kind in fwk.object_kinds()})
    informers = [ObjectInformer(kind, scheduler, client, resync_period=resync_period) for kind in kinds]
    health.informers = informers
    # Leader election and the HTTP server run on a loop of their own: a plugin blocking this loop cannot
    # cost the lease or the probes (control_loop.py).
    control = ControlLoop()
    control.start()
    elector: LeaseElector | None = None
    lease_client: KubeClient | None = None
    if config.leader_election.leader_elect and leader_gate is always_leader:
        lease_client, elected = await control.call(_lease_elector(client, config.leader_election))
        writer.bind_guard = elected.bind_allowance  # no bind is sent once leadership may be lost
        leader_gate = functools.partial(_leading, control, elected)
        elector = elected
    if elector is not None:  # the lease itself, read at scrape time; not when scheduling starts (caches may lag)
        metrics.leader.set_function(lambda: 1.0 if elector.is_leader() else 0.0)

    def stats() -> dict[str, Any]:
        return {
            "watch": watcher.stats,
            "writer": writer.stats,
            "client": client.stats,
            "rate_limiter_waited_seconds": client.limiter.waited_seconds,
            "event_rate_limiter_waited_seconds": client.event_limiter.waited_seconds,
            "queue": scheduler.queue.pending(),
            "bound": scheduler.bound_count,
            "attempts": scheduler.attempts,
            "writes_queued": writer.queued(),
            "leader_election": elector.describe() if elector is not None else None,
        }

    debug: DebugHandlers | None = None
    if debug_handlers:  # --enable-debug-handlers: /debug/flags/v, /debug/cache[/compare], /debug/explain, stats
        debug = DebugHandlers(scheduler, watcher.list_cluster, pod_getter(client), stats=lambda: jsonable(stats()))
    runner: web.AppRunner | None = None
    auth_client: KubeClient | None = None
    tasks: dict[asyncio.Task[Any], str] = {}
    kopf_stop = asyncio.Event()
    kopf_task: asyncio.Task[None] | None = None
    scheduling_task: asyncio.Task[None] | None = None
    code = 0
    try:
        app_parts = _App(health, config, registry, serving, metrics, client, debug, loop)
        runner, auth_client = await control.call(_serve(app_parts))
        log.info(
            "serving health and metrics",
            extra={
                "address": serving.bind_address,
                "port": serving.port,
                "scheme": serving.scheme,
                "selfSignedCertificate": serving.self_signed,
                "clientCertificates": serving.client_certificates,
                "alwaysAllowPaths": list(serving.always_allow.paths),
            },
        )

        async def scheduling() -> None:
            await watcher.synced.wait()
            await watcher.node_watch_live.wait()  # kopf's node watch has LISTed (await_node_watch)
            for informer in informers:  # WaitForCacheSync: plugins must see every object before deciding
                await informer.synced.wait()
            await leader_gate()
            if stop.is_set():
                return
            health.scheduling_started = True
            if elector is None:  # no lease: this replica leads once it schedules
                metrics.leader.set(1)
            log.info("starting to schedule", extra={"profiles": sorted(scheduler.profiles)})
            await scheduler.run(stop)

        for t in writer.start():
            tasks[t] = t.get_name()
        sync_task = loop.create_task(watcher.run(stop), name="cache-sync")
        tasks[sync_task] = "cache-sync"
        scheduling_task = loop.create_task(scheduling(), name="scheduling")
        tasks[scheduling_task] = "scheduling"
        watchdog_task = loop.create_task(watcher.watchdog(stop), name="watch-watchdog")
        tasks[watchdog_task] = "watch-watchdog"
        pod_watch_task = loop.create_task(PodWatch(watcher).run(stop), name="pod-watch")
        tasks[pod_watch_task] = "pod-watch"
        for informer in informers:
            name = f"informer-{informer.kind}"
            tasks[loop.create_task(informer.run(stop), name=name)] = name
        if elector is not None:
            elector_task = loop.create_task(control.call(elector.run(control.stopping)), name="leader-election")
            tasks[elector_task] = "leader-election"
        plugins = [p for fwk in scheduler.profiles.values() for p in fwk.plugins.values()]
        monitor = StallMonitor(loop, threading.get_ident(), plugins, metrics.plugin_long_call)
        tasks[loop.create_task(control.call(monitor.run(control.stopping)), name="stall-monitor")] = "stall-monitor"
        # Last: kopf treats every task created after this point as its own (see ClusterWatcher.start_kopf).
        kopf_task = await watcher.start_kopf(kopf_stop)
        health.kopf_task = kopf_task
        tasks[kopf_task] = "kopf-operator"
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.add_signal_handler(sig, _on_signal, stop, sig)
            # SIGUSR2 (kube-scheduler's cache debugger signal): log the cache compared with a fresh LIST.
            # Installed here with the others, after kopf replaced the loop's handlers, and removed with them.
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signal.SIGUSR2, signal_comparer(scheduler, watcher.list_cluster))

        stop_waiter = loop.create_task(stop.wait(), name="stop-waiter")
        try:
            done, _ = await asyncio.wait([stop_waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop_waiter.cancel()
        if not stop.is_set():
            for task in done:
                if task is stop_waiter:
                    continue
                name = tasks.get(task, task.get_name())
                exc = None if task.cancelled() else task.exception()
                log.critical(
                    "background task ended unexpectedly; exiting",
                    extra={"task": name, "error": repr(exc) if exc else "returned"},
                    exc_info=exc,
                )
            code = 1
            stop.set()
    finally:
        stop.set()
        control.set_stopping()
        if scheduling_task is not None and not health.scheduling_started:
            # Still waiting for caches (e.g. a refused LIST) or leadership: no bind to drain, nothing to wait for.
            scheduling_task.cancel()
            await asyncio.gather(scheduling_task, return_exceptions=True)
        if elector is None:
            metrics.leader.set(0)
        release: Callable[[], Awaitable[None]] | None = None
        if elector is not None:
            leader = elector

            async def release_lease() -> None:
                await control.call(leader.release())

            release = release_lease
        await _shutdown(scheduler, scheduling_task, writer, tasks, kopf_stop, kopf_task, release)
        with contextlib.suppress(Exception):
            await control.call(_close(runner, auth_client, lease_client))
        await control.stop()
        await client.close()
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR2):
                with contextlib.suppress(Exception):
                    loop.remove_signal_handler(sig)
    log.info(
        "stopped",
        extra={"code": code, "bound": scheduler.bound_count, "dropped_events": writer.stats.dropped_events},
    )
    return code


def _on_signal(stop: asyncio.Event, sig: signal.Signals) -> None:
    if stop.is_set():
        log.warning("second signal; exiting now", extra={"signal": sig.name})
        raise SystemExit(1)
    log.info("signal received; shutting down", extra={"signal": sig.name})
    stop.set()


async def _shutdown(
    scheduler: Scheduler,
    scheduling_task: asyncio.Task[None] | None,
    writer: ClusterWriter,
    tasks: dict[asyncio.Task[Any], str],
    kopf_stop: asyncio.Event,
    kopf_task: asyncio.Task[None] | None,
    release: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Stop in dependency order: scheduling (drain binds), lease release, writes, periodic sync, then kopf.

    The lease is released right after the last bind (not after the slower flush and kopf stop), so a
    rolling update hands over at once without two replicas ever binding together.
    """
    if scheduling_task is not None and not scheduling_task.done():
        try:
            async with asyncio.timeout(SHUTDOWN_BIND_TIMEOUT):
                await asyncio.shield(scheduling_task)
        except TimeoutError:
            log.error("in-flight binds did not finish in time; cancelling them")
            scheduling_task.cancel()
        except Exception:
            log.exception("scheduling loop failed during shutdown")
    with contextlib.suppress(Exception):
        async with asyncio.timeout(SHUTDOWN_BIND_TIMEOUT):
            await scheduler.drain()
    if release is not None:
        await release()
    await writer.close(SHUTDOWN_WRITE_TIMEOUT)
    others = [t for t, name in tasks.items() if name != "kopf-operator" and not t.done()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)
    kopf_stop.set()
    if kopf_task is not None and not kopf_task.done():
        try:
            async with asyncio.timeout(KOPF_STOP_TIMEOUT):
                await asyncio.shield(kopf_task)
        except TimeoutError:
            log.error("kopf did not stop in time; cancelling it")
            kopf_task.cancel()
            await asyncio.gather(kopf_task, return_exceptions=True)
        except Exception:
            log.exception("kopf failed while stopping")
