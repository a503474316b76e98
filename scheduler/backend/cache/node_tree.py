"""The nodeTree: node names grouped by zone, listed round-robin across zones (upstream node_tree.go).

Field story 1 (kubernetes#91601): the old tree handed nodes out through cursors (a zone index and a per-zone
index) that survived from one snapshot sync to the next, so after a node joined a new zone the next sync
skipped one node and returned another twice. This tree keeps **no iteration state at all**: `list()` builds
the whole zone-interleaved order from scratch on every call (what upstream PR #93473 switched to), so every
call returns every node exactly once whatever order nodes and zones came and went in.
"""

from __future__ import annotations

import builtins

from scheduler import caching
from scheduler.framework.types import NodeRecord, zone_key


class NodeTree:
    """Node names per zone key, zones in first-seen order; a zone is dropped when its last node leaves."""

    __slots__ = ("_zone_of", "_zones")

    def __init__(self) -> None:
        # dict insertion order is the zones' first-seen order (a zone that empties and comes back goes last,
        # as upstream's zones slice does).
        self._zones: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}

    def add_node(self, record: NodeRecord) -> bool:
        """Append the node to its zone; return False (and change nothing) when it is already present."""
        name = record.name
        if name in self._zone_of:
            return False
        zone = zone_key(record.labels)
        self._zones.setdefault(zone, []).append(name)
        self._zone_of[name] = zone
        return True

    def update_node(self, old: NodeRecord | None, new: NodeRecord) -> bool:
        """Move the node only when its zone key changed; add it when unknown. Return True if it moved/added.

        The zone the node is filed under is taken from the tree itself, not from `old`, so a stale or
        missing old record cannot leave the node filed twice.
        """
        current = self._zone_of.get(new.name)
        if current is None:
            return self.add_node(new)
        if current == zone_key(new.labels):
            return False
        self.remove_node(new.name)
        return self.add_node(new)

    def remove_node(self, name: str) -> bool:
        """Remove the node; drop its zone when it becomes empty. Return False when the node is unknown."""
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return False
        names = self._zones[zone]
        names.remove(name)
        if not names:
            del self._zones[zone]
        return True

    def list(self) -> list[str]:
        """Every node exactly once, round-robin by index across zones in first-seen order.

        Zones A=[a1,a2,a3], B=[b1] give a1,b1,a2,a3. Computed from scratch on every call (no cursor kept).
        Fast path: index ranges [start, end) in which the set of non-exhausted zones is fixed are
        interleaved by one strided slice assignment per zone, so the cost is one C-level pass over the names
        whatever the zone sizes (a plain zip_longest pads every exhausted zone with None on every round).
        """
        zones = builtins.list(self._zones.values())
        if not zones:
            return []
        if not caching.ENABLED:  # the plain path: index by index, zone by zone
            return [names[i] for i in range(max(map(len, zones))) for names in zones if i < len(names)]
        if len(zones) == 1:
            return builtins.list(zones[0])
        out: builtins.list[str] = []
        start = 0
        for end in sorted({len(names) for names in zones}):
            active = [names for names in zones if len(names) >= end]
            if len(active) == 1:  # only the longest zone is left: the rest of it, in order
                out.extend(active[0][start:])
                break
            # Segment [start, end): every active zone has exactly end - start names here; zone j's names go
            # to every k-th slot of the segment (one C-level slice assignment per zone).
            k = len(active)
            base = len(out)
            out.extend(active[0][start:end] * k)  # placeholder of the right length, overwritten below
            for j, names in enumerate(active):
                out[base + j :: k] = names[start:end]
            start = end
        return out

    def zones(self) -> builtins.list[str]:
        """Zone keys in first-seen order."""
        return builtins.list(self._zones)

    def zone_of(self, name: str) -> str | None:
        """The zone key a node is filed under, or None when the node is not in the tree."""
        return self._zone_of.get(name)

    def __len__(self) -> int:
        return len(self._zone_of)

    def __contains__(self, name: object) -> bool:
        return name in self._zone_of

    def __repr__(self) -> str:
        return f"NodeTree(zones={len(self._zones)}, nodes={len(self._zone_of)})"
