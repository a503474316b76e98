"""Score parity and a seeded slice of the differential fuzz: kube-scheduler v1.37.2 vs pyscheduler.

Both schedulers run against the same API server, kube-scheduler with `--vmodule=schedule_one=10` and
pyscheduler at `-v 10`, so each logs `"Plugin scored node for pod" pod=... plugin=... node=... score=...` for
every scored node (weighted, after normalization). Each pending pod is created once per scheduler on the same
nodes and bound pods, one at a time, and deleted before the next (tests/diff/runner.py). Compared per pod: bound
vs pending, the whole pending message (preemption part included), the scored plugins, the feasible
(= scored) nodes, every plugin's score per node, each node's total, the evaluated/feasible counts, and that
each scheduler bound the pod to one of its top-scoring nodes.

- `test_scores_equal_upstream_on_60_nodes`: a deterministic cluster of 60 nodes (below 100, so
  percentageOfNodesToScore lets both score every feasible node) with shapes chosen so every Score plugin of
  the default profile gives different scores to different nodes.
- `test_seeded_differential_slice`: 15 random scenarios of the differential fuzz (`bench/difffuzz.py` runs
  hundreds).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest

from scheduler.core.profile import build_framework, default_config
from scheduler.testing import StaticHandle
from tests.cluster.harness import ControlPlane
from tests.diff.runner import Api, DiffRunner, ScenarioResult, SchedulerUnderTest, log_index, summarize
from tests.diff.scenario import HOSTNAME_LABEL, MB, REGION_LABEL, ZONE_LABEL, ExistingPod, Scenario, generate
from tests.diff.schedulers import PYSCHEDULER_NAME, PYSCHEDULER_VERBOSITY, UPSTREAM_SCHEDULER_NAME, start_upstream
from tests.e2e.conftest import StartPyScheduler
from tests.e2e.kube import OWNER_LABEL

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

JSON = dict[str, Any]
PAUSE = "registry.k8s.io/pause:3.10"
SLICE_SEEDS = range(1001, 1016)


def default_score_plugins() -> list[str]:
    """The Score plugins of pyscheduler's default profile: every one must be proven against upstream."""
    fwk = build_framework(default_config().profiles[0], StaticHandle())
    return [pl.name for pl in fwk.score]


@pytest.fixture
async def runner(
    control_plane: ControlPlane, namespace: str, start_pyscheduler: StartPyScheduler
) -> AsyncIterator[DiffRunner]:
    """kube-scheduler and pyscheduler logging every score, and a DiffRunner over the test's namespace."""
    upstream = start_upstream(control_plane)
    api = Api(control_plane.server, control_plane.token)
    try:
        ours = await start_pyscheduler("-v", str(PYSCHEDULER_VERBOSITY))
        schedulers = [
            SchedulerUnderTest("up", UPSTREAM_SCHEDULER_NAME, log_index(upstream.log_path)),
            SchedulerUnderTest("py", PYSCHEDULER_NAME, log_index(ours.process.log_path)),
        ]
        yield DiffRunner(
            api, namespace, schedulers, run_id=secrets.token_hex(4), extra_node_labels={OWNER_LABEL: namespace}
        )
    finally:
        await api.close()
        control_plane.stop_process("kube-scheduler")


# ------------------------------------------------------------------------------------------------ the cluster


def _node(i: int) -> JSON:
    """Node i of 60: three zones, four cpu/memory sizes, PreferNoSchedule taints on some, images on many."""
    name = f"parity-n{i:02d}"
    labels = {
        HOSTNAME_LABEL: name,
        ZONE_LABEL: f"z{i % 3}",
        REGION_LABEL: "r1",
        "disk": ("ssd", "hdd")[i % 2],
        "gen": str(i % 12),
    }
    if i % 5 == 0:
        labels["accelerator"] = "nvidia"
    taints = []
    if i % 4 == 1:
        taints.append({"key": "spot", "value": "true", "effect": "PreferNoSchedule"})
    if i % 6 == 2:
        taints.append({"key": "flaky", "effect": "PreferNoSchedule"})
    capacity = {
        "cpu": ("2", "4", "8", "3500m")[i % 4],
        "memory": ("4Gi", "8Gi", "16Gi", "6000Mi")[(i // 2) % 4],
        "pods": "110",
        "ephemeral-storage": "100Gi",
    }
    if i % 5 == 0:
        capacity["example.com/gpu"] = "4"
    images = []
    if i % 2 == 0:
        images.append({"names": ["registry.example/web:1.0", "registry.example/web:latest"], "sizeBytes": 180 * MB})
    if i % 3 == 0:
        # The same name with two sizes: upstream keeps the size of the node its cache added first.
        images.append({"names": ["registry.example/ml:3"], "sizeBytes": (2600 if i % 9 else 3100) * MB})
    if i % 7 == 0:
        images.append({"names": ["registry.example/db"], "sizeBytes": 900 * MB})  # untagged: never matches
    if i % 5 == 1:
        images.append({"names": ["registry.example/db:latest"], "sizeBytes": 950 * MB})
    spec: JSON = {"taints": taints} if taints else {}
    status = {
        "capacity": capacity,
        "allocatable": dict(capacity),
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "parity"}],
        "images": images,
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": status,
    }


def _bound(i: int, node: str) -> ExistingPod:
    """Bound pods of varied sizes; every third runs with an in-place resize status (allocated > spec)."""
    cpu = ("250m", "500m", "1", "1500m")[i % 4]
    memory = ("256Mi", "1Gi", "2Gi")[i % 3]
    manifest: JSON = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"parity-bound{i}", "labels": {"app": ("web", "db")[i % 2]}},
        "spec": {
            "nodeName": node,
            "schedulerName": "nobody",
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": PAUSE, "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
        },
    }
    status = None
    if i % 3 == 0:
        status = {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "c",
                    "image": PAUSE,
                    "imageID": "",
                    "ready": True,
                    "restartCount": 0,
                    "allocatedResources": {"cpu": "2", "memory": "3Gi"},
                    "resources": {"requests": {"cpu": "2", "memory": "3Gi"}},
                }
            ],
        }
        if i % 2 == 0:  # an Infeasible resize: what runs counts, not the (smaller) spec
            status["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
    return ExistingPod(manifest, status)


def _pod(name: str, **spec: Any) -> JSON:
    labels = spec.pop("labels", None) or {"app": "parity"}
    containers = spec.pop("containers", None) or [
        {"name": "c", "image": spec.pop("image", PAUSE), "resources": {"requests": spec.pop("requests", {})}}
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": containers, "terminationGracePeriodSeconds": 0, **spec},
    }


def _preferred(*terms: tuple[int, str, str, list[str] | None]) -> JSON:
    prefs = []
    for weight, key, op, values in terms:
        expr: JSON = {"key": key, "operator": op}
        if values is not None:
            expr["values"] = values
        prefs.append({"weight": weight, "preference": {"matchExpressions": [expr]}})
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": prefs}}


def _pod_term(labels: dict[str, str], topology_key: str) -> JSON:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": topology_key}


PENDING: list[JSON] = [
    _pod("plain", requests={"cpu": "500m", "memory": "1Gi"}),
    _pod("best-effort"),  # BalancedAllocation skips it (PreScore); the other plugins still score
    _pod("cpu-heavy", requests={"cpu": "3", "memory": "512Mi"}),
    _pod("tolerates-spot", requests={"cpu": "250m"}, tolerations=[{"key": "spot", "operator": "Exists"}]),
    _pod(
        "prefers-ssd-zone1",
        requests={"cpu": "100m", "memory": "128Mi"},
        affinity=_preferred((80, "disk", "In", ["ssd"]), (30, ZONE_LABEL, "In", ["z1"]), (5, "gen", "Gt", ["6"])),
    ),
    _pod("web-image", image="registry.example/web:1.0", requests={"cpu": "200m"}),
    _pod(
        "ml-image-as-volume",
        requests={"cpu": "200m"},
        volumes=[{"name": "m", "image": {"reference": "registry.example/ml:3"}}],
    ),
    _pod("db-untagged", image="registry.example/db", requests={"memory": "512Mi"}),
    _pod(
        "init-and-sidecar",
        containers=[{"name": "c", "image": "registry.example/web", "resources": {"requests": {"cpu": "300m"}}}],
        initContainers=[
            {"name": "init", "image": PAUSE, "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}},
            {"name": "side", "image": PAUSE, "restartPolicy": "Always", "resources": {"requests": {"memory": "256Mi"}}},
        ],
    ),
    _pod(
        "pod-level", requests={"cpu": "500m", "memory": "512Mi"}, resources={"requests": {"cpu": "2", "memory": "2Gi"}}
    ),
    _pod(
        "gpu-and-zone",
        containers=[
            {"name": "c", "image": PAUSE, "resources": {"limits": {"example.com/gpu": "2"}, "requests": {"cpu": "1"}}}
        ],
        affinity=_preferred((50, ZONE_LABEL, "NotIn", ["z0"])),
    ),
    _pod(
        "required-and-preferred",
        requests={"cpu": "750m", "memory": "3Gi"},
        affinity={
            "nodeAffinity": {
                **_preferred((100, "accelerator", "DoesNotExist", None))["nodeAffinity"],
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["9"]}]}]
                },
            }
        },
        tolerations=[{"key": "flaky", "operator": "Exists", "effect": "PreferNoSchedule"}],
    ),
    # A Service selects app=web (parity_scenario): PodTopologySpread's system default constraints score by
    # how many app=web pods each node and zone holds.
    _pod("web-service-member", labels={"app": "web"}, requests={"cpu": "100m"}),
    _pod(
        "prefers-db-zone-avoids-web-hosts",
        labels={"app": "parity"},
        requests={"cpu": "100m"},
        affinity={
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 60, "podAffinityTerm": _pod_term({"app": "db"}, ZONE_LABEL)}
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 40, "podAffinityTerm": _pod_term({"app": "web"}, HOSTNAME_LABEL)}
                ]
            },
        },
    ),
    _pod("too-big", requests={"cpu": "9"}),  # fits nowhere: the message is compared
]


def parity_scenario() -> Scenario:
    nodes = [_node(i) for i in range(60)]
    existing = [_bound(i, nodes[(i * 7) % 60]["metadata"]["name"]) for i in range(90)]
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "parity-web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    return Scenario(seed=0, nodes=nodes, existing=existing, pending=PENDING, objects=[service])


def _report(result: ScenarioResult) -> str:
    return "\n".join(str(d) for d in result.unexplained())


# ------------------------------------------------------------------------------------------------ the tests


async def test_scores_equal_upstream_on_60_nodes(runner: DiffRunner) -> None:
    """Every plugin's score on every feasible node, the feasible sets and the messages equal upstream's."""
    result = await runner.run(parity_scenario())
    assert not result.differences, _report(result)  # this cluster has no shared host ports: none is explained
    # The comparison must have had something to compare: every default Score plugin varied across nodes.
    varied: dict[str, int] = {}
    for pod, by_tag in result.outcomes.items():
        log = by_tag["up"].log
        if log is None:
            continue
        for plugin in log.plugins():
            values = {v for (p, _), v in log.scores.items() if p == plugin}
            if len(values) >= 2:
                varied[plugin] = varied.get(plugin, 0) + 1
        if by_tag["up"].node is not None:
            assert len(log.scored_nodes()) >= 2, f"{pod}: only {log.scored_nodes()} scored"
    # VolumeBinding scores only pods with claims to bind on the node (pre-binding a PV is not undone by
    # deleting the pod, so this runner cannot repeat such a pod); its score alone decides the placement in
    # test_volumes.py::test_volume_binding_score_prefers_the_least_utilized_static_pv, for both schedulers.
    # DynamicResources scores only pods with a `firstAvailable` claim (here it scores 0 everywhere, as
    # upstream's does); its score alone decides test_dra.py::test_first_available_prefers_the_first_subrequest.
    missing = [p for p in default_score_plugins() if p not in varied and p not in ("VolumeBinding", "DynamicResources")]
    assert not missing, f"no pending pod makes {missing} score nodes differently: add a shape that does"
    assert result.count("pending") == 1 and result.count("scored") == len(PENDING) - 1
    print(summarize([result]), varied)


async def test_seeded_differential_slice(runner: DiffRunner) -> None:
    """15 seeded random scenarios (bench/difffuzz.py's generator): no difference in any outcome or score."""
    results = [await runner.run(generate(seed)) for seed in SLICE_SEEDS]
    differences = [str(d) for r in results for d in r.unexplained()]
    assert not differences, "\n".join(differences)
    summary = summarize(results)
    print(summary)
    assert summary["outcomes_scored"] >= 10 and summary["outcomes_pending"] >= 10  # both kinds were compared
