"""The intake half of a pod's trip, as upstream's eventhandlers.go tells it, top to bottom: watch event ->
parse -> cache / queue. (schedule_one.py tells the other half: queue -> cycle -> binding.)

Where events come from: in a cluster, one LIST+WATCH loop per collection (adapters/cluster/reflector.py:
`PodWatch` for pods, an `ObjectInformer` per other kind; kopf watches nodes), each event through
`ClusterWatcher.dispatch`, which remembers it while a LIST is in flight so the LIST cannot roll it back;
offline, `MemoryCluster` calls the same entry points for each object of a file. Then, in `EventHandlers`:

1. `on_node_event`: parse the node (`parse_node`), add, update or remove it in **the cache**, and turn the
   change into a `ClusterEvent` that moves the rejected pods it may help out of the unschedulable pool.
2. `on_pod_event`: a pod gone (DELETED, or a terminal phase) is forgotten everywhere (`forget_pod`); any
   other is **parsed** once into a `PodInfo` (`parse_pod`; a pod we cannot parse gets a FailedScheduling
   report saying why, `_unparsable_pod`), then
   - assigned (`spec.nodeName` set, whatever scheduler placed it): **the cache** (`_assigned_pod`: add,
     confirm our assumed pod, or update), and the change moves rejected pods;
   - unassigned and naming one of our profiles: **the queue** (`_pending_pod`), unless it uses a field
     pyscheduler does not evaluate (`_refuse_unsupported`: left Pending, reported once, fail closed).
3. `on_object_event`: the other kinds plugins read (Namespaces, PersistentVolumeClaims, ...) into **the
   object store**; the plugins listening for the kind hear of it; the change moves pods.
4. Relists converge all of it to a fresh LIST: `resync_objects` (one kind), `resync` (nodes and pods at
   once, after a watch gap), `resync_suspects` then `settle` (a periodic LIST: its differences are left to
   the watches for a grace period, and only those still there are repaired and counted as drift).

Every handler is synchronous and runs on the scheduling loop, between two cycles: a cycle never sees half an
event.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scheduler.core.api import REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE
from scheduler.core.schedule_one import report_landed
from scheduler.core.unsupported import find_unsupported, unsupported_message
from scheduler.framework.interface import ASSIGNED_POD, NODE, ActionType, ClusterEvent
from scheduler.framework.objects import object_key
from scheduler.framework.types import NodeRecord, ParseError, PodInfo, parse_node, parse_pod

if TYPE_CHECKING:
    from scheduler.core.scheduler import Scheduler

log = logging.getLogger("pyscheduler.scheduler")

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
TERMINAL_PHASES = ("Succeeded", "Failed")

EVENT_NODE_ADD = ClusterEvent(NODE, ActionType.ADD, "NodeAdd")
EVENT_ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")


def pod_uid(obj: Mapping[str, Any]) -> str:
    """The uid of a pod object (namespace/name when it has none, as in hand-written simulation files)."""
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name')}")


class EventHandlers:
    """Routes one scheduler's watch events; holds no state of its own (it lives on the Scheduler)."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.s = scheduler

    # ------------------------------------------------------------------ nodes

    def on_node_event(self, kind: str | None, obj: Mapping[str, Any], parsed: NodeRecord | None = None) -> None:
        """Apply a node watch event (kind None is an object from a LIST); `parsed` is parse_node(obj) when
        the caller has it."""
        s = self.s
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if kind == DELETED:
            if name:
                s.cache.remove_node(name)
            return
        version = str(meta.get("resourceVersion") or "") if kind in (None, ADDED) else ""
        held = s.cache.get_node(name) if version else None
        if held is not None and held.node is not None and held.node.resource_version == version:
            # A listed or re-added node at the very version the cache holds (kopf's node LIST replays what the
            # initial sync applied): nothing changed, and touching the node would re-clone it into the snapshot
            # and drop every result kept for it. (A MODIFIED event is always applied.)
            return
        try:
            record = parsed if parsed is not None else parse_node(obj)
        except ParseError as exc:
            log.error("cannot parse node", extra={"node": name, "error": str(exc)})
            return
        info = s.cache.get_node(record.name)
        old = info.node if info is not None else None
        if old is None:
            s.cache.add_node(record)
            s.move(EVENT_NODE_ADD, new=record)
            return
        action = s.cache.update_node(old, record)
        if action:
            s.move(ClusterEvent(NODE, action, "NodeUpdate"), old=old, new=record)

    # ------------------------------------------------------------------ pods

    def on_pod_event(self, kind: str | None, obj: Mapping[str, Any], parsed: PodInfo | None = None) -> None:
        """Apply a pod watch event: assigned pods feed the cache, our pending pods feed the queue.

        `parsed` is parse_pod(obj) when the caller has it already (simulate parses every pod once to validate).
        """
        uid = parsed.uid if parsed is not None else pod_uid(obj)  # (parse_pod's uid is pod_uid's)
        if kind == DELETED:
            self.forget_pod(uid)
            return
        if parsed is not None:
            pod = parsed
        else:
            try:
                pod = parse_pod(obj)
            except ParseError as exc:
                self._unparsable_pod(uid, obj, exc)
                return
        if pod.phase in TERMINAL_PHASES:
            self.forget_pod(uid)
            return
        if pod.node_name:
            self._assigned_pod(pod)
        elif pod.scheduler_name in self.s.profiles:
            self._pending_pod(pod)

    def forget_pod(self, uid: str) -> None:
        """The pod is gone (deleted, finished): drop it from the queue, the cache and every per-pod map."""
        s = self.s
        s.queue.delete(uid)
        s.nominator.delete(uid)
        s.pending.pop(uid, None)
        s.forget_pod_state(uid)
        if s.handle().reject_waiting_pod(uid):
            # Parked at Permit: its binding cycle now gives its node back (upstream rejects it "removed").
            return
        held = s.cache.get_pod(uid)
        if held is not None:
            s.cache.remove_pod(uid)
            s.move(EVENT_ASSIGNED_POD_DELETE, old=held)
        s.pod_changed(uid)

    def _unparsable_pod(self, uid: str, obj: Mapping[str, Any], exc: ParseError) -> None:
        """A pod we cannot understand gets a FailedScheduling event saying why; everyone else goes on."""
        s = self.s
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        if not isinstance(meta, dict):
            meta = {}
        if not isinstance(spec, dict):
            spec = {}
        log.warning("cannot parse pod", extra={"pod": f"{meta.get('namespace')}/{meta.get('name')}", "error": str(exc)})
        if spec.get("nodeName") or spec.get("schedulerName", "default-scheduler") not in s.profiles:
            return
        message = f"failed to parse pod: {exc}"
        if s.parse_failures.get(uid) == message:
            return
        s.parse_failures[uid] = message
        s.pending.pop(uid, None)
        s.queue.delete(uid)
        s.nominator.delete(uid)
        stub = PodInfo(
            uid=uid,
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name") or ""),
            scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
        )
        s.last_failure[uid] = (REASON_SCHEDULER_ERROR, message)
        s.api.record_failure(stub, REASON_SCHEDULER_ERROR, message)

    def _assigned_pod(self, pod: PodInfo) -> None:
        s = self.s
        unconfirmed = s.unconfirmed_binds.pop(pod.uid, None)
        if unconfirmed is not None and unconfirmed.host == pod.node_name and not s.cache.is_assumed(pod.uid):
            # Our bind whose answer never came landed (no later attempt is binding the pod): report it as ours.
            report_landed(s, unconfirmed, pod)
        if pod.uid in s.pending:
            del s.pending[pod.uid]
            s.queue.delete(pod.uid)
        s.nominator.delete(pod.uid)
        s.forget_pod_state(pod.uid)
        old = s.cache.get_pod(pod.uid)
        if old is None or s.cache.is_assumed(pod.uid):
            s.cache.add_pod(pod)
            s.pod_changed(pod.uid)
            if old is None:
                s.move(EVENT_ASSIGNED_POD_ADD, new=pod)
            return
        action = s.cache.update_pod(old, pod)
        if action:
            s.move(ClusterEvent(ASSIGNED_POD, action, "AssignedPodUpdate"), old=old, new=pod)

    def _pending_pod(self, pod: PodInfo) -> None:
        s = self.s
        if s.cache.get_pod(pod.uid) is not None:
            # Bound (by us a moment ago, or as a LIST showed): spec.nodeName never goes back to empty, so this
            # unbound version is older than what the cache holds (a lagging watch replaying history).
            return
        s.parse_failures.pop(pod.uid, None)
        if pod.terminating:
            s.queue.delete(pod.uid)
            s.nominator.delete(pod.uid)
            s.pending.pop(pod.uid, None)
            s.unsupported.pop(pod.uid, None)
            return
        if self._refuse_unsupported(pod):
            return
        old = s.pending.get(pod.uid)
        s.pending[pod.uid] = pod
        if old is None:
            s.nominator.add(pod)  # its status.nominatedNodeName, if any (e.g. after a restart)
        else:
            s.nominator.update(old, pod)
        if old is None or pod.uid not in s.queue:
            s.queue.add(pod)
        else:
            s.queue.update(old, pod)
        s.notify()

    def _refuse_unsupported(self, pod: PodInfo) -> bool:
        """Fail closed: a pod using a field we do not evaluate is reported once and kept out of the queue."""
        s = self.s
        fwk = s.profiles[pod.scheduler_name]
        findings = find_unsupported(pod, fwk.upstream_plugins, fwk.plugins)
        if not findings:
            if s.unsupported.pop(pod.uid, None) is not None:
                log.info("pod no longer uses unsupported fields; queueing it", extra={"pod": pod.key})
            return False
        message = unsupported_message(findings)
        s.queue.delete(pod.uid)
        s.nominator.delete(pod.uid)
        s.pending.pop(pod.uid, None)
        previous = s.unsupported.get(pod.uid)
        s.unsupported[pod.uid] = (pod, findings)
        if previous is not None and unsupported_message(previous[1]) == message:
            return True
        for finding in findings:
            s.observer.unsupported_pod(finding.feature)
        log.warning(
            "pod uses fields pyscheduler does not evaluate; leaving it Pending",
            extra={"pod": pod.key, "fields": [f.field for f in findings]},
        )
        s.last_failure[pod.uid] = (REASON_UNSCHEDULABLE, message)
        s.api.record_failure(pod, REASON_UNSCHEDULABLE, message)
        return True

    # ------------------------------------------------------------------ other objects

    def on_object_event(self, kind: str, event_type: str | None, obj: Mapping[str, Any]) -> None:
        """Apply a watch event of another kind (Namespace, PersistentVolumeClaim, ...) to the object store,
        tell the plugins that listen for that kind, and move the pods it may help."""
        namespace, name = object_key(obj)
        held = self.s.objects.get(kind, namespace, name)  # the version before this event, for QueueingHints
        action = self.s.objects.apply(kind, event_type, dict(obj))
        if not action:
            return
        for fwk in self.s.profiles.values():
            for plugin in fwk.object_listeners(kind):
                try:
                    plugin.on_object_event(kind, event_type, obj)
                except Exception as exc:  # a broken plugin must not stop the watch
                    self.s.observer.plugin_error(plugin.name, "ObjectEvent")
                    self.s.plugin_errors.report(plugin.name, "ObjectEvent", exc)
        self.s.move(ClusterEvent(kind, action), old=held, new=None if event_type == DELETED else obj)

    def resync_objects(self, kind: str, objects: list[Mapping[str, Any]]) -> dict[str, int]:
        """Converge one kind to a fresh LIST; a change moves the pods whose plugins registered the kind."""
        counts = self.s.objects.replace(kind, [dict(o) for o in objects])
        if any(counts.values()):
            self.s.move(ClusterEvent(kind, ActionType.ALL, f"{kind}Resync"))
        return counts

    # ------------------------------------------------------------------ relist

    def _listed(
        self, nodes: list[Mapping[str, Any]], pods: list[Mapping[str, Any]]
    ) -> tuple[list[NodeRecord], list[PodInfo], set[str]]:
        """Parse a LIST: (node records, assigned pods, uids of our unassigned pods). Queues listed pending
        pods it does not track yet and forgets refusals of pods the LIST no longer has."""
        s = self.s
        node_records: list[NodeRecord] = []
        for obj in nodes:
            try:
                node_records.append(parse_node(obj))
            except ParseError:
                continue
        assigned: list[PodInfo] = []
        pending_uids: set[str] = set()
        for obj in pods:
            try:
                pod = parse_pod(obj)
            except ParseError:
                pending_uids.add(pod_uid(obj))  # still there, still unparsable: keep its report
                continue
            if pod.phase in TERMINAL_PHASES:
                continue
            if pod.node_name:
                assigned.append(pod)
            elif pod.scheduler_name in s.profiles:
                pending_uids.add(pod.uid)
                # (_pending_pod ignores a pod the cache holds: this LIST saw it before its binding.)
                if pod.uid not in s.pending and pod.uid not in s.unsupported:
                    self._pending_pod(pod)
        assigned_uids = {p.uid for p in assigned}
        for uid in [u for u in (*s.unsupported, *s.parse_failures) if u not in pending_uids]:
            if uid not in assigned_uids:
                s.forget_pod_state(uid)
        return node_records, assigned, pending_uids

    def resync(self, nodes: list[Mapping[str, Any]], pods: list[Mapping[str, Any]]) -> dict[str, int]:
        """Converge the cache and queue to a fresh LIST at once (after a watch gap); returns repaired counts."""
        s = self.s
        node_records, assigned, pending_uids = self._listed(nodes, pods)
        binding = {u for u in s.pending if s.cache.is_assumed(u)}  # ours in flight: the binding cycle finishes them
        drift = s.cache.reconcile(node_records, assigned)
        repaired = {kind: len(names) for kind, names in drift.to_dict().items()}
        for uid in [u for u in s.pending if u not in pending_uids and u not in binding]:
            if s.cache.get_pod(uid) is not None:  # bound by someone else, as the LIST showed: keep it cached
                s.pending.pop(uid, None)
                s.queue.delete(uid)
                s.forget_pod_state(uid)
            else:
                self.forget_pod(uid)
            repaired["pending_pods_removed"] = repaired.get("pending_pods_removed", 0) + 1
        self._report(repaired)
        return repaired

    def _report(self, repaired: dict[str, int]) -> None:
        s = self.s
        for kind, count in repaired.items():
            if count:
                s.observer.cache_drift(kind, count)
        if any(repaired.values()):
            log.warning("cache drift repaired", extra={"drift": repaired})
            s.move(ClusterEvent(NODE, ActionType.ALL, "Resync"))

    def resync_suspects(
        self,
        nodes: list[Mapping[str, Any]],
        pods: list[Mapping[str, Any]],
        touched: Deleted | None = None,
    ) -> Suspects:
        """Compare with a fresh LIST but leave every difference to the watches for now (see `settle`).

        Watches that are catching up (a reconnect, a slow stream) show as differences too; applying the LIST
        at once would count that lag as drift and let the late events replay older versions afterwards.
        Only the routine part is applied now: assumed pods the LIST shows bound where assumed are confirmed.
        `touched(resource, key)` says a watch event for the object arrived after the LIST was requested: the
        cache is then at least as new as the LIST for it, so it is no suspect (a pod bound and confirmed while
        a slow LIST was in flight must not be dropped for being absent or unbound in that LIST).
        """
        s = self.s
        if touched is None:
            touched = _never
        node_records, assigned, pending_uids = self._listed(nodes, pods)
        diff = s.cache.differences(node_records, assigned)
        out = Suspects()

        def held_node(name: str) -> NodeRecord | None:
            info = s.cache.get_node(name)
            return info.node if info is not None else None

        for record in diff.node_put:
            if not touched("nodes", record.name):
                out.nodes[record.name] = (held_node(record.name), record)
        for name in diff.node_remove:
            if not touched("nodes", name):
                out.nodes[name] = (held_node(name), None)
        for uid, pod in s.pending.items():
            # Pending pods the cache holds are being bound by us: the binding cycle finishes them.
            if uid not in pending_uids and s.cache.get_pod(uid) is None:
                out.pending[uid] = pod
        for pod in diff.pod_put:
            if touched("pods", pod.uid):
                continue
            held = s.cache.get_pod(pod.uid)
            if held is not None and s.cache.is_assumed(pod.uid) and held.node_name == pod.node_name:
                s.cache.add_pod(pod)  # confirms our own binding: routine, not drift
                continue
            out.pods[pod.uid] = (held, pod)
        for uid in diff.pod_drop:
            if not touched("pods", uid):
                out.pods[uid] = (s.cache.get_pod(uid), None)
        return out

    def settle(self, suspects: Suspects, deleted: Deleted) -> dict[str, int]:
        """Re-check suspects after the watches had time to deliver: whatever changed meanwhile (or was deleted)
        was watch lag; what is still as it was at LIST time is drift, repaired now and counted."""
        s = self.s
        repaired: dict[str, int] = {}

        def count(kind: str) -> None:
            repaired[kind] = repaired.get(kind, 0) + 1

        for name, (held_node, record) in suspects.nodes.items():
            info = s.cache.get_node(name)
            if (info.node if info is not None else None) is not held_node or deleted("nodes", name):
                continue
            if record is None:
                s.cache.remove_node(name)
                count("extra_nodes")
            else:
                s.cache.add_node(record)
                count("stale_nodes" if held_node is not None else "missing_nodes")
        for uid, (held, pod) in suspects.pods.items():
            if s.cache.get_pod(uid) is not held or deleted("pods", uid):
                continue
            if pod is None:
                if s.cache.is_assumed(uid):
                    continue
                s.cache.remove_pod(uid)
                count("extra_pods")
            else:
                self._assigned_pod(pod)
                count("stale_pods" if held is not None else "missing_pods")
        for uid, tracked in suspects.pending.items():
            if s.pending.get(uid) is not tracked or s.cache.get_pod(uid) is not None or deleted("pods", uid):
                continue
            self.forget_pod(uid)
            count("pending_pods_removed")
        self._report(repaired)
        return repaired


# ---------------------------------------------------------------------- what the relists compare


@dataclass(slots=True)
class Suspects:
    """Differences between the cache and a LIST that the watches may still be delivering (watch lag).

    Each entry keeps the record the scheduler held at LIST time (None: nothing) and what the LIST showed
    (None: gone from the LIST). `EventHandlers.settle` re-checks them after a grace period: any watch event
    for the object replaces the held record, so a different record then means the watch resolved it (lag);
    the very same record means nothing came (drift: repaired and counted then).
    """

    nodes: dict[str, tuple[NodeRecord | None, NodeRecord | None]] = field(default_factory=dict)
    pods: dict[str, tuple[PodInfo | None, PodInfo | None]] = field(default_factory=dict)
    pending: dict[str, PodInfo] = field(default_factory=dict)  # tracked pending pods the LIST no longer shows

    def __len__(self) -> int:
        return len(self.nodes) + len(self.pods) + len(self.pending)


Deleted = Callable[[str, str], bool]
"""(resource, key) -> did the watch delete it lately ("nodes"/name, "pods"/uid): a LIST taken before the
deletion must not bring it back."""


def _never(resource: str, key: str) -> bool:
    return False
