"""In-memory cluster: the ClusterAPI for `pyscheduler simulate` and tests, with no API server.

Binding sets spec.nodeName on the stored pod and feeds the change back to the scheduler as the watch would,
so the same cache/queue code paths run as in a live cluster.

Storage behaves as in a cluster with kube-controller-manager's PV controller and a dynamic provisioner
(`VolumeController`): PVs become Available, Immediate claims bind to a matching PV (or get one provisioned),
a PV pre-bound by the scheduler gets its claim bound, and a claim with the `volume.kubernetes.io/selected-node`
annotation gets a PV provisioned with node affinity to that node's hostname. So a simulation of a pod with
volumes ends like the cluster would: the claims bound and the pod on its node.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.adapters.memory_claims import ClaimWrites, ResourceClaimController, default_claim_spec
from scheduler.admission import copy_topology_labels
from scheduler.core.api import (
    ACTION_BINDING,
    ACTION_PREEMPTING,
    ACTION_SCHEDULING,
    EVENT_FAILED_SCHEDULING,
    EVENT_PREEMPTED,
    EVENT_SCHEDULED,
    AlreadyBoundError,
    PodGoneError,
    WriteError,
)
from scheduler.core.event_handlers import MODIFIED
from scheduler.core.scheduler import Scheduler
from scheduler.framework.fit_error import truncate_message
from scheduler.framework.objects import (
    NAMESPACE,
    NAMESPACE_NAME_LABEL,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
    STORAGE_CLASS,
    object_key,
)
from scheduler.framework.preemption import DISRUPTION_TARGET, REASON_PREEMPTION_BY_SCHEDULER
from scheduler.framework.types import NodeRecord, PodInfo
from scheduler.storage import volume as st

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
    related: str = ""  # "namespace/name" of the related object (the preemptor of a Preempted event)


@dataclass(slots=True)
class PodCondition:
    type: str
    status: str
    reason: str
    message: str


@dataclass(slots=True)
class Eviction:
    """One victim preempted: by whom, from which node."""

    preemptor: str  # namespace/name
    victim: str  # namespace/name
    node: str


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
        self.evictions: list[Eviction] = []  # preemptions, in the order the victims were deleted
        self.scheduler: Scheduler | None = None
        self.volumes = VolumeController(self)
        # kube-controller-manager's resourceclaim controller and a DRA driver (templates make claims, devices
        # report their binding conditions met), and the ResourceClaim writes of DynamicResources.
        self.claims = ResourceClaimController(self)
        self._claim_writes = ClaimWrites(self)
        self._resource_version = 0
        # Set to False to act as a cluster whose provisioner never answers (tests of bindTimeoutSeconds).
        self.provisioning = True
        # True: VolumeBinding's PreBind checks its claims once after its writes instead of polling for
        # bindTimeoutSeconds. The controllers here act inside each write, so what is unbound then stays so
        # (no later object arrives while a simulation waits for the cycle); the pod gets the message the
        # timeout would give ("binding volumes: context deadline exceeded") without 600 s of waiting.
        self.settles_synchronously = False

    def attach(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    @staticmethod
    def _uid(obj: JSON) -> str:
        meta = obj.get("metadata") or {}
        return str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name')}")

    # ------------------------------------------------------------------ objects in

    def apply_node(self, obj: JSON, parsed: NodeRecord | None = None) -> None:
        """Create or replace a node; `parsed` is parse_node(obj) when the caller has it."""
        name = str(obj["metadata"]["name"])
        kind = MODIFIED if name in self.nodes else "ADDED"
        self.nodes[name] = obj
        if self.scheduler is not None:
            self.scheduler.events.on_node_event(kind, self.nodes[name], parsed)

    def apply_pod(self, obj: JSON, parsed: PodInfo | None = None) -> None:
        """Create or replace a pod; `parsed` is parse_pod(obj) when the caller has it (saves parsing twice)."""
        uid = parsed.uid if parsed is not None else self._uid(obj)  # (parse_pod's uid is _uid's)
        kind = MODIFIED if uid in self.pods else "ADDED"
        self.pods[uid] = obj
        if self.claims.pod_applied(obj):
            parsed = None  # its status now names the claims made for it
        if self.scheduler is not None:
            self.scheduler.events.on_pod_event(kind, self.pods[uid], parsed)

    def apply_object(self, obj: JSON) -> None:
        """Create or update an object of another kind (scheduler.framework.objects.KINDS).

        API-server defaulting the scheduler relies on is applied (a StorageClass's volumeBindingMode is
        Immediate unless set; a claim's requests are ExactCount of 1 unless set; a Namespace's
        `kubernetes.io/metadata.name` label), and the PV controller then
        reacts to storage objects.
        """
        kind = str(obj["kind"])
        if kind == STORAGE_CLASS and obj.get("volumeBindingMode") is None:
            obj["volumeBindingMode"] = "Immediate"
        elif kind == RESOURCE_CLAIM:
            default_claim_spec(obj.get("spec"))
        elif kind == RESOURCE_CLAIM_TEMPLATE and isinstance(obj.get("spec"), dict):
            default_claim_spec(obj["spec"].get("spec"))
        meta = obj.setdefault("metadata", {})
        if kind == NAMESPACE:  # set on every create and update, whatever the object says
            meta["labels"] = {**(meta.get("labels") or {}), NAMESPACE_NAME_LABEL: str(meta.get("name"))}
        if not meta.get("uid"):  # the API server gives every object a uid and a resourceVersion
            namespace, name = object_key(obj)
            meta["uid"] = f"{kind.lower()}-{namespace + '-' if namespace else ''}{name}"
        if not meta.get("resourceVersion"):
            meta["resourceVersion"] = self.next_resource_version()
        self._store(obj)
        if kind in (PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, STORAGE_CLASS):
            self.volumes.reconcile()
        if kind == RESOURCE_CLAIM_TEMPLATE:  # pods that waited for it get their claims now
            for pod in list(self.pods.values()):
                if self.claims.pod_applied(pod) and self.scheduler is not None:
                    self.scheduler.events.on_pod_event(MODIFIED, pod)

    def _store(self, obj: JSON) -> JSON:
        """Put an object of another kind into the store and tell the scheduler, as its watch would."""
        kind = str(obj["kind"])
        namespace, name = object_key(obj)
        key = (kind, namespace, name)
        event = MODIFIED if key in self.objects else "ADDED"
        self.objects[key] = obj
        self.volumes.mark(kind, namespace, name, obj)
        if self.scheduler is not None:
            self.scheduler.events.on_object_event(kind, event, obj)
        return obj

    def next_resource_version(self, current: str = "") -> str:
        """A resourceVersion newer than `current` and than every one this cluster handed out."""
        self._resource_version += 1
        if current.isdigit():
            self._resource_version = max(self._resource_version, int(current) + 1)
        return str(self._resource_version)

    def write_object(self, obj: JSON) -> JSON:
        """Store a changed copy of an object with a new resourceVersion (what a controller's update does)."""
        obj.setdefault("metadata", {})["resourceVersion"] = self.next_resource_version(st.resource_version(obj))
        return self._store(obj)

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        obj = self.objects.pop((kind, namespace, name), None)
        self.volumes.mark(kind, namespace, name, None)
        if obj is not None and self.scheduler is not None:
            self.scheduler.events.on_object_event(kind, "DELETED", obj)

    def delete_pod(self, uid: str) -> None:
        obj = self.pods.pop(uid, None)
        if obj is not None and self.scheduler is not None:
            self.scheduler.events.on_pod_event("DELETED", obj)
        if obj is not None:
            self.claims.pod_gone(obj)

    def delete_node(self, name: str) -> None:
        obj = self.nodes.pop(name, None)
        if obj is not None and self.scheduler is not None:
            self.scheduler.events.on_node_event("DELETED", obj)

    # ------------------------------------------------------------------ ClusterAPI

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        obj = self.pods.get(pod.uid)
        if obj is None:
            raise PodGoneError(f'pods "{pod.name}" not found')
        spec = obj.setdefault("spec", {})
        if spec.get("nodeName"):
            raise AlreadyBoundError(f'pod {pod.name} is already assigned to node "{spec["nodeName"]}"')
        spec["nodeName"] = node_name
        copy_topology_labels(obj, self.nodes.get(node_name))  # PodTopologyLabels admission on pods/binding
        status = obj.setdefault("status", {})
        status["phase"] = "Pending"
        # The v1.37 API server clears the nomination on binding (ClearingNominatedNodeNameAfterBinding).
        status.pop("nominatedNodeName", None)
        self.conditions[pod.uid] = PodCondition("PodScheduled", "True", "", "")  # as the binding subresource does
        self.bindings.append((pod.key, node_name))
        if self.scheduler is not None:
            self.scheduler.events.on_pod_event(MODIFIED, obj)

    async def bound_node(self, pod: PodInfo) -> str:
        obj = self.pods.get(pod.uid)
        if obj is None:
            raise PodGoneError(f'pods "{pod.name}" not found')
        return str((obj.get("spec") or {}).get("nodeName") or "")

    async def update_persistent_volume(self, pv: Mapping[str, Any]) -> JSON:
        return self._update(PERSISTENT_VOLUME, pv, "persistentvolumes")

    async def update_persistent_volume_claim(self, pvc: Mapping[str, Any]) -> JSON:
        return self._update(PERSISTENT_VOLUME_CLAIM, pvc, "persistentvolumeclaims")

    def _update(self, kind: str, obj: Mapping[str, Any], resource: str) -> JSON:
        """An API update: 404 when gone, 409 when obj is not the latest version; then the controllers act."""
        namespace, name = object_key(dict(obj))
        stored = self.objects.get((kind, namespace, name))
        if stored is None:
            raise WriteError(f'{resource} "{name}" not found')
        if st.resource_version(stored) != st.resource_version(obj):
            raise WriteError(
                f'Operation cannot be fulfilled on {resource} "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again"
            )
        new = copy.deepcopy(dict(obj))
        new.setdefault("kind", kind)
        written = self.write_object(new)
        self.volumes.reconcile()
        return copy.deepcopy(written)

    # ------------------------------------------------------------------ ClusterAPI: ResourceClaims

    async def get_resource_claim(self, namespace: str, name: str) -> JSON:
        return await self._claim_writes.get_resource_claim(namespace, name)

    async def create_resource_claim(self, claim: Mapping[str, Any]) -> JSON:
        return await self._claim_writes.create_resource_claim(claim)

    async def update_resource_claim(self, claim: Mapping[str, Any]) -> JSON:
        return await self._claim_writes.update_resource_claim(claim)

    async def update_resource_claim_status(self, claim: Mapping[str, Any]) -> JSON:
        return await self._claim_writes.update_resource_claim_status(claim)

    async def unreserve_resource_claim(self, namespace: str, name: str, claim_uid: str, pod_uid: str) -> None:
        await self._claim_writes.unreserve_resource_claim(namespace, name, claim_uid, pod_uid)

    async def delete_resource_claim(self, namespace: str, name: str) -> None:
        await self._claim_writes.delete_resource_claim(namespace, name)

    async def patch_pod_extended_resource_claim_status(self, pod: PodInfo, status: Mapping[str, Any]) -> None:
        await self._claim_writes.patch_pod_extended_resource_claim_status(pod, status)

    def record_pod_event(self, pod: PodInfo, event_type: str, reason: str, action: str, note: str) -> None:
        self.events.append(
            RecordedEvent(pod.namespace, pod.name, event_type, reason, action, note, pod.scheduler_name)
        )

    def record_scheduled(self, pod: PodInfo, node_name: str) -> None:
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node_name}"
        self.events.append(
            RecordedEvent(pod.namespace, pod.name, "Normal", EVENT_SCHEDULED, ACTION_BINDING, note, pod.scheduler_name)
        )

    def record_failure(
        self, pod: PodInfo, reason: str, message: str, *, nominated_node_name: str | None = None
    ) -> None:
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
        if nominated_node_name is not None:
            self._set_nominated(pod.uid, nominated_node_name)

    def _set_nominated(self, uid: str, node_name: str) -> None:
        obj = self.pods.get(uid)
        if obj is None:
            return
        status = obj.setdefault("status", {})
        if node_name:
            status["nominatedNodeName"] = node_name
        else:
            status.pop("nominatedNodeName", None)
        if self.scheduler is not None:
            self.scheduler.events.on_pod_event(MODIFIED, obj)

    # ------------------------------------------------------------------ ClusterAPI: preemption

    async def patch_disruption_target(self, victim: PodInfo, message: str) -> bool:
        obj = self.pods.get(victim.uid)
        if obj is None:
            return False
        conditions = obj.setdefault("status", {}).setdefault("conditions", [])
        conditions[:] = [c for c in conditions if c.get("type") != DISRUPTION_TARGET]
        conditions.append(
            {"type": DISRUPTION_TARGET, "status": "True", "reason": REASON_PREEMPTION_BY_SCHEDULER, "message": message}
        )
        if self.scheduler is not None:
            self.scheduler.events.on_pod_event(MODIFIED, obj)
        return True

    async def delete_preempted_pod(self, victim: PodInfo) -> bool:
        """Deleted at once: a simulation's kubelets finish terminating instantly."""
        if victim.uid not in self.pods:
            return False
        self.delete_pod(victim.uid)
        return True

    def record_preempted(self, victim: PodInfo, preemptor: PodInfo, note: str) -> None:
        self.events.append(
            RecordedEvent(
                victim.namespace,
                victim.name,
                "Normal",
                EVENT_PREEMPTED,
                ACTION_PREEMPTING,
                note,
                preemptor.scheduler_name,
                preemptor.key,
            )
        )
        self.evictions.append(Eviction(preemptor.key, victim.key, victim.node_name))

    async def clear_nominated_node_name(self, pod: PodInfo) -> None:
        self._set_nominated(pod.uid, "")

    def forget_pod(self, uid: str) -> None:
        """A deleted pod takes its condition with it (a bound one keeps the True its binding wrote)."""
        if uid not in self.pods:
            self.conditions.pop(uid, None)

    def node_of(self, uid: str) -> str | None:
        obj = self.pods.get(uid)
        if obj is None:
            return None
        return (obj.get("spec") or {}).get("nodeName") or None


class VolumeController:
    """What kube-controller-manager's PV controller and a dynamic provisioner do, in memory.

    Run after every storage change until nothing moves: unclaimed PVs become Available; a PV whose claimRef
    names a claim binds that claim (spec.volumeName, bind-completed, phase Bound on both); an unbound claim of
    an Immediate class binds to the smallest matching Available PV, or gets a PV provisioned unless the file
    recorded it `Pending` (a dump of a cluster where nothing provisioned it); a claim of a
    WaitForFirstConsumer class waits for the scheduler's selected-node annotation, then binds to a PV
    pre-bound to it or gets one provisioned with node affinity to the selected node's hostname.
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self.provisioned: list[str] = []
        # What changed since the last reconcile: the controller only looks at those objects (and, when a PV
        # or a class changes, at the claims still unbound), like the real controller's work queues.
        self._dirty: set[tuple[str, str, str]] = set()
        self._unbound: set[tuple[str, str, str]] = set()
        self._pvs: list[JSON] | None = None

    def mark(self, kind: str, namespace: str, name: str, obj: JSON | None) -> None:
        """An object of a storage kind was stored (or deleted, obj None)."""
        key = (kind, namespace, name)
        if kind == PERSISTENT_VOLUME:
            self._pvs = None
            self._dirty.add(key)
            self._dirty.update(self._unbound)
        elif kind == PERSISTENT_VOLUME_CLAIM:
            if obj is not None and not st.spec(obj).get("volumeName"):
                self._unbound.add(key)
            else:
                self._unbound.discard(key)
            self._dirty.add(key)
            volume = st.spec(obj).get("volumeName") if obj is not None else None
            if volume:
                self._dirty.add((PERSISTENT_VOLUME, "", str(volume)))
        elif kind == STORAGE_CLASS:
            self._dirty.update(self._unbound)

    def _volumes(self) -> list[JSON]:
        if self._pvs is None:
            self._pvs = [obj for (k, _, _), obj in sorted(self.cluster.objects.items()) if k == PERSISTENT_VOLUME]
        return self._pvs

    def reconcile(self) -> None:
        budget = 10 * (len(self._dirty) + len(self.cluster.objects)) + 100  # a bug must not spin forever
        while self._dirty and budget > 0:
            batch = sorted(self._dirty)  # a stable order keeps simulations reproducible
            self._dirty.clear()
            for key in batch:
                budget -= 1
                obj = self.cluster.objects.get(key)
                if obj is None:
                    continue
                if key[0] == PERSISTENT_VOLUME:
                    self._sync_volume(obj)
                elif key[0] == PERSISTENT_VOLUME_CLAIM and not st.spec(obj).get("volumeName"):
                    self._sync_unbound_claim(obj)

    def _sync_volume(self, pv: JSON) -> bool:
        ref = st.spec(pv).get("claimRef")
        if not isinstance(ref, Mapping):
            if st.phase_of(pv) != st.VOLUME_AVAILABLE:
                self._set_phase(pv, st.VOLUME_AVAILABLE)
                return True
            return False
        claim_key = (PERSISTENT_VOLUME_CLAIM, str(ref.get("namespace") or ""), str(ref.get("name") or ""))
        pvc = self.cluster.objects.get(claim_key)
        if pvc is None or (ref.get("uid") and ref.get("uid") != st.meta(pvc).get("uid")):
            return False
        volume_name = st.spec(pvc).get("volumeName")
        if volume_name and volume_name != st.name_of(pv):
            return False
        if volume_name == st.name_of(pv) and st.is_claim_fully_bound(pvc) and st.phase_of(pv) == "Bound":
            return False
        self._bind(pv, pvc)
        return True

    def _sync_unbound_claim(self, pvc: JSON) -> bool:
        cls_name = st.claim_class(pvc)
        cls = self.cluster.objects.get((STORAGE_CLASS, "", cls_name)) if cls_name else None
        delayed = cls is not None and cls.get("volumeBindingMode") == st.WAIT_FOR_FIRST_CONSUMER
        selected = st.annotations_of(pvc).get(st.ANN_SELECTED_NODE)
        if delayed and selected is None:
            return False  # waits for the first consumer
        # A PV whose fields cannot be read (a hand-written dump) binds to nothing; it must not stop the
        # matching, nor the provisioning, of every other claim.
        volumes = [pv for pv in self._volumes() if _readable(pv) and st.access_modes_satisfied(pvc, pv)]
        try:
            pv = st.find_matching_volume(pvc, volumes, None, {}, delayed)
        except st.StorageError:
            return False
        if pv is not None:
            self._bind(pv, pvc)
            return True
        provisioner = str(cls.get("provisioner") or "") if cls is not None else ""
        if not provisioner or provisioner == st.NOT_SUPPORTED_PROVISIONER or not self.cluster.provisioning:
            return False
        if not delayed and st.phase_of(pvc) == "Pending":
            # A dump's Immediate claim still Pending: in the cluster it came from, nothing provisioned it (no
            # provisioner runs for the class, or it failed), so none is invented here either; the pod stays
            # Pending with upstream's "pod has unbound immediate PersistentVolumeClaims".
            return False
        self._provision(pvc, provisioner, selected)
        return True

    def _provision(self, pvc: JSON, provisioner: str, selected: str | None) -> None:
        uid = str(st.meta(pvc).get("uid") or f"{st.namespace_of(pvc)}-{st.name_of(pvc)}")
        name = f"pvc-{uid}"
        pv_spec: JSON = {
            "capacity": {"storage": str((st.spec(pvc).get("resources") or {}).get("requests", {}).get("storage", "0"))},
            "accessModes": list(st.access_modes(pvc)) or ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": st.claim_class(pvc),
            "volumeMode": st.spec(pvc).get("volumeMode") or st.FILESYSTEM,
            "claimRef": st.claim_reference(pvc),
            "csi": {"driver": provisioner, "volumeHandle": name},
        }
        node = self.cluster.nodes.get(selected) if selected else None
        hostname = ((node or {}).get("metadata") or {}).get("labels", {}).get("kubernetes.io/hostname")
        if hostname:
            expression = {"key": "kubernetes.io/hostname", "operator": "In", "values": [hostname]}
            pv_spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}}
        pv: JSON = {
            "apiVersion": "v1",
            "kind": PERSISTENT_VOLUME,
            "metadata": {"name": name, "annotations": {st.ANN_DYNAMICALLY_PROVISIONED: provisioner}},
            "spec": pv_spec,
            "status": {"phase": "Pending"},
        }
        self.provisioned.append(name)
        self.cluster.write_object(pv)

    def _bind(self, pv: JSON, pvc: JSON) -> None:
        """bindVolumeToClaim + bindClaimToVolume: both objects Bound and pointing at each other."""
        new_pv = copy.deepcopy(pv)
        if not st.is_volume_bound_to_claim(pv, pvc) or not (st.spec(pv).get("claimRef") or {}).get("uid"):
            new_pv, _ = st.bind_volume_to_claim(pv, pvc)
        new_pv.setdefault("status", {})["phase"] = "Bound"
        self.cluster.write_object(new_pv)
        new_pvc = copy.deepcopy(pvc)
        new_pvc.setdefault("spec", {})["volumeName"] = st.name_of(pv)
        ann = new_pvc.setdefault("metadata", {}).setdefault("annotations", {})
        ann[st.ANN_BIND_COMPLETED] = "yes"
        if st.ANN_BOUND_BY_CONTROLLER in st.annotations_of(new_pv):
            ann[st.ANN_BOUND_BY_CONTROLLER] = "yes"
        status = new_pvc.setdefault("status", {})
        status["phase"] = "Bound"
        if st.spec(new_pv).get("capacity"):
            status["capacity"] = dict(st.spec(new_pv)["capacity"])
        status["accessModes"] = st.access_modes(new_pv)
        self.cluster.write_object(new_pvc)

    def _set_phase(self, pv: JSON, phase: str) -> None:
        new = copy.deepcopy(pv)
        new.setdefault("status", {})["phase"] = phase
        self.cluster.write_object(new)


def _readable(pv: JSON) -> bool:
    """Whether the matcher can read the PV's facts (capacity, claimRef, affinity...)."""
    try:
        st.volume_facts(pv)
    except st.StorageError:
        return False
    return True
