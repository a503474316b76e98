"""The public plugin API of pyscheduler: everything a plugin written outside this repository needs.

A plugin is a class deriving from the extension points it implements (like a Go plugin satisfying
framework interfaces), with a unique `name`, built as `Class(args, handle)`::

    from scheduler.framework import CycleState, Handle, NodeInfo, PodInfo, ScorePlugin

    class CostScore(ScorePlugin):
        \"\"\"Prefer cheaper nodes: 100 for a node without the cost label, less the higher the cost.\"\"\"

        name = "CostScore"

        def __init__(self, args: dict | None, handle: Handle) -> None:
            self.label = (args or {}).get("label", "example.com/hourly-cost")

        @staticmethod
        def parse_args(raw: dict | None) -> dict | None:   # optional: validate pluginConfig args
            if raw and not isinstance(raw.get("label", ""), str):
                raise ValueError("label: must be a string")   # the loader prefixes the config path
            return raw

        def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
            cost = float(node.node.labels.get(self.label, "0")) if node.node else 0.0
            return max(0, 100 - int(cost))

Make it available with an entry point in the `pyscheduler.plugins` group (`CostScore = "my_pkg:CostScore"`
in your package's pyproject.toml) or `pyscheduler run --plugin my_pkg:CostScore`, then enable it by name in a
`KubeSchedulerConfiguration` profile (`plugins.multiPoint.enabled: [{name: CostScore, weight: 2}]`) and
give it `pluginConfig` args. See README "Write a plugin" and examples/plugins/.

Contract (what the scheduler guarantees and expects):
- Statuses: return None (or `Status(Code.SUCCESS)`) for success; `unschedulable(...)`,
  `unresolvable(...)` reject a node or the pod with user-facing reasons; raising, or returning anything
  else, fails only the current pod's attempt (SchedulerError condition, `pyscheduler_plugin_errors_total`).
- Filter/Score get a per-node method and a batch method over many nodes; override the batch method
  (`filter_batch`, `score_batch`) when speed matters. Scores are ints in [0, 100] after `normalize_score`.
- Records (`PodInfo`, `NodeInfo`, the snapshot, objects from `handle.objects`) are shared: read them, never
  mutate them. Keep per-attempt data in the `CycleState`.
- Plugins run on the scheduler's event loop: never block (Reserve/Permit/Filter... are synchronous;
  PreBind/Bind are coroutines and may await I/O with timeouts).
"""

from scheduler.framework.fit_error import NodeToStatus
from scheduler.framework.interface import (
    ASSIGNED_POD,
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    NODE,
    UNSCHEDULED_POD,
    WILDCARD,
    ActionType,
    Binder,
    BindPlugin,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EnqueueExtensions,
    ExplainDetail,
    ExplainExtensions,
    FilterPlugin,
    FixCandidate,
    Handle,
    ObjectEventHandler,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    QueueingHintFn,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    SignPlugin,
    VolumeWriter,
    WaitingPodView,
)
from scheduler.framework.labels import Selector, SelectorError, compile_label_selector, selector_from_set
from scheduler.framework.objects import KINDS, KindInfo, ObjectLister, register_kind
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import (
    SKIP,
    Code,
    Status,
    error_status,
    is_success,
    unresolvable,
    unschedulable,
)
from scheduler.framework.types import NodeInfo, NodeRecord, PodInfo, QueuedPodInfo, Resource, Taint, Toleration

__all__ = [
    "ASSIGNED_POD",
    "KINDS",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "NODE",
    "SKIP",
    "UNSCHEDULED_POD",
    "WILDCARD",
    "ActionType",
    "BindPlugin",
    "Binder",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "EnqueueExtensions",
    "ExplainDetail",
    "ExplainExtensions",
    "FilterPlugin",
    "FixCandidate",
    "Handle",
    "KindInfo",
    "NodeInfo",
    "NodeRecord",
    "NodeToStatus",
    "ObjectEventHandler",
    "ObjectLister",
    "PermitPlugin",
    "Plugin",
    "PodInfo",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueuedPodInfo",
    "QueueingHint",
    "QueueingHintFn",
    "ReservePlugin",
    "Resource",
    "ScorePlugin",
    "Selector",
    "SelectorError",
    "SignPlugin",
    "Snapshot",
    "Status",
    "Taint",
    "Toleration",
    "VolumeWriter",
    "WaitingPodView",
    "compile_label_selector",
    "error_status",
    "is_success",
    "register_kind",
    "selector_from_set",
    "unresolvable",
    "unschedulable",
]
