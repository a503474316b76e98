"""What would make a Pending pod fit: the smallest changes, each proven by re-running the real filters.

The plugins that reject a node propose changes (`ExplainExtensions.suggest_fixes`: tolerate this taint,
lower this request, drop this selector key, free this host port, uncordon this node...). This module never
trusts a proposal: it applies it to copies of the pod and the snapshot, runs every PreFilter and Filter of
the pod's profile on every node (no sampling), and reports the nodes that become feasible.

- A change proposed with different amounts by different nodes (a request lowered to what each node has
  free, a maxSkew raised to each node's skew) is tried with the amounts of the nodes where it is the only
  thing in the way (the node's one rejecting plugin, and the plugin says the change alone lifts it): the
  smallest change first, then a few larger steps, reported as a ladder ("cpu <= 1800m: 1 node; <= 500m: 3
  nodes") when they open more nodes.
- Ranking: changes to the pod alone before changes to other objects (nodes, other pods), then by how many
  nodes they open. Only when no single change opens a node are pairs tried: pairs that one node proposed
  together, the pairs proposed by the most nodes first, bounded (`MAX_PAIRS`).
- Every fix is checked against the cluster as it is now: it assumes no other pending pod takes the room.

Cost: one full filter pass per candidate and ladder step (a few ms at 5000 nodes with batched filters; a
change to nodes only re-filters those nodes), so an explanation stays well under a second.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from scheduler.framework.interface import CycleState, ExplainExtensions, FixCandidate
from scheduler.framework.runtime import Framework
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo

MAX_CANDIDATES: Final = 40  # distinct changes evaluated, most frequently proposed first
MAX_LADDER_STEPS: Final = 4  # amounts tried per change (the smallest change, the largest, two between)
MAX_PAIRS: Final = 15  # when nothing single works: pairs evaluated, most frequently proposed first
MAX_NODES_LISTED: Final = 5  # node names shown per fix (the count is always complete)
POD: Final = "pod"  # a fix's scope: a change to the pod's own spec
CLUSTER: Final = "cluster"  # a change to other objects: nodes, other pods, classes
ASSUMPTION: Final = (
    "fixes assume no other pending pod takes the room first; each is checked against the cluster as it is now"
)


@dataclass(slots=True)
class LadderStep:
    """One amount of a change and the nodes it opens (a superset of the previous step's)."""

    step: str
    nodes: list[str]
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "change": dict(self.data),
            "opensNodes": len(self.nodes),
            "nodes": self.nodes[:MAX_NODES_LISTED],
        }


@dataclass(slots=True)
class Fix:
    """A change proven to open `nodes` (nodes that are infeasible now and feasible after it)."""

    kind: str
    description: str
    nodes: list[str]
    data: dict[str, Any] = field(default_factory=dict)
    parts: list[Fix] = field(default_factory=list)  # a combination: every part together
    ladder: list[LadderStep] = field(default_factory=list)  # larger amounts of the same change, and what they open
    scope: str = POD

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "description": self.description,
            "scope": self.scope,
            "opensNodes": len(self.nodes),
            "nodes": self.nodes[:MAX_NODES_LISTED],
        }
        if self.data:
            out["change"] = dict(self.data)
        if self.parts:
            out["parts"] = [p.to_json() for p in self.parts]
        if self.ladder:
            out["ladder"] = [s.to_json() for s in self.ladder]
        return out


def rank(fixes: Iterable[Fix]) -> list[Fix]:
    """Single changes before combinations; changes to the pod alone before changes to other objects; then
    by nodes opened (most first) and description."""
    return sorted(fixes, key=lambda f: (bool(f.parts), f.scope != POD, -len(f.nodes), f.description))


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


@dataclass(slots=True)
class _Variant:
    """One amount of a change (one FixCandidate magnitude) and the nodes that proposed it."""

    cand: FixCandidate
    nodes: set[str] = field(default_factory=set)
    sole: set[str] = field(default_factory=set)  # nodes this change alone would open


@dataclass(slots=True)
class _Proposals:
    """Every plugin's proposals for the nodes it rejected, by change (key) and by node."""

    by_key: dict[str, dict[float, _Variant]] = field(default_factory=dict)
    by_node: dict[str, dict[str, FixCandidate]] = field(default_factory=dict)  # node -> key -> its variant

    def votes(self, key: str) -> int:
        return sum(len(v.nodes) for v in self.by_key[key].values())

    def ranked_keys(self) -> list[str]:
        """Distinct changes, the most frequently proposed first (bounded)."""
        ordered = sorted(self.by_key, key=lambda k: (-self.votes(k), k))
        return ordered[:MAX_CANDIDATES]


def collect_proposals(
    fwk: Framework, state: CycleState, pod: PodInfo, rejected: Iterable[tuple[NodeInfo, str, Status]]
) -> _Proposals:
    """Ask each rejecting plugin (ExplainExtensions) for its changes, node by node. A node's change is
    "sole" when the node has one rejecting plugin and that plugin says the change alone lifts it."""
    out = _Proposals()
    per_node: dict[str, list[tuple[NodeInfo, str, Status]]] = {}
    for node, plugin_name, status in rejected:
        per_node.setdefault(node.name, []).append((node, plugin_name, status))
    for name, rejections in per_node.items():
        alone = len({plugin for _, plugin, _ in rejections}) == 1
        mine = out.by_node.setdefault(name, {})
        for node, plugin_name, status in rejections:
            plugin = fwk.plugins.get(plugin_name)
            if not isinstance(plugin, ExplainExtensions):
                continue
            try:
                proposals = plugin.suggest_fixes(state, pod, node, status)
            except Exception:  # a plugin's suggestion bug must not break the explanation
                continue
            for cand in proposals:
                variant = out.by_key.setdefault(cand.key, {}).setdefault(cand.magnitude, _Variant(cand))
                variant.nodes.add(name)
                if alone and not cand.partial:
                    variant.sole.add(name)
                held = mine.get(cand.key)
                if held is None or cand.magnitude > held.magnitude:
                    mine[cand.key] = cand
    return out


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


def _scope(cands: Iterable[FixCandidate]) -> str:
    return POD if all(c.snapshot is None for c in cands) else CLUSTER


def ladder_amounts(variants: Sequence[_Variant]) -> list[_Variant]:
    """The amounts worth trying, smallest change first: the first, the last (every sole node) and up to two
    between them, spaced so the number of nodes they are the sole blocker of grows geometrically."""
    sole = sorted((v for v in variants if v.sole), key=lambda v: -v.cand.magnitude)
    if len(sole) <= MAX_LADDER_STEPS:
        return sole
    counts = list(itertools.accumulate(len(v.sole) for v in sole))
    first, last = counts[0], counts[-1]
    picks = [0]
    for k in range(1, MAX_LADDER_STEPS - 1):
        target = first * math.pow(last / first, k / (MAX_LADDER_STEPS - 1))
        i = next(i for i, c in enumerate(counts) if c >= target)
        if i > picks[-1]:
            picks.append(i)
    if picks[-1] != len(sole) - 1:
        picks.append(len(sole) - 1)
    return [sole[i] for i in picks]


def _single(
    fwk: Framework, pod: PodInfo, snapshot: Snapshot, variants: dict[float, _Variant], before: set[str]
) -> Fix | None:
    """The change's smallest amount that opens a node, with the larger amounts that open more as a ladder."""
    tries = ladder_amounts(list(variants.values()))
    if not tries:  # no node has this change as its only obstacle: one try, in case the plugins undercounted
        tries = [max(variants.values(), key=lambda v: v.cand.magnitude)]
    steps: list[tuple[FixCandidate, list[str]]] = []
    for variant in tries:
        opened = _opened(fwk, pod, snapshot, [variant.cand], before)
        if opened and (not steps or len(opened) > len(steps[-1][1])):
            steps.append((variant.cand, sorted(opened)))
    if not steps:
        return None
    cand, nodes = steps[0]
    ladder = [LadderStep(c.step, n, dict(c.data)) for c, n in steps] if len(steps) > 1 else []
    return Fix(cand.kind, cand.description, nodes, dict(cand.data), ladder=ladder, scope=_scope([cand]))


def _pairs(proposals: _Proposals) -> list[tuple[FixCandidate, FixCandidate]]:
    """Pairs of changes one node proposed together, the pairs proposed by the most nodes first (bounded).
    Of one pair of changes proposed with different amounts, the largest amounts (the smallest change)."""
    votes: dict[tuple[str, str], int] = {}
    chosen: dict[tuple[str, str], tuple[FixCandidate, FixCandidate]] = {}
    for mine in proposals.by_node.values():
        for a, b in itertools.combinations(sorted(mine.values(), key=lambda c: c.key), 2):
            pair = (a.key, b.key)
            votes[pair] = votes.get(pair, 0) + 1
            held = chosen.get(pair)
            if held is None or (a.magnitude, b.magnitude) > (held[0].magnitude, held[1].magnitude):
                chosen[pair] = (a, b)
    ordered = sorted(votes, key=lambda p: (-votes[p], p))
    return [chosen[p] for p in ordered[:MAX_PAIRS]]


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
    proposals = collect_proposals(fwk, state or CycleState(), pod, rejected)
    fixes: list[Fix] = []
    for key in proposals.ranked_keys():
        fix = _single(fwk, pod, snapshot, proposals.by_key[key], before)
        if fix is not None:
            fixes.append(fix)
    if not fixes:
        for a, b in _pairs(proposals):
            opened = _opened(fwk, pod, snapshot, [a, b], before)
            if opened:
                parts = [Fix(c.kind, c.description, [], dict(c.data), scope=_scope([c])) for c in (a, b)]
                fixes.append(
                    Fix(
                        "combination",
                        f"{a.description} and {b.description}",
                        sorted(opened),
                        {},
                        parts,
                        scope=_scope([a, b]),
                    )
                )
    return rank(fixes)
