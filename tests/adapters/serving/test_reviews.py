"""The TokenReview and SubjectAccessReview clients against a local HTTP server standing in for a sick API.

What matters here is the failure behaviour the secure port relies on: every review is bounded in time, and
an error answer becomes AuthenticationError/AuthorizationError carrying the server's message (the e2e tests
send real reviews to a real kube-apiserver).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration

from scheduler.adapters.cluster.client import KubeClient
from scheduler.adapters.cluster.serving.authn import AuthenticationError, UserInfo, token_reviewer
from scheduler.adapters.cluster.serving.authz import AuthorizationError, subject_access_reviewer


class Api:
    """What the fake API server does: "hang", "forbid", "fail" or "answer" (with `answer` as the body)."""

    def __init__(self) -> None:
        self.mode = "answer"
        self.answer: dict[str, Any] = {}
        self.bodies: list[Any] = []
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.json())
        if self.mode == "hang":
            await self.release.wait()
        if self.mode == "forbid":
            return web.json_response(
                {"kind": "Status", "message": 'tokenreviews.authentication.k8s.io is forbidden: User "x"'}, status=403
            )
        if self.mode == "fail":
            return web.json_response({"kind": "Status", "message": "etcdserver: leader changed"}, status=503)
        return web.json_response(self.answer, status=201)


@pytest.fixture
async def api() -> AsyncIterator[tuple[Api, KubeClient]]:
    fake = Api()
    app = web.Application()
    app.router.add_post("/apis/{group}/v1/{resource}", fake.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    configuration = Configuration(host=f"http://127.0.0.1:{runner.addresses[0][1]}")
    client = KubeClient(configuration, qps=1000, burst=1000, max_retries=1)
    try:
        yield fake, client
    finally:
        fake.release.set()
        await client.close()
        await runner.cleanup()


async def test_a_hanging_api_server_ends_the_token_review(api: tuple[Api, KubeClient]) -> None:
    fake, client = api
    fake.mode = "hang"
    with pytest.raises(AuthenticationError, match=r"^TokenReview timed out after 0\.5s$"):
        await token_reviewer(client, timeout=0.5)("tok")
    with pytest.raises(AuthorizationError, match=r"^SubjectAccessReview timed out after 0\.5s$"):
        await subject_access_reviewer(client, timeout=0.5)(UserInfo("u"), "/metrics", "get")


async def test_refused_and_failed_reviews_carry_the_servers_message(api: tuple[Api, KubeClient]) -> None:
    fake, client = api
    fake.mode = "forbid"
    with pytest.raises(AuthenticationError, match=r"TokenReview failed: 403 tokenreviews.* is forbidden"):
        await token_reviewer(client)("tok")
    fake.mode = "fail"
    with pytest.raises(AuthorizationError, match=r"SubjectAccessReview failed: 503 etcdserver: leader changed"):
        await subject_access_reviewer(client)(UserInfo("u"), "/metrics", "get")


async def test_answers_are_parsed(api: tuple[Api, KubeClient]) -> None:
    fake, client = api
    fake.answer = {"status": {"authenticated": True, "user": {"username": "alice", "groups": ["g"]}}}
    result = await token_reviewer(client)("tok")
    assert result.user == UserInfo("alice", groups=("g",))
    assert fake.bodies[-1] == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "tok"},
    }
    fake.answer = {"status": {"allowed": False, "reason": "no RBAC policy matched"}}
    decision = await subject_access_reviewer(client)(UserInfo("alice"), "/debug/cache", "get")
    assert (decision.allowed, decision.reason) == (False, "no RBAC policy matched")
    assert fake.bodies[-1]["spec"]["nonResourceAttributes"] == {"path": "/debug/cache", "verb": "get"}
