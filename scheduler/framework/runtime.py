"""The framework of one profile: runs each extension point's plugins in order (upstream runtime/framework.go).

Filters run plugin-major over a batch of nodes: each plugin sees the nodes that passed every earlier plugin,
so a node's status still comes from the first plugin that rejects it, exactly as upstream's per-node loop,
while Python pays one call per plugin instead of one per plugin and node.
"""

from __future__ import annotations

import asyncio
import logging
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.fit_error import NodeToStatus
from scheduler.framework.go_duration import format_seconds
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BindPlugin,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    ObjectEventHandler,
    PermitPlugin,
    Plugin,
    PodNominator,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from scheduler.framework.observer import Observer
from scheduler.framework.status import Code, Status, error_status
from scheduler.framework.types import NodeInfo, PodInfo

log = logging.getLogger("pyscheduler.framework")

PRE_ENQUEUE = "PreEnqueue"
PRE_FILTER = "PreFilter"
FILTER = "Filter"
POST_FILTER = "PostFilter"
PRE_SCORE = "PreScore"
SCORE = "Score"
RESERVE = "Reserve"
PERMIT = "Permit"
UNRESERVE = "Unreserve"
PRE_BIND = "PreBind"
BIND = "Bind"
POST_BIND = "PostBind"

# The longest a Permit plugin may make a pod wait (upstream maxTimeout).
MAX_PERMIT_TIMEOUT = 15 * 60.0

class PluginResultError(TypeError):
    """A plugin returned something that is not what its extension point promises."""


def exception_text(exc: BaseException) -> str:
    """An exception as an error message that keeps its type: `KeyError: 'team-db'` (not just `'team-db'`)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class PluginErrorLog:
    """Logs plugin exceptions with their traceback, at most one line per (plugin, extension point) every
    `period` seconds, saying how many it held back since: a plugin failing on every pod cannot flood the
    log, and the first failure of each kind is always there to debug."""

    def __init__(self, period: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.period = period
        self._clock = clock
        self._last: dict[tuple[str, str], float] = {}
        self._held: dict[tuple[str, str], int] = {}

    def report(self, plugin: str, point: str, exc: BaseException, pod: str = "") -> bool:
        """Log `exc` unless one was logged for the same plugin and point within the period; True if logged."""
        key = (plugin, point)
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self.period:
            self._held[key] = self._held.get(key, 0) + 1
            return False
        self._last[key] = now
        fields: dict[str, Any] = {"plugin": plugin, "extensionPoint": point, "error": exception_text(exc)}
        if pod:
            fields["pod"] = pod
        held = self._held.pop(key, 0)
        if held:
            fields["suppressed"] = held
        log.error("plugin raised an exception", extra=fields, exc_info=exc)
        return True


def _status(value: Any, plugin: str, point: str) -> Status | None:
    """A plugin's returned status, checked: None or a Status."""
    if value is None or isinstance(value, Status):
        return value
    raise PluginResultError(f"{point} plugin {plugin!r} returned {type(value).__name__}, want Status or None")


def _statuses(values: Any, count: int, plugin: str, point: str, trusted: bool) -> list[Status | None]:
    """A batch of statuses, checked: a list of `count` Status-or-None (elements only for out-of-tree code)."""
    if not isinstance(values, list) or len(values) != count:
        got = f"{len(values)} results" if isinstance(values, list) else type(values).__name__
        raise PluginResultError(f"{point} plugin {plugin!r} returned {got} for {count} nodes")
    if trusted:
        return values
    for v in values:
        if v is not None and not isinstance(v, Status):
            raise PluginResultError(f"{point} plugin {plugin!r} returned {type(v).__name__}, want Status or None")
    return values


def _scores(values: Any, count: int, plugin: str, trusted: bool) -> list[int]:
    """A batch of scores, checked: a list of `count` ints (elements only for out-of-tree code)."""
    if not isinstance(values, list) or len(values) != count:
        got = f"{len(values)} scores" if isinstance(values, list) else type(values).__name__
        raise PluginResultError(f"Score plugin {plugin!r} returned {got} for {count} nodes")
    if trusted:
        return values
    for v in values:
        if not isinstance(v, int) or isinstance(v, bool):
            raise PluginResultError(f"Score plugin {plugin!r} returned a score of type {type(v).__name__}")
    return values


@dataclass(slots=True)
class ScoreResult:
    """Totals parallel to the scored nodes, plus each plugin's weighted scores for explanations."""

    totals: list[int]
    per_plugin: list[tuple[str, list[int]]] = field(default_factory=list)


class WaitingPod:
    """A pod parked at Permit until every waiting plugin allows it, one rejects it, or a wait times out.

    Each plugin's wait has its own deadline on the scheduler's clock (upstream arms one timer per plugin);
    the scheduler expires them (`expire`), so a simulation's fake clock times them out with no real waiting.
    Plugins reach it through Handle.get_waiting_pod / iterate_over_waiting_pods (WaitingPodView).
    """

    def __init__(self, pod: PodInfo, pending: Mapping[str, float], now: float = 0.0) -> None:
        self._pod = pod
        # plugin -> (deadline on the scheduler's clock, the wait it asked for in seconds)
        self.pending: dict[str, tuple[float, float]] = {p: (now + t, t) for p, t in pending.items()}
        self._result: Status | None = None
        self._done = False
        self._future: asyncio.Future[Status | None] | None = None

    @property
    def pod(self) -> PodInfo:
        return self._pod

    @property
    def done(self) -> bool:
        """Allowed by every plugin, rejected, timed out or preempted: the binding cycle may go on."""
        return self._done

    def pending_plugins(self) -> list[str]:
        return list(self.pending)

    def _finish(self, status: Status | None) -> bool:
        """Deliver the first outcome; later ones are ignored, as upstream's one-slot channel drops them."""
        if self._done:
            return False
        self._done = True
        self._result = status
        if self._future is not None and not self._future.done():
            self._future.set_result(status)
        return True

    def allow(self, plugin: str) -> None:
        self.pending.pop(plugin, None)
        if not self.pending:
            self._finish(None)

    def reject(self, plugin: str, message: str) -> bool:
        """Unschedulable at Permit; False when the pod was no longer waiting."""
        return self._finish(Status(Code.UNSCHEDULABLE, (message,), plugin))

    def preempt(self, plugin: str, message: str) -> bool:
        """Evicted by preemption while waiting: an Error, so the pod is retried after backoff (upstream Preempt)."""
        return self._finish(Status(Code.ERROR, (message,), plugin))

    def next_deadline(self) -> float | None:
        """When the earliest pending wait times out (None once decided)."""
        if self._done or not self.pending:
            return None
        return min(deadline for deadline, _ in self.pending.values())

    def expire(self, now: float) -> bool:
        """Reject the pod if a pending plugin's wait is over at `now`, with upstream's timeout message."""
        due = [(deadline, plugin) for plugin, (deadline, _) in self.pending.items() if deadline <= now]
        if self._done or not due:
            return False
        _, plugin = min(due, key=lambda d: d[0])
        waited = format_seconds(self.pending[plugin][1])
        return self.reject(plugin, f"rejected due to timeout after waiting {waited} at plugin {plugin}")

    async def wait(self) -> Status | None:
        """The outcome, once decided (at once when it already is)."""
        if self._done:
            return self._result
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        return await asyncio.shield(self._future)


class Framework:
    """Plugins of one profile wired to their extension points, with weights for Score."""

    def __init__(
        self,
        profile_name: str,
        plugins: Sequence[Plugin],
        points: Mapping[str, Sequence[str]],
        score_weights: Mapping[str, int],
        percentage_of_nodes_to_score: int | None = None,
        observer: Observer | None = None,
        upstream_plugins: frozenset[str] = frozenset(),
    ) -> None:
        """`points` maps an extension point name to the ordered plugin names enabled there.

        `upstream_plugins`: the default plugins kube-scheduler would run (PreFilter/Filter) for this
        profile; the fail-closed guard refuses pods needing one of them that pyscheduler lacks.
        """
        self.profile_name = profile_name
        self.upstream_plugins = upstream_plugins
        # Builds the same profile again with other plugin instances on another Handle (set by the profile
        # builder): explanations computed off the scheduling loop get plugins nobody else touches.
        self.rebuild: Callable[[Handle], Framework] | None = None
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.observer = observer or Observer()
        self.plugins: dict[str, Plugin] = {p.name: p for p in plugins}
        # In-tree plugins are tested to return well-formed batches; only out-of-tree ones get every element of
        # their batch results checked (a check per node and plugin is measurable at 5000 nodes).
        self._trusted = frozenset(n for n, p in self.plugins.items() if type(p).__module__.startswith("scheduler."))

        def pick(point: str, kind: type[Plugin]) -> list[Plugin]:
            out = []
            for name in points.get(point, ()):
                plugin = self.plugins[name]
                if not isinstance(plugin, kind):
                    raise TypeError(f"plugin {name!r} does not extend {point}")
                out.append(plugin)
            return out

        sorts = pick("queueSort", QueueSortPlugin)
        self.queue_sort: QueueSortPlugin | None = sorts[0] if sorts else None  # type: ignore[assignment]
        self.pre_enqueue: list[PreEnqueuePlugin] = pick("preEnqueue", PreEnqueuePlugin)  # type: ignore[assignment]
        self.pre_filter: list[PreFilterPlugin] = pick("preFilter", PreFilterPlugin)  # type: ignore[assignment]
        self.filter: list[FilterPlugin] = pick("filter", FilterPlugin)  # type: ignore[assignment]
        self.post_filter: list[PostFilterPlugin] = pick("postFilter", PostFilterPlugin)  # type: ignore[assignment]
        self.pre_score: list[PreScorePlugin] = pick("preScore", PreScorePlugin)  # type: ignore[assignment]
        self.score: list[ScorePlugin] = pick("score", ScorePlugin)  # type: ignore[assignment]
        self.score_weights = {p.name: int(score_weights.get(p.name) or 1) for p in self.score}
        self.reserve: list[ReservePlugin] = pick("reserve", ReservePlugin)  # type: ignore[assignment]
        self.permit: list[PermitPlugin] = pick("permit", PermitPlugin)  # type: ignore[assignment]
        self.pre_bind: list[PreBindPlugin] = pick("preBind", PreBindPlugin)  # type: ignore[assignment]
        self.bind: list[BindPlugin] = pick("bind", BindPlugin)  # type: ignore[assignment]
        self.post_bind: list[PostBindPlugin] = pick("postBind", PostBindPlugin)  # type: ignore[assignment]
        self.waiting_pods: dict[str, WaitingPod] = {}
        # The scheduler's clock (set by the Scheduler): Permit waits time out on it, so a simulation's fake
        # clock expires them with no real waiting.
        self.clock: Callable[[], float] = time.monotonic
        # Where plugin tracebacks go (the Scheduler shares one across its profiles).
        self.errors = PluginErrorLog()
        # The pods nominated to nodes (the scheduler's Nominator); Filter runs count the ones a pod must yield
        # to. None (unit tests, explanations of a bare framework) means nobody is nominated anywhere.
        self.nominator: PodNominator | None = None

    def _raised(self, pl: Plugin, point: str, exc: BaseException, pod: PodInfo) -> str:
        """A plugin raised: count it, log its traceback (rate-limited), and return the error text for the
        status: an in-tree plugin's own words (upstream's messages), the Python type added for out-of-tree
        ones, so `running "BoomFilter" filter plugin: KeyError: 'team-db'` says what went wrong."""
        self.observer.plugin_error(pl.name, point)
        self.errors.report(pl.name, point, exc, pod.key)
        if pl.name in self._trusted:
            return str(exc) or type(exc).__name__
        return exception_text(exc)

    # ------------------------------------------------------------------ queueing

    def events_to_register(self) -> dict[str, list[ClusterEvent | ClusterEventWithHint]]:
        """Plugin name -> cluster events (with their QueueingHints) that may make a pod it rejected
        schedulable; a plugin returning anything else fails the startup, naming it."""
        out: dict[str, list[ClusterEvent | ClusterEventWithHint]] = {}
        for plugin in self.plugins.values():
            if isinstance(plugin, EnqueueExtensions):
                events = list(plugin.events_to_register())
                for e in events:
                    if not isinstance(e, ClusterEvent | ClusterEventWithHint):
                        raise PluginResultError(
                            f"plugin {plugin.name!r}: events_to_register returned {type(e).__name__}, "
                            "want ClusterEvent or ClusterEventWithHint"
                        )
                out[plugin.name] = events
        return out

    def plugin_points(self) -> list[tuple[str, str]]:
        """(plugin, extension point) of every plugin wired into this profile, in point order."""
        points: dict[str, Sequence[Plugin]] = {
            "PreEnqueue": self.pre_enqueue,
            PRE_FILTER: self.pre_filter,
            FILTER: self.filter,
            POST_FILTER: self.post_filter,
            PRE_SCORE: self.pre_score,
            SCORE: self.score,
            RESERVE: self.reserve,
            PERMIT: self.permit,
            PRE_BIND: self.pre_bind,
            BIND: self.bind,
            POST_BIND: self.post_bind,
        }
        return [(p.name, point) for point, plugins in points.items() for p in plugins]

    def object_listeners(self, kind: str) -> list[Any]:
        """Plugins implementing ObjectEventHandler that declared `kind` in their object_kinds."""
        return [p for p in self.plugins.values() if isinstance(p, ObjectEventHandler) and kind in p.object_kinds]

    def object_kinds(self) -> set[str]:
        """The cluster object kinds this profile's plugins read (what the cluster adapter must watch)."""
        return {kind for plugin in self.plugins.values() for kind in plugin.object_kinds}

    def run_pre_enqueue(self, pod: PodInfo) -> Status | None:
        for pl in self.pre_enqueue:
            try:
                status = _status(pl.pre_enqueue(pod), pl.name, "PreEnqueue")
            except Exception as exc:  # a broken plugin must not stop the queue
                text = self._raised(pl, PRE_ENQUEUE, exc, pod)
                return error_status(f'running PreEnqueue plugin "{pl.name}": {text}', pl.name)
            if status is not None and status.code != Code.SUCCESS:
                return status.with_plugin(pl.name)
        return None

    # ------------------------------------------------------------------ filtering

    def has_filter_plugins(self) -> bool:
        return bool(self.filter)

    def has_score_plugins(self) -> bool:
        return bool(self.score)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter)

    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Run PreFilter; returns (node-set narrowing, status, plugins that narrowed the node set)."""
        start = time.perf_counter()
        result: PreFilterResult | None = None
        plugins_with_nodes: set[str] = set()
        return_status: Status | None = None
        record = state.record_plugin_metrics
        try:
            for pl in self.pre_filter:
                try:
                    t = time.perf_counter() if record else 0.0
                    answer = pl.pre_filter(state, pod, nodes)
                    if not isinstance(answer, tuple) or len(answer) != 2:
                        raise PluginResultError(f"PreFilter plugin {pl.name!r} must return (PreFilterResult, Status)")
                    r, s = answer
                    s = _status(s, pl.name, PRE_FILTER)
                    if r is not None and not isinstance(r, PreFilterResult):
                        raise PluginResultError(f"PreFilter plugin {pl.name!r} returned {type(r).__name__} as result")
                    if record:
                        pl_code = s.code if s is not None else Code.SUCCESS
                        self.observer.plugin_execution(pl.name, PRE_FILTER, pl_code, time.perf_counter() - t)
                except Exception as exc:
                    text = self._raised(pl, PRE_FILTER, exc, pod)
                    return None, error_status(f'running PreFilter plugin "{pl.name}": {text}', pl.name), set()
                if s is not None and s.code == Code.SKIP:
                    state.skip_filter_plugins.add(pl.name)
                    continue
                if s is not None and s.code != Code.SUCCESS:
                    s = s.with_plugin(pl.name)
                    if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        return None, s, set()
                    if s.code == Code.UNSCHEDULABLE:
                        return_status = s
                        continue
                    return None, error_status(f'running PreFilter plugin "{pl.name}": {s.message()}', pl.name), set()
                if r is not None and not r.all_nodes():
                    plugins_with_nodes.add(pl.name)
                if r is not None:
                    result = r if result is None else result.merge(r)
                if result is not None and result.node_names is not None and not result.node_names:
                    names = sorted(plugins_with_nodes)
                    if len(names) == 1:
                        msg = f"node(s) didn't satisfy plugin {names[0]}"
                    else:
                        msg = f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                    return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,)), plugins_with_nodes
            return result, return_status, plugins_with_nodes
        finally:
            code = return_status.code if return_status is not None else Code.SUCCESS
            self.observer.extension_point(PRE_FILTER, code, self.profile_name, time.perf_counter() - start)

    def run_filters(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[Status | None], Status | None]:
        """Filter nodes; returns a status per node (None = feasible) or an Error status for the cycle."""
        results: list[Status | None] = [None] * len(nodes)
        alive_idx = list(range(len(nodes)))
        alive = list(nodes)
        skip = state.skip_filter_plugins
        record = state.record_plugin_metrics
        trusted = self._trusted
        for pl in self.filter:
            if not alive:
                break
            if pl.name in skip:
                continue
            try:
                if record:  # one observation per plugin and cycle: the batch call covers every node
                    t = time.perf_counter()
                    statuses = _statuses(
                        pl.filter_batch(state, pod, alive), len(alive), pl.name, FILTER, pl.name in trusted
                    )
                    self.observer.plugin_execution(pl.name, FILTER, Code.SUCCESS, time.perf_counter() - t)
                else:
                    statuses = _statuses(
                        pl.filter_batch(state, pod, alive), len(alive), pl.name, FILTER, pl.name in trusted
                    )
            except Exception as exc:
                text = self._raised(pl, FILTER, exc, pod)
                return results, error_status(f'running "{pl.name}" filter plugin: {text}', pl.name)
            if not any(statuses):
                continue  # every node passed: nothing to partition
            next_idx: list[int] = []
            next_alive: list[NodeInfo] = []
            for i, node, st in zip(alive_idx, alive, statuses, strict=True):
                if st is None or st.code == Code.SUCCESS:
                    next_idx.append(i)
                    next_alive.append(node)
                elif st.code == Code.ERROR:
                    return results, error_status(f'running "{pl.name}" filter plugin: {st.message()}', pl.name)
                else:
                    results[i] = st if st.plugin == pl.name else st.with_plugin(pl.name)
            alive_idx, alive = next_idx, next_alive
        return results, None

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        """Filter one node (nominated node, explanations); None when it passes."""
        statuses, err = self.run_filters(state, pod, [node])
        return err if err is not None else statuses[0]

    # ------------------------------------------------------------------ nominated pods

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        """Tell every PreFilter plugin with extensions that `to_add` joins `node` (upstream
        RunPreFilterExtensionAddPod); the first failure is an Error naming the plugin."""
        return self._run_extensions(state, pod, to_add, node, add=True)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        """Tell every PreFilter plugin with extensions that `to_remove` leaves `node` (upstream
        RunPreFilterExtensionRemovePod, used when preemption removes a victim)."""
        return self._run_extensions(state, pod, to_remove, node, add=False)

    def _run_extensions(
        self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo, *, add: bool
    ) -> Status | None:
        operation = "AddPod" if add else "RemovePod"
        skip = state.skip_filter_plugins
        for pl in self.pre_filter:
            if pl.name in skip:
                continue
            extensions = pl.pre_filter_extensions()
            if extensions is None:
                continue
            try:
                if add:
                    s = extensions.add_pod(state, pod, other, node)
                else:
                    s = extensions.remove_pod(state, pod, other, node)
            except Exception as exc:
                s = error_status(self._raised(pl, PRE_FILTER, exc, pod), pl.name)
            if s is not None and s.code != Code.SUCCESS:
                return error_status(f'running {operation} on PreFilter plugin "{pl.name}": {s.message()}', pl.name)
        return None

    def _with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> tuple[bool, CycleState, NodeInfo, Status | None]:
        """upstream addGENominatedPods: a copy of state and node with every pod nominated to the node whose
        priority is at least pod's (pod itself excepted) added through the PreFilter extensions.
        Returns (whether any pod was added, state, node, error status)."""
        nominator = self.nominator
        nominated = nominator.nominated_pods_for_node(node.name) if nominator is not None else []
        if not nominated:
            return False, state, node, None
        node_out = node.clone()
        state_out = state.clone()
        added = False
        for other in nominated:
            if other.priority >= pod.priority and other.uid != pod.uid:
                node_out.add_pod(other)
                err = self.run_pre_filter_extension_add_pod(state_out, pod, other, node_out)
                if err is not None:
                    return False, state, node, err
                added = True
        return added, state_out, node_out, None

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node: NodeInfo
    ) -> Status | None:
        """Filter one node as if the pods nominated to it that pod must yield to were running (upstream
        RunFilterPluginsWithNominatedPods): pass 1 with those pods added; pass 2, only when pass 1 added pods
        and passed, without them (filters such as pod affinity may need the nominated pods to be absent)."""
        added, state_in, node_in, err = self._with_nominated_pods(state, pod, node)
        if err is not None:
            return err
        status = self.run_filter_plugins(state_in, pod, node_in)
        if not added or status is not None:
            return status
        return self.run_filter_plugins(state, pod, node)

    def run_filters_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[Status | None], Status | None]:
        """`run_filters`, with each node that has nominated pods filtered by the two-pass rule of
        `run_filter_plugins_with_nominated_pods`; nodes without nominees stay on the batch path."""
        nominator = self.nominator
        if nominator is None or not nominator.has_nominations():
            return self.run_filters(state, pod, nodes)
        results: list[Status | None] = [None] * len(nodes)
        batch: list[int] = []
        for i, node in enumerate(nodes):
            added, state_in, node_in, err = self._with_nominated_pods(state, pod, node)
            if err is not None:
                return results, err
            if added:  # pass 1; pass 2 is the batch run below
                statuses, err = self.run_filters(state_in, pod, [node_in])
                if err is not None:
                    return results, err
                if statuses[0] is not None:
                    results[i] = statuses[0]
                    continue
            batch.append(i)
        if len(batch) == len(nodes):
            return self.run_filters(state, pod, nodes)
        statuses, err = self.run_filters(state, pod, [nodes[i] for i in batch])
        for i, st in zip(batch, statuses, strict=True):
            results[i] = st
        return results, err

    def run_filter_each(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> list[list[tuple[str, Status | None]]]:
        """Run every filter on every node without stopping at the first rejection (for explanations).

        Each plugin sees all the nodes in one batch call (so 5000 nodes cost one call per plugin); the
        result is, per node, each plugin's verdict in plugin order (None: pass; SKIP when PreFilter said so).
        """
        out: list[list[tuple[str, Status | None]]] = [[] for _ in nodes]
        for pl in self.filter:
            statuses: list[Status | None]
            if pl.name in state.skip_filter_plugins:
                statuses = [Status(Code.SKIP, (), pl.name)] * len(nodes)
            else:
                try:
                    statuses = _statuses(pl.filter_batch(state, pod, nodes), len(nodes), pl.name, FILTER, False)
                except Exception as exc:
                    statuses = [error_status(self._raised(pl, FILTER, exc, pod), pl.name)] * len(nodes)
            for verdicts, st in zip(out, statuses, strict=True):
                if st is None or st.code == Code.SUCCESS:
                    verdicts.append((pl.name, None))
                else:
                    verdicts.append((pl.name, st if st.plugin == pl.name else st.with_plugin(pl.name)))
        return out

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Run PostFilter plugins until one succeeds, one says UnschedulableAndUnresolvable or one fails;
        the messages of Unschedulable ones are joined like upstream's RunPostFilterPlugins."""
        start = time.perf_counter()
        reasons: list[str] = []
        rejector = ""
        result: PostFilterResult | None = None
        final = Status(Code.UNSCHEDULABLE)
        for pl in self.post_filter:
            try:
                answer = pl.post_filter(state, pod, node_to_status)
                if not isinstance(answer, tuple) or len(answer) != 2:
                    raise PluginResultError(f"PostFilter plugin {pl.name!r} must return (PostFilterResult, Status)")
                r, s = answer
                s = _status(s, pl.name, POST_FILTER)
            except Exception as exc:
                final = error_status(self._raised(pl, POST_FILTER, exc, pod), pl.name)
                break
            if s is None or s.code == Code.SUCCESS:
                final = Status(Code.SUCCESS, s.reasons if s else (), pl.name)
                result = r
                break
            if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                final = Status(s.code, s.reasons, pl.name)
                result = r
                break
            if s.code != Code.UNSCHEDULABLE:
                final = s.with_plugin(pl.name)
                result = None
                break
            reasons.extend(s.reasons)
            rejector = rejector or pl.name
            result = r or result
        else:
            final = Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)
        self.observer.extension_point(POST_FILTER, final.code, self.profile_name, time.perf_counter() - start)
        return result, final

    # ------------------------------------------------------------------ scoring

    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        start = time.perf_counter()
        code = Code.SUCCESS
        try:
            record = state.record_plugin_metrics
            for pl in self.pre_score:
                try:
                    t = time.perf_counter() if record else 0.0
                    s = _status(pl.pre_score(state, pod, nodes), pl.name, PRE_SCORE)
                    if record:
                        pl_code = s.code if s is not None else Code.SUCCESS
                        self.observer.plugin_execution(pl.name, PRE_SCORE, pl_code, time.perf_counter() - t)
                except Exception as exc:
                    code = Code.ERROR
                    text = self._raised(pl, PRE_SCORE, exc, pod)
                    return error_status(f'running PreScore plugin "{pl.name}": {text}', pl.name)
                if s is None or s.code == Code.SUCCESS:
                    continue
                if s.code == Code.SKIP:
                    state.skip_score_plugins.add(pl.name)
                    continue
                code = Code.ERROR
                return error_status(f'running PreScore plugin "{pl.name}": {s.message()}', pl.name)
            return None
        finally:
            self.observer.extension_point(PRE_SCORE, code, self.profile_name, time.perf_counter() - start)

    def run_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[ScoreResult, Status | None]:
        """Score, normalize and weight; totals[i] is node i's weighted sum over plugins."""
        start = time.perf_counter()
        totals = [0] * len(nodes)
        result = ScoreResult(totals)
        code = Code.SUCCESS
        record = state.record_plugin_metrics
        try:
            for pl in self.score:
                if pl.name in state.skip_score_plugins:
                    continue
                try:
                    t = time.perf_counter() if record else 0.0
                    trust = pl.name in self._trusted
                    scores = _scores(pl.score_batch(state, pod, nodes), len(nodes), pl.name, trust)
                except Exception as exc:
                    code = Code.ERROR
                    text = self._raised(pl, SCORE, exc, pod)
                    message = f'running Score plugins: plugin "{pl.name}" failed with: {text}'
                    return result, error_status(message, pl.name)
                if pl.has_normalize:
                    try:
                        s = _status(pl.normalize_score(state, pod, scores), pl.name, "NormalizeScore")
                        text = s.message() if s is not None and s.code != Code.SUCCESS else ""
                        _scores(scores, len(nodes), pl.name, trust)  # it rescales in place: check again
                    except Exception as exc:
                        text = self._raised(pl, SCORE, exc, pod)
                    if text:
                        code = Code.ERROR
                        return result, error_status(
                            f'running Normalize on Score plugins: plugin "{pl.name}" failed with: {text}', pl.name
                        )
                if record:
                    self.observer.plugin_execution(pl.name, SCORE, Code.SUCCESS, time.perf_counter() - t)
                lo, hi = (min(scores), max(scores)) if scores else (0, 0)
                if lo < MIN_NODE_SCORE or hi > MAX_NODE_SCORE:
                    code = Code.ERROR
                    bad = lo if lo < MIN_NODE_SCORE else hi
                    return result, error_status(
                        f'applying score defaultWeights on Score plugins: plugin "{pl.name}" returns an invalid '
                        f"score {bad}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] "
                        "after normalizing",
                        pl.name,
                    )
                if hi == 0:  # every node scored 0 (e.g. DynamicResources for a pod without claims): adds nothing
                    result.per_plugin.append((pl.name, list(scores)))
                    continue
                weight = self.score_weights[pl.name]
                weighted = [v * weight for v in scores] if weight != 1 else list(scores)
                result.per_plugin.append((pl.name, weighted))
                if len(weighted) != len(totals):
                    raise ValueError(f"plugin {pl.name!r} returned {len(weighted)} scores for {len(totals)} nodes")
                totals = list(map(operator.add, totals, weighted))
            result.totals = totals
            return result, None
        finally:
            self.observer.extension_point(SCORE, code, self.profile_name, time.perf_counter() - start)

    # ------------------------------------------------------------------ reserve, permit, bind

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        for pl in self.reserve:
            try:
                s = _status(pl.reserve(state, pod, node_name), pl.name, RESERVE)
            except Exception as exc:
                text = self._raised(pl, RESERVE, exc, pod)
                return error_status(f'running Reserve plugin "{pl.name}": {text}', pl.name)
            if s is not None and s.code != Code.SUCCESS:
                if s.is_rejected():
                    return s.with_plugin(pl.name)
                return error_status(f'running Reserve plugin "{pl.name}": {s.message()}', pl.name)
        return None

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for pl in reversed(self.reserve):
            try:
                pl.unreserve(state, pod, node_name)
            except Exception as exc:  # best effort, as upstream; the next plugin still unreserves
                self._raised(pl, UNRESERVE, exc, pod)
                continue

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Run Permit; a WAIT result parks the pod in waiting_pods for wait_on_permit."""
        pending: dict[str, float] = {}
        for pl in self.permit:
            try:
                answer = pl.permit(state, pod, node_name)
                if not isinstance(answer, tuple) or len(answer) != 2:
                    raise PluginResultError(f"Permit plugin {pl.name!r} must return (Status, timeout seconds)")
                s, timeout = answer
                s = _status(s, pl.name, PERMIT)
                if s is not None and s.code == Code.WAIT and not isinstance(timeout, int | float):
                    raise PluginResultError(f"Permit plugin {pl.name!r} returned a timeout of {timeout!r}")
            except Exception as exc:
                text = self._raised(pl, PERMIT, exc, pod)
                return error_status(f'running Permit plugin "{pl.name}": {text}', pl.name)
            if s is None or s.code == Code.SUCCESS:
                continue
            if s.is_rejected():
                return s.with_plugin(pl.name)
            if s.code == Code.WAIT:
                pending[pl.name] = min(timeout, MAX_PERMIT_TIMEOUT)
                continue
            return error_status(f'running Permit plugin "{pl.name}": {s.message()}', pl.name)
        if pending:
            self.waiting_pods[pod.uid] = WaitingPod(pod, pending, self.clock())
            return Status(Code.WAIT, (), next(iter(pending)))
        return None

    async def wait_on_permit(self, pod: PodInfo) -> Status | None:
        """Wait until the parked pod is allowed (None), rejected (its Unschedulable status) or preempted (an
        Error `waiting on permit for pod: ...`, as upstream's WaitOnPermit)."""
        waiting = self.waiting_pods.get(pod.uid)
        if waiting is None:
            return None
        try:
            status = await waiting.wait()
        finally:
            self.waiting_pods.pop(pod.uid, None)
        if status is None or status.is_success() or status.is_rejected():
            return status
        return error_status(f"waiting on permit for pod: {status.message()}", status.plugin)

    def parked(self, uid: str) -> bool:
        """Whether the pod waits at Permit with no outcome yet (its binding cycle cannot progress by itself)."""
        waiting = self.waiting_pods.get(uid)
        return waiting is not None and not waiting.done

    def next_permit_deadline(self) -> float | None:
        """The earliest moment a waiting pod's Permit wait times out, on the scheduler's clock."""
        deadlines = [d for w in self.waiting_pods.values() if (d := w.next_deadline()) is not None]
        return min(deadlines, default=None)

    def expire_waiting_pods(self, now: float) -> int:
        """Reject the waiting pods whose wait is over at `now`; return how many."""
        return sum(1 for w in list(self.waiting_pods.values()) if w.expire(now))

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        for pl in self.pre_bind:
            try:
                s = _status(await pl.pre_bind(state, pod, node_name), pl.name, PRE_BIND)
            except Exception as exc:
                text = self._raised(pl, PRE_BIND, exc, pod)
                return error_status(f'running PreBind plugin "{pl.name}": {text}', pl.name)
            if s is not None and s.code not in (Code.SUCCESS, Code.SKIP):
                if s.is_rejected():
                    return s.with_plugin(pl.name)
                return error_status(f'running PreBind plugin "{pl.name}": {s.message()}', pl.name)
        return None

    async def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = time.perf_counter()
        status: Status | None = Status(Code.SKIP)
        for pl in self.bind:
            try:
                status = _status(await pl.bind(state, pod, node_name), pl.name, BIND)
            except Exception as exc:
                text = self._raised(pl, BIND, exc, pod)
                status = error_status(f'running Bind plugin "{pl.name}": {text}', pl.name)
                break
            if status is not None and status.code == Code.SKIP:
                continue
            if status is not None and status.code != Code.SUCCESS and not status.is_rejected():
                status = Status(
                    status.code, (f'running Bind plugin "{pl.name}": {status.message()}',), pl.name, status.error
                )
            break
        code = status.code if status is not None else Code.SUCCESS
        self.observer.extension_point(BIND, code, self.profile_name, time.perf_counter() - start)
        if status is not None and status.code == Code.SKIP:
            return error_status("all bind plugins skipped the pod", "")
        return status

    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for pl in self.post_bind:
            try:
                pl.post_bind(state, pod, node_name)
            except Exception as exc:  # informational extension point
                self._raised(pl, POST_BIND, exc, pod)
                continue
