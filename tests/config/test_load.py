"""Tests of KubeSchedulerConfiguration loading: validation errors, defaults, plugin merge semantics."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from scheduler.config.defaults import DEFAULT_MULTI_POINT, DEFAULT_SCHEDULER_NAME
from scheduler.config.errors import ConfigError
from scheduler.config.load import (
    effective_multi_point,
    effective_plugins,
    effective_point,
    load_config,
    load_config_file,
    merge_plugin_set,
    parse_duration,
)
from scheduler.config.types import EXTENSION_POINTS, ExtensionPoint, PluginRef, PluginSet, Profile

API = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"

# What each test plugin implements (the framework's knowledge, faked).
IMPLEMENTS: dict[str, frozenset[str]] = {
    "SchedulingGates": frozenset({"pre_enqueue"}),
    "PrioritySort": frozenset({"queue_sort"}),
    "NodeName": frozenset({"filter"}),
    "NodeUnschedulable": frozenset({"filter"}),
    "TaintToleration": frozenset({"filter", "pre_score", "score"}),
    "NodeAffinity": frozenset({"pre_filter", "filter", "pre_score", "score"}),
    "NodePorts": frozenset({"pre_filter", "filter"}),
    "NodeResourcesFit": frozenset({"pre_filter", "filter", "pre_score", "score"}),
    "VolumeRestrictions": frozenset({"pre_filter", "filter"}),
    "NodeVolumeLimits": frozenset({"pre_filter", "filter"}),
    "VolumeBinding": frozenset({"pre_filter", "filter", "pre_score", "score", "reserve", "pre_bind"}),
    "VolumeZone": frozenset({"pre_filter", "filter"}),
    "PodTopologySpread": frozenset({"pre_filter", "filter", "pre_score", "score"}),
    "InterPodAffinity": frozenset({"pre_filter", "filter", "pre_score", "score"}),
    "DynamicResources": frozenset(
        {"pre_enqueue", "pre_filter", "filter", "post_filter", "score", "reserve", "pre_bind"}
    ),
    "DefaultPreemption": frozenset({"pre_enqueue", "post_filter"}),
    "NodeResourcesBalancedAllocation": frozenset({"pre_score", "score"}),
    "ImageLocality": frozenset({"score"}),
    "DefaultBinder": frozenset({"bind"}),
    "NodeDeclaredFeatures": frozenset({"pre_filter", "filter"}),
    "CustomScore": frozenset({"score"}),
    "CustomFilter": frozenset({"filter"}),
    "OtherSort": frozenset({"queue_sort"}),
    "OtherBinder": frozenset({"bind"}),
}
KNOWN = frozenset(IMPLEMENTS)


def implements(name: str, point: ExtensionPoint) -> bool:
    """Fake framework knowledge of which plugin implements which point."""
    return point in IMPLEMENTS[name]


class Recorder:
    """A parse_args callback: NodeResourcesFit and OtherSort have args; records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Mapping[str, Any] | None]] = []

    def __call__(self, name: str, args: Mapping[str, Any] | None) -> Any:
        self.calls.append((name, None if args is None else dict(args)))
        if name not in ("NodeResourcesFit", "OtherSort"):
            return None
        if args is None:
            return ("default", name)
        if "bad" in args:
            raise ConfigError(f"bad: invalid value {args['bad']!r}")
        if "boom" in args:
            raise TypeError("boom")
        return ("args", name, tuple(sorted(args.items())))


def parse_args(name: str, args: Mapping[str, Any] | None) -> Any:
    """A stateless parse_args like Recorder."""
    return Recorder()(name, args)


def base(**fields: Any) -> dict[str, Any]:
    """A minimal valid config plus `fields`."""
    return {"apiVersion": API, "kind": KIND, **fields}


def one_profile(**profile: Any) -> dict[str, Any]:
    """A config with one profile."""
    return base(profiles=[{"schedulerName": "s", **profile}])


def load(raw: Mapping[str, Any] | None, *, with_implements: bool = True) -> Any:
    """load_config with the fake plugins."""
    return load_config(raw, KNOWN, parse_args, implements=implements if with_implements else None, env={})


def plugins_at(profile: Profile, point: ExtensionPoint) -> list[tuple[str, int | None]]:
    """(name, weight) of the effective plugins of `point`."""
    return [(r.name, r.weight) for r in effective_plugins(profile, point, implements)]


# ---------------------------------------------------------------------------------------------------
# Validation errors

ERROR_CASES = [
    pytest.param(base(profles=[]), 'unknown field "profles"', id="unknown-top-field"),
    pytest.param({"kind": KIND}, "apiVersion: must be", id="missing-apiVersion"),
    pytest.param(
        {"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": KIND},
        'apiVersion: must be "kubescheduler.config.k8s.io/v1", got "kubescheduler.config.k8s.io/v1beta3"',
        id="old-apiVersion",
    ),
    pytest.param(
        {"apiVersion": API, "kind": "Pod"}, 'kind: must be "KubeSchedulerConfiguration"', id="bad-kind"
    ),
    pytest.param(
        base(profiles=[{"schedulerName": "s", "plugin": {}}]),
        'profiles[0]: unknown field "plugin"',
        id="unknown-profile-field",
    ),
    pytest.param(
        one_profile(plugins={"scroe": {}}), 'profiles[0].plugins: unknown field "scroe"', id="unknown-point"
    ),
    pytest.param(
        one_profile(plugins={"score": {"enable": []}}),
        'profiles[0].plugins.score: unknown field "enable"',
        id="unknown-pluginset-field",
    ),
    pytest.param(
        one_profile(plugins={"score": {"enabled": [{"name": "ImageLocality", "wieght": 2}]}}),
        'profiles[0].plugins.score.enabled[0]: unknown field "wieght"',
        id="unknown-plugin-field",
    ),
    pytest.param(
        one_profile(pluginConfig=[{"name": "NodeResourcesFit", "arg": {}}]),
        'profiles[0].pluginConfig[0]: unknown field "arg"',
        id="unknown-pluginconfig-field",
    ),
    pytest.param(
        base(leaderElection={"leaseDurationSeconds": 15}),
        'leaderElection: unknown field "leaseDurationSeconds"',
        id="unknown-leader-field",
    ),
    pytest.param(
        base(clientConnection={"QPS": 5}), 'clientConnection: unknown field "QPS"', id="unknown-client-field"
    ),
    pytest.param(
        one_profile(plugins={"score": {"enabled": [{"name": "ImageLocality"}, {"name": "Foo"}]}}),
        'profiles[0].plugins.score.enabled[1].name: unknown plugin "Foo"',
        id="unknown-plugin-enabled",
    ),
    pytest.param(
        one_profile(plugins={"multiPoint": {"enabled": [{"name": "GangScheduling"}]}}),
        'profiles[0].plugins.multiPoint.enabled[0].name: plugin "GangScheduling" is not supported by '
        "pyscheduler",
        id="upstream-plugin-not-supported",
    ),
    pytest.param(
        one_profile(plugins={"filter": {"disabled": [{"name": "Bar"}]}}),
        'profiles[0].plugins.filter.disabled[0].name: unknown plugin "Bar"',
        id="unknown-plugin-disabled",
    ),
    pytest.param(
        one_profile(plugins={"filter": {"enabled": [{"name": "*"}]}}),
        'profiles[0].plugins.filter.enabled[0].name: unknown plugin "*"',
        id="star-enabled",
    ),
    pytest.param(
        one_profile(plugins={"filter": {"enabled": [{"weight": 1}]}}),
        "profiles[0].plugins.filter.enabled[0].name: required",
        id="missing-plugin-name",
    ),
    pytest.param(
        one_profile(plugins={"filter": {"enabled": [{"name": 7}]}}),
        "profiles[0].plugins.filter.enabled[0].name: must be a string, got integer 7",
        id="plugin-name-not-string",
    ),
    pytest.param(
        one_profile(plugins={"filter": {"enabled": [{"name": "CustomFilter"}, {"name": "CustomFilter"}]}}),
        'profiles[0].plugins.filter.enabled[1].name: plugin "CustomFilter" is enabled twice',
        id="duplicate-enabled",
    ),
    pytest.param(
        one_profile(plugins={"score": {"enabled": [{"name": "CustomScore", "weight": -1}]}}),
        "profiles[0].plugins.score.enabled[0].weight: must be a positive integer, got -1",
        id="negative-weight",
    ),
    pytest.param(
        one_profile(plugins={"score": {"enabled": [{"name": "CustomScore", "weight": 2**31}]}}),
        "profiles[0].plugins.score.enabled[0].weight: out of range, got 2147483648",
        id="weight-over-int32",
    ),
    pytest.param(
        one_profile(plugins={"score": {"enabled": [{"name": "CustomScore", "weight": "3"}]}}),
        'profiles[0].plugins.score.enabled[0].weight: must be an integer, got string "3"',
        id="weight-string",
    ),
    pytest.param(
        one_profile(plugins={"score": {"enabled": [{"name": "CustomScore", "weight": True}]}}),
        "profiles[0].plugins.score.enabled[0].weight: must be an integer, got boolean true",
        id="weight-bool",
    ),
    pytest.param(
        one_profile(pluginConfig=[{"name": "Nope", "args": {}}]),
        'profiles[0].pluginConfig[0].name: unknown plugin "Nope"',
        id="pluginconfig-unknown-plugin",
    ),
    pytest.param(
        one_profile(pluginConfig=[{"name": "GangScheduling", "args": {}}]),
        'profiles[0].pluginConfig[0].name: plugin "GangScheduling" is not supported by pyscheduler',
        id="pluginconfig-upstream-plugin",
    ),
    pytest.param(
        one_profile(pluginConfig=[{"name": "NodeResourcesFit"}, {"name": "NodeResourcesFit"}]),
        'profiles[0].pluginConfig[1].name: duplicate "NodeResourcesFit"',
        id="pluginconfig-duplicate",
    ),
    pytest.param(
        one_profile(pluginConfig=[{"name": "NodeResourcesFit", "args": {"bad": "x"}}]),
        "profiles[0].pluginConfig[0].args: bad: invalid value 'x'",
        id="args-parser-error-prefixed",
    ),
    pytest.param(
        one_profile(pluginConfig=[{"name": "NodeResourcesFit", "args": {"boom": 1}}]),
        "profiles[0].pluginConfig[0].args: boom",
        id="args-parser-typeerror-wrapped",
    ),
    pytest.param(
        one_profile(pluginConfig=[{"name": "NodeResourcesFit", "args": [1]}]),
        "profiles[0].pluginConfig[0].args: must be a mapping, got list",
        id="args-not-mapping",
    ),
    pytest.param(
        one_profile(pluginConfig=[{"name": "NodeResourcesFit", "args": {"kind": "NodeAffinityArgs"}}]),
        'profiles[0].pluginConfig[0].args.kind: args for plugin "NodeResourcesFit" must be of kind '
        'NodeResourcesFitArgs, got "NodeAffinityArgs"',
        id="args-wrong-kind",
    ),
    pytest.param(
        one_profile(pluginConfig=[{"name": "NodeResourcesFit", "args": {"apiVersion": "v1"}}]),
        'profiles[0].pluginConfig[0].args.apiVersion: must be "kubescheduler.config.k8s.io/v1", got "v1"',
        id="args-wrong-apiVersion",
    ),
    pytest.param(
        base(percentageOfNodesToScore=120),
        "percentageOfNodesToScore: must be between 0 and 100, got 120",
        id="percentage-over-100",
    ),
    pytest.param(
        base(percentageOfNodesToScore=-1),
        "percentageOfNodesToScore: must be between 0 and 100, got -1",
        id="percentage-negative",
    ),
    pytest.param(
        base(percentageOfNodesToScore=50.5),
        "percentageOfNodesToScore: must be an integer, got number 50.5",
        id="percentage-float",
    ),
    pytest.param(
        one_profile(percentageOfNodesToScore=101),
        "profiles[0].percentageOfNodesToScore: must be between 0 and 100, got 101",
        id="profile-percentage-over-100",
    ),
    pytest.param(
        base(profiles=[{"schedulerName": "x"}, {"schedulerName": "x"}]),
        'profiles[1].schedulerName: duplicate "x"',
        id="duplicate-scheduler-name",
    ),
    pytest.param(
        base(profiles=[{"schedulerName": "x"}, {}]),
        "profiles[1].schedulerName: required",
        id="missing-name-with-two-profiles",
    ),
    pytest.param(
        base(profiles=[{"schedulerName": ""}]),
        "profiles[0].schedulerName: required",
        id="empty-scheduler-name",
    ),
    pytest.param(base(profiles={"a": 1}), "profiles: must be a list, got mapping", id="profiles-not-list"),
    pytest.param(
        base(profiles=["x"]), "profiles[0]: must be a mapping, got string", id="profile-not-mapping"
    ),
    pytest.param(
        base(podInitialBackoffSeconds=0),
        "podInitialBackoffSeconds: must be greater than 0, got 0",
        id="initial-backoff-zero",
    ),
    pytest.param(
        base(podInitialBackoffSeconds=5, podMaxBackoffSeconds=2),
        "podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds (5), got 2",
        id="max-backoff-below-initial",
    ),
    pytest.param(
        base(podMaxBackoffSeconds="10s"),
        'podMaxBackoffSeconds: must be an integer, got string "10s"',
        id="max-backoff-string",
    ),
    pytest.param(base(parallelism=0), "parallelism: must be greater than 0, got 0", id="parallelism-zero"),
    pytest.param(
        base(enableProfiling="yes"),
        'enableProfiling: must be true or false, got string "yes"',
        id="profiling-not-bool",
    ),
    pytest.param(
        base(delayCacheUntilActive=1),
        "delayCacheUntilActive: must be true or false, got integer 1",
        id="delay-cache-not-bool",
    ),
    pytest.param(
        base(extenders=[{"urlPrefix": "http://x"}]),
        "extenders: scheduler extenders are not supported by pyscheduler (got 1)",
        id="extenders",
    ),
    pytest.param(base(extenders="x"), "extenders: must be a list, got string", id="extenders-not-list"),
    pytest.param(
        base(leaderElection={"leaseDuration": "abc"}),
        'leaderElection.leaseDuration: invalid duration "abc"',
        id="duration-garbage",
    ),
    pytest.param(
        base(leaderElection={"leaseDuration": 15}),
        'leaderElection.leaseDuration: must be a duration string like "15s", got integer 15',
        id="duration-number",
    ),
    pytest.param(
        base(leaderElection={"retryPeriod": "-1s"}),
        "leaderElection.retryPeriod: must be greater than zero, got -1s",
        id="duration-negative",
    ),
    pytest.param(
        base(leaderElection={"leaseDuration": "10s", "renewDeadline": "10s"}),
        "leaderElection.leaseDuration: must be greater than renewDeadline (10s), got 10s",
        id="lease-not-above-renew",
    ),
    pytest.param(
        base(leaderElection={"renewDeadline": "10s", "retryPeriod": "9s"}),
        "leaderElection.renewDeadline: must be greater than retryPeriod*1.2 (10.8s), got 10s",
        id="renew-not-above-retry-jitter",
    ),
    pytest.param(
        base(leaderElection={"resourceLock": "endpointsleases"}),
        'leaderElection.resourceLock: must be "leases", got "endpointsleases"',
        id="resource-lock",
    ),
    pytest.param(
        base(leaderElection={"leaderElect": "true"}),
        'leaderElection.leaderElect: must be true or false, got string "true"',
        id="leader-elect-string",
    ),
    pytest.param(
        base(leaderElection=[]), "leaderElection: must be a mapping, got list", id="leader-not-mapping"
    ),
    pytest.param(
        base(clientConnection={"burst": -1}),
        "clientConnection.burst: must be non-negative, got -1",
        id="burst-negative",
    ),
    pytest.param(
        base(clientConnection={"qps": "fast"}),
        'clientConnection.qps: must be a number, got string "fast"',
        id="qps-string",
    ),
    pytest.param(
        base(clientConnection={"qps": float("nan")}),
        "clientConnection.qps: must be a finite number",
        id="qps-nan",
    ),
    pytest.param(
        one_profile(plugins={"queueSort": {"enabled": [{"name": "PrioritySort"}, {"name": "OtherSort"}]}}),
        "profiles[0].plugins.queueSort.enabled: only one queue sort plugin can be enabled, got 2",
        id="two-queue-sorts-explicit",
    ),
    pytest.param(
        base(
            profiles=[
                {"schedulerName": "a"},
                {"schedulerName": "b", "plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}}},
            ]
        ),
        "profiles[1].plugins.queueSort: must be the same for all profiles",
        id="queue-sort-set-differs",
    ),
    pytest.param(
        one_profile(plugins={"queueSort": {"disabled": [{"name": "*"}]}}),
        "profiles[0].plugins.queueSort: exactly one queue sort plugin required, got none",
        id="queue-sort-all-disabled",
    ),
    pytest.param(
        one_profile(plugins={"bind": {"disabled": [{"name": "*"}]}}),
        "profiles[0].plugins.bind: at least one bind plugin required, none is enabled",
        id="bind-all-disabled",
    ),
    pytest.param(
        one_profile(plugins={"multiPoint": {"disabled": [{"name": "*"}]}}),
        "profiles[0].plugins.queueSort: exactly one queue sort plugin required, got none",
        id="multipoint-all-disabled",
    ),
]


@pytest.mark.parametrize(("raw", "message"), ERROR_CASES)
@pytest.mark.parametrize("with_implements", [pytest.param(True, id="impl"), pytest.param(False, id="noimpl")])
def test_invalid_config_names_the_field(raw: dict[str, Any], message: str, with_implements: bool) -> None:
    """Every invalid config raises ConfigError whose message names the field and the problem."""
    with pytest.raises(ConfigError) as err:
        load(raw, with_implements=with_implements)
    assert message in str(err.value)


IMPLEMENTS_ERROR_CASES = [
    pytest.param(
        one_profile(plugins={"bind": {"disabled": [{"name": "DefaultBinder"}]}}),
        "profiles[0].plugins.bind: at least one bind plugin required, none is enabled",
        id="bind-disabled-by-name-leaves-none",
    ),
    pytest.param(
        one_profile(plugins={"score": {"enabled": [{"name": "NodeName"}]}}),
        'profiles[0].plugins.score.enabled[0].name: plugin "NodeName" does not implement score',
        id="plugin-not-implementing-point",
    ),
    pytest.param(
        one_profile(plugins={"multiPoint": {"enabled": [{"name": "OtherSort"}]}}),
        "profiles[0].plugins.queueSort: exactly one queue sort plugin required, got PrioritySort, OtherSort",
        id="two-queue-sorts-via-multipoint",
    ),
    pytest.param(
        one_profile(plugins={"multiPoint": {"disabled": [{"name": "DefaultBinder"}]}}),
        "profiles[0].plugins.bind: at least one bind plugin required, none is enabled",
        id="no-bind-plugin",
    ),
    pytest.param(
        base(
            profiles=[
                {"schedulerName": "a"},
                {
                    "schedulerName": "b",
                    "plugins": {
                        "multiPoint": {
                            "enabled": [{"name": "OtherSort"}],
                            "disabled": [{"name": "PrioritySort"}],
                        }
                    },
                },
            ]
        ),
        'profiles[1].plugins.queueSort: all profiles must use the same queue sort plugin, got "OtherSort" '
        'but profiles[0] uses "PrioritySort"',
        id="queue-sort-differs-via-multipoint",
    ),
    pytest.param(
        base(
            profiles=[
                {
                    "schedulerName": name,
                    "plugins": {
                        "multiPoint": {
                            "enabled": [{"name": "OtherSort"}],
                            "disabled": [{"name": "PrioritySort"}],
                        }
                    },
                    "pluginConfig": [{"name": "OtherSort", "args": {"order": order}}],
                }
                for name, order in (("a", "asc"), ("b", "desc"))
            ]
        ),
        'profiles[1].pluginConfig: args of queue sort plugin "OtherSort" must be the same for all profiles',
        id="queue-sort-args-differ",
    ),
]


@pytest.mark.parametrize(("raw", "message"), IMPLEMENTS_ERROR_CASES)
def test_framework_level_errors_need_implements(raw: dict[str, Any], message: str) -> None:
    """Checks that depend on which plugin implements what fail with `implements`, pass without it."""
    with pytest.raises(ConfigError) as err:
        load(raw)
    assert message in str(err.value)
    assert load(raw, with_implements=False).profiles


def test_default_args_error_is_prefixed() -> None:
    """An error from parse_args(name, None) names the profile and plugin."""

    def failing(name: str, args: Mapping[str, Any] | None) -> Any:
        if name == "NodeAffinity":
            raise ConfigError("addedAffinity: broken default")
        return None

    with pytest.raises(ConfigError) as err:
        load_config(None, KNOWN, failing, env={})
    assert (
        'profiles[0].pluginConfig: default args of plugin "NodeAffinity": addedAffinity: broken default'
        in str(err.value)
    )


# ---------------------------------------------------------------------------------------------------
# Defaults


def test_no_config_gives_defaults() -> None:
    """load_config(None) is one `pyscheduler` profile with the default plugins and upstream defaults."""
    cfg = load_config(None, KNOWN, parse_args, env={})
    assert [p.scheduler_name for p in cfg.profiles] == [DEFAULT_SCHEDULER_NAME] == ["pyscheduler"]
    prof = cfg.profiles[0]
    assert prof.percentage_of_nodes_to_score is None
    assert effective_multi_point(prof) == list(DEFAULT_MULTI_POINT)
    assert cfg.percentage_of_nodes_to_score == 0
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)
    assert cfg.parallelism == 16
    assert (cfg.enable_profiling, cfg.enable_contention_profiling, cfg.delay_cache_until_active) == (
        True,
        True,
        False,
    )
    le = cfg.leader_election
    assert le.leader_elect is True
    assert (le.lease_duration_seconds, le.renew_deadline_seconds, le.retry_period_seconds) == (
        15.0,
        10.0,
        2.0,
    )
    assert (le.resource_lock, le.resource_name, le.resource_namespace) == (
        "leases",
        "pyscheduler",
        "kube-system",
    )
    cc = cfg.client_connection
    assert (cc.qps, cc.burst, cc.content_type, cc.kubeconfig) == (
        50.0,
        100,
        "application/vnd.kubernetes.protobuf",
        "",
    )


def test_default_multi_point_order_and_weights() -> None:
    """The default MultiPoint list is upstream's order restricted to our plugins, with upstream weights."""
    assert [(r.name, r.weight) for r in DEFAULT_MULTI_POINT] == [
        ("SchedulingGates", None),
        ("PrioritySort", None),
        ("NodeName", None),
        ("NodeUnschedulable", None),
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodePorts", None),
        ("NodeResourcesFit", 1),
        ("VolumeRestrictions", None),
        ("NodeVolumeLimits", None),
        ("VolumeBinding", None),
        ("VolumeZone", None),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DynamicResources", 2),
        ("DefaultPreemption", None),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
        ("DefaultBinder", None),
        ("NodeDeclaredFeatures", None),
    ]


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(base(), id="no-profiles"),
        pytest.param(base(profiles=[]), id="empty-profiles"),
        pytest.param(base(profiles=None), id="null-profiles"),
        pytest.param(base(profiles=[{}]), id="profile-without-name"),
    ],
)
def test_default_profile(raw: dict[str, Any]) -> None:
    """An absent/empty profile list, or one unnamed profile, yields the `pyscheduler` default profile."""
    cfg = load(raw)
    assert [p.scheduler_name for p in cfg.profiles] == ["pyscheduler"]
    assert effective_multi_point(cfg.profiles[0]) == list(DEFAULT_MULTI_POINT)


def test_pod_namespace_env_sets_lease_namespace() -> None:
    """The lease namespace defaults to $POD_NAMESPACE; an explicit resourceNamespace wins."""
    assert (
        load_config(
            base(), KNOWN, parse_args, env={"POD_NAMESPACE": "sched"}
        ).leader_election.resource_namespace
        == "sched"
    )
    explicit = base(leaderElection={"resourceNamespace": "ns1"})
    cfg = load_config(explicit, KNOWN, parse_args, env={"POD_NAMESPACE": "sched"})
    assert cfg.leader_election.resource_namespace == "ns1"


def test_pod_namespace_read_from_process_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without `env`, POD_NAMESPACE comes from os.environ."""
    monkeypatch.setenv("POD_NAMESPACE", "from-env")
    assert load_config(base(), KNOWN, parse_args).leader_election.resource_namespace == "from-env"
    monkeypatch.delenv("POD_NAMESPACE")
    assert load_config(base(), KNOWN, parse_args).leader_election.resource_namespace == "kube-system"


def test_explicit_values_are_kept() -> None:
    """Every top-level field given explicitly is reflected in the result."""
    cfg = load(
        base(
            parallelism=4,
            percentageOfNodesToScore=30,
            podInitialBackoffSeconds=2,
            podMaxBackoffSeconds=2,
            enableProfiling=False,
            delayCacheUntilActive=True,
            extenders=[],
            leaderElection={
                "leaderElect": False,
                "leaseDuration": "1m30s",
                "renewDeadline": "1m",
                "retryPeriod": "500ms",
                "resourceName": "mine",
            },
            clientConnection={
                "qps": 20.5,
                "burst": 30,
                "kubeconfig": "/k",
                "contentType": "application/json",
            },
            profiles=[{"schedulerName": "a", "percentageOfNodesToScore": 0}, {"schedulerName": "b"}],
        )
    )
    assert (cfg.parallelism, cfg.percentage_of_nodes_to_score) == (4, 30)
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2, 2)
    assert (cfg.enable_profiling, cfg.enable_contention_profiling, cfg.delay_cache_until_active) == (
        False,
        False,
        True,
    )
    le = cfg.leader_election
    assert (le.leader_elect, le.lease_duration_seconds, le.renew_deadline_seconds) == (False, 90.0, 60.0)
    assert (le.retry_period_seconds, le.resource_name) == (0.5, "mine")
    cc = cfg.client_connection
    assert (cc.qps, cc.burst, cc.kubeconfig, cc.content_type) == (20.5, 30, "/k", "application/json")
    assert [(p.scheduler_name, p.percentage_of_nodes_to_score) for p in cfg.profiles] == [
        ("a", 0),
        ("b", None),
    ]
    assert cfg.profile("b") is cfg.profiles[1]
    assert cfg.profile("c") is None


@pytest.mark.parametrize(
    ("client", "qps", "burst"),
    [
        pytest.param({"qps": 0, "burst": 0}, 50.0, 100, id="zero-means-default"),
        pytest.param({"qps": -1}, -1.0, 100, id="negative-qps-means-unlimited"),
        pytest.param({"qps": 5}, 5.0, 100, id="int-qps"),
    ],
)
def test_client_connection_defaults(client: dict[str, Any], qps: float, burst: int) -> None:
    """qps/burst 0 take the scheduler defaults (50/100); a negative qps is kept (no rate limit)."""
    cc = load(base(clientConnection=client)).client_connection
    assert (cc.qps, cc.burst) == (qps, burst)


def test_zero_durations_take_defaults_and_disabled_election_skips_checks() -> None:
    """A zero duration means the default; with leaderElect false the lease checks are skipped."""
    le = load(
        base(leaderElection={"leaseDuration": "0", "renewDeadline": "0s", "retryPeriod": "0ms"})
    ).leader_election
    assert (le.lease_duration_seconds, le.renew_deadline_seconds, le.retry_period_seconds) == (
        15.0,
        10.0,
        2.0,
    )
    off = load(
        base(
            leaderElection={
                "leaderElect": False,
                "leaseDuration": "1s",
                "renewDeadline": "5s",
                "resourceLock": "x",
            }
        )
    ).leader_election
    assert (off.leader_elect, off.lease_duration_seconds, off.resource_lock) == (False, 1.0, "x")


def test_contention_profiling_follows_profiling_unless_set() -> None:
    """enableContentionProfiling defaults to enableProfiling; an explicit value wins."""
    assert load(base(enableProfiling=False)).enable_contention_profiling is False
    assert (
        load(base(enableProfiling=False, enableContentionProfiling=True)).enable_contention_profiling is True
    )
    assert load(base(enableContentionProfiling=False)).enable_contention_profiling is False


def test_null_values_mean_unset() -> None:
    """A null field is treated as absent (its default applies)."""
    cfg = load(base(parallelism=None, leaderElection=None, clientConnection={"qps": None}, extenders=None))
    assert (cfg.parallelism, cfg.leader_election.leader_elect, cfg.client_connection.qps) == (16, True, 50.0)


# ---------------------------------------------------------------------------------------------------
# Plugin merge semantics

DEFAULT_EXPANSION: dict[str, list[tuple[str, int | None]]] = {
    "pre_enqueue": [("SchedulingGates", None), ("DynamicResources", None), ("DefaultPreemption", None)],
    "queue_sort": [("PrioritySort", None)],
    "pre_filter": [
        ("NodeAffinity", None),
        ("NodePorts", None),
        ("NodeResourcesFit", None),
        ("VolumeRestrictions", None),
        ("NodeVolumeLimits", None),
        ("VolumeBinding", None),
        ("VolumeZone", None),
        ("PodTopologySpread", None),
        ("InterPodAffinity", None),
        ("DynamicResources", None),
        ("NodeDeclaredFeatures", None),
    ],
    "filter": [
        ("NodeName", None),
        ("NodeUnschedulable", None),
        ("TaintToleration", None),
        ("NodeAffinity", None),
        ("NodePorts", None),
        ("NodeResourcesFit", None),
        ("VolumeRestrictions", None),
        ("NodeVolumeLimits", None),
        ("VolumeBinding", None),
        ("VolumeZone", None),
        ("PodTopologySpread", None),
        ("InterPodAffinity", None),
        ("DynamicResources", None),
        ("NodeDeclaredFeatures", None),
    ],
    "post_filter": [("DynamicResources", None), ("DefaultPreemption", None)],
    "pre_score": [
        ("TaintToleration", None),
        ("NodeAffinity", None),
        ("NodeResourcesFit", None),
        ("VolumeBinding", None),
        ("PodTopologySpread", None),
        ("InterPodAffinity", None),
        ("NodeResourcesBalancedAllocation", None),
    ],
    "score": [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DynamicResources", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ],
    "reserve": [("VolumeBinding", None), ("DynamicResources", None)],
    "permit": [],
    "pre_bind": [("VolumeBinding", None), ("DynamicResources", None)],
    "bind": [("DefaultBinder", None)],
    "post_bind": [],
}


@pytest.mark.parametrize("point", [pytest.param(p, id=p) for p in EXTENSION_POINTS])
def test_default_expansion_per_point(point: ExtensionPoint) -> None:
    """The default MultiPoint expands to upstream's per-point lists (ExpandedPluginsV1, our plugins)."""
    prof = load(base()).profiles[0]
    assert plugins_at(prof, point) == DEFAULT_EXPANSION[point]


SCORE = "score"
MERGE_CASES = [
    pytest.param(
        {"multiPoint": {"enabled": [{"name": "NodeAffinity", "weight": 5}]}},
        SCORE,
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 5),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ],
        id="multipoint-replaces-default-in-place-with-weight",
    ),
    pytest.param(
        {"multiPoint": {"enabled": [{"name": "TaintToleration"}]}},
        SCORE,
        [
            ("TaintToleration", 1),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ],
        id="multipoint-replacement-without-weight-scores-1",
    ),
    pytest.param(
        {"multiPoint": {"enabled": [{"name": "CustomScore", "weight": 4}]}},
        SCORE,
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
            ("CustomScore", 4),
        ],
        id="multipoint-new-plugin-appended",
    ),
    pytest.param(
        {"multiPoint": {"disabled": [{"name": "NodeAffinity"}]}},
        "pre_filter",
        [
            ("NodePorts", None),
            ("NodeResourcesFit", None),
            ("VolumeRestrictions", None),
            ("NodeVolumeLimits", None),
            ("VolumeBinding", None),
            ("VolumeZone", None),
            ("PodTopologySpread", None),
            ("InterPodAffinity", None),
            ("DynamicResources", None),
            ("NodeDeclaredFeatures", None),
        ],
        id="multipoint-disabled-removes-everywhere",
    ),
    pytest.param(
        {
            "multiPoint": {
                "disabled": [{"name": "*"}],
                "enabled": [
                    {"name": "PrioritySort"},
                    {"name": "DefaultBinder"},
                    {"name": "ImageLocality", "weight": 9},
                ],
            }
        },
        SCORE,
        [("ImageLocality", 9)],
        id="multipoint-disable-all-keeps-only-user",
    ),
    pytest.param(
        {"score": {"enabled": [{"name": "ImageLocality", "weight": 7}]}},
        SCORE,
        [
            ("ImageLocality", 7),
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
        ],
        id="specific-point-overrides-multipoint-and-goes-first",
    ),
    pytest.param(
        {"score": {"enabled": [{"name": "NodeAffinity"}]}},
        SCORE,
        [
            ("NodeAffinity", 1),
            ("TaintToleration", 3),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ],
        id="specific-override-without-weight-scores-1",
    ),
    pytest.param(
        {"score": {"enabled": [{"name": "CustomScore", "weight": 6}]}},
        SCORE,
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
            ("CustomScore", 6),
        ],
        id="specific-new-plugin-after-multipoint",
    ),
    pytest.param(
        {
            "score": {
                "disabled": [{"name": "*"}],
                "enabled": [{"name": "CustomScore"}, {"name": "ImageLocality"}],
            }
        },
        SCORE,
        [("CustomScore", 1), ("ImageLocality", 1)],
        id="specific-disable-all-keeps-only-user-order",
    ),
    pytest.param(
        {"score": {"disabled": [{"name": "TaintToleration"}]}},
        SCORE,
        [
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
        ],
        id="specific-disable-removes-from-that-point",
    ),
    pytest.param(
        {"score": {"disabled": [{"name": "TaintToleration"}]}},
        "filter",
        DEFAULT_EXPANSION["filter"],
        id="specific-disable-keeps-other-points",
    ),
    pytest.param(
        {
            "score": {
                "disabled": [{"name": "NodeAffinity"}],
                "enabled": [{"name": "NodeAffinity", "weight": 8}],
            }
        },
        SCORE,
        [
            ("TaintToleration", 3),
            ("NodeResourcesFit", 1),
            ("VolumeBinding", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2),
            ("DynamicResources", 2),
            ("NodeResourcesBalancedAllocation", 1),
            ("ImageLocality", 1),
            ("NodeAffinity", 8),
        ],
        id="disabled-and-reenabled-moves-to-end",
    ),
    pytest.param(
        {"filter": {"enabled": [{"name": "CustomFilter"}, {"name": "NodePorts"}]}},
        "filter",
        [
            ("NodePorts", None),
            ("NodeName", None),
            ("NodeUnschedulable", None),
            ("TaintToleration", None),
            ("NodeAffinity", None),
            ("NodeResourcesFit", None),
            ("VolumeRestrictions", None),
            ("NodeVolumeLimits", None),
            ("VolumeBinding", None),
            ("VolumeZone", None),
            ("PodTopologySpread", None),
            ("InterPodAffinity", None),
            ("DynamicResources", None),
            ("NodeDeclaredFeatures", None),
            ("CustomFilter", None),
        ],
        id="override-first-then-multipoint-then-new",
    ),
    pytest.param(
        {"filter": {"disabled": [{"name": "GangScheduling"}]}},
        "filter",
        DEFAULT_EXPANSION["filter"],
        id="disabling-unsupported-upstream-plugin-is-noop",
    ),
    pytest.param(
        {"queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "OtherSort"}]}},
        "queue_sort",
        [("OtherSort", None)],
        id="replace-queue-sort",
    ),
    pytest.param(
        {"bind": {"enabled": [{"name": "OtherBinder", "weight": 3}]}},
        "bind",
        [("DefaultBinder", None), ("OtherBinder", None)],
        id="weights-dropped-outside-score",
    ),
]


@pytest.mark.parametrize(("plugins", "point", "expected"), MERGE_CASES)
def test_merge_semantics(
    plugins: dict[str, Any], point: ExtensionPoint, expected: list[tuple[str, int | None]]
) -> None:
    """Upstream merge: specific point > user MultiPoint > default MultiPoint, in upstream order."""
    prof = load(one_profile(plugins=plugins)).profiles[0]
    assert plugins_at(prof, point) == expected


def test_effective_point_and_multi_point_parts() -> None:
    """effective_point returns the user's set split into enabled, disabled names and the '*' flag."""
    prof = load(
        one_profile(
            plugins={
                "score": {
                    "enabled": [{"name": "CustomScore", "weight": 2}],
                    "disabled": [{"name": "*"}, {"name": "ImageLocality"}],
                },
                "multiPoint": {"disabled": [{"name": "NodePorts"}]},
            }
        )
    ).profiles[0]
    assert effective_point(prof, "score") == ([PluginRef("CustomScore", 2)], {"ImageLocality"}, True)
    assert effective_point(prof, "filter") == ([], set(), False)
    assert [r.name for r in effective_multi_point(prof)] == [
        r.name for r in DEFAULT_MULTI_POINT if r.name != "NodePorts"
    ]
    assert prof.plugins.multi_point.disabled == ("NodePorts",)
    with pytest.raises(ValueError, match="not a specific extension point"):
        effective_point(prof, "multi_point")  # type: ignore[arg-type]


def test_effective_plugins_rejects_plugin_not_implementing_point() -> None:
    """effective_plugins raises when a plugin explicitly enabled at a point does not implement it."""
    prof = load(one_profile(plugins={"score": {"enabled": [{"name": "NodeName"}]}}), with_implements=False)
    with pytest.raises(ConfigError, match=r'plugins\.score: plugin "NodeName" does not implement score'):
        effective_plugins(prof.profiles[0], "score", implements)


@pytest.mark.parametrize(
    ("default", "custom", "expected"),
    [
        pytest.param(
            PluginSet((PluginRef("A"), PluginRef("B", 2), PluginRef("C"))),
            PluginSet((PluginRef("D"), PluginRef("B", 5)), ("C",)),
            PluginSet((PluginRef("A"), PluginRef("B", 5), PluginRef("D")), ("C",)),
            id="replace-in-place-append-disable",
        ),
        pytest.param(
            PluginSet((PluginRef("A"), PluginRef("B"))),
            PluginSet((PluginRef("B", 4),), ("*",)),
            PluginSet((PluginRef("B", 4),), ("*",)),
            id="star-drops-defaults",
        ),
        pytest.param(
            PluginSet((PluginRef("A"),), ("X",)),
            PluginSet((), ("Y",)),
            PluginSet((PluginRef("A"),), ("Y", "X")),
            id="disabled-lists-concatenated",
        ),
    ],
)
def test_merge_plugin_set(default: PluginSet, custom: PluginSet, expected: PluginSet) -> None:
    """merge_plugin_set reproduces upstream mergePluginSet."""
    assert merge_plugin_set(default, custom) == expected


def test_weight_zero_means_unset_and_disabled_weight_is_ignored() -> None:
    """weight 0 is stored as None (upstream: 0 means 1); a weight on a disabled entry is accepted."""
    prof = load(
        one_profile(
            plugins={
                "score": {"enabled": [{"name": "CustomScore", "weight": 0}]},
                "filter": {"disabled": [{"name": "NodePorts", "weight": 3}]},
            }
        )
    ).profiles[0]
    assert prof.plugins.score.enabled == (PluginRef("CustomScore", None),)
    assert ("CustomScore", 1) in plugins_at(prof, "score")
    assert ("NodePorts", None) not in plugins_at(prof, "filter")


def test_profiles_are_independent() -> None:
    """Plugin settings of one profile do not leak into another."""
    cfg = load(
        base(
            profiles=[
                {"schedulerName": "a", "plugins": {"score": {"disabled": [{"name": "*"}]}}},
                {"schedulerName": "b"},
            ]
        )
    )
    assert plugins_at(cfg.profiles[0], "score") == []
    assert plugins_at(cfg.profiles[1], "score") == DEFAULT_EXPANSION["score"]


# ---------------------------------------------------------------------------------------------------
# pluginConfig


def test_plugin_config_parsed_and_defaults_filled() -> None:
    """Explicit args are parsed (apiVersion/kind stripped); enabled plugins without args get defaults."""
    rec = Recorder()
    raw = one_profile(
        plugins={"multiPoint": {"enabled": [{"name": "OtherSort"}], "disabled": [{"name": "PrioritySort"}]}},
        pluginConfig=[
            {
                "name": "NodeResourcesFit",
                "args": {"apiVersion": API, "kind": "NodeResourcesFitArgs", "ignoredResources": ["x"]},
            },
            {"name": "CustomFilter"},
        ],
    )
    prof = load_config(raw, KNOWN, rec, implements=implements, env={}).profiles[0]
    assert prof.plugin_config["NodeResourcesFit"] == (
        "args",
        "NodeResourcesFit",
        (("ignoredResources", ["x"]),),
    )
    assert prof.plugin_config["OtherSort"] == ("default", "OtherSort")
    assert set(prof.plugin_config) == {"NodeResourcesFit", "OtherSort"}  # None results are not stored
    assert rec.calls[:2] == [
        ("NodeResourcesFit", {"ignoredResources": ["x"]}),
        ("CustomFilter", None),
    ]
    defaults_called = sorted(name for name, args in rec.calls[2:] if args is None)
    expected = sorted(
        {r.name for r in DEFAULT_MULTI_POINT} - {"PrioritySort", "NodeResourcesFit"} | {"OtherSort"}
    )
    assert defaults_called == expected


def test_disabled_multipoint_plugin_gets_no_default_args() -> None:
    """A plugin removed from MultiPoint is not asked for default args; one disabled at one point is."""
    rec = Recorder()
    raw = one_profile(
        plugins={
            "multiPoint": {"disabled": [{"name": "NodeResourcesFit"}]},
            "filter": {"disabled": [{"name": "NodePorts"}]},
        }
    )
    prof = load_config(raw, KNOWN, rec, env={}).profiles[0]
    names = [name for name, _ in rec.calls]
    assert "NodeResourcesFit" not in names
    assert "NodePorts" in names
    assert "NodeResourcesFit" not in prof.plugin_config


def test_plugin_config_for_non_enabled_known_plugin_is_parsed() -> None:
    """pluginConfig of a known plugin that is not enabled is still parsed and validated (like upstream)."""
    raw = one_profile(pluginConfig=[{"name": "OtherSort", "args": {"order": "x"}}])
    prof = load(raw).profiles[0]
    assert prof.plugin_config["OtherSort"] == ("args", "OtherSort", (("order", "x"),))


# ---------------------------------------------------------------------------------------------------
# Durations


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("15s", 15.0, id="seconds"),
        pytest.param("1m30s", 90.0, id="minutes-seconds"),
        pytest.param("500ms", 0.5, id="millis"),
        pytest.param("1h", 3600.0, id="hour"),
        pytest.param("1.5h", 5400.0, id="fractional-hour"),
        pytest.param("1h2m3.5s", 3723.5, id="compound"),
        pytest.param(".5s", 0.5, id="leading-dot"),
        pytest.param("2us", 2e-6, id="micros"),
        pytest.param("3µs", 3e-6, id="micro-sign"),
        pytest.param("10ns", 1e-8, id="nanos"),
        pytest.param("-2s", -2.0, id="negative"),
        pytest.param("+3s", 3.0, id="plus"),
        pytest.param("0", 0.0, id="bare-zero"),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    """Go duration strings parse to seconds."""
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("15", id="missing-unit"),
        pytest.param("s", id="missing-number"),
        pytest.param("1sec", id="unknown-unit"),
        pytest.param("1 s", id="space"),
        pytest.param("1.2.3s", id="two-dots"),
        pytest.param("-", id="sign-only"),
        pytest.param("1s2", id="trailing-number"),
        pytest.param("1d", id="days"),
    ],
)
def test_parse_duration_rejects(text: str) -> None:
    """Strings Go's time.ParseDuration rejects raise ValueError naming them."""
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


# ---------------------------------------------------------------------------------------------------
# Files

GOOD_YAML = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 40
leaderElection:
  leaseDuration: 30s
  renewDeadline: 20s
profiles:
  - schedulerName: fast
    plugins:
      score:
        enabled:
          - name: ImageLocality
            weight: 5
"""


def test_load_config_file(tmp_path: Path) -> None:
    """A valid YAML file loads with its values."""
    path = tmp_path / "c.yaml"
    path.write_text(GOOD_YAML)
    cfg = load_config_file(path, KNOWN, parse_args, implements=implements, env={})
    assert cfg.percentage_of_nodes_to_score == 40
    assert cfg.leader_election.lease_duration_seconds == 30.0
    assert cfg.profiles[0].scheduler_name == "fast"
    assert plugins_at(cfg.profiles[0], "score")[0] == ("ImageLocality", 5)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("apiVersion: [unclosed\n", "invalid YAML", id="syntax-error"),
        pytest.param("- a\n- b\n", "must contain a KubeSchedulerConfiguration mapping, got list", id="list"),
        pytest.param("", "must contain a KubeSchedulerConfiguration mapping, got null", id="empty"),
        pytest.param("just text\n", "mapping, got string", id="scalar"),
        pytest.param(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: 1\n"
            "parallelism: 2\n",
            'found duplicate key "parallelism"',
            id="duplicate-key",
        ),
    ],
)
def test_bad_file_names_the_file(tmp_path: Path, content: str, message: str) -> None:
    """A file that is not a YAML mapping raises ConfigError naming the file."""
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError) as err:
        load_config_file(path, KNOWN, parse_args, env={})
    assert str(err.value).startswith(f"{path}: ")
    assert message in str(err.value)


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    """A file that cannot be read raises ConfigError naming it."""
    path = tmp_path / "absent.yaml"
    with pytest.raises(ConfigError, match=r"absent\.yaml: cannot read config file"):
        load_config_file(path, KNOWN, parse_args, env={})


def test_non_utf8_file_names_the_file(tmp_path: Path) -> None:
    """A file that is not UTF-8 raises ConfigError naming it."""
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match=r"bin\.yaml: not UTF-8 text \(invalid byte at offset 0\)"):
        load_config_file(path, KNOWN, parse_args, env={})


def test_field_error_in_file_is_reported(tmp_path: Path) -> None:
    """A validation error inside a file still names the field."""
    path = tmp_path / "c.yaml"
    path.write_text(GOOD_YAML.replace("percentageOfNodesToScore: 40", "percentageOfNodesToScore: 120"))
    with pytest.raises(ConfigError, match=r"percentageOfNodesToScore: must be between 0 and 100, got 120"):
        load_config_file(path, KNOWN, parse_args, env={})


def test_input_is_not_mutated() -> None:
    """load_config does not modify the raw mapping it is given."""
    raw = one_profile(pluginConfig=[{"name": "NodeResourcesFit", "args": {"kind": "NodeResourcesFitArgs"}}])
    snapshot = copy.deepcopy(raw)
    load(raw)
    assert raw == snapshot
