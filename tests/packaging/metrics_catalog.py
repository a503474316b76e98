"""The documented metrics: every metric that the Grafana dashboard and the PrometheusRule use.

`tests/packaging/test_chart.py` checks that the dashboard (helm/pyscheduler/dashboards/pyscheduler.json) and
the rendered PrometheusRule only use names listed here; a test of the running scheduler asserts that its
/metrics exposes every one of them (with `exposed_series` giving the series names to look for).

kube-scheduler's names and labels are kept (reference: pkg/scheduler/metrics/metrics.go), so dashboards
written for kube-scheduler work on pyscheduler too; pyscheduler's own metrics start with `pyscheduler_`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MetricType = Literal["counter", "gauge", "histogram"]


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric family: its name as exposed (counters end in `_total`), type and label names."""

    name: str
    type: MetricType
    labels: tuple[str, ...]
    help: str


METRICS: tuple[Metric, ...] = (
    Metric(
        "scheduler_schedule_attempts_total",
        "counter",
        ("result", "profile"),
        "Scheduling attempts by result (scheduled, unschedulable, error).",
    ),
    Metric(
        "scheduler_scheduling_attempt_duration_seconds",
        "histogram",
        ("result", "profile"),
        "Latency of one scheduling attempt (algorithm and binding start).",
    ),
    Metric(
        "scheduler_pod_scheduling_sli_duration_seconds",
        "histogram",
        ("attempts",),
        "From a pod's first entry into the queue until it is bound, by number of attempts.",
    ),
    Metric(
        "scheduler_framework_extension_point_duration_seconds",
        "histogram",
        ("extension_point", "status", "profile"),
        "Latency of running all plugins of one extension point.",
    ),
    Metric(
        "scheduler_pending_pods",
        "gauge",
        ("queue",),
        "Pending pods by queue (active, backoff, unschedulable, gated).",
    ),
    Metric(
        "scheduler_unschedulable_pods",
        "gauge",
        ("plugin", "profile"),
        "Unschedulable pods by the plugin that rejected them.",
    ),
    Metric(
        "scheduler_cache_size",
        "gauge",
        ("type",),
        "Nodes, pods and assumed pods in the scheduler cache.",
    ),
    Metric(
        "scheduler_preemption_attempts_total",
        "counter",
        (),
        "DefaultPreemption runs (a pod fit no node and went through PostFilter).",
    ),
    Metric(
        "scheduler_preemption_victims",
        "histogram",
        (),
        "Victims selected by one preemption (buckets 1, 2, 4 ... 64).",
    ),
    Metric(
        "scheduler_preemption_goroutines_execution_total",
        "counter",
        ("result",),
        "Asynchronous preemptions (the API calls that evict victims) by result: success or error.",
    ),
    Metric(
        "scheduler_preemption_goroutines_duration_seconds",
        "histogram",
        ("result",),
        "Duration of one asynchronous preemption, by result.",
    ),
    Metric(
        "rest_client_requests_total",
        "counter",
        ("code", "method", "host"),
        "API server requests by HTTP status code, method and host.",
    ),
    Metric(
        "pyscheduler_cache_drift_repaired_total",
        "counter",
        ("kind",),
        "Cache entries the periodic re-list found out of date and repaired, by object kind.",
    ),
    Metric(
        "pyscheduler_unsupported_pods_total",
        "counter",
        ("feature",),
        "Pods left Pending because they use a field pyscheduler does not evaluate yet (fail closed), by feature.",
    ),
    Metric(
        "pyscheduler_plugin_errors_total",
        "counter",
        ("plugin", "extension_point"),
        "Plugin calls that raised or returned something malformed, by plugin and extension point.",
    ),
    Metric(
        "pyscheduler_leader",
        "gauge",
        (),
        "1 while this instance is the active scheduler (holds the lease, or runs without leader election).",
    ),
    Metric(
        "pyscheduler_bind_errors_total",
        "counter",
        (),
        "Bindings that failed.",
    ),
    Metric(
        "pyscheduler_build_info",
        "gauge",
        ("version",),
        "Always 1; the labels tell the running version.",
    ),
    Metric(
        "process_cpu_seconds_total",
        "counter",
        (),
        "CPU time of the scheduler process.",
    ),
    Metric(
        "process_resident_memory_bytes",
        "gauge",
        (),
        "Resident memory of the scheduler process.",
    ),
)
"""Every metric family the dashboard and the alerts rely on."""

METRIC_NAMES: frozenset[str] = frozenset(m.name for m in METRICS)

PROMETHEUS_SERIES: frozenset[str] = frozenset({"up"})
"""Series that Prometheus itself records for every target (not exposed by /metrics)."""

_SUFFIXES: dict[MetricType, tuple[str, ...]] = {
    "counter": ("",),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count"),
}


def exposed_series(metric: Metric) -> tuple[str, ...]:
    """The sample names /metrics shows for `metric` (a histogram has `_bucket`, `_sum`, `_count`)."""
    return tuple(metric.name + suffix for suffix in _SUFFIXES[metric.type])


def series_names() -> frozenset[str]:
    """Every sample name that a query may use: the exposed series of METRICS plus PROMETHEUS_SERIES."""
    names: set[str] = set(PROMETHEUS_SERIES)
    for metric in METRICS:
        names.update(exposed_series(metric))
    return frozenset(names)
