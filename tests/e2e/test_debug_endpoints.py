"""Debug endpoints and SIGUSR2 against a real kube-apiserver (`pyscheduler run --enable-debug-handlers`).

The endpoints are on the secure port: these tests call them over HTTPS as the control plane's admin
(system:masters); who else may call them is tests/e2e/test_secure_serving.py's subject.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from tests.e2e.conftest import NodeFactory, PodFactory, PySchedulerProcess, StartPyScheduler
from tests.e2e.kube import wait_for, wait_for_pod_bound

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

async def _get_json(sched: PySchedulerProcess, path: str) -> Any:
    """GET a debug document as the admin; a 429 of the rate-limited calls is waited out, not an error."""
    status, body = await sched.request("GET", path, retry_429=True)
    assert status == 200, body
    return json.loads(body)


async def test_debug_endpoints_are_off_by_default(start_pyscheduler: StartPyScheduler) -> None:
    sched = await start_pyscheduler()
    paths = ("/debug/flags/v", "/debug/cache", "/debug/cache/compare", "/debug/explain/default/x")
    for path in (*paths, "/debug/pyscheduler/stats"):
        status, _ = await sched.request("GET", path)
        assert status == 404, path
    status, _ = await sched.request("PUT", "/debug/flags/v", data="5")
    assert status in (404, 405)


async def test_flags_v_changes_verbosity_at_runtime(start_pyscheduler: StartPyScheduler) -> None:
    sched = await start_pyscheduler("--enable-debug-handlers")
    status, body = await sched.request("GET", "/debug/flags/v")
    assert (status, body.strip()) == (200, "2")
    status, body = await sched.request("PUT", "/debug/flags/v", data="5")
    assert status == 200, body
    status, body = await sched.request("GET", "/debug/flags/v")
    assert (status, body.strip()) == (200, "5")
    status, body = await sched.request("PUT", "/debug/flags/v", data="loud")
    assert status == 400 and "must be an integer" in body
    line = next(x for x in sched.log().splitlines() if "log verbosity changed" in x)
    assert 'user="admin"' in line, line  # who changed it, from the authenticated request


async def test_cache_dump_and_compare(
    start_pyscheduler: StartPyScheduler,
    create_node: NodeFactory,
    create_pod: PodFactory,
    api_client: ApiClient,
    namespace: str,
) -> None:
    await create_node("dbg-node-a")
    await create_node("dbg-node-b")
    sched = await start_pyscheduler("--enable-debug-handlers")
    await create_pod("bound-one", requests={"cpu": "100m"})
    bound = await wait_for_pod_bound(api_client, namespace, "bound-one")
    node = bound["spec"]["nodeName"]

    async def dumped() -> Any:
        doc = await _get_json(sched, "/debug/cache")
        return doc if f"{namespace}/bound-one" in doc["pods"] else None

    doc = await wait_for(dumped, what="the bound pod in /debug/cache", within=10)
    assert {"dbg-node-a", "dbg-node-b"} <= set(doc["nodes"])
    assert doc["pods"][f"{namespace}/bound-one"] == node
    assert f"{namespace}/bound-one" in doc["nodes"][node]["pods"]
    assert set(doc["queues"]) >= {"active", "backoff", "unschedulable", "gated", "in_flight"}
    assert "assumed_pods" in doc

    compared = await _get_json(sched, "/debug/cache/compare")
    assert set(compared) >= {"missing", "extra", "stale", "counts", "listed", "cached"}
    assert set(compared["missing"]) == {"nodes", "pods", "pending_pods"}
    assert compared["counts"]["total"] == 0, compared
    assert compared["listed"]["nodes"] >= 2

    # A node created now is seen by the watch: within a second or so it is not missing from the cache.
    await create_node("dbg-node-c")

    async def in_sync() -> Any:
        doc = await _get_json(sched, "/debug/cache/compare")
        return doc if "dbg-node-c" not in doc["missing"]["nodes"] and doc["counts"]["total"] == 0 else None

    await wait_for(in_sync, what="the new node to be in the cache", within=10)


async def test_explain_endpoint_for_pending_and_host_port_pods(
    start_pyscheduler: StartPyScheduler,
    create_node: NodeFactory,
    create_pod: PodFactory,
    api_client: ApiClient,
    namespace: str,
) -> None:
    await create_node("dbg-ports", cpu="2")
    sched = await start_pyscheduler("--enable-debug-handlers")
    await create_pod("holder", ports=[{"containerPort": 8080, "hostPort": 8080}])
    await wait_for_pod_bound(api_client, namespace, "holder")
    await create_pod("greedy", requests={"cpu": "64"})
    await create_pod("clash", ports=[{"containerPort": 8080, "hostPort": 8080}])

    async def explained(name: str) -> Any:
        status, body = await sched.request("GET", f"/debug/explain/{namespace}/{name}", retry_429=True)
        assert status == 200, body
        doc = json.loads(body)
        return doc if doc["message"] else None

    greedy = await wait_for(lambda: explained("greedy"), what="an explanation for greedy", within=10)
    [verdict] = [n for n in greedy["nodes"] if n["name"] == "dbg-ports"]
    assert not verdict["feasible"]
    assert "NodeResourcesFit" in {f["status"]["plugin"] for f in verdict["filters"] if f["status"]}
    assert "Insufficient cpu" in greedy["message"]

    clash = await wait_for(lambda: explained("clash"), what="an explanation for clash", within=10)
    [verdict] = [n for n in clash["nodes"] if n["name"] == "dbg-ports"]
    assert [h["pod"] for h in verdict["details"] if h["plugin"] == "NodePorts"] == [f"{namespace}/holder"]

    status, text = await sched.request("GET", f"/debug/explain/{namespace}/clash?format=text", retry_429=True)
    assert status == 200
    assert f"host port TCP 0.0.0.0:8080 is held by pod {namespace}/holder" in text

    status, body = await sched.request("GET", f"/debug/explain/{namespace}/no-such-pod", retry_429=True)
    assert status == 404 and "not found" in body


async def test_sigusr2_logs_the_cache_comparison(start_pyscheduler: StartPyScheduler, create_node: NodeFactory) -> None:
    await create_node("dbg-usr2")
    sched = await start_pyscheduler(log_format="json")
    assert sched.process.pid is not None
    os.kill(sched.process.pid, signal.SIGUSR2)

    async def logged() -> Any:
        for line in sched.process.tail(400).splitlines():
            with contextlib.suppress(ValueError):
                doc = json.loads(line)
                if isinstance(doc, dict) and str(doc.get("msg", "")).startswith("cache comparison"):
                    return doc
        return None

    started = time.monotonic()
    doc = await wait_for(logged, what="the SIGUSR2 comparison log line", within=15)
    assert doc["counts"]["total"] == 0 and doc["names"] == {}
    assert doc["nodes"] >= 1
    assert sched.process.running(), f"SIGUSR2 killed the process after {time.monotonic() - started:.1f}s"
