"""Gang: a pyscheduler plugin that schedules a gang of pods all together or not at all (coscheduling).

A pod joins a gang with two labels: `gang.example.com/name: <gang>` (its namespace's gang of that name) and
`gang.example.com/size: "<N>"` (how many members must be placed together). Like scheduler-plugins'
Coscheduling, it works at four extension points:

- **PreEnqueue** holds every member back (gated, nothing tried) until N members of its gang exist;
- **QueueSort** orders by priority, then the gang's creation time (its oldest member's), then the gang, so
  the members of a gang are tried one after the other;
- **Permit** parks each placed member (its node reserved, not bound) until N members are placed, then
  allows them all at once; a member that waits longer than `timeoutSeconds` is rejected, and its
  **Unreserve** rejects every other waiting member of the gang: nothing is ever half-bound. The rejected
  members go back to the queue (unschedulable) and are tried again when a node is added or changes or a
  bound pod goes away (its EnqueueExtensions);
- a member reaching Permit also moves its siblings waiting in the queue to the front (CycleState's
  `pods_to_activate`), so a gang forms in consecutive cycles.

Members already bound before pyscheduler started are not counted (the plugin learns about members as they
pass through it). Enable it in a profile in place of PrioritySort (one QueueSort per scheduler):

    profiles:
    - schedulerName: pyscheduler
      plugins:
        multiPoint:
          enabled: [{name: Gang}]
        queueSort:
          disabled: [{name: PrioritySort}]
      pluginConfig:
      - name: Gang
        args: {timeoutSeconds: 60}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from scheduler.framework import (
    ASSIGNED_POD,
    NODE,
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EnqueueExtensions,
    Handle,
    PermitPlugin,
    PodInfo,
    PostBindPlugin,
    PreEnqueuePlugin,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
    Status,
    unresolvable,
)

NAME_LABEL = "gang.example.com/name"
SIZE_LABEL = "gang.example.com/size"
DEFAULT_TIMEOUT_SECONDS = 60.0  # Coscheduling's default permitWaitingTimeSeconds


@dataclass(frozen=True)
class GangArgs:
    """The plugin's pluginConfig args, validated."""

    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS


@dataclass
class GangState:
    """What the plugin knows of one gang: its members (pending or bound) as it saw them."""

    size: int
    members: dict[str, PodInfo] = field(default_factory=dict)  # uid -> latest version seen
    bound: set[str] = field(default_factory=set)
    created: str = ""  # the oldest member's metadata.creationTimestamp (RFC 3339 sorts as text)


def gang_of(pod: PodInfo) -> tuple[str, int] | None:
    """(gang key "namespace/name", size) of a member; None for a pod of no gang; ValueError for a bad size."""
    name = pod.labels.get(NAME_LABEL)
    if not name:
        return None
    raw = pod.labels.get(SIZE_LABEL, "")
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"label {SIZE_LABEL}: must be a positive integer, got {raw!r}")
    return f"{pod.namespace}/{name}", int(raw)


class Gang(PreEnqueuePlugin, QueueSortPlugin, ReservePlugin, PermitPlugin, PostBindPlugin, EnqueueExtensions):
    """All members of a gang bind together, or none does."""

    name: ClassVar[str] = "Gang"

    def __init__(self, args: GangArgs | None, handle: Handle) -> None:
        self.args = args or GangArgs()
        self.handle = handle
        self.gangs: dict[str, GangState] = {}

    @staticmethod
    def parse_args(raw: Mapping[str, Any] | None) -> GangArgs:
        raw = dict(raw or {})
        unknown = sorted(set(raw) - {"timeoutSeconds"})
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r}")
        timeout = raw.get("timeoutSeconds", DEFAULT_TIMEOUT_SECONDS)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError(f"timeoutSeconds: must be a number > 0, got {timeout!r}")
        return GangArgs(float(timeout))

    # ------------------------------------------------------------------ membership

    def _prune(self, state: GangState) -> None:
        """Members deleted since (gone from the scheduler) no longer count."""
        for uid in [u for u in state.members if not self.handle.pod_exists(u)]:
            del state.members[uid]
            state.bound.discard(uid)

    def _forget_gone(self) -> None:
        """Drop the gangs whose members are all gone (run when a new gang appears: memory stays bounded by
        the gangs that exist)."""
        for key, gang in list(self.gangs.items()):
            self._prune(gang)
            if not gang.members:
                del self.gangs[key]

    def _state(self, key: str, size: int) -> GangState:
        state = self.gangs.get(key)
        if state is None:
            self._forget_gone()
            state = self.gangs[key] = GangState(size)
        state.size = size  # the latest member's label wins
        self._prune(state)
        return state

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        try:
            gang = gang_of(pod)
        except ValueError as err:
            return unresolvable(str(err))
        if gang is None:
            return None
        key, size = gang
        state = self._state(key, size)
        state.members[pod.uid] = pod
        state.created = min(filter(None, (state.created, pod.creation_timestamp)), default="")
        if len(state.members) < size:
            return unresolvable(f"gang {key}: {len(state.members)} of {size} members exist, waiting for the rest")
        return None

    # ------------------------------------------------------------------ queue order

    def _sort_key(self, qpi: QueuedPodInfo) -> tuple[str, str]:
        pod = qpi.pod
        name = pod.labels.get(NAME_LABEL)
        state = self.gangs.get(f"{pod.namespace}/{name}") if name else None
        if state is None:
            return pod.creation_timestamp, pod.key
        return state.created, f"{pod.namespace}/{name}"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Coscheduling's Less: higher priority first, then the older gang (or pod), then by gang (a gang's
        members stay together), then the pod queued first."""
        if a.pod.priority != b.pod.priority:
            return a.pod.priority > b.pod.priority
        ka, kb = self._sort_key(a), self._sort_key(b)
        if ka != kb:
            return ka < kb
        return a.timestamp < b.timestamp

    # ------------------------------------------------------------------ reserve and permit

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None

    def _waiting_members(self, key: str) -> list[Any]:
        return [w for w in self.handle.iterate_over_waiting_pods() if _key(w.pod) == key]

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        gang = gang_of(pod)  # a bad label never passed PreEnqueue
        if gang is None:
            return None, 0.0
        key, size = gang
        gstate = self._state(key, size)
        gstate.members.setdefault(pod.uid, pod)
        waiting = self._waiting_members(key)
        placed = {w.pod.uid for w in waiting} | gstate.bound | {pod.uid}
        if len(placed) >= size:
            for w in waiting:
                w.allow(self.name)
            return None, 0.0
        # Bring the members still queued (gated, backing off or unschedulable) to the front.
        for uid, member in gstate.members.items():
            if uid not in placed:
                state.pods_to_activate[member.key] = member
        return Status(Code.WAIT), self.args.timeout_seconds

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """A member gave up its node (rejected, timed out, or its bind failed): the others cannot all bind
        now, so they give theirs up too rather than hold nodes for a gang that will not form."""
        name = pod.labels.get(NAME_LABEL)
        if not name:
            return
        key = f"{pod.namespace}/{name}"
        for w in self._waiting_members(key):
            if w.pod.uid != pod.uid:
                w.reject(self.name, f"gang {key}: member {pod.key} was not placed")

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        name = pod.labels.get(NAME_LABEL)
        gstate = self.gangs.get(f"{pod.namespace}/{name}") if name else None
        if gstate is not None:
            gstate.bound.add(pod.uid)

    # ------------------------------------------------------------------ requeueing

    def events_to_register(self) -> Sequence[ClusterEvent]:
        """Members rejected at Permit may fit once room appears: a node added or changed, a pod gone."""
        return [
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE),
            ClusterEvent(ASSIGNED_POD, ActionType.DELETE),
        ]


def _key(pod: PodInfo) -> str:
    name = pod.labels.get(NAME_LABEL)
    return f"{pod.namespace}/{name}" if name else ""
