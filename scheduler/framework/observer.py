"""Hooks the core calls to report what it did; the cluster adapter turns them into Prometheus metrics.

The core must not import prometheus_client (layering contract), so it talks to this small interface whose
default does nothing.
"""

from __future__ import annotations

from scheduler.framework.status import Code

CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


class Observer:
    """No-op observer; subclass to record metrics. Every method must be cheap and must not raise."""

    def extension_point(self, point: str, code: Code, profile: str, seconds: float) -> None:
        """scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}."""

    def plugin_execution(self, plugin: str, point: str, code: Code, seconds: float) -> None:
        """scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}."""

    def algorithm(self, seconds: float) -> None:
        """scheduler_scheduling_algorithm_duration_seconds."""

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        """scheduler_schedule_attempts_total and scheduler_scheduling_attempt_duration_seconds."""

    def pod_scheduled(self, attempts: int, sli_seconds: float | None) -> None:
        """scheduler_pod_scheduling_attempts and scheduler_pod_scheduling_sli_duration_seconds."""

    def binding(self, seconds: float, ok: bool) -> None:
        """Binding latency and outcome (extension point Bind is reported separately)."""

    def cache_drift(self, kind: str, count: int) -> None:
        """pyscheduler_cache_drift_repaired_total{kind}: objects the relist reconciliation repaired."""

    def unsupported_pod(self, feature: str) -> None:
        """pyscheduler_unsupported_pods_total{feature}: pods left Pending by the fail-closed guard."""

    def plugin_error(self, plugin: str, point: str) -> None:
        """pyscheduler_plugin_errors_total{plugin,extension_point}: a plugin raised or returned garbage."""

    def volume_scheduling_stage_error(self, operation: str) -> None:
        """scheduler_volume_scheduling_stage_error_total{operation}: VolumeBinding's binder failed to find
        volumes for a node ("predicate"), to assume them ("assume") or to bind them ("bind")."""

    def preemption_attempt(self) -> None:
        """scheduler_preemption_attempts_total: one PostFilter run of DefaultPreemption."""

    def preemption_victims(self, count: int) -> None:
        """scheduler_preemption_victims: victims selected by one preemption."""

    def preemption_goroutine(self, result: str, seconds: float) -> None:
        """scheduler_preemption_goroutines_duration_seconds / _execution_total{result}: one asynchronous
        preemption (result "success" or "error")."""

    def resource_claim_create(self, status: str) -> None:
        """dynamic_resource_allocation_resourceclaim_creates_total{status,admin_access,owner_api_group,
        owner_api_kind}: DynamicResources created the claim for a pod's extended resources ("success" or
        "failure"; admin access "false", owner Pod)."""

    def dra_binding_conditions_wait(self, profile: str, driver: str, status: str, seconds: float) -> None:
        """scheduler_dra_bindingconditions_wait_duration_seconds{profile,driver,status}: PreBind's wait for
        binding conditions, once per allocated device."""

    def dra_binding_conditions_allocation(self, profile: str, driver: str, status: str) -> None:
        """scheduler_dra_bindingconditions_allocations_total{profile,driver,status}: a device with binding
        conditions in one scheduling attempt."""
