"""The aiohttp middleware in front of every handler of the secure port: authenticate, then authorize.

Order and answers follow kube-scheduler's handler chain (authentication, then authorization, then the mux):
- a path that is not in normal form (empty, `.` or `..` segments) is refused with 400 before anything else,
  so the path that is authorized is the path the router serves;
- always-allowed paths (`/healthz`, `/readyz`, `/livez` by default) go straight to their handler;
- not authenticated: 401 with the API server's body for it
  (`{"kind":"Status",...,"message":"Unauthorized","reason":"Unauthorized","code":401}`);
- authenticated but not authorized: 403 with upstream's body
  (`{"kind":"Status",...,"message":"forbidden: User \"u\" cannot get path \"/metrics\"",...,"code":403}`);
- the SubjectAccessReview failed: 500 `Internal Server Error: "/metrics": <cause>` (upstream's text);
  a failed TokenReview is a 401 (upstream fails authentication closed), logged with its cause.
Authorization runs before routing, so an unknown path is 404 only for a caller allowed to ask for it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from scheduler.adapters.cluster.serving.authn import AuthenticationError, DelegatingAuthenticator, UserInfo
from scheduler.adapters.cluster.serving.authz import AuthorizationError, DelegatingAuthorizer, is_normalized

log = logging.getLogger("pyscheduler.serving")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
USER_KEY = web.RequestKey("pyscheduler.user", UserInfo)
NOSNIFF = {"X-Content-Type-Options": "nosniff"}
_SANITIZER = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def _go_quote(text: str) -> str:
    """Go's %q for the strings that appear here (user names and paths): a JSON string literal."""
    return json.dumps(text, ensure_ascii=False)


def status_body(code: int, reason: str, message: str, *, details: bool) -> str:
    """A metav1.Status as the API server's JSON serializer writes it (field order, compact, newline)."""
    doc: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details:
        doc["details"] = {}
    doc["code"] = code
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n"


def forbidden_message(user: str, verb: str, path: str, reason: str = "") -> str:
    """Upstream's message for a non-resource request: `forbidden: User "u" cannot get path "/metrics"`."""
    msg = f"User {_go_quote(user)} cannot {verb} path {_go_quote(path)}".translate(_SANITIZER)
    if reason:
        msg = f"{msg}: {reason}"
    return f"forbidden: {msg}"


def unauthorized() -> web.Response:
    return web.Response(
        status=401,
        text=status_body(401, "Unauthorized", "Unauthorized", details=False),
        content_type="application/json",
        headers=NOSNIFF,
    )


def forbidden(user: str, verb: str, path: str, reason: str = "") -> web.Response:
    return web.Response(
        status=403,
        text=status_body(403, "Forbidden", forbidden_message(user, verb, path, reason), details=True),
        content_type="application/json",
        headers=NOSNIFF,
    )


def internal_error(path: str, cause: Exception) -> web.Response:
    return web.Response(
        status=500,
        text=f"Internal Server Error: {_go_quote(path)}: {cause}".translate(_SANITIZER) + "\n",
        headers=NOSNIFF,
    )


def request_user(request: web.Request) -> UserInfo | None:
    """The authenticated caller the guard attached to the request (None on always-allowed paths)."""
    return request.get(USER_KEY)


def guard(authenticator: DelegatingAuthenticator, authorizer: DelegatingAuthorizer) -> Any:
    """The middleware: add it first in `web.Application(middlewares=[...])`."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.path
        if not is_normalized(path):
            return web.Response(status=400, text=f"Bad Request: path {_go_quote(path)} is not normalized\n")
        if authorizer.always_allowed(path):
            return await handler(request)
        peercert = request.transport.get_extra_info("peercert") if request.transport is not None else None
        try:
            user = await authenticator.authenticate(request.headers.get("Authorization"), peercert)
        except AuthenticationError as exc:
            log.error("unable to authenticate the request", extra={"path": path, "error": str(exc)})
            return unauthorized()
        if user is None:
            return unauthorized()
        verb = request.method.lower()
        try:
            decision = await authorizer.authorize(user, path, verb)
        except AuthorizationError as exc:
            log.error("unable to authorize the request", extra={"user": user.name, "path": path, "error": str(exc)})
            return internal_error(path, exc)
        if not decision.allowed:
            return forbidden(user.name, verb, path, decision.reason)
        request[USER_KEY] = user
        return await handler(request)

    return middleware
