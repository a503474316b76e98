"""Matching pods per topology domain, kept across cycles and updated only where the snapshot changed: what
upstream recounts over every node each cycle (pyscheduler's own; the counts are upstream's)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from scheduler.framework.types import NodeInfo
from scheduler.plugins.pod_topology_spread.common import Constraint, count_pods_match_selector

DOMAIN_SUMS_ENTRIES: Final = 16  # (selector, namespace, key, eligibility) combinations kept by one plugin


class DomainSums:
    """Matching pods per domain over all eligible nodes, updated only where the snapshot changed.

    What upstream recounts over every node each cycle: with system defaults that is every Deployment pod's
    PreScore. Each node's contribution (domain, count) is remembered with the NodeInfo it came from; a node
    is counted again only when the snapshot holds another NodeInfo for it (the cache clones a node that
    changed) or its memoized count is gone or differs (its pods changed in place). So a ReplicaSet's next pod
    costs an identity check and a memo lookup per node instead of a count; when the node list has the same
    order as last time (the common case) that check is one tight loop over the two lists.
    """

    __slots__ = ("members", "order", "per_node", "seen", "sums")

    def __init__(self) -> None:
        self.per_node: dict[str, tuple[NodeInfo, str | None, int]] = {}
        self.sums: dict[str, int] = {}
        self.members: dict[str, int] = {}  # domain -> eligible nodes in it (a domain with 0 pods still counts)
        self.order: list[NodeInfo] = []  # the node list of the last refresh
        self.seen: list[Any] = []  # each node's memoized count at the last refresh (None: not counted)

    @classmethod
    def counted(
        cls,
        nodes: Sequence[NodeInfo],
        c: Constraint,
        namespace: str,
        required_keys: tuple[str, ...],
        eligible: Callable[[NodeInfo], bool] | None,
    ) -> DomainSums:
        """The plain path (caches disabled): every node's matching pods counted afresh, nothing remembered."""
        out = cls()
        sums, members = out.sums, out.members
        for n in nodes:
            record = n.node
            if record is None:
                continue
            labels = record.labels
            if not all(k in labels for k in required_keys) or (eligible is not None and not eligible(n)):
                continue
            value = labels.get(c.topology_key, "")
            members[value] = members.get(value, 0) + 1
            sums[value] = sums.get(value, 0) + count_pods_match_selector(n.pods.values(), c.selector, namespace)
        return out

    def _drop(self, entry: tuple[NodeInfo, str | None, int]) -> None:
        _, value, count = entry
        if value is None:
            return
        left = self.members[value] - 1
        if left:
            self.members[value] = left
            self.sums[value] -= count
        else:
            del self.members[value]
            del self.sums[value]

    def _count(
        self,
        n: NodeInfo,
        c: Constraint,
        namespace: str,
        memo_key: str,
        required_keys: tuple[str, ...],
        eligible: Callable[[NodeInfo], bool] | None,
    ) -> None:
        """(Re)place node n's contribution."""
        prev = self.per_node.get(n.name)
        if prev is not None:
            self._drop(prev)
        record = n.node
        value: str | None = None
        count = 0
        if record is not None:
            labels = record.labels
            for k in required_keys:
                if k not in labels:
                    break
            else:
                if eligible is None or eligible(n):
                    value = labels.get(c.topology_key, "")
                    cached = n.memo.get(memo_key)
                    if cached is None:
                        cached = count_pods_match_selector(n.pods.values(), c.selector, namespace)
                        n.remember(memo_key, cached)
                    count = int(cached)
        self.per_node[n.name] = (n, value, count)
        if value is not None:
            self.members[value] = self.members.get(value, 0) + 1
            self.sums[value] = self.sums.get(value, 0) + count

    def refresh(
        self,
        nodes: Sequence[NodeInfo],
        c: Constraint,
        namespace: str,
        required_keys: tuple[str, ...],
        eligible: Callable[[NodeInfo], bool] | None,
    ) -> None:
        """Bring the sums up to date with `nodes` (the snapshot's full node list)."""
        memo_key = c.memo_tag + namespace
        order, seen = self.order, self.seen
        if len(order) == len(nodes):
            # Same NodeInfo (so same labels) and same memoized count (the memo is dropped when the node's pods
            # change) as last time: nothing to redo. Only a renamed position means the order changed.
            changed = [
                i
                for i, n, p, v in zip(range(len(nodes)), nodes, order, seen, strict=True)
                if n is not p or n.memo.get(memo_key) != v
            ]
            if all(nodes[i].name == order[i].name for i in changed):
                for i in changed:
                    n = nodes[i]
                    self._count(n, c, namespace, memo_key, required_keys, eligible)
                    order[i] = n
                    seen[i] = n.memo.get(memo_key)
                return
        per_node = self.per_node
        for n in nodes:
            prev = per_node.get(n.name)
            if prev is not None and prev[0] is n and (prev[1] is None or n.memo.get(memo_key) == prev[2]):
                continue
            self._count(n, c, namespace, memo_key, required_keys, eligible)
        if len(per_node) != len(nodes):  # nodes left the snapshot
            present = {n.name for n in nodes}
            for name in [name for name in per_node if name not in present]:
                self._drop(per_node.pop(name))
        self.order = list(nodes)
        self.seen = [n.memo.get(memo_key) for n in nodes]


