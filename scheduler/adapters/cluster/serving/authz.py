"""Delegated authorization: may this user use this path, as kube-scheduler's DelegatingAuthorizationOptions decide.

The union upstream builds, first "allow" wins:
1. `--authorization-always-allow-paths` (default `/healthz,/readyz,/livez`): open to anyone (the guard does
   not even authenticate callers of these paths, so probes need no credential);
2. members of the group `system:masters`, always;
3. an `authorization.k8s.io/v1` SubjectAccessReview with `nonResourceAttributes{path, verb}`, the verb being
   the lower-case HTTP method (GET -> get, PUT /debug/flags/v -> put). The scheduler's own identity sends
   it (`system:auth-delegator`). Allowed answers are cached for 10 s and denied ones for 10 s, separately
   configurable like upstream's authorized/unauthorized TTLs; failures are not cached.

RBAC grants these paths with `nonResourceURLs` (`/metrics`, or `/debug/*`) and verb `get` (`put` for
`PUT /debug/flags/v`). A failed review raises AuthorizationError (the guard answers 500, as upstream does
for an authorizer error); every review is bounded by `timeout` seconds.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.adapters.cluster.client import ApiError, KubeClient
from scheduler.adapters.cluster.serving.authn import UserInfo, describe_api_error
from scheduler.adapters.cluster.serving.expiring import ExpiringCache
from scheduler.logging_setup import V4

log = logging.getLogger("pyscheduler.serving")

SUBJECT_ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
DEFAULT_ALWAYS_ALLOW_PATHS: tuple[str, ...] = ("/healthz", "/readyz", "/livez")
SYSTEM_MASTERS = "system:masters"
ALLOWED_TTL = 10.0  # upstream --authorization-webhook-cache-authorized-ttl
DENIED_TTL = 10.0  # upstream --authorization-webhook-cache-unauthorized-ttl
CACHE_ENTRIES = 4096
REVIEW_TIMEOUT = 10.0


@dataclass(frozen=True)
class Decision:
    """An authorization answer; `reason` is the authorizer's explanation (often empty for a denial)."""

    allowed: bool
    reason: str = ""


class AuthorizationError(Exception):
    """The API server could not decide (the SubjectAccessReview itself failed)."""


SubjectAccessReviewer = Callable[[UserInfo, str, str], Awaitable[Decision]]
"""Sends one SubjectAccessReview for (user, path, verb); raises AuthorizationError when it fails."""


class PathMatcher:
    """Upstream's always-allow path authorizer: exact paths, or prefixes written with one trailing `*`."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = tuple(paths)
        exact: set[str] = set()
        prefixes: list[str] = []
        for path in self.paths:
            problem = path_problem(path)
            if problem:
                raise ValueError(problem)
            if path.endswith("*"):
                prefixes.append(path[:-1])
            else:
                exact.add(path)
        self._exact = frozenset(exact)
        self._prefixes = tuple(prefixes)

    def matches(self, path: str) -> bool:
        """Whether `path` is always allowed; a path that is not in normal form never is (fail closed)."""
        if not is_normalized(path):
            return False
        return path in self._exact or any(path.startswith(p) for p in self._prefixes)


def path_problem(path: str) -> str:
    """Why `path` cannot be an always-allow path ("" when it can)."""
    if not path.startswith("/"):
        return f"{path!r} must start with /"
    if "*" in path[:-1]:
        return f"{path!r}: only a trailing * is allowed"
    if any(c.isspace() for c in path) or "?" in path or "#" in path:
        return f"{path!r} must be a plain path (no spaces, query or fragment)"
    return ""


def is_normalized(path: str) -> bool:
    """No empty, `.` or `..` segments: the path the router resolves is the path that was authorized."""
    if not path.startswith("/"):
        return False
    segments = path[1:].split("/")
    if segments[-1] == "":  # one trailing slash is fine ("/" itself included)
        segments.pop()
    return all(s not in ("", ".", "..") for s in segments)


def subject_access_review(user: UserInfo, path: str, verb: str) -> dict[str, Any]:
    """The SubjectAccessReview kube-scheduler's delegating authorizer sends for a non-resource request."""
    spec: dict[str, Any] = {
        "user": user.name,
        "groups": list(user.groups),
        "nonResourceAttributes": {"path": path, "verb": verb},
    }
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = user.extra_dict()
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def parse_subject_access_review(answer: Mapping[str, Any]) -> Decision:
    """Allowed only when the answer says so; its reason (or evaluation error) is kept for the 403 body/log."""
    status = answer.get("status") or {}
    reason = str(status.get("reason") or "")
    if status.get("allowed"):
        return Decision(True, reason)
    return Decision(False, reason)


def subject_access_reviewer(client: KubeClient, timeout: float = REVIEW_TIMEOUT) -> SubjectAccessReviewer:
    """SubjectAccessReviews through `client`, each bounded by `timeout` seconds (retries included)."""

    async def review(user: UserInfo, path: str, verb: str) -> Decision:
        body = subject_access_review(user, path, verb)
        try:
            async with asyncio.timeout(timeout):
                answer = await client.request(
                    "POST", SUBJECT_ACCESS_REVIEW_PATH, body=body, request_timeout=timeout / 2
                )
        except ApiError as exc:
            raise AuthorizationError(f"SubjectAccessReview failed: {describe_api_error(exc)}") from exc
        except TimeoutError as exc:
            raise AuthorizationError(f"SubjectAccessReview timed out after {timeout:g}s") from exc
        return parse_subject_access_review(answer or {})

    return review


class DelegatingAuthorizer:
    """Always-allowed paths, then system:masters, then a cached SubjectAccessReview."""

    def __init__(
        self,
        review: SubjectAccessReviewer | None,
        always_allow: PathMatcher,
        *,
        allowed_ttl: float = ALLOWED_TTL,
        denied_ttl: float = DENIED_TTL,
        max_entries: int = CACHE_ENTRIES,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.review = review
        self.always_allow = always_allow
        self.allowed_ttl = allowed_ttl
        self.denied_ttl = denied_ttl
        self.cache: ExpiringCache[str, Decision] = (
            ExpiringCache(max_entries, clock) if clock is not None else ExpiringCache(max_entries)
        )

    def always_allowed(self, path: str) -> bool:
        return self.always_allow.matches(path)

    def ttl(self, decision: Decision) -> float:
        return self.allowed_ttl if decision.allowed else self.denied_ttl

    async def authorize(self, user: UserInfo, path: str, verb: str) -> Decision:
        """Whether `user` may `verb` `path`; AuthorizationError when the API server could not say."""
        if self.always_allowed(path) or SYSTEM_MASTERS in user.groups:
            return Decision(True)
        if self.review is None:
            # Upstream without an authorization kubeconfig: everything not skipped is forbidden.
            return Decision(False, "no authorizer is configured")
        review = self.review
        key = json.dumps([user.name, user.uid, sorted(user.groups), user.extra, path, verb], separators=(",", ":"))
        decision = await self.cache.get_or_load(key, lambda: review(user, path, verb), self.ttl)
        if not decision.allowed:
            log.log(V4, "forbidden", extra={"user": user.name, "verb": verb, "path": path, "reason": decision.reason})
        return decision
