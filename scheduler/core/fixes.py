"""What would make a Pending pod fit: the smallest changes, each proven by re-running the real filters.

The plugins that reject a node propose changes (`ExplainExtensions.suggest_fixes`: tolerate this taint,
lower this request, drop this selector key, free this host port, uncordon this node...). This module never
trusts a proposal: it applies it to copies of the pod and the snapshot, runs every PreFilter and Filter of
the pod's profile on every node (no sampling), and reports the nodes that become feasible. Fixes are
ranked by how many nodes they open. Only when no single change opens a node are pairs of changes tried,
bounded to the most promising few (`MAX_PAIR_CANDIDATES`).

Cost: one full filter pass per candidate (a few ms at 5000 nodes with batched filters), so an explanation
with a few dozen candidates stays well under a second.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.interface import CycleState, ExplainExtensions, FixCandidate
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo

MAX_CANDIDATES = 40  # distinct single changes evaluated, most frequently proposed first
MAX_PAIR_CANDIDATES = 6  # when nothing single works: pairs among this many (15 pairs)
MAX_NODES_LISTED = 5  # node names shown per fix (the count is always complete)


@dataclass(slots=True)
class Fix:
    """A change proven to open `nodes` (nodes that are infeasible now and feasible after it)."""

    kind: str
    description: str
    nodes: list[str]
    data: dict[str, Any] = field(default_factory=dict)
    parts: list[Fix] = field(default_factory=list)  # a combination: every part together

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "description": self.description,
            "opensNodes": len(self.nodes),
            "nodes": self.nodes[:MAX_NODES_LISTED],
        }
        if self.data:
            out["change"] = dict(self.data)
        if self.parts:
            out["parts"] = [p.to_json() for p in self.parts]
        return out


def feasible_nodes(
    fwk: Framework, pod: PodInfo, snapshot: Snapshot, only: set[str] | None = None
) -> set[str]:
    """Names of the nodes on which the pod passes every PreFilter and Filter now (all nodes, no sampling).

    PreFilter always sees the whole snapshot (spread and affinity counts are cluster-wide); with `only`,
    Filter runs on those nodes alone (a change that touched only them cannot open any other).
    """
    state = CycleState()
    nodes = snapshot.node_info_list
    result, status, _ = fwk.run_pre_filter(state, pod, nodes)
    if status is not None and status.code != Code.SUCCESS:
        return set()
    if only is not None:
        nodes = [n for n in nodes if n.name in only]
    if result is not None and result.node_names is not None:
        nodes = [n for n in nodes if n.name in result.node_names]
    statuses, err = fwk.run_filters(state, pod, nodes)
    if err is not None:
        return set()
    return {n.name for n, st in zip(nodes, statuses, strict=True) if st is None}


def collect_candidates(
    fwk: Framework, state: CycleState, pod: PodInfo, rejected: Iterable[tuple[NodeInfo, str, Status]]
) -> list[FixCandidate]:
    """Every plugin's proposals for the nodes it rejected: deduplicated by key (largest magnitude kept),
    most frequently proposed first."""
    best: dict[str, FixCandidate] = {}
    votes: dict[str, int] = {}
    for node, plugin_name, status in rejected:
        plugin = fwk.plugins.get(plugin_name)
        if not isinstance(plugin, ExplainExtensions):
            continue
        try:
            proposals = plugin.suggest_fixes(state, pod, node, status)
        except Exception:  # a plugin's suggestion bug must not break the explanation
            continue
        for cand in proposals:
            votes[cand.key] = votes.get(cand.key, 0) + 1
            held = best.get(cand.key)
            if held is None or cand.magnitude > held.magnitude:
                best[cand.key] = cand
    ordered = sorted(best.values(), key=lambda c: (-votes[c.key], c.kind, c.key))
    return ordered[:MAX_CANDIDATES]


def _apply(pod: PodInfo, snapshot: Snapshot, cands: Sequence[FixCandidate]) -> tuple[PodInfo, Snapshot]:
    for cand in cands:
        if cand.pod is not None:
            pod = cand.pod(pod)
        if cand.snapshot is not None:
            snapshot = cand.snapshot(snapshot)
    return pod, snapshot


def _opened(
    fwk: Framework, pod: PodInfo, snapshot: Snapshot, cands: Sequence[FixCandidate], before: set[str]
) -> set[str]:
    """Nodes infeasible before and feasible once `cands` are applied. When no candidate changes the pod, only
    the nodes whose NodeInfo the changes replaced are filtered (the others are as they were)."""
    new_pod, new_snapshot = _apply(pod, snapshot, cands)
    only: set[str] | None = None
    if all(c.pod is None for c in cands) and new_snapshot is not snapshot:
        # Nodes a Snapshot.with_nodes chain replaced; a transform that built its snapshot another way has no
        # record of what it changed, so every node is filtered again.
        only = set(new_snapshot.changed - snapshot.changed) or None
    return feasible_nodes(fwk, new_pod, new_snapshot, only) - before


def find_fixes(
    fwk: Framework,
    pod: PodInfo,
    snapshot: Snapshot,
    rejected: Iterable[tuple[NodeInfo, str, Status]],
    state: CycleState | None = None,
) -> list[Fix]:
    """Ranked fixes for a pod that fits nowhere (or on fewer nodes than it could).

    `rejected` lists (node, plugin, status) for every rejection the explanation found (all plugins, not
    only the first per node), so a node blocked by two plugins yields proposals from both.
    """
    before = feasible_nodes(fwk, pod, snapshot)
    cands = collect_candidates(fwk, state or CycleState(), pod, rejected)
    fixes: list[Fix] = []
    useful: list[tuple[FixCandidate, set[str]]] = []
    for cand in cands:
        opened = _opened(fwk, pod, snapshot, [cand], before)
        if opened:
            fixes.append(Fix(cand.kind, cand.description, sorted(opened), dict(cand.data)))
        useful.append((cand, opened))
    if not fixes and len(cands) > 1:
        # No single change suffices: pairs of the most frequently proposed changes (bounded).
        for a, b in itertools.combinations(cands[:MAX_PAIR_CANDIDATES], 2):
            if a.kind == b.kind and a.key.split(":")[0] == b.key.split(":")[0] and a.pod is None and b.pod is None:
                continue  # two node-side changes of one kind rarely combine; keep the search small
            opened = _opened(fwk, pod, snapshot, [a, b], before)
            if opened:
                parts = [Fix(c.kind, c.description, [], dict(c.data)) for c in (a, b)]
                fixes.append(
                    Fix("combination", f"{a.description} and {b.description}", sorted(opened), {}, parts)
                )
    fixes.sort(key=lambda f: (-len(f.nodes), (f.kind != "combination" and 0) or 1, f.description))
    return fixes
