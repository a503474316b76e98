"""The secure port on a real kube-apiserver: who may read what, decided by TokenReview + SubjectAccessReview.

pyscheduler runs as the Helm chart's ServiceAccount (tests/e2e/test_rbac.py's `release`: the chart installed
into a fresh namespace, the scheduler's only credential a TokenRequest token), so the TokenReviews and
SubjectAccessReviews it sends are allowed by exactly the chart's `system:auth-delegator` binding. The callers
are real ServiceAccounts with real TokenRequest tokens:
- `nobody`, with no RBAC at all;
- `scraper`, bound to the chart's `<fullname>-metrics-reader` ClusterRole (GET /metrics);
- `debugger`, bound to a ClusterRole with `get` on `/debug/*` (but not `put`);
and the control plane's admin, a member of `system:masters`.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID
from kubernetes_asyncio.client import ApiClient

from tests.cluster.harness import ControlPlane
from tests.e2e.kube import JSON, request_json, wait_for
from tests.e2e.test_rbac import (  # noqa: F401 - fixtures
    RBAC_API,
    Release,
    SchedulerRun,
    StartScheduler,
    _can,
    release,
    start_ready,
    start_scheduler,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]

HEALTH = ("/healthz", "/readyz", "/livez")
DEBUG = ("/debug/flags/v", "/debug/cache", "/debug/cache/compare", "/debug/pyscheduler/stats")


@dataclass(frozen=True)
class Caller:
    """A ServiceAccount and a token of it minted by the TokenRequest API."""

    user: str
    token: str


async def _service_account(api_client: ApiClient, namespace: str, name: str) -> Caller:
    await request_json(
        api_client,
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts",
        body={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
    )
    answer = await request_json(
        api_client,
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    )
    return Caller(f"system:serviceaccount:{namespace}:{name}", answer["status"]["token"])


async def _bind(api_client: ApiClient, name: str, cluster_role: str, caller: Caller) -> None:
    _, _, namespace, sa = caller.user.split(":")
    await request_json(
        api_client,
        "POST",
        f"{RBAC_API}/clusterrolebindings",
        body={
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}],
        },
    )


@dataclass(frozen=True)
class Callers:
    nobody: Caller
    scraper: Caller
    debugger: Caller
    admin: str  # the control plane's admin token (group system:masters)


@pytest.fixture
async def callers(
    release: Release,  # noqa: F811
    api_client: ApiClient,
    namespace: str,
    control_plane: ControlPlane,
) -> AsyncIterator[Callers]:
    """Three ServiceAccounts of the test's namespace with their RBAC; the bindings are deleted afterwards."""
    nobody = await _service_account(api_client, namespace, "nobody")
    scraper = await _service_account(api_client, namespace, "scraper")
    debugger = await _service_account(api_client, namespace, "debugger")
    debug_role = f"{namespace}-debug-reader"
    await request_json(
        api_client,
        "POST",
        f"{RBAC_API}/clusterroles",
        body={
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": debug_role},
            "rules": [{"nonResourceURLs": ["/debug/*"], "verbs": ["get"]}],
        },
    )
    bindings = [f"{namespace}-scraper", f"{namespace}-debugger"]
    await _bind(api_client, bindings[0], release.metrics_reader, scraper)
    await _bind(api_client, bindings[1], debug_role, debugger)
    try:
        await wait_for(
            lambda: _can(api_client, scraper.user, "", "get", "", "/metrics"), what="the scraper binding"
        )
        await wait_for(
            lambda: _can(api_client, debugger.user, "", "get", "", "/debug/cache"), what="the debugger binding"
        )
        yield Callers(nobody, scraper, debugger, control_plane.token)
    finally:
        for name in bindings:
            await request_json(api_client, "DELETE", f"{RBAC_API}/clusterrolebindings/{name}")
        await request_json(api_client, "DELETE", f"{RBAC_API}/clusterroles/{debug_role}")


def _forbidden(body: str) -> str:
    doc: JSON = json.loads(body)
    assert (doc["kind"], doc["status"], doc["reason"], doc["code"], doc["details"]) == (
        "Status",
        "Failure",
        "Forbidden",
        403,
        {},
    ), doc
    return str(doc["message"])


async def test_who_may_read_what_on_the_secure_port(
    start_scheduler: StartScheduler,  # noqa: F811
    callers: Callers,
) -> None:
    """401 without a valid token, 403 without RBAC, /metrics for the scraper only, everything for system:masters."""
    run: SchedulerRun = await start_ready(start_scheduler, "--enable-debug-handlers")

    for path in HEALTH:  # open to anyone, no credential
        status, body = await run.request("GET", path)
        assert (status, body) == (200, "ok"), path

    for token in (None, "not-a-token", callers.scraper.token[:-4] + "AAAA"):
        for path in ("/metrics", "/configz", *DEBUG):
            status, body = await run.request("GET", path, token=token)
            assert status == 401, (path, body)
    assert body == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        '"message":"Unauthorized","reason":"Unauthorized","code":401}\n'
    )

    status, body = await run.request("GET", "/metrics", token=callers.nobody.token)
    assert status == 403, body
    assert _forbidden(body) == f'forbidden: User "{callers.nobody.user}" cannot get path "/metrics"'

    status, body = await run.request("GET", "/metrics", token=callers.scraper.token)
    assert status == 200, body
    assert "scheduler_pending_pods" in body and "pyscheduler_build_info" in body
    for path in ("/configz", *DEBUG):
        status, body = await run.request("GET", path, token=callers.scraper.token)
        assert status == 403, (path, body)
        assert _forbidden(body) == f'forbidden: User "{callers.scraper.user}" cannot get path "{path}"'

    # `get` on /debug/* is not `put`: the verb is the lower-case HTTP method.
    status, body = await run.request("GET", "/debug/flags/v", token=callers.debugger.token)
    assert (status, body.strip()) == (200, "2")
    status, body = await run.request("PUT", "/debug/flags/v", token=callers.debugger.token, data="4")
    assert status == 403, body
    assert _forbidden(body) == f'forbidden: User "{callers.debugger.user}" cannot put path "/debug/flags/v"'
    assert (await run.request("GET", "/metrics", token=callers.debugger.token))[0] == 403

    for path in ("/metrics", "/configz", *DEBUG):
        status, body = await run.request("GET", path, token=callers.admin)
        assert status == 200, (path, body)
    status, body = await run.request("PUT", "/debug/flags/v", token=callers.admin, data="4")
    assert status == 200, body
    # An unknown path is 404 only for a caller allowed to ask for it.
    assert (await run.request("GET", "/debug/nothing", token=callers.admin))[0] == 404
    assert (await run.request("GET", "/debug/nothing", token=callers.scraper.token))[0] == 403

    log = run.log()
    assert "unable to authenticate" not in log and "unable to authorize" not in log, log  # no review failed
    assert await run.stop() == 0


async def test_the_served_certificate_is_kube_schedulers_self_signed_one(
    start_scheduler: StartScheduler,  # noqa: F811
    callers: Callers,
) -> None:
    """CN localhost@<unix>, issued by localhost-ca@<unix>, SANs localhost and 127.0.0.1 (bound to 127.0.0.1)."""
    run = await start_ready(start_scheduler)
    pem = await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", run.port))
    cert = x509.load_pem_x509_certificate(pem.encode())
    cn = str(cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)
    issuer = str(cert.issuer.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)
    assert cn.startswith("localhost@") and cn.removeprefix("localhost@").isdigit(), cn
    assert issuer == cn.replace("localhost@", "localhost-ca@"), issuer
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    # The admin reads /metrics through it too (the token is checked over this TLS connection).
    assert (await run.request("GET", "/metrics", token=callers.admin))[0] == 200
    assert await run.stop() == 0
