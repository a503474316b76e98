"""Parsed, defaulted and validated `KubeSchedulerConfiguration` (kubescheduler.config.k8s.io/v1).

These records are what `scheduler.config.load.load_config` returns; every field holds its effective
value (upstream defaults, or pyscheduler's where they differ: the default profile / lease name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, get_args

ExtensionPoint = Literal[
    "pre_enqueue",
    "queue_sort",
    "pre_filter",
    "filter",
    "post_filter",
    "pre_score",
    "score",
    "reserve",
    "permit",
    "pre_bind",
    "bind",
    "post_bind",
]
"""A specific extension point (the `Plugins` field name); `multi_point` is not one of them."""

EXTENSION_POINTS: tuple[ExtensionPoint, ...] = get_args(ExtensionPoint)
"""Every specific extension point, in `Plugins` field order."""

POINT_YAML_KEYS: Mapping[str, str] = MappingProxyType(
    {
        "pre_enqueue": "preEnqueue",
        "queue_sort": "queueSort",
        "pre_filter": "preFilter",
        "filter": "filter",
        "post_filter": "postFilter",
        "pre_score": "preScore",
        "score": "score",
        "reserve": "reserve",
        "permit": "permit",
        "pre_bind": "preBind",
        "bind": "bind",
        "post_bind": "postBind",
        "multi_point": "multiPoint",
    }
)
"""`Plugins` field name -> its key in the v1 YAML (`profiles[i].plugins.<key>`)."""


@dataclass(frozen=True, slots=True)
class PluginRef:
    """One `{name, weight}` entry of an enabled list.

    `weight` is None when not given (or given as 0, which upstream treats as unset); a Score plugin
    without a weight scores with weight 1. Weights of plugins at non-score points are ignored.
    """

    name: str
    weight: int | None = None


@dataclass(frozen=True, slots=True)
class PluginSet:
    """`{enabled: [...], disabled: [...]}` of one extension point; `"*"` in `disabled` means all."""

    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Plugins:
    """A profile's plugin sets, as in effect after merging with the defaults.

    `multi_point` is the default MultiPoint list merged with the user's (upstream `mergePluginSet`);
    every specific point holds exactly the user's set (upstream has no per-point defaults in v1).
    Use `scheduler.config.load.effective_plugins` to get the final list of one point.
    """

    pre_enqueue: PluginSet = PluginSet()
    queue_sort: PluginSet = PluginSet()
    pre_filter: PluginSet = PluginSet()
    filter: PluginSet = PluginSet()
    post_filter: PluginSet = PluginSet()
    pre_score: PluginSet = PluginSet()
    score: PluginSet = PluginSet()
    reserve: PluginSet = PluginSet()
    permit: PluginSet = PluginSet()
    pre_bind: PluginSet = PluginSet()
    bind: PluginSet = PluginSet()
    post_bind: PluginSet = PluginSet()
    multi_point: PluginSet = PluginSet()

    def point(self, point: ExtensionPoint | Literal["multi_point"]) -> PluginSet:
        """The PluginSet of `point` (a `Plugins` field name)."""
        value: PluginSet = getattr(self, point)
        return value


@dataclass(frozen=True, slots=True)
class Profile:
    """One scheduling profile (`profiles[i]`).

    `percentage_of_nodes_to_score` None means "use the global value". `plugin_config` maps a plugin
    name to the object its args parser returned: for every plugin named in `pluginConfig`, and for every
    enabled plugin whose parser returned a non-None default (`parse_args(name, None)`).
    """

    scheduler_name: str
    percentage_of_nodes_to_score: int | None = None
    plugins: Plugins = Plugins()
    plugin_config: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class LeaderElection:
    """`leaderElection` (component-base LeaderElectionConfiguration); durations are in seconds.

    `resource_name` defaults to "pyscheduler" (never upstream's "kube-scheduler", so pyscheduler never
    competes for kube-scheduler's lease); `resource_namespace` defaults to $POD_NAMESPACE, else
    "kube-system".
    """

    leader_elect: bool = True
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = "pyscheduler"
    resource_namespace: str = "kube-system"


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """`clientConnection`; `qps` <= 0 (after defaulting 0 to 50) means no client-side rate limit."""

    qps: float = 50.0
    burst: int = 100
    kubeconfig: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    accept_content_types: str = ""


@dataclass(frozen=True, slots=True)
class SchedulerConfiguration:
    """The whole configuration; `percentage_of_nodes_to_score` 0 means adaptive (upstream formula)."""

    profiles: tuple[Profile, ...]
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    parallelism: int = 16
    leader_election: LeaderElection = LeaderElection()
    client_connection: ClientConnection = ClientConnection()
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    delay_cache_until_active: bool = False

    def profile(self, scheduler_name: str) -> Profile | None:
        """The profile serving `scheduler_name`, or None."""
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None
