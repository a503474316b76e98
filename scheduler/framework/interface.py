"""Extension points, cycle state and the handle plugins get (upstream framework/interface.go).

A plugin subclasses the extension points it implements, exactly as a Go plugin satisfies the interfaces it
needs. Filter and Score have a per-node method plus a batch method over many nodes; the framework calls the
batch method, whose default loops over the per-node one. Hot plugins override the batch method so a cycle
over 5000 nodes stays one Python loop per plugin instead of one call per node and plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Flag, IntEnum, auto
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from scheduler.framework.fit_error import NodeToStatus
from scheduler.framework.objects import ObjectLister
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, PodInfo, QueuedPodInfo

if TYPE_CHECKING:
    from scheduler.framework.snapshot import Snapshot

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class CycleState(dict[str, Any]):
    """Per-attempt scratch space plugins write in PreFilter/PreScore and read in Filter/Score.

    `pods_to_activate` is upstream's PodsToActivate (state key "kubernetes.io/pods-to-activate"): pods a
    plugin puts there (keyed "namespace/name") move from the unschedulable pool or backoffQ to activeQ at
    the end of a successful scheduling cycle, and again at the end of a successful binding cycle (a gang
    member waiting at Permit activates its siblings this way).
    """

    __slots__ = ("pods_to_activate", "record_plugin_metrics", "skip_filter_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        super().__init__()
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        # Upstream times each plugin only in a sample of cycles (pluginMetricsSamplePercent = 10).
        self.record_plugin_metrics = False
        self.pods_to_activate: dict[str, PodInfo] = {}

    def clone(self) -> CycleState:
        """A copy for a what-if evaluation (nominated pods added, preemption victims removed): upstream's
        CycleState.Clone. Values with a `clone()` method are cloned (state that a PreFilter extension's
        add_pod/remove_pod mutates must have one); other values are shared and must not be mutated."""
        other = CycleState()
        other.skip_filter_plugins = set(self.skip_filter_plugins)
        other.skip_score_plugins = set(self.skip_score_plugins)
        other.record_plugin_metrics = self.record_plugin_metrics
        other.pods_to_activate = self.pods_to_activate  # shared, as upstream's Clone returns the same map
        for key, value in self.items():
            clone = getattr(value, "clone", None)
            other[key] = clone() if callable(clone) else value
        return other


@dataclass(slots=True)
class PreFilterResult:
    """Narrows the nodes to filter; None node_names means "all nodes"."""

    node_names: set[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return PreFilterResult(set(other.node_names))
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(slots=True)
class PostFilterResult:
    """What a PostFilter plugin (preemption) asks for the pod: nominate it to this node (ModeOverride; ""
    clears a nomination). A None result leaves the pod's nomination as it is (ModeNoop)."""

    nominated_node_name: str = ""


class ActionType(Flag):
    """What happened to a resource; mirrors framework.ActionType for queueing decisions."""

    ADD = auto()
    DELETE = auto()
    UPDATE_NODE_ALLOCATABLE = auto()
    UPDATE_NODE_LABEL = auto()
    UPDATE_NODE_TAINT = auto()
    UPDATE_NODE_CONDITION = auto()
    UPDATE_NODE_ANNOTATION = auto()
    UPDATE_NODE_DECLARED_FEATURE = auto()  # status.declaredFeatures changed (NodeDeclaredFeatures)
    UPDATE_POD_LABEL = auto()
    UPDATE_POD_SCALE_DOWN = auto()
    UPDATE_POD_TOLERATION = auto()
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = auto()
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = auto()
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_NODE_DECLARED_FEATURE
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
    )
    ALL = ADD | DELETE | UPDATE


NODE = "Node"
ASSIGNED_POD = "AssignedPod"
UNSCHEDULED_POD = "UnscheduledPod"
WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A change in the cluster that may make a rejected pod schedulable (resource + action)."""

    resource: str
    action: ActionType
    label: str = ""

    def matches(self, registered: ClusterEvent) -> bool:
        """Whether this concrete event is covered by an event a plugin registered for."""
        if registered.resource == WILDCARD:
            return True
        return registered.resource == self.resource and bool(registered.action & self.action)


class QueueingHint(IntEnum):
    """Whether an event may make a pod a plugin rejected schedulable (upstream fwk.QueueingHint)."""

    QUEUE_SKIP = 0
    QUEUE = 1


QueueingHintFn = Callable[[PodInfo, Any, Any], QueueingHint]
"""`hint(pod, old, new)`: called for a pod the plugin rejected when a registered event happens; `old` and
`new` are the object before and after (None for an add or a delete): a NodeRecord for Node events, a PodInfo
for pod events, the raw dict for other kinds. Raising counts as QUEUE, so a buggy hint never strands a pod."""


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """A registered event with an optional QueueingHint function (upstream fwk.ClusterEventWithHint);
    without one, every matching event requeues the pods the plugin rejected."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None


# Events the queue reacts to for pods no plugin claims (e.g. rejected by an Error), and the 5 min flush.
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ActionType.ALL, "UnschedulableTimeout")
EVENT_FORCE_ACTIVATE = ClusterEvent(WILDCARD, ActionType.ALL, "ForceActivate")


class Binder(Protocol):
    """The write the DefaultBinder needs; provided by the cluster or the in-memory adapter."""

    async def bind(self, pod: PodInfo, node_name: str) -> Status | None: ...


class VolumeWriter(Protocol):
    """The PV and PVC writes VolumeBinding's PreBind makes: full updates (PUT), as upstream's binder does.

    Each returns the object as the API server stored it; implementations time out every call and raise on
    failure with the API server's message (which becomes the pod's failure message).
    """

    async def update_persistent_volume(self, pv: Mapping[str, Any]) -> dict[str, Any]: ...

    async def update_persistent_volume_claim(self, pvc: Mapping[str, Any]) -> dict[str, Any]: ...


class ConflictError(Exception):
    """A write was refused because the object changed meanwhile (409 Conflict): re-read it and retry."""


class NotFoundError(Exception):
    """The object of a write or a read does not exist (404)."""


class ClaimWriter(Protocol):
    """The ResourceClaim (and pod status) writes DynamicResources makes, as upstream's plugin makes them.

    Each returns the object as the API server stored it. Implementations time out every call and raise
    ConflictError (409), NotFoundError (404) or another exception whose text is the API server's message
    (which becomes the pod's failure message).
    """

    async def get_resource_claim(self, namespace: str, name: str) -> dict[str, Any]:
        """GET the claim (after a conflict, the latest version)."""
        ...

    async def create_resource_claim(self, claim: Mapping[str, Any]) -> dict[str, Any]:
        """POST a claim (the one the scheduler makes for extended resources backed by DRA)."""
        ...

    async def update_resource_claim(self, claim: Mapping[str, Any]) -> dict[str, Any]:
        """PUT the claim (metadata.finalizers)."""
        ...

    async def update_resource_claim_status(self, claim: Mapping[str, Any]) -> dict[str, Any]:
        """PUT the claim's status subresource (allocation, reservedFor; deallocation)."""
        ...

    async def unreserve_resource_claim(self, namespace: str, name: str, claim_uid: str, pod_uid: str) -> None:
        """Remove one consumer from status.reservedFor (a strategic merge patch of the status, so it needs no
        latest version)."""
        ...

    async def delete_resource_claim(self, namespace: str, name: str) -> None:
        """DELETE the claim (NotFoundError when it is gone already)."""
        ...

    async def patch_pod_extended_resource_claim_status(self, pod: PodInfo, status: Mapping[str, Any]) -> None:
        """Set the pod's status.extendedResourceClaimStatus (the claim made for its extended resources)."""
        ...

    def record_pod_event(self, pod: PodInfo, event_type: str, reason: str, action: str, note: str) -> None:
        """Emit an event about the pod (e.g. Normal BindingConditionsPending), asynchronously."""
        ...


class WaitingPodView(Protocol):
    """A pod parked at Permit (upstream framework.WaitingPod): allow or reject it from any plugin code."""

    @property
    def pod(self) -> PodInfo: ...

    def pending_plugins(self) -> list[str]:
        """The Permit plugins that have not allowed the pod yet."""
        ...

    def allow(self, plugin: str) -> None:
        """`plugin` lets the pod go; it binds once every waiting plugin allowed it."""
        ...

    def reject(self, plugin: str, message: str) -> bool:
        """Fail the pod's attempt: it goes back to the queue as unschedulable with `message`. False when
        the pod's wait was already decided (allowed, rejected or timed out)."""
        ...


class PodNominator(Protocol):
    """The pods nominated to run on nodes (upstream fwk.PodNominator), as Filter runs read them."""

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...

    def has_nominations(self) -> bool: ...


class Handle(Protocol):
    """What plugins may use from the scheduler (upstream framework.Handle, the parts pyscheduler has).

    - `snapshot()`: the snapshot of the running scheduling cycle (read-only);
    - `binder`: the write DefaultBinder uses;
    - `objects`: Namespaces, PVCs, ConfigMaps... of the kinds the plugin declared in `object_kinds`;
    - waiting pods: Permit plugins that return WAIT find their pods again here to allow or reject them;
    - `volume_writer` and `pod_exists`: VolumeBinding's PreBind writes PVs/PVCs and stops once its pod is gone;
    - `claim_writer`: DynamicResources' PreBind, PostFilter and Unreserve write ResourceClaims.
    """

    def snapshot(self) -> Snapshot: ...

    @property
    def binder(self) -> Binder: ...

    @property
    def objects(self) -> ObjectLister: ...

    def get_waiting_pod(self, uid: str) -> WaitingPodView | None: ...

    def iterate_over_waiting_pods(self) -> Sequence[WaitingPodView]: ...

    def reject_waiting_pod(self, uid: str) -> bool:
        """Reject a waiting pod (as upstream RejectWaitingPod); False when it was not waiting."""
        ...

    @property
    def volume_writer(self) -> VolumeWriter: ...

    def pod_exists(self, uid: str) -> bool:
        """Whether the scheduler still knows the pod (upstream's pod lister Get): False once it was deleted."""
        ...

    @property
    def claim_writer(self) -> ClaimWriter: ...


# ---------------------------------------------------------------------------------------------------------
# Extension points


class Plugin:
    """Base of every plugin; `name` is the registry name used in configuration.

    `object_kinds` names the cluster objects besides nodes and pods the plugin reads through
    `Handle.objects` (kinds of `scheduler.framework.objects.KINDS`); the scheduler watches exactly those.
    """

    name: ClassVar[str] = ""
    object_kinds: ClassVar[tuple[str, ...]] = ()


class EnqueueExtensions:
    """Plugins that can reject pods say which cluster events could make those pods schedulable again
    (upstream EventsToRegister), each optionally with a QueueingHint function that looks at the pod and
    the changed object to skip events that cannot help it."""

    def events_to_register(self) -> Sequence[ClusterEvent | ClusterEventWithHint]:
        return [ClusterEvent(WILDCARD, ActionType.ALL)]


class SignPlugin:
    """Plugins that let the scheduler reuse their per-node results across pods of one shape (upstream
    fwk.SignPlugin, KEP-5598 OpportunisticBatching).

    `sign_pod` returns a hashable fragment of what the plugin reads from the pod: two pods with equal
    fragments must get the same Filter verdict and the same raw Score from this plugin on the same NodeInfo,
    in any cycle. None refuses: the pod's results are then never reused. A profile with a PreFilter, Filter,
    PreScore or Score plugin that is not a SignPlugin reuses nothing (the safe default for plugins written
    before this existed).

    `sign_reads_cluster`: the plugin's verdicts or scores read more than the pod and the node evaluated (other
    nodes' pods, claims, Services...). Its Filter verdicts are then never kept: other plugins' are reused only
    in cycles where its PreFilter returned Skip; it scores every node afresh unless its PreScore said Skip.
    Such a plugin needs no fragment (the default one is empty).
    """

    sign_reads_cluster: ClassVar[bool] = False

    def sign_pod(self, pod: PodInfo) -> Any:
        """The fragment of the pod this plugin's results depend on (hashable), or None to refuse."""
        return () if self.sign_reads_cluster else None


@dataclass(frozen=True, slots=True)
class ExplainDetail:
    """One plugin-specific line of an explanation ("host port TCP 0.0.0.0:53 is held by pod ns/p"), with the
    same facts as structured data for JSON output."""

    text: str
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FixCandidate:
    """A change that might let a pod schedule, proposed by the plugin that rejected it somewhere.

    The explain engine never trusts the proposal: it applies `pod` (to the pod) and/or `snapshot` (to the
    cluster's nodes) to copies, re-runs every PreFilter/Filter on every node, and reports the nodes that
    become feasible. Candidates with the same `key` are one change; of those, the one with the largest
    `magnitude` is tried first (the smallest change: the largest request that still fits somewhere); the
    others are the steps of a ladder ("cpu <= 1800m: 1 node; <= 500m: 3 nodes"), each labelled by `step`.
    `data` is the change in structured form for JSON, applied literally (`{"toleration": {...}}`,
    `{"resource": "cpu", "request": "1500m"}`...; docs/explain.md). `partial` says the change alone cannot
    lift this plugin's rejection of the node (the node needs another of the plugin's proposals too), so the
    engine keeps it for combinations only.
    """

    key: str
    kind: str
    description: str
    pod: Callable[[PodInfo], PodInfo] | None = None
    snapshot: Callable[[Snapshot], Snapshot] | None = None
    magnitude: float = 0.0
    data: Mapping[str, Any] = field(default_factory=dict)
    step: str = ""
    partial: bool = False


class ExplainExtensions:
    """Filter plugins that can say more about a node than their reason string (which pods hold the port, the
    domain counts behind a skew...) and propose what would make the pod fit. `pyscheduler explain` calls
    both for every node it evaluates, after the plugin's own PreFilter/Filter ran on the same CycleState;
    `status` is the plugin's verdict (None: pass).
    """

    def explain_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status | None
    ) -> list[ExplainDetail]:
        return []

    def suggest_fixes(self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status) -> list[FixCandidate]:
        """Changes that could lift this plugin's rejection of `node` (called only for rejected nodes)."""
        return []


class ObjectEventHandler:
    """Plugins that react when an object of one of their `object_kinds` changes (e.g. a Permit plugin that
    allows waiting pods once a ConfigMap says so). Called after the object store is updated; must be cheap
    and must not block (it runs on the scheduler's loop)."""

    def on_object_event(self, kind: str, event_type: str | None, obj: Mapping[str, Any]) -> None:
        """event_type is ADDED, MODIFIED, DELETED, or None for an object from a LIST."""


class QueueSortPlugin(Plugin):
    """Orders activeQ (one per scheduler). Define `less` like upstream's Less; in-tree sorts define the
    faster `sort_key` instead (a heap key from the queue's own fields), which the queue then uses."""

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Whether `a` pops before `b` (upstream Less(QueuedPodInfo, QueuedPodInfo))."""
        raise NotImplementedError

    def sort_key(self, priority: int, timestamp: float, seq: int) -> tuple[Any, ...]:
        """A key such that smaller keys pop first (the heap form of Less)."""
        raise NotImplementedError


class PreEnqueuePlugin(Plugin):
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        raise NotImplementedError


class PreFilterExtensions(Protocol):
    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None: ...

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None: ...


class PreFilterPlugin(Plugin):
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        raise NotImplementedError

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None


class FilterPlugin(Plugin):
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        raise NotImplementedError

    def filter_batch(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> list[Status | None]:
        """Filter many nodes at once; the result is parallel to nodes. Override for speed."""
        f = self.filter
        return [f(state, pod, n) for n in nodes]


class PostFilterPlugin(Plugin):
    def post_filter(
        self, state: CycleState, pod: PodInfo, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        """Try to make an unschedulable pod schedulable later (preemption). `node_to_status` holds every
        node's Filter verdict (absent nodes share `node_to_status.absent_nodes_status`)."""
        raise NotImplementedError


class PreScorePlugin(Plugin):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        raise NotImplementedError


class ScorePlugin(Plugin):
    # True when normalize_score must run after scoring (upstream ScoreExtensions() != nil).
    has_normalize: ClassVar[bool] = False

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """Score one node in [0, 100] (before NormalizeScore); raise to report an Error."""
        raise NotImplementedError

    def score_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        s = self.score
        return [s(state, pod, n) for n in nodes]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[int]) -> Status | None:
        """Rescale scores (parallel to the scored nodes) in place."""
        return None


class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        """Return (status, timeout seconds); a WAIT status parks the pod until allowed or timed out."""
        raise NotImplementedError


class PreBindPlugin(Plugin):
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise NotImplementedError


class BindPlugin(Plugin):
    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Bind the pod; return a SKIP status to let the next bind plugin handle it."""
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError
