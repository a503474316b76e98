"""Counts per topology pair (upstream topologyToMatchedTermCount) and their sums over the cluster, kept up to
date incrementally: `NodeChanges` (which nodes changed since a cycle) and `Aggregate` (one per-node
contribution summed over all nodes, for one pod shape), pyscheduler's way of not matching every term against
every pod every cycle."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from scheduler import caching
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo

Pair = tuple[str, str]
Contribution = tuple[tuple[Pair, int], ...]
"""A node's share of a count map: ((topologyKey, value), count) entries, possibly repeating a pair."""


class TopologyCounts:
    """topologyToMatchedTermCount as nested dicts (key -> value -> count) for fast per-node lookups."""

    __slots__ = ("by_key",)

    def __init__(self) -> None:
        self.by_key: dict[str, dict[str, int]] = {}

    def __bool__(self) -> bool:
        return bool(self.by_key)

    def get(self, key: str, value: str) -> int:
        inner = self.by_key.get(key)
        return inner.get(value, 0) if inner is not None else 0

    def apply(self, contribution: Contribution, sign: int) -> None:
        """Add (sign 1) or take back (sign -1) a node's contribution; entries that reach zero are dropped."""
        by_key = self.by_key
        for (key, value), count in contribution:
            inner = by_key.get(key)
            if inner is None:
                inner = by_key[key] = {}
            total = inner.get(value, 0) + sign * count
            if total:
                inner[value] = total
            else:
                del inner[value]
                if not inner:
                    del by_key[key]

    def update(self, labels: Mapping[str, str], key: str, delta: int) -> None:
        """topologyToMatchedTermCount.update: +delta at (key, labels[key]) if the node has the key; an entry
        that reaches zero is dropped (so "no entries" keeps meaning "nothing matched")."""
        value = labels.get(key)
        if value is None:
            return
        inner = self.by_key.get(key)
        if inner is None:
            inner = self.by_key[key] = {}
        count = inner.get(value, 0) + delta
        if count:
            inner[value] = count
        else:
            inner.pop(value, None)
            if not inner:
                del self.by_key[key]

    def pairs(self) -> dict[Pair, int]:
        """The flat {(key, value): count} map upstream tests compare."""
        return {(k, v): c for k, inner in self.by_key.items() for v, c in inner.items()}

    def clone(self) -> TopologyCounts:
        other = TopologyCounts()
        other.by_key = {k: dict(inner) for k, inner in self.by_key.items()}
        return other


_MISSING: Final = object()
LOG_LIMIT: Final = 20_000  # node changes remembered; an aggregate further behind is rebuilt
AGGREGATE_LIMIT: Final = 32  # pod shapes whose sums are kept (each holds one entry per node)


class NodeChanges:
    """Which nodes changed from one cycle to the next, as a log aggregates catch up on.

    A node changed when the node list holds another NodeInfo object for it: snapshot NodeInfos are never
    modified in place (the cache puts a fresh clone in the snapshot for a node whose pods or labels changed,
    as upstream's snapshot does; explanations clone too). When `nodes` is the scheduler's snapshot list in the
    order of the last sync, the snapshot's log of replaced nodes names them (`Snapshot.changed_since`); else,
    when the list has the previous cycle's shape, comparing it position by position with the previous one finds
    the changes.
    """

    __slots__ = ("_epochs", "_log", "_previous", "_synced", "epoch", "log_start", "nodes")

    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.epoch = 0
        self.log_start = 1  # the oldest epoch whose changes are all in the log
        self._epochs: list[int] = []
        self._log: list[str] = []
        self._previous: list[NodeInfo] = []
        self._synced: tuple[Snapshot, int] | None = None  # the snapshot and its update the last sync saw

    def sync(self, nodes: Sequence[NodeInfo], snapshot: Snapshot | None = None) -> None:
        """Record the nodes that changed since the last sync (`snapshot`: the one `nodes` may come from)."""
        seen = self.nodes
        previous = self._previous
        replaced = None
        if snapshot is not None and self._synced is not None and self._synced[0] is snapshot and caching.ENABLED:
            replaced = snapshot.changed_since(self._synced[1], nodes)  # type: ignore[arg-type]
        if replaced is not None:
            infos = snapshot.node_info_map  # type: ignore[union-attr]
            changed = [n for n in map(infos.__getitem__, dict.fromkeys(replaced)) if seen.get(n.name) is not n]
        elif len(previous) == len(nodes):
            changed = [n for n, p in zip(nodes, previous, strict=True) if n is not p and seen.get(n.name) is not n]
        else:
            changed = [n for n in nodes if seen.get(n.name) is not n]
        removed: list[str] = []
        if len(seen) + sum(1 for n in changed if n.name not in seen) != len(nodes):
            names = {n.name for n in nodes}
            removed = [name for name in seen if name not in names]
        if changed or removed:
            self.epoch += 1
            for n in changed:
                seen[n.name] = n
                self._log.append(n.name)
            for name in removed:
                del seen[name]
                self._log.append(name)
            self._epochs.extend([self.epoch] * (len(changed) + len(removed)))
            if len(self._log) > LOG_LIMIT:
                drop = len(self._log) // 2
                self.log_start = self._epochs[drop] + 1
                del self._log[:drop], self._epochs[:drop]
        if snapshot is not None and nodes is snapshot.node_info_list and snapshot.updates:
            # The cache never modifies a node list it handed out (a change comes as a new list).
            self._previous = snapshot.node_info_list
            self._synced = (snapshot, snapshot.updates)
        else:
            self._previous = list(nodes)
            self._synced = None

    def since(self, epoch: int) -> list[str] | None:
        """Names of nodes changed after `epoch`, or None when the log no longer reaches back that far."""
        if epoch + 1 < self.log_start:
            return None
        return self._log[bisect.bisect_right(self._epochs, epoch) :]


class Aggregate:
    """The sum over all nodes of one per-node contribution (one pod shape), updated for changed nodes only.

    Each node's contribution lives in its NodeInfo memo under `key`; `by_node` remembers which object was
    added, so a node whose memo entry is another object (recomputed) or gone is taken back and re-added.
    """

    __slots__ = ("by_node", "counts", "epoch", "key", "nonempty")

    def __init__(self, key: str) -> None:
        self.key = key
        self.by_node: dict[str, Contribution] = {}
        self.counts = TopologyCounts()
        self.epoch = -1
        self.nonempty = 0  # nodes with a non-empty contribution

    def refresh(self, changes: NodeChanges, compute: Callable[[NodeInfo], Contribution]) -> None:
        names = changes.since(self.epoch) if self.epoch >= 0 else None
        if names is None:
            self.by_node, self.counts, self.nonempty = {}, TopologyCounts(), 0
            names = list(changes.nodes)
        key, nodes, by_node, counts = self.key, changes.nodes, self.by_node, self.counts
        for name in names:
            node = nodes.get(name)
            new: Contribution | None = None
            if node is not None:
                new = node.memo.get(key)
                if new is None:
                    new = node.remember(key, compute(node))
            old = by_node.get(name, _MISSING)
            if new is old:
                continue
            if old is not _MISSING:
                assert isinstance(old, tuple)
                if old:
                    counts.apply(old, -1)
                    self.nonempty -= 1
            if new is None:
                by_node.pop(name, None)
                continue
            if new:
                counts.apply(new, 1)
                self.nonempty += 1
            by_node[name] = new
        self.epoch = changes.epoch

    @classmethod
    def summed(cls, key: str, nodes: Sequence[NodeInfo], compute: Callable[[NodeInfo], Contribution]) -> Aggregate:
        """The plain path (caches disabled): every node's contribution computed and added up afresh."""
        aggregate = cls(key)
        counts = aggregate.counts
        for node in nodes:
            contribution = compute(node)
            if contribution:
                counts.apply(contribution, 1)
                aggregate.nonempty += 1
        return aggregate


