"""ConfigMapGate: a pyscheduler Permit plugin that holds pods until a ConfigMap says go.

A pod labelled `gate.example.com/configmap: <name>` is placed (its node is chosen and reserved), then waits
at Permit until the ConfigMap `<name>` in the pod's namespace has `data.go: "true"`; `data.go: "no"`
rejects it (it goes back to the queue, Unschedulable, with the ConfigMap's `data.reason` if any). Pods
without the label pass at once. A pod waits at most `timeoutSeconds` (default 300; pyscheduler caps it at
15 minutes like kube-scheduler); then it is rejected and retried later.

It shows the parts of the plugin API a Permit plugin needs: `object_kinds = ("ConfigMap",)` makes
pyscheduler watch ConfigMaps (grant it get/list/watch on configmaps, e.g. the chart's `rbac.extraRules`),
`handle.objects` reads them, `on_object_event` hears about changes, and `handle.iterate_over_waiting_pods()`
finds the parked pods to `allow` or `reject`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from scheduler.framework import (
    Code,
    CycleState,
    Handle,
    ObjectEventHandler,
    PermitPlugin,
    PodInfo,
    Status,
    unschedulable,
)

LABEL = "gate.example.com/configmap"


@dataclass(frozen=True)
class GateArgs:
    timeout_seconds: float = 300.0


class ConfigMapGate(PermitPlugin, ObjectEventHandler):
    """Permit WAIT until the pod's gate ConfigMap says go; allow/reject from ConfigMap events."""

    name: ClassVar[str] = "ConfigMapGate"
    object_kinds: ClassVar[tuple[str, ...]] = ("ConfigMap",)

    def __init__(self, args: GateArgs | None, handle: Handle) -> None:
        self.args = args or GateArgs()
        self.handle = handle

    @staticmethod
    def parse_args(raw: Mapping[str, Any] | None) -> GateArgs:
        raw = dict(raw or {})
        unknown = sorted(set(raw) - {"timeoutSeconds"})
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r}")
        timeout = raw.get("timeoutSeconds", 300)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError(f"timeoutSeconds: must be a number > 0, got {timeout!r}")
        return GateArgs(float(timeout))

    def _verdict(self, namespace: str, name: str) -> tuple[str, str]:
        """(go value, reason) of the gate ConfigMap; ("", "") when it does not exist."""
        cm = self.handle.objects.get("ConfigMap", namespace, name) or {}
        data = cm.get("data") or {}
        return str(data.get("go", "")), str(data.get("reason", ""))

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        gate = pod.labels.get(LABEL)
        if not gate:
            return None, 0.0
        go, reason = self._verdict(pod.namespace, gate)
        if go == "true":
            return None, 0.0
        if go == "no":
            return unschedulable(reason or f"configmap {gate} says no"), 0.0
        return Status(Code.WAIT), self.args.timeout_seconds

    def on_object_event(self, kind: str, event_type: str | None, obj: Mapping[str, Any]) -> None:
        """A gate ConfigMap changed: allow or reject the pods waiting on it."""
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace"), meta.get("name")
        for waiting in self.handle.iterate_over_waiting_pods():
            pod = waiting.pod
            if pod.namespace != namespace or pod.labels.get(LABEL) != name:
                continue
            go, reason = ("", "") if event_type == "DELETED" else self._verdict(pod.namespace, str(name))
            if go == "true":
                waiting.allow(self.name)
            elif go == "no":
                waiting.reject(self.name, reason or f"configmap {name} says no")
