"""The story of one pod, as upstream's schedule_one.go tells it, top to bottom.

1. `schedule_one`: the **scheduling cycle**. Take the popped pod, update the snapshot, run the algorithm
   (`SchedulingAlgorithm.schedule_pod`: PreFilter, Filter over a rotating sample of nodes, PreScore/Score,
   select a host); on FitError run PostFilter (preemption); then assume the pod on the host in the cache,
   Reserve and Permit. Synchronous: nothing else runs while a cycle looks at its snapshot.
2. `binding_cycle`: the **binding cycle**, a coroutine the scheduler runs concurrently with later
   scheduling cycles: wait at Permit, PreBind, Bind (`pods/binding`), PostBind; on success report
   `Scheduled`. A bind with no answer keeps the pod's room until the watch or a read of the pod says whether
   it landed (`resolve_unanswered_bind`).
3. `handle_scheduling_failure`: requeue the pod (unschedulable pool or backoff) and report the failure the
   way kube-scheduler does (FailedScheduling event, PodScheduled=False condition, metrics).

The algorithm itself is pure: it sees one Snapshot and returns a decision or raises FitError.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from itertools import compress
from typing import TYPE_CHECKING, Any

from scheduler import caching
from scheduler.backend.queue.nominator import CLEAR_NOMINATED_NODE, NominatingInfo
from scheduler.core.api import (
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    AlreadyBoundError,
    BindError,
    BindLandedError,
    BindOutcomeUnknownError,
    PodGoneError,
)
from scheduler.framework.fit_error import Diagnosis, FitError, NoNodesAvailableError
from scheduler.framework.interface import CycleState
from scheduler.framework.runtime import Framework, ScoreResult
from scheduler.framework.shape_results import ShapeResults
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, error_status
from scheduler.framework.types import NodeInfo, PodInfo, QueuedPodInfo
from scheduler.logging_setup import V2, V10

if TYPE_CHECKING:
    from scheduler.core.scheduler import Scheduler

log = logging.getLogger("pyscheduler.scheduler")

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


class SchedulingError(Exception):
    """An Error status from a plugin: the pod is retried with backoff, not marked unschedulable."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


@dataclass(slots=True)
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (adaptive when percentage is 0)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = 50 - num_all_nodes // 125
        if percentage < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            percentage = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    num = num_all_nodes * percentage // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


class SchedulingAlgorithm:
    """State that outlives one attempt: the rotating start index, the tie-breaking random source and each
    profile's per-node results kept for pods of one shape (`shape_results`)."""

    def __init__(self, percentage_of_nodes_to_score: int = 0, seed: int | None = None) -> None:
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        self.rng = random.Random(seed)
        self.shapes: dict[Framework, ShapeResults] = {}

    def shape_results(self, fwk: Framework) -> ShapeResults:
        shapes = self.shapes.get(fwk)
        if shapes is None:
            shapes = self.shapes[fwk] = ShapeResults(fwk)
        return shapes

    # ------------------------------------------------------------------ schedulePod

    def schedule_pod(
        self, fwk: Framework, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> ScheduleResult:
        """Pick a node for pod or raise FitError / NoNodesAvailableError / SchedulingError."""
        if not snapshot.node_info_list:
            raise NoNodesAvailableError()
        feasible, diagnosis = self.find_nodes_that_fit_pod(fwk, state, pod, snapshot)
        if not feasible:
            raise FitError(snapshot.num_nodes(), diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status)
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, evaluated, 1)
        totals = self.prioritize_nodes(fwk, state, pod, feasible, snapshot)
        return ScheduleResult(self.select_host(feasible, totals), evaluated, len(feasible))

    # ------------------------------------------------------------------ filtering

    def find_nodes_that_fit_pod(
        self, fwk: Framework, state: CycleState, pod: PodInfo, snapshot: Snapshot
    ) -> tuple[list[NodeInfo], Diagnosis]:
        diagnosis = Diagnosis()
        all_nodes = snapshot.node_info_list
        pre_res, status, narrowing_plugins = fwk.run_pre_filter(state, pod, all_nodes)
        diagnosis.unschedulable_plugins = set(narrowing_plugins)
        if status is not None and status.code != Code.SUCCESS:
            if not status.is_rejected():
                raise SchedulingError(status)
            diagnosis.absent_nodes_status = status
            diagnosis.pre_filter_msg = status.message()
            diagnosis.add_plugin_status(status)
            return [], diagnosis

        if pod.nominated_node_name:
            nominated = self.evaluate_nominated_node(fwk, state, pod, snapshot, diagnosis)
            if nominated:
                return nominated, diagnosis

        nodes = all_nodes
        if pre_res is not None and pre_res.node_names is not None:
            wanted = pre_res.node_names
            # Upstream iterates a Go map here (random order); sorting keeps simulations reproducible.
            nodes = [snapshot.node_info_map[n] for n in sorted(wanted) if n in snapshot.node_info_map]
            names = " ".join(sorted(narrowing_plugins))
            diagnosis.absent_nodes_status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"node(s) didn't satisfy plugin(s) [{names}]",)
            )
        feasible: list[NodeInfo] = []
        try:
            feasible = self.find_nodes_that_pass_filters(fwk, state, pod, diagnosis, nodes)
        finally:
            # Always advance, even on error, so every node gets its turn to be searched first.
            processed = len(feasible) + len(diagnosis.node_to_status)
            self.next_start_node_index = (self.next_start_node_index + processed) % len(all_nodes)
        return feasible, diagnosis

    def evaluate_nominated_node(
        self, fwk: Framework, state: CycleState, pod: PodInfo, snapshot: Snapshot, diagnosis: Diagnosis
    ) -> list[NodeInfo]:
        """Try the pod's nominated node first; when it passes, no other node is evaluated."""
        info = snapshot.get(pod.nominated_node_name)
        if info is None:
            return []
        statuses, err = fwk.run_filters_with_nominated_pods(state, pod, [info])
        if err is not None:
            return []
        if statuses[0] is None:
            return [info]
        # Recorded like upstream (the full search re-evaluates it when the node is among its candidates).
        diagnosis.node_to_status[info.name] = statuses[0]
        diagnosis.add_plugin_status(statuses[0])
        return []

    def find_nodes_that_pass_filters(
        self, fwk: Framework, state: CycleState, pod: PodInfo, diagnosis: Diagnosis, nodes: list[NodeInfo]
    ) -> list[NodeInfo]:
        """Walk nodes from the rotating start index until enough feasible nodes are found."""
        num_all = len(nodes)
        if num_all == 0:
            return []
        pct = fwk.percentage_of_nodes_to_score
        num_to_find = num_feasible_nodes_to_find(
            self.percentage_of_nodes_to_score if pct is None else pct, num_all
        )
        if not fwk.has_score_plugins():
            num_to_find = 1
        start = self.next_start_node_index % num_all
        if not fwk.has_filter_plugins():
            return _rotated(nodes, start, 0, num_to_find)

        run = self.shape_results(fwk).filter_run(state, pod)
        t0 = time.perf_counter()
        feasible: list[NodeInfo] = []
        statuses = diagnosis.node_to_status
        pos = 0
        code = Code.SUCCESS
        fast = caching.ENABLED  # disabled: every chunk takes the per-node loop
        try:
            while pos < num_all and len(feasible) < num_to_find:
                # Batches as large as the remaining need; a small floor keeps mostly-full clusters fast.
                need = num_to_find - len(feasible)
                chunk = _rotated(nodes, start, pos, max(need, 64))
                results, err = run(state, pod, chunk)
                if err is not None:
                    code = Code.ERROR
                    for node, st in zip(chunk, results, strict=True):
                        if st is not None:  # rejected by a plugin before the one that failed
                            statuses[node.name] = st
                    raise SchedulingError(err)
                if fast and not any(results):  # every node passed (the common case): take what is needed at once
                    take = min(need, len(chunk))
                    feasible.extend(chunk[:take])
                    pos += take
                    continue
                for node, st in zip(chunk, results, strict=True):
                    pos += 1
                    if st is None:
                        feasible.append(node)
                        if len(feasible) == num_to_find:
                            break
                    else:
                        statuses[node.name] = st
                        diagnosis.add_plugin_status(st)
            return feasible
        finally:
            fwk.observer.extension_point("Filter", code, fwk.profile_name, time.perf_counter() - t0)

    # ------------------------------------------------------------------ scoring

    def prioritize_nodes(
        self, fwk: Framework, state: CycleState, pod: PodInfo, nodes: list[NodeInfo], snapshot: Snapshot
    ) -> list[int]:
        """Total weighted score per node; every node scores 1 when no Score plugin is enabled."""
        if not fwk.has_score_plugins():
            return [1] * len(nodes)
        status = fwk.run_pre_score(state, pod, nodes)
        if status is not None:
            raise SchedulingError(status)
        detail = log.isEnabledFor(V10)
        shapes = self.shape_results(fwk)
        key = shapes.score_key(state, pod, snapshot) if shapes.enabled else None
        result = shapes.run_score(key, state, pod, nodes, detail) if key is not None else None
        if result is None:  # no kept rows for this pod, or something the plain path must report
            result, status = fwk.run_score(state, pod, nodes)
            if status is not None:
                raise SchedulingError(status)
        if detail:
            log_scores(pod, nodes, result)
        return result.totals

    def select_host(self, nodes: list[NodeInfo], totals: list[int]) -> str:
        """Highest total wins; ties are broken at random (reproducible under a seed)."""
        best = max(totals)
        ties = totals.count(best)
        if ties == 1:
            return nodes[totals.index(best)].name
        winners = list(compress(range(len(totals)), map(best.__eq__, totals)))  # the positions of the ties
        return nodes[winners[self.rng.randrange(ties)]].name


def _rotated(nodes: list[NodeInfo], start: int, pos: int, size: int) -> list[NodeInfo]:
    """`(nodes[start:] + nodes[:start])[pos : pos + size]` without building the rotated list (a pass over
    every node of the cluster each cycle)."""
    n = len(nodes)
    count = min(pos + size, n) - pos
    if count <= 0:
        return []
    first = start + pos
    if first >= n:
        first -= n
    if first + count <= n:
        return nodes[first : first + count]
    return nodes[first:] + nodes[: first + count - n]


def log_scores(pod: PodInfo, nodes: list[NodeInfo], result: ScoreResult) -> None:
    """At V(10), each plugin's weighted score of each node, then each node's total, with kube-scheduler's
    messages and keys (prioritizeNodes in schedule_one.go), so the two can be compared line by line."""
    key = pod.key
    for i, node in enumerate(nodes):
        for plugin, scores in result.per_plugin:
            fields = {"pod": key, "plugin": plugin, "node": node.name, "score": scores[i]}
            log.log(V10, "Plugin scored node for pod", extra=fields)
    for node, total in zip(nodes, result.totals, strict=True):
        log.log(V10, "Calculated node's final score for pod", extra={"pod": key, "node": node.name, "score": total})


# ---------------------------------------------------------------------------------------------------------
# 1. The scheduling cycle

# Share of scheduling cycles whose plugins are timed one by one (upstream pluginMetricsSamplePercent).
PLUGIN_METRICS_SAMPLE_RATE = 0.1


@dataclass(slots=True)
class Attempt:
    """One scheduling attempt of one pod, carried from the scheduling cycle into the binding cycle."""

    fwk: Framework
    state: CycleState
    qpi: QueuedPodInfo
    start: float  # clock time the attempt began
    cycle: int  # the queue's scheduling cycle when the pod was popped
    assumed: PodInfo | None = None  # the copy placed on `host` in the cache
    host: str = ""
    evaluated_nodes: int = 0
    feasible_nodes: int = 0

    @property
    def pod(self) -> PodInfo:
        return self.qpi.pod


def schedule_one(sched: Scheduler, qpi: QueuedPodInfo, cycle: int) -> Coroutine[Any, Any, None] | None:
    """Run one scheduling cycle for a popped pod; return its binding cycle to run concurrently, if any.

    `cycle` is the queue's scheduling cycle read right after the pod was popped: a move request after it
    sends the pod to backoff instead of the unschedulable pool when it fails.
    """
    pod = qpi.pod
    sched.attempts += 1
    current = sched.pending.get(pod.uid)
    fwk = sched.profiles.get(pod.scheduler_name)
    if current is None or fwk is None or current.terminating or sched.cache.is_assumed(pod.uid):
        sched.queue.done(pod.uid)  # deleted, bound or changed profile while it waited
        return None
    attempt = Attempt(fwk, CycleState(), qpi, sched.clock(), cycle)
    attempt.state.record_plugin_metrics = random.random() < PLUGIN_METRICS_SAMPLE_RATE
    try:
        sched.cache.update_snapshot(sched.snapshot)
        result = sched.algorithm.schedule_pod(fwk, attempt.state, pod, sched.snapshot)
    except NoNodesAvailableError as exc:
        no_nodes = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(exc),))
        handle_scheduling_failure(sched, attempt, no_nodes, None, CLEAR_NOMINATED_NODE)
        return None
    except FitError as fit:
        nominating: NominatingInfo | None = CLEAR_NOMINATED_NODE
        if fwk.has_post_filter_plugins():
            # Preemption: may nominate the pod to a node whose victims it is evicting (asynchronously).
            pf_result, pf_status = fwk.run_post_filter(attempt.state, pod, fit.diagnosis.node_to_status_view())
            fit.diagnosis.post_filter_msg = pf_status.message()
            nominating = NominatingInfo(pf_result.nominated_node_name) if pf_result is not None else None
        handle_scheduling_failure(sched, attempt, Status(Code.UNSCHEDULABLE, (str(fit),)), fit.diagnosis, nominating)
        return None
    except SchedulingError as exc:
        handle_scheduling_failure(sched, attempt, exc.status, None, CLEAR_NOMINATED_NODE)
        return None
    except Exception as exc:  # a bug must cost one pod one attempt, not the loop
        log.exception("scheduling cycle failed", extra={"pod": pod.key})
        handle_scheduling_failure(sched, attempt, error_status(exc), None, CLEAR_NOMINATED_NODE)
        return None
    finally:
        sched.observer.algorithm(sched.clock() - attempt.start)

    attempt.host = host = result.suggested_host
    attempt.evaluated_nodes, attempt.feasible_nodes = result.evaluated_nodes, result.feasible_nodes
    attempt.assumed = assumed = sched.cache.assume_pod(pod, host)
    sched.nominator.delete(pod.uid)  # an assumed pod is nominated nowhere
    status = fwk.run_reserve(attempt.state, assumed, host)
    if status is None:
        status = fwk.run_permit(attempt.state, assumed, host)
        if status is not None and status.code == Code.WAIT:
            status = None  # parked: the binding cycle waits for it
    if status is not None:
        fwk.run_unreserve(attempt.state, assumed, host)
        sched.cache.forget_pod(pod.uid)
        handle_scheduling_failure(sched, attempt, *_single_node_failure(status, host), CLEAR_NOMINATED_NODE)
        return None
    activate_requested(sched, attempt.state)
    return binding_cycle(sched, attempt)


def activate_requested(sched: Scheduler, state: CycleState) -> None:
    """Move the pods plugins asked for (CycleState.pods_to_activate) to activeQ, as upstream does at the end
    of a successful scheduling cycle and of a successful binding cycle."""
    if state.pods_to_activate:
        uids = [p.uid for p in state.pods_to_activate.values()]
        state.pods_to_activate.clear()
        sched.activate(uids)


def _single_node_failure(status: Status, host: str) -> tuple[Status, Diagnosis | None]:
    """Reserve/Permit rejections read like a FitError over the one chosen node."""
    if not status.is_rejected():
        return status, None
    diagnosis = Diagnosis(node_to_status={host: status})
    diagnosis.add_plugin_status(status)
    return Status(status.code, (str(FitError(1, diagnosis)),), status.plugin), diagnosis


# ---------------------------------------------------------------------------------------------------------
# 2. The binding cycle


async def binding_cycle(sched: Scheduler, attempt: Attempt) -> None:
    """Permit wait, PreBind, Bind, PostBind; on failure undo the assumption and requeue the pod."""
    fwk, state, host = attempt.fwk, attempt.state, attempt.host
    assumed = attempt.assumed
    assert assumed is not None
    uid = assumed.uid
    status: Status | None
    diagnosis: Diagnosis | None = None
    try:
        status = await fwk.wait_on_permit(assumed)
        if status is not None:
            status, diagnosis = _single_node_failure(status, host)
        else:
            status = await fwk.run_pre_bind(state, assumed, host)
            if status is None:
                bind_start = sched.clock()
                status = await fwk.run_bind(state, assumed, host)
                if status is not None and isinstance(status.error, BindOutcomeUnknownError):
                    status = await resolve_unanswered_bind(sched, attempt, status)
                    assumed, host = attempt.assumed or assumed, attempt.host
                elif status is not None and isinstance(status.error, BindLandedError):
                    assumed = _landed(sched, attempt, status.error.node_name)
                    host, status = attempt.host, None
                sched.observer.binding(sched.clock() - bind_start, status is None)
    except asyncio.CancelledError:
        fwk.run_unreserve(state, assumed, host)
        sched.cache.forget_pod(uid)
        sched.queue.done(uid)
        raise
    except Exception as exc:
        log.exception("binding cycle failed", extra={"pod": assumed.key, "node": host})
        status = error_status(exc)
    if status is None:
        _bound(sched, attempt, assumed)
        return
    fwk.run_unreserve(state, assumed, host)
    sched.cache.forget_pod(uid)
    if isinstance(status.error, AlreadyBoundError | PodGoneError):
        log.info("pod left the queue during binding", extra={"pod": assumed.key, "error": status.message()})
        sched.pending.pop(uid, None)
        sched.queue.done(uid)
        return
    if isinstance(status.error, BindOutcomeUnknownError) and uid in sched.pending:
        sched.unconfirmed_binds[uid] = attempt  # the watch may yet show that it landed: report_landed
    if status.is_rejected():
        # Rejected at Permit: requeue it as unschedulable first, then let the room it freed move the others
        # (not itself: that room cannot help the pod that just gave it up), as upstream's deferred move.
        handle_scheduling_failure(sched, attempt, status, diagnosis, CLEAR_NOMINATED_NODE)
        sched.move_assigned_pod_delete(assumed, others_only=True)
        return
    sched.move_assigned_pod_delete(assumed)
    handle_scheduling_failure(sched, attempt, status, diagnosis, CLEAR_NOMINATED_NODE)


# Reads of a pod whose bind got no answer, while neither the read nor the watch could tell where it is.
RESOLVE_RETRY_FIRST = 0.5
RESOLVE_RETRY_MAX = 5.0


async def resolve_unanswered_bind(sched: Scheduler, attempt: Attempt, unanswered: Status) -> Status | None:
    """The bind got no answer (`unanswered`): find out whether it landed before giving the node's room away.

    The cache keeps the pod assumed on attempt.host meanwhile, as for a bind in flight, so no other pod is
    placed in the room the pod may hold: freeing it at once (as upstream's ForgetPod does on any bind error)
    over-commits the node when the bind did land and the watch shows it only later (a watch cut by the same
    fault). The watch or a read of the pod (`ClusterAPI.bound_node`, retried with backoff while it fails)
    decides: None when the pod is bound (on attempt.host, or where the API says: `_landed`); a status naming
    PodGoneError or AlreadyBoundError when it left (deleted, or the watch shows another scheduler's binding);
    `unanswered` itself when the API shows it unbound, or when the scheduler stops first.
    """
    uid = attempt.pod.uid
    wake = sched.resolving[uid] = asyncio.Event()  # set by the pod's watch events and by stop
    delay = RESOLVE_RETRY_FIRST
    try:
        while True:
            seen = _watch_verdict(sched, attempt)
            if seen is not _UNRESOLVED or sched.stopping:
                return unanswered if seen is _UNRESOLVED else seen
            wake.clear()
            read = asyncio.ensure_future(sched.api.bound_node(attempt.pod))
            woken = asyncio.ensure_future(wake.wait())
            try:
                await asyncio.wait({read, woken}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                woken.cancel()
                if not read.done():
                    read.cancel()
                    await asyncio.gather(read, return_exceptions=True)
            if wake.is_set() or read.cancelled():
                continue  # the watch spoke (or stop came) while reading: look at the cache again
            try:
                node = read.result()
            except PodGoneError as exc:
                return Status(Code.ERROR, (str(exc),), unanswered.plugin, exc)
            except BindError as exc:
                log.info("binding outcome still unknown", extra={"pod": attempt.pod.key, "error": str(exc)})
            else:
                if not node:
                    return unanswered  # did not land: the room goes and the pod is retried
                if node != attempt.host:
                    _landed(sched, attempt, node)
                return None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await wake.wait()
            delay = min(delay * 2, RESOLVE_RETRY_MAX)
    finally:
        sched.resolving.pop(uid, None)


_UNRESOLVED = Status(Code.ERROR, ("unresolved",))


def _watch_verdict(sched: Scheduler, attempt: Attempt) -> Status | None:
    """What the cache (fed by the watch) already tells about an unanswered bind: None when it shows the pod
    bound on attempt.host (it landed), a PodGoneError status when the pod is gone, an AlreadyBoundError status
    when it shows the pod bound elsewhere (not ours: our bind went to attempt.host), else _UNRESOLVED."""
    uid = attempt.pod.uid
    held = sched.cache.get_pod(uid)
    if held is None:
        gone = PodGoneError(f"pod {attempt.pod.key} was deleted while its binding was in doubt")
        return Status(Code.ERROR, (str(gone),), "", gone)
    if sched.cache.is_assumed(uid):
        return _UNRESOLVED
    if held.node_name == attempt.host:
        return None
    other = AlreadyBoundError(f'pod {attempt.pod.key} is already assigned to node "{held.node_name}"')
    return Status(Code.ERROR, (str(other),), "", other)


def _landed(sched: Scheduler, attempt: Attempt, node_name: str) -> PodInfo:
    """An earlier bind of this pod landed (its reply was lost) on `node_name`: the pod is bound there, which
    may not be the node this attempt chose. Undo this attempt's reservation and hold the pod in the cache
    where the API says it is; the caller then records the binding as its own (event, metrics, PostBind)."""
    assumed = attempt.assumed
    assert assumed is not None
    if node_name == attempt.host:
        return assumed
    attempt.fwk.run_unreserve(attempt.state, assumed, attempt.host)
    attempt.host = node_name
    if sched.cache.is_assumed(assumed.uid):
        sched.cache.forget_pod(assumed.uid)
        assumed = sched.cache.assume_pod(attempt.pod, node_name)
    else:  # the watch already reported the pod bound (the cache follows the API); keep what it holds
        assumed = sched.cache.get_pod(assumed.uid) or assumed.with_node(node_name)
    attempt.assumed = assumed
    return assumed


def _bound(sched: Scheduler, attempt: Attempt, assumed: PodInfo) -> None:
    """The bind call succeeded: finish the assumption, report `Scheduled`, run PostBind."""
    uid = assumed.uid
    sched.cache.finish_binding(uid)
    sched.pending.pop(uid, None)
    sched.forget_pod_state(uid)
    _report_bound(sched, attempt, assumed)
    sched.queue.done(uid)


def report_landed(sched: Scheduler, attempt: Attempt, pod: PodInfo) -> None:
    """The watch shows a pod bound on the node of an attempt whose bind got no answer: that bind landed (its
    reply was lost) and no other attempt has bound the pod since. Report it as this attempt's binding."""
    _report_bound(sched, attempt, pod)


def _report_bound(sched: Scheduler, attempt: Attempt, assumed: PodInfo) -> None:
    """Count the binding, emit `Scheduled`, run PostBind and log it (the pod is bound on attempt.host)."""
    host = attempt.host
    sched.bound_count += 1
    now = sched.clock()
    sched.observer.attempt("scheduled", attempt.fwk.profile_name, now - attempt.start)
    sched.observer.pod_scheduled(attempt.qpi.attempts, now - attempt.qpi.initial_attempt_timestamp)
    sched.api.record_scheduled(assumed, host)
    attempt.fwk.run_post_bind(attempt.state, assumed, host)
    activate_requested(sched, attempt.state)
    if log.isEnabledFor(V2):
        log.log(
            V2,
            "Successfully bound pod to node",
            extra={
                "pod": assumed.key,
                "node": host,
                "evaluatedNodes": attempt.evaluated_nodes,
                "feasibleNodes": attempt.feasible_nodes,
            },
        )


# ---------------------------------------------------------------------------------------------------------
# 3. Failure handling


def handle_scheduling_failure(
    sched: Scheduler,
    attempt: Attempt,
    status: Status,
    diagnosis: Diagnosis | None,
    nominating: NominatingInfo | None = None,
) -> None:
    """Requeue the pod, record its nomination, then report the failure the way kube-scheduler does (event,
    condition and, when `nominating` changes it, status.nominatedNodeName in the same patch).

    `nominating` None keeps the pod's nomination as it is (upstream ModeNoop); a NominatingInfo overrides it
    (preemption's node, or "" to clear it).
    """
    qpi, fwk = attempt.qpi, attempt.fwk
    rejected = status.is_rejected()
    reason = REASON_UNSCHEDULABLE if rejected else REASON_SCHEDULER_ERROR
    sched.observer.attempt("unschedulable" if rejected else "error", fwk.profile_name, sched.clock() - attempt.start)
    qpi.unschedulable_plugins = set(diagnosis.unschedulable_plugins) if diagnosis else set()
    qpi.pending_plugins = set(diagnosis.pending_plugins) if diagnosis else set()
    message = status.message()
    current = sched.pending.get(qpi.pod.uid)
    if current is None:  # deleted or bound by someone else meanwhile: nothing to report
        sched.queue.done(qpi.pod.uid)
        return
    qpi.pod = current
    sched.queue.add_unschedulable_if_not_present(qpi, attempt.cycle)
    sched.notify()
    log.info("unable to schedule pod", extra={"pod": current.key, "reason": reason, "error": message})
    sched.last_failure[current.uid] = (reason, message)
    # Before the API call, so the next cycle already yields to the nomination (upstream AddNominatedPod).
    sched.nominator.add(current, nominating)
    nominated: str | None = None
    if nominating is not None and nominating.nominated_node_name != current.nominated_node_name:
        nominated = nominating.nominated_node_name
    sched.api.record_failure(current, reason, message, nominated_node_name=nominated)
