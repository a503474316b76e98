"""The guard middleware over a local aiohttp app: status codes and bodies as kube-scheduler's secure port.

The API server's reviews are stood in for by plain functions (the e2e tests use the real ones); the HTTP
side is a real aiohttp server on loopback, over TLS with the self-signed pair in the last tests.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from scheduler.adapters.cluster.serving.authn import (
    AuthenticationError,
    DelegatingAuthenticator,
    TokenReviewResult,
    UserInfo,
)
from scheduler.adapters.cluster.serving.authz import (
    DEFAULT_ALWAYS_ALLOW_PATHS,
    AuthorizationError,
    Decision,
    DelegatingAuthorizer,
    PathMatcher,
)
from scheduler.adapters.cluster.serving.certs import self_signed_pair, server_context
from scheduler.adapters.cluster.serving.guard import forbidden_message, guard, request_user

USERS = {
    "admin-token": UserInfo("admin", groups=("system:masters",)),
    "scraper-token": UserInfo("system:serviceaccount:mon:prom", groups=("system:serviceaccounts",)),
    "nobody-token": UserInfo("system:serviceaccount:default:nobody"),
    "boom-authz": UserInfo("broken"),
}
GRANTS = {("system:serviceaccount:mon:prom", "/metrics", "get")}

Client = TestClient[web.Request, web.Application]


async def review_token(token: str) -> TokenReviewResult:
    if token == "boom-authn":
        raise AuthenticationError("TokenReview failed: 403 tokenreviews is forbidden")
    return TokenReviewResult(USERS.get(token))


async def review_access(user: UserInfo, path: str, verb: str) -> Decision:
    if user.name == "broken":
        raise AuthorizationError("SubjectAccessReview timed out after 10s")
    return Decision((user.name, path, verb) in GRANTS)


def app() -> web.Application:
    authn = DelegatingAuthenticator(review_token)
    authz = DelegatingAuthorizer(review_access, PathMatcher(DEFAULT_ALWAYS_ALLOW_PATHS))
    application = web.Application(middlewares=[guard(authn, authz)])

    async def ok(request: web.Request) -> web.Response:
        user = request_user(request)
        return web.Response(text=f"ok {user.name if user else '-'}")

    for path in ("/healthz", "/readyz", "/livez", "/metrics", "/configz", "/debug/cache"):
        application.router.add_get(path, ok)
    application.router.add_put("/debug/flags/v", ok)
    return application


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with TestClient(TestServer(app())) as c:
        yield c


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_health_paths_are_open_without_credentials(client: Client) -> None:
    for path in ("/healthz", "/readyz", "/livez"):
        resp = await client.get(path)
        assert (resp.status, await resp.text()) == (200, "ok -"), path


async def test_no_or_bad_credentials_are_401_with_the_api_servers_body(client: Client) -> None:
    for headers in ({}, auth("wrong"), {"Authorization": "Basic YTpi"}, auth("boom-authn")):
        resp = await client.get("/metrics", headers=headers)
        assert resp.status == 401, headers
        assert resp.headers["Content-Type"].startswith("application/json")
        assert await resp.text() == (
            '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
            '"message":"Unauthorized","reason":"Unauthorized","code":401}\n'
        )


async def test_unauthorized_user_gets_403_naming_user_verb_and_path(client: Client) -> None:
    resp = await client.get("/metrics", headers=auth("nobody-token"))
    assert resp.status == 403
    doc = json.loads(await resp.text())
    assert doc == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'forbidden: User "system:serviceaccount:default:nobody" cannot get path "/metrics"',
        "reason": "Forbidden",
        "details": {},
        "code": 403,
    }


async def test_scraper_reads_metrics_but_not_debug_or_configz(client: Client) -> None:
    resp = await client.get("/metrics", headers=auth("scraper-token"))
    assert (resp.status, await resp.text()) == (200, "ok system:serviceaccount:mon:prom")
    for path in ("/debug/cache", "/configz"):
        resp = await client.get(path, headers=auth("scraper-token"))
        assert resp.status == 403, path
    resp = await client.put("/debug/flags/v", headers=auth("scraper-token"), data="5")
    assert resp.status == 403
    assert 'cannot put path \\"/debug/flags/v\\"' in await resp.text()


async def test_system_masters_may_do_everything(client: Client) -> None:
    for path in ("/metrics", "/configz", "/debug/cache"):
        resp = await client.get(path, headers=auth("admin-token"))
        assert resp.status == 200, path
    assert (await client.put("/debug/flags/v", headers=auth("admin-token"), data="3")).status == 200


async def test_authorization_comes_before_routing(client: Client) -> None:
    """An unknown path is 404 only for a caller allowed to ask; everyone else learns nothing."""
    assert (await client.get("/debug/nothing-here", headers=auth("admin-token"))).status == 404
    assert (await client.get("/debug/nothing-here")).status == 401
    assert (await client.get("/debug/nothing-here", headers=auth("scraper-token"))).status == 403


async def test_a_failed_subject_access_review_is_a_500(client: Client) -> None:
    resp = await client.get("/metrics", headers=auth("boom-authz"))
    assert resp.status == 500
    assert await resp.text() == 'Internal Server Error: "/metrics": SubjectAccessReview timed out after 10s\n'


async def test_paths_that_are_not_normalized_are_refused(client: Client) -> None:
    for raw in ("/healthz/../debug/cache", "//metrics", "/./healthz"):
        url = client.make_url("/").with_path(raw, encoded=True)
        async with client.session.get(url) as resp:
            assert resp.status == 400, raw
            assert "is not normalized" in await resp.text()


def test_forbidden_message_escapes_like_upstream() -> None:
    assert forbidden_message("a<b>&c", "get", "/x") == 'forbidden: User "a&lt;b&gt;&amp;c" cannot get path "/x"'
    assert forbidden_message("u", "get", "/x", "RBAC: role not found") == (
        'forbidden: User "u" cannot get path "/x": RBAC: role not found'
    )


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_tls_with_the_self_signed_pair_verifies_against_its_ca(host: str) -> None:
    """A client that trusts the served CA verifies https://127.0.0.1 and https://localhost (the SANs)."""
    pair = self_signed_pair("0.0.0.0")
    runner = web.AppRunner(app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_context(pair))
    await site.start()
    try:
        port = runner.addresses[0][1]
        ca_pem = pair.chain_pem.split(b"-----END CERTIFICATE-----\n", 1)[1]
        trust = ssl.create_default_context(cadata=ca_pem.decode())
        async with aiohttp.ClientSession() as session:
            async with session.get(f"https://{host}:{port}/readyz", ssl=trust) as resp:
                assert resp.status == 200
            async with session.get(f"https://{host}:{port}/metrics", ssl=trust, headers=auth("scraper-token")) as r:
                assert r.status == 200
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await session.get(f"https://{host}:{port}/readyz", ssl=ssl.create_default_context())
    finally:
        await runner.cleanup()
