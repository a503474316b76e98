"""Typed records the core works on: resources, pods, nodes, host ports, taints and tolerations.

Raw API objects (JSON dicts) stay at the edge; each is parsed once per object change into these records
(`parse_pod`, `parse_node`) and the scheduling cycle only ever reads the records.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from scheduler import caching
from scheduler.framework.declared_features import FeatureInferenceError, infer_for_scheduling, parse_declared_features
from scheduler.framework.pod_resources import (
    RESIZE_PENDING,
    ResourceListError,
    ResourceMap,
    node_accounted_requests,
    uses_status_resources,
)
from scheduler.framework.quantity import milli_value_of, value_of

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# pkg/scheduler/util: the request assumed for a container that sets none, used only for scoring.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"

ZONE_LABEL_BETA = "failure-domain.beta.kubernetes.io/zone"
REGION_LABEL_BETA = "failure-domain.beta.kubernetes.io/region"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"

JSON = dict[str, Any]


class ParseError(ValueError):
    """An API object the scheduler cannot understand; the message names the field."""


def is_scalar_resource_name(name: str) -> bool:
    """Extended, hugepages, attachable-volumes and prefixed native resources are tracked as scalars."""
    return "/" in name or name.startswith("hugepages-") or name.startswith("attachable-volumes-")


@dataclass(slots=True)
class Resource:
    """Amounts of compute resources: cpu in millicores, memory and storage in bytes, scalars by name."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, resources: Mapping[str, Any] | None, where: str = "resources") -> Resource:
        """Parse a ResourceList ({"cpu": "500m", ...}); an unparsable quantity names its field."""
        res = cls()
        if not resources:
            return res
        for name, qty in resources.items():
            try:
                if name == CPU:
                    res.milli_cpu = milli_value_of(qty)
                elif name == MEMORY:
                    res.memory = value_of(qty)
                elif name == EPHEMERAL_STORAGE:
                    res.ephemeral_storage = value_of(qty)
                elif name == PODS:
                    res.allowed_pod_number = value_of(qty)
                elif is_scalar_resource_name(name):
                    res.scalar[name] = value_of(qty)
            except (ValueError, TypeError) as exc:
                raise ParseError(f"{where}.{name}: {exc}") from exc
        return res

    def clone(self) -> Resource:
        return Resource(
            self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar)
        )

    def add(self, other: Resource) -> None:
        """Add other into self (pods are not summed: they count objects, not amounts)."""
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        if other.scalar:
            scalar = self.scalar
            for name, qty in other.scalar.items():
                scalar[name] = scalar.get(name, 0) + qty

    def sub(self, other: Resource) -> None:
        """Subtract other from self; used when a pod leaves a node."""
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        if other.scalar:
            scalar = self.scalar
            for name, qty in other.scalar.items():
                left = scalar.get(name, 0) - qty
                if left:
                    scalar[name] = left
                else:
                    scalar.pop(name, None)

    def set_max(self, other: Resource) -> None:
        """Element-wise maximum, as PodRequests uses for init containers."""
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        if other.scalar:
            for name, qty in other.scalar.items():
                if qty > self.scalar.get(name, 0):
                    self.scalar[name] = qty

    def get(self, name: str) -> int:
        """Amount of a resource by its API name (cpu in millicores)."""
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def is_zero(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or any(self.scalar.values()))


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        """ToleratesTaint from k8s.io/api/core/v1: effect, then key, then operator."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        op = self.operator
        if op == "Exists":
            return True
        if op in ("", "Equal"):
            return self.value == taint.value
        # Lt/Gt exist behind the alpha TaintTolerationComparisonOperators gate, off by default in v1.37:
        # like upstream with the gate off, such a toleration tolerates nothing.
        return False


def tolerations_tolerate(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


DO_NOT_SCHEDULE_EFFECTS: Final = frozenset({"NoSchedule", "NoExecute"})  # helper.DoNotScheduleTaintsFilterFunc


def find_untolerated_taint(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint, in node order, that no toleration tolerates (None if all are):
    v1helper.FindMatchingUntoleratedTaint with helper.DoNotScheduleTaintsFilterFunc."""
    for taint in taints:
        if taint.effect not in DO_NOT_SCHEDULE_EFFECTS:
            continue
        for toleration in tolerations:
            if toleration.tolerates(taint):
                break
        else:
            return taint
    return None


HostPort = tuple[str, str, int]  # (hostIP, protocol, port), sanitized


def sanitize_host_port(ip: str | None, protocol: str | None, port: int) -> HostPort:
    """Empty host IP means 0.0.0.0 and an empty protocol means TCP (HostPortInfo.sanitize)."""
    return (ip or DEFAULT_BIND_ALL_HOST_IP, protocol or "TCP", port)


class HostPortInfo:
    """Host ports in use on a node, with the wildcard-IP conflict rule of upstream's HostPortInfo."""

    __slots__ = ("_by_proto_port", "_count")

    def __init__(self) -> None:
        self._count: dict[HostPort, int] = {}
        self._by_proto_port: dict[tuple[str, int], dict[str, int]] = {}

    def add(self, hp: HostPort) -> None:
        ip, proto, port = hp
        if port <= 0:
            return
        self._count[hp] = self._count.get(hp, 0) + 1
        ips = self._by_proto_port.setdefault((proto, port), {})
        ips[ip] = ips.get(ip, 0) + 1

    def remove(self, hp: HostPort) -> None:
        ip, proto, port = hp
        if port <= 0 or hp not in self._count:
            return
        left = self._count[hp] - 1
        if left:
            self._count[hp] = left
        else:
            del self._count[hp]
        ips = self._by_proto_port[(proto, port)]
        if ips[ip] > 1:
            ips[ip] -= 1
        else:
            del ips[ip]
            if not ips:
                del self._by_proto_port[(proto, port)]

    def check_conflict(self, hp: HostPort) -> bool:
        """0.0.0.0 conflicts with the same protocol/port on any IP; an IP conflicts with itself and 0.0.0.0."""
        ip, proto, port = hp
        if port <= 0:
            return False
        ips = self._by_proto_port.get((proto, port))
        if not ips:
            return False
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            return True
        return ip in ips or DEFAULT_BIND_ALL_HOST_IP in ips

    def __len__(self) -> int:
        return len(self._count)

    def __iter__(self) -> Any:
        return iter(self._count)

    def clone(self) -> HostPortInfo:
        other = HostPortInfo()
        other._count = dict(self._count)
        other._by_proto_port = {k: dict(v) for k, v in self._by_proto_port.items()}
        return other


def conflicts(a: HostPort, b: HostPort) -> bool:
    """Whether two sanitized host ports clash (same protocol and port, overlapping IPs)."""
    if a[2] <= 0 or b[2] <= 0 or a[1] != b[1] or a[2] != b[2]:
        return False
    return a[0] == b[0] or DEFAULT_BIND_ALL_HOST_IP in (a[0], b[0])


def normalized_image_name(name: str) -> str:
    """Append ":latest" when an image reference has no tag (imagelocality.normalizedImageName)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def zone_key(labels: Mapping[str, str]) -> str:
    """GetZoneKey: beta labels first; region + ":\\x00:" + zone, or "" when both are missing."""
    zone = labels.get(ZONE_LABEL_BETA) or labels.get(ZONE_LABEL) or ""
    region = labels.get(REGION_LABEL_BETA) or labels.get(REGION_LABEL) or ""
    if not zone and not region:
        return ""
    return region + ":\x00:" + zone


# ---------------------------------------------------------------------------------------------------------
# Pods


@dataclass(slots=True, eq=False)
class PodInfo:
    """What the scheduler needs to know about a pod, parsed once per object change."""

    uid: str
    namespace: str
    name: str
    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    priority: int = 0
    labels: dict[str, str] = field(default_factory=dict)
    terminating: bool = False
    phase: str = ""
    requests: Resource = field(default_factory=Resource)
    non_zero_cpu: int = 0
    non_zero_memory: int = 0
    host_ports: tuple[HostPort, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: JSON | None = None
    images: tuple[str, ...] = ()
    num_containers: int = 0
    image_volumes: tuple[str, ...] = ()  # normalized spec.volumes[].image.reference (ImageVolume, GA)
    nominated_node_name: str = ""
    scheduling_gates: tuple[str, ...] = ()
    preemption_policy: str = "PreemptLowerPriority"
    owner_kind: str = ""
    owner_name: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: str = ""
    spec_fingerprint: int = 0
    # Read by InterPodAffinity / PodTopologySpread / the volume plugins / preemption (raw API shapes: the
    # plugins parse what they need once and keep it in `derived`).
    topology_spread_constraints: tuple[JSON, ...] = ()
    volumes: tuple[JSON, ...] = ()  # spec.volumes that a scheduler plugin looks at (not configMap, secret, ...)
    pvc_names: tuple[str, ...] = ()  # claims the pod uses: persistentVolumeClaim.claimName and "<pod>-<volume>"
    claim_names: tuple[str, ...] = ()  # persistentVolumeClaim.claimName only (upstream PodPVCKeys)
    resource_claims: tuple[JSON, ...] = ()
    # status.resourceClaimStatuses: (spec.resourceClaims[].name, the claim generated for it or None), and
    # status.extendedResourceClaimStatus.resourceClaimName: the claims kube-controller-manager (templates)
    # and the scheduler (extended resources backed by DRA) created for the pod.
    resource_claim_statuses: tuple[tuple[str, str | None], ...] = ()
    extended_resource_claim: str = ""
    # The containers that request extended resources (empty for most pods): DynamicResources turns the
    # requests of those backed by a DeviceClass into device requests, one per container.
    extended_requests: tuple[ContainerExtendedRequests, ...] = ()
    # What-if versions of the pod's ResourceClaims, for explanations only (a fix that adds a toleration to a
    # claim's request): DynamicResources reads a claim from here before the object store. Always empty for
    # pods from the API.
    claim_overrides: tuple[JSON, ...] = ()
    has_pod_affinity: bool = False  # spec.affinity.podAffinity or podAntiAffinity is set (PodsWithAffinity)
    has_required_anti_affinity: bool = False  # required podAntiAffinity terms (PodsWithRequiredAntiAffinity)
    start_time: str = ""  # status.startTime (preemption ranks victims by it)
    preempted_by_scheduler: bool = False  # condition DisruptionTarget=True reason PreemptionByScheduler
    owner_uid: str = ""
    owner_api_version: str = ""
    # Features the pod needs its node to declare (status.declaredFeatures), before the scheduler version's
    # MaxVersion windows (NodeDeclaredFeatures applies them): empty for the usual pod.
    inferred_features: frozenset[str] = frozenset()
    # What a node counts for this pod when it differs from (requests, non_zero_cpu, non_zero_memory): the
    # in-place resize status (allocated/actuated resources) and pod-level requests, as upstream's
    # PodInfo.CalculateResource. None for the usual pod, whose node accounting is its spec requests.
    accounted: tuple[Resource, int, int] | None = None
    # (requests, non-zero cpu, non-zero memory) without the pod-level requests, for a pod that sets them: what
    # NodeResourcesFit scores with (upstream builds Fit's scorer without the PodLevelResources gate, so its
    # PodRequests skips spec.resources; BalancedAllocation's scorer has it). None for the usual pod.
    container_requests: tuple[Resource, int, int] | None = None
    # Per-pod data a plugin derived from the fields above (parsed affinity terms, selectors...), keyed by the
    # plugin's name. Shared by the assumed copy (`with_node`): it depends on the spec only.
    derived: dict[str, Any] = field(default_factory=dict)
    # metadata.annotations: the decoded object's own map (a reference, not a copy). Read it, never write it.
    annotations: Mapping[str, str] = field(default_factory=lambda: NO_ANNOTATIONS)
    # The object as the watch delivered it (read-only view), kept only while the pod waits to be scheduled:
    # every pod a plugin is asked to place has it. Bound pods keep labels and annotations only (at 5000 nodes
    # x 30 pods, raw objects for every bound pod cost 1991 MiB of RSS instead of 360: bench/cache_rss.py).
    raw: Mapping[str, Any] | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def conditions(self) -> Sequence[Mapping[str, Any]]:
        """status.conditions of a pod waiting to be scheduled (empty for a bound pod, which keeps no `raw`)."""
        return _conditions(self.raw)

    @property
    def accounted_requests(self) -> Resource:
        """The requests a node counts for the pod (status-aware; see `accounted`)."""
        return self.requests if self.accounted is None else self.accounted[0]

    def with_node(self, node_name: str) -> PodInfo:
        """A copy placed on node_name (what AssumePod stores)."""
        copy = _copy_pod_info(self)
        copy.node_name = node_name
        return copy

    def evolve(self, **changes: Any) -> PodInfo:
        """A copy with some fields changed (what-if explanations); plugin-derived data starts empty, since
        it may depend on the changed fields."""
        fields = {f: getattr(self, f) for f in _POD_FIELDS}
        fields.update(changes)
        fields["derived"] = {}
        fields["spec_fingerprint"] = hash((self.spec_fingerprint, repr(sorted(changes))))
        return PodInfo(**fields)


_POD_FIELDS = tuple(PodInfo.__dataclass_fields__)


def _pod_info_copier() -> Callable[[PodInfo], PodInfo]:
    """A shallow copy of a PodInfo (every field the same object), generated as dataclasses generates
    __init__: a quarter of the cost of PodInfo(**fields), which matters once per bound pod of a dump."""
    body = "".join(f"    new.{name} = old.{name}\n" for name in _POD_FIELDS)
    namespace: dict[str, Any] = {"_new": object.__new__, "PodInfo": PodInfo}
    exec(f"def copy_pod_info(old):\n    new = _new(PodInfo)\n{body}    return new\n", namespace)
    copier: Callable[[PodInfo], PodInfo] = namespace["copy_pod_info"]
    return copier


_copy_pod_info: Final = _pod_info_copier()
NO_ANNOTATIONS: Final[Mapping[str, str]] = MappingProxyType({})


def _conditions(raw: Mapping[str, Any] | None) -> Sequence[Mapping[str, Any]]:
    """status.conditions of a raw object, () when it has none (or none is kept)."""
    if raw is None:
        return ()
    status = raw.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    return tuple(c for c in conditions if isinstance(c, Mapping)) if isinstance(conditions, list) else ()


def _annotations(meta: Mapping[str, Any]) -> Mapping[str, str]:
    annotations = meta.get("annotations")
    if not annotations:
        return NO_ANNOTATIONS
    if not isinstance(annotations, dict):
        raise ParseError("metadata.annotations: expected a map of strings")
    return annotations


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    """A pod in the scheduling queue with its scheduling history (upstream framework.QueuedPodInfo): what a
    QueueSort plugin's `less` compares. Read it; the queue owns it."""

    pod: PodInfo
    timestamp: float  # last time it entered the queue (first add, or return from an attempt)
    # First time it entered activeQ (start of the SLI metric); -1.0 until then, always set once popped.
    initial_attempt_timestamp: float = -1.0
    attempts: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    gating_plugin: str = ""  # the PreEnqueue plugin that gated it
    gating_message: str = ""

    @property
    def uid(self) -> str:
        return self.pod.uid

    def rejectors(self) -> set[str]:
        """Plugins whose rejection keeps the pod out: unschedulable and pending plugins together."""
        return self.unschedulable_plugins | self.pending_plugins


def resource_fragment(res: Resource) -> tuple[Any, ...]:
    """A Resource as a hashable value, for pod signatures (`SignPlugin.sign_pod`)."""
    return (res.milli_cpu, res.memory, res.ephemeral_storage, res.allowed_pod_number, tuple(sorted(res.scalar.items())))


def requests_fragment(pod: PodInfo) -> tuple[Any, ...]:
    """What NodeResourcesFit and NodeResourcesBalancedAllocation read of a pod: its requests, the non-zero
    cpu/memory scoring uses, and the container-only requests of a pod with pod-level resources."""
    own = pod.container_requests
    containers = None if own is None else (resource_fragment(own[0]), own[1], own[2])
    return (resource_fragment(pod.requests), pod.non_zero_cpu, pod.non_zero_memory, containers)


@dataclass(frozen=True, slots=True)
class ContainerExtendedRequests:
    """One container's requests of extended resources (names with a "/": `example.com/gpu`,
    `deviceclass.resource.kubernetes.io/<class>`), as DynamicResources maps them onto device requests."""

    index: int  # position in initContainers + containers
    name: str
    short_lived: bool  # an init container that is not a sidecar (restartPolicy Always)
    request_names: tuple[str, ...]  # every resource the container requests, sorted (names the device request)
    amounts: tuple[tuple[str, int], ...]  # extended resource -> integer quantity (0 when not an integer)


def _extended_requests(spec: Mapping[str, Any]) -> tuple[ContainerExtendedRequests, ...]:
    """The ContainerExtendedRequests of a pod spec (requests only: a limit is not defaulted here, as upstream
    reads container.Resources.Requests after the API server defaulted them)."""
    out: list[ContainerExtendedRequests] = []
    init = spec.get("initContainers") or []
    containers = [*init, *(spec.get("containers") or [])]
    for index, container in enumerate(containers):
        if not isinstance(container, Mapping):
            continue
        resources = container.get("resources") or {}
        requests = resources.get("requests") if isinstance(resources, Mapping) else None
        if not isinstance(requests, Mapping) or not any("/" in str(k) for k in requests):
            continue
        amounts = []
        for name in sorted(str(k) for k in requests):
            if "/" not in name or name.startswith(("hugepages-", "requests.")):
                continue
            try:
                milli = milli_value_of(requests[name])
            except ValueError:
                continue
            amounts.append((name, milli // 1000 if milli % 1000 == 0 else 0))
        if amounts:
            short_lived = index < len(init) and container.get("restartPolicy") != "Always"
            names = tuple(sorted(str(k) for k in requests))
            name = str(container.get("name") or "")
            out.append(ContainerExtendedRequests(index, name, short_lived, names, tuple(amounts)))
    return tuple(out)


def _claim_statuses(status: Mapping[str, Any]) -> tuple[tuple[tuple[str, str | None], ...], str]:
    """status.resourceClaimStatuses and the extended resource claim's name (malformed entries are skipped:
    the pod then waits for its claim, as upstream finds no entry)."""
    entries = []
    for entry in status.get("resourceClaimStatuses") or []:
        if isinstance(entry, Mapping) and entry.get("name"):
            claim = entry.get("resourceClaimName")
            entries.append((str(entry["name"]), str(claim) if claim else None))
    extended = status.get("extendedResourceClaimStatus")
    name = str(extended.get("resourceClaimName") or "") if isinstance(extended, Mapping) else ""
    return tuple(entries), name


def _container_requests(container: Mapping[str, Any], where: str) -> Resource:
    resources = container.get("resources") or {}
    requests = dict(resources.get("limits") or {})  # API defaulting: a limit without a request is the request
    requests.update(resources.get("requests") or {})
    return Resource.from_list(requests, f"{where}.resources.requests")


def _non_missing(container: Mapping[str, Any], res: Resource) -> Resource:
    """NonMissingContainerRequests: a container without a cpu/memory request counts as 100m/200Mi."""
    resources = container.get("resources") or {}
    present = set(resources.get("requests") or {}) | set(resources.get("limits") or {})
    out = res.clone()
    if CPU not in present:
        out.milli_cpu = DEFAULT_MILLI_CPU_REQUEST
    if MEMORY not in present:
        out.memory = DEFAULT_MEMORY_REQUEST
    return out


def _aggregate(regular: list[Resource], init: list[tuple[Resource, bool]]) -> Resource:
    """PodRequests: sum of containers, sidecars added, each init container's use max'ed in."""
    reqs = Resource()
    for r in regular:
        reqs.add(r)
    if not init:  # most pods: the max with an empty init set changes nothing
        return reqs
    sidecars = Resource()
    init_max = Resource()
    for r, is_sidecar in init:
        if is_sidecar:
            reqs.add(r)
            sidecars.add(r)
            use = sidecars.clone()
        else:
            use = r.clone()
            use.add(sidecars)
        init_max.set_max(use)
    reqs.set_max(init_max)
    return reqs


def compute_pod_requests(spec: Mapping[str, Any], *, pod_level: bool = True) -> tuple[Resource, int, int]:
    """Return (requests, non-zero cpu, non-zero memory) for a pod spec, sidecar- and overhead-aware.

    `pod_level=False` ignores spec.resources (PodRequests with SkipPodLevelResources).
    """
    containers = spec.get("containers") or []
    init_containers = spec.get("initContainers") or []
    regular = [_container_requests(c, f"spec.containers[{i}]") for i, c in enumerate(containers)]
    init = [
        (_container_requests(c, f"spec.initContainers[{i}]"), c.get("restartPolicy") == "Always")
        for i, c in enumerate(init_containers)
    ]
    reqs = _aggregate(regular, init)
    non_zero = _aggregate(
        [_non_missing(c, r) for c, r in zip(containers, regular, strict=True)],
        [(_non_missing(c, r), side) for c, (r, side) in zip(init_containers, init, strict=True)],
    )
    pod_level_requests = (spec.get("resources") or {}).get("requests") if pod_level else None
    if pod_level_requests:
        level = Resource.from_list(pod_level_requests, "spec.resources.requests")
        if CPU in pod_level_requests:
            reqs.milli_cpu = non_zero.milli_cpu = level.milli_cpu
        if MEMORY in pod_level_requests:
            reqs.memory = non_zero.memory = level.memory
        for name, qty in level.scalar.items():
            if name.startswith("hugepages-"):
                reqs.scalar[name] = qty
    overhead = spec.get("overhead")
    if overhead:
        extra = Resource.from_list(overhead, "spec.overhead")
        reqs.add(extra)
        non_zero.milli_cpu += extra.milli_cpu
        non_zero.memory += extra.memory
    return reqs, non_zero.milli_cpu, non_zero.memory


def resource_from_map(amounts: ResourceMap) -> Resource:
    """A Resource from exact amounts (Resource.Add of a ResourceList): cpu in millicores, all rounded up."""
    res = Resource()
    for name, qty in amounts.items():
        if name == CPU:
            res.milli_cpu = math.ceil(qty * 1000)
        elif name == MEMORY:
            res.memory = math.ceil(qty)
        elif name == EPHEMERAL_STORAGE:
            res.ephemeral_storage = math.ceil(qty)
        elif name == PODS:
            res.allowed_pod_number = math.ceil(qty)
        else:
            res.scalar[name] = math.ceil(qty)
    return res


def compute_node_accounting(spec: Mapping[str, Any], status: Mapping[str, Any]) -> tuple[Resource, int, int]:
    """(requests, non-zero cpu, non-zero memory) a node counts for a pod, in-place resize status included."""
    try:
        requests, non_zero = node_accounted_requests(spec, status, _is_tracked)
    except ResourceListError as exc:
        raise ParseError(str(exc)) from exc
    nz = resource_from_map({k: v for k, v in non_zero.items() if k in (CPU, MEMORY)})
    return resource_from_map(requests), nz.milli_cpu, nz.memory


def _is_tracked(name: str) -> bool:
    return name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource_name(name)


def _int_field(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ParseError(f"{where}: expected an integer, got {value!r}")
    try:
        return int(value)
    except ValueError as exc:
        raise ParseError(f"{where}: expected an integer, got {value!r}") from exc


def _pod_host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """Host ports of regular containers and of sidecars (restartable init containers), as GetHostPorts."""
    host_network = bool(spec.get("hostNetwork"))
    ports: list[HostPort] = []
    containers = [(f"spec.containers[{i}]", c) for i, c in enumerate(spec.get("containers") or [])]
    containers += [
        (f"spec.initContainers[{i}]", c)
        for i, c in enumerate(spec.get("initContainers") or [])
        if isinstance(c, dict) and c.get("restartPolicy") == "Always"
    ]
    for prefix, container in containers:
        for j, port in enumerate(container.get("ports") or []):
            where = f"{prefix}.ports[{j}]"
            host_port = _int_field(port.get("hostPort"), f"{where}.hostPort")
            if host_network and host_port == 0:
                # The API server defaults hostPort to containerPort for hostNetwork pods.
                host_port = _int_field(port.get("containerPort"), f"{where}.containerPort")
            if host_port > 0:
                ports.append(sanitize_host_port(port.get("hostIP"), port.get("protocol"), host_port))
    return tuple(ports)


def _tolerations(raw: Any) -> tuple[Toleration, ...]:
    if not raw:
        return ()
    if not isinstance(raw, list):
        raise ParseError(f"spec.tolerations: expected a list, got {type(raw).__name__}")
    out = []
    for i, t in enumerate(raw):
        if not isinstance(t, dict):
            raise ParseError(f"spec.tolerations[{i}]: expected an object")
        out.append(
            Toleration(
                str(t.get("key") or ""),
                str(t.get("operator") or ""),
                str(t.get("value") or ""),
                str(t.get("effect") or ""),
            )
        )
    return tuple(out)


# Volume sources no scheduler plugin looks at (node-independent or always attachable): dropped at parse time
# so the cache does not keep the kube-api-access projected volume of every pod.
_IGNORED_VOLUME_SOURCES = frozenset({"configMap", "secret", "downwardAPI", "projected", "emptyDir"})


def _volumes(
    spec: Mapping[str, Any], pod_name: str
) -> tuple[tuple[JSON, ...], tuple[str, ...], tuple[str, ...]]:
    """(volumes a plugin may check, claim names the pod uses, persistentVolumeClaim claim names only)."""
    raw = spec.get("volumes")
    if not raw:
        return (), (), ()
    if not isinstance(raw, list):
        raise ParseError(f"spec.volumes: expected a list, got {type(raw).__name__}")
    kept: list[JSON] = []
    claims: list[str] = []
    pvc_sources: list[str] = []
    for i, vol in enumerate(raw):
        if not isinstance(vol, dict):
            raise ParseError(f"spec.volumes[{i}]: expected an object")
        sources = [k for k in vol if k != "name"]
        if sources and all(k in _IGNORED_VOLUME_SOURCES for k in sources):
            continue
        kept.append(vol)
        pvc = vol.get("persistentVolumeClaim")
        if isinstance(pvc, dict) and pvc.get("claimName"):
            claims.append(str(pvc["claimName"]))
            pvc_sources.append(str(pvc["claimName"]))
        elif vol.get("ephemeral") is not None:
            claims.append(f"{pod_name}-{vol.get('name')}")  # ephemeral.VolumeClaimName
    return tuple(kept), tuple(claims), tuple(pvc_sources)


def _image_volumes(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """Normalized references of image volumes (an image volume counts even with an empty reference)."""
    out: list[str] = []
    for vol in spec.get("volumes") or ():
        if isinstance(vol, dict) and isinstance(vol.get("image"), dict):
            out.append(normalized_image_name(str(vol["image"].get("reference") or "")))
    return tuple(out)


def _pod_affinity_flags(affinity: Mapping[str, Any] | None) -> tuple[bool, bool]:
    """(has pod affinity or anti-affinity, has required anti-affinity terms)."""
    if not affinity:
        return False, False
    pa = affinity.get("podAffinity")
    paa = affinity.get("podAntiAffinity")
    required_anti = bool(isinstance(paa, dict) and paa.get("requiredDuringSchedulingIgnoredDuringExecution"))
    return bool(pa or paa), required_anti


def _condition_flags(status: Mapping[str, Any]) -> tuple[bool, bool] | None:
    """Whether status.conditions has a DisruptionTarget and a PodResizePending condition, in one pass when
    every condition is a dict (None: not so, and the checks below must read each condition)."""
    conditions = status.get("conditions")
    if conditions is None:
        return False, False
    if type(conditions) is not list:
        return None
    disruption = resize = False
    for c in conditions:
        if type(c) is not dict:
            return None
        kind = c.get("type")
        if kind == _DISRUPTION_TARGET:
            disruption = True
        elif kind == RESIZE_PENDING:
            resize = True
    return disruption, resize


_DISRUPTION_TARGET: Final = "DisruptionTarget"


def _preempted_by_scheduler(status: Mapping[str, Any]) -> bool:
    for cond in status.get("conditions") or []:
        if (
            isinstance(cond, dict)
            and cond.get("type") == _DISRUPTION_TARGET
            and cond.get("status") == "True"
            and cond.get("reason") == "PreemptionByScheduler"
        ):
            return True
    return False


def _controller(meta: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """(kind, name, uid, apiVersion) of the pod's controller owner reference (the last one marked), or ""s."""
    owner = ("", "", "", "")
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            owner = (str(ref.get("kind", "")), str(ref.get("name", "")), str(ref.get("uid", "")),
                     str(ref.get("apiVersion", "")))
    return owner


def parse_pod(obj: Mapping[str, Any]) -> PodInfo:
    """Parse a v1 Pod dict; raise ParseError naming the field when the pod cannot be understood."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec")
    if not isinstance(meta, dict) or not meta.get("name"):
        raise ParseError("metadata.name: required")
    if not isinstance(spec, dict):
        raise ParseError("spec: required")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise ParseError("spec.containers: at least one container is required")
    for i, c in enumerate(containers):
        if not isinstance(c, dict):
            raise ParseError(f"spec.containers[{i}]: expected an object")
    init_containers = spec.get("initContainers") or []
    if not isinstance(init_containers, list) or not all(isinstance(c, dict) for c in init_containers):
        raise ParseError("spec.initContainers: expected a list of objects")
    requests, nz_cpu, nz_mem = compute_pod_requests(spec)
    node_selector = spec.get("nodeSelector") or {}
    if not isinstance(node_selector, dict):
        raise ParseError("spec.nodeSelector: expected a map of strings")
    affinity = spec.get("affinity")
    if affinity is not None and not isinstance(affinity, dict):
        raise ParseError("spec.affinity: expected an object")
    images = [c.get("image") or "" for c in (spec.get("initContainers") or [])]
    images += [c.get("image") or "" for c in containers]
    image_volumes = _image_volumes(spec)
    owner_kind, owner_name, owner_uid, owner_api_version = _controller(meta)
    namespace = str(meta.get("namespace") or "default")
    status = obj.get("status") or {}
    if not isinstance(status, dict):
        status = {}
    volumes, pvc_names, claim_names = _volumes(spec, str(meta["name"]))
    spread = spec.get("topologySpreadConstraints") or []
    if not isinstance(spread, list) or not all(isinstance(c, dict) for c in spread):
        raise ParseError("spec.topologySpreadConstraints: expected a list of objects")
    claims = spec.get("resourceClaims") or []
    if not isinstance(claims, list):
        raise ParseError("spec.resourceClaims: expected a list")
    if not all(isinstance(c, dict) for c in claims):
        raise ParseError("spec.resourceClaims: expected a list of objects")
    claim_statuses: tuple[tuple[str, str | None], ...] = ()
    extended_claim = ""
    if claims or status.get("extendedResourceClaimStatus"):
        claim_statuses, extended_claim = _claim_statuses(status)
    has_affinity, required_anti = _pod_affinity_flags(affinity)
    try:
        inferred_features = infer_for_scheduling(spec)
    except FeatureInferenceError as exc:
        raise ParseError(str(exc)) from exc
    container_requests = None
    if (spec.get("resources") or {}).get("requests"):
        container_requests = compute_pod_requests(spec, pod_level=False)
        if container_requests == (requests, nz_cpu, nz_mem):
            container_requests = None
    accounted = None
    if uses_status_resources(spec, status):
        accounted = compute_node_accounting(spec, status)
        if accounted == (requests, nz_cpu, nz_mem):
            accounted = None
    return PodInfo(
        uid=str(meta.get("uid") or f"{namespace}/{meta['name']}"),
        namespace=namespace,
        name=str(meta["name"]),
        node_name=str(spec.get("nodeName") or ""),
        scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
        priority=_int_field(spec.get("priority"), "spec.priority"),
        labels=dict(meta.get("labels") or {}),
        terminating=bool(meta.get("deletionTimestamp")),
        phase=str(status.get("phase") or ""),
        requests=requests,
        non_zero_cpu=nz_cpu,
        non_zero_memory=nz_mem,
        host_ports=_pod_host_ports(spec),
        tolerations=_tolerations(spec.get("tolerations")),
        node_selector={str(k): str(v) for k, v in node_selector.items()},
        affinity=affinity or None,
        images=tuple(normalized_image_name(i) for i in images if i),
        num_containers=len(images),
        image_volumes=image_volumes,
        nominated_node_name=str(status.get("nominatedNodeName") or ""),
        scheduling_gates=tuple(str(g.get("name", "")) for g in spec.get("schedulingGates") or []),
        preemption_policy=str(spec.get("preemptionPolicy") or "PreemptLowerPriority"),
        owner_kind=owner_kind,
        owner_name=owner_name,
        resource_version=str(meta.get("resourceVersion") or ""),
        generation=_int_field(meta.get("generation"), "metadata.generation"),
        creation_timestamp=str(meta.get("creationTimestamp") or ""),
        # Only the queue compares it (a pending pod's spec change); a bound pod never needs it.
        spec_fingerprint=0 if spec.get("nodeName") else hash(repr(sorted(spec.items(), key=lambda kv: kv[0]))),
        topology_spread_constraints=tuple(spread),
        volumes=volumes,
        pvc_names=pvc_names,
        claim_names=claim_names,
        resource_claims=tuple(claims),
        resource_claim_statuses=claim_statuses,
        extended_resource_claim=extended_claim,
        extended_requests=_extended_requests(spec) if requests.scalar else (),
        has_pod_affinity=has_affinity,
        has_required_anti_affinity=required_anti,
        start_time=str(status.get("startTime") or ""),
        preempted_by_scheduler=_preempted_by_scheduler(status),
        owner_uid=owner_uid,
        owner_api_version=owner_api_version,
        inferred_features=inferred_features,
        accounted=accounted,
        container_requests=container_requests,
        annotations=_annotations(meta),
        raw=None if spec.get("nodeName") else MappingProxyType(obj) if isinstance(obj, dict) else obj,
    )


# PodInfo's fields parse_pod derives from the spec alone when spec.nodeName is set (it then keeps no raw object
# and no fingerprint): what the bound pods of one Deployment share. parse_pod_like reads the others per pod.
SPEC_FIELDS: Final = frozenset({
    "scheduler_name", "priority", "requests", "non_zero_cpu", "non_zero_memory", "host_ports", "tolerations",
    "node_selector", "affinity", "images", "num_containers", "image_volumes", "scheduling_gates",
    "preemption_policy", "topology_spread_constraints", "resource_claims", "extended_requests",
    "has_pod_affinity", "has_required_anti_affinity", "inferred_features", "container_requests",
})


def parse_pod_like(template: PodInfo, obj: Mapping[str, Any]) -> PodInfo:
    """parse_pod of a bound pod whose spec equals (value and type, spec.nodeName aside) the spec `template`
    was parsed from, also a bound pod's: the caller proves it (simulate keys specs with validation's
    PodSpecMemo). The spec's fields are shared as `with_node` shares them; the object's own are read from obj.
    Whatever does not fit that, or fails, goes to parse_pod, so results and errors are parse_pod's own."""
    meta, spec = obj.get("metadata"), obj.get("spec")
    if (
        not template.node_name
        or not isinstance(meta, dict)
        or not meta.get("name")
        or not isinstance(spec, dict)
        or not spec.get("nodeName")
    ):
        return parse_pod(obj)
    try:
        name = str(meta["name"])
        namespace = str(meta.get("namespace") or "default")
        status = obj.get("status") or {}
        if not isinstance(status, dict):
            status = {}
        if template.pvc_names == template.claim_names:  # no ephemeral volume: the claim names do not name the pod
            volumes, pvc_names, claim_names = template.volumes, template.pvc_names, template.claim_names
        else:
            volumes, pvc_names, claim_names = _volumes(spec, name)
        claim_statuses: tuple[tuple[str, str | None], ...] = ()
        extended_claim = ""
        if template.resource_claims or status.get("extendedResourceClaimStatus"):
            claim_statuses, extended_claim = _claim_statuses(status)
        requests = (template.requests, template.non_zero_cpu, template.non_zero_memory)
        accounted = None
        flags = _condition_flags(status)  # usually no DisruptionTarget or PodResizePending: both loops skipped
        preempted = _preempted_by_scheduler(status) if flags is None or flags[0] else False
        if uses_status_resources(spec, status, skip_conditions=flags is not None and not flags[1]):
            accounted = compute_node_accounting(spec, status)
            if accounted == requests:
                accounted = None
        owner_kind, owner_name, owner_uid, owner_api_version = _controller(meta)
        # The template's spec fields as they are (SPEC_FIELDS); every other field is the pod's own.
        info = _copy_pod_info(template)
        info.uid = str(meta.get("uid") or f"{namespace}/{name}")
        info.namespace = namespace
        info.name = name
        info.node_name = str(spec["nodeName"])
        info.labels = dict(meta.get("labels") or {})
        info.terminating = bool(meta.get("deletionTimestamp"))
        info.phase = str(status.get("phase") or "")
        info.nominated_node_name = str(status.get("nominatedNodeName") or "")
        info.owner_kind = owner_kind
        info.owner_name = owner_name
        info.resource_version = str(meta.get("resourceVersion") or "")
        info.generation = _int_field(meta.get("generation"), "metadata.generation")
        info.creation_timestamp = str(meta.get("creationTimestamp") or "")
        info.spec_fingerprint = 0
        info.volumes, info.pvc_names, info.claim_names = volumes, pvc_names, claim_names
        info.resource_claim_statuses = claim_statuses
        info.extended_resource_claim = extended_claim
        info.claim_overrides = ()
        info.start_time = str(status.get("startTime") or "")
        info.preempted_by_scheduler = preempted
        info.owner_uid = owner_uid
        info.owner_api_version = owner_api_version
        info.accounted = accounted
        info.derived = {}
        info.annotations = _annotations(meta)
        info.raw = None
        return info
    except (ParseError, KeyError, TypeError, AttributeError, ValueError):
        return parse_pod(obj)


# ---------------------------------------------------------------------------------------------------------
# Nodes


@dataclass(slots=True, eq=False)
class NodeRecord:
    """What the scheduler needs to know about a node, parsed once per object change."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    allocatable: Resource = field(default_factory=Resource)
    images: dict[str, int] = field(default_factory=dict)  # image name as status.images lists it -> size in bytes
    zone: str = ""
    resource_version: str = ""
    declared_features: frozenset[str] = frozenset()  # status.declaredFeatures (NodeDeclaredFeatures)
    # The object as the watch delivered it (read-only view of the decoded dict, not a copy; nodes are few).
    raw: Mapping[str, Any] | None = None

    @property
    def annotations(self) -> Mapping[str, str]:
        """metadata.annotations."""
        meta = self.raw.get("metadata") if self.raw is not None else None
        annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
        return annotations if isinstance(annotations, Mapping) else NO_ANNOTATIONS

    @property
    def conditions(self) -> Sequence[Mapping[str, Any]]:
        """status.conditions (Ready, MemoryPressure, ...)."""
        return _conditions(self.raw)


def parse_node(obj: Mapping[str, Any]) -> NodeRecord:
    """Parse a v1 Node dict; raise ParseError naming the field when it cannot be understood."""
    meta = obj.get("metadata") or {}
    if not isinstance(meta, dict) or not meta.get("name"):
        raise ParseError("metadata.name: required")
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    taints = []
    for i, t in enumerate(spec.get("taints") or []):
        if not isinstance(t, dict) or not t.get("key") or not t.get("effect"):
            raise ParseError(f"spec.taints[{i}]: key and effect are required")
        taints.append(Taint(str(t["key"]), str(t.get("value") or ""), str(t["effect"])))
    allocatable = status.get("allocatable") or status.get("capacity") or {}
    images: dict[str, int] = {}
    for img in status.get("images") or []:
        size = _int_field(img.get("sizeBytes"), "status.images[].sizeBytes")
        for name in img.get("names") or []:
            # Stored as listed (upstream normalizes only the pod's image names, so a node listing "nginx"
            # holds no "nginx:latest"); a name listed twice keeps its first size, as the cache's first add.
            images.setdefault(str(name), size)
    try:
        declared = parse_declared_features(status.get("declaredFeatures"))
    except FeatureInferenceError as exc:
        raise ParseError(str(exc)) from exc
    return NodeRecord(
        name=str(meta["name"]),
        labels=labels,
        taints=tuple(taints),
        unschedulable=bool(spec.get("unschedulable")),
        allocatable=Resource.from_list(allocatable, "status.allocatable"),
        images=images,
        zone=zone_key(labels),
        resource_version=str(meta.get("resourceVersion") or ""),
        declared_features=declared,
        raw=_without_managed_fields(obj),
    )


def _without_managed_fields(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only view of a node object without metadata.managedFields: the server-side apply bookkeeping is
    no scheduling input and half of a node's decoded size (5000 nodes: 58 MiB of RSS with it, see
    bench/cache_rss.py). Two small dicts are new; everything else is the decoded object's own."""
    meta = obj.get("metadata")
    if isinstance(meta, Mapping) and "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return MappingProxyType(obj) if isinstance(obj, dict) else obj


MEMO_LIMIT: Final = 64  # entries of NodeInfo.memo kept before it is emptied


def memo_lookup(nodes: Sequence[NodeInfo], key: str) -> list[Any]:
    """Each node's memoized value for key (None where absent); a list comprehension is the fastest way.

    Keys are strings because a str caches its hash: a tuple key would be re-hashed on every node's lookup.
    All None while caches are disabled (`scheduler.caching`): every node is computed.
    """
    if not caching.ENABLED:
        return [None] * len(nodes)
    return [n.memo.get(key) for n in nodes]


class NodeInfo:
    """A node and the pods the scheduler believes are on it, with their summed requests and ports."""

    __slots__ = (
        "generation",
        "memo",
        "name",
        "node",
        "non_zero_cpu",
        "non_zero_memory",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "pvc_ref_counts",
        "requested",
        "used_ports",
    )

    def __init__(self, name: str, node: NodeRecord | None = None) -> None:
        self.name = name
        self.node = node
        self.pods: dict[str, PodInfo] = {}
        self.requested = Resource()
        self.non_zero_cpu = 0
        self.non_zero_memory = 0
        self.used_ports = HostPortInfo()
        # Pods with pod (anti-)affinity and with required anti-affinity (upstream PodsWithAffinity /
        # PodsWithRequiredAntiAffinity), so InterPodAffinity need not look at every pod of every node.
        self.pods_with_affinity: dict[str, PodInfo] = {}
        self.pods_with_required_anti_affinity: dict[str, PodInfo] = {}
        # "namespace/claim" -> pods on this node using it through a persistentVolumeClaim volume (PodPVCKeys)
        self.pvc_ref_counts: dict[str, int] = {}
        self.generation = 0
        # Per-node results of plugins keyed by (plugin, pod shape); valid while the pods stay the same.
        # A clone starts empty and add_pod/remove_pod clear it, so a changed node is always recomputed.
        self.memo: dict[Any, Any] = {}

    @property
    def allocatable(self) -> Resource:
        return self.node.allocatable if self.node is not None else Resource()

    def remember(self, key: Any, value: Any) -> Any:
        """Store a plugin result in `memo` (bounded: a node that never changes sees many pod shapes).

        Stores nothing while caches are disabled (`scheduler.caching`), so every lookup misses.
        """
        if not caching.ENABLED:
            return value
        memo = self.memo
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        memo[key] = value
        return value

    def add_pod(self, pod: PodInfo) -> None:
        self.memo.clear()
        self.pods[pod.uid] = pod
        if pod.accounted is None:
            self.requested.add(pod.requests)
            self.non_zero_cpu += pod.non_zero_cpu
            self.non_zero_memory += pod.non_zero_memory
        else:
            requests, nz_cpu, nz_mem = pod.accounted
            self.requested.add(requests)
            self.non_zero_cpu += nz_cpu
            self.non_zero_memory += nz_mem
        for hp in pod.host_ports:
            self.used_ports.add(hp)
        if pod.has_pod_affinity:
            self.pods_with_affinity[pod.uid] = pod
        if pod.has_required_anti_affinity:
            self.pods_with_required_anti_affinity[pod.uid] = pod
        if pod.claim_names:
            counts = self.pvc_ref_counts
            for claim in pod.claim_names:
                key = f"{pod.namespace}/{claim}"
                counts[key] = counts.get(key, 0) + 1

    def remove_pod(self, uid: str) -> PodInfo | None:
        pod = self.pods.pop(uid, None)
        if pod is None:
            return None
        self.memo.clear()
        if pod.accounted is None:
            self.requested.sub(pod.requests)
            self.non_zero_cpu -= pod.non_zero_cpu
            self.non_zero_memory -= pod.non_zero_memory
        else:
            requests, nz_cpu, nz_mem = pod.accounted
            self.requested.sub(requests)
            self.non_zero_cpu -= nz_cpu
            self.non_zero_memory -= nz_mem
        for hp in pod.host_ports:
            self.used_ports.remove(hp)
        self.pods_with_affinity.pop(uid, None)
        self.pods_with_required_anti_affinity.pop(uid, None)
        if pod.claim_names:
            counts = self.pvc_ref_counts
            for claim in pod.claim_names:
                key = f"{pod.namespace}/{claim}"
                left = counts.get(key, 0) - 1
                if left > 0:
                    counts[key] = left
                else:
                    counts.pop(key, None)
        return pod

    def clone(self) -> NodeInfo:
        other = NodeInfo(self.name, self.node)
        other.pods = dict(self.pods)
        other.requested = self.requested.clone()
        other.non_zero_cpu = self.non_zero_cpu
        other.non_zero_memory = self.non_zero_memory
        other.used_ports = self.used_ports.clone()
        if self.pods_with_affinity:
            other.pods_with_affinity = dict(self.pods_with_affinity)
        if self.pods_with_required_anti_affinity:
            other.pods_with_required_anti_affinity = dict(self.pods_with_required_anti_affinity)
        if self.pvc_ref_counts:
            other.pvc_ref_counts = dict(self.pvc_ref_counts)
        other.generation = self.generation
        return other

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r}, pods={len(self.pods)})"
