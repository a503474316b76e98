"""Talking to the API server: a rate-limited, retrying, always-timed-out client and the ClusterAPI writer.

kubernetes_asyncio has no client-side rate limit, no retries and no default timeouts (a half-open connection
hangs forever), and its generated `create_namespaced_pod_binding` raises ValueError *after* a successful
binding because it cannot deserialize the v1.Status answer. So every request here goes through
`KubeClient.request`: raw JSON in and out (`_preload_content=False`), a token bucket honouring
clientConnection qps/burst (like client-go's flowcontrol), an explicit aiohttp timeout and a bounded retry on
429/5xx/timeouts with jittered exponential backoff (and Retry-After).

`ClusterWriter` implements `scheduler.core.api.ClusterAPI`. Binds are awaited by the binding cycle; events and
PodScheduled condition patches are fire-and-forget: they go into bounded in-memory queues drained by a few
worker tasks, so the scheduling loop never waits for the API server to record what it did.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import random
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, cast
from urllib.parse import quote, urlsplit

import aiohttp
import kopf
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config.config_exception import ConfigException

from scheduler.core.api import (
    ACTION_BINDING,
    ACTION_SCHEDULING,
    EVENT_FAILED_SCHEDULING,
    EVENT_SCHEDULED,
    AlreadyBoundError,
    BindError,
    PodGoneError,
)
from scheduler.framework.fit_error import truncate_message
from scheduler.framework.types import PodInfo

log = logging.getLogger("pyscheduler.client")

JSON = dict[str, Any]

CONNECT_TIMEOUT = 5.0
REQUEST_TIMEOUT = 30.0
MAX_RETRIES = 4
BACKOFF_BASE = 0.2
BACKOFF_CAP = 5.0
RETRY_AFTER_CAP = 10.0
_PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")
USER_AGENT = "pyscheduler/0.1 (kubernetes_asyncio)"
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})

# client-go events broadcaster: an isomorphic event within finishTime becomes a series; series are
# re-written every refreshTime (tools/events/event_broadcaster.go).
EVENT_SERIES_FINISH = 6 * 60.0
EVENT_SERIES_REFRESH = 30 * 60.0


# --------------------------------------------------------------------------------------------- rate limit


class TokenBucket:
    """client-go's token bucket (flowcontrol.NewTokenBucketRateLimiter): `qps` tokens/s, at most `burst` saved.

    Reservation based: each caller takes a token immediately (the balance may go negative) and sleeps until
    its token is due, so waiters are served in arrival order without a lock. qps <= 0 disables limiting.
    """

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._tokens = float(self.burst)
        self._last = clock()
        self.waited_seconds = 0.0

    def reserve(self) -> float:
        """Take one token; return how long the caller must wait before using it."""
        if self.qps <= 0:
            return 0.0
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> None:
        """Wait for a token."""
        delay = self.reserve()
        if delay > 0:
            self.waited_seconds += delay
            await asyncio.sleep(delay)


# --------------------------------------------------------------------------------------------- client


class ApiError(Exception):
    """A request failed: HTTP status (0 for transport errors), reason and the server's Status message."""

    def __init__(self, status: int, reason: str, message: str, body: Any = None) -> None:
        super().__init__(message or reason or f"HTTP {status}")
        self.status = status
        self.reason = reason
        self.message = message or reason or f"HTTP {status}"
        self.body = body


class ClientConfigError(Exception):
    """The kubeconfig (or the in-cluster service account) could not be loaded."""


Retry = Literal["always", "never"]


@dataclass(slots=True)
class ClientStats:
    """Counters for logs and the debug endpoints."""

    requests: int = 0
    retries: int = 0
    failures: int = 0


def _status_message(status: int, raw: bytes) -> tuple[str, str, Any]:
    """(reason, message, decoded body) of an error answer; tolerant of non-JSON bodies."""
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        return "", raw[:512].decode(errors="replace"), None
    if isinstance(body, dict):
        return str(body.get("reason") or ""), str(body.get("message") or ""), body
    return "", "", body


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After")
    if not value:
        return None
    try:
        return min(max(float(value), 0.0), RETRY_AFTER_CAP)
    except ValueError:
        return None


class KubeClient:
    """kubernetes_asyncio ApiClient + rate limiter + timeouts + retries, speaking raw JSON.

    Build with `await KubeClient.create(kubeconfig, qps=..., burst=...)`; kubeconfig None means in-cluster.
    """

    def __init__(
        self,
        configuration: Configuration,
        *,
        qps: float,
        burst: int,
        connect_timeout: float = CONNECT_TIMEOUT,
        request_timeout: float = REQUEST_TIMEOUT,
        max_retries: int = MAX_RETRIES,
    ) -> None:
        self.configuration = configuration
        self.api_client = ApiClient(configuration)
        self.api_client.user_agent = USER_AGENT
        if not any(os.environ.get(v) for v in _PROXY_ENV):
            # kubernetes_asyncio opens its session with trust_env=True, which costs two thread-pool hops
            # (netrc and proxy lookups) on every request: 2.7 s CPU per 1100 pods measured end to end.
            # Without proxy variables there is nothing to find, so skip the lookups.
            self.api_client.rest_client.pool_manager._trust_env = False
        self.limiter = TokenBucket(qps, burst)
        # kube-scheduler records events through a separate clientset (eventClient) built from the same
        # rest.Config, so events get their own qps/burst bucket and never slow down binds.
        self.event_limiter = TokenBucket(qps, burst)
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.max_retries = max_retries
        self.stats = ClientStats()
        # Called after every HTTP attempt (retries included) with (method, host, code, seconds), as client-go
        # feeds rest_client_requests_total{code,method,host} and rest_client_request_duration_seconds; the
        # code is "<error>" when no answer came (client-go's label for a transport error).
        self.request_observer: Callable[[str, str, str, float], None] | None = None
        self.host = urlsplit(str(configuration.host)).netloc or str(configuration.host)

    @classmethod
    async def create(
        cls,
        kubeconfig: str | None,
        *,
        qps: float = 50.0,
        burst: int = 100,
        connect_timeout: float = CONNECT_TIMEOUT,
        request_timeout: float = REQUEST_TIMEOUT,
        max_retries: int = MAX_RETRIES,
    ) -> KubeClient:
        """Load the kubeconfig file (or the in-cluster service account) into a fresh Configuration."""
        configuration = Configuration()
        try:
            if kubeconfig:
                if not os.path.isfile(kubeconfig):  # noqa: ASYNC240 - once, at startup
                    raise ClientConfigError(f"kubeconfig {kubeconfig}: no such file")
                await kube_config.load_kube_config(
                    config_file=kubeconfig, client_configuration=configuration, persist_config=False
                )
            else:
                kube_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except ConfigException as exc:
            where = f"kubeconfig {kubeconfig}" if kubeconfig else "in-cluster configuration"
            raise ClientConfigError(f"{where}: {exc}") from exc
        # One connection per concurrently allowed request, plus a few for LISTs; kopf has its own pool.
        configuration.connection_pool_maxsize = max(burst, 8) + 4
        return cls(
            configuration,
            qps=qps,
            burst=burst,
            connect_timeout=connect_timeout,
            request_timeout=request_timeout,
            max_retries=max_retries,
        )

    async def close(self) -> None:
        await self.api_client.close()

    async def bearer_token(self) -> str | None:
        """The current bearer token (re-read from the service-account file in-cluster), without "Bearer "."""
        value = await self.configuration.get_api_key_with_prefix("BearerToken")
        if not value:
            return None
        token = str(value)
        return token[len("Bearer ") :] if token.startswith("Bearer ") else token

    async def connection_info(self) -> kopf.ConnectionInfo:
        """The same identity for kopf's watches as for our writes (one kubeconfig/in-cluster source)."""
        cfg = self.configuration
        token = await self.bearer_token()
        in_cluster = cfg.refresh_api_key_hook is not None
        return kopf.ConnectionInfo(
            server=str(cfg.host),
            ca_path=cfg.ssl_ca_cert or None,
            insecure=not cfg.verify_ssl,
            scheme="Bearer" if token else None,
            token=token,
            certificate_path=cfg.cert_file or None,
            private_key_path=cfg.key_file or None,
            # Bound service-account tokens rotate: make kopf log in again before the old one expires.
            expiration=datetime.now(UTC) + timedelta(minutes=10) if in_cluster else None,
        )

    def _timeout(self, total: float | None) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(
            total=total or self.request_timeout, connect=self.connect_timeout, sock_connect=self.connect_timeout
        )

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str | int]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        retry: Retry = "always",
        request_timeout: float | None = None,
        limiter: TokenBucket | None = None,
    ) -> Any:
        """Send one request; return the decoded JSON answer or raise ApiError.

        retry="always" retries 429, 5xx, timeouts and connection errors (safe for reads, patches, events
        and binds, whose duplicate is a 409 the caller resolves); "never" only retries answers that prove
        the request was not processed (429 and refused connections).
        """
        attempt = 0
        while True:
            attempt += 1
            await (limiter or self.limiter).acquire()
            self.stats.requests += 1
            sent = time.monotonic()
            try:
                status, headers, raw = await self._send(method, path, query, body, content_type, request_timeout)
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                self._observe(method, "<error>", sent)
                refused = isinstance(exc, aiohttp.ClientConnectorError)
                if attempt > self.max_retries or (retry == "never" and not refused):
                    self.stats.failures += 1
                    raise ApiError(0, type(exc).__name__, f"{method} {path}: {exc or type(exc).__name__}") from exc
                await self._backoff(attempt, None, method, path, type(exc).__name__)
                continue
            self._observe(method, str(status), sent)
            if status < 400:
                if not raw:
                    return None
                return json.loads(raw)
            reason, message, decoded = _status_message(status, raw)
            retryable = status in RETRYABLE_STATUSES and (retry == "always" or status == 429)
            if retryable and attempt <= self.max_retries:
                await self._backoff(attempt, _retry_after(headers), method, path, f"HTTP {status}")
                continue
            self.stats.failures += 1
            raise ApiError(status, reason, message, decoded)

    def _observe(self, method: str, code: str, sent: float) -> None:
        if self.request_observer is not None:
            self.request_observer(method.upper(), self.host, code, time.monotonic() - sent)

    async def _send(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str | int]] | None,
        body: Any,
        content_type: str,
        request_timeout: float | None,
    ) -> tuple[int, Mapping[str, str], bytes]:
        limit = request_timeout or self.request_timeout
        # aiohttp's total timeout covers the body read too; asyncio.timeout is the belt to those braces.
        async with asyncio.timeout(limit + 1.0):
            resp = await self.api_client.call_api(
                path,
                method,
                query_params=list(query) if query else None,
                header_params={"Content-Type": content_type, "Accept": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=self._timeout(limit),
            )
            try:
                raw = await resp.read()
            finally:
                resp.release()
            return int(resp.status), resp.headers, raw

    async def _backoff(self, attempt: int, retry_after: float | None, method: str, path: str, why: str) -> None:
        self.stats.retries += 1
        delay = retry_after if retry_after is not None else min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempt - 1))
        delay *= 1.0 + random.random() * 0.2  # jitter so many clients do not retry in lockstep
        log.info("retrying API request", extra={"method": method, "path": path, "why": why, "delay": round(delay, 3)})
        await asyncio.sleep(delay)

    async def list_all(
        self, path: str, *, field_selector: str | None = None, limit: int = 500
    ) -> tuple[list[JSON], str]:
        """LIST every object of a collection in pages of `limit`; returns (items, list resourceVersion).

        A continue token that expired (410) restarts the LIST from the beginning, as client-go's pager does
        when it falls back to a full list.
        """
        for _ in range(3):
            items: list[JSON] = []
            token = ""
            try:
                while True:
                    query: list[tuple[str, str | int]] = [("limit", limit)]
                    if field_selector:
                        query.append(("fieldSelector", field_selector))
                    if token:
                        query.append(("continue", token))
                    page = await self.request("GET", path, query=query, request_timeout=max(self.request_timeout, 60.0))
                    items.extend(page.get("items") or [])
                    meta = page.get("metadata") or {}
                    token = str(meta.get("continue") or "")
                    if not token:
                        return items, str(meta.get("resourceVersion") or "")
            except ApiError as exc:
                if exc.status != 410 or not token:
                    raise
                log.warning("LIST continue token expired; listing again", extra={"path": path})
        raise ApiError(410, "Expired", f"LIST {path}: continue token kept expiring")


# --------------------------------------------------------------------------------------------- writer


def pod_path(namespace: str, name: str, sub: str = "") -> str:
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


def events_path(namespace: str, name: str = "") -> str:
    path = f"/apis/events.k8s.io/v1/namespaces/{quote(namespace, safe='')}/events"
    return f"{path}/{quote(name, safe='')}" if name else path


def micro_time(t: datetime) -> str:
    """metav1.MicroTime in RFC 3339 with microseconds ("2026-01-02T03:04:05.123456Z")."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339(t: datetime) -> str:
    """metav1.Time (second precision)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_reference(pod: PodInfo) -> JSON:
    """reference.GetReference(pod): what an event's `regarding` holds."""
    ref: JSON = {"apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace, "name": pod.name}
    if pod.uid and "/" not in pod.uid:  # PodInfo falls back to ns/name when the object had no uid
        ref["uid"] = pod.uid
    if pod.resource_version:
        ref["resourceVersion"] = pod.resource_version
    return ref


@dataclass(slots=True)
class _EventEntry:
    """One isomorphic event as client-go's eventCache holds it."""

    namespace: str
    name: str
    body: JSON
    first_seen: float
    last_observed: float
    count: int = 1
    written_count: int = 1


@dataclass(slots=True)
class _Write:
    """A queued write: an event create/series patch, or a pod status patch."""

    kind: Literal["event", "series", "status"]
    namespace: str
    name: str
    body: JSON
    pod: str = ""
    uid: str = ""


@dataclass(slots=True)
class WriterStats:
    """What the writer did; `dropped_events` counts event writes shed because the queue was full."""

    binds: int = 0
    bind_conflicts: int = 0
    bind_gone: int = 0
    bind_errors: int = 0
    events_written: int = 0
    series_patched: int = 0
    events_coalesced: int = 0
    status_patched: int = 0
    status_skipped: int = 0
    dropped_events: int = 0
    write_errors: int = 0
    queue_high_water: int = 0
    extra: dict[str, int] = field(default_factory=dict)


class ClusterWriter:
    """ClusterAPI on a real API server: awaited binds, queued events and PodScheduled patches.

    Events are aggregated like client-go's events broadcaster (one event, then a `series` for isomorphic
    repeats). Condition patches are coalesced per pod (the newest wins) and skipped when identical to the
    last one written, like upstream's UpdatePodCondition. When more than `max_queued_events` events wait,
    the oldest are dropped and counted; binds never queue.
    """

    def __init__(
        self,
        client: KubeClient,
        *,
        workers: int = 8,
        max_queued_events: int = 5000,
        hostname: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_remembered_conditions: int = 100_000,
    ) -> None:
        self.client = client
        self.hostname = hostname or socket.gethostname()
        self.stats = WriterStats()
        self._clock = clock
        self._workers = workers
        self._max_queued_events = max_queued_events
        self._events: collections.deque[_Write] = collections.deque()
        self._status: collections.OrderedDict[str, _Write] = collections.OrderedDict()
        self._ready = asyncio.Event()
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._tasks: list[asyncio.Task[None]] = []
        self._event_cache: dict[tuple[str, ...], _EventEntry] = {}
        self._conditions: collections.OrderedDict[str, tuple[str, str, str, str]] = collections.OrderedDict()
        self._max_conditions = max_remembered_conditions
        self._closing = False
        # Leader election's guard (LeaseElector.bind_allowance): called before every bind; raises a BindError
        # when we must not bind, else returns how long the bind may take before leadership may be lost.
        self.bind_guard: Callable[[], float] | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> list[asyncio.Task[None]]:
        """Start the worker tasks (and the series maintenance task); the caller supervises them."""
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._worker(i), name=f"writer-{i}") for i in range(self._workers)]
        self._tasks.append(loop.create_task(self._series_maintenance(), name="writer-series"))
        return list(self._tasks)

    def queued(self) -> int:
        return len(self._events) + len(self._status)

    async def flush(self, within: float) -> bool:
        """Wait until every queued write is done (True) or `within` seconds passed (False)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                while self.queued() or self._in_flight:
                    self._idle.clear()
                    await self._idle.wait()
                return True
        return False

    async def close(self, within: float = 5.0) -> None:
        """Flush what can be written within `within` seconds, then stop the workers."""
        if not await self.flush(within):
            log.warning("shutting down with unwritten events", extra={"queued": self.queued()})
        self._closing = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def forget_pod(self, uid: str) -> None:
        """The pod is gone: drop the condition we remember writing for it."""
        self._conditions.pop(uid, None)

    # ------------------------------------------------------------------ ClusterAPI: bind

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        """POST pods/binding exactly like DefaultBinder (metadata with uid, target Node by name)."""
        metadata: JSON = {"name": pod.name, "namespace": pod.namespace}
        if pod.uid and "/" not in pod.uid:
            metadata["uid"] = pod.uid  # a recreated pod with the same name must not get our binding
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"kind": "Node", "name": node_name},
        }
        # Bounded by the guard's allowance (retries included): no bind attempt starts once leadership may be lost.
        allowance = self.bind_guard() if self.bind_guard is not None else None
        try:
            async with asyncio.timeout(allowance):
                await self.client.request("POST", pod_path(pod.namespace, pod.name, "binding"), body=binding)
        except TimeoutError as exc:
            self.stats.bind_errors += 1
            log.error("binding stopped: leadership may be lost", extra={"pod": pod.key, "node": node_name})
            raise BindError(f"binding {pod.key} did not finish while this replica surely led") from exc
        except ApiError as exc:
            if exc.status == 409:
                if await self._bound_to(pod, node_name):
                    # A retried POST whose first attempt succeeded after all.
                    self.stats.binds += 1
                    return
                self.stats.bind_conflicts += 1
                raise AlreadyBoundError(exc.message) from exc
            if exc.status == 404:
                self.stats.bind_gone += 1
                raise PodGoneError(exc.message) from exc
            self.stats.bind_errors += 1
            log.error("binding failed", extra={"pod": pod.key, "node": node_name, "error": exc.message})
            raise BindError(exc.message) from exc
        self.stats.binds += 1

    async def _bound_to(self, pod: PodInfo, node_name: str) -> bool:
        """Is the pod (same uid) bound to node_name? Used to tell our own retried bind from a real conflict."""
        try:
            path = pod_path(pod.namespace, pod.name)
            obj = await self.client.request("GET", path, retry="never", request_timeout=10.0)
        except ApiError:
            return False
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        same_pod = "/" in pod.uid or meta.get("uid") == pod.uid
        return bool(same_pod and spec.get("nodeName") == node_name)

    # ------------------------------------------------------------------ ClusterAPI: events and conditions

    def record_scheduled(self, pod: PodInfo, node_name: str) -> None:
        """Normal `Scheduled` event, action Binding (schedule_one.go handleBindingCycle)."""
        self._conditions.pop(pod.uid, None)
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node_name}"
        self._event(pod, "Normal", EVENT_SCHEDULED, ACTION_BINDING, note)

    def record_failure(self, pod: PodInfo, reason: str, message: str) -> None:
        """Warning `FailedScheduling` (note truncated to 1024 bytes) + PodScheduled=False with the full message."""
        self._event(pod, "Warning", EVENT_FAILED_SCHEDULING, ACTION_SCHEDULING, truncate_message(message))
        self._condition(pod, reason, message)

    def _event(self, pod: PodInfo, type_: str, reason: str, action: str, note: str) -> None:
        controller = pod.scheduler_name
        instance = f"{controller}-{self.hostname}"
        regarding = pod_reference(pod)
        key = (
            type_,
            action,
            reason,
            controller,
            instance,
            pod.namespace,
            pod.name,
            str(regarding.get("uid", "")),
            str(regarding.get("resourceVersion", "")),
        )
        now = self._clock()
        entry = self._event_cache.get(key)
        if entry is not None and now - entry.last_observed <= EVENT_SERIES_FINISH:
            entry.count += 1
            entry.last_observed = now
            self.stats.events_coalesced += 1
            if entry.count == 2:  # client-go writes the series once, then only on its refresh/finish ticks
                self._enqueue_event(self._series_write(entry))
            return
        wall = datetime.now(UTC)
        name = f"{pod.name}.{time.time_ns():x}"  # util.GenerateEventName
        if len(name) > 253:
            name = f"{os.urandom(8).hex()}.{time.time_ns():x}"
        body: JSON = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": pod.namespace},
            "eventTime": micro_time(wall),
            "reportingController": controller,
            "reportingInstance": instance,
            "action": action,
            "reason": reason,
            "regarding": regarding,
            "note": note,
            "type": type_,
        }
        self._event_cache[key] = _EventEntry(pod.namespace, name, body, now, now)
        self._enqueue_event(_Write("event", pod.namespace, name, body, pod.key, pod.uid))

    @staticmethod
    def _series_write(entry: _EventEntry) -> _Write:
        entry.written_count = entry.count
        body = {"series": {"count": entry.count, "lastObservedTime": micro_time(datetime.now(UTC))}}
        return _Write("series", entry.namespace, entry.name, body, f"{entry.namespace}/{entry.name}")

    def _condition(self, pod: PodInfo, reason: str, message: str) -> None:
        last = self._conditions.get(pod.uid)
        if last is not None and last[:3] == ("False", reason, message):
            self.stats.status_skipped += 1
            return
        # UpdatePodCondition keeps lastTransitionTime when the status itself did not change.
        transition = last[3] if last is not None and last[0] == "False" else rfc3339(datetime.now(UTC))
        self._conditions[pod.uid] = ("False", reason, message, transition)
        self._conditions.move_to_end(pod.uid)
        while len(self._conditions) > self._max_conditions:
            self._conditions.popitem(last=False)
        condition: JSON = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastTransitionTime": transition,
        }
        if pod.generation:
            condition["observedGeneration"] = pod.generation  # PodObservedGenerationTracking is GA
        body: JSON = {"status": {"conditions": [condition]}}  # strategic merge: conditions merge by type
        self._status[pod.uid] = _Write("status", pod.namespace, pod.name, body, pod.key, pod.uid)
        self._status.move_to_end(pod.uid)
        self._wake()

    def _enqueue_event(self, write: _Write) -> None:
        self._events.append(write)
        while len(self._events) > self._max_queued_events:
            dropped = self._events.popleft()
            self.stats.dropped_events += 1
            if self.stats.dropped_events in (1, 10, 100) or self.stats.dropped_events % 1000 == 0:
                log.warning(
                    "event queue full; dropping the oldest events",
                    extra={"dropped_total": self.stats.dropped_events, "pod": dropped.pod},
                )
        self.stats.queue_high_water = max(self.stats.queue_high_water, self.queued())
        self._wake()

    def _wake(self) -> None:
        self._ready.set()

    # ------------------------------------------------------------------ workers

    def _next(self) -> _Write | None:
        if self._status:  # conditions first: autoscalers read PodScheduled, people read events
            return self._status.popitem(last=False)[1]
        if self._events:
            return self._events.popleft()
        return None

    async def _worker(self, index: int) -> None:
        while True:
            write = self._next()
            if write is None:
                if not self._in_flight:
                    self._idle.set()
                self._ready.clear()
                await self._ready.wait()
                continue
            self._in_flight += 1
            try:
                await self._perform(write)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug in one write must not kill the worker
                self.stats.write_errors += 1
                log.exception("unexpected error writing to the API", extra={"pod": write.pod, "kind": write.kind})
            finally:
                self._in_flight -= 1
                if not self.queued() and not self._in_flight:
                    self._idle.set()

    async def _perform(self, write: _Write) -> None:
        try:
            if write.kind == "status":
                await self.client.request(
                    "PATCH",
                    pod_path(write.namespace, write.name, "status"),
                    body=write.body,
                    content_type=STRATEGIC_MERGE,
                )
                self.stats.status_patched += 1
            elif write.kind == "event":
                await self.client.request(
                    "POST", events_path(write.namespace), body=write.body, limiter=self.client.event_limiter
                )
                self.stats.events_written += 1
            else:
                await self._patch_series(write)
        except ApiError as exc:
            if write.kind == "status" and exc.status in (404, 409):
                self._conditions.pop(write.uid, None)  # the pod is gone or was recreated: nothing to report
                log.info("pod gone before its condition was written", extra={"pod": write.pod})
                return
            self.stats.write_errors += 1
            if write.kind == "status":
                self._conditions.pop(write.uid, None)  # let the next failure try again
            log.error(
                "failed to write to the API",
                extra={"kind": write.kind, "pod": write.pod, "status": exc.status, "error": exc.message},
            )

    async def _patch_series(self, write: _Write) -> None:
        path = events_path(write.namespace, write.name)
        try:
            await self.client.request(
                "PATCH", path, body=write.body, content_type=STRATEGIC_MERGE, limiter=self.client.event_limiter
            )
            self.stats.series_patched += 1
        except ApiError as exc:
            if exc.status != 404:
                raise
            entry = next((e for e in self._event_cache.values() if e.name == write.name), None)
            if entry is None:
                return
            body = dict(entry.body)
            body["series"] = write.body["series"]
            await self.client.request(
                "POST", events_path(write.namespace), body=body, limiter=self.client.event_limiter
            )
            self.stats.events_written += 1

    async def _series_maintenance(self, period: float = 60.0) -> None:
        """client-go's refreshExistingEventSeries/finishSeries: write final counts and forget old entries."""
        while True:
            await asyncio.sleep(period)
            self.maintain_series()

    def maintain_series(self) -> None:
        """Write series counts that changed and are finished or due a refresh; forget finished entries."""
        now = self._clock()
        for key, entry in list(self._event_cache.items()):
            finished = now - entry.last_observed > EVENT_SERIES_FINISH
            due = now - entry.first_seen > EVENT_SERIES_REFRESH
            if entry.count > 1 and entry.count != entry.written_count and (finished or due):
                self._enqueue_event(self._series_write(entry))
            if due:
                entry.first_seen = now
            if finished:
                del self._event_cache[key]


def as_json(obj: Any) -> JSON:
    """A kopf Body/raw event object as the plain dict the core parses (no copy when already a dict)."""
    if isinstance(obj, dict):
        return obj
    src = getattr(obj, "_src", None)
    if isinstance(src, dict):
        return cast(JSON, src)
    return dict(obj)
