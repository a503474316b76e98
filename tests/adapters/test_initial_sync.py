"""The initial LIST, streamed: pages prefetched while the previous one is applied, watch events that arrive
meanwhile settled as the LIST overlay does, an expired continue token started over. No API server: the
KubeClient's `request` is scripted per page (tests/e2e covers the real one)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from scheduler.adapters.cluster.client import ApiError, KubeClient, peek_continue
from scheduler.adapters.cluster.watch import NODES_PATH, PODS_PATH, ClusterWatcher
from scheduler.adapters.memory import MemoryCluster
from scheduler.core.profile import build_scheduler
from scheduler.testing import make_node, make_pod

JSON = dict[str, Any]
TOKEN = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzLCJzdGFydCI6InAtMDA1MDAifQ=="


def _page(kind: str, items: list[JSON], rv: str, token: str) -> bytes:
    """The bytes an API server sends: ListMeta before the items."""
    meta: JSON = {"resourceVersion": rv}
    if token:
        meta["continue"] = token
        meta["remainingItemCount"] = 3
    return json.dumps({"kind": kind, "apiVersion": "v1", "metadata": meta, "items": items}).encode()


def _pod(name: str, node: str, rv: int, cpu: str = "100m") -> JSON:
    obj = make_pod(name, "ns").uid(f"uid-{name}").req(cpu=cpu).node(node).obj()
    obj["metadata"]["resourceVersion"] = str(rv)
    return obj


@pytest.mark.parametrize(
    ("raw", "token"),
    [
        pytest.param(_page("PodList", [{"metadata": {"name": "x"}}], "7", TOKEN), TOKEN, id="token"),
        pytest.param(_page("PodList", [], "7", TOKEN).replace(b" ", b""), TOKEN, id="compact"),
        pytest.param(_page("PodList", [], "7", ""), None, id="last-page"),
        pytest.param(b'{"items":[{"continue":"abc"}],"metadata":{"continue":"def"}}', None, id="items-first"),
        pytest.param(b'{"metadata":{"continue":"a\\u0041"},"items":[]}', None, id="escaped-token"),
    ],
)
def test_peek_continue_reads_only_a_leading_list_meta(raw: bytes, token: str | None) -> None:
    assert peek_continue(raw) == token


class ScriptedApi:
    """Answers GETs of the nodes and pods collections page by page; `during` runs while a page is requested."""

    def __init__(self, nodes: list[JSON], pod_pages: list[list[JSON]]) -> None:
        self.nodes = nodes
        self.pod_pages = pod_pages
        self.log: list[str] = []
        self.during: dict[int, Any] = {}
        self.expire_once_at: int | None = None

    async def request(self, method: str, path: str, *, query: Any = None, decode: bool = True, **_: Any) -> Any:
        assert method == "GET"
        if path.startswith("/api/v1/namespaces/"):  # a GET of one pod: the newest listed copy, as the server has it
            self.log.append(f"get {path}")
            name = path.rsplit("/", 1)[1]
            copies = [p for page in self.pod_pages for p in page if p["metadata"]["name"] == name]
            if not copies:
                raise ApiError(404, "NotFound", f'pods "{name}" not found')
            return copies[-1]
        assert not decode
        params = dict(query or [])
        if path == NODES_PATH:
            return _page("NodeList", self.nodes, "50", "")
        assert path == PODS_PATH
        index = int(str(params.get("continue") or "p0")[1:])
        self.log.append(f"request {index}")
        if self.expire_once_at == index:
            self.expire_once_at = None
            raise ApiError(410, "Expired", "The provided continue parameter is too old")
        await asyncio.sleep(0.01)
        hook = self.during.pop(index, None)
        if hook is not None:
            hook()
        last = index == len(self.pod_pages) - 1
        return _page("PodList", self.pod_pages[index], "100", "" if last else f"p{index + 1}")


async def _watcher(api: ScriptedApi) -> tuple[ClusterWatcher, Any]:
    client = KubeClient(Configuration(host="https://127.0.0.1:9"), qps=0, burst=1)  # never contacted
    client.request = api.request  # type: ignore[method-assign]
    scheduler = build_scheduler(MemoryCluster())
    return ClusterWatcher(scheduler, client), client


async def test_pages_are_prefetched_and_applied_as_they_come() -> None:
    nodes = [make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods="110").obj() for i in range(2)]
    pages = [[_pod(f"p{p}-{i}", f"n{i % 2}", 10 + p) for i in range(3)] for p in range(4)]
    api = ScriptedApi(nodes, pages)
    watcher, client = await _watcher(api)
    applied: list[str] = []
    original = watcher._apply_listed

    def spy(resource: str, obj: JSON) -> None:
        if resource == "pods":
            applied.append(obj["metadata"]["name"])
            api.log.append(f"apply {obj['metadata']['name']}")
        original(resource, obj)

    watcher._apply_listed = spy  # type: ignore[method-assign]
    try:
        await watcher.initial_sync()
    finally:
        await client.close()
    assert watcher.synced.is_set()
    assert (watcher.stats.initial_nodes, watcher.stats.initial_pods) == (2, 12)
    assert watcher.pods_resource_version == "100"
    assert len(applied) == 12 and watcher.scheduler.cache.get_pod("uid-p3-2") is not None
    # Page 1 is requested before any pod of page 0 is applied: the server works while we parse.
    assert api.log.index("request 1") < api.log.index("apply p0-0")
    assert api.log.index("request 3") < api.log.index("apply p2-0")


async def test_events_during_the_list_are_settled_like_the_overlay() -> None:
    """A newer event beats an older listed copy applied after it; a stale event that arrives after its
    object was listed does not roll the cache back; a deletion is final even if a later page lists it."""
    nodes = [make_node("n0").capacity(cpu="4", memory="8Gi", pods="110").obj()]
    pages = [[_pod("a", "n0", 10), _pod("b", "n0", 40)], [_pod("c", "n0", 20)], [_pod("a2", "n0", 30)]]
    api = ScriptedApi(nodes, pages)
    watcher, client = await _watcher(api)
    newer_c = _pod("c", "n0", 120, cpu="700m")  # newer than the LIST: arrives before page 1 is applied
    stale_b = _pod("b", "n0", 5, cpu="900m")  # older than what page 0 showed: a lagging watch
    gone = _pod("a2", "n0", 130)
    api.during[1] = lambda: watcher.dispatch("pods", "MODIFIED", newer_c)

    def page_two() -> None:
        watcher.dispatch("pods", "MODIFIED", stale_b)
        watcher.dispatch("pods", "DELETED", gone)

    api.during[2] = page_two
    try:
        await watcher.initial_sync()
    finally:
        await client.close()
    cache = watcher.scheduler.cache
    c, b = cache.get_pod("uid-c"), cache.get_pod("uid-b")
    assert c is not None and c.resource_version == "120"
    assert b is not None and b.resource_version == "40"
    assert cache.get_pod("uid-a2") is None
    assert cache.get_pod("uid-a") is not None
    assert api.log.count("get /api/v1/namespaces/ns/pods/b") == 1  # only the rolled-back object is read again


async def test_an_expired_continue_token_starts_the_list_over() -> None:
    nodes = [make_node("n0").capacity(cpu="4", memory="8Gi", pods="110").obj()]
    pages = [[_pod("a", "n0", 10)], [_pod("b", "n0", 11)]]
    api = ScriptedApi(nodes, pages)
    api.expire_once_at = 1
    watcher, client = await _watcher(api)
    try:
        await watcher.initial_sync()
    finally:
        await client.close()
    assert api.log.count("request 0") == 2
    assert watcher.stats.initial_pods == 2
    assert watcher.scheduler.cache.get_pod("uid-b") is not None
