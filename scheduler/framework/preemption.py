"""Preemption machinery shared by preemption plugins (upstream framework/preemption: preemption.go,
executor.go, types.go, util.go).

- `Evaluator.preempt`: is the pod eligible; which nodes could help (only those whose Filter verdict is
  Unschedulable); a dry run of victim selection on a shortlist of them; the best candidate by upstream's
  ordered tie-breakers (`pick_one_node_for_preemption`); then the `Executor`.
- `Executor`: the API calls, asynchronously as upstream's default (SchedulerAsyncPreemption is on in v1.37):
  the scheduling loop goes on while a background task clears lower-priority nominations on the node, then
  sets `DisruptionTarget` on and deletes every victim (all but the last concurrently, then the last) and
  records a `Preempted` event for each. Until it is done, the preemptor is held back at PreEnqueue.
- What a plugin must decide (`PreemptionInterface`): eligibility, how many candidates to dry-run from which
  offset, and the victims on one node; DefaultPreemption implements it.

The GenericWorkload gate (pod groups as victims) is off by default in v1.37, so every victim is one pod.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Protocol

from scheduler import caching
from scheduler.framework.fit_error import Diagnosis, FitError, NodeToStatus
from scheduler.framework.interface import CycleState, Handle, PostFilterResult
from scheduler.framework.labels import SelectorError, compile_label_selector
from scheduler.framework.objects import JSON, POD_DISRUPTION_BUDGET
from scheduler.framework.observer import Observer
from scheduler.framework.status import Code, Status, error_status
from scheduler.framework.types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from scheduler.framework.runtime import Framework, WaitingPod
    from scheduler.framework.snapshot import Snapshot

log = logging.getLogger("pyscheduler.preemption")

MAX_INT32: Final = 2**31 - 1
PREEMPTION_NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
NO_VICTIMS_FOUND: Final = "No preemption victims found for incoming pod"
NO_CANDIDATE: Final = "no candidate node for preemption"
PREEMPTOR_TYPE: Final = "pod"  # fwk.PodKeyType: the only preemptor kind while GenericWorkload is off
RESULT_SUCCESS: Final = "success"  # metrics.GoroutineResultSuccess
RESULT_ERROR: Final = "error"

# v1.PodReasonPreemptionByScheduler / v1.DisruptionTarget, and the event the victims get.
DISRUPTION_TARGET: Final = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
EVENT_PREEMPTED: Final = "Preempted"
ACTION_PREEMPTING: Final = "Preempting"


def disruption_message(scheduler_name: str) -> str:
    """The DisruptionTarget condition's message on a victim."""
    return f"{scheduler_name}: preempting to accommodate a higher priority {PREEMPTOR_TYPE}"


def preempted_note(preemptor: PodInfo, node_name: str, in_memory: bool = False) -> str:
    """The note of a victim's `Preempted` event."""
    note = f"Preempted by {PREEMPTOR_TYPE} {preemptor.uid} on node {node_name}"
    return note + " (in kube-scheduler memory)." if in_memory else note


def aggregate_errors(errors: Sequence[str]) -> str:
    """utilerrors.NewAggregate(errs).Error(): one message as is, several as "[a, b]"."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


# ---------------------------------------------------------------------------------------------------------
# Start times and importance (util.GetPodStartTime, MoreImportantVictim)


def _parse_start_ns(start_time: str) -> int | None:
    if not start_time:
        return None
    try:
        moment = datetime.fromisoformat(start_time.replace("Z", "+00:00"))
        return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000
    except ValueError:
        return None


def _start_ns(pod: PodInfo) -> int | None:
    """status.startTime in nanoseconds since the epoch (parsed once per pod), or None when unset."""
    if not caching.ENABLED:  # the plain path: parsed on every call
        return _parse_start_ns(pod.start_time)
    cache: dict[str, Any] = pod.derived.setdefault("DefaultPreemption", {})
    if "start_ns" not in cache:
        cache["start_ns"] = _parse_start_ns(pod.start_time)
    value: int | None = cache["start_ns"]
    return value


def start_times(pods: Sequence[PodInfo], now_ns: int | None = None) -> dict[str, int]:
    """Each pod's start time (ns) as upstream ranks it: status.startTime, or "now" for a pod that has not
    started; upstream reads the clock once per victim in node order, so later pods count as started later."""
    now = time.time_ns() if now_ns is None else now_ns
    out: dict[str, int] = {}
    for i, pod in enumerate(pods):
        start = _start_ns(pod)
        out[pod.uid] = start if start is not None else now + i
    return out


def importance_key(pod: PodInfo, starts: dict[str, int]) -> tuple[int, int]:
    """Sort key for "most important first" (MoreImportantVictim for single pods): higher priority first,
    then the earlier start time."""
    return (-pod.priority, starts[pod.uid])


# ---------------------------------------------------------------------------------------------------------
# PodDisruptionBudgets (FilterVictimsWithPDBViolation)


@dataclass(slots=True)
class _Budget:
    namespace: str
    matches: Callable[[dict[str, str]], bool]
    disrupted: frozenset[str]
    allowed: int


def _budgets(pdbs: Iterable[JSON]) -> list[_Budget]:
    out: list[_Budget] = []
    for pdb in pdbs:
        meta = pdb.get("metadata") or {}
        spec = pdb.get("spec") or {}
        status = pdb.get("status") or {}
        try:
            selector = compile_label_selector(spec.get("selector"))
        except SelectorError:
            continue  # an invalid selector matches no pod
        if selector.empty():
            continue  # a nil or empty selector matches nothing
        disrupted = status.get("disruptedPods") or {}
        allowed = status.get("disruptionsAllowed") or 0
        out.append(
            _Budget(
                str(meta.get("namespace") or ""),
                selector.matches,
                frozenset(disrupted) if isinstance(disrupted, dict) else frozenset(),
                int(allowed) if isinstance(allowed, int) else 0,
            )
        )
    return out


def filter_victims_with_pdb_violation(
    victims: Sequence[PodInfo], pdbs: Iterable[JSON]
) -> tuple[list[tuple[PodInfo, int]], list[PodInfo]]:
    """Split victims (in order) into ((victim, violations), ...) whose eviction would break a budget and
    the others. A budget matches a pod of its namespace through a non-empty selector unless the pod is in
    its status.disruptedPods; each match spends one of its disruptionsAllowed, and below zero it is broken."""
    budgets = _budgets(pdbs)
    allowed = [b.allowed for b in budgets]
    violating: list[tuple[PodInfo, int]] = []
    non_violating: list[PodInfo] = []
    for pod in victims:
        broken = False
        if pod.labels:
            for i, budget in enumerate(budgets):
                if budget.namespace != pod.namespace or not budget.matches(pod.labels):
                    continue
                if pod.name in budget.disrupted:
                    continue  # already counted by the API server
                allowed[i] -= 1
                if allowed[i] < 0:
                    broken = True
                    break
        if broken:
            violating.append((pod, 1))
        else:
            non_violating.append(pod)
    return violating, non_violating


# ---------------------------------------------------------------------------------------------------------
# Candidates and the choice among them (pickOneNodeForPreemption)


@dataclass(slots=True)
class Candidate:
    """A node the preemptor could run on once `victims` (most important first) are gone."""

    node: str
    victims: list[PodInfo]
    pdb_violations: int = 0


CRITERIA: Final = (
    "fewest PodDisruptionBudget violations",
    "lowest priority of its most important victim",
    "smallest sum of victim priorities",
    "fewest victims",
    "latest start time of its highest-priority victims",
)
"""pickOneNodeForPreemption's ordered tie-breakers, as explanations name them."""
FIRST_OF_TIES: Final = "first of the candidates tied on every criterion"
ONLY_CANDIDATE: Final = "the only candidate"


def _earliest_start_of_highest(victims: Sequence[PodInfo], starts: dict[str, int]) -> int:
    """util.GetEarliestPodStartTime: the earliest start among the victims of the highest priority."""
    best_priority = victims[0].priority
    earliest = starts[victims[0].uid]
    for pod in victims:
        if pod.priority == best_priority:
            earliest = min(earliest, starts[pod.uid])
        elif pod.priority > best_priority:
            best_priority = pod.priority
            earliest = starts[pod.uid]
    return earliest


ScoreFunc = Callable[[str], int]


def pick_one_node_for_preemption(
    candidates: Sequence[Candidate], score_funcs: Sequence[ScoreFunc] | None = None, now_ns: int | None = None
) -> tuple[str, str]:
    """The node to preempt on and the criterion that decided it (upstream pickOneNodeForPreemption).

    Each criterion keeps the best-scoring nodes; the first criterion that leaves one node decides; after
    all of them the first remaining node wins (upstream: a Go map's first, i.e. any of them).
    """
    if not candidates:
        return "", ""
    by_node = {c.node: c for c in candidates}
    names = list(by_node)
    if len(names) == 1:
        return names[0], ONLY_CANDIDATE
    labels: Sequence[str]
    if score_funcs:
        funcs = list(score_funcs)
        labels = [f"custom criterion {i + 1}" for i in range(len(funcs))]
    else:
        all_victims = [v for c in candidates for v in c.victims]
        starts = start_times(all_victims, now_ns)
        funcs = [
            lambda n: -by_node[n].pdb_violations,
            lambda n: -by_node[n].victims[0].priority,
            lambda n: -sum(v.priority + MAX_INT32 + 1 for v in by_node[n].victims),
            lambda n: -len(by_node[n].victims),
            lambda n: _earliest_start_of_highest(by_node[n].victims, starts),
        ]
        labels = CRITERIA
    for func, label in zip(funcs, labels, strict=True):
        best: list[str] = []
        top: int | None = None
        for name in names:
            score = func(name)
            if top is None or score > top:
                top, best = score, [name]
            elif score == top:
                best.append(name)
        if len(best) == 1:
            return best[0], label
        names = best
    return names[0], FIRST_OF_TIES


# ---------------------------------------------------------------------------------------------------------
# What the scheduler provides


class PreemptionAPI(Protocol):
    """The writes preemption makes (implemented by both adapters; every call has a timeout)."""

    async def patch_disruption_target(self, victim: PodInfo, message: str) -> bool:
        """Add DisruptionTarget=True (reason PreemptionByScheduler) to the victim's status; False when the
        pod is already gone. Raises on other failures."""
        ...

    async def delete_preempted_pod(self, victim: PodInfo) -> bool:
        """DELETE the victim with default options (its grace period applies); False when already gone."""
        ...

    def record_preempted(self, victim: PodInfo, preemptor: PodInfo, note: str) -> None:
        """The victim's Normal `Preempted` event (action Preempting, related: the preemptor), asynchronously."""
        ...

    async def clear_nominated_node_name(self, pod: PodInfo) -> None:
        """Patch status.nominatedNodeName away (a lower-priority nominee of the preemption's node)."""
        ...


class PreemptionHandle(Handle, Protocol):
    """What preemption needs from the scheduler besides the plugin Handle."""

    def framework_for(self, scheduler_name: str) -> Framework | None:
        """The profile (framework) of a scheduler name."""
        ...

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...

    def current_pod(self, uid: str) -> PodInfo | None:
        """The latest version of a pod the watches delivered (pending or assigned), None when gone."""
        ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        """The pod if it waits at Permit in any profile."""
        ...

    @property
    def preemption_api(self) -> PreemptionAPI: ...

    @property
    def observer(self) -> Observer: ...

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        """Run a background task the scheduler supervises (and drains on shutdown)."""
        ...

    def activate(self, uids: Iterable[str]) -> None:
        """Move these pods to activeQ now (upstream Handle.Activate)."""
        ...

    @property
    def seed(self) -> int | None:
        """The random seed of the scheduler (simulations are reproducible), None for a random one."""
        ...


# ---------------------------------------------------------------------------------------------------------
# The Executor


class Executor:
    """Actuates a chosen candidate (upstream preemption.Executor, asynchronous mode)."""

    def __init__(self, handle: PreemptionHandle, plugin_name: str) -> None:
        self._handle = handle
        self._plugin_name = plugin_name
        self.preempting: set[str] = set()  # preemptor uids whose victims are still being preempted
        self.last_victim: dict[str, str] = {}  # preemptor uid -> uid of the last victim being preempted

    def is_pod_running_preemption(self, uid: str) -> bool:
        """Whether the preemptor must still wait: its task runs and its last victim is neither gone nor
        terminating yet (a victim deleted but still terminating already frees the preemptor)."""
        if uid not in self.preempting:
            return False
        victim = self.last_victim.get(uid)
        if victim is None:
            return True
        current = self._handle.current_pod(victim)
        return current is not None and not current.terminating

    def actuate(self, candidate: Candidate, preemptor: PodInfo) -> None:
        """Start preempting the candidate's victims in the background (prepareCandidateAsync)."""
        self._handle.observer.preemption_victims(len(candidate.victims))
        victims = [v for v in candidate.victims if not v.terminating]  # graceful deletion already started
        if not victims:
            return
        self.preempting.add(preemptor.uid)
        self._handle.spawn(self._run(candidate, preemptor, victims), f"preemption-{preemptor.key}")

    async def _run(self, candidate: Candidate, preemptor: PodInfo, victims: list[PodInfo]) -> None:
        start = time.monotonic()
        result = RESULT_SUCCESS
        last_in_memory = False
        node = candidate.node
        log.info(
            "Start the preemption asynchronously",
            extra={"preemptor": preemptor.key, "node": node, "numVictims": len(candidate.victims)},
        )
        try:
            # Lower-priority pods nominated here may no longer fit: clear their nomination so they look
            # elsewhere at once instead of after the victims are gone.
            nominated = [
                p
                for p in self._handle.nominated_pods_for_node(node)
                if p.priority < preemptor.priority and p.nominated_node_name
            ]
            for pod in nominated:
                try:
                    await self._handle.preemption_api.clear_nominated_node_name(pod)
                except Exception as exc:  # not critical: the preemption goes on
                    result = RESULT_ERROR
                    log.error(
                        "Cannot clear 'NominatedNodeName' field from lower priority pods on the same target node",
                        extra={"pod": pod.key, "node": node, "error": str(exc)},
                    )
            preempt_last = True
            if len(victims) > 1:
                outcomes = await asyncio.gather(
                    *(self.preempt_pod(node, preemptor, v) for v in victims[:-1]), return_exceptions=True
                )
                failures = [o for o in outcomes if isinstance(o, BaseException)]
                if failures:
                    for failure in failures:
                        if isinstance(failure, asyncio.CancelledError):
                            raise failure
                    result = RESULT_ERROR
                    preempt_last = False
                    log.error(
                        "Error occurred during async preemption",
                        extra={"preemptor": preemptor.key, "error": str(failures[0])},
                    )
            if preempt_last:
                last = victims[-1]
                self.last_victim[preemptor.uid] = last.uid
                try:
                    last_in_memory = await self.preempt_pod(node, preemptor, last)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    result = RESULT_ERROR
                    log.error(
                        "Error occurred during async preemption of the last victim",
                        extra={"preemptor": preemptor.key, "victim": last.key, "error": str(exc)},
                    )
        except asyncio.CancelledError:
            result = RESULT_ERROR
            raise
        finally:
            self.preempting.discard(preemptor.uid)
            self.last_victim.pop(preemptor.uid, None)
            self._handle.observer.preemption_goroutine(result, time.monotonic() - start)
            if result == RESULT_ERROR or last_in_memory:
                # No deletion event will bring the preemptor back: activate it.
                self._handle.activate([preemptor.uid])
            log.info(
                "Async Preemption finished completely",
                extra={"preemptor": preemptor.key, "node": node, "result": result},
            )

    async def preempt_pod(self, node: str, preemptor: PodInfo, victim: PodInfo) -> bool:
        """Preempt one victim (upstream PreemptPod); True when it was only rejected at Permit in memory."""
        api = self._handle.preemption_api
        waiting = self._handle.get_waiting_pod(victim.uid)
        # Error, not Unschedulable: the victim goes back to backoffQ (upstream Preempt). A wait already
        # decided cannot be preempted in memory any more: the victim is deleted like any other.
        if waiting is not None and waiting.preempt(self._plugin_name, "preempted"):
            log.info("Preemptor preempted a waiting pod", extra={"preemptor": preemptor.key, "waitingPod": victim.key})
            api.record_preempted(victim, preemptor, preempted_note(preemptor, node, in_memory=True))
            return True
        # The condition is written unless the victim already carries it (upstream UpdatePodCondition).
        needs_condition = not victim.preempted_by_scheduler
        if needs_condition and not await api.patch_disruption_target(
            victim, disruption_message(preemptor.scheduler_name)
        ):
            log.info("Victim Pod is already deleted", extra={"preemptor": preemptor.key, "victim": victim.key})
            return False
        if not await api.delete_preempted_pod(victim):
            log.info("Victim Pod is already deleted", extra={"preemptor": preemptor.key, "victim": victim.key})
            return False
        log.info(
            "Preemptor Pod preempted victim Pod", extra={"preemptor": preemptor.key, "victim": victim.key, "node": node}
        )
        api.record_preempted(victim, preemptor, preempted_note(preemptor, node))
        return False


# ---------------------------------------------------------------------------------------------------------
# The Evaluator


class PreemptionInterface(Protocol):
    """What a preemption plugin decides (upstream preemption.Interface)."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, nominated_node_status: Status, snapshot: Snapshot
    ) -> tuple[bool, str]: ...

    def select_victims_on_node(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        pdbs: Sequence[JSON],
    ) -> tuple[list[PodInfo], int, Status | None]: ...

    def ordered_score_funcs(self, candidates: Sequence[Candidate]) -> list[ScoreFunc] | None: ...


@dataclass(slots=True)
class DryRun:
    """What a dry run found: the candidates (non-violating first) and the verdict of each node it tried."""

    candidates: list[Candidate] = field(default_factory=list)
    node_statuses: dict[str, Status] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    potential_nodes: int = 0
    offset: int = 0
    num_candidates: int = 0


@dataclass(slots=True)
class Evaluation:
    """The outcome of evaluating preemption for one pod, without acting on it."""

    status: Status
    result: PostFilterResult | None = None
    best: Candidate | None = None
    criterion: str = ""
    dry_run: DryRun | None = None


class Evaluator:
    """Runs preemption logic with a plugin's decisions (upstream preemption.Evaluator)."""

    def __init__(self, plugin_name: str, handle: Handle, interface: PreemptionInterface) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.interface = interface

    def evaluate(
        self, fwk: Framework, state: CycleState, pod: PodInfo, m: NodeToStatus, snapshot: Snapshot | None = None
    ) -> Evaluation:
        """Eligibility, candidates, the best one: everything but the API calls (also used by explain, which
        passes the snapshot it explains against; the scheduling cycle's is the handle's)."""
        snapshot = snapshot if snapshot is not None else self.handle.snapshot()
        nominated_status = m.status_of(pod.nominated_node_name)
        ok, msg = self.interface.pod_eligible_to_preempt_others(pod, nominated_status, snapshot)
        if not ok:
            return Evaluation(Status(Code.UNSCHEDULABLE, (msg,)))
        all_nodes = snapshot.node_info_list
        dry = self.find_candidates(fwk, state, all_nodes, pod, m)
        if dry.errors and not dry.candidates:
            return Evaluation(error_status(aggregate_errors(dry.errors)), dry_run=dry)
        if not dry.candidates:
            diagnosis = Diagnosis(
                node_to_status=dict(dry.node_statuses),
                absent_nodes_status=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (PREEMPTION_NOT_HELPFUL,)),
            )
            fit = FitError(len(all_nodes), diagnosis)
            # The result clears any nomination the pod had.
            return Evaluation(Status(Code.UNSCHEDULABLE, (str(fit),)), PostFilterResult(""), dry_run=dry)
        best, criterion = self.select_candidate(dry.candidates)
        if best is None or not best.node:
            return Evaluation(Status(Code.UNSCHEDULABLE, (NO_CANDIDATE,)), dry_run=dry)
        return Evaluation(Status(Code.SUCCESS), best=best, criterion=criterion, dry_run=dry)

    def find_candidates(
        self, fwk: Framework, state: CycleState, all_nodes: Sequence[NodeInfo], pod: PodInfo, m: NodeToStatus
    ) -> DryRun:
        if not all_nodes:
            return DryRun(errors=["no nodes available"])
        potential = m.nodes_for_code(all_nodes, Code.UNSCHEDULABLE)
        if not potential:
            log.debug("Preemption will not help schedule pod on any node", extra={"pod": pod.key})
            return DryRun()
        pdbs = self.handle.objects.list(POD_DISRUPTION_BUDGET)
        offset, num = self.interface.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(fwk, state, pod, potential, pdbs, offset, num)

    def dry_run_preemption(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        potential: Sequence[NodeInfo],
        pdbs: Sequence[JSON],
        offset: int,
        num_candidates: int,
    ) -> DryRun:
        """Select victims on the potential nodes from `offset` on (wrapping around) until `num_candidates`
        candidates, at least one of them violating no PDB, are found (upstream DryRunPreemption; its
        parallel workers stop at the same condition). Each node works on a copy of the state and the node."""
        dry = DryRun(potential_nodes=len(potential), offset=offset, num_candidates=num_candidates)
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        n = len(potential)
        for i in range(n):
            info = potential[(offset + i) % n]
            victims, violations, status = self.interface.select_victims_on_node(
                fwk, state.clone(), pod, info.clone(), pdbs
            )
            if status is None and victims:
                target = non_violating if violations == 0 else violating
                if len(target) < num_candidates:  # candidateList drops what exceeds its capacity
                    target.append(Candidate(info.name, victims, violations))
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if status is None:
                status = error_status(f'expected at least one victim pod on node "{info.name}"')
            if status.code == Code.ERROR:
                dry.errors.append(status.message())
            dry.node_statuses[info.name] = status
        dry.candidates = non_violating + violating
        return dry

    def select_candidate(self, candidates: Sequence[Candidate]) -> tuple[Candidate | None, str]:
        """The best candidate and the criterion that chose it."""
        if not candidates:
            return None, ""
        if len(candidates) == 1:
            return candidates[0], ONLY_CANDIDATE
        node, criterion = pick_one_node_for_preemption(candidates, self.interface.ordered_score_funcs(candidates))
        chosen = next((c for c in candidates if c.node == node), None)
        return (chosen, criterion) if chosen is not None else (candidates[0], FIRST_OF_TIES)
