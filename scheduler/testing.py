"""The public test kit: fluent builders for API objects and `SchedulerHarness`, the whole scheduler in memory.

Builders read like sentences, as upstream's st.MakePod() does:
``make_pod("web").req(cpu="500m").host_port(8080).toleration("gpu", effect="NoSchedule").obj()``.
``obj()`` returns the raw API dict; ``info()`` returns the parsed core record. `SchedulerHarness` runs them
through the real scheduler with the plugins you give it, on simulate's path (kopf.testing is the model):
pyscheduler's own tests use it, and so can a plugin's (`examples/plugins/*/tests/`).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from scheduler.adapters.memory import MemoryCluster, PodCondition, RecordedEvent
from scheduler.admission import admit_pod, was_created
from scheduler.backend.cache.objects import ClusterObjects
from scheduler.config.load import load_config
from scheduler.config.types import SchedulerConfiguration
from scheduler.core.clock import FakeClock
from scheduler.core.profile import build_scheduler
from scheduler.core.scheduler import Scheduler
from scheduler.framework.interface import Binder, ClaimWriter, Plugin, VolumeWriter, WaitingPodView
from scheduler.framework.objects import KINDS, ObjectLister, object_key
from scheduler.framework.observer import Observer
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import (
    REGION_LABEL,
    ZONE_LABEL,
    NodeInfo,
    NodeRecord,
    PodInfo,
    parse_node,
    parse_pod,
)
from scheduler.plugins.registry import PluginRegistry, PluginSpec
from scheduler.simulate import admit_priorities

if TYPE_CHECKING:
    from scheduler.core.explain import Explanation

_uid = itertools.count(1)

JSON = dict[str, Any]


def _resources(cpu: str | None, memory: str | None, extra: dict[str, str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    if cpu is not None:
        out["cpu"] = cpu
    if memory is not None:
        out["memory"] = memory
    out.update(extra or {})
    return out


class PodBuilder:
    """Builds a v1 Pod dict step by step."""

    def __init__(self, name: str, namespace: str = "default") -> None:
        self._obj: JSON = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}-{next(_uid)}"},
            "spec": {"containers": [], "schedulerName": "pyscheduler"},
            "status": {"phase": "Pending"},
        }

    @property
    def _spec(self) -> JSON:
        spec: JSON = self._obj["spec"]
        return spec

    def _container(self) -> JSON:
        containers: list[JSON] = self._spec["containers"]
        if not containers:
            containers.append({"name": "c0", "image": "registry.k8s.io/pause:3.10"})
        return containers[-1]

    def uid(self, uid: str) -> PodBuilder:
        self._obj["metadata"]["uid"] = uid
        return self

    def labels(self, **labels: str) -> PodBuilder:
        self._obj["metadata"].setdefault("labels", {}).update(labels)
        return self

    def label(self, key: str, value: str) -> PodBuilder:
        self._obj["metadata"].setdefault("labels", {})[key] = value
        return self

    def scheduler_name(self, name: str) -> PodBuilder:
        self._spec["schedulerName"] = name
        return self

    def node(self, node_name: str) -> PodBuilder:
        self._spec["nodeName"] = node_name
        self._obj["status"]["phase"] = "Running"
        return self

    def nominated_node(self, node_name: str) -> PodBuilder:
        self._obj["status"]["nominatedNodeName"] = node_name
        return self

    def priority(self, value: int) -> PodBuilder:
        self._spec["priority"] = value
        return self

    def start_time(self, timestamp: str) -> PodBuilder:
        """status.startTime (RFC 3339), as the kubelet reports it; preemption ranks victims by it."""
        self._obj["status"]["startTime"] = timestamp
        return self

    def preemption_policy(self, policy: str) -> PodBuilder:
        self._spec["preemptionPolicy"] = policy
        return self

    def condition(self, type_: str, status: str, reason: str = "", message: str = "") -> PodBuilder:
        """Add a status condition (e.g. DisruptionTarget True PreemptionByScheduler)."""
        cond: JSON = {"type": type_, "status": status}
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        self._obj["status"].setdefault("conditions", []).append(cond)
        return self

    def terminating(self) -> PodBuilder:
        self._obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return self

    def phase(self, phase: str) -> PodBuilder:
        self._obj["status"]["phase"] = phase
        return self

    def container(
        self,
        name: str | None = None,
        image: str = "registry.k8s.io/pause:3.10",
        requests: dict[str, str] | None = None,
        limits: dict[str, str] | None = None,
    ) -> PodBuilder:
        """Append a container; requests/limits are ResourceLists."""
        containers: list[JSON] = self._spec["containers"]
        c: JSON = {"name": name or f"c{len(containers)}", "image": image}
        res: JSON = {}
        if requests:
            res["requests"] = dict(requests)
        if limits:
            res["limits"] = dict(limits)
        if res:
            c["resources"] = res
        containers.append(c)
        return self

    def req(self, cpu: str | None = None, memory: str | None = None, **extra: str) -> PodBuilder:
        """Add a container requesting these amounts (use `extended` for names with a slash)."""
        return self.container(requests=_resources(cpu, memory, extra))

    def extended(self, name: str, quantity: str) -> PodBuilder:
        """Request an extended resource (e.g. nvidia.com/gpu) on the last container."""
        c = self._container()
        c.setdefault("resources", {}).setdefault("requests", {})[name] = quantity
        return self

    def init_container(
        self,
        requests: dict[str, str] | None = None,
        restart_policy: str | None = None,
        image: str = "registry.k8s.io/busybox:1.36",
    ) -> PodBuilder:
        """Append an init container; restart_policy="Always" makes it a sidecar."""
        inits: list[JSON] = self._spec.setdefault("initContainers", [])
        c: JSON = {"name": f"init{len(inits)}", "image": image}
        if requests:
            c["resources"] = {"requests": dict(requests)}
        if restart_policy:
            c["restartPolicy"] = restart_policy
        inits.append(c)
        return self

    def overhead(self, cpu: str | None = None, memory: str | None = None) -> PodBuilder:
        self._spec["overhead"] = _resources(cpu, memory, None)
        return self

    def host_port(
        self, port: int, protocol: str = "", host_ip: str = "", container_port: int | None = None
    ) -> PodBuilder:
        """Declare a container port bound to a host port on the last container."""
        entry: JSON = {"containerPort": container_port if container_port is not None else port}
        if port:
            entry["hostPort"] = port
        if protocol:
            entry["protocol"] = protocol
        if host_ip:
            entry["hostIP"] = host_ip
        self._container().setdefault("ports", []).append(entry)
        return self

    def container_port(self, port: int, protocol: str = "") -> PodBuilder:
        """Declare a container port without a host port (hostNetwork pods get hostPort=containerPort)."""
        entry: JSON = {"containerPort": port}
        if protocol:
            entry["protocol"] = protocol
        self._container().setdefault("ports", []).append(entry)
        return self

    def host_network(self) -> PodBuilder:
        self._spec["hostNetwork"] = True
        return self

    def host_users(self, value: bool) -> PodBuilder:
        """spec.hostUsers (false: the pod runs in a user namespace)."""
        self._spec["hostUsers"] = value
        return self

    def restart_rule(self, action: str = "RestartAllContainers", exit_codes: tuple[int, ...] = (42,)) -> PodBuilder:
        """A restartPolicyRules entry on the last container (ContainerRestartRules), exit codes In the list.

        The API server wants the container's own restartPolicy with rules; it is set to Never when unset.
        """
        c = self._container()
        c.setdefault("restartPolicy", "Never")
        rule = {"action": action, "exitCodes": {"operator": "In", "values": list(exit_codes)}}
        c.setdefault("restartPolicyRules", []).append(rule)
        return self

    def volume_mount(self, name: str, path: str, *bind_mount_options: str) -> PodBuilder:
        """A volumeMounts entry on the last container, with bindMountOptions when given."""
        mount: JSON = {"name": name, "mountPath": path}
        if bind_mount_options:
            mount["bindMountOptions"] = list(bind_mount_options)
        self._container().setdefault("volumeMounts", []).append(mount)
        return self

    def image(self, image: str) -> PodBuilder:
        self._container()["image"] = image
        return self

    def node_selector(self, **labels: str) -> PodBuilder:
        self._spec.setdefault("nodeSelector", {}).update(labels)
        return self

    def node_selector_map(self, labels: dict[str, str]) -> PodBuilder:
        self._spec.setdefault("nodeSelector", {}).update(labels)
        return self

    def _node_affinity(self) -> JSON:
        aff: JSON = self._spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        return aff

    def required_term(
        self, expressions: list[JSON] | None = None, fields: list[JSON] | None = None
    ) -> PodBuilder:
        """Add an ORed nodeSelectorTerm to requiredDuringSchedulingIgnoredDuringExecution."""
        req = self._node_affinity().setdefault(
            "requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []}
        )
        term: JSON = {}
        if expressions is not None:
            term["matchExpressions"] = expressions
        if fields is not None:
            term["matchFields"] = fields
        req["nodeSelectorTerms"].append(term)
        return self

    def node_affinity_in(self, key: str, values: list[str]) -> PodBuilder:
        return self.required_term([expr(key, "In", values)])

    def node_affinity_not_in(self, key: str, values: list[str]) -> PodBuilder:
        return self.required_term([expr(key, "NotIn", values)])

    def pin_to_node(self, node_name: str) -> PodBuilder:
        """Pin with `matchFields metadata.name In [node]`, as the DaemonSet controller does."""
        return self.required_term(fields=[expr("metadata.name", "In", [node_name])])

    def preferred_term(self, weight: int, expressions: list[JSON]) -> PodBuilder:
        prefs: list[JSON] = self._node_affinity().setdefault(
            "preferredDuringSchedulingIgnoredDuringExecution", []
        )
        prefs.append({"weight": weight, "preference": {"matchExpressions": expressions}})
        return self

    def toleration(
        self, key: str = "", value: str = "", effect: str = "", operator: str = ""
    ) -> PodBuilder:
        tol: JSON = {}
        if key:
            tol["key"] = key
        if operator:
            tol["operator"] = operator
        elif not value and key:
            tol["operator"] = "Exists"
        if value:
            tol["value"] = value
        if effect:
            tol["effect"] = effect
        if not key and not operator:
            tol["operator"] = "Exists"
        self._spec.setdefault("tolerations", []).append(tol)
        return self

    def owner(self, kind: str, name: str, uid: str = "owner-uid", api_version: str = "apps/v1") -> PodBuilder:
        self._obj["metadata"]["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}
        ]
        return self

    def pod_affinity_term(
        self,
        kind: str,
        topology_key: str,
        match_labels: dict[str, str] | None = None,
        match_expressions: list[JSON] | None = None,
        *,
        weight: int | None = None,
        namespaces: list[str] | None = None,
        namespace_selector: JSON | None = None,
        selector: JSON | None = None,
    ) -> PodBuilder:
        """A podAffinity/podAntiAffinity term (`kind`); required, or preferred with `weight`.

        The labelSelector is built from match_labels/match_expressions, or taken verbatim from `selector`
        (None with neither: no labelSelector, which matches nothing).
        """
        if selector is None and (match_labels is not None or match_expressions is not None):
            selector = {}
            if match_labels is not None:
                selector["matchLabels"] = dict(match_labels)
            if match_expressions is not None:
                selector["matchExpressions"] = list(match_expressions)
        term: JSON = {"topologyKey": topology_key}
        if selector is not None:
            term["labelSelector"] = selector
        if namespaces is not None:
            term["namespaces"] = list(namespaces)
        if namespace_selector is not None:
            term["namespaceSelector"] = namespace_selector
        section: JSON = self._spec.setdefault("affinity", {}).setdefault(kind, {})
        if weight is None:
            section.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        else:
            section.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": weight, "podAffinityTerm": term}
            )
        return self

    def spread_constraint(
        self,
        max_skew: int,
        topology_key: str,
        when_unsatisfiable: str = "DoNotSchedule",
        match_labels: dict[str, str] | None = None,
        **extra: Any,
    ) -> PodBuilder:
        """A topologySpreadConstraint; `extra` adds fields verbatim (minDomains, nodeAffinityPolicy, ...)."""
        constraint: JSON = {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when_unsatisfiable}
        if match_labels is not None:
            constraint["labelSelector"] = {"matchLabels": dict(match_labels)}
        constraint.update(extra)
        self._spec.setdefault("topologySpreadConstraints", []).append(constraint)
        return self

    def volume(self, name: str, **source: Any) -> PodBuilder:
        """A spec.volumes entry: `volume("data", persistentVolumeClaim={"claimName": "c"})`."""
        self._spec.setdefault("volumes", []).append({"name": name, **source})
        return self

    def pvc(self, claim: str, name: str | None = None, read_only: bool = False) -> PodBuilder:
        source: JSON = {"claimName": claim}
        if read_only:
            source["readOnly"] = True
        return self.volume(name or claim, persistentVolumeClaim=source)

    def resource_claim(self, name: str, template: str = "template") -> PodBuilder:
        """A spec.resourceClaims entry made from a ResourceClaimTemplate (the controller makes the claim)."""
        self._spec.setdefault("resourceClaims", []).append({"name": name, "resourceClaimTemplateName": template})
        return self

    def claim(self, name: str, claim_name: str | None = None) -> PodBuilder:
        """A spec.resourceClaims entry naming an existing ResourceClaim (by default named like the entry), used
        by the last container."""
        self._spec.setdefault("resourceClaims", []).append({"name": name, "resourceClaimName": claim_name or name})
        self._container().setdefault("resources", {}).setdefault("claims", []).append({"name": name})
        return self

    def claim_status(self, name: str, claim_name: str | None) -> PodBuilder:
        """status.resourceClaimStatuses: the claim the resourceclaim controller generated for an entry."""
        entry: JSON = {"name": name}
        if claim_name is not None:
            entry["resourceClaimName"] = claim_name
        self._obj["status"].setdefault("resourceClaimStatuses", []).append(entry)
        return self

    def obj(self) -> JSON:
        """The raw v1 Pod dict (a deep copy; the builder can be reused)."""
        out = copy.deepcopy(self._obj)
        if not out["spec"]["containers"]:
            out["spec"]["containers"] = [{"name": "c0", "image": "registry.k8s.io/pause:3.10"}]
        return out

    def info(self) -> PodInfo:
        return parse_pod(self.obj())


class NodeBuilder:
    """Builds a Ready v1 Node dict step by step."""

    def __init__(self, name: str) -> None:
        self._obj: JSON = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {
                "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }

    def labels(self, **labels: str) -> NodeBuilder:
        self._obj["metadata"]["labels"].update(labels)
        return self

    def label(self, key: str, value: str) -> NodeBuilder:
        self._obj["metadata"]["labels"][key] = value
        return self

    def zone(self, zone: str, region: str | None = None) -> NodeBuilder:
        self._obj["metadata"]["labels"][ZONE_LABEL] = zone
        if region is not None:
            self._obj["metadata"]["labels"][REGION_LABEL] = region
        return self

    def capacity(
        self, cpu: str | None = None, memory: str | None = None, pods: str | None = None, **extra: str
    ) -> NodeBuilder:
        """Set allocatable (and capacity) for the given resources, keeping the others."""
        res = _resources(cpu, memory, extra)
        if pods is not None:
            res["pods"] = pods
        self._obj["status"]["allocatable"].update(res)
        self._obj["status"]["capacity"].update(res)
        return self

    def allocatable(self, **resources: str) -> NodeBuilder:
        """Set exactly these allocatable (and capacity) amounts; pods defaults to 32 as upstream's MakeNode."""
        res = {"pods": "32", **{k.replace("_", "-"): v for k, v in resources.items()}}
        self._obj["status"]["allocatable"] = dict(res)
        self._obj["status"]["capacity"] = dict(res)
        return self

    def extended(self, name: str, quantity: str) -> NodeBuilder:
        self._obj["status"]["allocatable"][name] = quantity
        self._obj["status"]["capacity"][name] = quantity
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        t: JSON = {"key": key, "effect": effect}
        if value:
            t["value"] = value
        self._obj["spec"].setdefault("taints", []).append(t)
        return self

    def unschedulable(self, value: bool = True) -> NodeBuilder:
        self._obj["spec"]["unschedulable"] = value
        return self

    def declared_features(self, *features: str) -> NodeBuilder:
        """status.declaredFeatures, sorted as the kubelet publishes them (upstream st.MakeNode().DeclaredFeatures)."""
        self._obj["status"]["declaredFeatures"] = sorted(features)
        return self

    def image(self, name: str, size_bytes: int, *aliases: str) -> NodeBuilder:
        """An entry of status.images: the image's names (name, then aliases) and its size."""
        entry = {"names": [name, *aliases], "sizeBytes": size_bytes}
        self._obj["status"].setdefault("images", []).append(entry)
        return self

    def obj(self) -> JSON:
        return copy.deepcopy(self._obj)

    def info(self) -> NodeRecord:
        return parse_node(self.obj())


def expr(key: str, operator: str, values: list[str] | None = None) -> JSON:
    """A NodeSelectorRequirement dict."""
    out: JSON = {"key": key, "operator": operator}
    if values is not None:
        out["values"] = list(values)
    return out


class PVCBuilder:
    """Builds a v1 PersistentVolumeClaim dict: ``make_pvc("data").storage_class("local").request("5Gi")``."""

    def __init__(self, name: str, namespace: str = "default") -> None:
        self._obj: JSON = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-pvc-{namespace}-{name}-{next(_uid)}"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending"},
        }

    def storage_class(self, name: str) -> PVCBuilder:
        self._obj["spec"]["storageClassName"] = name
        return self

    def request(self, storage: str) -> PVCBuilder:
        self._obj["spec"]["resources"] = {"requests": {"storage": storage}}
        return self

    def access_modes(self, *modes: str) -> PVCBuilder:
        self._obj["spec"]["accessModes"] = list(modes)
        return self

    def annotation(self, key: str, value: str) -> PVCBuilder:
        self._obj["metadata"].setdefault("annotations", {})[key] = value
        return self

    def bound_to(self, pv_name: str) -> PVCBuilder:
        """Fully bound, as the PV controller leaves a claim: volumeName, bind-completed, phase Bound."""
        self._obj["spec"]["volumeName"] = pv_name
        self._obj["status"]["phase"] = "Bound"
        return self.annotation("pv.kubernetes.io/bind-completed", "yes")

    def owner_pod(self, name: str, uid: str) -> PVCBuilder:
        """Controlled by a pod (a generic ephemeral volume's claim)."""
        self._obj["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid, "controller": True}
        ]
        return self

    def obj(self) -> JSON:
        return copy.deepcopy(self._obj)


class PVBuilder:
    """Builds a v1 PersistentVolume dict: ``make_pv("pv-1").capacity("10Gi").on_node("n1")``."""

    def __init__(self, name: str) -> None:
        self._obj: JSON = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "uid": f"uid-pv-{name}-{next(_uid)}"},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "volumeMode": "Filesystem",
                "local": {"path": f"/mnt/{name}"},
            },
            "status": {"phase": "Available"},
        }

    def capacity(self, storage: str) -> PVBuilder:
        self._obj["spec"]["capacity"] = {"storage": storage}
        return self

    def storage_class(self, name: str) -> PVBuilder:
        self._obj["spec"]["storageClassName"] = name
        return self

    def access_modes(self, *modes: str) -> PVBuilder:
        self._obj["spec"]["accessModes"] = list(modes)
        return self

    def node_affinity(self, key: str, *values: str) -> PVBuilder:
        """A required node affinity term `key In values` (one term; call once)."""
        expression = {"key": key, "operator": "In", "values": list(values)}
        self._obj["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}}
        return self

    def on_node(self, node: str) -> PVBuilder:
        """A local PV: node affinity on kubernetes.io/hostname."""
        return self.node_affinity("kubernetes.io/hostname", node)

    def labels(self, **labels: str) -> PVBuilder:
        self._obj["metadata"].setdefault("labels", {}).update(labels)
        return self

    def label(self, key: str, value: str) -> PVBuilder:
        self._obj["metadata"].setdefault("labels", {})[key] = value
        return self

    def csi(self, driver: str, handle: str | None = None) -> PVBuilder:
        self._obj["spec"].pop("local", None)
        self._obj["spec"]["csi"] = {"driver": driver, "volumeHandle": handle or self._obj["metadata"]["name"]}
        return self

    def source(self, **source: Any) -> PVBuilder:
        """Replace the volume source (e.g. gcePersistentDisk={...})."""
        self._obj["spec"].pop("local", None)
        self._obj["spec"].update(source)
        return self

    def bound_to(self, claim: JSON) -> PVBuilder:
        """Bound to the claim (claimRef with its uid), phase Bound."""
        meta = claim["metadata"]
        self._obj["spec"]["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta.get("uid", ""),
        }
        self._obj["status"]["phase"] = "Bound"
        return self

    def obj(self) -> JSON:
        return copy.deepcopy(self._obj)


def make_pvc(name: str, namespace: str = "default") -> PVCBuilder:
    return PVCBuilder(name, namespace)


def make_pv(name: str) -> PVBuilder:
    return PVBuilder(name)


def storage_class(
    name: str,
    mode: str = "WaitForFirstConsumer",
    provisioner: str = "kubernetes.io/no-provisioner",
    allowed_topologies: list[JSON] | None = None,
) -> JSON:
    """A storage.k8s.io/v1 StorageClass dict."""
    obj: JSON = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        "reclaimPolicy": "Delete",
    }
    if allowed_topologies is not None:
        obj["allowedTopologies"] = allowed_topologies
    return obj


def csi_node(name: str, drivers: dict[str, int | None], migrated_plugins: str = "") -> JSON:
    """A storage.k8s.io/v1 CSINode: driver name -> allocatable count (None: no limit)."""
    entries: list[JSON] = []
    for driver, count in drivers.items():
        entry: JSON = {"name": driver, "nodeID": name}
        if count is not None:
            entry["allocatable"] = {"count": count}
        entries.append(entry)
    meta: JSON = {"name": name}
    if migrated_plugins:
        meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": migrated_plugins}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": meta, "spec": {"drivers": entries}}


def make_pod(name: str = "pod", namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)


def make_node(name: str = "node") -> NodeBuilder:
    return NodeBuilder(name)


def make_namespace(name: str, labels: dict[str, str] | None = None) -> JSON:
    """A v1 Namespace dict (what InterPodAffinity's namespaceSelector is matched against)."""
    meta: JSON = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


class ClaimBuilder:
    """Builds a resource.k8s.io/v1 ResourceClaim (or, with `template()`, a ResourceClaimTemplate)."""

    def __init__(self, name: str, namespace: str = "default") -> None:
        self._obj: JSON = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace, "uid": f"claim-{namespace}-{name}-{next(_uid)}"},
            "spec": {"devices": {"requests": []}},
        }

    def _requests(self) -> list[JSON]:
        requests: list[JSON] = self._obj["spec"]["devices"]["requests"]
        return requests

    def request(
        self,
        name: str,
        device_class: str,
        count: int | None = None,
        *,
        all_devices: bool = False,
        selectors: Iterable[str] = (),
        admin_access: bool | None = None,
        tolerations: Iterable[JSON] = (),
    ) -> ClaimBuilder:
        """An `exactly` request: `count` devices (ExactCount, the API's default 1), or every matching one."""
        exactly: JSON = {"deviceClassName": device_class}
        if all_devices:
            exactly["allocationMode"] = "All"
        else:
            exactly["allocationMode"] = "ExactCount"
            exactly["count"] = 1 if count is None else count
        if selectors:
            exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
        if admin_access is not None:
            exactly["adminAccess"] = admin_access
        if tolerations:
            exactly["tolerations"] = [dict(t) for t in tolerations]
        self._requests().append({"name": name, "exactly": exactly})
        return self

    def first_available(self, name: str, *subrequests: tuple[str, str, int]) -> ClaimBuilder:
        """A prioritized list: (subrequest name, device class, count), most preferred first."""
        subs = [
            {"name": n, "deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
            for n, cls, count in subrequests
        ]
        self._requests().append({"name": name, "firstAvailable": subs})
        return self

    def match_attribute(self, attribute: str, *requests: str) -> ClaimBuilder:
        constraint: JSON = {"matchAttribute": attribute}
        if requests:
            constraint["requests"] = list(requests)
        self._obj["spec"]["devices"].setdefault("constraints", []).append(constraint)
        return self

    def allocated(self, node: str | None, *devices: tuple[str, str, str, str]) -> ClaimBuilder:
        """status.allocation: (request, driver, pool, device) results, available on `node` only (None: on
        every node), with the finalizer the scheduler adds."""
        allocation: JSON = {
            "devices": {"results": [{"request": r, "driver": d, "pool": p, "device": n} for r, d, p, n in devices]}
        }
        if node is not None:
            term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            allocation["nodeSelector"] = {"nodeSelectorTerms": [term]}
        self._obj.setdefault("status", {})["allocation"] = allocation
        self._obj["metadata"].setdefault("finalizers", []).append("resource.kubernetes.io/delete-protection")
        return self

    def reserved_for(self, *pods: JSON) -> ClaimBuilder:
        """status.reservedFor: these pods (raw objects) use the claim."""
        reserved = self._obj.setdefault("status", {}).setdefault("reservedFor", [])
        for pod in pods:
            reserved.append({"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]})
        return self

    def owned_by(self, pod: JSON) -> ClaimBuilder:
        """Made for the pod (its controller owner), as the resourceclaim controller makes claims."""
        ref = {"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
        self._obj["metadata"]["ownerReferences"] = [{**ref, "controller": True}]
        return self

    def obj(self) -> JSON:
        return copy.deepcopy(self._obj)

    def template(self) -> JSON:
        """The same spec as a ResourceClaimTemplate of the same name."""
        meta = {k: v for k, v in self._obj["metadata"].items() if k in ("name", "namespace")}
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": meta,
            "spec": {"spec": copy.deepcopy(self._obj["spec"])},
        }


class SliceBuilder:
    """Builds a resource.k8s.io/v1 ResourceSlice: one pool of one driver, published for a node (or all)."""

    def __init__(self, name: str, driver: str, node: str | None) -> None:
        spec: JSON = {"driver": driver, "pool": {"name": node or name, "generation": 1, "resourceSliceCount": 1}}
        if node is None:
            spec["allNodes"] = True
        else:
            spec["nodeName"] = node
        spec["devices"] = []
        self._obj: JSON = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name}}
        self._obj["spec"] = spec

    def device(
        self,
        name: str,
        *,
        attributes: dict[str, Any] | None = None,
        capacity: dict[str, str] | None = None,
        taints: Iterable[JSON] = (),
    ) -> SliceBuilder:
        """A device; attribute values are typed from Python (str, int, bool), capacities are quantities."""
        device: JSON = {"name": name}
        if attributes:
            typed: JSON = {}
            for key, value in attributes.items():
                kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "string"
                typed[key] = {kind: value}
            device["attributes"] = typed
        if capacity:
            device["capacity"] = {k: {"value": v} for k, v in capacity.items()}
        if taints:
            device["taints"] = [dict(t) for t in taints]
        self._obj["spec"]["devices"].append(device)
        return self

    def pool(self, name: str, generation: int = 1, slice_count: int = 1) -> SliceBuilder:
        self._obj["spec"]["pool"] = {"name": name, "generation": generation, "resourceSliceCount": slice_count}
        return self

    def obj(self) -> JSON:
        return copy.deepcopy(self._obj)


def make_claim(name: str, namespace: str = "default") -> ClaimBuilder:
    return ClaimBuilder(name, namespace)


def make_slice(name: str, driver: str, node: str | None) -> SliceBuilder:
    return SliceBuilder(name, driver, node)


def device_class(
    name: str,
    *selectors: str,
    extended_resource_name: str | None = None,
    created: str = "2026-01-01T00:00:00Z",
) -> JSON:
    """A DeviceClass selecting devices with CEL expressions (by default, of the driver named like the class)."""
    spec: JSON = {"selectors": [{"cel": {"expression": e}} for e in (selectors or (f'device.driver == "{name}"',))]}
    if extended_resource_name is not None:
        spec["extendedResourceName"] = extended_resource_name
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": spec,
    }


class StaticHandle:
    """A plugin Handle over a fixed snapshot (empty by default) and objects; plugin unit tests never bind.

    `objects` are raw API dicts of the kinds in scheduler.framework.objects.KINDS (Namespaces, PVCs, ...).
    """

    def __init__(self, snapshot: Snapshot | None = None, objects: Iterable[JSON] = ()) -> None:
        self._snapshot = snapshot or Snapshot()
        self._objects = ClusterObjects()
        for obj in objects:
            self._objects.apply(str(obj["kind"]), None, obj)

    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def binder(self) -> Binder:
        raise NotImplementedError("plugin unit tests do not bind")

    @property
    def objects(self) -> ObjectLister:
        return self._objects

    def get_waiting_pod(self, uid: str) -> WaitingPodView | None:
        return None

    def iterate_over_waiting_pods(self) -> list[WaitingPodView]:
        return []

    def reject_waiting_pod(self, uid: str) -> bool:
        return False

    @property
    def cluster_objects(self) -> ClusterObjects:
        """The store behind `objects`, for tests that change objects between calls."""
        return self._objects

    @property
    def volume_writer(self) -> VolumeWriter:
        raise NotImplementedError("plugin unit tests do not write volumes")

    @property
    def claim_writer(self) -> ClaimWriter:
        raise NotImplementedError("plugin unit tests do not write ResourceClaims")

    def pod_exists(self, uid: str) -> bool:
        return True


def node_info(node: NodeBuilder, *pods: PodBuilder) -> NodeInfo:
    """A NodeInfo for the node with the given pods already placed on it."""
    record = node.info()
    info = NodeInfo(record.name, record)
    for p in pods:
        info.add_pod(p.node(record.name).info())
    return info


# ---------------------------------------------------------------------------------------------------------
# The harness: the real scheduler over an in-memory cluster, on a fake clock


class SchedulerHarness:
    """Runs objects through the real scheduler, with the plugins and configuration you give it, on the path
    `pyscheduler simulate` takes: an in-memory cluster (bindings, events, conditions, the PV controller),
    a fake clock (backoffs and Permit timeouts pass at once), API-server admission of each pod. No API
    server, no threads, no real waiting::

        from scheduler.testing import SchedulerHarness, make_node, make_pod

        async def test_cost_score_prefers_the_cheap_node() -> None:
            h = SchedulerHarness(CONFIG, plugins=[CostScore])
            h.add(make_node("cheap").label(COST, "1"), make_node("dear").label(COST, "9"))
            pod = h.add_pod(make_pod("web"))
            await h.settle()
            assert h.node_of(pod) == "cheap"

    `config` is a KubeSchedulerConfiguration (a dict as in the YAML file, or a loaded one; None: the
    default profile). `plugins` are out-of-tree plugin classes to register (checked as an installed plugin
    is), `plugin_refs` `module:Class` references like `--plugin`; installed entry points are not loaded
    unless `entry_points`. The parts stay reachable for assertions: `cluster`, `clock`, `scheduler`.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | SchedulerConfiguration | None = None,
        *,
        plugins: Iterable[type[Plugin] | PluginSpec] = (),
        plugin_refs: Iterable[str] = (),
        entry_points: bool = False,
        registry: PluginRegistry | None = None,
        cluster: MemoryCluster | None = None,
        observer: Observer | None = None,
        seed: int | None = 0,
    ) -> None:
        self.registry = registry or PluginRegistry.with_out_of_tree(
            plugin_refs, entry_points=entry_points, plugins=plugins
        )
        if isinstance(config, Mapping):
            reg = self.registry
            config = load_config(config, reg.keys(), reg.parse_args, implements=reg.implements)
        self.cluster = cluster or MemoryCluster()
        if cluster is None:
            self.cluster.settles_synchronously = True  # as simulate: PreBind never waits real time
        self.clock = FakeClock()
        self.scheduler: Scheduler = build_scheduler(
            self.cluster, config, clock=self.clock, seed=seed, observer=observer, registry=self.registry
        )
        self.cluster.attach(self.scheduler)
        self._priority_classes: list[JSON] = []

    # ------------------------------------------------------------------ objects in

    def add(self, *objects: JSON | PodBuilder | NodeBuilder) -> list[JSON]:
        """Create (or update) objects in order, as the watches would deliver them; returns the stored dicts.

        Pods are admitted as the API server admits a new pod (priority from priorityClassName and the
        PriorityClasses added so far, matchLabelKeys merged) unless they have a creationTimestamp; a pod
        given a spec.priority without a class keeps it (what `make_pod().priority(n)` means).
        """
        stored: list[JSON] = []
        for item in objects:
            obj = item.obj() if isinstance(item, PodBuilder | NodeBuilder) else item
            kind = obj.get("kind")
            if kind == "Node":
                self.cluster.apply_node(obj)
            elif kind == "Pod":
                if not was_created(obj):
                    spec = obj.get("spec") or {}
                    if spec.get("priority") is None or spec.get("priorityClassName"):  # a builder's .priority() stays
                        admit_priorities([*self._priority_classes, obj], "harness")
                    obj = admit_pod(obj)
                self.cluster.apply_pod(obj)
            elif kind == "PriorityClass":
                admit_priorities([obj], "harness")  # validates it as the API server would
                self._priority_classes.append(obj)
            elif kind in KINDS:
                self.cluster.apply_object(obj)
            else:
                raise ValueError(f"SchedulerHarness.add: unsupported kind {kind!r}; supported: Node, Pod, "
                                 f"PriorityClass, {', '.join(sorted(KINDS))}")
            stored.append(obj)
        return stored

    def add_pod(self, pod: JSON | PodBuilder) -> JSON:
        """`add` of one pod; returns the stored dict (what `node_of`, `message`... take)."""
        return self.add(pod)[0]

    def delete(self, obj: JSON) -> None:
        """Delete a pod, node or other object (the watch's DELETED event follows at once)."""
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        if kind == "Pod":
            self.cluster.delete_pod(self._uid(obj))
        elif kind == "Node":
            self.cluster.delete_node(str(meta.get("name")))
        else:
            namespace, name = object_key(obj)
            self.cluster.delete_object(str(kind), namespace, name)

    # ------------------------------------------------------------------ time

    async def settle(self, *, advance_clock: bool = True, expire_permits: bool = True) -> None:
        """Schedule until nothing can progress. With `advance_clock` the fake clock jumps to the next backoff
        expiry or Permit deadline whenever nothing else can move (so retries and timeouts happen without
        waiting); `expire_permits=False` never jumps past a Permit deadline (pods keep waiting there, e.g.
        for an object you add next)."""
        advance = self.clock.advance_to if advance_clock else None
        await self.scheduler.run_until_idle(advance=advance, permit_timeouts=expire_permits)

    async def advance(self, seconds: float) -> None:
        """Move the fake clock by `seconds` (backoffs and Permit waits due by then end), then settle without
        moving it further: what happens in the next `seconds` of a live cluster with nothing else going on."""
        self.clock.advance(seconds)
        self.scheduler.expire_permit_waits()
        await self.scheduler.run_until_idle(advance=None)

    # ------------------------------------------------------------------ outcomes

    @staticmethod
    def _uid(pod: JSON | str) -> str:
        return pod if isinstance(pod, str) else MemoryCluster._uid(pod)

    def node_of(self, pod: JSON | str) -> str | None:
        """The node a pod (its dict or uid) is bound to, or None."""
        return self.cluster.node_of(self._uid(pod))

    def condition(self, pod: JSON | str) -> PodCondition | None:
        """The PodScheduled condition the scheduler last wrote for the pod."""
        return self.cluster.conditions.get(self._uid(pod))

    def message(self, pod: JSON | str) -> str:
        """The PodScheduled condition's message (the FailedScheduling text of a pod left Pending); LookupError
        when the scheduler wrote none for it."""
        cond = self.condition(pod)
        if cond is None:
            raise LookupError(f"pod {self._uid(pod)} has no PodScheduled condition")
        return cond.message

    def notes(self, pod: JSON | str, reason: str = "FailedScheduling") -> list[str]:
        """The notes of the pod's events with `reason`, oldest first."""
        if isinstance(pod, str):
            pod = self.cluster.pods.get(pod) or {"metadata": {"uid": pod, "name": pod}}
        return [e.note for e in self.events_of(pod, reason)]

    def events_of(self, pod: JSON, reason: str | None = None) -> list[RecordedEvent]:
        """The events recorded about the pod, optionally only those with `reason` (e.g. FailedScheduling)."""
        meta = pod.get("metadata") or {}
        key = (str(meta.get("namespace") or "default"), str(meta.get("name")))
        return [e for e in self.cluster.events if (e.namespace, e.name) == key and reason in (None, e.reason)]

    def waiting(self) -> list[WaitingPodView]:
        """The pods parked at Permit right now."""
        return list(self.scheduler.handle().iterate_over_waiting_pods())

    def explain(self, pod: JSON | str) -> Explanation:
        """`pyscheduler explain` for a pod against the cluster as it is now."""
        from scheduler.core.explain import explain_pod

        obj = self.cluster.pods[self._uid(pod)]
        info = parse_pod(obj)
        fwk, snapshot = self.scheduler.explain_environment(info.scheduler_name)
        return explain_pod(fwk, info, snapshot)


def configuration(
    plugins: Mapping[str, Any] | None = None,
    plugin_config: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    scheduler_name: str = "pyscheduler",
    **top_level: Any,
) -> JSON:
    """A KubeSchedulerConfiguration dict with one profile: `plugins` is the profile's `plugins:` section
    (`{"multiPoint": {"enabled": [{"name": "CostScore"}]}}`), `plugin_config` maps plugin names to args;
    `top_level` adds fields such as percentageOfNodesToScore."""
    profile: JSON = {"schedulerName": scheduler_name}
    if plugins is not None:
        profile["plugins"] = dict(plugins)
    if plugin_config:
        profile["pluginConfig"] = [{"name": name, "args": dict(args)} for name, args in plugin_config.items()]
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        **top_level,
        "profiles": [profile],
    }
