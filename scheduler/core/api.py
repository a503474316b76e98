"""The writes the scheduler makes, as a protocol the cluster and in-memory adapters implement.

Keeping these behind an interface is what lets `pyscheduler simulate` and `pyscheduler run` share every
decision: only where the binding and the events go differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from scheduler.framework.types import PodInfo

REASON_UNSCHEDULABLE = "Unschedulable"  # v1.PodReasonUnschedulable
REASON_SCHEDULER_ERROR = "SchedulerError"  # v1.PodReasonSchedulerError
EVENT_FAILED_SCHEDULING = "FailedScheduling"
EVENT_SCHEDULED = "Scheduled"
ACTION_SCHEDULING = "Scheduling"
ACTION_BINDING = "Binding"
EVENT_PREEMPTED = "Preempted"
ACTION_PREEMPTING = "Preempting"


class BindError(Exception):
    """Binding failed; the pod is forgotten and retried with backoff."""


class AlreadyBoundError(BindError):
    """409: the pod is already bound (by us earlier or by someone else); it leaves the queue."""


class PodGoneError(BindError):
    """404: the pod was deleted meanwhile; it leaves the queue."""


class WriteError(Exception):
    """A write other than a bind failed (a PV or PVC update); the message is the API server's."""


class BindOutcomeUnknownError(BindError):
    """No answer came (connection lost, timed out) or the server failed, on the last attempt or an earlier one:
    the binding may have landed. The binding cycle keeps the pod's room on the node until the watch or a read
    (`ClusterAPI.bound_node`) tells where the pod is; only a pod the API shows unbound is retried."""


class BindLandedError(BindError):
    """409, yet the API shows this very pod (same uid) bound: an earlier bind of ours landed, its reply lost.

    Not a failure. The binding cycle records the pod as bound on `node_name`, where the API says it is, which
    may differ from the node this attempt chose (the lost bind came from an earlier attempt).
    """

    def __init__(self, message: str, node_name: str) -> None:
        super().__init__(message)
        self.node_name = node_name


class ClusterAPI(Protocol):
    """Writes to the cluster. Implementations must time out every call and never block the loop forever."""

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        """POST pods/binding; raise AlreadyBoundError, PodGoneError, BindLandedError or BindError."""
        ...

    async def bound_node(self, pod: PodInfo) -> str:
        """Read the pod now: the node this very pod (same uid) is bound to, "" when unbound. Raise PodGoneError
        when it is gone (or recreated under its name), BindOutcomeUnknownError when it cannot be read."""
        ...

    async def update_persistent_volume(self, pv: Mapping[str, Any]) -> dict[str, Any]:
        """PUT persistentvolumes/<name> (VolumeBinding pre-binds a PV to a claim); the stored object.

        Raise WriteError with the API server's message when the update is refused or times out.
        """
        ...

    async def update_persistent_volume_claim(self, pvc: Mapping[str, Any]) -> dict[str, Any]:
        """PUT persistentvolumeclaims/<name> (VolumeBinding sets the selected-node annotation); the stored object.

        Raise WriteError with the API server's message when the update is refused or times out.
        """
        ...

    # DynamicResources (scheduler.framework.interface.ClaimWriter): raise ConflictError on 409, NotFoundError
    # on 404, WriteError with the API server's message otherwise.

    async def get_resource_claim(self, namespace: str, name: str) -> dict[str, Any]: ...

    async def create_resource_claim(self, claim: Mapping[str, Any]) -> dict[str, Any]: ...

    async def update_resource_claim(self, claim: Mapping[str, Any]) -> dict[str, Any]: ...

    async def update_resource_claim_status(self, claim: Mapping[str, Any]) -> dict[str, Any]: ...

    async def unreserve_resource_claim(self, namespace: str, name: str, claim_uid: str, pod_uid: str) -> None: ...

    async def delete_resource_claim(self, namespace: str, name: str) -> None: ...

    async def patch_pod_extended_resource_claim_status(self, pod: PodInfo, status: Mapping[str, Any]) -> None: ...

    def record_pod_event(self, pod: PodInfo, event_type: str, reason: str, action: str, note: str) -> None:
        """Any other event about a pod (DynamicResources' BindingConditionsPending), asynchronously."""
        ...

    def record_scheduled(self, pod: PodInfo, node_name: str) -> None:
        """Emit the Normal `Scheduled` event ("Successfully assigned ns/name to node"), asynchronously."""
        ...

    def record_failure(
        self, pod: PodInfo, reason: str, message: str, *, nominated_node_name: str | None = None
    ) -> None:
        """Emit the Warning `FailedScheduling` event (truncated) and patch PodScheduled=False, asynchronously.

        `nominated_node_name` (when not None) goes into the same status patch: a node name sets
        status.nominatedNodeName (preemption), "" clears it.
        """
        ...

    # Preemption (scheduler.framework.preemption.PreemptionAPI)

    async def patch_disruption_target(self, victim: PodInfo, message: str) -> bool:
        """Add DisruptionTarget=True reason PreemptionByScheduler to the victim; False when it is gone."""
        ...

    async def delete_preempted_pod(self, victim: PodInfo) -> bool:
        """DELETE the victim (default grace period); False when it is already gone."""
        ...

    def record_preempted(self, victim: PodInfo, preemptor: PodInfo, note: str) -> None:
        """The victim's Normal `Preempted` event (action Preempting, related: the preemptor), asynchronously."""
        ...

    async def clear_nominated_node_name(self, pod: PodInfo) -> None:
        """Remove status.nominatedNodeName of a lower-priority pod nominated to a preemption's node."""
        ...

    def forget_pod(self, uid: str) -> None:
        """The pod was bound, deleted or finished: drop its queued failure report and all kept for it."""
        ...
