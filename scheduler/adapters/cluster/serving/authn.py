"""Delegated authentication: who is calling, as kube-scheduler's DelegatingAuthenticationOptions decide it.

In order, like upstream's union authenticator:
1. a client certificate verified against `--client-ca-file` (only when that flag is given): the user is the
   certificate's Common Name, its groups the Organization values (client-go's CommonNameUserConversion);
2. an `Authorization: Bearer <token>` header: the token goes to the API server in an
   `authentication.k8s.io/v1` TokenReview, sent with the scheduler's own credentials (which is why the chart
   binds it to `system:auth-delegator`); the answer is cached for 10 s (authenticated or not, as upstream's
   token cache), keyed by the token's SHA-256 so no raw token is kept.

No credential, an unknown scheme, or a token the API server rejects is "not authenticated" (the guard answers
401). This differs from kube-scheduler in one way: upstream maps a request *without* credentials to
`system:anonymous` and lets authorization refuse it (403); pyscheduler answers 401 at once and never asks the
API server about anonymous callers. A TokenReview that fails (refused, timed out, unreachable API server)
raises AuthenticationError, also answered 401 and logged with the cause: it fails closed and never hangs
(every review is bounded by `timeout` seconds, retries included).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.adapters.cluster.client import ApiError, KubeClient
from scheduler.adapters.cluster.serving.expiring import ExpiringCache
from scheduler.logging_setup import V4, V5

log = logging.getLogger("pyscheduler.serving")

TOKEN_REVIEW_PATH = "/apis/authentication.k8s.io/v1/tokenreviews"
CACHE_TTL = 10.0  # --authentication-token-webhook-cache-ttl's default
CACHE_ENTRIES = 4096
REVIEW_TIMEOUT = 10.0  # upstream's webhook client timeout

Extra = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class UserInfo:
    """An authenticated caller: name, uid, groups and extra, as a TokenReview or a certificate gives them."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Extra = field(default=())

    def extra_dict(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self.extra}


@dataclass(frozen=True)
class TokenReviewResult:
    """The API server's verdict on one token: the user, or None with the server's error text."""

    user: UserInfo | None
    error: str = ""


class AuthenticationError(Exception):
    """The API server could not tell who the caller is (the review itself failed)."""


TokenReviewer = Callable[[str], Awaitable[TokenReviewResult]]
"""Sends one TokenReview; raises AuthenticationError when the API server does not answer it."""


def bearer_token(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, parsed exactly like upstream's bearertoken.

    The scheme is case-insensitive; the token is the second space-separated field (a third is ignored);
    "Bearer" alone, an empty token ("Bearer  x": two spaces) and other schemes give None.
    """
    auth = (header or "").strip()
    if not auth:
        return None
    parts = auth.split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return None
    return parts[1] or None


def user_from_certificate(peercert: Mapping[str, Any] | None) -> UserInfo | None:
    """The user of a verified client certificate (ssl's getpeercert() dict): CN the name, O the groups."""
    if not peercert:
        return None
    names: list[str] = []
    groups: list[str] = []
    for rdn in peercert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                names.append(str(value))
            elif key == "organizationName":
                groups.append(str(value))
    if not names or not names[0]:
        return None
    return UserInfo(name=names[0], groups=tuple(groups))


def parse_token_review(answer: Mapping[str, Any]) -> TokenReviewResult:
    """A TokenReview answer's status as a TokenReviewResult (unauthenticated unless it says so)."""
    status = answer.get("status") or {}
    if not status.get("authenticated"):
        return TokenReviewResult(None, str(status.get("error") or "the token was not authenticated"))
    user = status.get("user") or {}
    name = str(user.get("username") or "")
    if not name:
        return TokenReviewResult(None, "the TokenReview named no user")
    extra = tuple(sorted((str(k), tuple(str(x) for x in (v or ()))) for k, v in (user.get("extra") or {}).items()))
    return TokenReviewResult(
        UserInfo(name, str(user.get("uid") or ""), tuple(str(g) for g in user.get("groups") or ()), extra)
    )


def token_reviewer(client: KubeClient, timeout: float = REVIEW_TIMEOUT) -> TokenReviewer:
    """TokenReviews through `client` (its own rate limiter and connections), each bounded by `timeout`."""

    async def review(token: str) -> TokenReviewResult:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        try:
            async with asyncio.timeout(timeout):
                # Half the bound per attempt, so a retry still fits in it.
                answer = await client.request("POST", TOKEN_REVIEW_PATH, body=body, request_timeout=timeout / 2)
        except ApiError as exc:
            raise AuthenticationError(f"TokenReview failed: {describe_api_error(exc)}") from exc
        except TimeoutError as exc:
            raise AuthenticationError(f"TokenReview timed out after {timeout:g}s") from exc
        return parse_token_review(answer or {})

    return review


def describe_api_error(exc: ApiError) -> str:
    """`403 <the server's message>`, or for a transport error `TimeoutError: POST <path>` (never blank)."""
    if exc.status:
        return f"{exc.status} {exc.message}"
    return f"{exc.reason}: {exc.message}".rstrip(": ")


class DelegatingAuthenticator:
    """Client certificates (when enabled), then bearer tokens via a cached TokenReview."""

    def __init__(
        self,
        review: TokenReviewer | None,
        *,
        cache_ttl: float = CACHE_TTL,
        max_entries: int = CACHE_ENTRIES,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.review = review
        self.cache_ttl = cache_ttl
        self.cache: ExpiringCache[str, TokenReviewResult] = (
            ExpiringCache(max_entries, clock) if clock is not None else ExpiringCache(max_entries)
        )

    async def authenticate(
        self, authorization: str | None, peercert: Mapping[str, Any] | None = None
    ) -> UserInfo | None:
        """The caller, or None when not authenticated; AuthenticationError when the API server failed."""
        user = user_from_certificate(peercert)
        if user is not None:
            return user
        token = bearer_token(authorization)
        if token is None or self.review is None:
            return None
        review = self.review
        key = hashlib.sha256(token.encode()).hexdigest()
        result = await self.cache.get_or_load(key, lambda: review(token), lambda _: self.cache_ttl)
        if result.user is None:
            log.log(V4, "bearer token rejected by the API server", extra={"error": result.error})
        else:
            log.log(V5, "authenticated", extra={"user": result.user.name})
        return result.user
