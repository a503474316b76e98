"""In-memory cluster: the ClusterAPI for `pyscheduler simulate` and tests, with no API server.

Binding sets spec.nodeName on the stored pod and feeds the change back to the scheduler as the watch would,
so the same cache/queue code paths run as in a live cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.core.api import (
    ACTION_BINDING,
    ACTION_SCHEDULING,
    EVENT_FAILED_SCHEDULING,
    EVENT_SCHEDULED,
    AlreadyBoundError,
    PodGoneError,
)
from scheduler.core.scheduler import MODIFIED, Scheduler
from scheduler.framework.fit_error import truncate_message
from scheduler.framework.objects import object_key
from scheduler.framework.types import PodInfo

JSON = dict[str, Any]


@dataclass(slots=True)
class RecordedEvent:
    """An event as it would be written to events.k8s.io/v1."""

    namespace: str
    name: str
    type: str
    reason: str
    action: str
    note: str
    reporting_controller: str


@dataclass(slots=True)
class PodCondition:
    type: str
    status: str
    reason: str
    message: str


class MemoryCluster:
    """Pods and nodes held in dicts; implements ClusterAPI for the scheduler it is attached to.

    `apply_*` take ownership of the dicts they are given (no copy: binding writes spec.nodeName into them).
    """

    def __init__(self) -> None:
        self.pods: dict[str, JSON] = {}
        self.nodes: dict[str, JSON] = {}
        self.objects: dict[tuple[str, str, str], JSON] = {}  # (kind, namespace, name) -> other objects
        self.events: list[RecordedEvent] = []
        self.conditions: dict[str, PodCondition] = {}
        self.bindings: list[tuple[str, str]] = []
        self.scheduler: Scheduler | None = None

    def attach(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    @staticmethod
    def _uid(obj: JSON) -> str:
        meta = obj.get("metadata") or {}
        return str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name')}")

    # ------------------------------------------------------------------ objects in

    def apply_node(self, obj: JSON) -> None:
        name = str(obj["metadata"]["name"])
        kind = MODIFIED if name in self.nodes else "ADDED"
        self.nodes[name] = obj
        if self.scheduler is not None:
            self.scheduler.on_node_event(kind, self.nodes[name])

    def apply_pod(self, obj: JSON) -> None:
        uid = self._uid(obj)
        kind = MODIFIED if uid in self.pods else "ADDED"
        self.pods[uid] = obj
        if self.scheduler is not None:
            self.scheduler.on_pod_event(kind, self.pods[uid])

    def apply_object(self, obj: JSON) -> None:
        """Create or update an object of another kind (scheduler.framework.objects.KINDS)."""
        kind = str(obj["kind"])
        namespace, name = object_key(obj)
        key = (kind, namespace, name)
        event = MODIFIED if key in self.objects else "ADDED"
        self.objects[key] = obj
        if self.scheduler is not None:
            self.scheduler.on_object_event(kind, event, obj)

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        obj = self.objects.pop((kind, namespace, name), None)
        if obj is not None and self.scheduler is not None:
            self.scheduler.on_object_event(kind, "DELETED", obj)

    def delete_pod(self, uid: str) -> None:
        obj = self.pods.pop(uid, None)
        if obj is not None and self.scheduler is not None:
            self.scheduler.on_pod_event("DELETED", obj)

    def delete_node(self, name: str) -> None:
        obj = self.nodes.pop(name, None)
        if obj is not None and self.scheduler is not None:
            self.scheduler.on_node_event("DELETED", obj)

    # ------------------------------------------------------------------ ClusterAPI

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        obj = self.pods.get(pod.uid)
        if obj is None:
            raise PodGoneError(f'pods "{pod.name}" not found')
        spec = obj.setdefault("spec", {})
        if spec.get("nodeName"):
            raise AlreadyBoundError(f'pod {pod.name} is already assigned to node "{spec["nodeName"]}"')
        spec["nodeName"] = node_name
        obj.setdefault("status", {})["phase"] = "Pending"
        self.conditions[pod.uid] = PodCondition("PodScheduled", "True", "", "")  # as the binding subresource does
        self.bindings.append((pod.key, node_name))
        if self.scheduler is not None:
            self.scheduler.on_pod_event(MODIFIED, obj)

    def record_scheduled(self, pod: PodInfo, node_name: str) -> None:
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node_name}"
        self.events.append(
            RecordedEvent(pod.namespace, pod.name, "Normal", EVENT_SCHEDULED, ACTION_BINDING, note, pod.scheduler_name)
        )

    def record_failure(self, pod: PodInfo, reason: str, message: str) -> None:
        self.events.append(
            RecordedEvent(
                pod.namespace,
                pod.name,
                "Warning",
                EVENT_FAILED_SCHEDULING,
                ACTION_SCHEDULING,
                truncate_message(message),
                pod.scheduler_name,
            )
        )
        self.conditions[pod.uid] = PodCondition("PodScheduled", "False", reason, message)

    def forget_pod(self, uid: str) -> None:
        """A deleted pod takes its condition with it (a bound one keeps the True its binding wrote)."""
        if uid not in self.pods:
            self.conditions.pop(uid, None)

    def node_of(self, uid: str) -> str | None:
        obj = self.pods.get(uid)
        if obj is None:
            return None
        return (obj.get("spec") or {}).get("nodeName") or None
