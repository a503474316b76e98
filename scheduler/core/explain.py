"""Why is my pod where it is, or why is it Pending? Node by node, plugin by plugin, and what would fix it.

Unlike a scheduling cycle, which stops at the first rejecting plugin and samples nodes, an explanation
runs every Filter plugin on every node so a person sees all the reasons a node is out, scores every
feasible node, adds each plugin's own detail (the pods holding a clashing host port...), and, for a pod
that fits nowhere, the ranked changes that would make it fit (`fixes.py`: each one proven by re-running
the filters). For a bound pod it says why its node won: the per-plugin scores against the runners-up.

The JSON form (`to_json`) is versioned (`apiVersion`, documented in docs/explain.md); the text form groups
nodes by their decisive reason so a 5000-node answer stays readable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scheduler.core.fixes import ASSUMPTION, POD, Fix, find_fixes, rank
from scheduler.core.unsupported import find_unsupported, unsupported_message
from scheduler.framework.fit_error import Diagnosis, FitError
from scheduler.framework.interface import CycleState, ExplainDetail, ExplainExtensions
from scheduler.framework.preemption import filter_victims_with_pdb_violation
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.framework.yaml_flow import flow
from scheduler.plugins.default_preemption import PREEMPT_NEVER, DefaultPreemption
from scheduler.plugins.dynamic_resources import DynamicResources

API_VERSION = "explain.pyscheduler.io/v1"
MAX_GROUP_NAMES = 5  # node names shown per group of nodes sharing a decisive reason
MAX_RUNNERS_UP = 3
MAX_FIXES_SHOWN = 10  # fixes the text lists (JSON has them all)
SKIPPED = "Skip (nothing to check for this pod)"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"

CODE_TEXT = {
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.ERROR: "Error",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


@dataclass(slots=True)
class NodeVerdict:
    node: str
    filters: list[tuple[str, Status | None]] = field(default_factory=list)
    excluded_by: str = ""  # PreFilter narrowing that left this node out
    scores: list[tuple[str, int]] = field(default_factory=list)
    total: int | None = None
    details: list[tuple[str, ExplainDetail]] = field(default_factory=list)  # (plugin, what it adds)

    @property
    def first_failure(self) -> Status | None:
        return next((s for _, s in self.filters if s is not None and s.code != Code.SKIP), None)

    @property
    def feasible(self) -> bool:
        return not self.excluded_by and self.first_failure is None


@dataclass(slots=True)
class VictimView:
    pod: str
    priority: int
    pdb_violating: bool = False


@dataclass(slots=True)
class PreemptionView:
    """What DefaultPreemption would do for a pod that fits nowhere: which pods it would evict where, and
    why that node."""

    outcome: str  # "preempt", "not eligible", "not helpful", "error"
    message: str  # the PostFilter message ("preemption: ...") the FailedScheduling note ends with
    node: str = ""
    criterion: str = ""
    candidates: list[tuple[str, list[VictimView], int]] = field(default_factory=list)  # (node, victims, violations)
    nodes_that_cannot_help: dict[str, str] = field(default_factory=dict)  # node -> why (dry-run verdict)

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "message": self.message,
            "nominatedNode": self.node or None,
            "why": self.criterion or None,
            "candidates": [
                {
                    "node": node,
                    "pdbViolations": violations,
                    "victims": [{"pod": v.pod, "priority": v.priority, "pdbViolating": v.pdb_violating} for v in vs],
                }
                for node, vs, violations in self.candidates
            ],
            "nodesThatCannotHelp": dict(self.nodes_that_cannot_help),
        }


@dataclass(slots=True)
class Explanation:
    pod: str
    profile: str
    current_node: str = ""
    pre_filter: list[tuple[str, str]] = field(default_factory=list)
    pre_filter_status: Status | None = None
    nodes: list[NodeVerdict] = field(default_factory=list)
    message: str = ""  # the FailedScheduling message a cycle would produce now (empty when it fits)
    best: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # fields the fail-closed guard refuses the pod for
    fixes: list[Fix] = field(default_factory=list)  # for a pod that fits nowhere: ranked, proven changes
    preemption: PreemptionView | None = None  # for a pod that fits nowhere, when a profile preempts
    deallocation: str = ""  # what DynamicResources' PostFilter would release first (dry run)
    error: Status | None = None  # a plugin Error that fails the whole cycle (SchedulerError, no preemption)

    def groups(self) -> list[tuple[str, list[str]]]:
        """(decisive reason, node names) for nodes that are out, largest group first."""
        by_reason: dict[str, list[str]] = {}
        for v in self.nodes:
            if v.excluded_by:
                reason = f"PreFilter: {v.excluded_by}"
            elif v.first_failure is not None:
                failure = v.first_failure
                error = "Error: " if failure.code == Code.ERROR else ""
                reason = f"{failure.plugin}: {error}{failure.message()}"
            else:
                continue
            by_reason.setdefault(reason, []).append(v.node)
        return sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0]))

    def ranking(self) -> list[NodeVerdict]:
        """Feasible, scored nodes from best to worst (ties by name)."""
        scored = [v for v in self.nodes if v.feasible and v.total is not None]
        return sorted(scored, key=lambda v: (-(v.total or 0), v.node))

    def why(self) -> dict[str, Any] | None:
        """For the node the pod is on (or would go to): its per-plugin scores against the runners-up."""
        ranking = self.ranking()
        chosen = next((v for v in ranking if v.node == self.current_node), None) if self.current_node else None
        if chosen is None and ranking and not self.message:
            chosen = ranking[0]
        if chosen is None:
            return None
        others = [v for v in ranking if v.node != chosen.node][:MAX_RUNNERS_UP]
        mine = dict(chosen.scores)
        return {
            "node": chosen.node,
            "totalScore": chosen.total,
            "scores": mine,
            "runnersUp": [
                {
                    "node": v.node,
                    "totalScore": v.total,
                    "difference": {p: mine.get(p, 0) - s for p, s in v.scores if mine.get(p, 0) != s},
                }
                for v in others
            ],
        }

    def to_json(self) -> dict[str, Any]:
        def st(s: Status | None) -> dict[str, Any] | None:
            if s is None:
                return None
            return {"code": CODE_TEXT.get(s.code, "Success"), "plugin": s.plugin, "reasons": list(s.reasons)}

        return {
            "apiVersion": API_VERSION,
            "pod": self.pod,
            "profile": self.profile,
            "currentNode": self.current_node or None,
            "preFilter": {
                "status": st(self.pre_filter_status),
                "plugins": [{"plugin": p, "result": r} for p, r in self.pre_filter],
            },
            "message": self.message or None,
            "error": {"plugin": self.error.plugin, "message": self.error.message()} if self.error else None,
            "unsupportedFields": self.unsupported,
            "fixes": [f.to_json() for f in self.fixes],
            "why": self.why(),
            "groups": [{"reason": r, "count": len(names), "nodes": names} for r, names in self.groups()],
            "preemption": self.preemption.to_json() if self.preemption is not None else None,
            "deallocation": self.deallocation or None,
            "bestNodes": self.best,
            "nodes": [
                {
                    "name": v.node,
                    "feasible": v.feasible,
                    "excludedBy": v.excluded_by or None,
                    "filters": [{"plugin": p, "status": st(s)} for p, s in v.filters],
                    "scores": {p: s for p, s in v.scores},
                    "totalScore": v.total,
                    "details": [{"plugin": p, "text": d.text, **d.data} for p, d in v.details],
                }
                for v in self.nodes
            ],
        }


def _without_pod(snapshot: Snapshot, pod: PodInfo) -> Snapshot:
    """The snapshot as the pod's own scheduling cycle saw it: without the pod on its node."""
    if not pod.node_name or pod.node_name not in snapshot.node_info_map:
        return snapshot
    infos = []
    for info in snapshot.node_info_list:
        if info.name == pod.node_name and pod.uid in info.pods:
            info = info.clone()
            info.remove_pod(pod.uid)
        infos.append(info)
    out = Snapshot.from_node_infos(infos, snapshot.image_states)
    out.node_image_states = dict(snapshot.node_image_states)
    return out


def explain_pod(fwk: Framework, pod: PodInfo, snapshot: Snapshot) -> Explanation:
    """Evaluate every node for pod with every plugin of its profile.

    A pod the fail-closed guard refuses still gets every node's verdict, but its message is the guard's
    and no node is "best": pyscheduler will not place it.
    """
    expl = _explain(fwk, pod, snapshot)
    if not pod.node_name:
        findings = find_unsupported(pod, fwk.upstream_plugins, fwk.plugins)
        if findings:
            expl.unsupported = [f"{f.field} (upstream plugin {f.plugin})" for f in findings]
            expl.message = unsupported_message(findings)
            expl.best = []
    return expl


def _explain(fwk: Framework, pod: PodInfo, snapshot: Snapshot) -> Explanation:
    snap = _without_pod(snapshot, pod)
    expl = Explanation(pod=pod.key, profile=fwk.profile_name, current_node=pod.node_name)
    if pod.node_name:
        # A bound pod is evaluated as its scheduling cycle saw it: unbound, against every node (otherwise
        # its own spec.nodeName would make NodeName keep only the node it is on).
        pod = pod.with_node("")
    state = CycleState()
    nodes: list[NodeInfo] = snap.node_info_list
    pre_res, status, narrowing = fwk.run_pre_filter(state, pod, nodes)
    for pl in fwk.pre_filter:
        if pl.name in state.skip_filter_plugins:
            expl.pre_filter.append((pl.name, SKIPPED))
        elif pl.name in narrowing and pre_res is not None and pre_res.node_names is not None:
            expl.pre_filter.append((pl.name, f"only nodes {flow(sorted(pre_res.node_names))}"))
        else:
            expl.pre_filter.append((pl.name, "Success"))
    expl.pre_filter_status = status
    if status is not None and status.code == Code.ERROR:  # the cycle fails: no PostFilter, no FitError
        expl.error = status
        expl.message = status.message()
        return expl
    if status is not None and status.code != Code.SUCCESS:
        diagnosis = Diagnosis(absent_nodes_status=status, pre_filter_msg=status.message())
        _explain_preemption(expl, fwk, state, pod, snap, diagnosis)
        expl.message = str(FitError(len(nodes), diagnosis))
        return expl
    allowed = pre_res.node_names if pre_res is not None else None
    feasible: list[NodeInfo] = []
    evaluated = [info for info in nodes if allowed is None or info.name in allowed]
    verdicts = iter(fwk.run_filter_each(state, pod, evaluated))
    extensions = {name: p for name, p in fwk.plugins.items() if isinstance(p, ExplainExtensions)}
    for info in nodes:
        verdict = NodeVerdict(info.name)
        if allowed is not None and info.name not in allowed:
            verdict.excluded_by = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(narrowing))}]"
        else:
            verdict.filters = next(verdicts)
            failure = verdict.first_failure
            if failure is None:
                feasible.append(info)
            for plugin, st in verdict.filters:
                extension = extensions.get(plugin)
                if extension is not None and (st is None or st.code != Code.SKIP):
                    verdict.details.extend((plugin, d) for d in extension.explain_node(state, pod, info, st))
        expl.nodes.append(verdict)
    if any(st is not None and st.code == Code.ERROR for v in expl.nodes for _, st in v.filters):
        # A plugin failed on some node. The cycle fails with that Error (no preemption) unless an earlier
        # plugin rejected every such node first: the cycle's own filter run decides.
        _, err = fwk.run_filters(state, pod, evaluated)
        if err is not None:
            expl.error = err
            expl.message = err.message()
            return expl
    if not feasible:
        diagnosis = Diagnosis()
        for v in expl.nodes:
            failure = v.first_failure
            if failure is not None:
                diagnosis.node_to_status[v.node] = failure
        if allowed is not None:
            diagnosis.absent_nodes_status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                (f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(narrowing))}]",),
            )
        _explain_preemption(expl, fwk, state, pod, snap, diagnosis)
        expl.message = str(FitError(len(nodes), diagnosis))
        infos = snap.node_info_map
        rejected = [
            (infos[v.node], plugin, st)
            for v in expl.nodes
            for plugin, st in v.filters
            if st is not None and st.code != Code.SKIP and v.node in infos
        ]
        expl.fixes = rank([*find_fixes(fwk, pod, snap, rejected, state), *expl.fixes])
        return expl
    by_name = {v.node: v for v in expl.nodes}
    if fwk.has_score_plugins():
        pre = fwk.run_pre_score(state, pod, feasible)
        if pre is None:
            result, err = fwk.run_score(state, pod, feasible)
            if err is None:
                for i, info in enumerate(feasible):
                    v = by_name[info.name]
                    v.scores = [(plugin, scores[i]) for plugin, scores in result.per_plugin]
                    v.total = result.totals[i]
    else:
        for info in feasible:
            by_name[info.name].total = 1
    totals = [by_name[i.name].total or 0 for i in feasible]
    top = max(totals)
    expl.best = [i.name for i, t in zip(feasible, totals, strict=True) if t == top]
    return expl


def _explain_preemption(
    expl: Explanation, fwk: Framework, state: CycleState, pod: PodInfo, snapshot: Snapshot, diagnosis: Diagnosis
) -> None:
    """For a pending pod that fits nowhere: DefaultPreemption's decision, dry-run only (nothing is evicted),
    and its message as the end of the FailedScheduling message (diagnosis.post_filter_msg)."""
    if pod.node_name:
        return
    # The PostFilter plugins before DefaultPreemption, dry-run in order as RunPostFilterPlugins runs them
    # (DynamicResources: which claim it would deallocate; an Error ends PostFilter before any preemption).
    reasons: list[str] = []
    plugin: DefaultPreemption | None = None
    for pl in fwk.post_filter:
        if isinstance(pl, DefaultPreemption):
            plugin = pl
            break
        if not isinstance(pl, DynamicResources):
            continue
        status, action = pl.dry_run_post_filter(state, pod)
        if status.code == Code.ERROR:
            diagnosis.post_filter_msg = status.message()
            expl.preemption = PreemptionView(
                "error",
                f"preemption is not tried: {pl.name}'s PostFilter fails first with {status.message()!r} "
                "(its PreFilter did not run after the PreFilter rejection)",
            )
            return
        reasons.extend(status.reasons)
        if action:
            expl.deallocation = action
    if plugin is None:
        if reasons:
            diagnosis.post_filter_msg = ", ".join(reasons)
        return
    try:
        evaluation, message = plugin.explain(fwk, state, pod, diagnosis.node_to_status_view(), snapshot)
    except Exception as exc:  # an explanation must not fail because of one part of it
        expl.preemption = PreemptionView("error", f"preemption could not be evaluated: {exc}")
        return
    diagnosis.post_filter_msg = ", ".join([*reasons, message]) if message else ", ".join(reasons)
    view = PreemptionView("not helpful", message)
    status = evaluation.status
    if status.code == Code.ERROR:
        view.outcome = "error"
    elif evaluation.best is not None:
        view.outcome = "preempt"
        view.node = evaluation.best.node
        view.criterion = evaluation.criterion
    elif evaluation.dry_run is None:
        view.outcome = "not eligible"
        if pod.preemption_policy == PREEMPT_NEVER:
            expl.fixes.extend(_allow_preemption(fwk, plugin, state, pod, diagnosis, snapshot))
    pdbs = plugin.handle_objects_pdbs()
    if evaluation.dry_run is not None:
        for candidate in evaluation.dry_run.candidates:
            violating = {v.uid for v, _ in filter_victims_with_pdb_violation(candidate.victims, pdbs)[0]}
            victims = [VictimView(v.key, v.priority, v.uid in violating) for v in candidate.victims]
            view.candidates.append((candidate.node, victims, candidate.pdb_violations))
        for node, st in evaluation.dry_run.node_statuses.items():
            view.nodes_that_cannot_help[node] = st.message()
    expl.preemption = view


def _allow_preemption(
    fwk: Framework, plugin: DefaultPreemption, state: CycleState, pod: PodInfo, diagnosis: Diagnosis,
    snapshot: Snapshot,
) -> list[Fix]:
    """For a pod with preemptionPolicy Never: what preemption would do if it could preempt (a dry run of
    the same evaluation; its filters run on each candidate node with the victims removed)."""
    allowed = pod.evolve(preemption_policy=PREEMPT_LOWER_PRIORITY)
    try:
        evaluation, _ = plugin.explain(fwk, state.clone(), allowed, diagnosis.node_to_status_view(), snapshot)
    except Exception:  # an explanation must not fail because of one part of it
        return []
    best = evaluation.best
    if best is None:
        return []
    victims = ", ".join(v.key for v in best.victims)
    return [
        Fix(
            "allow-preemption",
            f"let the pod preempt (preemptionPolicy {PREEMPT_LOWER_PRIORITY}, which admission copies from its "
            f"PriorityClass): it would evict {victims} from node {best.node}",
            [best.node],
            {"preemptionPolicy": PREEMPT_LOWER_PRIORITY},
            scope=POD,
        )
    ]


def render_text(expl: Explanation, all_nodes: bool = False) -> str:
    """Human-readable explanation: blocking reasons grouped (a few names each, with what else fails there
    and each plugin's numbers), the best nodes with their scores, why the chosen node won, and the ranked
    fixes. `all_nodes` lists every node's verdict for every plugin instead of the groups' names."""
    out = [f"Pod {expl.pod} (profile {expl.profile})"]
    if expl.current_node:
        out.append(f"  currently bound to: {expl.current_node}")
    if expl.unsupported:
        out.append("Not placed by pyscheduler (fail closed): the pod uses fields it does not evaluate yet:")
        out.extend(f"  {f}" for f in expl.unsupported)
    out.extend(_pre_filter_lines(expl))
    if expl.error is not None:
        out.append(
            f"Error: plugin {expl.error.plugin or '?'} failed, so the whole scheduling cycle fails (event reason "
            "SchedulerError; the pod is retried with backoff and no preemption is tried):"
        )
        out.append(f"  {expl.error.message()}")
    feasible = expl.ranking()
    out.append(f"Nodes: {len(expl.nodes)} evaluated, {len([v for v in expl.nodes if v.feasible])} feasible")
    groups = expl.groups()
    if groups:
        out.append("Blocking reasons (first rejecting plugin per node):")
        by_name = {v.node: v for v in expl.nodes}
        for reason, names in groups:
            out.append(f"  {len(names)} node(s): {reason}  [{_names(names, MAX_GROUP_NAMES)}]")
            out.extend(_also_fails(names, by_name))
            for name in names[:MAX_GROUP_NAMES] if not all_nodes else []:
                out.extend(f"      {name}: {d.text}" for _, d in by_name[name].details if d.text)
    if all_nodes:
        out.append("Nodes:")
        for v in expl.nodes:
            out.extend(_node_lines(v, expl))
    elif feasible:
        out.append("Feasible nodes by score:")
        for v in feasible[:MAX_GROUP_NAMES]:
            out.extend(_node_lines(v, expl))
        if len(feasible) > MAX_GROUP_NAMES:
            out.append(f"  ... and {len(feasible) - MAX_GROUP_NAMES} more")
    why = expl.why()
    if why is not None and why["runnersUp"]:
        verb = "is on" if expl.current_node == why["node"] else "goes to"
        out.append(f"Why {why['node']}: the pod {verb} the node with the highest total score ({why['totalScore']}):")
        for r in why["runnersUp"]:
            diff = ", ".join(f"{p} {'+' if d > 0 else ''}{d}" for p, d in sorted(r["difference"].items()))
            diff = diff or "same per-plugin scores (a tie, broken at random)"
            out.append(f"  vs {r['node']} ({r['totalScore']}): {diff}")
    if expl.fixes:
        out.extend(_fix_lines(expl.fixes))
    elif expl.message and not expl.unsupported and expl.error is None:
        out.append("What would make it fit: no single change (or pair of changes) found by the plugins")
    if expl.deallocation:
        out.append("DynamicResources PostFilter (dry run: nothing is written by explaining):")
        out.append(f"  {expl.deallocation}")
    if expl.preemption is not None:
        out.extend(_render_preemption(expl.preemption))
    if expl.message:
        out.append(f"Message: {expl.message}")
    elif expl.best:
        out.append(f"Best node(s): {', '.join(expl.best)}")
    return "\n".join(out)


def _names(names: list[str], limit: int) -> str:
    return ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")


def _pre_filter_lines(expl: Explanation) -> list[str]:
    """PreFilter in three lines at most: what passed, what had nothing to check (folded), what narrowed or
    rejected."""
    if not expl.pre_filter:
        return []
    out = ["PreFilter:"]
    passed = [p for p, r in expl.pre_filter if r == "Success"]
    skipped = [p for p, r in expl.pre_filter if r == SKIPPED]
    if passed:
        out.append(f"  passed: {', '.join(passed)}")
    out.extend(f"  {p}: {r}" for p, r in expl.pre_filter if r not in ("Success", SKIPPED))
    if skipped:
        out.append(f"  nothing to check for this pod (Skip): {', '.join(skipped)}")
    status = expl.pre_filter_status
    if status is not None and status.code not in (Code.SUCCESS, Code.ERROR):
        out.append(f"  rejected by {status.plugin or 'PreFilter'}: {status.message()}")
    return out


def _also_fails(names: list[str], by_name: dict[str, NodeVerdict]) -> list[str]:
    """The other plugins that reject the group's nodes (the group is named by the first one only)."""
    others: dict[str, list[str]] = {}
    for name in names:
        v = by_name[name]
        first = v.first_failure
        for plugin, st in v.filters:
            if st is None or st.code == Code.SKIP or st is first:
                continue
            error = "Error: " if st.code == Code.ERROR else ""
            others.setdefault(f"{plugin}: {error}{st.message()}", []).append(name)
    return [
        f"      also fails: {reason} on {len(hit)} of them [{_names(hit, MAX_GROUP_NAMES)}]"
        if len(names) > 1
        else f"      also fails: {reason}"
        for reason, hit in sorted(others.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]


def _fix_lines(fixes: list[Fix]) -> list[str]:
    """Ranked fixes (changes to the pod first), each with its ladder, and what they all assume."""
    out = ["What would make it fit (each change checked by re-running the filters on every node):"]
    for i, fix in enumerate(fixes[:MAX_FIXES_SHOWN], 1):
        out.append(f"  {i}. {fix.description} -> {len(fix.nodes)} node(s) [{_names(fix.nodes, MAX_GROUP_NAMES)}]")
        if fix.ladder:
            out.append("     ladder: " + "; ".join(f"{s.step}: {len(s.nodes)} node(s)" for s in fix.ladder))
    if len(fixes) > MAX_FIXES_SHOWN:
        out.append(f"  ... and {len(fixes) - MAX_FIXES_SHOWN} more (-o json lists them all)")
    out.append(f"  ({ASSUMPTION})")
    return out


def _node_lines(v: NodeVerdict, expl: Explanation) -> list[str]:
    if v.excluded_by:
        return [f"  {v.node}: excluded by PreFilter ({v.excluded_by})"]
    if v.feasible:
        scores = ", ".join(f"{p}={s}" for p, s in v.scores)
        mark = " <- best" if v.node in expl.best else ""
        return [f"  {v.node}: feasible, total score {v.total}{mark}" + (f" ({scores})" if scores else "")]
    out = [f"  {v.node}: infeasible"]
    for plugin, st in v.filters:
        if st is None:
            out.append(f"    {plugin}: pass")
        elif st.code == Code.SKIP:
            out.append(f"    {plugin}: skipped")
        else:
            out.append(f"    {plugin}: {st.message()} ({CODE_TEXT.get(st.code, '')})")
    out.extend(f"    {detail.text}" for _, detail in v.details)
    return out


def _render_preemption(view: PreemptionView) -> list[str]:
    out = ["Preemption (DefaultPreemption, dry run: nothing is evicted by explaining):"]
    if view.outcome == "preempt":
        chosen = next((vs for node, vs, _ in view.candidates if node == view.node), [])
        names = ", ".join(f"{v.pod} (priority {v.priority})" for v in chosen)
        out.append(f"  would evict {names} from {view.node}")
        out.append(f"  why {view.node}: {view.criterion}")
    else:
        out.append(f"  {view.message or view.outcome}")
    for node, victims, violations in view.candidates:
        if node == view.node:
            continue
        names = ", ".join(f"{v.pod} (priority {v.priority})" for v in victims)
        extra = f", breaking {violations} PodDisruptionBudget(s)" if violations else ""
        out.append(f"  also possible: {node}: evict {names}{extra}")
    for node, why in view.nodes_that_cannot_help.items():
        out.append(f"  {node}: cannot help: {why}")
    return out
