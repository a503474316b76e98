"""The /debug/* handlers over an in-memory scheduler (the e2e tests run them against a real API server)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from scheduler import logging_setup
from scheduler.adapters.cluster import debug
from scheduler.adapters.cluster.debug import DebugHandlers, compare, compare_in_slices, log_comparison
from scheduler.adapters.cluster.serving.limits import ExpensiveCallLimiter
from scheduler.adapters.memory import MemoryCluster
from scheduler.core.profile import build_scheduler
from scheduler.core.scheduler import Scheduler
from scheduler.testing import make_node, make_pod

JSON = dict[str, Any]


class World:
    def __init__(self) -> None:
        self.cluster = MemoryCluster()
        self.scheduler: Scheduler = build_scheduler(self.cluster, None)
        self.cluster.attach(self.scheduler)
        self.api_nodes: list[JSON] | None = None  # what the "API" LISTs, when it differs from the cluster

    async def list_cluster(self) -> tuple[list[JSON], list[JSON]]:
        nodes = self.api_nodes if self.api_nodes is not None else list(self.cluster.nodes.values())
        return nodes, list(self.cluster.pods.values())

    async def get_pod(self, namespace: str, name: str) -> JSON | None:
        for obj in self.cluster.pods.values():
            meta = obj["metadata"]
            if meta.get("namespace", "default") == namespace and meta["name"] == name:
                return obj
        return None


@pytest.fixture
async def world() -> World:
    w = World()
    w.cluster.apply_node(make_node("n1").capacity(cpu="2").obj())
    w.cluster.apply_node(make_node("n2").capacity(cpu="2").obj())
    w.cluster.apply_pod(make_pod("web", "ns").scheduler_name("pyscheduler").req(cpu="1").host_port(8080).obj())
    await w.scheduler.run_until_idle()
    w.cluster.apply_pod(make_pod("big", "ns").scheduler_name("pyscheduler").req(cpu="3").obj())
    await w.scheduler.run_until_idle()
    return w


@pytest.fixture
async def client(world: World) -> AsyncIterator[TestClient[web.Request, web.Application]]:
    app = web.Application()
    DebugHandlers(world.scheduler, world.list_cluster, world.get_pod).register(app)
    saved = logging_setup.get_verbosity()
    async with TestClient(TestServer(app)) as c:
        yield c
    logging_setup.set_verbosity(saved)


async def test_flags_v_get_and_put(client: TestClient[web.Request, web.Application]) -> None:
    resp = await client.put("/debug/flags/v", data="5")
    assert resp.status == 200
    assert "5" in await resp.text()
    assert (await (await client.get("/debug/flags/v")).text()).strip() == "5"
    assert logging.getLogger().isEnabledFor(logging.DEBUG)
    for body in ("five", "", "-1", "11", "2.5"):
        resp = await client.put("/debug/flags/v", data=body)
        assert resp.status == 400, body
        assert "invalid verbosity" in await resp.text()
    assert (await (await client.get("/debug/flags/v")).text()).strip() == "5"


async def test_cache_dump(client: TestClient[web.Request, web.Application]) -> None:
    doc = await (await client.get("/debug/cache")).json()
    assert set(doc["nodes"]) == {"n1", "n2"}
    assert set(doc["pods"]) == {"ns/web"}
    assert doc["pods"]["ns/web"] in {"n1", "n2"}
    assert doc["assumed_pods"] == []
    assert doc["pending_pods"] == ["ns/big"]
    assert [p["pod"] for p in doc["queues"]["unschedulable"]] == ["ns/big"]
    assert doc["nominated_pods"] == {}
    assert doc["counts"]["nodes"] == 2


async def test_compare_reports_missing_extra_and_counts(
    world: World, client: TestClient[web.Request, web.Application]
) -> None:
    doc = await (await client.get("/debug/cache/compare")).json()
    assert doc["counts"]["total"] == 0
    assert set(doc) >= {"missing", "extra", "stale", "counts", "listed", "cached"}
    world.api_nodes = [world.cluster.nodes["n1"], make_node("n3").obj()]
    doc = await (await client.get("/debug/cache/compare")).json()
    assert doc["missing"]["nodes"] == ["n3"]
    assert doc["extra"]["nodes"] == ["n2"]
    assert doc["counts"]["missing_nodes"] == 1 and doc["counts"]["extra_nodes"] == 1
    assert doc["counts"]["total"] == 2


async def test_explain_names_the_blocking_plugin_and_port_holder(
    client: TestClient[web.Request, web.Application],
) -> None:
    doc = await (await client.get("/debug/explain/ns/big")).json()
    assert doc["pod"] == "ns/big"
    assert doc["message"] == (
        "0/2 nodes are available: 2 Insufficient cpu."
        " preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    assert doc["preemption"]["outcome"] == "not helpful" and doc["preemption"]["candidates"] == []
    plugins = {
        f["status"]["plugin"]
        for n in doc["nodes"]
        for f in n["filters"]
        if f["status"] and f["status"]["code"] != "Skip"
    }
    assert plugins == {"NodeResourcesFit"}
    text = await (await client.get("/debug/explain/ns/big?format=text")).text()
    assert "Insufficient cpu" in text and "Blocking reasons" in text

    resp = await client.get("/debug/explain/ns/missing")
    assert resp.status == 404
    assert "not found" in (await resp.json())["error"]
    assert (await client.get("/debug/explain/ns/big?format=yaml")).status == 400


async def test_explain_host_port_conflict_names_the_holder(
    world: World, client: TestClient[web.Request, web.Application]
) -> None:
    web_node = world.cluster.node_of(next(iter(world.cluster.pods)))
    world.cluster.apply_pod(
        make_pod("clash", "ns")
        .scheduler_name("pyscheduler")
        .host_port(8080)
        .node_selector(**{"kubernetes.io/hostname": str(web_node)})
        .obj()
    )
    doc = await (await client.get("/debug/explain/ns/clash")).json()
    [verdict] = [n for n in doc["nodes"] if n["name"] == web_node]
    assert [h["pod"] for h in verdict["details"] if h["plugin"] == "NodePorts"] == ["ns/web"]


async def test_log_comparison_is_one_structured_line(world: World, caplog: pytest.LogCaptureFixture) -> None:
    nodes, pods = await world.list_cluster()
    with caplog.at_level(logging.INFO, logger="pyscheduler.debug"):
        log_comparison(compare(world.scheduler, nodes[:1], pods))
    [record] = [r for r in caplog.records if r.name == "pyscheduler.debug"]
    assert record.levelno == logging.WARNING
    assert record.counts == {"extra_nodes": 1, "total": 1}  # type: ignore[attr-defined]
    assert record.names == {"extra_nodes": ["n2"]}  # type: ignore[attr-defined]


async def test_expensive_calls_are_limited_with_429_and_retry_after(world: World) -> None:
    """cache, compare and explain share one limiter: past its burst they answer 429 with Retry-After."""
    clock_now = [0.0]
    limiter = ExpensiveCallLimiter(rate=1.0, burst=2, max_in_flight=1, clock=lambda: clock_now[0])
    app = web.Application()
    DebugHandlers(world.scheduler, world.list_cluster, world.get_pod, limiter=limiter).register(app)
    async with TestClient(TestServer(app)) as c:
        assert (await c.get("/debug/cache")).status == 200
        assert (await c.get("/debug/explain/ns/big")).status == 200
        refused = await c.get("/debug/cache/compare")
        assert refused.status == 429
        assert refused.headers["Retry-After"] == "1"
        assert "too many expensive debug requests" in await refused.text()
        assert (await c.get("/debug/flags/v")).status == 200  # cheap calls are not limited
        clock_now[0] += 1.0
        assert (await c.get("/debug/cache/compare")).status == 200
    assert limiter.in_flight == 0 and limiter.refused == 1


async def test_a_call_in_flight_refuses_the_next(world: World) -> None:
    """One expensive call at a time: while a LIST is outstanding, a second compare is refused at once."""
    limiter = ExpensiveCallLimiter(rate=100.0, burst=10, max_in_flight=1)
    release, listing = asyncio.Event(), asyncio.Event()

    async def slow_list() -> tuple[list[JSON], list[JSON]]:
        listing.set()
        await release.wait()
        return await world.list_cluster()

    app = web.Application()
    DebugHandlers(world.scheduler, slow_list, world.get_pod, limiter=limiter).register(app)
    async with TestClient(TestServer(app)) as c:
        first = asyncio.create_task(c.get("/debug/cache/compare"))
        await listing.wait()
        assert (await c.get("/debug/explain/ns/big")).status == 429
        release.set()
        assert (await first).status == 200


async def test_stats_are_a_debug_handler(world: World) -> None:
    """/debug/pyscheduler/stats exists only with the debug handlers, and only when given a stats source."""
    app = web.Application()
    DebugHandlers(world.scheduler, world.list_cluster, world.get_pod, stats=lambda: {"bound": 3}).register(app)
    async with TestClient(TestServer(app)) as c:
        resp = await c.get("/debug/pyscheduler/stats")
        assert resp.status == 200 and await resp.json() == {"bound": 3}
    app = web.Application()
    DebugHandlers(world.scheduler, world.list_cluster, world.get_pod).register(app)
    async with TestClient(TestServer(app)) as c:
        assert (await c.get("/debug/pyscheduler/stats")).status == 404


async def test_compare_in_slices_equals_compare(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parsing the LIST in slices (yielding between them) gives the same document as in one go."""
    monkeypatch.setattr(debug, "PARSE_SLICE", 1)
    nodes, pods = await world.list_cluster()
    nodes = [*nodes, make_node("n3").obj()]
    assert await compare_in_slices(world.scheduler, nodes, pods) == compare(world.scheduler, nodes, pods)
