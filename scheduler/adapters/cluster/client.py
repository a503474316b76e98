"""Talking to the API server: a rate-limited, retrying, always-timed-out client and the ClusterAPI writer.

kubernetes_asyncio has no client-side rate limit, no retries and no default timeouts (a half-open connection
hangs forever), and its generated `create_namespaced_pod_binding` raises ValueError *after* a successful
binding because it cannot deserialize the v1.Status answer. So every request here goes through
`KubeClient.request`: raw JSON in and out (`_preload_content=False`), a token bucket honouring
clientConnection qps/burst (like client-go's flowcontrol), an explicit aiohttp timeout and a bounded retry on
429/5xx/timeouts with jittered exponential backoff (and Retry-After).

The writes the scheduler makes (binds, events, conditions) live in `writer.py` on top of this client.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import random
import re
import ssl
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from urllib.parse import quote, urlencode, urlsplit

import aiohttp
import kopf
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config.config_exception import ConfigException

from scheduler.adapters.cluster.http1 import Http1Pool
from scheduler.config.documents import DocumentError, decode_text, json_bytes, load_all

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
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})


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
    """A request failed: HTTP status (0 for transport errors), reason and the server's Status message.

    `maybe_applied` (set by `KubeClient.request`): some attempt, not only the last, got no answer (a refused
    connection excepted) or a 5xx, so the server may have applied the request whatever the last attempt met:
    a POST whose first attempt was cut and whose retries all met 429s may have landed.
    """

    def __init__(
        self, status: int, reason: str, message: str, body: Any = None, *, maybe_applied: bool = False
    ) -> None:
        super().__init__(message or reason or f"HTTP {status}")
        self.status = status
        self.reason = reason
        self.message = message or reason or f"HTTP {status}"
        self.body = body
        self.maybe_applied = maybe_applied


def server_url_problem(server: str) -> str | None:
    """Why the kubeconfig's server cannot be reached at all (not a URL), or None: said once at startup
    instead of every request retrying an InvalidUrlClientError."""
    if not server:
        return "the cluster's server is empty (want https://HOST[:PORT])"
    try:
        parts = urlsplit(server)
        _ = parts.port  # raises for a port that is not a number in range
    except ValueError as exc:
        return f"the cluster's server {server!r} is not a URL: {exc}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"the cluster's server {server!r} is not a URL (want https://HOST[:PORT])"
    return None


class ClientConfigError(Exception):
    """The kubeconfig (or the in-cluster service account) could not be loaded."""


_CONNECT_ERRNO_TEXT = {
    errno.ECONNREFUSED: "connection refused (nothing listens there)",
    errno.ECONNRESET: "connection reset",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
    errno.ETIMEDOUT: "connection timed out",
}


def transport_error_text(exc: BaseException) -> str:
    """A failed connection in words (aiohttp's own text shows `ssl:<ssl.SSLContext object at 0x...>`)."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return f"the server's certificate is not trusted ({exc.certificate_error})"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return f"cannot resolve host {exc.host}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        os_error = exc.os_error
        why = _CONNECT_ERRNO_TEXT.get(os_error.errno or 0) or os_error.strerror or type(os_error).__name__
        return f"cannot connect to {exc.host}:{exc.port}: {why}"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the server closed the connection without answering"
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return str(exc) or type(exc).__name__


MAX_KUBECONFIG_BYTES = 16 * 1024 * 1024


def check_kubeconfig(path: str) -> None:
    """Refuse a kubeconfig that is not a readable, text, YAML mapping with one clear line (ClientConfigError)
    before kubernetes_asyncio's loader, whose errors on such files are tracebacks."""
    try:
        if not os.path.isfile(path):
            raise ClientConfigError(f"kubeconfig {path}: no such file" if not os.path.exists(path) else
                                    f"kubeconfig {path}: not a regular file")
        if os.path.getsize(path) > MAX_KUBECONFIG_BYTES:
            raise ClientConfigError(f"kubeconfig {path}: larger than {MAX_KUBECONFIG_BYTES} bytes")
        with open(path, "rb") as fh:
            text = decode_text(fh.read(), f"kubeconfig {path}")
        docs = load_all(text, f"kubeconfig {path}")
    except OSError as exc:
        raise ClientConfigError(f"kubeconfig {path}: {exc.strerror or exc}") from exc
    except DocumentError as exc:
        raise ClientConfigError(str(exc)) from exc
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise ClientConfigError(f"kubeconfig {path}: expected one YAML mapping (apiVersion: v1, kind: Config)")


Retry = Literal["always", "never"]


@dataclass(slots=True)
class ClientStats:
    """Counters for logs and the debug endpoints."""

    requests: int = 0
    retries: int = 0
    failures: int = 0


def status_message(status: int, raw: bytes) -> tuple[str, str, Any]:
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
        self._lean: Http1Pool | None = None  # built on first use by _lean_pool
        self._lean_unusable = False

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
        context: str | None = None,
    ) -> KubeClient:
        """Load the kubeconfig file (its current context, or `context`), or the in-cluster service account,
        into a fresh Configuration."""
        configuration = Configuration()
        where = f"kubeconfig {kubeconfig}" if kubeconfig else "in-cluster configuration"
        try:
            if kubeconfig:
                check_kubeconfig(kubeconfig)
                await kube_config.load_kube_config(
                    config_file=kubeconfig, context=context, client_configuration=configuration, persist_config=False
                )
            elif not os.environ.get("KUBERNETES_SERVICE_HOST"):
                raise ClientConfigError(
                    "no --kubeconfig given and not running in a pod of a cluster (KUBERNETES_SERVICE_HOST is not "
                    "set): pass --kubeconfig PATH"
                )
            else:
                kube_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except ClientConfigError:
            raise
        except ConfigException as exc:
            raise ClientConfigError(f"{where}: {exc}") from exc
        except Exception as exc:  # the loader's KeyError/TypeError/... on a malformed file: one clear line
            raise ClientConfigError(f"{where}: malformed ({type(exc).__name__}: {exc})") from exc
        problem = server_url_problem(str(configuration.host or ""))
        if problem:
            raise ClientConfigError(f"{where}: {problem}")
        # One connection per concurrently allowed request, plus a few for LISTs; kopf has its own pool.
        configuration.connection_pool_maxsize = max(burst, 8) + 4
        try:
            return cls(
                configuration,
                qps=qps,
                burst=burst,
                connect_timeout=connect_timeout,
                request_timeout=request_timeout,
                max_retries=max_retries,
            )
        except (ssl.SSLError, OSError) as exc:  # the TLS context is built here: certificates and keys are read
            raise ClientConfigError(f"{where}: client certificate, key or CA unusable: {exc}") from exc

    async def close(self) -> None:
        if self._lean is not None:
            await self._lean.close()
        await self.api_client.close()

    def _lean_pool(self) -> Http1Pool | None:
        """The lean HTTP/1.1 pool for `lean` requests, or None where it does not apply (a proxy, another scheme):
        those requests then go through aiohttp like the rest."""
        if self._lean is not None or self._lean_unusable:
            return self._lean
        cfg = self.configuration
        parts = urlsplit(str(cfg.host))
        if self.api_client.rest_client.proxy or parts.scheme not in ("http", "https") or not parts.hostname:
            self._lean_unusable = True
            return None
        context = _ssl_context(cfg) if parts.scheme == "https" else None
        port = parts.port or (443 if parts.scheme == "https" else 80)
        limit = int(cfg.connection_pool_maxsize or 16)
        self._lean = Http1Pool(
            parts.hostname, port, context, server_hostname=cfg.tls_server_name or None, limit=limit,
            connect_timeout=self.connect_timeout,
        )
        return self._lean

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
        decode: bool = True,
        lean: bool = False,
    ) -> Any:
        """Send one request; return the decoded JSON answer (the raw bytes with decode=False) or raise ApiError.

        retry="always" retries 429, 5xx, timeouts and connection errors (safe for reads, patches, events
        and binds, whose duplicate is a 409 the caller resolves); "never" only retries answers that prove
        the request was not processed (429 and refused connections). `lean` sends it through the lean
        HTTP/1.1 pool (http1.py) when one applies: for the small, hot writes (bindings, events).
        """
        attempt = 0
        maybe_applied = False  # an attempt got no answer (or a 5xx): the server may have applied the request
        while True:
            attempt += 1
            await (limiter or self.limiter).acquire()
            self.stats.requests += 1
            sent = time.monotonic()
            try:
                status, headers, raw = await self._send(method, path, query, body, content_type, request_timeout, lean)
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                self._observe(method, "<error>", sent)
                refused = isinstance(exc, aiohttp.ClientConnectorError)
                maybe_applied = maybe_applied or not refused
                if attempt > self.max_retries or (retry == "never" and not refused):
                    self.stats.failures += 1
                    message = f"{method} {path}: {transport_error_text(exc)}"
                    raise ApiError(0, type(exc).__name__, message, maybe_applied=maybe_applied) from exc
                await self._backoff(attempt, None, method, path, type(exc).__name__)
                continue
            self._observe(method, str(status), sent)
            if status < 400:
                if not decode:
                    return raw
                if not raw:
                    return None
                return json_bytes(raw)
            reason, message, decoded = status_message(status, raw)
            maybe_applied = maybe_applied or status >= 500
            retryable = status in RETRYABLE_STATUSES and (retry == "always" or status == 429)
            if retryable and attempt <= self.max_retries:
                await self._backoff(attempt, _retry_after(headers), method, path, f"HTTP {status}")
                continue
            self.stats.failures += 1
            raise ApiError(status, reason, message, decoded, maybe_applied=maybe_applied)

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
        lean: bool = False,
    ) -> tuple[int, Mapping[str, str], bytes]:
        limit = request_timeout or self.request_timeout
        # Straight to the ApiClient's aiohttp session: call_api would walk the body and headers through
        # sanitize_for_serialization and re-encode both on every request (a sixth of the CPU per pod end to
        # end); the auth header still comes from the configuration (and its token refresh hook).
        headers = {**self.api_client.default_headers, "Content-Type": content_type, "Accept": "application/json"}
        auth_query: list[tuple[str, str | int]] = []  # BearerToken is a header; kept for completeness
        await self.api_client.update_params_for_auth(headers, auth_query, ["BearerToken"])
        url = str(self.configuration.host) + path
        if query or auth_query:
            url += "?" + urlencode([*(query or ()), *auth_query])
        data = None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        pool = self._lean_pool() if lean else None
        if pool is not None:
            target = url[url.index("/", url.index("//") + 2) :]
            async with asyncio.timeout(limit):
                answer = await pool.request(method, target, headers, data)
            return answer.status, answer.headers, answer.body
        rest = self.api_client.rest_client
        extra: dict[str, Any] = {}
        if rest.proxy:
            extra["proxy"] = rest.proxy
        if rest.proxy_headers:
            extra["proxy_headers"] = rest.proxy_headers
        if rest.server_hostname:
            extra["server_hostname"] = rest.server_hostname
        # aiohttp's total timeout covers the body read too; asyncio.timeout is the belt to those braces.
        async with (
            asyncio.timeout(limit + 1.0),
            rest.pool_manager.request(
                method, url, headers=headers, data=data, timeout=self._timeout(limit), **extra
            ) as resp,
        ):
            raw = await resp.read()
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
            continued = False  # a 410 after the first page is an expired continue token
            try:
                async with contextlib.aclosing(self.list_pages(path, field_selector=field_selector, limit=limit)) as it:
                    async for page, rv, token in it:
                        items.extend(page)
                        if not token:
                            return items, rv
                        continued = True
            except ApiError as exc:
                if exc.status != 410 or not continued:
                    raise
                log.warning("LIST continue token expired; listing again", extra={"path": path})
        raise ApiError(410, "Expired", f"LIST {path}: continue token kept expiring")

    async def list_pages(
        self, path: str, *, field_selector: str | None = None, limit: int = 500
    ) -> AsyncGenerator[tuple[list[JSON], str, str], None]:
        """One paginated LIST: yields (items, list resourceVersion, continue token) per page, the last with "".

        The next page is requested before this one is decoded and handed out (its continue token is read from
        the answer's leading ListMeta), so the API server prepares page N+1 while the caller works on page N.
        A 410 (expired continue token) raises ApiError; the caller decides whether to start over.
        """
        timeout = max(self.request_timeout, 60.0)

        def fetch(token: str) -> asyncio.Future[bytes]:
            query: list[tuple[str, str | int]] = [("limit", limit)]
            if field_selector:
                query.append(("fieldSelector", field_selector))
            if token:
                query.append(("continue", token))
            return asyncio.ensure_future(self.request("GET", path, query=query, request_timeout=timeout, decode=False))

        pending: asyncio.Future[bytes] | None = fetch("")
        try:
            while pending is not None:
                raw = await pending
                peeked = peek_continue(raw)
                pending = fetch(peeked) if peeked else None
                if pending is not None:
                    await asyncio.sleep(0)  # let the prefetch send its request before we decode this page
                page = json_bytes(raw) if raw else {}
                del raw
                meta = page.get("metadata") or {}
                token = str(meta.get("continue") or "")
                if token != (peeked or ""):  # the peek misread the ListMeta: ask for what the answer says
                    await _cancel(pending)
                    pending = fetch(token) if token else None
                yield page.get("items") or [], str(meta.get("resourceVersion") or ""), token
        finally:
            await _cancel(pending)


def _ssl_context(cfg: Configuration) -> ssl.SSLContext:
    """The TLS settings kubernetes_asyncio's REST client builds from a Configuration (rest.py), for the lean
    pool: the CA bundle, the client certificate, and verification as configured."""
    context = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    if cfg.cert_file:
        context.load_cert_chain(cfg.cert_file, keyfile=cfg.key_file)
    if not cfg.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if getattr(cfg, "disable_strict_ssl_verification", False):
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


_CONTINUE = re.compile(rb'"continue"\s*:\s*"([A-Za-z0-9_=+/-]*)"')


def peek_continue(raw: bytes) -> str | None:
    """The continue token of a List answer, read from its ListMeta (which the API server writes before the
    items) without decoding the page; None when it has none or it is not where expected."""
    head_end = raw.find(b'"items"', 0, 4096)
    if head_end < 0:
        return None
    found = _CONTINUE.search(raw, 0, head_end)
    return found.group(1).decode() if found and found.group(1) else None


async def _cancel(future: asyncio.Future[Any] | None) -> None:
    """Cancel a prefetch nobody will read (and swallow its outcome)."""
    if future is not None and not future.done():
        future.cancel()
        with contextlib.suppress(asyncio.CancelledError, ApiError):
            await future
    elif future is not None and not future.cancelled():
        future.exception()  # mark a failed prefetch as retrieved


async def wait_first(event: asyncio.Event, stop: asyncio.Event) -> bool:
    """Wait until `event` or `stop` is set, without polling; True when stopped."""
    waiters = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(stop.wait())]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
    return stop.is_set()


async def wait_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep `seconds` unless stop is set first; True when stopped."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await stop.wait()
    return stop.is_set()


# --------------------------------------------------------------------------------------------- paths, times


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
