"""Run a scenario on a real API server under kube-scheduler and pyscheduler and report every difference.

Both schedulers run side by side against the same kube-apiserver, kube-scheduler with `--v=2
--vmodule=schedule_one=10` and pyscheduler with `-v 10`, so both log `"Plugin scored node for pod"` per plugin
and node (weighted, after normalization: what upstream's prioritizeNodes logs) and `"Successfully bound pod to
node"` with the evaluated/feasible node counts.

One scenario:

1. create its nodes (one at a time, status included, so both informers see them in the same order: upstream's
   image sizes depend on it), its bound pods (then their resize/terminal status through `pods/status`) and its
   other objects;
2. sync: per scheduler, a probe pod that fits nowhere; its message `0/N nodes are available` proves the
   scheduler sees all N nodes, and, coming later in the same pod watch, every bound pod;
3. each pending pod in turn, once per scheduler (kube-scheduler first): create it under that scheduler's
   name, wait until it is bound or has `PodScheduled=False` (a preemptor, nominated, until it is bound on its
   next attempt), read what the scheduler logged about it, delete it, and put back the bound pods a
   preemption deleted (`_restore`). The cluster is the same for every attempt, so the outcomes must be the
   same;
4. delete everything the scenario created and wait until it is gone.

Compared per pending pod: bound vs pending; the whole pending message (the ` preemption: ...` part included:
both run DefaultPreemption) and the condition reason; for bound pods the messages of the attempts before the
binding (a preemptor's nominating one), the scored plugins, the scored (= feasible) nodes, every plugin's score
per node, every node's total, the evaluated/feasible counts, and that each scheduler picked one of its
top-scoring nodes (not which one: ties are broken at random).

A difference that a deliberate divergence accounts for (KNOWN_DIFFERENCES, recognized from the scenario) is
kept but marked `explained`; everything else is a bug to fix.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import ssl
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from scheduler.framework.types import HostPort, conflicts, parse_pod
from scheduler.plugins.registry import REGISTRY
from tests.diff.dra import claim_request, sync_objects
from tests.diff.klog import LogIndex, PodLog
from tests.diff.scenario import OWNER_ANNOTATION, RUN_LABEL, ExistingPod, Scenario

JSON = dict[str, Any]
SYNC_LABEL = "difffuzz.pyscheduler.io/sync"
RESOURCE_API = "/apis/resource.k8s.io/v1"
PAUSE = "registry.k8s.io/pause:3.10"
SYNC_ROUNDS = 30
REQUEST_TIMEOUT = 30.0
OUTCOME_TIMEOUT = 60.0
NOMINATED_WAIT = 10.0  # how long a nominated preemptor may take to be bound once its victims are gone
POLL = 0.02


class ApiError(RuntimeError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class Api:
    """Raw JSON requests to the API server with a bearer token; every request has a timeout."""

    def __init__(self, server: str, token: str) -> None:
        self.server = server
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=ctx, limit=32),
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT),
        )

    async def close(self) -> None:
        await self.session.close()

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> JSON:
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(6):
            async with self.session.request(
                method, self.server + path, data=data, params=params, headers={"Content-Type": content_type}
            ) as resp:
                raw = await resp.read()
                if resp.status < 300:
                    return json.loads(raw) if raw else {}
                if resp.status in (429, 500, 503, 504) and attempt < 5:
                    await asyncio.sleep(0.1 * 2**attempt)
                    continue
                raise ApiError(resp.status, f"{method} {path}: {raw[:400].decode(errors='replace')}")
        raise AssertionError("unreachable")

    async def get_or_none(self, path: str) -> JSON | None:
        try:
            return await self.call("GET", path)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    async def delete(self, path: str) -> None:
        with contextlib.suppress(ApiError):
            await self.call("DELETE", path, params={"gracePeriodSeconds": "0"})


@dataclass
class SchedulerUnderTest:
    """One scheduler of the comparison: its tag in pod names, the schedulerName it serves, its log."""

    tag: str  # "up" or "py"
    scheduler_name: str
    log: LogIndex


@dataclass
class Outcome:
    """What one scheduler did with one pending pod."""

    node: str | None = None
    message: str | None = None
    reason: str | None = None
    log: PodLog | None = None
    allocations: dict[str, Any] | None = None  # a bound pod's claims: entry -> status.allocation's results

    def summary(self) -> str:
        if self.node is not None:
            return f"bound to {self.node}"
        return f"pending ({self.reason}): {self.message}"

    def failures(self) -> list[str]:
        """The messages of the unschedulable attempts the scheduler logged (a preemptor's nominating one)."""
        return list(self.log.failures) if self.log is not None else []


@dataclass
class Difference:
    seed: int
    pod: str
    # feasibility, message, reason, earlier-attempts, plugins, feasible-nodes, score, total, counts, pick, timeout
    kind: str
    detail: str
    explained: str = ""  # why this difference is known and kept (see KNOWN_DIFFERENCES), empty when it is not

    def __str__(self) -> str:
        note = f" [explained: {self.explained}]" if self.explained else ""
        return f"seed {self.seed} pod {self.pod}: {self.kind}: {self.detail}{note}"


# Differences pyscheduler keeps on purpose, each recognized from the scenario so that only these are excused.
SHARED_PORT_FREED = (
    "a host port declared by two bound pods on one node, one of which ended (Succeeded/Failed): upstream's "
    "HostPortInfo is a set, so removing the ended pod frees the port although the other pod still declares "
    "it; pyscheduler counts holders and keeps it taken (deliberate, tests/plugins/test_host_port_info.py)"
)
FILTER_ERROR_NODE = (
    "an allocation error on some nodes (a selector failing at run time on a device, an All request whose "
    "devices break a constraint) makes the attempt an Error at the first node whose Filter reports it: upstream "
    "filters nodes on 16 goroutines and keeps the first error any of them sends, so which node's device its "
    "message names is a race; pyscheduler names the first in its node order. The messages are the same but for "
    "that device"
)
KNOWN_DIFFERENCES = (SHARED_PORT_FREED, FILTER_ERROR_NODE)
DRA_FILTER_ERROR = 'running "DynamicResources" filter plugin: '
# A device as the allocator's errors name it: "... on device <driver>/<pool>/<device>: ...", "add device ... because"
_ERROR_DEVICE = re.compile(r"\bdevice [^ :/]+/[^ :/]+/[^ :/]+")


def same_filter_error_but_the_device(up: str | None, py: str | None) -> bool:
    """Both messages are one DynamicResources Filter error naming different devices."""
    if up is None or py is None or up == py or not up.startswith(DRA_FILTER_ERROR) or not _ERROR_DEVICE.search(up):
        return False
    return _ERROR_DEVICE.sub("device *", up) == _ERROR_DEVICE.sub("device *", py)


def shared_ports_freed_upstream(scenario: Scenario) -> list[HostPort]:
    """Host ports upstream wrongly frees: declared by 2+ bound pods of one node, at least one of them ended."""
    by_node: dict[str, dict[HostPort, list[bool]]] = {}
    for bound in scenario.existing:
        info = parse_pod(bound.manifest)
        ended = (bound.status or {}).get("phase") in ("Succeeded", "Failed")
        ports = by_node.setdefault(info.node_name, {})
        for hp in set(info.host_ports):
            ports.setdefault(hp, []).append(ended)
    return [hp for ports in by_node.values() for hp, ended in ports.items() if len(ended) >= 2 and any(ended)]


def explain(
    scenario: Scenario,
    manifest: JSON,
    differences: list[Difference],
    up: Outcome | None = None,
    py: Outcome | None = None,
) -> None:
    """Mark the differences a known divergence accounts for (KNOWN_DIFFERENCES)."""
    if up is not None and py is not None and same_filter_error_but_the_device(up.message, py.message):
        for d in differences:
            if d.kind == "message":
                d.explained = FILTER_ERROR_NODE
    freed = shared_ports_freed_upstream(scenario)
    if not freed:
        return
    wanted = parse_pod(manifest).host_ports
    if any(conflicts(w, f) for w in wanted for f in freed):
        for d in differences:
            d.explained = SHARED_PORT_FREED


@dataclass
class ScenarioResult:
    scenario: Scenario
    outcomes: dict[str, dict[str, Outcome]] = field(default_factory=dict)  # pod -> tag -> outcome
    differences: list[Difference] = field(default_factory=list)
    seconds: float = 0.0
    sync_rounds: int = 0  # probe rounds until every scheduler saw every node (1 unless a watch lagged)
    restored: int = 0  # bound pods put back after a preemption deleted them

    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if not d.explained]

    def count(self, predicate: str) -> int:
        """Pods whose kube-scheduler outcome is "bound", "pending" or "scored" (bound with score lines)."""

        def matches(o: Outcome) -> bool:
            if predicate == "bound":
                return o.node is not None
            if predicate == "pending":
                return o.node is None
            return o.log is not None and bool(o.log.scores)

        return sum(1 for by_tag in self.outcomes.values() if matches(next(iter(by_tag.values()))))


def implemented_plugins() -> frozenset[str]:
    """The plugins pyscheduler has (its registry): only their scores can be compared with upstream's."""
    return frozenset(REGISTRY)


def compare(
    seed: int, pod: str, up: Outcome, py: Outcome, implemented: frozenset[str] | None = None
) -> list[Difference]:
    """Every difference between kube-scheduler's outcome (`up`) and pyscheduler's (`py`) for one pod.

    Scores of plugins pyscheduler lacks (upstream's VolumeBinding and DynamicResources score 0 for pods
    without claims) cannot be compared; such a plugin scoring anything but 0 is reported, as it makes the
    totals differ until the plugin lands.
    """
    implemented = implemented_plugins() if implemented is None else implemented
    out: list[Difference] = []

    def diff(kind: str, detail: str) -> None:
        out.append(Difference(seed, pod, kind, detail))

    if (up.node is None) != (py.node is None):
        diff("feasibility", f"kube-scheduler: {up.summary()} | pyscheduler: {py.summary()}")
        return out
    if up.node is not None and up.node == py.node and up.allocations != py.allocations:
        # On different nodes (a tie broken at random) the devices differ of course; on one node they may not.
        diff("devices", f"on {up.node}: kube-scheduler {up.allocations} | pyscheduler {py.allocations}")
    if up.node is None:
        if up.message != py.message:
            diff("message", f"kube-scheduler: {up.message!r} | pyscheduler: {py.message!r}")
        if up.reason != py.reason:
            diff("reason", f"kube-scheduler: {up.reason} | pyscheduler: {py.reason}")
        return out
    if up.failures() != py.failures():
        # A preemptor binds on its next attempt: the nominating message must be the same as well.
        diff("earlier-attempts", f"kube-scheduler {up.failures()!r} | pyscheduler {py.failures()!r}")
    ul, pl = up.log or PodLog(), py.log or PodLog()
    if (ul.evaluated_nodes, ul.feasible_nodes) != (pl.evaluated_nodes, pl.feasible_nodes):
        diff(
            "counts",
            f"evaluated/feasible kube-scheduler {ul.evaluated_nodes}/{ul.feasible_nodes} | "
            f"pyscheduler {pl.evaluated_nodes}/{pl.feasible_nodes}",
        )
    if not ul.scores and not pl.scores:
        # One feasible node: neither scores; both must bind there.
        if up.node != py.node:
            diff("pick", f"single feasible node: kube-scheduler {up.node} | pyscheduler {py.node}")
        return out
    upstream_only = {(p, n): v for (p, n), v in ul.scores.items() if p not in implemented}
    for (plugin, node), value in sorted(upstream_only.items()):
        if value != 0:
            diff("upstream-only-score", f"{plugin} (not in pyscheduler) scored {node} {value}")
    up_plugins = ul.plugins() & implemented
    if up_plugins != pl.plugins():
        diff("plugins", f"kube-scheduler {sorted(up_plugins)} | pyscheduler {sorted(pl.plugins())}")
    if ul.scored_nodes() != pl.scored_nodes():
        diff("feasible-nodes", f"kube-scheduler {sorted(ul.scored_nodes())} | pyscheduler {sorted(pl.scored_nodes())}")
    for key in sorted(ul.scores.keys() & pl.scores.keys()):
        if ul.scores[key] != pl.scores[key]:
            diff("score", f"{key[0]} on {key[1]}: kube-scheduler {ul.scores[key]} | pyscheduler {pl.scores[key]}")
    for node in sorted(ul.totals.keys() & pl.totals.keys()):
        if ul.totals[node] != pl.totals[node]:
            diff("total", f"{node}: kube-scheduler {ul.totals[node]} | pyscheduler {pl.totals[node]}")
    for name, outcome, log in (("kube-scheduler", up, ul), ("pyscheduler", py, pl)):
        if log.totals:
            best = max(log.totals.values())
            top = sorted(n for n, t in log.totals.items() if t == best)
            if outcome.node not in top:
                diff("pick", f"{name} bound to {outcome.node}, not one of its top-scoring nodes {top}")
    return out


class DiffRunner:
    """Creates scenarios in one namespace and drives the pending pods through every scheduler in turn."""

    def __init__(
        self,
        api: Api,
        namespace: str,
        schedulers: Sequence[SchedulerUnderTest],
        *,
        run_id: str,
        extra_node_labels: Mapping[str, str] | None = None,
    ) -> None:
        if len(schedulers) != 2:
            raise ValueError("a differential run compares exactly two schedulers (kube-scheduler first)")
        self.api = api
        self.namespace = namespace
        self.schedulers = list(schedulers)
        self.run_id = run_id
        self.extra_node_labels = dict(extra_node_labels or {})
        self._probe_count = 0
        self._owners: dict[str, JSON] = {}  # object name -> ownerReference, for the scenario's objects

    @property
    def pods_path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"

    @property
    def claims_path(self) -> str:
        return f"{RESOURCE_API}/namespaces/{self.namespace}/resourceclaims"

    # ------------------------------------------------------------------ one scenario

    async def run(self, scenario: Scenario) -> ScenarioResult:
        start = time.monotonic()
        result = ScenarioResult(scenario)
        try:
            await self._create(scenario)
            result.sync_rounds = await self._sync(scenario)
            for manifest in scenario.pending:
                base = f"s{scenario.seed}-{manifest['metadata']['name']}"
                by_tag: dict[str, Outcome] = {}
                claims = scenario.dra.claims.get(manifest["metadata"]["name"], []) if scenario.dra else []
                for sched in self.schedulers:
                    by_tag[sched.tag] = await self._attempt(sched, manifest, f"{base}-{sched.tag}", claims)
                    result.restored += await self._restore(scenario)
                result.outcomes[base] = by_tag
                up, py = (by_tag[s.tag] for s in self.schedulers)
                found = compare(scenario.seed, base, up, py)
                explain(scenario, manifest, found, up, py)
                result.differences.extend(found)
        finally:
            await self._cleanup(scenario)
            result.seconds = time.monotonic() - start
        return result

    async def _create(self, scenario: Scenario) -> None:
        api = self.api
        for obj in scenario.cluster_objects:
            await api.call("POST", _cluster_path(obj), obj)
        if scenario.dra is not None:
            for obj in [*scenario.dra.classes, *scenario.dra.slices]:
                await api.call("POST", _cluster_path(obj), obj)
            for claim, allocation in scenario.dra.allocated:  # as another scheduler left them, unreserved
                created = await api.call("POST", self.claims_path, claim)
                created["status"] = {"allocation": allocation}
                await api.call("PUT", f"{self.claims_path}/{claim['metadata']['name']}/status", created)
        self._owners = {}
        for obj in scenario.objects:
            created = await api.call("POST", _namespaced_path(obj, self.namespace), obj)
            meta = created["metadata"]
            self._owners[meta["name"]] = {
                "apiVersion": obj["apiVersion"],
                "kind": obj["kind"],
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
            }
        for node in scenario.nodes:  # one at a time: both watches must see the same order
            labelled = json.loads(json.dumps(node))
            labelled["metadata"]["labels"].update({RUN_LABEL: self.run_id, SYNC_LABEL: "0", **self.extra_node_labels})
            await api.call("POST", "/api/v1/nodes", labelled)

        await self._create_bound(scenario.existing)

    async def _create_bound(self, pods: Sequence[ExistingPod]) -> None:
        """Bound pods one at a time, then their statuses, always in the same order: the order events reach the
        caches can matter (a pod that ends frees its host ports in upstream's set, see SHARED_PORT_FREED)."""
        for pod in pods:
            await self.api.call("POST", self.pods_path, self._owned(pod.manifest))
        for pod in pods:
            if pod.status is not None:
                name = pod.manifest["metadata"]["name"]
                patch = {"status": pod.status}
                await self.api.call(
                    "PATCH", f"{self.pods_path}/{name}/status", patch, content_type="application/merge-patch+json"
                )

    async def _restore(self, scenario: Scenario) -> int:
        """Put back the bound pods a preemption deleted, so the next attempt sees the scenario's cluster.

        Every bound pod of a node that lost one is deleted and all are recreated in the scenario's order: the
        order of a node's pods is the order victims of equal priority and start time are ranked in, and
        removals reorder them (upstream's NodeInfo swaps the last pod into the removed one's place). The next
        attempt's pod is created afterwards, so each scheduler's pod watch delivers the restored pods first.
        Returns how many pods were missing.
        """
        listed = await self.api.call("GET", self.pods_path)
        present = {
            str(p["metadata"]["name"]) for p in listed.get("items") or [] if not p["metadata"].get("deletionTimestamp")
        }
        missing = [p for p in scenario.existing if p.manifest["metadata"]["name"] not in present]
        if not missing:
            return 0
        disturbed = {p.manifest["spec"]["nodeName"] for p in missing}
        again = [p for p in scenario.existing if p.manifest["spec"]["nodeName"] in disturbed]
        names = [str(p.manifest["metadata"]["name"]) for p in again]
        await asyncio.gather(*(self.api.delete(f"{self.pods_path}/{n}") for n in names if n in present))
        deadline = time.monotonic() + OUTCOME_TIMEOUT
        for n in names:
            while await self.api.get_or_none(f"{self.pods_path}/{n}") is not None:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"pod {self.namespace}/{n} still there after {OUTCOME_TIMEOUT:.0f} s")
                await asyncio.sleep(POLL)
        await self._create_bound(again)
        return len(missing)

    def _owned(self, manifest: JSON) -> JSON:
        """A copy of the pod manifest with the ownerReference its OWNER_ANNOTATION names (generator hook)."""
        pod: JSON = json.loads(json.dumps(manifest))
        owner = (pod["metadata"].get("annotations") or {}).get(OWNER_ANNOTATION)
        if owner is not None:
            pod["metadata"]["ownerReferences"] = [self._owners[owner]]
        return pod

    async def _sync(self, scenario: Scenario) -> int:
        """Make sure every scheduler sees every node of the scenario, with fresh snapshot clones.

        A probe pod per scheduler tolerates every taint, selects nodes by the sync label and asks for more cpu
        than any node has, so its message reads `0/N nodes are available: N Insufficient cpu.` exactly when the
        scheduler sees all N nodes with the current label (and, later in its pod watch, every bound pod). A
        probe scheduled before a node event arrived has cloned some nodes into the scheduler's snapshot with
        image counts of the moment (upstream keeps those until the node changes, and so does pyscheduler): so
        when any probe comes too early, every node is relabelled and all probes run again, until one round
        finds all schedulers synced.
        """
        names = scenario.node_names()
        for round_ in range(SYNC_ROUNDS):  # nodes carry SYNC_LABEL=<round> during the round
            synced = True
            for sched in self.schedulers:
                if not await self._probe(sched, scenario.seed, len(names), str(round_)):
                    synced = False
                    break
            if synced:
                if scenario.dra is not None:
                    await self._sync_dra(scenario)
                return round_ + 1
            patch = {"metadata": {"labels": {SYNC_LABEL: str(round_ + 1)}}}
            await asyncio.gather(
                *(
                    self.api.call("PATCH", f"/api/v1/nodes/{n}", patch, content_type="application/merge-patch+json")
                    for n in names
                )
            )
            await asyncio.sleep(0.05 * (round_ + 1))  # give the watches a moment before the next round
        raise TimeoutError(f"the schedulers did not all see the {len(names)} nodes in {SYNC_ROUNDS} rounds")

    async def _sync_dra(self, scenario: Scenario) -> None:
        """Make sure every scheduler sees every DeviceClass and ResourceSlice of the scenario (after the nodes'
        sync): a sentinel class and slice created after them, and per scheduler a probe pod whose claim only the
        sentinel satisfies; once it is bound, that scheduler has seen the sentinel, so (same watches, in order)
        everything before. The probes and their claims are deleted before any pending pod (same pod and claim
        watches, in order)."""
        device_class, resource_slice = sync_objects(f"s{scenario.seed}")
        for obj in (device_class, resource_slice):
            await self.api.call("POST", _cluster_path(obj), obj)
        for sched in self.schedulers:
            self._probe_count += 1
            name = f"s{scenario.seed}-draprobe{self._probe_count}-{sched.tag}"
            claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name}}
            claim["spec"] = claim_request(device_class["metadata"]["name"])
            await self.api.call("POST", self.claims_path, claim)
            probe = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name},
                "spec": {
                    "schedulerName": sched.scheduler_name,
                    "tolerations": [{"operator": "Exists"}],
                    "resourceClaims": [{"name": "sync", "resourceClaimName": name}],
                    "containers": [{"name": "c", "image": PAUSE, "resources": {"claims": [{"name": "sync"}]}}],
                    "terminationGracePeriodSeconds": 0,
                },
            }
            await self.api.call("POST", self.pods_path, probe)
            try:
                # Until bound: before the sentinel reaches the scheduler the probe is rejected and retried.
                deadline = time.monotonic() + OUTCOME_TIMEOUT
                while not ((await self.api.get_or_none(f"{self.pods_path}/{name}")) or {}).get("spec", {}).get(
                    "nodeName"
                ):
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{sched.scheduler_name} did not bind the DRA sync probe {name}")
                    await asyncio.sleep(POLL)
            finally:
                await self.api.delete(f"{self.pods_path}/{name}")
                await self._delete_claims([name])

    async def _delete_claims(self, names: Iterable[str]) -> None:
        """Delete claims, their finalizers dropped first (no driver or controller releases them here)."""
        for name in names:
            path = f"{self.claims_path}/{name}"
            with contextlib.suppress(ApiError):
                await self.api.call(
                    "PATCH", path, {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json"
                )
            await self.api.delete(path)

    async def _probe(self, sched: SchedulerUnderTest, seed: int, nodes: int, value: str) -> bool:
        self._probe_count += 1
        name = f"s{seed}-probe{self._probe_count}-{sched.tag}"
        probe = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "schedulerName": sched.scheduler_name,
                "nodeSelector": {SYNC_LABEL: value},
                "tolerations": [{"operator": "Exists"}],
                "containers": [
                    {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": "100000"}}}
                ],
                "terminationGracePeriodSeconds": 0,
            },
        }
        await self.api.call("POST", self.pods_path, probe)
        try:
            outcome = await self._outcome(sched, name, want_log=False)
        finally:
            await self.api.delete(f"{self.pods_path}/{name}")
        message = outcome.message or ""
        return message.startswith(f"0/{nodes} nodes are available:") and "node affinity/selector" not in message

    async def _attempt(
        self, sched: SchedulerUnderTest, manifest: JSON, name: str, claims: Sequence[tuple[str, JSON]] = ()
    ) -> Outcome:
        """One scheduler's attempt at a pending pod, with claims of its own (`<pod>-<entry>`: the other
        scheduler's attempt must find the same devices free); names in messages read as the base pod's."""
        pod = self._owned(manifest)
        pod["metadata"]["name"] = name
        pod["spec"]["schedulerName"] = sched.scheduler_name
        claim_names = {entry: f"{name}-{entry}" for entry, _ in claims}
        for ref in pod["spec"].get("resourceClaims") or []:
            ref["resourceClaimName"] = claim_names[ref["name"]]
        for entry, spec in claims:
            body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "spec": spec}
            await self.api.call("POST", self.claims_path, {**body, "metadata": {"name": claim_names[entry]}})
        await self.api.call("POST", self.pods_path, pod)
        try:
            outcome = await self._outcome(sched, name, want_log=True)
            if claims and outcome.node is not None:
                outcome.allocations = {e: await self._allocation(c) for e, c in claim_names.items()}
            if outcome.message is not None:
                outcome.message = outcome.message.replace(name, manifest["metadata"]["name"])
            return outcome
        except TimeoutError as exc:
            return Outcome(message=f"no outcome: {exc}", reason="Timeout")
        finally:
            await self.api.delete(f"{self.pods_path}/{name}")
            await self._delete_claims(claim_names.values())

    async def _allocation(self, claim: str) -> Any:
        """The devices of a bound pod's claim (PreBind wrote them before the binding), shareIDs as present."""
        status = (await self.api.call("GET", f"{self.claims_path}/{claim}")).get("status") or {}
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        return [{k: (bool(v) if k == "shareID" else v) for k, v in r.items()} for r in results]

    async def _outcome(self, sched: SchedulerUnderTest, name: str, *, want_log: bool) -> Outcome:
        """Poll until the pod is bound (then wait for its binding log line) or has PodScheduled=False.

        A pod nominated by its preemption (PodScheduled=False with status.nominatedNodeName) is bound on a later
        attempt, once its victims are gone; how soon the poll sees the nominating condition before the binding
        depends on timing only, so its outcome is that binding (the nominating message is in `Outcome.log`'s
        failures), or its condition after NOMINATED_WAIT when it stays pending.
        """
        key = f"{self.namespace}/{name}"
        deadline = time.monotonic() + OUTCOME_TIMEOUT
        nominated_until = time.monotonic() + NOMINATED_WAIT
        while time.monotonic() < deadline:
            pod = await self.api.get_or_none(f"{self.pods_path}/{name}")
            if pod is None:
                raise TimeoutError(f"pod {key} disappeared")
            node = pod["spec"].get("nodeName")
            if node:
                if not want_log:
                    return Outcome(node=node)
                while time.monotonic() < deadline:
                    log = sched.log.get(key)
                    if log is not None and log.bound_to is not None:
                        return Outcome(node=node, log=log)
                    await asyncio.sleep(POLL)
                raise TimeoutError(f"{sched.scheduler_name} bound {key} but logged no binding line")
            nominated = str((pod.get("status") or {}).get("nominatedNodeName") or "")
            for cond in (pod.get("status") or {}).get("conditions") or []:
                if cond.get("type") == "PodScheduled" and cond.get("status") == "False" and cond.get("message"):
                    if nominated and want_log and time.monotonic() < nominated_until:
                        break  # a preemptor: its outcome is the attempt after its victims are gone
                    return Outcome(message=str(cond["message"]), reason=str(cond.get("reason")), log=sched.log.get(key))
            await asyncio.sleep(POLL)
        raise TimeoutError(f"{sched.scheduler_name} left {key} without an outcome for {OUTCOME_TIMEOUT:.0f} s")

    async def _cleanup(self, scenario: Scenario) -> None:
        """Delete the scenario's pods, nodes and objects, and wait until the pods and nodes are gone."""
        api = self.api
        await api.delete(self.pods_path)  # the whole collection, grace period 0
        deadline = time.monotonic() + OUTCOME_TIMEOUT
        while (await api.call("GET", self.pods_path, params={"limit": "1"}))["items"]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"pods of {self.namespace} still there after {OUTCOME_TIMEOUT:.0f} s")
            await api.delete(self.pods_path)
            await asyncio.sleep(0.05)
        await asyncio.gather(*(api.delete(f"/api/v1/nodes/{n}") for n in scenario.node_names()))
        selector = {"labelSelector": f"{RUN_LABEL}={self.run_id}", "limit": "1"}
        while (await api.call("GET", "/api/v1/nodes", params=selector))["items"]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nodes of run {self.run_id} still there after {OUTCOME_TIMEOUT:.0f} s")
            await asyncio.sleep(0.05)
        for obj in scenario.objects:
            await api.delete(f"{_namespaced_path(obj, self.namespace)}/{obj['metadata']['name']}")
        for obj in scenario.cluster_objects:
            await api.delete(f"{_cluster_path(obj)}/{obj['metadata']['name']}")
        if scenario.dra is not None:
            left = (await api.call("GET", self.claims_path))["items"]
            await self._delete_claims(c["metadata"]["name"] for c in left)
            sentinels = sync_objects(f"s{scenario.seed}")
            for obj in [*scenario.dra.slices, *scenario.dra.classes, *reversed(sentinels)]:
                await api.delete(f"{_cluster_path(obj)}/{obj['metadata']['name']}")


_RESOURCES = {
    "Service": "/api/v1/namespaces/{ns}/services",
    "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "ReplicationController": "/api/v1/namespaces/{ns}/replicationcontrollers",
    "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "RuntimeClass": "/apis/node.k8s.io/v1/runtimeclasses",
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
}


def _namespaced_path(obj: JSON, namespace: str) -> str:
    return _RESOURCES[str(obj["kind"])].format(ns=namespace)


def _cluster_path(obj: JSON) -> str:
    return _RESOURCES[str(obj["kind"])]


def summarize(results: Iterable[ScenarioResult]) -> JSON:
    """Totals over scenarios: counts of nodes, pods, outcomes and differences by kind."""
    results = list(results)
    kinds: dict[str, int] = {}
    for r in results:
        for d in r.unexplained():
            kinds[d.kind] = kinds.get(d.kind, 0) + 1
    return {
        "scenarios": len(results),
        "nodes": sum(len(r.scenario.nodes) for r in results),
        "bound_pods": sum(len(r.scenario.existing) for r in results),
        "pending_pods": sum(len(r.scenario.pending) for r in results),
        "outcomes_bound": sum(r.count("bound") for r in results),
        "outcomes_pending": sum(r.count("pending") for r in results),
        "outcomes_scored": sum(r.count("scored") for r in results),
        "resynced_scenarios": sum(1 for r in results if r.sync_rounds > 1),
        "restored_victims": sum(r.restored for r in results),
        "differences": sum(len(r.unexplained()) for r in results),
        "explained_differences": sum(len(r.differences) - len(r.unexplained()) for r in results),
        "differences_by_kind": kinds,
        "seconds": round(sum(r.seconds for r in results), 1),
    }


def log_index(path: Path) -> LogIndex:
    """A LogIndex that starts at the end of the file as it is now (older lines belong to earlier runs)."""
    index = LogIndex(path)
    index.refresh()
    index.pods.clear()
    return index
