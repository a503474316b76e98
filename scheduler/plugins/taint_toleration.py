"""TaintToleration: taints repel pods that don't tolerate them (upstream plugins/tainttoleration, v1.37).

Filter looks at NoSchedule/NoExecute taints; Score counts untolerated PreferNoSchedule taints and
NormalizeScore reverses them so the node with the fewest gets 100.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    NODE,
    UNSCHEDULED_POD,
    ActionType,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    ExplainExtensions,
    FilterPlugin,
    FixCandidate,
    Handle,
    PreScorePlugin,
    ScorePlugin,
    SignPlugin,
)
from scheduler.framework.status import Status, unresolvable
from scheduler.framework.types import (
    DO_NOT_SCHEDULE_EFFECTS,
    NodeInfo,
    PodInfo,
    Taint,
    Toleration,
    find_untolerated_taint,
    tolerations_tolerate,
)
from scheduler.plugins.normalize import default_normalize_score

NAME = "TaintToleration"
PRE_SCORE_STATE_KEY = "PreScore" + NAME

# v1.35+ (PR #134740, cherry-picked to 1.34): the offending taint is only logged, not shown to users.
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"

_REJECT = unresolvable(ERR_REASON_UNTOLERATED, plugin=NAME)


def prefer_no_schedule_tolerations(tolerations: Iterable[Toleration]) -> tuple[Toleration, ...]:
    """Tolerations that can tolerate a PreferNoSchedule taint: that effect or empty (meaning all effects)."""
    return tuple(t for t in tolerations if not t.effect or t.effect == EFFECT_PREFER_NO_SCHEDULE)


def count_intolerable_prefer_no_schedule(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> int:
    """How many PreferNoSchedule taints the given tolerations leave untolerated."""
    count = 0
    for taint in taints:
        if taint.effect != EFFECT_PREFER_NO_SCHEDULE:
            continue
        for toleration in tolerations:
            if toleration.tolerates(taint):
                break
        else:
            count += 1
    return count


def _adding_toleration(toleration: Toleration) -> Callable[[PodInfo], PodInfo]:
    """A pod transform for a what-if fix: the same pod with one more toleration."""

    def add(pod: PodInfo) -> PodInfo:
        return pod.evolve(tolerations=(*pod.tolerations, toleration))

    return add


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions, ExplainExtensions, SignPlugin):
    """Filters on hard taints, scores on soft (PreferNoSchedule) ones."""

    name: ClassVar[str] = NAME
    has_normalize: ClassVar[bool] = True

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle

    def sign_pod(self, pod: PodInfo) -> tuple[Toleration, ...]:
        """spec.tolerations (upstream TolerationsSignerName)."""
        return pod.tolerations

    # ---------------------------------------------------------------- filter

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        record = node.node
        if record is None or not record.taints:
            return None
        return None if find_untolerated_taint(record.taints, pod.tolerations) is None else _REJECT

    def filter_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """Untainted nodes cost one attribute read; tainted ones are checked directly (no hashing of taints)."""
        tolerations = pod.tolerations
        out: list[Status | None] = []
        append = out.append
        for n in nodes:
            record = n.node
            if record is None or not record.taints or find_untolerated_taint(record.taints, tolerations) is None:
                append(None)
            else:
                append(_REJECT)
        return out

    # ---------------------------------------------------------------- score

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        """Keep only the tolerations that matter for PreferNoSchedule taints."""
        state[PRE_SCORE_STATE_KEY] = prefer_no_schedule_tolerations(pod.tolerations)
        return None

    def _tolerations(self, state: CycleState, pod: PodInfo) -> tuple[Toleration, ...]:
        cached: tuple[Toleration, ...] | None = state.get(PRE_SCORE_STATE_KEY)
        return cached if cached is not None else prefer_no_schedule_tolerations(pod.tolerations)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """Raw score: number of untolerated PreferNoSchedule taints (lower is better before normalize)."""
        record = node.node
        if record is None or not record.taints:
            return 0
        return count_intolerable_prefer_no_schedule(record.taints, self._tolerations(state, pod))

    def score_batch(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        tolerations = self._tolerations(state, pod)
        out: list[int] = []
        append = out.append
        for n in nodes:
            record = n.node
            if record is None or not record.taints:
                append(0)
            else:
                append(count_intolerable_prefer_no_schedule(record.taints, tolerations))
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[int]) -> Status | None:
        """Fewest untolerated soft taints -> 100 (DefaultNormalizeScore with reverse=true)."""
        return default_normalize_score(MAX_NODE_SCORE, True, scores)

    def suggest_fixes(self, state: CycleState, pod: PodInfo, node: NodeInfo, status: Status) -> list[FixCandidate]:
        """Tolerate each NoSchedule/NoExecute taint of the node the pod does not tolerate (one fix each)."""
        record = node.node
        if record is None:
            return []
        untolerated = [
            t
            for t in record.taints
            if t.effect in DO_NOT_SCHEDULE_EFFECTS and not tolerations_tolerate(pod.tolerations, t)
        ]
        out = []
        for taint in untolerated:
            toleration = Toleration(taint.key, "Equal", taint.value, taint.effect)
            text = f"{taint.key}={taint.value}:{taint.effect}" if taint.value else f"{taint.key}:{taint.effect}"
            out.append(
                FixCandidate(
                    key=f"tolerate:{text}",
                    kind="tolerate-taint",
                    description=f"tolerate taint {text}",
                    pod=_adding_toleration(toleration),
                    data={"toleration": {"key": taint.key, "operator": "Equal", "value": taint.value,
                                         "effect": taint.effect}},
                    partial=len(untolerated) > 1,  # the node has other taints the pod does not tolerate
                )
            )
        return out

    def events_to_register(self) -> list[ClusterEvent]:
        """A new node or changed taints, or a toleration added to the pod itself."""
        return [
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
            ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE_POD_TOLERATION),
        ]


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> TaintToleration:
    """Registry factory; TaintToleration takes no arguments."""
    return TaintToleration(raw_args, handle)
