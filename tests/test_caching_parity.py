"""Decisions are unchanged by every cache and fast path (scheduler.caching): the same seeded workload is simulated
with them enabled and with them disabled, and every placement, message, nomination and preemption must agree.

The workloads come from the differential-fuzz generator (tests/diff/scenario.py) with every feature on: zones,
labels, taints, images, host ports, resources (sidecars, pod-level requests, overhead, resize status), node
affinity, pod (anti-)affinity, spread constraints, Services and ReplicaSets (default spreading), priorities
(preemption). Added to it: replicas of some pending pods (pods of one shape are what the memos and the
incremental sums serve), variants differing in one request only (what memo keys must tell apart), mirrors
with pod affinity and anti-affinity swapped (existing pods' anti-affinity against pods with terms of their
own), and nodes that join half-way (a new node order). The input goes through YAML and `load_documents` like
the CLI's (the YAML loader's scalar cache and simulate's parse memo are on that path).
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import astuple
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler import caching
from scheduler.adapters.memory import MemoryCluster
from scheduler.config.json_dump import load_json_list
from scheduler.config.load import load_config
from scheduler.config.types import SchedulerConfiguration
from scheduler.core import schedule_one
from scheduler.core.schedule_one import SchedulingAlgorithm
from scheduler.framework import labels, quantity
from scheduler.framework.fit_error import Diagnosis
from scheduler.framework.interface import CycleState
from scheduler.framework.runtime import Framework, ScoreResult
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, PodInfo, memo_lookup
from scheduler.logging_setup import V10
from scheduler.plugins.inter_pod_affinity import InterPodAffinity
from scheduler.plugins.pod_topology_spread import PodTopologySpread
from scheduler.plugins.registry import REGISTRY, implements, parse_plugin_args
from scheduler.simulate import SimulationResult, load_documents, read_cluster, simulate
from scheduler.testing import csi_node, make_node, make_pod, make_pv, make_pvc, storage_class
from tests.diff.scenario import OWNER_ANNOTATION, Features, generate

JSON = dict[str, Any]
# 20 seeds in the default run (a few seconds); PYSCHEDULER_CACHE_PARITY_SEEDS=500 for a longer search.
SEEDS = range(1, 1 + int(os.environ.get("PYSCHEDULER_CACHE_PARITY_SEEDS", "20")))
NAMESPACE = "default"
SCHEDULER_NAME = "pyscheduler"  # the default profile's


def _most_allocated() -> SchedulerConfiguration:
    """A second profile shape: Fit's MostAllocated strategy (its own inlined, memoized loop)."""
    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "pluginConfig": [
                    {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}},
                ]
            }
        ],
    }
    return load_config(raw, REGISTRY.keys(), parse_plugin_args, implements=implements)


def _weighted() -> SchedulerConfiguration:
    """Score weights other than 1 on plugins without NormalizeScore (the shape results sum them per node)."""
    weights = {"NodeResourcesFit": 3, "NodeResourcesBalancedAllocation": 2, "ImageLocality": 4}
    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"plugins": {"score": {"enabled": [{"name": n, "weight": w} for n, w in weights.items()]}}},
        ],
    }
    return load_config(raw, REGISTRY.keys(), parse_plugin_args, implements=implements)


# ---------------------------------------------------------------------------------------------------------
# The workload: a generated scenario as the API server would hold it, in a fixed order


def _admitted(manifest: JSON, overhead: JSON, status: JSON | None = None) -> JSON:
    """What the API server stores: a namespace, the RuntimeClass's overhead copied in (RuntimeClass admission),
    the owner annotation turned into an ownerReference (as the diff runner does), and the written status."""
    pod = copy.deepcopy(manifest)
    meta = pod["metadata"]
    meta["namespace"] = NAMESPACE
    owner = (meta.get("annotations") or {}).pop(OWNER_ANNOTATION, None)
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": f"uid-{owner}", "controller": True}
        ]
    spec = pod["spec"]
    if spec.pop("runtimeClassName", None) is not None:
        spec["overhead"] = copy.deepcopy(overhead)
    if status is not None:
        pod["status"] = copy.deepcopy(status)
    return pod


def _variant(pod: JSON, resource: str, factor: int) -> JSON | None:
    """The pod with one container's request for resource multiplied: a pod that differs from another in one
    amount only, which every memo key must tell apart. None when the pod has no such request (or sets
    pod-level requests, which would have to grow too)."""
    if (pod["spec"].get("resources") or {}).get("requests"):
        return None
    variant = copy.deepcopy(pod)
    for container in variant["spec"]["containers"]:
        resources = container.get("resources") or {}
        amount = (resources.get("requests") or {}).get(resource)
        if amount is None:
            continue
        scaled = quantity.parse_quantity(amount) * factor
        text = f"{math.ceil(scaled * 1000)}m" if resource == "cpu" else str(math.ceil(scaled))
        resources["requests"][resource] = text
        limit = (resources.get("limits") or {}).get(resource)
        if limit is not None and quantity.parse_quantity(limit) < scaled:
            resources["limits"][resource] = text  # a request may not exceed its limit
        return variant
    return None


def _mirror(pod: JSON) -> JSON | None:
    """The pod with podAffinity and podAntiAffinity swapped and labelled with the app its terms select (None
    without pod affinity): the generator gives a pod one kind only and a random label, so pods with affinity
    terms rarely meet existing pods whose anti-affinity matches them."""
    affinity = pod["spec"].get("affinity") or {}
    if "podAffinity" not in affinity and "podAntiAffinity" not in affinity:
        return None
    mirror = copy.deepcopy(pod)
    swapped = mirror["spec"]["affinity"]
    swapped["podAffinity"], swapped["podAntiAffinity"] = affinity.get("podAntiAffinity"), affinity.get("podAffinity")
    for kind in ("podAffinity", "podAntiAffinity"):
        block = swapped.pop(kind)
        if block is None:
            continue
        swapped[kind] = block
        terms = block.get("requiredDuringSchedulingIgnoredDuringExecution") or [
            w["podAffinityTerm"] for w in block.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        ]
        mirror["metadata"]["labels"] = dict(terms[0]["labelSelector"]["matchLabels"])
    return mirror


def workload(seed: int) -> list[JSON]:
    """The objects of seed's scenario, plus replicas of some pending pods and nodes that join half-way."""
    sc = generate(seed, Features.parse("all"), max_nodes=16, max_pending=14)
    rng = random.Random(seed)
    overhead: JSON = {}
    objects: list[JSON] = []
    for obj in sc.cluster_objects:
        if obj["kind"] == "RuntimeClass":  # simulate has no RuntimeClass admission: _admitted applies it
            overhead = obj["overhead"]["podFixed"]
        else:
            objects.append(copy.deepcopy(obj))
    for obj in sc.objects:
        obj = copy.deepcopy(obj)
        obj["metadata"].update(namespace=NAMESPACE, uid=f"uid-{obj['metadata']['name']}")
        objects.append(obj)
    if sc.dra is not None:  # DRA: classes, slices, claims allocated beforehand (unreserved), then pods' claims
        objects += copy.deepcopy([*sc.dra.classes, *sc.dra.slices])
        for claim, allocation in sc.dra.allocated:
            held = copy.deepcopy(claim)
            held["metadata"]["namespace"] = NAMESPACE
            held["status"] = {"allocation": copy.deepcopy(allocation)}
            objects.append(held)

    def nodes_and_their_pods(nodes: list[JSON]) -> list[JSON]:
        names = {n["metadata"]["name"] for n in nodes}
        bound = [p for p in sc.existing if p.manifest["spec"]["nodeName"] in names]
        return [copy.deepcopy(n) for n in nodes] + [_admitted(p.manifest, overhead, p.status) for p in bound]

    late = max(1, len(sc.nodes) // 4)
    objects += nodes_and_their_pods(sc.nodes[:-late])
    pending: list[JSON] = []
    claim_specs = sc.dra.claims if sc.dra is not None else {}
    claimed: dict[str, list[tuple[str, JSON]]] = {}  # pending pod -> its claims' (entry, spec)
    for i, manifest in enumerate(sc.pending):
        pod = _admitted(manifest, overhead)
        pod["metadata"]["name"] = f"s{seed}-p{i}"
        pod["spec"]["schedulerName"] = SCHEDULER_NAME
        pending.append(pod)
        if manifest["metadata"]["name"] in claim_specs:
            claimed[pod["metadata"]["name"]] = claim_specs[manifest["metadata"]["name"]]
        for r in range(rng.choice((0, 0, 1, 3))):  # replicas: the same spec and labels, another name
            replica = copy.deepcopy(pod)
            replica["metadata"]["name"] = f"s{seed}-p{i}-r{r}"
            pending.append(replica)
        if (mirror := _mirror(pod)) is not None and rng.random() < 0.5:
            mirror["metadata"]["name"] = f"s{seed}-p{i}-mirror"
            pending.append(mirror)
        for resource in ("cpu", "memory"):
            if rng.random() < 0.3 and (variant := _variant(pod, resource, rng.choice((2, 4, 8)))) is not None:
                variant["metadata"]["name"] = f"s{seed}-p{i}-{resource}"
                pending.append(variant)
    for pod in list(pending):  # every pod (replicas and variants too) gets claims of its own: <pod>-<entry>
        base = str(pod["metadata"]["name"]).split("-")
        specs = claimed.get("-".join(base[:2]), [])
        for ref in pod["spec"].get("resourceClaims") or []:
            ref["resourceClaimName"] = f"{pod['metadata']['name']}-{ref['name']}"
        for entry, spec in specs:
            meta = {"name": f"{pod['metadata']['name']}-{entry}", "namespace": NAMESPACE}
            claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta}
            objects.append({**claim, "spec": copy.deepcopy(spec)})
    half = len(pending) // 2
    return objects + pending[:half] + nodes_and_their_pods(sc.nodes[-late:]) + pending[half:]


ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
CSI_DRIVER = "csi.example.com"


def directed_workload(seed: int) -> list[JSON]:
    """What the generator rarely or never draws, seeded: pods with required affinity of their own meeting
    existing pods whose required anti-affinity matches them (the general path of InterPodAffinity's Filter),
    and claims on local CSI volumes pinned to nodes (sizes repeat, so PVs tie), under per-node CSI volume
    limits, whose bindings update the PVs between cycles (the volume caches: PV facts and affinities, the
    candidate index, the PV-by-class index, NodeVolumeLimits' views and memo)."""
    rng = random.Random(seed)
    objects: list[JSON] = [storage_class("local")]
    nodes = [f"d{seed}-n{i}" for i in range(rng.randint(5, 9))]
    for i, name in enumerate(nodes):
        objects.append(make_node(name).zone("abc"[i % 3]).capacity(cpu="4", memory="16Gi").obj())
        objects.append(csi_node(name, {CSI_DRIVER: rng.choice((1, 2, 3))}))
        for j in range(rng.choice((0, 1, 2, 2))):
            size = rng.choice(("1Gi", "5Gi", "5Gi", "10Gi"))
            pv = make_pv(f"{name}-pv{j}").storage_class("local").on_node(name).capacity(size).csi(CSI_DRIVER)
            objects.append(pv.obj())
    for i in range(rng.randint(2, 6)):  # the group the web pods want to be near
        objects.append(make_pod(f"db{i}").labels(app="db").req(cpu="500m", memory="1Gi").node(rng.choice(nodes)).obj())
    for i in range(rng.randint(1, 4)):  # pods whose anti-affinity keeps web pods off their node or zone
        guard = make_pod(f"guard{i}").labels(app="guard").req(cpu="250m").node(rng.choice(nodes))
        objects.append(guard.pod_affinity_term("podAntiAffinity", rng.choice((HOSTNAME, ZONE)), {"app": "web"}).obj())
    claims = 0
    for i in range(rng.randint(6, 14)):
        web = make_pod(f"web{i}").labels(app="web").req(cpu=rng.choice(("250m", "500m", "1")), memory="1Gi")
        web.scheduler_name(SCHEDULER_NAME).pod_affinity_term("podAffinity", ZONE, {"app": "db"})
        if rng.random() < 0.4:
            web.pod_affinity_term("podAntiAffinity", HOSTNAME, {"app": "web"}, weight=rng.randint(1, 100))
        if rng.random() < 0.6:
            claim = f"data{claims}"
            claims += 1
            request = rng.choice(("1Gi", "2Gi", "5Gi", "8Gi"))
            objects.append(make_pvc(claim).storage_class("local").request(request).obj())
            web.pvc(claim)
        objects.append(web.obj())
    return objects


def shapes_workload(seed: int) -> list[JSON]:
    """Many pods of a few shapes, what the per-node results kept per shape serve (shape_results), with what
    must make them be recomputed in between: nodes joining (a new node order, ImageLocality's spread), pods of
    another shape landing, a ReplicaSet's pods (PodTopologySpread's default constraints score live every
    cycle), soft taints and preferred node affinity (NormalizeScore over each cycle's scored nodes), host
    ports, images, a higher-priority shape that preempts, and a pod that stays nominated to a node (which
    must then be filtered afresh). (A file cannot change a node: simulate takes each object once.)"""
    rng = random.Random(seed)
    objects: list[JSON] = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": NAMESPACE, "uid": "uid-web"},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}},
            },
        },
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "urgent"}, "value": 1000},
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "squat"},
            "value": 1000,
            "preemptionPolicy": "Never",
        },
    ]

    def node(i: int) -> JSON:
        b = make_node(f"s{seed}-n{i}").zone("abc"[i % 3]).capacity(cpu=rng.choice(("2", "4")), memory="8Gi", pods="20")
        if i % 3 == 1:
            b.label("disk", "ssd")
        if i % 4 == 2:
            b.taint("soft", "", "PreferNoSchedule")
        if i % 2 == 0:
            b.image("img-a:1", 300 * 1024 * 1024)
        if i % 5 == 0:
            b.image("img-b:1", 700 * 1024 * 1024)
        return b.obj()

    count = rng.randint(3, 5)  # full before the end: pods fail, and the urgent ones preempt
    objects += [node(i) for i in range(count)]

    def web(i: int) -> JSON:
        b = make_pod(f"web-{i}").labels(app="web").req(cpu="250m", memory="512Mi").image("img-a:1")
        b.preferred_term(50, [{"key": "disk", "operator": "In", "values": ["ssd"]}])
        return b.owner("ReplicaSet", "web", "uid-web").scheduler_name(SCHEDULER_NAME).obj()

    def port(i: int) -> JSON:
        b = make_pod(f"port-{i}").labels(app="port").req(cpu="100m").host_port(8080)
        return b.toleration("soft", effect="PreferNoSchedule").scheduler_name(SCHEDULER_NAME).obj()

    def batch(i: int) -> JSON:
        b = make_pod(f"batch-{i}").labels(app="batch").req(cpu="500m", memory="1Gi").image("img-b:1")
        return b.scheduler_name(SCHEDULER_NAME).obj()

    def urgent(i: int) -> JSON:
        pod = make_pod(f"urgent-{i}").labels(app="urgent").req(cpu="3", memory="2Gi").scheduler_name(SCHEDULER_NAME)
        obj = pod.obj()
        obj["spec"]["priorityClassName"] = "urgent"
        return obj

    def squatter(i: int) -> JSON:
        """Nominated to a node it does not fit (a dump's status.nominatedNodeName), never preempting: it stays
        nominated there, and lower-priority pods must count it on that node from then on."""
        pod = make_pod(f"squat-{i}").labels(app="squat").req(cpu="5").scheduler_name(SCHEDULER_NAME)
        obj = pod.obj()
        obj["spec"]["priorityClassName"] = "squat"
        obj["status"] = {"nominatedNodeName": f"s{seed}-n{rng.randrange(count)}"}
        return obj

    makers = [web, web, port, port, batch, batch]
    pods = [makers[rng.randrange(len(makers))](i) for i in range(rng.randint(24, 40))]
    third = len(pods) // 3
    objects += [*pods[: third // 2], squatter(0), *pods[third // 2 : third], node(count), node(count + 1)]
    objects += [*pods[third : 2 * third], node(count + 2)]
    objects += [*(urgent(i) for i in range(rng.randint(1, 3))), *pods[2 * third :]]
    return objects


# ---------------------------------------------------------------------------------------------------------
# Running it and recording everything the scheduler decided


class Recorder:
    """What the scheduler decided on the way, in order: every nominatedNodeName written or cleared, every Filter
    run's verdict per node and every Score run's per-plugin scores and totals per node."""

    def __init__(self) -> None:
        self.nominations: list[tuple[str, str]] = []
        self.filters: list[tuple[str, tuple[tuple[str, Any], ...]]] = []
        self.scores: list[tuple[str, tuple[str, ...], Any, tuple[int, ...]]] = []

    def clear(self) -> None:
        self.nominations.clear()
        self.filters.clear()
        self.scores.clear()


def _verdict(st: Status | None) -> Any:
    return None if st is None else (st.code, st.reasons, st.plugin)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    """Records at the level of what a cycle decided, which the kept per-node results of pods of one shape
    (scheduler.framework.shape_results) must not change: the walk's verdict of every node it visited, every
    scored node's per-plugin scores and totals (the V(10) score log, which both paths fill), and every Filter
    run outside the walk (nominated nodes, preemption's what-ifs)."""
    rec = Recorder()
    set_nominated, run_filters = MemoryCluster._set_nominated, Framework.run_filters
    walk = SchedulingAlgorithm.find_nodes_that_pass_filters
    walking = [0]

    def nominate(self: MemoryCluster, uid: str, node_name: str) -> None:
        rec.nominations.append((uid, node_name))
        set_nominated(self, uid, node_name)

    def filters(
        self: Framework, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[Status | None], Status | None]:
        statuses, err = run_filters(self, state, pod, nodes)
        if not walking[0]:  # inside a cycle's walk the kept verdicts decide which nodes run the plugins
            verdicts = [(n.name, _verdict(st)) for n, st in zip(nodes, statuses, strict=True)]
            rec.filters.append((pod.key, (*verdicts, ("error", err and err.message()))))
        return statuses, err

    def walked(
        self: SchedulingAlgorithm,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        diagnosis: Diagnosis,
        nodes: list[NodeInfo],
    ) -> list[NodeInfo]:
        before = set(diagnosis.node_to_status)
        walking[0] += 1
        try:
            feasible = walk(self, fwk, state, pod, diagnosis, nodes)
        finally:
            walking[0] -= 1
        rejected = tuple((n, _verdict(st)) for n, st in diagnosis.node_to_status.items() if n not in before)
        rec.filters.append((pod.key, (("feasible", tuple(n.name for n in feasible)), *rejected)))
        return feasible

    def scores(pod: PodInfo, nodes: list[NodeInfo], result: ScoreResult) -> None:
        per_plugin = tuple((name, tuple(values)) for name, values in result.per_plugin)
        rec.scores.append((pod.key, tuple(n.name for n in nodes), per_plugin, tuple(result.totals)))

    monkeypatch.setattr(MemoryCluster, "_set_nominated", nominate)
    monkeypatch.setattr(Framework, "run_filters", filters)
    monkeypatch.setattr(SchedulingAlgorithm, "find_nodes_that_pass_filters", walked)
    monkeypatch.setattr(schedule_one, "log_scores", scores)
    # The per-plugin scores are only computed for the V(10) log (whose writer is the recorder above).
    level = schedule_one.log.level
    schedule_one.log.setLevel(V10)
    try:
        yield rec
    finally:
        schedule_one.log.setLevel(level)


def run(objects: list[JSON], seed: int, config: SchedulerConfiguration | None) -> SimulationResult:
    """Through YAML and load_documents, then simulate with the parsed objects handed over, as the CLI does."""
    text = yaml.safe_dump_all(objects, sort_keys=False)
    return simulate(load_documents(text, f"seed-{seed}"), config, seed=seed, own_objects=True)


def decisions(result: SimulationResult, rec: Recorder) -> dict[str, Any]:
    """Everything observable about the run, in order: bindings, every event (scheduled, failed with its whole
    message, preempted), evictions, nominations, each Filter verdict and Score per node, the final conditions
    and each pod's outcome."""
    cluster = result.cluster
    assert cluster is not None
    return {
        "bindings": list(cluster.bindings),
        "events": [astuple(e) for e in cluster.events],
        "evictions": [astuple(e) for e in cluster.evictions],
        "nominations": list(rec.nominations),
        "filters": list(rec.filters),
        "scores": list(rec.scores),
        "conditions": {uid: astuple(c) for uid, c in sorted(cluster.conditions.items())},
        "nominated_now": {
            uid: (pod.get("status") or {}).get("nominatedNodeName") for uid, pod in sorted(cluster.pods.items())
        },
        "volumes": {
            key: (
                (obj.get("spec") or {}).get("claimRef", {}).get("name"),
                (obj.get("spec") or {}).get("volumeName"),
                ((obj.get("metadata") or {}).get("annotations") or {}).get("volume.kubernetes.io/selected-node"),
            )
            for key, obj in sorted(cluster.objects.items())
            if key[0] in ("PersistentVolume", "PersistentVolumeClaim")
        },
        "outcomes": result.to_json(),
    }


def _plugins(result: SimulationResult) -> tuple[InterPodAffinity, PodTopologySpread]:
    assert result.scheduler is not None
    (fwk,) = result.scheduler.profiles.values()
    ipa, pts = fwk.plugins["InterPodAffinity"], fwk.plugins["PodTopologySpread"]
    assert isinstance(ipa, InterPodAffinity) and isinstance(pts, PodTopologySpread)
    return ipa, pts


def _memo_entries(result: SimulationResult) -> int:
    assert result.scheduler is not None
    return sum(len(n.memo) for n in result.scheduler.snapshot.node_info_list)


def _lru_entries() -> int:
    cached = (
        quantity.parse_quantity,
        quantity.value_of,
        quantity.milli_value_of,
        labels._label_key_errors,
        labels._label_value_errors,
        labels._dns1123_subdomain_errors,
    )
    return sum(f.cache_info().currsize for f in cached)


# What each seed's run with caches exercised (filled by the parity test, or on demand by the last test).
_EXERCISED: dict[int, dict[str, int]] = {}
# Per-node results the shape workloads' runs read back and computed (filled by their parity test).
_SHAPES_EXERCISED: dict[str, int] = {}


def _exercised(result: SimulationResult, got: dict[str, Any]) -> dict[str, int]:
    ipa, pts = _plugins(result)
    assert result.scheduler is not None
    (shapes,) = result.scheduler.algorithm.shapes.values()
    return {
        "shape filter reuse": shapes.stats["filter_reused"],
        "shape score reuse": shapes.stats["score_reused"],
        "bindings": len(got["bindings"]),
        "bindings with DRA devices": sum(1 for o in result.outcomes if o.node and o.devices),
        "failures": sum(1 for e in got["events"] if e[3] == "FailedScheduling"),
        "evictions": len(got["evictions"]),
        "nominations": sum(1 for _, node in got["nominations"] if node),
        "memo entries": _memo_entries(result),
        "affinity sums": len(ipa._aggregates),
        "spread sums": len(pts._sums),
    }


def run_both(
    objects: list[JSON],
    seed: int,
    config: SchedulerConfiguration | None,
    rec: Recorder,
    *,
    note: bool = False,
    note_shapes: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(decisions with every cache, decisions without any); checks each run really had its caches on or off.
    `note`: keep what the run with caches exercised for the last test; `note_shapes`: keep how many per-node
    results the shape results served and computed."""
    with caching.caches_enabled():  # emptied on entry
        cached = run(copy.deepcopy(objects), seed, config)
        with_caches = decisions(cached, rec)
        if note:
            _EXERCISED[seed] = _exercised(cached, with_caches)
        if note_shapes:
            assert cached.scheduler is not None
            for shapes in cached.scheduler.algorithm.shapes.values():
                for key, value in shapes.stats.items():
                    _SHAPES_EXERCISED[key] = _SHAPES_EXERCISED.get(key, 0) + value
        assert _lru_entries() > 0  # quantities went through the lru_caches (memos and sums: the last test)
    rec.clear()
    with caching.caches_disabled():
        plain = run(copy.deepcopy(objects), seed, config)
        without = decisions(plain, rec)
        # Really off: nothing was remembered anywhere.
        ipa, pts = _plugins(plain)
        assert _memo_entries(plain) == 0 and _lru_entries() == 0 and not ipa._aggregates and not pts._sums
    rec.clear()
    return with_caches, without


def _first_difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    for key in a:
        if a[key] != b[key]:
            if isinstance(a[key], list):
                for i, (x, y) in enumerate(zip(a[key], b[key], strict=False)):
                    if x != y:
                        return f"{key}[{i}]: with caches {x!r}, without {y!r}"
                return f"{key}: {len(a[key])} entries with caches, {len(b[key])} without"
            return f"{key}: with caches {a[key]!r}, without {b[key]!r}"
    return "none"


@pytest.mark.parametrize("seed", SEEDS)
def test_decisions_do_not_depend_on_caches(seed: int, recorder: Recorder) -> None:
    """Default profile: every placement, message, nomination and preemption is the same without caches."""
    with_caches, without = run_both(workload(seed), seed, None, recorder, note=True)
    assert with_caches == without, _first_difference(with_caches, without)


_SHARED_SPECS: dict[int, int] = {}  # seed -> bound pods whose spec the JSON loader shared


@pytest.mark.parametrize("seed", SEEDS)
def test_a_json_dump_decides_as_the_plain_run(seed: int, recorder: Recorder, tmp_path: Path) -> None:
    """The workload, with twins of some bound pods (the same spec, another name), as a JSON List read by
    read_cluster (each distinct bound-pod spec decoded once, config/json_dump.py) with every cache, against
    YAML and load_documents without any: the same decisions."""
    rng = random.Random(seed)
    objects = workload(seed)
    twins = []
    for obj in objects:
        if obj["kind"] == "Pod" and obj["spec"].get("nodeName") and rng.random() < 0.5:
            twin = copy.deepcopy(obj)
            twin["metadata"].update(name=f"{obj['metadata']['name']}-twin", uid=f"{obj['metadata'].get('uid')}-twin")
            twins.append(twin)
    objects = [*objects, *twins] if seed % 2 else [*twins, *objects]
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    with caching.caches_enabled():
        listed = load_json_list(path.read_bytes())
        assert listed is not None, "every kind of the workload must take the shared-spec decoder"
        _SHARED_SPECS[seed] = len(listed[1])
        docs = read_cluster(str(path))
        fast = decisions(simulate(docs, None, seed=seed, own_objects=True), recorder)
    recorder.clear()
    with caching.caches_disabled():
        plain = decisions(run(copy.deepcopy(objects), seed, None), recorder)
    recorder.clear()
    assert fast == plain, _first_difference(fast, plain)


@pytest.mark.parametrize("seed", SEEDS[:5])
def test_decisions_do_not_depend_on_caches_most_allocated(seed: int, recorder: Recorder) -> None:
    """NodeResourcesFit's MostAllocated strategy (another inlined, memoized score loop)."""
    with_caches, without = run_both(workload(seed), seed, _most_allocated(), recorder)
    assert with_caches == without, _first_difference(with_caches, without)


@pytest.mark.parametrize("seed", SEEDS[:10])
def test_decisions_do_not_depend_on_caches_directed(seed: int, recorder: Recorder) -> None:
    """Pod affinity against existing anti-affinity, and local CSI volumes with limits (directed_workload)."""
    with_caches, without = run_both(directed_workload(seed), seed, None, recorder)
    assert with_caches == without, _first_difference(with_caches, without)


@pytest.mark.parametrize("weighted", [False, True], ids=["default-weights", "other-weights"])
@pytest.mark.parametrize("seed", SEEDS[:8])
def test_decisions_do_not_depend_on_caches_shapes(seed: int, weighted: bool, recorder: Recorder) -> None:
    """Pods of a few shapes between node changes (shapes_workload): the kept per-shape results change nothing,
    with the default score weights and with others."""
    config = _weighted() if weighted else None
    with_caches, without = run_both(shapes_workload(seed), seed, config, recorder, note_shapes=True)
    assert with_caches == without, _first_difference(with_caches, without)


def test_the_workloads_exercise_what_the_caches_serve(recorder: Recorder) -> None:
    """Not vacuous: over the seeds, pods bind (some with DRA devices allocated), pods fail with messages,
    preemption nominates and evicts, and the node memos and InterPodAffinity's and PodTopologySpread's kept
    sums are filled."""
    totals: dict[str, int] = {}
    for seed in SEEDS:
        if seed not in _EXERCISED:  # this test run on its own
            with caching.caches_enabled():
                result = run(workload(seed), seed, None)
                _EXERCISED[seed] = _exercised(result, decisions(result, recorder))
            recorder.clear()
        for key, value in _EXERCISED[seed].items():
            totals[key] = totals.get(key, 0) + value
    assert totals and all(v > 0 for v in totals.values()), totals
    if _SHARED_SPECS:  # the JSON dump test ran in this session: its twins shared specs
        assert sum(_SHARED_SPECS.values()) > 0, _SHARED_SPECS
    if _SHAPES_EXERCISED:  # the shape workloads ran in this session: they reused and recomputed rows
        assert all(v > 0 for v in _SHAPES_EXERCISED.values()), _SHAPES_EXERCISED


# ---------------------------------------------------------------------------------------------------------
# The switch itself


def test_the_switch_turns_the_caches_off_and_back_on() -> None:
    """Disabled: the memo stores nothing and is not read, the lru_caches are bypassed (and emptied)."""
    node = NodeInfo("n1")
    with caching.caches_enabled():
        assert node.remember("k", 1) == 1 and node.memo == {"k": 1}
        assert memo_lookup([node], "k") == [1]
        quantity.value_of("3Gi")
        assert quantity.value_of.cache_info().currsize > 0
        with caching.caches_disabled():
            assert not caching.ENABLED
            assert quantity.value_of.cache_info().currsize == 0  # emptied when switched
            assert memo_lookup([node], "k") == [None]  # an entry from before is not read
            assert node.remember("other", 2) == 2 and "other" not in node.memo
            assert quantity.value_of("3Gi") == 3 * 2**30
            assert quantity.value_of.cache_info().currsize == 0
        assert caching.ENABLED  # restored
        assert memo_lookup([node], "k") == [1]


@pytest.mark.parametrize(("value", "enabled"), [("1", False), ("true", False), ("", True), ("0", True)])
def test_the_environment_variable_disables_caches_for_a_whole_process(value: str, enabled: bool) -> None:
    code = "from scheduler import caching; print(caching.ENABLED)"
    env = {**os.environ, caching.ENV_VAR: value}
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(enabled)


@pytest.mark.parametrize("raw", [{"a": 1}, ["1Gi"], {"1Gi"}], ids=["map", "list", "set"])
def test_an_unhashable_argument_gets_the_functions_own_error_with_caches_on(raw: Any) -> None:
    """A map where a quantity belongs: the lru_cache's hashing must not replace the parser's message with
    "unhashable type" (the two modes gave users different messages); hashable input still goes through the cache."""
    messages = []
    for switch in (caching.caches_disabled, caching.caches_enabled):
        with switch(), pytest.raises(quantity.QuantityError) as err:
            quantity.milli_value_of(raw)
        messages.append(str(err.value))
    assert messages[0] == messages[1] == f"quantity must be a string or number, got {type(raw).__name__}"
    with caching.caches_enabled():
        quantity.milli_value_of("1Gi")
        quantity.milli_value_of("1Gi")
        assert quantity.milli_value_of.cache_info().hits >= 1
