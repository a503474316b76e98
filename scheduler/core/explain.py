"""Why is my pod where it is, or why is it Pending? Node by node, plugin by plugin.

Unlike a scheduling cycle, which stops at the first rejecting plugin and samples nodes, an explanation
runs every Filter plugin on every node so a person sees all the reasons a node is out, scores every
feasible node, and names the pods holding a clashing host port.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from scheduler.backend.cache.snapshot import Snapshot
from scheduler.core.unsupported import find_unsupported, unsupported_message
from scheduler.framework.fit_error import Diagnosis, FitError
from scheduler.framework.interface import CycleState, ExplainDetail, ExplainExtensions
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo

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

    def to_json(self) -> dict[str, Any]:
        def st(s: Status | None) -> dict[str, Any] | None:
            if s is None:
                return None
            return {"code": CODE_TEXT.get(s.code, "Success"), "plugin": s.plugin, "reasons": list(s.reasons)}

        return {
            "pod": self.pod,
            "profile": self.profile,
            "currentNode": self.current_node or None,
            "preFilter": {
                "status": st(self.pre_filter_status),
                "plugins": [{"plugin": p, "result": r} for p, r in self.pre_filter],
            },
            "message": self.message or None,
            "unsupportedFields": self.unsupported,
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
    snap = _without_pod(snapshot, pod)
    # Plugins that read the handle's snapshot (ImageLocality's node counts, ...) must see the one explained,
    # not whatever the last scheduling cycle left in it.
    with fwk.handle.evaluating(snap) if fwk.handle is not None else contextlib.nullcontext():
        expl = _explain(fwk, pod, snap)
    if not pod.node_name:
        findings = find_unsupported(pod, fwk.upstream_plugins, fwk.plugins)
        if findings:
            expl.unsupported = [f"{f.field} (upstream plugin {f.plugin})" for f in findings]
            expl.message = unsupported_message(findings)
            expl.best = []
    return expl


def _explain(fwk: Framework, pod: PodInfo, snap: Snapshot) -> Explanation:
    expl = Explanation(pod=pod.key, profile=fwk.profile_name, current_node=pod.node_name)
    state = CycleState()
    nodes: list[NodeInfo] = snap.node_info_list
    pre_res, status, narrowing = fwk.run_pre_filter(state, pod, nodes)
    for pl in fwk.pre_filter:
        if pl.name in state.skip_filter_plugins:
            expl.pre_filter.append((pl.name, "Skip (nothing to check for this pod)"))
        elif pl.name in narrowing and pre_res is not None and pre_res.node_names is not None:
            expl.pre_filter.append((pl.name, f"only nodes {sorted(pre_res.node_names)}"))
        else:
            expl.pre_filter.append((pl.name, "Success"))
    expl.pre_filter_status = status
    if status is not None and status.code != Code.SUCCESS:
        diagnosis = Diagnosis(absent_nodes_status=status, pre_filter_msg=status.message())
        expl.message = str(FitError(len(nodes), diagnosis))
        return expl
    allowed = pre_res.node_names if pre_res is not None else None
    feasible: list[NodeInfo] = []
    for info in nodes:
        verdict = NodeVerdict(info.name)
        if allowed is not None and info.name not in allowed:
            verdict.excluded_by = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(narrowing))}]"
        else:
            verdict.filters = fwk.run_filter_each(state, pod, info)
            failure = verdict.first_failure
            if failure is None:
                feasible.append(info)
            for plugin, st in verdict.filters:
                extension = fwk.plugins.get(plugin)
                if isinstance(extension, ExplainExtensions) and (st is None or st.code != Code.SKIP):
                    verdict.details.extend((plugin, d) for d in extension.explain_node(state, pod, info, st))
        expl.nodes.append(verdict)
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
        expl.message = str(FitError(len(nodes), diagnosis))
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


def render_text(expl: Explanation) -> str:
    """Human-readable explanation: summary of blocking reasons, then each node's verdict."""
    out = [f"Pod {expl.pod} (profile {expl.profile})"]
    if expl.current_node:
        out.append(f"  currently bound to: {expl.current_node}")
    if expl.unsupported:
        out.append("Not placed by pyscheduler (fail closed): the pod uses fields it does not evaluate yet:")
        out.extend(f"  {f}" for f in expl.unsupported)
    if expl.pre_filter:
        out.append("PreFilter:")
        out.extend(f"  {plugin}: {result}" for plugin, result in expl.pre_filter)
    if expl.pre_filter_status is not None and expl.pre_filter_status.code != Code.SUCCESS:
        out.append(f"  rejected by {expl.pre_filter_status.plugin or 'PreFilter'}: {expl.pre_filter_status.message()}")
    blocked: Counter[str] = Counter()
    for v in expl.nodes:
        if v.excluded_by:
            blocked[v.excluded_by] += 1
        elif v.first_failure is not None:
            first = v.first_failure
            blocked[f"{first.plugin}: {first.message()}"] += 1
    if blocked:
        out.append("Blocking reasons (first rejecting plugin per node):")
        out.extend(f"  {n} node(s): {reason}" for reason, n in blocked.most_common())
    out.append("Nodes:")
    for v in expl.nodes:
        if v.excluded_by:
            out.append(f"  {v.node}: excluded by PreFilter ({v.excluded_by})")
            continue
        if v.feasible:
            scores = ", ".join(f"{p}={s}" for p, s in v.scores)
            mark = " <- best" if v.node in expl.best else ""
            out.append(f"  {v.node}: feasible, total score {v.total}{mark}" + (f" ({scores})" if scores else ""))
            continue
        out.append(f"  {v.node}: infeasible")
        for plugin, st in v.filters:
            if st is None:
                out.append(f"    {plugin}: pass")
            elif st.code == Code.SKIP:
                out.append(f"    {plugin}: skipped")
            else:
                out.append(f"    {plugin}: {st.message()} ({CODE_TEXT.get(st.code, '')})")
        for _, detail in v.details:
            out.append(f"    {detail.text}")
    if expl.message:
        out.append(f"Message: {expl.message}")
    elif expl.best:
        out.append(f"Best node(s): {', '.join(expl.best)}")
    return "\n".join(out)
