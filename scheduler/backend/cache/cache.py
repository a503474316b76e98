"""The scheduler cache: nodes, the pods on them, assumed pods and the per-cycle snapshot (upstream cache.go).

What it holds:
- every node the watch reported (a `NodeInfo` per node, filed in the `NodeTree` by zone);
- every *assigned* pod of any scheduler on its node: terminating pods keep their resources and ports until
  they are deleted, Succeeded/Failed pods release them (the cache treats them as removed);
- pods this scheduler *assumed* on a node before the bind call returned. The watch confirms them
  (`add_pod`/`update_pod` of the same uid replaces the assumed copy, on whatever node the API says);
  `forget_pod` undoes an assumption whose binding failed. Assumed pods never expire (upstream's
  durationToExpireAssumedPod is 0, issue #106361).

Pods can arrive before their node (the node and pod watches are separate streams): they go onto a
placeholder `NodeInfo(node=None)`, which is not in the tree nor the snapshot. A deleted node whose pods are
still known keeps its `NodeInfo` (as a placeholder) until the last pod leaves, but leaves the tree at once.

The snapshot is updated incrementally, like upstream: every change stamps the NodeInfo with a new global
generation and moves its name to the most-recent end of an ordered dict; `update_snapshot` walks that dict
from the most recent end and clones only NodeInfos newer than the snapshot. The node *list* is always rebuilt
from `NodeTree.list()` (field story 1: every cycle's list holds every node exactly once).

`compare`/`reconcile` check the cache against a fresh LIST from the API: kopf emits no DELETED for objects
that vanished while a watch was down, so a periodic reconcile is how the cache converges.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from scheduler import caching
from scheduler.backend.cache.node_tree import NodeTree
from scheduler.framework.interface import ActionType
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo, NodeRecord, PodInfo, Resource

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def is_terminal(pod: PodInfo) -> bool:
    """Succeeded and Failed pods no longer hold resources or ports on their node."""
    return pod.phase in TERMINAL_PHASES


def node_update_action(old: NodeRecord, new: NodeRecord) -> ActionType:
    """The ActionType flags of a node update, as upstream's NodeSchedulingPropertiesChange computes them.

    allocatable -> UPDATE_NODE_ALLOCATABLE, labels -> UPDATE_NODE_LABEL, taints or spec.unschedulable ->
    UPDATE_NODE_TAINT (upstream files a cordon under the taint flag too), status.declaredFeatures ->
    UPDATE_NODE_DECLARED_FEATURE (the NodeDeclaredFeatures gate is GA in v1.37). An empty flag means nothing a
    Filter can react to changed (e.g. only images or the resourceVersion): upstream sends no event then.
    Images have no flag upstream because only ImageLocality (a Score plugin, which never rejects) reads them.
    """
    action = ActionType(0)
    if old.allocatable != new.allocatable:
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old.labels != new.labels:
        action |= ActionType.UPDATE_NODE_LABEL
    if old.taints != new.taints or old.unschedulable != new.unschedulable:
        action |= ActionType.UPDATE_NODE_TAINT
    if old.declared_features != new.declared_features:
        action |= ActionType.UPDATE_NODE_DECLARED_FEATURE
    return action


def _scaled_down(old: Resource, new: Resource) -> bool:
    if new.milli_cpu < old.milli_cpu or new.memory < old.memory:
        return True
    if new.ephemeral_storage < old.ephemeral_storage:
        return True
    return any(new.scalar.get(name, 0) < qty for name, qty in old.scalar.items())


def pod_update_action(old: PodInfo, new: PodInfo) -> ActionType:
    """The ActionType flags of a pod update (upstream PodSchedulingPropertiesChange).

    labels -> UPDATE_POD_LABEL, any request lowered -> UPDATE_POD_SCALE_DOWN, tolerations ->
    UPDATE_POD_TOLERATION, last scheduling gate removed -> UPDATE_POD_SCHEDULING_GATES_ELIMINATED; when none
    of these changed the generic ActionType.UPDATE is returned, as upstream falls back to a plain Update.
    """
    action = ActionType(0)
    if old.labels != new.labels:
        action |= ActionType.UPDATE_POD_LABEL
    if _scaled_down(old.accounted_requests, new.accounted_requests):
        action |= ActionType.UPDATE_POD_SCALE_DOWN
    if old.tolerations != new.tolerations:
        action |= ActionType.UPDATE_POD_TOLERATION
    if old.scheduling_gates and not new.scheduling_gates:
        action |= ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    return action or ActionType.UPDATE


@dataclass(slots=True)
class Drift:
    """Differences between the cache and a fresh LIST: node names and pod keys ("namespace/name").

    missing: in the API, not in the cache; extra: in the cache, gone from the API; stale: in both with a
    different resourceVersion (or, for pods, a different node).
    """

    missing_nodes: list[str] = field(default_factory=list)
    extra_nodes: list[str] = field(default_factory=list)
    stale_nodes: list[str] = field(default_factory=list)
    missing_pods: list[str] = field(default_factory=list)
    extra_pods: list[str] = field(default_factory=list)
    stale_pods: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.count() > 0

    def count(self) -> int:
        """Total number of differing objects."""
        return sum(len(v) for v in self.to_dict().values())

    def to_dict(self) -> dict[str, list[str]]:
        """JSON-able form, keyed by category."""
        return {
            "missing_nodes": list(self.missing_nodes),
            "extra_nodes": list(self.extra_nodes),
            "stale_nodes": list(self.stale_nodes),
            "missing_pods": list(self.missing_pods),
            "extra_pods": list(self.extra_pods),
            "stale_pods": list(self.stale_pods),
        }

    def summary(self) -> str:
        """One log line: counts per category, then up to 5 names of each non-empty category."""
        parts = []
        for kind, names in self.to_dict().items():
            if names:
                shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
                parts.append(f"{len(names)} {kind.replace('_', ' ')} ({shown})")
        return "; ".join(parts) if parts else "no drift"


@dataclass(slots=True)
class Differences:
    """What a fresh LIST would change in the cache: the drift report plus the records to apply."""

    drift: Drift
    node_put: list[NodeRecord]  # missing or stale nodes, as listed
    node_remove: list[str]  # node names gone from the LIST
    pod_put: list[PodInfo]  # missing or stale assigned pods (and assumed pods the LIST shows bound), as listed
    pod_drop: list[str]  # uids of cached pods gone from the LIST (assumed pods excluded)


def resource_dict(res: Resource, pods: int | None = None) -> dict[str, int]:
    """A Resource as {API name: amount} (cpu in millicores), for dumps; `pods` overrides the pod count."""
    out = {
        "cpu": res.milli_cpu,
        "memory": res.memory,
        "ephemeral-storage": res.ephemeral_storage,
        "pods": res.allowed_pod_number if pods is None else pods,
    }
    out.update(res.scalar)
    return out


class Cache:
    """Nodes, assigned and assumed pods; fills the per-cycle Snapshot incrementally. Not thread-safe.

    Methods return what changed so the scheduler can turn it into queue events: `update_node` and
    `update_pod` return ActionType flags, removals return the removed record.
    """

    def __init__(self) -> None:
        self._nodes: dict[str, NodeInfo] = {}
        self._tree = NodeTree()
        self._pods: dict[str, PodInfo] = {}  # uid -> the pod as placed (the assumed copy while assumed)
        self._assumed: dict[str, bool] = {}  # uid -> binding finished
        self._generation = 0
        # Node names from least to most recently changed (upstream's doubly-linked list of NodeInfos).
        self._recent: dict[str, None] = {}
        # Upstream's cache.imageStates (image name -> size and the nodes holding it), as a size and a count: each
        # node's images are added once when it joins and removed once when it leaves or changes them, so the
        # count is the number of holders. The size is the one reported by the node that created the entry (the
        # first holder added) and stays while any node holds the image; `_image_view` is a copy of `_images`
        # that snapshots share, made again (a C-level dict copy) after the next change. (Counts, not sets of
        # names: a 5000-node cluster whose nodes list image digests of their own has ~120,000 images held by
        # one node each; the copy is a tenth of building its (size, count) pairs again.)
        self._images: dict[str, tuple[int, int]] = {}  # image -> (size, holders)
        self._image_view: dict[str, tuple[int, int]] = {}
        self._image_view_stale = False

    # -----------------------------------------------------------------------------------------------------
    # Bookkeeping

    def _touch(self, info: NodeInfo) -> None:
        """Stamp a changed NodeInfo with a new generation and make it the most recent."""
        self._generation += 1
        info.generation = self._generation
        recent = self._recent
        recent.pop(info.name, None)
        recent[info.name] = None

    def _drop(self, name: str) -> None:
        """Forget a NodeInfo entirely (a placeholder whose last pod left, or a deleted empty node)."""
        del self._nodes[name]
        self._recent.pop(name, None)

    def _add_images(self, record: NodeRecord) -> None:
        """addNodeImageStates: the node joins each image's holders; a new image takes this node's size."""
        if not record.images:
            return
        images = self._images
        for image, size in record.images.items():
            held = images.get(image)
            images[image] = (size, 1) if held is None else (held[0], held[1] + 1)
        self._image_view_stale = True

    def _remove_images(self, record: NodeRecord) -> None:
        """removeNodeImageStates: the node leaves each image's holders; an image nobody holds is forgotten."""
        if not record.images:
            return
        images = self._images
        for image in record.images:
            held = images.get(image)
            if held is None:
                continue
            if held[1] > 1:
                images[image] = (held[0], held[1] - 1)
            else:
                del images[image]
        self._image_view_stale = True

    def image_view(self) -> dict[str, tuple[int, int]]:
        """Image name -> (size, number of nodes holding it), as the cache knows it now."""
        if self._image_view_stale:
            self._image_view = dict(self._images)  # (the view handed out before stays as it was)
            self._image_view_stale = False
        return self._image_view

    # -----------------------------------------------------------------------------------------------------
    # Nodes

    def add_node(self, record: NodeRecord) -> None:
        """Add a node (or replace its record when already known); it joins the tree and the snapshot."""
        info = self._nodes.get(record.name)
        if info is None:
            info = NodeInfo(record.name)
            self._nodes[record.name] = info
        previous = info.node
        if previous is None:
            self._tree.add_node(record)
            self._add_images(record)
        else:
            self._tree.update_node(previous, record)
            if previous.images != record.images:  # upstream removes then re-adds; with equal images a no-op
                self._remove_images(previous)
                self._add_images(record)
        info.node = record
        self._touch(info)

    def update_node(self, old: NodeRecord, new: NodeRecord) -> ActionType:
        """Replace a node's record; return the ActionType flags of the change (ADD when it was unknown).

        The flags compare against the record the cache holds (falling back to `old`), so an update that
        arrives after a missed one still reports everything that changed since the cache last saw the node.
        """
        info = self._nodes.get(new.name)
        known = info.node if info is not None else None
        self.add_node(new)
        if known is None:
            return ActionType.ADD
        return node_update_action(known, new)

    def remove_node(self, name: str) -> NodeRecord | None:
        """Remove a node from the tree and snapshot; keep a placeholder while pods are still on it."""
        info = self._nodes.get(name)
        if info is None or info.node is None:
            return None
        record = info.node
        self._tree.remove_node(name)
        self._remove_images(record)
        info.node = None
        if info.pods:
            self._touch(info)
        else:
            self._generation += 1  # later snapshots must not mistake a re-added node for an unchanged one
            self._drop(name)
        return record

    # -----------------------------------------------------------------------------------------------------
    # Pods

    def _place(self, pod: PodInfo) -> None:
        """Put a pod on its node (creating a placeholder NodeInfo), replacing any earlier copy."""
        old = self._pods.get(pod.uid)
        if old is not None:
            self._unplace(old)
        info = self._nodes.get(pod.node_name)
        if info is None:
            info = NodeInfo(pod.node_name)
            self._nodes[pod.node_name] = info
        info.add_pod(pod)
        self._pods[pod.uid] = pod
        self._touch(info)

    def _unplace(self, pod: PodInfo) -> None:
        info = self._nodes.get(pod.node_name)
        if info is None:
            return
        info.remove_pod(pod.uid)
        if info.node is None and not info.pods:
            self._drop(info.name)
        else:
            self._touch(info)

    def add_pod(self, pod: PodInfo) -> None:
        """A pod from the watch: place it if assigned, confirm an assumed copy, drop it when terminal.

        Unassigned pods are the queue's business and are ignored here. When the watch shows an assumed pod
        on another node than assumed, the API wins and the pod moves.
        """
        if not pod.node_name:
            return
        if is_terminal(pod):
            self.remove_pod(pod.uid)
            return
        self._assumed.pop(pod.uid, None)
        self._place(pod)

    def update_pod(self, old: PodInfo, new: PodInfo) -> ActionType:
        """A pod update from the watch (also how a binding usually shows up); return the change's flags."""
        known = self._pods.get(new.uid, old)
        self.add_pod(new)
        return pod_update_action(known, new)

    def remove_pod(self, uid: str) -> PodInfo | None:
        """Remove a pod (deleted, or finished) from its node; return what the cache held, if anything."""
        pod = self._pods.pop(uid, None)
        if pod is None:
            return None
        self._assumed.pop(uid, None)
        self._unplace(pod)
        return pod

    def assume_pod(self, pod: PodInfo, node_name: str) -> PodInfo:
        """Place a copy of the pod on node_name before the bind call returns; return that copy.

        Raise ValueError when the pod is already in the cache (assumed or confirmed), as upstream does.
        """
        if pod.uid in self._pods:
            raise ValueError(f"pod {pod.key} is in the cache, so can't be assumed")
        copy = pod.with_node(node_name)
        self._assumed[pod.uid] = False
        self._place(copy)
        return copy

    def finish_binding(self, uid: str) -> None:
        """Record that the bind call for an assumed pod returned (the watch has not confirmed it yet)."""
        if uid in self._assumed:
            self._assumed[uid] = True

    def forget_pod(self, uid: str) -> PodInfo | None:
        """Undo an assumption (binding failed). A pod the watch already confirmed is left alone (None)."""
        if uid not in self._assumed:
            return None
        return self.remove_pod(uid)

    def is_assumed(self, uid: str) -> bool:
        return uid in self._assumed

    def binding_finished(self, uid: str) -> bool:
        return self._assumed.get(uid, False)

    def get_pod(self, uid: str) -> PodInfo | None:
        """The pod as the cache holds it (the assumed copy while assumed)."""
        return self._pods.get(uid)

    def get_node(self, name: str) -> NodeInfo | None:
        """The live NodeInfo (placeholders included); read it, never mutate it."""
        return self._nodes.get(name)

    def node_count(self) -> int:
        """Nodes in the tree (placeholders excluded): scheduler_cache_size{type="nodes"}."""
        return len(self._tree)

    def pod_count(self) -> int:
        """Pods on nodes, assumed ones included: scheduler_cache_size{type="pods"}."""
        return len(self._pods)

    def assumed_count(self) -> int:
        return len(self._assumed)

    def sizes(self) -> dict[str, int]:
        """Entries of every internal map (placeholder NodeInfos included), for leak checks."""
        return {
            "node_infos": len(self._nodes),
            "tree_nodes": len(self._tree),
            "tree_zones": len(self._tree.zones()),
            "pods": len(self._pods),
            "assumed": len(self._assumed),
            "recent": len(self._recent),
            "images": len(self._images),
        }

    @property
    def node_tree(self) -> NodeTree:
        return self._tree

    @property
    def generation(self) -> int:
        return self._generation

    # -----------------------------------------------------------------------------------------------------
    # Snapshot

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring a snapshot up to date: clone NodeInfos changed since it was last updated, drop deleted
        nodes, refresh image counts if images changed, and rebuild the node list from the tree.

        Cost is proportional to the nodes changed plus one pass over the node list (which is rebuilt from
        scratch every time so it always holds every node exactly once, zone-interleaved).
        """
        since = snapshot.generation
        infos = snapshot.node_info_map
        node_images = snapshot.node_image_states
        images = self.image_view()
        nodes = self._nodes
        changed: list[str] = []
        for name in reversed(self._recent):
            info = nodes[name]
            if info.generation <= since:
                break
            changed.append(name)
            old = infos.get(name)
            if old is not None and old.pvc_ref_counts:
                snapshot.count_pvcs(old, -1)
            if info.node is None:
                infos.pop(name, None)
                node_images.pop(name, None)
            else:
                clone = infos[name] = info.clone()
                # Upstream's clone copies the node's image states as they are now (SnapshotConcrete); a node
                # that does not change keeps them even when other nodes gain or lose its images later.
                node_images[name] = images
                if clone.pvc_ref_counts:
                    snapshot.count_pvcs(clone, +1)
        tree = self._tree
        if len(infos) != len(tree):
            for name in [n for n in infos if n not in tree]:
                if infos[name].pvc_ref_counts:
                    snapshot.count_pvcs(infos[name], -1)
                del infos[name]
                node_images.pop(name, None)
        names = tree.list()  # rebuilt from scratch every cycle (field story 1)
        previous = snapshot._list_names
        reordered = True
        try:
            if (
                previous is not None
                and snapshot._list_of is snapshot.node_info_list
                and names == previous
                and caching.ENABLED  # disabled: the full remap every cycle
            ):
                # Same order as last cycle (comparing the very same string objects is fast): patch the
                # positions of the changed nodes into a copy instead of remapping every name. Nothing changed:
                # the same list (a list handed out is never modified).
                reordered = False
                if changed:
                    out = list(snapshot.node_info_list)
                    index = snapshot._list_index
                    if index is None:
                        index = snapshot._list_index = {n: i for i, n in enumerate(names)}
                    for name in changed:
                        i = index.get(name)
                        if i is not None:
                            out[i] = infos[name]
                    snapshot.node_info_list = out
            else:
                snapshot.node_info_list = list(map(infos.__getitem__, names))
                snapshot._list_index = None
        except KeyError:  # cannot happen unless the generation bookkeeping is broken: rebuild in full
            reordered = True
            snapshot.node_info_map = infos = {n: nodes[n].clone() for n in names}
            snapshot.node_info_list = [infos[n] for n in names]
            snapshot.node_image_states = {n: images for n in names}
            snapshot._list_index = None
            snapshot.recount_pvcs()
        snapshot._list_names = names
        snapshot._list_of = snapshot.node_info_list
        snapshot.image_states = images
        snapshot.generation = self._generation
        snapshot.record_update(changed, reordered)

    def fresh_snapshot(self) -> Snapshot:
        """A snapshot built from scratch (reference for consistency checks and tests)."""
        snap = Snapshot.from_node_infos([self._nodes[n].clone() for n in self._tree.list()], self.image_view())
        snap.generation = self._generation
        return snap

    # -----------------------------------------------------------------------------------------------------
    # Debugging: dump, compare, reconcile

    def dump(self) -> dict[str, Any]:
        """JSON-able view of the cache for the debug endpoint and SIGUSR2-style dumps."""
        nodes: dict[str, Any] = {}
        for name, info in sorted(self._nodes.items()):
            nodes[name] = {
                "placeholder": info.node is None,
                "zone": info.node.zone if info.node is not None else None,
                "resource_version": info.node.resource_version if info.node is not None else None,
                "allocatable": resource_dict(info.allocatable),
                "requested": resource_dict(info.requested, pods=len(info.pods)),
                "pods": sorted(p.key for p in info.pods.values()),
                "generation": info.generation,
            }
        assumed = [
            {
                "uid": uid,
                "pod": self._pods[uid].key,
                "node": self._pods[uid].node_name,
                "binding_finished": finished,
            }
            for uid, finished in sorted(self._assumed.items())
        ]
        return {
            "generation": self._generation,
            "node_order": self._tree.list(),
            "nodes": nodes,
            "assumed_pods": assumed,
            "counts": {"nodes": self.node_count(), "pods": self.pod_count(), "assumed_pods": len(assumed)},
        }

    def _diff(
        self, nodes: Iterable[NodeRecord], pods: Iterable[PodInfo]
    ) -> tuple[Drift, list[NodeRecord], list[NodeRecord], list[str], list[PodInfo], list[str]]:
        """Drift plus what to apply: nodes to add/update, node names to remove, pods to add, uids to drop."""
        drift = Drift()
        listed_nodes = {n.name: n for n in nodes}
        node_add: list[NodeRecord] = []
        node_update: list[NodeRecord] = []
        for name, record in listed_nodes.items():
            info = self._nodes.get(name)
            if info is None or info.node is None:
                drift.missing_nodes.append(name)
                node_add.append(record)
            elif info.node.resource_version != record.resource_version:
                drift.stale_nodes.append(name)
                node_update.append(record)
        node_remove = [n for n in self._tree.list() if n not in listed_nodes]
        drift.extra_nodes.extend(node_remove)

        listed_pods = {p.uid: p for p in pods if p.node_name and not is_terminal(p)}
        pod_put: list[PodInfo] = []
        for uid, pod in listed_pods.items():
            held = self._pods.get(uid)
            if held is None:
                drift.missing_pods.append(pod.key)
                pod_put.append(pod)
            elif uid in self._assumed:
                if held.node_name != pod.node_name:  # bound elsewhere than assumed: the API wins
                    drift.stale_pods.append(pod.key)
                pod_put.append(pod)  # confirms the assumption (routine, not drift, on the same node)
            elif held.resource_version != pod.resource_version or held.node_name != pod.node_name:
                drift.stale_pods.append(pod.key)
                pod_put.append(pod)
        pod_drop = [uid for uid in self._pods if uid not in listed_pods and uid not in self._assumed]
        drift.extra_pods.extend(self._pods[uid].key for uid in pod_drop)
        for names in (drift.missing_nodes, drift.stale_nodes, drift.extra_nodes):
            names.sort()
        for keys in (drift.missing_pods, drift.stale_pods, drift.extra_pods):
            keys.sort()
        return drift, node_add, node_update, node_remove, pod_put, pod_drop

    def differences(self, nodes: list[NodeRecord], pods: list[PodInfo]) -> Differences:
        """Compare with a fresh LIST without changing anything (for a caller that applies selectively)."""
        drift, node_add, node_update, node_remove, pod_put, pod_drop = self._diff(nodes, pods)
        return Differences(drift, node_add + node_update, node_remove, pod_put, pod_drop)

    def compare(self, nodes: list[NodeRecord], pods: list[PodInfo]) -> Drift:
        """Report how the cache differs from a fresh LIST of nodes and pods (pods of any scheduler).

        Assumed pods the LIST does not show bound yet are not drift (their binding is in flight).
        """
        return self._diff(nodes, pods)[0]

    def reconcile(self, nodes: list[NodeRecord], pods: list[PodInfo]) -> Drift:
        """Repair the cache to match a fresh LIST and return what was repaired.

        Missing and stale objects are (re)applied, extra ones removed; assumed pods not yet shown bound
        are kept, and assumed pods the LIST shows bound are confirmed.
        """
        drift, node_add, node_update, node_remove, pod_put, pod_drop = self._diff(nodes, pods)
        for record in node_add + node_update:
            self.add_node(record)
        for name in node_remove:
            self.remove_node(name)
        for uid in pod_drop:
            self.remove_pod(uid)
        for pod in pod_put:
            self.add_pod(pod)
        return drift
