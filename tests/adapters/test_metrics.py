"""/metrics without a server: the registry run.py serves, fed by a scheduler over an in-memory cluster.

A known workload (2 nodes of 2 CPUs; 5 pods that fit, 2 that need 3 CPUs, 1 held by a scheduling gate) must
give exact counter and gauge values, and deleting pending pods must bring the pending gauges down (upstream
has shipped scheduler_pending_pods that drifted from the queue; ours are read from the queue at scrape time).
Every metric of tests/packaging/metrics_catalog.py, and the other kube-scheduler metrics the issue names, must
be exposed with the right `# TYPE` and label names.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from scheduler.adapters.cluster.client import KubeClient
from scheduler.adapters.cluster.metrics import SchedulerMetrics, exponential_buckets
from scheduler.adapters.cluster.run import metrics_registry
from scheduler.config.types import SchedulerConfiguration
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.testing import SchedulerHarness, make_node, make_pod
from tests.packaging.metrics_catalog import METRICS, Metric, exposed_series

JSON = dict[str, Any]
PROFILE = "pyscheduler"

# kube-scheduler metrics the issue requires that the dashboard does not chart (so they are not in the catalog).
UPSTREAM_EXTRA: tuple[Metric, ...] = (
    Metric("scheduler_scheduling_algorithm_duration_seconds", "histogram", (), ""),
    Metric("scheduler_pod_scheduling_attempts", "histogram", (), ""),
    Metric("scheduler_plugin_execution_duration_seconds", "histogram", ("plugin", "extension_point", "status"), ""),
    Metric("scheduler_queue_incoming_pods_total", "counter", ("queue", "event"), ""),
    Metric("rest_client_request_duration_seconds", "histogram", ("verb", "host"), ""),
    Metric("process_start_time_seconds", "gauge", (), ""),
    Metric("process_open_fds", "gauge", (), ""),
)

# kube-scheduler's buckets (pkg/scheduler/metrics/metrics.go), as upper bounds without +Inf.
UPSTREAM_BUCKETS = {
    "scheduler_scheduling_attempt_duration_seconds": exponential_buckets(0.001, 2, 15),
    "scheduler_scheduling_algorithm_duration_seconds": exponential_buckets(0.001, 2, 15),
    "scheduler_pod_scheduling_sli_duration_seconds": exponential_buckets(0.01, 2, 20),
    "scheduler_pod_scheduling_attempts": exponential_buckets(1, 2, 5),
    "scheduler_framework_extension_point_duration_seconds": exponential_buckets(0.0001, 2, 12),
    "scheduler_plugin_execution_duration_seconds": exponential_buckets(0.00001, 1.5, 20),
    "scheduler_preemption_victims": exponential_buckets(1, 2, 7),
    "scheduler_preemption_goroutines_duration_seconds": exponential_buckets(0.01, 2, 20),
}


class Metered(SchedulerHarness):
    """The public harness with SchedulerMetrics as its observer, plus the registry /metrics serves (an
    adapter's part, which the core-level harness does not offer)."""

    def __init__(self, config: SchedulerConfiguration | None = None) -> None:
        self.metrics = SchedulerMetrics(CollectorRegistry())
        super().__init__(config, observer=self.metrics)
        self.served = metrics_registry(self.scheduler, self.metrics)

    def value(self, name: str, **labels: str) -> float | None:
        return self.served.get_sample_value(name, labels)

    def text(self) -> str:
        return generate_latest(self.served).decode()


def uid(obj: JSON) -> str:
    return str(obj["metadata"]["uid"])


async def preemption_workload(env: Metered) -> JSON:
    """A node whose two low-priority pods must both go for a high-priority pod: one preemption, 2 victims.
    Returns the preemptor."""
    env.cluster.apply_node(make_node("n-preempt").capacity(cpu="2").label("pool", "preempt").obj())
    for i in range(2):
        env.cluster.apply_pod(make_pod(f"victim-{i}").req(cpu="1").priority(1).node("n-preempt").obj())
    preemptor = make_pod("preemptor").req(cpu="2").priority(100).node_selector(pool="preempt").obj()
    env.cluster.apply_pod(preemptor)
    await env.settle()
    return preemptor


async def known_workload(env: Metered) -> dict[str, list[JSON]]:
    for name in ("n1", "n2"):
        env.cluster.apply_node(make_node(name).capacity(cpu="2").obj())
    pods: dict[str, list[JSON]] = {"fit": [], "big": [], "gated": []}
    for i in range(5):
        pods["fit"].append(make_pod(f"fit-{i}").req(cpu="100m").obj())
    for i in range(2):
        pods["big"].append(make_pod(f"big-{i}").req(cpu="3").obj())
    gated = make_pod("gated").req(cpu="100m").obj()
    gated["spec"]["schedulingGates"] = [{"name": "example.com/hold"}]
    pods["gated"].append(gated)
    for group in pods.values():
        for obj in group:
            env.cluster.apply_pod(obj)
    await env.settle()
    return pods


async def test_counts_after_a_known_workload() -> None:
    env = Metered()
    await known_workload(env)
    assert len(env.cluster.bindings) == 5

    assert env.value("scheduler_schedule_attempts_total", result="scheduled", profile=PROFILE) == 5
    assert env.value("scheduler_schedule_attempts_total", result="unschedulable", profile=PROFILE) == 2
    assert env.value("scheduler_schedule_attempts_total", result="error", profile=PROFILE) is None
    assert env.value("scheduler_scheduling_attempt_duration_seconds_count", result="scheduled", profile=PROFILE) == 5
    assert (
        env.value("scheduler_scheduling_attempt_duration_seconds_count", result="unschedulable", profile=PROFILE) == 2
    )
    assert env.value("scheduler_scheduling_algorithm_duration_seconds_count") == 7

    assert env.value("scheduler_pending_pods", queue="active") == 0
    assert env.value("scheduler_pending_pods", queue="backoff") == 0
    assert env.value("scheduler_pending_pods", queue="unschedulable") == 2
    assert env.value("scheduler_pending_pods", queue="gated") == 1
    assert env.value("scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile=PROFILE) == 2

    assert env.value("scheduler_cache_size", type="nodes") == 2
    assert env.value("scheduler_cache_size", type="pods") == 5
    assert env.value("scheduler_cache_size", type="assumed_pods") == 0

    # Every bound pod was bound at its first attempt; the fake clock did not move, so the SLI is 0.
    assert env.value("scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") == 5
    assert env.value("scheduler_pod_scheduling_sli_duration_seconds_sum", attempts="1") == 0
    assert env.value("scheduler_pod_scheduling_attempts_count") == 5
    assert env.value("scheduler_pod_scheduling_attempts_sum") == 5

    incoming = "scheduler_queue_incoming_pods_total"
    assert env.value(incoming, queue="active", event="UnscheduledPodAdd") == 7
    # A gated pod is counted under "unschedulable", as upstream does.
    assert env.value(incoming, queue="unschedulable", event="UnscheduledPodAdd") == 1
    assert env.value(incoming, queue="unschedulable", event="ScheduleAttemptFailure") == 2
    assert env.value(incoming, queue="backoff", event="ScheduleAttemptFailure") is None

    # Filter ran once per attempt; it rejected every node for the 2 big pods but still returned Success.
    filter_ok = env.value(
        "scheduler_framework_extension_point_duration_seconds_count",
        extension_point="Filter",
        status="Success",
        profile=PROFILE,
    )
    assert filter_ok is not None and filter_ok >= 5
    assert env.value("pyscheduler_bind_errors_total") == 0
    assert env.value("pyscheduler_build_info", version="0.1.0") == 1
    for kind in ("missing_nodes", "stale_pods", "pending_pods_removed"):
        assert env.value("pyscheduler_cache_drift_repaired_total", kind=kind) == 0


async def test_pending_gauges_drop_when_pending_pods_are_deleted() -> None:
    """The upstream bug class: pending gauges that keep counting pods which left the queue."""
    env = Metered()
    pods = await known_workload(env)

    env.cluster.delete_pod(uid(pods["big"][0]))
    assert env.value("scheduler_pending_pods", queue="unschedulable") == 1
    assert env.value("scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile=PROFILE) == 1

    env.cluster.delete_pod(uid(pods["gated"][0]))
    assert env.value("scheduler_pending_pods", queue="gated") == 0

    env.cluster.delete_pod(uid(pods["big"][1]))
    assert env.value("scheduler_pending_pods", queue="unschedulable") == 0
    # No plugin rejects any pod any more: the series is gone rather than stuck at a stale value.
    assert env.value("scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile=PROFILE) is None

    env.cluster.delete_pod(uid(pods["fit"][0]))
    assert env.value("scheduler_cache_size", type="pods") == 4
    for queue in ("active", "backoff", "unschedulable", "gated"):
        assert env.value("scheduler_pending_pods", queue=queue) == 0
    await env.settle()
    assert env.value("scheduler_schedule_attempts_total", result="scheduled", profile=PROFILE) == 5


async def test_ungating_a_pod_moves_it_out_of_the_gated_gauge() -> None:
    env = Metered()
    pods = await known_workload(env)
    released = dict(pods["gated"][0])
    released["spec"] = {k: v for k, v in released["spec"].items() if k != "schedulingGates"}
    env.cluster.apply_pod(released)
    assert env.value("scheduler_pending_pods", queue="gated") == 0
    await env.settle()
    assert env.value("scheduler_pending_pods", queue="active") == 0
    assert env.value("scheduler_schedule_attempts_total", result="scheduled", profile=PROFILE) == 6
    assert env.value("scheduler_pod_scheduling_attempts_count") == 6


def _families(text: str) -> dict[str, str]:
    """Family name as written in `# TYPE` -> type."""
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))


def _label_names(text: str, series: tuple[str, ...]) -> set[frozenset[str]]:
    out: set[frozenset[str]] = set()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in series:
                out.add(frozenset(k for k in sample.labels if k != "le"))
    return out


@pytest.mark.parametrize("metric", METRICS + UPSTREAM_EXTRA, ids=lambda m: m.name)
async def test_every_documented_metric_is_exposed_with_its_type_and_labels(metric: Metric) -> None:
    env = Metered()
    await known_workload(env)
    await preemption_workload(env)
    # What KubeClient reports per request, and a sampled cycle's plugin timing (10% of cycles are sampled, so
    # the workload above may have none; test_plugin_execution_is_sampled_and_observed covers the sampling).
    env.metrics.rest_request("GET", "127.0.0.1:6443", "200", 0.01)
    env.metrics.plugin_execution("NodeResourcesFit", "Filter", Code.SUCCESS, 1e-5)
    # No field is refused today (the fail-closed list is empty since DynamicResources landed), so the guard's
    # counter gets a sample the way the guard would give it one.
    env.metrics.unsupported_pod("example")
    text = env.text()
    families = _families(text)
    assert families.get(metric.name) == metric.type, f"{metric.name}: # TYPE {families.get(metric.name)}"
    labels = _label_names(text, exposed_series(metric))
    assert labels, f"{metric.name} has no sample"
    assert labels == {frozenset(metric.labels)}, f"{metric.name}: label sets {labels}, want {metric.labels}"


async def test_no_created_series_and_upstream_buckets() -> None:
    env = Metered()
    await known_workload(env)
    await preemption_workload(env)
    env.metrics.plugin_execution("NodeResourcesFit", "Filter", Code.SUCCESS, 1e-5)
    text = env.text()
    assert "_created" not in text  # kube-scheduler exposes none
    checked = set()
    for family in text_string_to_metric_families(text):
        want = UPSTREAM_BUCKETS.get(family.name)
        if want is None:
            continue
        checked.add(family.name)
        first = next(s.labels for s in family.samples if s.name.endswith("_bucket"))
        bounds = [
            float(s.labels["le"])
            for s in family.samples
            if s.name.endswith("_bucket")
            and {k: v for k, v in s.labels.items() if k != "le"} == {k: v for k, v in first.items() if k != "le"}
        ]
        assert bounds[:-1] == pytest.approx(want), family.name
        assert bounds[-1] == float("inf")
    assert checked == set(UPSTREAM_BUCKETS)


async def test_plugin_execution_is_sampled_and_observed() -> None:
    """Cycles with record_plugin_metrics time each plugin once (the batch call), others not at all."""
    env = Metered()
    for name in ("n1", "n2"):
        env.cluster.apply_node(make_node(name).capacity(cpu="2").obj())
    pod = make_pod("p").req(cpu="100m").info()
    fwk = env.scheduler.profiles[PROFILE]
    env.scheduler.cache.update_snapshot(env.scheduler.snapshot)
    nodes = env.scheduler.snapshot.node_info_list
    name = "scheduler_plugin_execution_duration_seconds_count"

    unsampled = CycleState()
    fwk.run_pre_filter(unsampled, pod, nodes)
    fwk.run_filters(unsampled, pod, nodes)
    assert env.value(name, plugin="NodeResourcesFit", extension_point="Filter", status="Success") is None

    sampled = CycleState()
    sampled.record_plugin_metrics = True
    fwk.run_pre_filter(sampled, pod, nodes)
    fwk.run_filters(sampled, pod, nodes)
    fwk.run_pre_score(sampled, pod, nodes)
    fwk.run_score(sampled, pod, nodes)
    assert env.value(name, plugin="NodeResourcesFit", extension_point="Filter", status="Success") == 1
    assert env.value(name, plugin="NodeResourcesFit", extension_point="PreFilter", status="Success") == 1
    assert env.value(name, plugin="NodeResourcesBalancedAllocation", extension_point="Score", status="Success") == 1


async def test_rest_client_metrics_for_every_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """KubeClient reports each attempt: code, method and host; duration by verb and host."""
    configuration = Configuration(host="https://127.0.0.1:6443")
    client = KubeClient(configuration, qps=1000, burst=1000, max_retries=1)
    metrics = SchedulerMetrics(CollectorRegistry())
    client.request_observer = metrics.rest_request
    answers: list[tuple[int, dict[str, str], bytes] | Exception] = [
        (200, {}, b"{}"),
        (503, {"Retry-After": "0"}, b""),
        (201, {}, b"{}"),
        TimeoutError(),
        (404, {}, b'{"kind":"Status","reason":"NotFound","message":"nope"}'),
    ]

    async def fake_send(*_: Any) -> tuple[int, dict[str, str], bytes]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(client, "_send", fake_send)
    try:
        await client.request("GET", "/api/v1/nodes")
        await client.request("POST", "/api/v1/namespaces/a/pods/b/binding", body={})  # 503, then 201
        with pytest.raises(Exception, match="nope"):
            await client.request("get", "/api/v1/pods")  # timeout, then 404
    finally:
        await client.close()
    reg = metrics.registry
    host = "127.0.0.1:6443"
    for code, method, n in [("200", "GET", 1), ("503", "POST", 1), ("201", "POST", 1), ("<error>", "GET", 1)]:
        assert reg.get_sample_value("rest_client_requests_total", {"code": code, "method": method, "host": host}) == n
    assert reg.get_sample_value("rest_client_requests_total", {"code": "404", "method": "GET", "host": host}) == 1
    assert reg.get_sample_value("rest_client_request_duration_seconds_count", {"verb": "GET", "host": host}) == 3
    assert reg.get_sample_value("rest_client_request_duration_seconds_count", {"verb": "POST", "host": host}) == 2


async def test_preemption_metrics_count_attempts_victims_and_background_runs() -> None:
    """scheduler_preemption_attempts_total counts every PostFilter run, i.e. every unschedulable attempt of a
    profile that preempts (the preemptor's own attempt included); scheduler_preemption_victims the victims of
    the one preemption; the goroutine metrics its asynchronous run."""
    env = Metered()
    await known_workload(env)
    before = env.value("scheduler_preemption_attempts_total")
    assert before is not None and before >= 2  # the two 3-cpu pods went through PostFilter
    assert before == env.value("scheduler_schedule_attempts_total", result="unschedulable", profile=PROFILE)
    assert env.value("scheduler_preemption_victims_count") == 0
    preemptor = await preemption_workload(env)
    after = env.value("scheduler_preemption_attempts_total")
    assert after == env.value("scheduler_schedule_attempts_total", result="unschedulable", profile=PROFILE)
    assert after is not None and after > before
    assert env.value("scheduler_preemption_victims_count") == 1
    assert env.value("scheduler_preemption_victims_sum") == 2
    assert env.value("scheduler_preemption_victims_bucket", le="2.0") == 1
    assert env.value("scheduler_preemption_goroutines_execution_total", result="success") == 1
    assert env.value("scheduler_preemption_goroutines_duration_seconds_count", result="success") == 1
    assert env.cluster.node_of(uid(preemptor)) == "n-preempt"


async def test_volume_scheduling_stage_errors() -> None:
    """VolumeBinding's metrics as upstream registers them: scheduler_volume_scheduling_stage_error_total counts
    a binding that timed out under operation "bind"; scheduler_volume_binder_cache_requests_total is exposed
    (upstream registers it and never increments it)."""
    from scheduler.config.load import load_config
    from scheduler.plugins.registry import REGISTRY, implements, parse_plugin_args
    from scheduler.testing import make_pvc, storage_class

    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": PROFILE,
                "pluginConfig": [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 1}}],
            }
        ],
    }
    env = Metered(load_config(raw, REGISTRY.keys(), parse_plugin_args, implements=implements))
    env.cluster.apply_node(make_node("n1").obj())
    env.cluster.provisioning = False  # the provisioner never answers: PreBind times out (bindTimeoutSeconds)
    env.cluster.apply_object(storage_class("slow", provisioner="csi.example.com"))
    env.cluster.apply_object(make_pvc("data").storage_class("slow").obj())
    pod = make_pod("db").pvc("data").obj()
    env.cluster.apply_pod(pod)
    assert env.value("scheduler_volume_scheduling_stage_error_total", operation="bind") is None
    await env.scheduler.run_until_idle(advance=None)  # one attempt, no retry
    assert env.value("scheduler_volume_scheduling_stage_error_total", operation="bind") == 1
    assert env.value("scheduler_volume_scheduling_stage_error_total", operation="predicate") is None
    text = env.text()
    assert "# TYPE scheduler_volume_scheduling_stage_error_total counter" in text
    assert "# TYPE scheduler_volume_binder_cache_requests_total counter" in text
    env.cluster.provisioning = True
    await env.settle()
    assert env.cluster.node_of(uid(pod)) == "n1"
    assert env.value("scheduler_volume_scheduling_stage_error_total", operation="bind") == 1


async def test_dynamic_resources_metrics() -> None:
    """DynamicResources' metrics with upstream's names, labels and buckets: a device with binding conditions
    counts one allocation and one wait per allocated device (status success); the claim made for an extended
    resource backed by DRA counts one create (admin_access "false", owner Pod)."""
    from scheduler.testing import device_class, make_claim, make_slice

    env = Metered()
    env.cluster.apply_node(make_node("n1").obj())
    env.cluster.apply_object(device_class("gpu.example.com", extended_resource_name="example.com/gpu"))
    slice_ = make_slice("n1-gpu", "gpu.example.com", "n1").device("gpu-0").device("gpu-1").obj()
    slice_["spec"]["devices"][0]["bindingConditions"] = ["Attached"]
    slice_["spec"]["devices"][0]["bindingFailureConditions"] = ["Failed"]
    slice_["spec"]["devices"][0]["bindsToNode"] = True
    env.cluster.apply_object(slice_)
    env.cluster.apply_object(make_claim("gpu").request("gpu", "gpu.example.com").obj())
    env.cluster.apply_pod(make_pod("with-conditions").claim("gpu").obj())
    env.cluster.apply_pod(make_pod("legacy").container(requests={"example.com/gpu": "1"}).obj())
    await env.settle()
    assert len(env.cluster.bindings) == 2
    labels = {"profile": PROFILE, "driver": "gpu.example.com", "status": "success"}
    assert env.value("scheduler_dra_bindingconditions_allocations_total", **labels) == 1
    assert env.value("scheduler_dra_bindingconditions_wait_duration_seconds_count", **labels) == 1
    assert env.value("scheduler_dra_bindingconditions_wait_duration_seconds_bucket", **labels, le="0.1") == 1
    assert env.value("scheduler_dra_bindingconditions_wait_duration_seconds_bucket", **labels, le="819.2") == 1
    creates = {"status": "success", "admin_access": "false", "owner_api_group": "", "owner_api_kind": "Pod"}
    assert env.value("dynamic_resource_allocation_resourceclaim_creates_total", **creates) == 1
