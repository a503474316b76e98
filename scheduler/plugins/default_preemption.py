"""DefaultPreemption: evict lower-priority pods so a pod that fits nowhere can run (upstream
plugins/defaultpreemption/default_preemption.go, v1.37).

PostFilter: when Filter found no node, pick victims on one node through `Evaluator` (scheduler.framework.
preemption) and nominate the pod to it; the API calls run in the background (SchedulerAsyncPreemption is on by
default), during which PreEnqueue holds the pod back with `waiting for the preemption for this pod to be
finished`. Every message is upstream's: the PostFilter status is `preemption: ` followed by the evaluator's
message, which the FailedScheduling note and the PodScheduled condition end with.

Args (DefaultPreemptionArgs): minCandidateNodesPercentage (default 10, 0..100) and minCandidateNodesAbsolute
(default 100, >= 0; not both 0) bound how many candidate nodes the dry run looks for.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, cast

from scheduler.config.decode import (
    ARGS_ENVELOPE_FIELDS,
    FieldErrors,
    as_int,
    as_mapping,
    check_fields,
    check_kind,
    child,
)
from scheduler.framework.fit_error import NodeToStatus
from scheduler.framework.interface import (
    ASSIGNED_POD,
    ActionType,
    ClusterEvent,
    CycleState,
    EnqueueExtensions,
    Handle,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
)
from scheduler.framework.objects import JSON, POD_DISRUPTION_BUDGET
from scheduler.framework.preemption import (
    NO_VICTIMS_FOUND,
    Candidate,
    Evaluation,
    Evaluator,
    Executor,
    PreemptionHandle,
    ScoreFunc,
    filter_victims_with_pdb_violation,
    importance_key,
    start_times,
)
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, error_status, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo

NAME: Final = "DefaultPreemption"
ERR_POLICY_NEVER: Final = "not eligible due to preemptionPolicy=Never."
ERR_TERMINATING_ON_NOMINATED: Final = "not eligible due to a terminating pod on the nominated node."
ERR_WAITING: Final = "waiting for the preemption for this pod to be finished"
PREEMPT_NEVER: Final = "Never"

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE: Final = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE: Final = 100
_FIELDS: Final = frozenset({"minCandidateNodesPercentage", "minCandidateNodesAbsolute"}) | ARGS_ENVELOPE_FIELDS


@dataclass(frozen=True, slots=True)
class Args:
    """DefaultPreemptionArgs after defaulting and validation."""

    min_candidate_nodes_percentage: int = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
    min_candidate_nodes_absolute: int = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE


def parse_args(raw: Mapping[str, Any] | None, *, path: str = "") -> Args:
    """Decode strictly, default (10 %, 100 nodes) and validate as upstream ValidateDefaultPreemptionArgs."""
    raw = as_mapping(raw or {}, path)
    check_fields(raw, _FIELDS, path)
    check_kind(raw, "DefaultPreemptionArgs", path)
    pct_path = child(path, "minCandidateNodesPercentage")
    abs_path = child(path, "minCandidateNodesAbsolute")
    pct_raw = raw.get("minCandidateNodesPercentage")
    abs_raw = raw.get("minCandidateNodesAbsolute")
    pct = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE if pct_raw is None else as_int(pct_raw, pct_path, bits=32)
    absolute = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE if abs_raw is None else as_int(abs_raw, abs_path, bits=32)
    errs = FieldErrors()
    if pct < 0 or pct > 100:
        errs.invalid(pct_path, pct, "not in valid range [0, 100]")
    if absolute < 0:
        errs.invalid(abs_path, absolute, "not in valid range [0, inf)")
    if pct == 0 and absolute == 0:
        errs.invalid(pct_path, pct, "cannot be zero at the same time as minCandidateNodesAbsolute")
        errs.invalid(abs_path, absolute, "cannot be zero at the same time as minCandidateNodesPercentage")
    errs.raise_if_any()
    return Args(pct, absolute)


class DefaultPreemption(PostFilterPlugin, PreEnqueuePlugin, EnqueueExtensions):
    """Preempts strictly lower-priority pods, respecting PodDisruptionBudgets where it can."""

    name: ClassVar[str] = NAME
    object_kinds: ClassVar[tuple[str, ...]] = (POD_DISRUPTION_BUDGET,)

    def __init__(self, args: Args | None = None, handle: Handle | None = None) -> None:
        self.args = args or Args()
        self._handle = handle
        seed = getattr(handle, "seed", None)
        # upstream getOffsetRand (rand.Int31n); a simulation's seed makes the dry run's start reproducible.
        self.rng = random.Random(seed)
        self.evaluator = Evaluator(NAME, cast(Handle, handle), self)
        self._executor: Executor | None = None

    # ------------------------------------------------------------------ wiring

    @property
    def handle(self) -> PreemptionHandle:
        if self._handle is None or not hasattr(self._handle, "preemption_api"):
            raise RuntimeError("DefaultPreemption needs the scheduler's handle (framework_for, preemption_api)")
        return cast(PreemptionHandle, self._handle)

    @property
    def executor(self) -> Executor:
        if self._executor is None:
            self._executor = Executor(self.handle, NAME)
        return self._executor

    # ------------------------------------------------------------------ PostFilter

    def post_filter(
        self, state: CycleState, pod: PodInfo, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        """Preempt (upstream PostFilter): every non-empty message of the evaluator gets `preemption: `."""
        handle = self.handle
        handle.observer.preemption_attempt()
        fwk = handle.framework_for(pod.scheduler_name)
        if fwk is None:
            return None, error_status(f'profile not found for scheduler name "{pod.scheduler_name}"')
        latest = handle.current_pod(pod.uid) or pod
        result, status = self.preempt(fwk, state, latest, node_to_status)
        if status.reasons:
            return result, Status(status.code, ("preemption: " + status.message(),), NAME)
        return result, status

    def preempt(
        self, fwk: Framework, state: CycleState, pod: PodInfo, m: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """upstream Evaluator.Preempt: evaluate, then actuate the best candidate."""
        evaluation = self.evaluator.evaluate(fwk, state, pod, m)
        best = evaluation.best
        if evaluation.status.code != Code.SUCCESS or best is None:
            return evaluation.result, evaluation.status
        self.executor.actuate(best, pod)
        return PostFilterResult(best.node), Status(Code.SUCCESS, (self.success_message(best),))

    def explain(
        self, fwk: Framework, state: CycleState, pod: PodInfo, m: NodeToStatus, snapshot: Snapshot
    ) -> tuple[Evaluation, str]:
        """What PostFilter would decide now, without acting: the evaluation and the PostFilter message the
        FailedScheduling note would end with."""
        evaluation = self.evaluator.evaluate(fwk, state, pod, m, snapshot)
        best = evaluation.best
        if evaluation.status.code == Code.SUCCESS and best is not None:
            message = self.success_message(best)
        else:
            message = evaluation.status.message()
        return evaluation, ("preemption: " + message) if message else ""

    def handle_objects_pdbs(self) -> list[JSON]:
        """The PodDisruptionBudgets preemption weighs (for explanations)."""
        return self._handle.objects.list(POD_DISRUPTION_BUDGET) if self._handle is not None else []

    @staticmethod
    def success_message(best: Candidate) -> str:
        return f"found a potential placement for pod on node {best.node}, preempting {len(best.victims)} victims"

    # ------------------------------------------------------------------ PreEnqueue and events

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        """Hold the preemptor back while its victims are being preempted."""
        if self._executor is not None and self._executor.is_pod_running_preemption(pod.uid):
            return unresolvable(ERR_WAITING, plugin=NAME)
        return None

    def events_to_register(self) -> list[ClusterEvent]:
        """A deleted assigned pod (the last victim) may end the wait."""
        return [ClusterEvent(ASSIGNED_POD, ActionType.DELETE)]

    # ------------------------------------------------------------------ PreemptionInterface

    def calculate_num_candidates(self, num_nodes: int) -> int:
        """max(numNodes * pct / 100, absolute), at most numNodes."""
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, nominated_node_status: Status, snapshot: Snapshot
    ) -> tuple[bool, str]:
        """Not with preemptionPolicy Never; not while a lower-priority pod it preempted still terminates on
        its nominated node (unless that node is now UnschedulableAndUnresolvable for it)."""
        if pod.preemption_policy == PREEMPT_NEVER:
            return False, ERR_POLICY_NEVER
        nominated = pod.nominated_node_name
        if nominated:
            if nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            info = snapshot.get(nominated)
            if info is not None:
                for other in info.pods.values():
                    if other.priority < pod.priority and other.terminating and other.preempted_by_scheduler:
                        return False, ERR_TERMINATING_ON_NOMINATED
        return True, ""

    def select_victims_on_node(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        pdbs: Sequence[JSON],
    ) -> tuple[list[PodInfo], int, Status | None]:
        """The fewest pods to evict from `node` (a copy) for pod to fit, most important first, and how many
        of them break a PodDisruptionBudget (upstream SelectVictimsOnNode).

        Remove every strictly lower-priority pod; if pod still does not fit, the node cannot help. Then add
        back as many as possible, most important first: first those whose eviction would break a budget,
        then the others.
        """
        pods = list(node.pods.values())
        potential = [p for p in pods if p.priority < pod.priority]
        if not potential:
            return [], 0, unresolvable(NO_VICTIMS_FOUND)
        for victim in potential:
            node.remove_pod(victim.uid)
            err = fwk.run_pre_filter_extension_remove_pod(state, pod, victim, node)
            if err is not None:
                return [], 0, err
        status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node)
        if status is not None:
            return [], 0, status
        starts = start_times(pods)
        potential.sort(key=lambda p: importance_key(p, starts))
        violating, non_violating = filter_victims_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []

        def reprieve(victim: PodInfo) -> tuple[bool, Status | None]:
            node.add_pod(victim)
            err = fwk.run_pre_filter_extension_add_pod(state, pod, victim, node)
            if err is not None:
                return False, err
            if fwk.run_filter_plugins_with_nominated_pods(state, pod, node) is None:
                return True, None
            node.remove_pod(victim.uid)
            err = fwk.run_pre_filter_extension_remove_pod(state, pod, victim, node)
            if err is not None:
                return False, err
            victims.append(victim)
            return False, None

        violations = 0
        for victim, count in violating:
            fits, err = reprieve(victim)
            if err is not None:
                return [], 0, err
            if not fits:
                violations += count
        for victim in non_violating:
            _, err = reprieve(victim)
            if err is not None:
                return [], 0, err
        if violating and non_violating:
            victims.sort(key=lambda p: importance_key(p, starts))
        return victims, violations, None

    def ordered_score_funcs(self, candidates: Sequence[Candidate]) -> list[ScoreFunc] | None:
        """None: upstream's default tie-breakers."""
        return None


def new(raw_args: Mapping[str, Any] | None, handle: Handle) -> DefaultPreemption:
    """Registry factory (args already parsed by `parse_args` when configured)."""
    args = raw_args if isinstance(raw_args, Args) else parse_args(raw_args)
    return DefaultPreemption(args, handle)
