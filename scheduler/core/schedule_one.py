"""The scheduling algorithm of one attempt: PreFilter, Filter over a sample of nodes, Score, pick a host.

Reads top to bottom like upstream's schedule_one.go (schedulePod, findNodesThatFitPod,
findNodesThatPassFilters, numFeasibleNodesToFind, prioritizeNodes, selectHost). Pure and synchronous:
it sees one Snapshot and returns a decision or raises FitError.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from scheduler.backend.cache.snapshot import Snapshot
from scheduler.framework.fit_error import Diagnosis, FitError, NoNodesAvailableError
from scheduler.framework.interface import CycleState
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo

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
    """State that outlives one attempt: the rotating start index and the tie-breaking random source."""

    def __init__(self, percentage_of_nodes_to_score: int = 0, seed: int | None = None) -> None:
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        self.rng = random.Random(seed)

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
        totals = self.prioritize_nodes(fwk, state, pod, feasible)
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
        statuses, err = fwk.run_filters(state, pod, [info])
        if err is not None:
            return []
        if statuses[0] is None:
            return [info]
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
        ordered = nodes[start:] + nodes[:start] if start else nodes
        if not fwk.has_filter_plugins():
            return ordered[:num_to_find]

        t0 = time.perf_counter()
        feasible: list[NodeInfo] = []
        statuses = diagnosis.node_to_status
        pos = 0
        code = Code.SUCCESS
        try:
            while pos < num_all and len(feasible) < num_to_find:
                # Batches as large as the remaining need; a small floor keeps mostly-full clusters fast.
                need = num_to_find - len(feasible)
                chunk = ordered[pos : pos + max(need, 64)]
                results, err = fwk.run_filters(state, pod, chunk)
                if err is not None:
                    code = Code.ERROR
                    for node, st in zip(chunk, results, strict=True):
                        if st is not None:  # rejected by a plugin before the one that failed
                            statuses[node.name] = st
                    raise SchedulingError(err)
                if not any(results):  # every node passed (the common case): take what is needed at once
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
        self, fwk: Framework, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]
    ) -> list[int]:
        """Total weighted score per node; every node scores 1 when no Score plugin is enabled."""
        if not fwk.has_score_plugins():
            return [1] * len(nodes)
        status = fwk.run_pre_score(state, pod, nodes)
        if status is not None:
            raise SchedulingError(status)
        result, status = fwk.run_score(state, pod, nodes)
        if status is not None:
            raise SchedulingError(status)
        return result.totals

    def select_host(self, nodes: list[NodeInfo], totals: list[int]) -> str:
        """Highest total wins; ties are broken at random (reproducible under a seed)."""
        best = max(totals)
        winners = [i for i, t in enumerate(totals) if t == best]
        if len(winners) == 1:
            return nodes[winners[0]].name
        return nodes[winners[self.rng.randrange(len(winners))]].name
