"""Prometheus metrics with kube-scheduler's names, labels and buckets (pkg/scheduler/metrics/metrics.go).

Counters and histograms are fed by the core through the Observer hooks. Gauges that describe state
(pending pods per queue, unschedulable pods per plugin, cache size) are computed from the queue and cache at
scrape time, so they can never drift from the truth the way incrementally maintained gauges have upstream.
Metrics only pyscheduler has are prefixed `pyscheduler_`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from scheduler.core.unsupported import UNSUPPORTED
from scheduler.framework.observer import CODE_NAMES, Observer
from scheduler.framework.status import Code

if TYPE_CHECKING:
    from scheduler.core.scheduler import Scheduler


# The kinds EventHandlers.resync reports (Cache.reconcile's drift categories plus removed pending pods). Their
# series exist from the start at 0, so "no drift" is a value on the dashboard rather than an empty panel.
DRIFT_KINDS = (
    "missing_nodes",
    "extra_nodes",
    "stale_nodes",
    "missing_pods",
    "extra_pods",
    "stale_pods",
    "pending_pods_removed",
)


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """prometheus.ExponentialBuckets: count buckets, the first at start, each factor times the previous."""
    return [start * factor**i for i in range(count)]


class SchedulerMetrics(Observer):
    """The Observer the cluster adapter installs: records into a Prometheus registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=registry,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=exponential_buckets(0.001, 2, 15),
            registry=registry,
        )
        self.algorithm_duration = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            buckets=exponential_buckets(0.001, 2, 15),
            registry=registry,
        )
        self.sli_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and "
            "might involve multiple scheduling attempts.",
            ["attempts"],
            buckets=exponential_buckets(0.01, 2, 20),
            registry=registry,
        )
        self.pod_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=exponential_buckets(1, 2, 5),
            registry=registry,
        )
        self.extension_point_duration = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            buckets=exponential_buckets(0.0001, 2, 12),
            registry=registry,
        )
        self.plugin_execution_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            buckets=exponential_buckets(0.00001, 1.5, 20),
            registry=registry,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            registry=registry,
        )
        self.preemption_victims_histogram = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims for preemption initiated by a single pod",
            buckets=exponential_buckets(1, 2, 7),
            registry=registry,
        )
        # Registered because SchedulerAsyncPreemption is on by default in v1.37 (metrics.Register).
        self.preemption_goroutines_duration = Histogram(
            "scheduler_preemption_goroutines_duration_seconds",
            "Duration in seconds for running goroutines for the preemption.",
            ["result"],
            buckets=exponential_buckets(0.01, 2, 20),
            registry=registry,
        )
        self.preemption_goroutines_total = Counter(
            "scheduler_preemption_goroutines_execution",
            "Number of preemption goroutines executed.",
            ["result"],
            registry=registry,
        )
        # VolumeBinding's (volumebinding/metrics, registered by the plugin): stage errors by operation
        # (predicate, assume, bind); the binder-cache counter is registered but never incremented upstream.
        self.volume_stage_errors = Counter(
            "scheduler_volume_scheduling_stage_error",
            "Volume scheduling stage error count",
            ["operation"],
            registry=registry,
        )
        self.volume_binder_cache_requests = Counter(
            "scheduler_volume_binder_cache_requests",
            "Total number for request volume binding cache",
            ["operation"],
            registry=registry,
        )
        # DynamicResources' (registered with DRAExtendedResource and DRADeviceBindingConditions, both on).
        self.resource_claim_creates = Counter(
            "dynamic_resource_allocation_resourceclaim_creates",
            "Number of ResourceClaims creation requests, categorized by creation status, admin access, and "
            "owning API group and kind (either Pod or scheduling.k8s.io/PodGroup)",
            ["status", "admin_access", "owner_api_group", "owner_api_kind"],
            registry=registry,
        )
        self.dra_binding_conditions_allocations = Counter(
            "scheduler_dra_bindingconditions_allocations",
            "Number of allocations using devices with BindingConditions, counted per driver per scheduling attempt",
            ["profile", "driver", "status"],
            registry=registry,
        )
        self.dra_binding_conditions_wait_seconds = Histogram(
            "scheduler_dra_bindingconditions_wait_duration_seconds",
            "Time in seconds spent waiting for BindingConditions to be satisfied during PreBind.",
            ["profile", "driver", "status"],
            buckets=exponential_buckets(0.1, 2, 14),
            registry=registry,
        )
        self.rest_requests = Counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=registry,
        )
        self.rest_duration = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=[0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0],
            registry=registry,
        )
        self.drift = Counter(
            "pyscheduler_cache_drift_repaired",
            "Objects whose cached state differed from a fresh LIST and were repaired, by kind.",
            ["kind"],
            registry=registry,
        )
        for kind in DRIFT_KINDS:
            self.drift.labels(kind)
        self.bind_errors = Counter(
            "pyscheduler_bind_errors", "Bindings that failed (the pod was forgotten and retried).", registry=registry
        )
        self.unsupported = Counter(
            "pyscheduler_unsupported_pods",
            "Pods left Pending because they use a field pyscheduler does not evaluate yet (fail closed), by feature.",
            ["feature"],
            registry=registry,
        )
        for entry in UNSUPPORTED:
            self.unsupported.labels(entry.feature)
        self.plugin_errors = Counter(
            "pyscheduler_plugin_errors",
            "Plugin calls that raised or returned something malformed (that pod's attempt failed), by plugin and "
            "extension point.",
            ["plugin", "extension_point"],
            registry=registry,
        )
        self.plugin_long_calls = Counter(
            "pyscheduler_plugin_long_calls",
            "Plugin calls found blocking the scheduling loop for over a second, by plugin and extension point "
            "(each one stalls every pod behind it; leader election and the probes run on their own loop).",
            ["plugin", "extension_point"],
            registry=registry,
        )
        self.leader = Gauge("pyscheduler_leader", "1 while this replica holds the leader lease.", registry=registry)
        self.build = Info("pyscheduler_build", "Build information.", registry=registry)
        self.build.info({"version": "0.1.0"})

    # ------------------------------------------------------------------ Observer

    def _child(self, metric: Any, *values: str) -> Any:
        """metric.labels(*values), memoized: prometheus_client validates and locks on every labels() call, and
        the hot paths (extension points, attempts, REST calls) ask for the same few children per pod."""
        key = (id(metric), values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def extension_point(self, point: str, code: Code, profile: str, seconds: float) -> None:
        self._child(self.extension_point_duration, point, CODE_NAMES[code], profile).observe(seconds)

    def plugin_execution(self, plugin: str, point: str, code: Code, seconds: float) -> None:
        self._child(self.plugin_execution_duration, plugin, point, CODE_NAMES[code]).observe(seconds)

    def algorithm(self, seconds: float) -> None:
        self.algorithm_duration.observe(seconds)

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        self._child(self.schedule_attempts, result, profile).inc()
        self._child(self.attempt_duration, result, profile).observe(seconds)

    def pod_scheduled(self, attempts: int, sli_seconds: float | None) -> None:
        self.pod_attempts.observe(attempts)
        if sli_seconds is not None:
            label = "15+" if attempts >= 15 else str(attempts)
            self._child(self.sli_duration, label).observe(sli_seconds)

    def preemption_attempt(self) -> None:
        self.preemption_attempts.inc()

    def preemption_victims(self, count: int) -> None:
        self.preemption_victims_histogram.observe(count)

    def preemption_goroutine(self, result: str, seconds: float) -> None:
        self.preemption_goroutines_duration.labels(result).observe(seconds)
        self.preemption_goroutines_total.labels(result).inc()

    def volume_scheduling_stage_error(self, operation: str) -> None:
        self.volume_stage_errors.labels(operation).inc()

    def resource_claim_create(self, status: str) -> None:
        self.resource_claim_creates.labels(status, "false", "", "Pod").inc()

    def dra_binding_conditions_wait(self, profile: str, driver: str, status: str, seconds: float) -> None:
        self.dra_binding_conditions_wait_seconds.labels(profile, driver, status).observe(seconds)

    def dra_binding_conditions_allocation(self, profile: str, driver: str, status: str) -> None:
        self.dra_binding_conditions_allocations.labels(profile, driver, status).inc()

    def binding(self, seconds: float, ok: bool) -> None:
        if not ok:
            self.bind_errors.inc()

    def cache_drift(self, kind: str, count: int) -> None:
        self.drift.labels(kind).inc(count)

    def unsupported_pod(self, feature: str) -> None:
        self.unsupported.labels(feature).inc()

    def plugin_error(self, plugin: str, point: str) -> None:
        self.plugin_errors.labels(plugin, point).inc()

    def plugin_long_call(self, plugin: str, point: str) -> None:
        """From the stall monitor's thread (prometheus_client's counters are thread-safe)."""
        self.plugin_long_calls.labels(plugin, point).inc()

    def rest_request(self, method: str, host: str, code: str, seconds: float) -> None:
        """rest_client_requests_total and rest_client_request_duration_seconds for one API call."""
        self._child(self.rest_requests, code, method, host).inc()
        self._child(self.rest_duration, method, host).observe(seconds)


class SchedulerStateCollector(Collector):
    """Scrape-time gauges read from the live queue and cache."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def collect(self) -> Iterator[Metric]:
        s = self._scheduler
        pending = GaugeMetricFamily(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
            "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that "
            "the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that "
            "the scheduler never attempted to schedule because they are gated.",
            labels=["queue"],
        )
        counts_by_queue = s.queue.pending()
        # Pods the fail-closed guard keeps out of the queue are pending and unschedulable all the same.
        counts_by_queue["unschedulable"] = counts_by_queue.get("unschedulable", 0) + len(s.unsupported)
        for queue in ("active", "backoff", "unschedulable", "gated"):
            pending.add_metric([queue], counts_by_queue.get(queue, 0))
        yield pending

        unschedulable = GaugeMetricFamily(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for "
            "all plugins that caused it to not schedule and so this metric have meaning only when broken down "
            "by plugin.",
            labels=["plugin", "profile"],
        )
        counts: dict[tuple[str, str], int] = {}
        for qpi in s.queue.unschedulable_pods():
            for plugin in qpi.rejectors():
                key = (plugin, qpi.pod.scheduler_name)
                counts[key] = counts.get(key, 0) + 1
        for (plugin, profile), n in sorted(counts.items()):
            unschedulable.add_metric([plugin, profile], n)
        yield unschedulable

        cache = GaugeMetricFamily(
            "scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            labels=["type"],
        )
        cache.add_metric(["nodes"], s.cache.node_count())
        cache.add_metric(["pods"], s.cache.pod_count())
        cache.add_metric(["assumed_pods"], s.cache.assumed_count())
        yield cache

        incoming = CounterMetricFamily(
            "scheduler_queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            labels=["queue", "event"],
        )
        for (queue, event), n in sorted(s.queue.incoming.items()):
            incoming.add_metric([queue, event], n)
        yield incoming
