"""Per-node Filter verdicts and raw Scores kept for pods of one shape: upstream's OpportunisticBatching
(KEP-5598) made exact.

Upstream signs every pod (each plugin contributes what it reads of the pod, `SignPlugin.sign_pod`) and, when
the next pod has the same signature, hands it the runner-up of the previous cycle's ranking. That can place a
pod where a full evaluation would not (the ranking is a cycle old, and the nodes after the last window are
never looked at). Here nothing is decided differently: a cycle walks, filters and scores exactly the nodes a
full evaluation would, in the same order. What is kept is each node's verdict and raw (pre-normalize) scores
for a signature, in the node's `NodeInfo.memo`, read back as long as that NodeInfo is the one in the snapshot:
the cache puts a fresh clone there whenever a node's pods or Node object change, and `add_pod`/`remove_pod`
empty the memo, so only nodes that changed since (in a backlog, the one that got the last pod) run the
plugins. NormalizeScore, weights, totals and the host selection run on every scored node as before.

When results may be reused, for a profile and a pod:
- every PreFilter/Filter/PreScore/Score plugin of the profile is a SignPlugin (else nothing is ever reused) and
  none refuses the pod;
- Filter: every plugin whose results read the cluster (`sign_reads_cluster`: other nodes' pods, claims,
  Services) was skipped by its PreFilter this cycle; Score: likewise by its PreScore. The skipped plugins,
  and for Score the number of nodes (ImageLocality's spread), are part of the key;
- a node with pods nominated to it is always evaluated afresh (those pods count in its Filter) and its result
  is not kept;
- caches are enabled (`scheduler.caching`); disabled, the plain path runs.
"""

from __future__ import annotations

import itertools
import operator
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Final

from scheduler import caching
from scheduler.framework.interface import MAX_NODE_SCORE, MIN_NODE_SCORE, CycleState, ScorePlugin, SignPlugin
from scheduler.framework.runtime import SCORE, Framework, ScoreResult
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo

PASS: Final = "pass"  # stored for a node every Filter passed (a memo miss reads None)
TOKEN_LIMIT: Final = 4096  # distinct (signature, skip sets) keys remembered per profile before starting over

_serials = itertools.count(1)

FilterRun = Callable[[CycleState, PodInfo, Sequence[NodeInfo]], tuple[list[Status | None], Status | None]]


class ShapeResults:
    """The kept per-node results of one profile (Framework), and the signatures of its pods."""

    __slots__ = ("_cluster_filter", "_cluster_score", "_signers", "_tokens", "_trusted", "fwk", "id", "stats")

    def __init__(self, fwk: Framework) -> None:
        self.fwk = fwk
        self.id = f"shape-results#{next(_serials)}"
        plugins = {p.name: p for p in (*fwk.pre_filter, *fwk.filter, *fwk.pre_score, *fwk.score)}
        signers: list[SignPlugin] = [p for p in plugins.values() if isinstance(p, SignPlugin)]
        # One plugin that cannot sign makes every pod unsignable (upstream disables signatures for the profile).
        self._signers: list[SignPlugin] | None = signers if len(signers) == len(plugins) else None
        self._cluster_filter = frozenset(p.name for p in fwk.filter if getattr(p, "sign_reads_cluster", True))
        self._cluster_score = frozenset(p.name for p in fwk.score if getattr(p, "sign_reads_cluster", True))
        # In-tree plugins are tested to return ints; out-of-tree ones get each score checked (as run_score does).
        self._trusted = frozenset(n for n, p in plugins.items() if type(p).__module__.startswith("scheduler."))
        # Keys -> short strings (cached hash) for the memo. Serial numbers are never reused, so a key dropped
        # with the table can never read another key's entries.
        self._tokens: dict[Hashable, str] = {}
        self.stats = {"filter_reused": 0, "filter_evaluated": 0, "score_reused": 0, "score_evaluated": 0}

    @property
    def enabled(self) -> bool:
        """Whether this profile can reuse anything (every plugin involved signs)."""
        return self._signers is not None

    def signature(self, pod: PodInfo) -> Hashable | None:
        """The pod's signature for this profile, None when a plugin refuses it (kept in `pod.derived`)."""
        if self._signers is None:
            return None
        cached = pod.derived.get(self.id)
        if cached is not None:
            return cached[0]  # type: ignore[no-any-return]
        fragments: list[Any] = []
        signature: Hashable | None = None
        for plugin in self._signers:
            try:
                fragment = plugin.sign_pod(pod)
            except Exception:  # a signer that fails refuses: the pod takes the plain path
                fragment = None
            if fragment is None:
                break
            fragments.append(fragment)
        else:
            signature = (pod.scheduler_name, tuple(fragments))
            try:
                hash(signature)
            except TypeError:  # a fragment that is not hashable cannot key anything
                signature = None
        pod.derived[self.id] = (signature,)
        return signature

    def _token(self, key: Hashable) -> str:
        token = self._tokens.get(key)
        if token is None:
            if len(self._tokens) >= TOKEN_LIMIT:
                self._tokens.clear()
            token = self._tokens[key] = f"{self.id}:{next(_serials)}"
        return token

    # ------------------------------------------------------------------ Filter

    def filter_key(self, state: CycleState, pod: PodInfo) -> str | None:
        """The memo key of this pod's Filter verdicts in this cycle (after PreFilter), or None: no reuse."""
        if not caching.ENABLED:
            return None
        signature = self.signature(pod)
        skip = state.skip_filter_plugins
        if signature is None or not self._cluster_filter <= skip:
            return None
        return self._token(("filter", signature, frozenset(skip)))

    def run_filters(
        self, key: str, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[Status | None], Status | None]:
        """Framework.run_filters_with_nominated_pods over `nodes`, reading kept verdicts and filtering only the
        nodes without one (and those with nominated pods)."""
        fwk = self.fwk
        entries: list[Any] = [n.memo.get(key) for n in nodes]
        nominator = fwk.nominator
        nominees = nominator is not None and nominator.has_nominations()
        if not nominees and None not in entries:
            self.stats["filter_reused"] += len(nodes)
            if entries.count(PASS) == len(entries):
                return [None] * len(nodes), None
            return [None if e is PASS else e for e in entries], None
        if nominees:
            assert nominator is not None
            fresh = [i for i, n in enumerate(nodes) if entries[i] is None or nominator.nominated_pods_for_node(n.name)]
        else:
            fresh = [i for i, e in enumerate(entries) if e is None]
        statuses, err = fwk.run_filters_with_nominated_pods(state, pod, [nodes[i] for i in fresh])
        self.stats["filter_evaluated"] += len(fresh)
        self.stats["filter_reused"] += len(nodes) - len(fresh)
        if err is not None:
            # A plugin failed: give exactly what the plain run over the whole chunk gives (which nodes it had
            # rejected before failing decides where the next cycle starts). Its error is counted twice.
            return fwk.run_filters_with_nominated_pods(state, pod, nodes)
        results: list[Status | None] = [None if e is PASS else e for e in entries]
        for i, st in zip(fresh, statuses, strict=True):
            results[i] = st
            node = nodes[i]
            if not nominees or not nominator.nominated_pods_for_node(node.name):  # type: ignore[union-attr]
                node.remember(key, PASS if st is None else st)
        return results, None

    def filter_run(self, state: CycleState, pod: PodInfo) -> FilterRun:
        """What a cycle filters chunks of nodes with: the reuse path when it applies, else the framework's."""
        key = self.filter_key(state, pod)
        if key is None:
            return self.fwk.run_filters_with_nominated_pods
        return lambda st, p, nodes: self.run_filters(key, st, p, nodes)

    # ------------------------------------------------------------------ Score

    def score_key(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> str | None:
        """The memo key of this pod's raw scores in this cycle (after PreScore), or None: no reuse.

        The snapshot and its node count are part of it: ImageLocality scores a node with the image states its
        snapshot kept for it and the cluster's node count."""
        if not caching.ENABLED:
            return None
        signature = self.signature(pod)
        if signature is None:
            return None
        filtered, skip = frozenset(state.skip_filter_plugins), frozenset(state.skip_score_plugins)
        return self._token(("score", signature, filtered, skip, id(snapshot), snapshot.num_nodes()))

    def run_score(
        self, key: str, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], detail: bool
    ) -> ScoreResult | None:
        """Framework.run_score over `nodes` from the kept rows; None when anything is amiss (a plugin raised or
        returned something out of range): the caller then runs the plain run_score, which reports it.

        A node's row holds the raw score of every plugin that runs this cycle and reads only the pod and the
        node, plus the weighted sum of those without NormalizeScore; the plugins with NormalizeScore are
        normalized over all of `nodes` every cycle, and a plugin that reads the cluster and was not skipped
        (PodTopologySpread's default constraints for a ReplicaSet's pod) scores every node as usual. With
        `detail`, the per-plugin weighted scores are filled in for the V(10) log, as run_score does."""
        fwk = self.fwk
        start = time.perf_counter()
        skip = state.skip_score_plugins
        active = [p for p in fwk.score if p.name not in skip]
        kept = [p for p in active if p.name not in self._cluster_score]
        weights = fwk.score_weights
        count = len(nodes)
        rows: list[Any] = [n.memo.get(key) for n in nodes]
        if None in rows:
            fresh = [i for i, r in enumerate(rows) if r is None]
            sub = [nodes[i] for i in fresh]
            columns: list[list[int]] = []
            for pl in kept:
                values = self._raw(pl, state, pod, sub)
                if values is None:
                    return None
                columns.append(values)
            plain = [(j, weights[pl.name]) for j, pl in enumerate(kept) if not pl.has_normalize]
            for k, i in enumerate(fresh):
                raw = tuple(c[k] for c in columns)
                rows[i] = nodes[i].remember(key, (sum(raw[j] * w for j, w in plain), *raw))
            self.stats["score_evaluated"] += len(fresh)
            self.stats["score_reused"] += count - len(fresh)
        else:
            self.stats["score_reused"] += count
        totals: list[int] = [r[0] for r in rows]
        result = ScoreResult(totals)
        record = state.record_plugin_metrics
        position = {p.name: j for j, p in enumerate(kept)}
        for pl in active:
            weight = weights[pl.name]
            j = position.get(pl.name)
            if j is not None and not pl.has_normalize:
                if detail:
                    result.per_plugin.append((pl.name, [r[j + 1] * weight for r in rows]))
                continue
            t = time.perf_counter() if record else 0.0
            if j is not None:
                scores: list[int] | None = [r[j + 1] for r in rows]
            else:
                scores = self._raw(pl, state, pod, nodes)
                if scores is None:
                    return None
            if not self._normalized(pl, state, pod, scores, count):  # type: ignore[arg-type]
                return None
            assert scores is not None
            if record and j is None:
                fwk.observer.plugin_execution(pl.name, SCORE, Code.SUCCESS, time.perf_counter() - t)
            if not detail and scores.count(0) == count:
                continue  # adds nothing (DynamicResources for a pod without claims)
            weighted = [v * weight for v in scores] if weight != 1 else scores
            if detail:
                result.per_plugin.append((pl.name, weighted))
            totals = list(map(operator.add, totals, weighted))
        result.totals = totals
        fwk.observer.extension_point(SCORE, Code.SUCCESS, fwk.profile_name, time.perf_counter() - start)
        return result

    def _raw(self, pl: ScorePlugin, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int] | None:
        """The plugin's raw scores of nodes, or None when it raises or returns anything but len(nodes) ints (in
        [0, 100] when no NormalizeScore follows)."""
        try:
            values = pl.score_batch(state, pod, nodes)
        except Exception:
            return None
        if not isinstance(values, list) or len(values) != len(nodes):
            return None
        if pl.name not in self._trusted and not all(type(v) is int for v in values):
            return None
        if not pl.has_normalize and values and (min(values) < MIN_NODE_SCORE or max(values) > MAX_NODE_SCORE):
            return None
        return values

    def _normalized(self, pl: ScorePlugin, state: CycleState, pod: PodInfo, scores: list[int], count: int) -> bool:
        """Run the plugin's NormalizeScore on scores in place (when it has one); False on any error or a score
        out of [0, 100] afterwards."""
        if pl.has_normalize:
            try:
                status = pl.normalize_score(state, pod, scores)
            except Exception:
                return False
            if status is not None and status.code != Code.SUCCESS:
                return False
            if len(scores) != count or (pl.name not in self._trusted and not all(type(v) is int for v in scores)):
                return False
        return not scores or (min(scores) >= MIN_NODE_SCORE and max(scores) <= MAX_NODE_SCORE)
