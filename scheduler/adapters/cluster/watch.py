"""Keeping the scheduler's cache in step with the cluster: kopf watches plus periodic LIST reconciliation.

kopf (embedded in our event loop, private registry, standalone, no posting, no CRD scanning) watches all
nodes; `PodWatch` (pod_watch.py, a plain streaming WATCH, far cheaper per event than kopf) watches all
non-terminal pods (every scheduler's: their requests and host ports occupy nodes). Both hand each event's raw
object to `dispatch`, hence to `EventHandlers.on_node_event` / `on_pod_event` (core/event_handlers.py).

kopf re-LISTs after a 410 without emitting DELETED for objects that vanished in the gap, and a watch can
silently miss events; so `ClusterWatcher` also LISTs nodes and pods itself: once at startup (that LIST is
"caches synced", the readiness gate and the point where scheduling may start, like WaitForCacheSync) and then
every `resync_period` seconds through `EventHandlers.resync`, which repairs and reports drift.

A LIST is a snapshot at one resourceVersion, but watch events keep arriving while it is in flight. Applying
the snapshot as is would roll those newer events back (e.g. forget a pod bound a moment ago), so every watch
event received during the LIST is recorded and overlaid on the snapshot, where it is newer than what the
LIST shows (a watch that is catching up delivers events older than the LIST: those must not win).

Conversely a LIST can be ahead of a watch that is catching up (after a reconnect, or on a slow stream): its
differences are then watch lag, not drift. So a periodic resync applies nothing at once: it notes the
differences (`EventHandlers.resync_suspects`) and re-checks them `lag_grace` seconds later
(`EventHandlers.settle`). What the watches changed meanwhile was lag; what is still as it was is drift,
repaired and counted then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import kopf

from scheduler.adapters.cluster.client import JSON, ApiError, KubeClient, pod_path, wait_first, wait_or_stop
from scheduler.adapters.cluster.streaming import WatchDiedError
from scheduler.adapters.cluster.writer import ClusterWriter
from scheduler.core import gc_policy
from scheduler.core.event_handlers import DELETED
from scheduler.core.scheduler import Scheduler

log = logging.getLogger("pyscheduler.watch")

POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
NODES_PATH = "/api/v1/nodes"
PODS_PATH = "/api/v1/pods"
DEFAULT_RESYNC_PERIOD = 300.0
LIST_PAGE_SIZE = 500
APPLY_CHUNK = 100  # listed objects applied between two yields to the event loop during the initial sync
# How long a periodic resync leaves its differences to the watches before calling them drift: longer than a
# reconnect of a failing watch waits (pod_watch.BACKOFF_MAX) plus a LIST of what it missed.
LAG_GRACE = 15.0
# Consecutive 401/403 answers to the initial LIST before the process gives up (exits non-zero) instead of
# hanging unready: a few, because a RoleBinding created a moment ago may not be in the authorizer's cache yet.
FORBIDDEN_ATTEMPTS = 3

Key = tuple[str, str]  # ("nodes", name) or ("pods", uid)
WATCHED = ("nodes.v1",)  # how kopf names the resources in its watcher task names (pods: PodWatch)
NODE_WATCH_POLL = 0.05  # how often readiness looks for kopf's node watcher before it has delivered anything
NODE_WATCH_SETTLE = 0.5  # after the watcher appears and kopf logged in, the wait for its LIST of no nodes
NODE_WATCH_FALLBACK = 10.0  # the most readiness waits for kopf's node watch after the sync (logged when it gives up)


class AccessDeniedError(RuntimeError):
    """The API server keeps refusing (401/403) the initial LIST: RBAC or credentials are wrong; exit."""


@dataclass(slots=True)
class WatchStats:
    """What the watches and reconciliations did (for logs, /livez and later metrics)."""

    events: dict[str, int] = field(default_factory=dict)
    handler_errors: int = 0
    last_event: float = 0.0
    synced: bool = False
    initial_sync_seconds: float = 0.0
    initial_nodes: int = 0
    initial_pods: int = 0
    resyncs: int = 0
    resync_failures: int = 0
    last_list: float = 0.0
    last_resync_seconds: float = 0.0
    drift_total: dict[str, int] = field(default_factory=dict)
    consecutive_drifting_resyncs: int = 0
    lag_resolved: int = 0  # differences of periodic resyncs the watches resolved within lag_grace (not drift)


def _pod_key(obj: JSON) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name')}")


def _node_key(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _rv_number(obj: JSON | None) -> int | None:
    """An object's resourceVersion as a number, or None. Kubernetes calls resourceVersions opaque, but the
    etcd3 storage of every API server writes decimal revisions; only overlay ordering relies on this, and an
    unparsable one falls back to "the watch event wins"."""
    rv = ((obj or {}).get("metadata") or {}).get("resourceVersion")
    try:
        return int(str(rv))
    except (TypeError, ValueError):
        return None


def _event_is_older(event: JSON, listed: JSON | None, list_rv: str) -> bool:
    """Is a watch event received during a LIST older than what the LIST shows? (True: the LIST wins.)

    Listed: compare the two versions. Not listed: an event older than the LIST itself is for an object the
    LIST no longer has (deleted since), which the event must not bring back.
    """
    seen = _rv_number(event)
    if seen is None:
        return False
    if listed is not None:
        shown = _rv_number(listed)
        return shown is not None and seen < shown
    try:
        return seen <= int(list_rv)
    except ValueError:
        return False


class _NoDiffBase(kopf.DiffBaseStorage):
    """No diff base: we only have @kopf.on.event handlers, which never look at diffs.

    kopf otherwise deep-copies every object into an "essence" and diffs it against the previous one on every
    event, whatever the handlers are: 6.4 of 20 s CPU per 1100 scheduled pods measured end to end.
    """

    def build(self, *, body: Any, extra_fields: Any = None) -> Any:
        return None

    def fetch(self, *, body: Any) -> Any:
        return None

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        return None


def kopf_settings(
    *,
    server_timeout: int = 300,
    client_timeout: float = 330.0,
    connect_timeout: float = 10.0,
    inactivity_timeout: float = 70.0,
    request_timeout: float = 60.0,
) -> kopf.OperatorSettings:
    """kopf as a pure watch layer: no peering, no events, no CRD scanning, no SIGKILL timer, timeouts on."""
    settings = kopf.OperatorSettings()
    settings.posting.enabled = False
    settings.peering.standalone = True
    settings.peering.clusterwide = True
    settings.process.ultimate_exiting_timeout = None  # embedded: kopf must never SIGKILL our thread
    settings.persistence.diffbase_storage = _NoDiffBase()
    settings.scanning.disabled = True  # nodes/pods are built in; no CRD/namespace list-watch RBAC needed
    # The key must be ('v1', 'pods'): the documented 'v1/pods' silently matches nothing in kopf 1.45.2.
    settings.watching.field_selectors["v1", "pods"] = POD_FIELD_SELECTOR
    # timeoutSeconds: the API server ends the watch. Must be an int: kopf sends it verbatim, and "300.0"
    # makes the API server answer 400, which kills that watcher for good (kopf logs it and goes on).
    settings.watching.server_timeout = int(server_timeout)
    settings.watching.client_timeout = client_timeout  # aiohttp total, in case the server does not
    settings.watching.connect_timeout = connect_timeout
    settings.watching.inactivity_timeout = inactivity_timeout  # no event nor bookmark: reconnect
    settings.watching.chunk_size = LIST_PAGE_SIZE
    settings.networking.request_timeout = request_timeout
    settings.networking.connect_timeout = connect_timeout
    return settings


class ClusterWatcher:
    """kopf watches + LIST reconciliation feeding one Scheduler."""

    def __init__(
        self,
        scheduler: Scheduler,
        client: KubeClient,
        writer: ClusterWriter | None = None,
        *,
        resync_period: float = DEFAULT_RESYNC_PERIOD,
        settings: kopf.OperatorSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
        lag_grace: float = LAG_GRACE,
    ) -> None:
        self.scheduler = scheduler
        self.lag_grace = lag_grace
        self.client = client
        self.writer = writer
        self.resync_period = resync_period
        self.settings = settings or kopf_settings()
        self.clock = clock
        self.stats = WatchStats()
        self.synced = asyncio.Event()
        # Set once kopf's node stream has delivered its LIST (see await_node_watch): readiness and the first
        # scheduling cycle wait for it, as WaitForCacheSync waits for every informer to be watching.
        self.node_watch_live = asyncio.Event()
        self.kopf_logged_in = 0.0  # clock time kopf first got its credentials (0: not yet)
        self.registry = kopf.OperatorRegistry()
        self._recording: dict[Key, tuple[str | None, JSON]] | None = None
        self._list_lock = asyncio.Lock()  # one LIST (and its recording) at a time
        self._deletions: set[Key] | None = None  # deletions seen while a resync waits for the watches
        self._touched: set[Key] | None = None  # objects a watch event changed since a lag-aware LIST was requested
        self.pods_resource_version = ""  # of the latest pods LIST: where PodWatch starts (or resumes after 410)
        self._register()

    # ------------------------------------------------------------------ kopf

    def _register(self) -> None:
        registry = self.registry

        @kopf.on.login(registry=registry, id="pyscheduler-login")
        async def login(**_: Any) -> kopf.ConnectionInfo:
            info = await self.client.connection_info()
            self.kopf_logged_in = self.kopf_logged_in or self.clock()  # kopf's requests wait for this
            return info

        # Handlers must be `async def`: kopf runs sync handlers in a thread pool, and the core is not
        # thread-safe. `event["object"]` is the raw dict kopf decoded; `body` would only wrap it.
        @kopf.on.event("v1", "nodes", registry=registry, id="pyscheduler-nodes")
        async def on_node(type: str, event: kopf.RawEvent, **_: Any) -> None:
            self.dispatch("nodes", type, dict(event["object"]))
            self.node_watch_live.set()

        # Pods are not kopf's: PodWatch (pod_watch.py) streams them into `dispatch` itself.

    def dispatch(self, resource: str, kind: str | None, obj: JSON) -> None:
        """Apply one watch event (and remember it if a LIST is in flight)."""
        self.stats.last_event = self.clock()
        label = f"{resource}:{kind or 'LISTED'}"
        self.stats.events[label] = self.stats.events.get(label, 0) + 1
        key = _pod_key(obj) if resource == "pods" else _node_key(obj)
        if self._recording is not None:
            self._recording[(resource, key)] = (kind, obj)
        if kind == DELETED and self._deletions is not None:
            self._deletions.add((resource, key))
        if self._touched is not None and kind is not None:
            self._touched.add((resource, key))
        try:
            if resource == "pods":
                self.scheduler.events.on_pod_event(kind, obj)
                if kind == DELETED and self.writer is not None:
                    self.writer.forget_pod(key)
            else:
                self.scheduler.events.on_node_event(kind, obj)
        except Exception:  # kopf would log and drop it anyway; count it and keep the key in the log
            self.stats.handler_errors += 1
            log.exception("watch event handler failed", extra={"resource": resource, "key": key, "type": kind})

    async def start_kopf(self, stop_flag: asyncio.Event) -> asyncio.Task[None]:
        """Spawn kopf's tasks in this loop and return the task that runs them until `stop_flag` is set.

        kopf's run_tasks cancels, when it ends, every task created after it started except those it was
        told to ignore. So the caller must create its own long-lived tasks *before* this call (they are
        snapshotted here as ignored), stop kopf only after everything else has finished, and re-install its
        SIGINT/SIGTERM handlers afterwards (spawn_tasks replaces them in the main thread).
        """
        existing = asyncio.all_tasks()
        tasks = await kopf.spawn_tasks(
            registry=self.registry,
            settings=self.settings,
            clusterwide=True,
            standalone=True,
            stop_flag=stop_flag,
        )
        return asyncio.get_running_loop().create_task(kopf.run_tasks(tasks, ignored=existing), name="kopf-operator")

    # ------------------------------------------------------------------ LIST + reconcile

    async def list_cluster(self) -> tuple[list[JSON], list[JSON]]:
        """LIST nodes and non-terminal pods; overlay the newer watch events that arrived meanwhile."""
        async with self._list_lock:
            self._recording = {}
            try:
                (nodes, nodes_rv), (pods, pods_rv) = await asyncio.gather(
                    self.client.list_all(NODES_PATH, limit=LIST_PAGE_SIZE),
                    self.client.list_all(PODS_PATH, field_selector=POD_FIELD_SELECTOR, limit=LIST_PAGE_SIZE),
                )
                recorded = self._recording
            finally:
                self._recording = None
        self.stats.last_list = self.clock()
        self.pods_resource_version = pods_rv
        if not recorded:
            return nodes, pods
        by_node = {_node_key(o): o for o in nodes}
        by_pod = {_pod_key(o): o for o in pods}
        for (resource, key), (kind, obj) in recorded.items():
            target, list_rv = (by_pod, pods_rv) if resource == "pods" else (by_node, nodes_rv)
            if kind == DELETED:
                target.pop(key, None)  # a deletion is final (a new object gets a new uid)
            elif not _event_is_older(obj, target.get(key), list_rv):
                target[key] = obj
        return list(by_node.values()), list(by_pod.values())

    async def initial_sync(self) -> None:
        """First LIST, applied as initial-list events (type None); then the caches count as synced.

        Nodes first, then pods page by page as they arrive: the API server prepares the next page (list_pages
        prefetches it) while this one is parsed, and the loop is yielded to every APPLY_CHUNK objects so that
        request and the watches progress. Watch events received meanwhile are dispatched at once and
        recorded; at the end each recorded object is settled as list_cluster's overlay would (the newer of
        the event and the listed copy wins; a deletion is final), so nothing the LIST applied later rolls a
        newer event back. A lagging event older than the listed copy it replaced is undone by reading the
        object again (rare; it saves keeping every listed object alive until the end, which at 150,000 pods
        is most of the startup's peak memory).
        """
        start = self.clock()
        counts = {"nodes": 0, "pods": 0}
        with gc_policy.bulk_load():  # the cache's objects live long: build them without collections, then freeze
            async with self._list_lock:
                self._recording = {}
                try:
                    listed: dict[Key, str] = {}  # -> the listed copy's resourceVersion
                    list_rv = {"nodes": "", "pods": ""}
                    collections = (("nodes", NODES_PATH, None), ("pods", PODS_PATH, POD_FIELD_SELECTOR))
                    for resource, path, selector in collections:
                        list_rv[resource] = await self._list_and_apply(resource, path, selector, listed, counts)
                    recorded = self._recording
                finally:
                    self._recording = None
                self.stats.last_list = self.clock()
                self.pods_resource_version = list_rv["pods"]
                stale: list[tuple[str, JSON]] = []
                for (resource, key), (kind, obj) in recorded.items():
                    shown_rv = listed.get((resource, key))
                    shown = {"metadata": {"resourceVersion": shown_rv}} if shown_rv is not None else None
                    if kind == DELETED:
                        self.dispatch(resource, DELETED, obj)
                    elif not _event_is_older(obj, shown, list_rv[resource]):
                        self._apply_listed(resource, obj)
                    elif shown is not None:
                        stale.append((resource, obj))
                del listed
                for resource, obj in stale:
                    await self._reread(resource, obj)
        n_nodes, n_pods = counts["nodes"], counts["pods"]
        self.stats.initial_sync_seconds = self.clock() - start
        self.stats.initial_nodes, self.stats.initial_pods = n_nodes, n_pods
        self.stats.synced = True
        self.synced.set()
        log.info(
            "caches synced",
            extra={
                "nodes": n_nodes,
                "pods": n_pods,
                "seconds": round(self.stats.initial_sync_seconds, 3),
            },
        )

    async def _list_and_apply(
        self, resource: str, path: str, selector: str | None, listed: dict[Key, str], counts: dict[str, int]
    ) -> str:
        """LIST one collection page by page, applying each object as listed; returns the LIST's resourceVersion.
        An expired continue token starts over (re-applying a listed object changes nothing)."""
        key_of = _pod_key if resource == "pods" else _node_key
        for attempt in range(3):
            continued = False
            try:
                pages = self.client.list_pages(path, field_selector=selector, limit=LIST_PAGE_SIZE)
                async with contextlib.aclosing(pages) as it:
                    async for items, rv, token in it:
                        for i, obj in enumerate(items):
                            listed[(resource, key_of(obj))] = str((obj.get("metadata") or {}).get("resourceVersion"))
                            self._apply_listed(resource, obj)
                            if i % APPLY_CHUNK == APPLY_CHUNK - 1:
                                await asyncio.sleep(0)
                        await asyncio.sleep(0)
                        if not token:
                            counts[resource] = sum(1 for r, _ in listed if r == resource)
                            return rv
                        continued = True
            except ApiError as exc:
                if exc.status != 410 or not continued or attempt == 2:
                    raise
                log.warning("LIST continue token expired; listing again", extra={"path": path})
        raise AssertionError("unreachable")

    async def _reread(self, resource: str, event_obj: JSON) -> None:
        """Apply the API server's current copy of an object a lagging watch event rolled back (gone: delete)."""
        meta = event_obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        path = pod_path(str(meta.get("namespace") or "default"), name) if resource == "pods" else f"{NODES_PATH}/{name}"
        try:
            current = await self.client.request("GET", path)
        except ApiError as exc:
            if exc.status != 404:
                raise
            self.dispatch(resource, DELETED, event_obj)
            return
        key_of = _pod_key if resource == "pods" else _node_key
        if key_of(current) != key_of(event_obj):  # deleted and re-created under the same name meanwhile
            self.dispatch(resource, DELETED, event_obj)
        self._apply_listed(resource, current)

    def _apply_listed(self, resource: str, obj: JSON) -> None:
        try:
            if resource == "pods":
                self.scheduler.events.on_pod_event(None, obj)
            else:
                self.scheduler.events.on_node_event(None, obj)
        except Exception:
            self.stats.handler_errors += 1
            log.exception("applying a listed object failed", extra={"resource": resource})

    async def resync(self, *, lag_aware: bool = True) -> dict[str, int]:
        """LIST and converge the cache; returns and logs the repaired counts (the drift).

        lag_aware (periodic resyncs): differences are left to the watches for `lag_grace` seconds, and only
        those still unresolved then are repaired and counted (`EventHandlers.settle`). Otherwise (after a 410,
        when the pod watch restarts from this LIST) everything is applied at once (`EventHandlers.resync`).
        """
        start = self.clock()
        if lag_aware:
            self._deletions = set()
            touched = self._touched = set()
            try:
                nodes, pods = await self.list_cluster()
                self._touched = None  # later events are the watches resolving suspects: settle sees them
                suspects = self.scheduler.events.resync_suspects(
                    list[Mapping[str, Any]](nodes),
                    list[Mapping[str, Any]](pods),
                    lambda resource, key: (resource, key) in touched,
                )
                repaired: dict[str, int] = {}
                if suspects:
                    log.debug("resync: waiting for the watches", extra={"differences": len(suspects)})
                    await asyncio.sleep(self.lag_grace)
                    deletions = self._deletions
                    repaired = self.scheduler.events.settle(
                        suspects, lambda resource, key: (resource, key) in deletions
                    )
                    self.stats.lag_resolved += len(suspects) - sum(repaired.values())
            finally:
                self._deletions = None
                self._touched = None
        else:
            nodes, pods = await self.list_cluster()
            repaired = self.scheduler.events.resync(list[Mapping[str, Any]](nodes), list[Mapping[str, Any]](pods))
        self.stats.resyncs += 1
        self.stats.last_resync_seconds = self.clock() - start
        drift = {k: v for k, v in repaired.items() if v}
        for kind, count in drift.items():
            self.stats.drift_total[kind] = self.stats.drift_total.get(kind, 0) + count
        if drift:
            self.stats.consecutive_drifting_resyncs += 1
            log.warning("resync repaired cache drift", extra={"drift": drift, "nodes": len(nodes), "pods": len(pods)})
        else:
            self.stats.consecutive_drifting_resyncs = 0
            log.debug("resync found no drift", extra={"nodes": len(nodes), "pods": len(pods)})
        return drift

    async def run(self, stop: asyncio.Event, *, first_resync_after: float | None = None) -> None:
        """Initial sync (retried until it works), then a resync every resync_period until stop is set.

        A 401/403 answered FORBIDDEN_ATTEMPTS times in a row raises AccessDeniedError (the process exits
        non-zero with the server's message) rather than retrying forever.

        The first resync comes sooner (`first_resync_after`, default min(period, 60 s)) to repair anything
        the startup race between kopf's own initial LIST and ours left behind.
        """
        backoff = 1.0
        forbidden = 0
        while not self.synced.is_set():
            try:
                await self.initial_sync()
            except ApiError as exc:
                forbidden = forbidden + 1 if exc.status in (401, 403) else 0
                if forbidden >= FORBIDDEN_ATTEMPTS:
                    # The message names the verb, resource and identity ('nodes is forbidden: User "..." cannot
                    # list resource "nodes" ...'); retrying forever would only leave the process unready.
                    log.critical(
                        "initial LIST refused by the API server; exiting (check the RBAC rules / credentials)",
                        extra={"status": exc.status, "error": exc.message},
                    )
                    raise AccessDeniedError(f"initial LIST refused (HTTP {exc.status}): {exc.message}") from exc
                log.error("initial LIST failed; retrying", extra={"status": exc.status, "error": exc.message})
                if await wait_or_stop(stop, backoff):
                    return
                backoff = min(backoff * 2, 30.0)
        delay = first_resync_after if first_resync_after is not None else min(self.resync_period, 60.0)
        while not await wait_or_stop(stop, delay):
            delay = self.resync_period
            try:
                await self.resync()
            except ApiError as exc:
                self.stats.resync_failures += 1
                log.error("resync LIST failed", extra={"status": exc.status, "error": exc.message})

    async def watchdog(self, stop: asyncio.Event, *, period: float = 2.0, grace: float = 60.0) -> None:
        """End (raising WatchDiedError) when one of kopf's watcher tasks is gone for good.

        kopf logs a watcher that fails (a 4xx such as 403/400, or a non-410 ERROR event) and carries on
        without it: the process would look alive while seeing nothing. Its watcher tasks are named
        "watcher for nodes.v1@None" etc.; each must appear within `grace` seconds of the initial sync and stay.
        Before that it runs await_node_watch, the readiness gate.
        """
        if await wait_first(self.synced, stop):
            return
        started = self.clock()
        if await self.await_node_watch(stop):
            return
        seen: set[str] = set()
        missing_rounds = 0
        while not await wait_or_stop(stop, period):
            alive = _kopf_watchers()
            seen |= alive
            lost = seen - alive
            never = set(WATCHED) - seen if self.clock() - started > grace else set()
            missing_rounds = missing_rounds + 1 if lost or never else 0
            if missing_rounds >= 3:
                raise WatchDiedError(f"kopf watch stream(s) not running: {sorted(lost | never)}")

    async def await_node_watch(
        self,
        stop: asyncio.Event,
        *,
        poll: float = NODE_WATCH_POLL,
        settle: float = NODE_WATCH_SETTLE,
        fallback: float = NODE_WATCH_FALLBACK,
    ) -> bool:
        """Set `node_watch_live` once kopf's node watch has LISTed; True if stopped first.

        Our node LIST and kopf's are two requests: between them a node created after /readyz said ok would
        reach the cache only when kopf's LIST and watch got to it, and a pod created just after it would be
        tried against a node set without it ("no nodes available to schedule pods"). kopf's first node event
        (listing or watch) means its first LIST page is in; when the sync listed no nodes there is no such
        event, so the gate opens `settle` seconds after kopf's node watcher task is there and kopf has its
        credentials (its LIST waits for them; then a LIST of nothing is one short request). If kopf delivers
        nothing (every listed node deleted in between, or its watcher not running) the gate opens `fallback`
        seconds after the sync, logged, rather than never.
        """
        start = self.clock()
        appeared: float | None = None
        while not self.node_watch_live.is_set():
            now = self.clock()
            if appeared is None and WATCHED[0] in _kopf_watchers():
                appeared = now
            kopf_ready = appeared is not None and self.kopf_logged_in > 0
            since = max(appeared or 0.0, self.kopf_logged_in)
            if kopf_ready and self.stats.initial_nodes == 0 and now - since >= settle:
                self.node_watch_live.set()
                break
            if now - start >= fallback:  # the watchdog ends the process if kopf's watcher never shows up
                log.warning(
                    "kopf's node watch delivered no event; readiness no longer waits for it",
                    extra={
                        "seconds": round(now - start, 1),
                        "listedNodes": self.stats.initial_nodes,
                        "watcherRunning": appeared is not None,
                    },
                )
                self.node_watch_live.set()
                break
            if await wait_or_stop(stop, poll):
                return True
        return False

    def last_activity(self) -> float:
        """Clock time of the latest watch event or successful LIST."""
        return max(self.stats.last_event, self.stats.last_list)


def _kopf_watchers() -> set[str]:
    """The resources of WATCHED whose kopf watcher task is running ("watcher for nodes.v1@None")."""
    return {
        resource
        for task in asyncio.all_tasks()
        if not task.done() and task.get_name().startswith("watcher for ")
        for resource in WATCHED
        if task.get_name().startswith(f"watcher for {resource}@")
    }
