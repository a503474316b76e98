"""Cluster objects besides nodes and pods that plugins read: kinds, where the API serves them, the lister.

Plugins see these objects through `Handle.objects` (an `ObjectLister`), exactly as upstream plugins read
informer listers (Namespaces for InterPodAffinity's namespaceSelector, Services and workload controllers
for PodTopologySpread's default constraints, the storage objects for the volume plugins, PDBs for
preemption). Objects stay raw API dicts: there are few of them, and each plugin parses what it needs.

A plugin says which kinds it reads with the `object_kinds` class attribute; the cluster adapter watches the
union over the enabled plugins (nothing else, so RBAC stays least privilege), and `simulate` accepts them in
its input file. A change of one of these objects is a cluster event named after its kind (e.g.
`ClusterEvent("PersistentVolumeClaim", ADD)`), so a pod a plugin rejected is retried when it may help.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

JSON = dict[str, Any]
ObjectKeys = list[tuple[str, str]]

NAMESPACE: Final = "Namespace"
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
"""The label kube-apiserver puts on every Namespace: its name (selectors of namespaces match it)."""
SYSTEM_NAMESPACES: Final = ("default", "kube-system", "kube-public", "kube-node-lease")
"""Namespaces every cluster has (kube-apiserver creates them at start)."""
SERVICE: Final = "Service"
REPLICATION_CONTROLLER: Final = "ReplicationController"
REPLICA_SET: Final = "ReplicaSet"
STATEFUL_SET: Final = "StatefulSet"
PERSISTENT_VOLUME_CLAIM: Final = "PersistentVolumeClaim"
PERSISTENT_VOLUME: Final = "PersistentVolume"
STORAGE_CLASS: Final = "StorageClass"
CSI_NODE: Final = "CSINode"
CSI_DRIVER: Final = "CSIDriver"
CSI_STORAGE_CAPACITY: Final = "CSIStorageCapacity"
VOLUME_ATTACHMENT: Final = "VolumeAttachment"
POD_DISRUPTION_BUDGET: Final = "PodDisruptionBudget"
PRIORITY_CLASS: Final = "PriorityClass"
CONFIG_MAP: Final = "ConfigMap"
RESOURCE_CLAIM: Final = "ResourceClaim"
RESOURCE_CLAIM_TEMPLATE: Final = "ResourceClaimTemplate"
RESOURCE_SLICE: Final = "ResourceSlice"
DEVICE_CLASS: Final = "DeviceClass"
DEVICE_TAINT_RULE: Final = "DeviceTaintRule"


@dataclass(frozen=True, slots=True)
class KindInfo:
    """Where the API server serves a kind: group ("" for core), version, plural resource, namespaced."""

    group: str
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def list_path(self) -> str:
        """The cluster-wide collection path (all namespaces)."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{prefix}/{self.plural}"


KINDS: Final[dict[str, KindInfo]] = {
    NAMESPACE: KindInfo("", "v1", "namespaces", False),
    SERVICE: KindInfo("", "v1", "services", True),
    REPLICATION_CONTROLLER: KindInfo("", "v1", "replicationcontrollers", True),
    REPLICA_SET: KindInfo("apps", "v1", "replicasets", True),
    STATEFUL_SET: KindInfo("apps", "v1", "statefulsets", True),
    PERSISTENT_VOLUME_CLAIM: KindInfo("", "v1", "persistentvolumeclaims", True),
    PERSISTENT_VOLUME: KindInfo("", "v1", "persistentvolumes", False),
    STORAGE_CLASS: KindInfo("storage.k8s.io", "v1", "storageclasses", False),
    CSI_NODE: KindInfo("storage.k8s.io", "v1", "csinodes", False),
    CSI_DRIVER: KindInfo("storage.k8s.io", "v1", "csidrivers", False),
    CSI_STORAGE_CAPACITY: KindInfo("storage.k8s.io", "v1", "csistoragecapacities", True),
    VOLUME_ATTACHMENT: KindInfo("storage.k8s.io", "v1", "volumeattachments", False),
    POD_DISRUPTION_BUDGET: KindInfo("policy", "v1", "poddisruptionbudgets", True),
    PRIORITY_CLASS: KindInfo("scheduling.k8s.io", "v1", "priorityclasses", False),
    CONFIG_MAP: KindInfo("", "v1", "configmaps", True),
    # Dynamic resource allocation (resource.k8s.io/v1). Templates are read by `simulate` only (it plays the
    # resourceclaim controller); the scheduler itself never reads them, as upstream's.
    RESOURCE_CLAIM: KindInfo("resource.k8s.io", "v1", "resourceclaims", True),
    RESOURCE_CLAIM_TEMPLATE: KindInfo("resource.k8s.io", "v1", "resourceclaimtemplates", True),
    RESOURCE_SLICE: KindInfo("resource.k8s.io", "v1", "resourceslices", False),
    DEVICE_CLASS: KindInfo("resource.k8s.io", "v1", "deviceclasses", False),
    DEVICE_TAINT_RULE: KindInfo("resource.k8s.io", "v1", "devicetaintrules", False),
}
"""Every kind a plugin may read through the lister (out-of-tree plugins may add theirs: register_kind)."""


def register_kind(kind: str, info: KindInfo) -> None:
    """Make another kind (e.g. a custom resource an out-of-tree plugin reads) watchable and listable.

    Call it at import time of the plugin's module, before the scheduler starts. Re-registering a kind with
    the same info is a no-op; with different info it is an error.
    """
    known = KINDS.get(kind)
    if known is not None and known != info:
        raise ValueError(f"kind {kind!r} is already registered as {known}")
    KINDS[kind] = info


def object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of an object; cluster-scoped objects have namespace ""."""
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class ObjectLister(Protocol):
    """Read access to the cluster objects of the kinds in KINDS (raw dicts; never mutate them)."""

    def get(self, kind: str, namespace: str, name: str) -> JSON | None:
        """The object, or None. Cluster-scoped kinds take namespace ""."""
        ...

    def list(self, kind: str, namespace: str | None = None) -> list[JSON]:
        """Every object of the kind (in one namespace when given), in a stable order."""
        ...

    def generation(self, kind: str) -> int:
        """A counter that grows whenever an object of the kind changes (for plugins that cache derived data)."""
        ...

    def changed_since(self, kind: str, generation: int) -> ObjectKeys | None:
        """(namespace, name) of the objects of the kind that changed after `generation` (oldest first, possibly
        repeated), or None when that is no longer known (the caller then rebuilds from `list`)."""
        ...
