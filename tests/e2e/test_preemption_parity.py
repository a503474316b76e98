"""Preemption parity: pyscheduler preempts exactly like the upstream kube-scheduler binary of the same release.

Both schedulers run on the same API server. Each shape is played twice on identically named nodes and pods,
once with upstream's preemptors (`schedulerName: default-scheduler`) in one namespace and once with
pyscheduler's in another; victims are bound directly (`nodeName`, scheduler "nobody") with PriorityClasses and
distinct `status.startTime`s, as a kubelet would report them. A stand-in kubelet records every pod that starts
terminating (with its DisruptionTarget condition) and then finishes its deletion.

For every shape both runs must show the same: pods deleted (no more, no fewer), preemptors' nodes, their first
FailedScheduling note (which ends with the preemption decision: the node and how many victims, or why preemption
cannot help), the final PodScheduled message of preemptors left pending, the victims' `Preempted` events (note,
action, related pod) and their DisruptionTarget conditions; scheduler names and the preemptor's uid are the only
words normalised. Each shape also states what upstream is expected to do, so a run where both do nothing fails.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.cluster.harness import ManagedProcess
from tests.e2e.conftest import NamespaceFactory, PriorityClassFactory, PySchedulerProcess
from tests.e2e.kube import (
    JSON,
    OWNER_LABEL,
    get_pod,
    list_pods,
    node_manifest,
    node_status,
    pod_manifest,
    request_json,
    status_condition,
    wait_for,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

UPSTREAM = "default-scheduler"
OURS = "pyscheduler"
VICTIM_SCHEDULER = "nobody"
PRIORITIES = {"p50": 50, "p100": 100, "p200": 200, "p500": 500, "p1000": 1000, "p2000": 2000}
NEVER = "never1000"  # value 1000, preemptionPolicy Never
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
PORTS = "node(s) didn't have free ports for the requested pod ports"
WITHIN = 60.0


# --------------------------------------------------------------------------------------------- shapes


@dataclass(frozen=True)
class Victim:
    name: str
    node: str
    priority: str
    cpu: str = "1"
    started: int = 0  # seconds after 2026-01-01T00:00:00Z: smaller is older, i.e. more important
    labels: Mapping[str, str] = field(default_factory=dict)
    host_port: int = 0


@dataclass(frozen=True)
class Preemptor:
    name: str
    priority: str
    cpu: str = "1"
    host_port: int = 0


@dataclass(frozen=True)
class Budget:
    name: str
    labels: Mapping[str, str]
    disruptions_allowed: int


@dataclass(frozen=True)
class Shape:
    """Nodes (name -> cpu), victims, PDBs, preemptors, and what upstream is expected to do."""

    nodes: Mapping[str, str]
    victims: Sequence[Victim]
    preemptors: Sequence[Preemptor]
    deleted: frozenset[str]  # victims upstream deletes
    bound: Mapping[str, str | None]  # preemptor -> node (None: left pending)
    final: Mapping[str, str] = field(default_factory=dict)  # pending preemptor -> its final PodScheduled message
    budgets: Sequence[Budget] = ()


def _full(n: int, node: str, priority: str, cpu: str = "1", first: int = 0) -> list[Victim]:
    return [Victim(f"{node}-v{i}", node, priority, cpu, started=first + i) for i in range(n)]


def _msg(nodes: int, filters: str, preemption: str) -> str:
    return f"0/{nodes} nodes are available: {filters}. preemption: {preemption}"


SHAPES: dict[str, Shape] = {
    # Four 1-cpu victims of equal priority; the two youngest go (reprieve keeps the oldest first).
    "one-node-full": Shape(
        nodes={"pa": "4"},
        victims=_full(4, "pa", "p100"),
        preemptors=[Preemptor("big", "p1000", cpu="2")],
        deleted=frozenset({"pa-v2", "pa-v3"}),
        bound={"big": "pa"},
    ),
    # Victims spread over nodes: the node whose most important victim has the lowest priority wins.
    "spread-lowest-highest-priority": Shape(
        nodes={"pa": "2", "pb": "2", "pc": "2"},
        victims=[
            Victim("pa-v0", "pa", "p100", cpu="2"),
            Victim("pb-v0", "pb", "p200", cpu="2"),
            Victim("pc-v0", "pc", "p50", started=1),
            Victim("pc-v1", "pc", "p50", started=2),
        ],
        preemptors=[Preemptor("big", "p1000", cpu="2")],
        deleted=frozenset({"pc-v0", "pc-v1"}),
        bound={"big": "pc"},
    ),
    # Same highest victim priority on both nodes: the smaller sum of priorities wins.
    "smallest-priority-sum": Shape(
        nodes={"pa": "2", "pb": "2"},
        victims=[
            Victim("pa-v0", "pa", "p100", started=1),
            Victim("pa-v1", "pa", "p100", started=2),
            Victim("pb-v0", "pb", "p100", started=3),
            Victim("pb-v1", "pb", "p50", started=4),
        ],
        preemptors=[Preemptor("big", "p1000", cpu="2")],
        deleted=frozenset({"pb-v0", "pb-v1"}),
        bound={"big": "pb"},
    ),
    # Everything equal but the start time: the node whose victims started last is chosen.
    "latest-start-time": Shape(
        nodes={"pa": "2", "pb": "2"},
        victims=[Victim("pa-v0", "pa", "p100", cpu="2", started=5), Victim("pb-v0", "pb", "p100", cpu="2", started=9)],
        preemptors=[Preemptor("big", "p1000", cpu="2")],
        deleted=frozenset({"pb-v0"}),
        bound={"big": "pb"},
    ),
    # The cheapest node's only victim is protected by a PDB with no disruption left: the other node is used.
    "pdb-forbids-cheapest-node": Shape(
        nodes={"pa": "2", "pb": "2"},
        victims=[
            Victim("pa-db", "pa", "p50", cpu="2", labels={"app": "db"}),
            Victim("pb-web", "pb", "p100", cpu="2", labels={"app": "web"}),
        ],
        budgets=[Budget("db", {"app": "db"}, 0)],
        preemptors=[Preemptor("big", "p1000", cpu="2")],
        deleted=frozenset({"pb-web"}),
        bound={"big": "pb"},
    ),
    # A PDB-protected victim is still evicted when no other node can help (it only ranks candidates).
    "pdb-violated-when-nothing-else-helps": Shape(
        nodes={"pa": "2"},
        victims=[Victim("pa-db", "pa", "p50", cpu="2", labels={"app": "db"})],
        budgets=[Budget("db", {"app": "db"}, 0)],
        preemptors=[Preemptor("big", "p1000", cpu="2")],
        deleted=frozenset({"pa-db"}),
        bound={"big": "pa"},
    ),
    "equal-priority-no-preemption": Shape(
        nodes={"pa": "2"},
        victims=_full(2, "pa", "p1000"),
        preemptors=[Preemptor("big", "p1000", cpu="1")],
        deleted=frozenset(),
        bound={"big": None},
        final={"big": _msg(1, "1 Insufficient cpu", f"0/1 nodes are available: 1 {NO_VICTIMS}.")},
    ),
    "policy-never": Shape(
        nodes={"pa": "2"},
        victims=_full(2, "pa", "p100"),
        preemptors=[Preemptor("big", NEVER, cpu="1")],
        deleted=frozenset(),
        bound={"big": None},
        final={"big": _msg(1, "1 Insufficient cpu", "not eligible due to preemptionPolicy=Never.")},
    ),
    # Bigger than any node: Unresolvable everywhere, nothing to try.
    "too-big-not-helpful": Shape(
        nodes={"pa": "2", "pb": "2"},
        victims=[Victim("pa-v0", "pa", "p100"), Victim("pb-v0", "pb", "p100")],
        preemptors=[Preemptor("huge", "p1000", cpu="3")],
        deleted=frozenset(),
        bound={"huge": None},
        final={"huge": _msg(2, "2 Insufficient cpu", f"0/2 nodes are available: 2 {NOT_HELPFUL}.")},
    ),
    # Removing every lower-priority pod is not enough: a higher-priority pod keeps 3 of the 4 cpus.
    "lower-priority-pods-not-enough": Shape(
        nodes={"pa": "4"},
        victims=[Victim("pa-high", "pa", "p2000", cpu="3"), Victim("pa-low", "pa", "p100", cpu="1")],
        preemptors=[Preemptor("big", "p1000", cpu="2")],
        deleted=frozenset(),
        bound={"big": None},
        final={"big": _msg(1, "1 Insufficient cpu", "0/1 nodes are available: 1 Insufficient cpu.")},
    ),
    # The low-priority holder of the host port is evicted (NodePorts rejections are Unschedulable).
    "host-port-holder-evicted": Shape(
        nodes={"pa": "4", "pb": "4"},
        victims=[
            Victim("pa-port", "pa", "p100", host_port=8080, started=1),
            Victim("pb-port", "pb", "p200", host_port=8080, started=2),
        ],
        preemptors=[Preemptor("web", "p1000", host_port=8080)],
        deleted=frozenset({"pa-port"}),
        bound={"web": "pa"},
    ),
    # A higher-priority pod holds the port: evicting the low-priority pods cannot help.
    "host-port-blocks-preemption": Shape(
        nodes={"pa": "4"},
        victims=[Victim("pa-port", "pa", "p2000", host_port=8080), *_full(3, "pa", "p100", first=1)],
        preemptors=[Preemptor("web", "p1000", cpu="1", host_port=8080)],
        deleted=frozenset(),
        bound={"web": None},
        final={"web": _msg(1, f"1 {PORTS}", f"0/1 nodes are available: 1 {PORTS}.")},
    ),
}


# --------------------------------------------------------------------------------------------- the cluster


@dataclass
class Observed:
    """What one scheduler's run left behind, normalised for comparison."""

    deleted: set[str] = field(default_factory=set)
    bound: dict[str, str | None] = field(default_factory=dict)
    first_note: dict[str, str] = field(default_factory=dict)
    final: dict[str, str] = field(default_factory=dict)
    preempted_events: set[tuple[str, ...]] = field(default_factory=set)
    disruption_targets: set[tuple[str, ...]] = field(default_factory=set)

    def comparable(self) -> dict[str, Any]:
        return {
            "deleted": sorted(self.deleted),
            "bound": self.bound,
            "first_note": self.first_note,
            "final": self.final,
            "preempted_events": sorted(self.preempted_events),
            "disruption_targets": sorted(self.disruption_targets),
        }


class Kubelet:
    """Stand-in for the kubelets: records each terminating pod of a namespace, then finishes deleting it.

    `hold()` keeps terminating pods terminating (to observe what happens meanwhile); `release()` resumes.
    """

    def __init__(self, api_client: ApiClient, namespace: str) -> None:
        self.api_client = api_client
        self.namespace = namespace
        self.terminated: dict[str, JSON] = {}
        self.released = asyncio.Event()
        self.released.set()
        self._task: asyncio.Task[None] | None = None

    def hold(self) -> None:
        self.released.clear()

    def release(self) -> None:
        self.released.set()

    async def terminating(self) -> set[str]:
        pods = await list_pods(self.api_client, self.namespace)
        return {p["metadata"]["name"] for p in pods if p["metadata"].get("deletionTimestamp")} | set(self.terminated)

    async def _loop(self) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/pods"
        while True:
            for pod in await list_pods(self.api_client, self.namespace):
                name = pod["metadata"]["name"]
                if not pod["metadata"].get("deletionTimestamp"):
                    continue
                self.terminated.setdefault(name, pod)
                if self.released.is_set():
                    with contextlib.suppress(ApiException):
                        await request_json(self.api_client, "DELETE", f"{path}/{name}", query={"gracePeriodSeconds": 0})
            await asyncio.sleep(0.1)

    async def __aenter__(self) -> Kubelet:
        self._task = asyncio.get_running_loop().create_task(self._loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class Cluster:
    """Creates and removes one run's nodes, victims, budgets and preemptors."""

    def __init__(self, api_client: ApiClient, namespace: str, scheduler: str, classes: Mapping[str, str]) -> None:
        self.api = api_client
        self.namespace = namespace
        self.scheduler = scheduler
        self.classes = classes
        self.nodes: list[str] = []

    async def add_nodes(self, nodes: Mapping[str, str]) -> None:
        for name, cpu in nodes.items():
            await self._wait_node_gone(name)
            manifest = node_manifest(name, zone="z1", region="r", labels={OWNER_LABEL: self.namespace})
            node = await request_json(self.api, "POST", "/api/v1/nodes", body=manifest)
            self.nodes.append(name)
            node["status"] = node_status(cpu=cpu, memory="32Gi", pods=110)
            await request_json(self.api, "PUT", f"/api/v1/nodes/{name}/status", body=node)
        # The scheduler has every node (with its capacity) once a pod needing the last node's status binds there.
        last = list(nodes)[-1]
        probe = pod_manifest(
            f"probe-{self.scheduler}", scheduler_name=self.scheduler, node_selector={"kubernetes.io/hostname": last}
        )
        await self._post_pod(probe)
        await wait_for(lambda: self._bound(probe["metadata"]["name"]), what=f"{self.scheduler} to see the nodes")
        await self._force_delete(probe["metadata"]["name"])

    async def _wait_node_gone(self, name: str) -> None:
        async def gone() -> bool:
            try:
                await request_json(self.api, "GET", f"/api/v1/nodes/{name}")
            except ApiException as e:
                if e.status == 404:
                    return True
                raise
            return False

        await wait_for(gone, what=f"node {name} from an earlier run to be gone")

    async def add_budgets(self, budgets: Sequence[Budget]) -> None:
        base = f"/apis/policy/v1/namespaces/{self.namespace}/poddisruptionbudgets"
        for budget in budgets:
            body = {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": budget.name},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": dict(budget.labels)}},
            }
            pdb = await request_json(self.api, "POST", base, body=body)
            # What the disruption controller would compute (it does not run in the test control plane).
            pdb["status"] = {
                "observedGeneration": pdb["metadata"].get("generation", 1),
                "disruptionsAllowed": budget.disruptions_allowed,
                "currentHealthy": 1,
                "desiredHealthy": 1,
                "expectedPods": 1,
            }
            await request_json(self.api, "PUT", f"{base}/{budget.name}/status", body=pdb)

    async def add_victims(self, victims: Sequence[Victim]) -> None:
        for v in victims:
            ports = [{"containerPort": v.host_port, "hostPort": v.host_port}] if v.host_port else []
            manifest = pod_manifest(
                v.name,
                scheduler_name=VICTIM_SCHEDULER,
                node_name=v.node,
                requests={"cpu": v.cpu},
                labels=dict(v.labels),
                ports=ports,
                # A real pod's grace period: the DELETE leaves it terminating until the (stand-in) kubelet ends it.
                spec={"priorityClassName": self.classes[v.priority], "terminationGracePeriodSeconds": 30},
            )
            await self._post_pod(manifest)
            minute, second = divmod(v.started, 60)
            status = {"status": {"startTime": f"2026-01-01T00:{minute:02d}:{second:02d}Z", "phase": "Running"}}
            await request_json(
                self.api,
                "PATCH",
                f"/api/v1/namespaces/{self.namespace}/pods/{v.name}/status",
                body=status,
                content_type="application/strategic-merge-patch+json",
            )

    async def add_preemptor(self, p: Preemptor) -> None:
        ports = [{"containerPort": p.host_port, "hostPort": p.host_port}] if p.host_port else []
        manifest = pod_manifest(
            p.name,
            scheduler_name=self.scheduler,
            requests={"cpu": p.cpu},
            ports=ports,
            spec={"priorityClassName": self.classes[p.priority]},
        )
        await self._post_pod(manifest)

    async def _post_pod(self, manifest: JSON) -> None:
        await request_json(self.api, "POST", f"/api/v1/namespaces/{self.namespace}/pods", body=manifest)

    async def _bound(self, name: str) -> bool:
        return bool((await get_pod(self.api, self.namespace, name))["spec"].get("nodeName"))

    async def _force_delete(self, name: str) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/pods/{name}"
        with contextlib.suppress(ApiException):
            await request_json(self.api, "DELETE", path, query={"gracePeriodSeconds": 0})

        async def gone() -> bool:
            try:
                await get_pod(self.api, self.namespace, name)
            except ApiException as e:
                if e.status == 404:
                    return True
                raise
            return False

        await wait_for(gone, what=f"pod {name} to be deleted")

    async def pod(self, name: str) -> JSON | None:
        try:
            return await get_pod(self.api, self.namespace, name)
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    async def events(self) -> list[JSON]:
        answer = await request_json(self.api, "GET", f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events")
        items: list[JSON] = answer["items"]
        return items

    async def teardown(self) -> None:
        for pod in await list_pods(self.api, self.namespace):
            await self._force_delete(pod["metadata"]["name"])
        for name in self.nodes:
            with contextlib.suppress(ApiException):
                await request_json(self.api, "DELETE", f"/api/v1/nodes/{name}")
        for name in self.nodes:
            await self._wait_node_gone(name)


def _normalise(text: str, scheduler: str, uids: Mapping[str, str]) -> str:
    for uid, name in uids.items():
        text = text.replace(uid, f"<uid of {name}>")
    return text.replace(scheduler, "<scheduler>")


async def observe(cluster: Cluster, kubelet: Kubelet, shape: Shape, uids: Mapping[str, str]) -> Observed:
    """Everything comparable about the run, once it settled."""
    seen = Observed()
    names = {v.name for v in shape.victims}
    for name in names:
        if await cluster.pod(name) is None:
            seen.deleted.add(name)
    for p in shape.preemptors:
        pod = await cluster.pod(p.name)
        assert pod is not None, f"preemptor {p.name} disappeared"
        seen.bound[p.name] = pod["spec"].get("nodeName")
        cond = status_condition(pod, "PodScheduled")
        if not seen.bound[p.name] and cond is not None:
            seen.final[p.name] = str(cond.get("message", ""))
    events = sorted(await cluster.events(), key=lambda e: str(e.get("eventTime") or ""))
    for event in events:
        who = event["regarding"].get("name", "")
        if event.get("reason") == "FailedScheduling" and who in seen.bound and who not in seen.first_note:
            seen.first_note[who] = str(event.get("note", ""))
        if event.get("reason") == "Preempted":
            related = (event.get("related") or {}).get("name", "")
            seen.preempted_events.add(
                (
                    who,
                    str(event.get("type")),
                    str(event.get("action")),
                    _normalise(str(event.get("note", "")), cluster.scheduler, uids),
                    related,
                    _normalise(str(event.get("reportingController", "")), cluster.scheduler, uids),
                )
            )
    for name, pod in kubelet.terminated.items():
        cond = status_condition(pod, "DisruptionTarget")
        if cond is not None:
            seen.disruption_targets.add(
                (
                    name,
                    str(cond.get("status")),
                    str(cond.get("reason")),
                    _normalise(str(cond.get("message", "")), cluster.scheduler, uids),
                )
            )
    return seen


Stage = Callable[[Cluster, Kubelet], Awaitable[None]]


async def play(
    api_client: ApiClient,
    namespace: str,
    scheduler: str,
    classes: Mapping[str, str],
    shape: Shape,
    stages: Sequence[Stage] | None = None,
) -> Observed:
    """One run of a shape for one scheduler; waits until it settles as the shape expects."""
    cluster = Cluster(api_client, namespace, scheduler, classes)
    try:
        await cluster.add_budgets(shape.budgets)
        await cluster.add_nodes(shape.nodes)
        await cluster.add_victims(shape.victims)
        async with Kubelet(api_client, namespace) as kubelet:
            if stages is None:
                for p in shape.preemptors:
                    await cluster.add_preemptor(p)
            else:
                for stage in stages:
                    await stage(cluster, kubelet)

            async def settled() -> bool:
                for name, node in shape.bound.items():
                    pod = await cluster.pod(name)
                    if pod is None:
                        return False
                    if node is not None and pod["spec"].get("nodeName") != node:
                        return False
                    if node is None:
                        cond = status_condition(pod, "PodScheduled") or {}
                        if cond.get("message") != shape.final.get(name):
                            return False
                for name in shape.deleted:
                    if await cluster.pod(name) is not None:
                        return False
                return True

            try:
                await wait_for(settled, what=f"{scheduler} to settle", within=WITHIN)
            except AssertionError:
                partial = await observe(cluster, kubelet, shape, await _uids(cluster, shape))
                raise AssertionError(f"{scheduler} did not settle as expected: {partial.comparable()}") from None
            return await observe(cluster, kubelet, shape, await _uids(cluster, shape))
    finally:
        await cluster.teardown()


async def _uids(cluster: Cluster, shape: Shape) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in shape.preemptors:
        pod = await cluster.pod(p.name)
        if pod is not None:
            out[pod["metadata"]["uid"]] = p.name
    return out


@pytest.fixture
async def classes(create_priority_class: PriorityClassFactory) -> AsyncIterator[dict[str, str]]:
    """The PriorityClasses the shapes use, by short name."""
    out = {key: await create_priority_class(key, value) for key, value in PRIORITIES.items()}
    out[NEVER] = await create_priority_class(NEVER, 1000, preemption_policy="Never")
    yield out


def _assert_same(shape_name: str, upstream: Observed, ours: Observed) -> None:
    up, py = upstream.comparable(), ours.comparable()
    diffs = [f"  {k}:\n    upstream:    {up[k]}\n    pyscheduler: {py[k]}" for k in up if up[k] != py[k]]
    assert not diffs, f"{shape_name}: pyscheduler differs from upstream kube-scheduler:\n" + "\n".join(diffs)


# --------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("shape_name", list(SHAPES))
async def test_preemption_equals_upstream_kube_scheduler(
    shape_name: str,
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_namespace: NamespaceFactory,
    classes: dict[str, str],
) -> None:
    """Same victims, same node, same events and messages as upstream, and what upstream is expected to do."""
    shape = SHAPES[shape_name]
    upstream = await play(api_client, namespace, UPSTREAM, classes, shape)
    ours = await play(api_client, await create_namespace("py"), OURS, classes, shape)
    print(f"{shape_name}: {ours.comparable()}")
    _assert_same(shape_name, upstream, ours)
    assert upstream.deleted == set(shape.deleted)
    assert upstream.bound == dict(shape.bound)
    for name, node in shape.bound.items():
        if node is not None:
            victims = sum(1 for v in shape.victims if v.name in shape.deleted and v.node == node)
            assert upstream.first_note[name].endswith(
                f" preemption: found a potential placement for pod on node {node}, preempting {victims} victims"
            ), upstream.first_note[name]


SEVERAL = Shape(
    nodes={"pa": "2", "pb": "2"},
    victims=[*_full(2, "pa", "p100", first=10), *_full(2, "pb", "p100", first=0)],
    preemptors=[Preemptor("first", "p2000", cpu="2"), Preemptor("second", "p1000", cpu="2")],
    deleted=frozenset({"pa-v0", "pa-v1", "pb-v0", "pb-v1"}),
    bound={"first": "pa", "second": "pb"},
)


async def test_several_preemptors_at_once(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_namespace: NamespaceFactory,
    classes: dict[str, str],
) -> None:
    """Two preemptors created together: each empties one node, the higher-priority one the node with the
    youngest victims; the other yields to its nomination and takes the other node. Nothing else is deleted."""

    async def together(cluster: Cluster, kubelet: Kubelet) -> None:
        for p in SEVERAL.preemptors:  # back to back, without waiting for the first one's preemption
            await cluster.add_preemptor(p)

    upstream = await play(api_client, namespace, UPSTREAM, classes, SEVERAL, [together])
    ours = await play(api_client, await create_namespace("py"), OURS, classes, SEVERAL, [together])
    # Which preemptor ran first depends on arrival order; the end state and the events do not.
    for seen in (upstream, ours):
        seen.first_note.clear()
    print(f"several: {ours.comparable()}")
    _assert_same("several-preemptors", upstream, ours)
    assert upstream.deleted == set(SEVERAL.deleted)
    assert upstream.bound == dict(SEVERAL.bound)


# A lower-priority preemptor nominated to pa loses it to a higher-priority one that preempts more there;
# its nomination is cleared and, once the victims are gone, it is evaluated again (not stuck) and told why
# it cannot preempt the pod that took its place.
LOSES_NOMINATION = Shape(
    nodes={"pa": "4"},
    victims=_full(4, "pa", "p100"),
    preemptors=[Preemptor("low", "p500", cpu="2"), Preemptor("high", "p1000", cpu="3")],
    deleted=frozenset({"pa-v1", "pa-v2", "pa-v3"}),
    bound={"high": "pa", "low": None},
    final={"low": _msg(1, "1 Insufficient cpu", "0/1 nodes are available: 1 Insufficient cpu.")},
)


async def test_preemptor_losing_its_nominated_node_is_re_evaluated(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_namespace: NamespaceFactory,
    classes: dict[str, str],
) -> None:
    """low preempts pa-v2/pa-v3 and is nominated; while they terminate, high preempts pa-v1 too, which clears
    low's nomination; when the victims are gone high binds and low is re-evaluated: same as upstream."""
    nominated: dict[str, list[str]] = {}

    async def low_preempts(cluster: Cluster, kubelet: Kubelet) -> None:
        kubelet.hold()
        await cluster.add_preemptor(LOSES_NOMINATION.preemptors[0])

        async def nominated_to_pa() -> bool:
            pod = await cluster.pod("low") or {}
            terminating = await kubelet.terminating()
            return (pod.get("status") or {}).get("nominatedNodeName") == "pa" and {"pa-v2", "pa-v3"} <= terminating

        await wait_for(nominated_to_pa, what="low to be nominated to pa with its victims terminating")
        nominated.setdefault(cluster.scheduler, []).append("low nominated to pa")

    async def high_preempts(cluster: Cluster, kubelet: Kubelet) -> None:
        await cluster.add_preemptor(LOSES_NOMINATION.preemptors[1])

        async def low_lost_it() -> bool:
            pod = await cluster.pod("low") or {}
            terminating = await kubelet.terminating()
            return not (pod.get("status") or {}).get("nominatedNodeName") and "pa-v1" in terminating

        await wait_for(low_lost_it, what="high to preempt pa-v1 and clear low's nomination")
        nominated.setdefault(cluster.scheduler, []).append("low's nomination cleared")
        kubelet.release()

    stages: list[Stage] = [low_preempts, high_preempts]
    upstream = await play(api_client, namespace, UPSTREAM, classes, LOSES_NOMINATION, stages)
    ours = await play(api_client, await create_namespace("py"), OURS, classes, LOSES_NOMINATION, stages)
    print(f"loses-nomination: {ours.comparable()}")
    _assert_same("loses-nomination", upstream, ours)
    assert nominated[UPSTREAM] == nominated[OURS] == ["low nominated to pa", "low's nomination cleared"]
    assert upstream.deleted == set(LOSES_NOMINATION.deleted)
    assert upstream.bound == dict(LOSES_NOMINATION.bound)
