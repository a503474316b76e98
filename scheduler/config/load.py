"""Load, default and validate a `KubeSchedulerConfiguration` (kubescheduler.config.k8s.io/v1).

Decoding is strict like upstream's: an unknown field at any level, a value of the wrong type, an unknown
plugin or an out-of-range value raises `ConfigError` whose message starts with the field path, e.g.
`profiles[0].plugins.score.enabled[1].name: unknown plugin "Foo"`. The first problem found is reported.

Plugin lists are kept the way upstream keeps them after defaulting (`mergePlugins`): the default
MultiPoint list merged with the user's MultiPoint, and each specific point as the user wrote it. The
framework turns that into per-point plugin lists with `effective_plugins` (or, equivalently, by combining
`effective_multi_point` and `effective_point` as their docstrings describe).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from scheduler.config.decode import child, json_quote, json_type
from scheduler.config.defaults import (
    API_VERSION,
    DEFAULT_LEASE_NAME,
    DEFAULT_LEASE_NAMESPACE,
    DEFAULT_MULTI_POINT,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    UPSTREAM_PLUGIN_NAMES,
)
from scheduler.config.documents import DepthCheckedLoader, DocumentError, bounded, decode_text
from scheduler.config.errors import ConfigError
from scheduler.config.types import (
    EXTENSION_POINTS,
    POINT_YAML_KEYS,
    ClientConnection,
    ExtensionPoint,
    LeaderElection,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
    SchedulerConfiguration,
)

__all__ = [
    "ArgsParser",
    "Implements",
    "effective_multi_point",
    "effective_plugins",
    "effective_point",
    "load_config",
    "load_config_file",
    "merge_plugin_set",
    "parse_duration",
]

ArgsParser = Callable[[str, Mapping[str, Any] | None], Any]
"""`parse_args(plugin_name, args)`: returns the plugin's parsed args object (None if it takes none).

`args` is the `pluginConfig[j].args` mapping without `apiVersion`/`kind`, or None for "not configured:
give me the defaults". Raises ConfigError (message relative to `args`, e.g. `scoringStrategy.type: ...`).
"""

Implements = Callable[[str, ExtensionPoint], bool]
"""`implements(plugin_name, point)`: whether the named plugin implements that extension point."""

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
MAX_PLUGIN_WEIGHT = INT32_MAX
"""Upstream's Plugin.weight is an int32 with no further bound; 0 (or absent) means 1."""

LEADER_ELECTION_JITTER_FACTOR = 1.2
"""client-go leaderelection.JitterFactor: renewDeadline must exceed retryPeriod * 1.2."""

_TOP_FIELDS = frozenset(
    {
        "apiVersion",
        "kind",
        "parallelism",
        "leaderElection",
        "clientConnection",
        "enableProfiling",
        "enableContentionProfiling",
        "percentageOfNodesToScore",
        "podInitialBackoffSeconds",
        "podMaxBackoffSeconds",
        "profiles",
        "extenders",
        "delayCacheUntilActive",
    }
)
_LEADER_FIELDS = frozenset(
    {
        "leaderElect",
        "leaseDuration",
        "renewDeadline",
        "retryPeriod",
        "resourceLock",
        "resourceName",
        "resourceNamespace",
    }
)
_CLIENT_FIELDS = frozenset({"kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"})
_PROFILE_FIELDS = frozenset({"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"})
_PLUGIN_SET_FIELDS = frozenset({"enabled", "disabled"})
_PLUGIN_FIELDS = frozenset({"name", "weight"})
_PLUGIN_CONFIG_FIELDS = frozenset({"name", "args"})
_YAML_TO_POINT: Mapping[str, str] = MappingProxyType({v: k for k, v in POINT_YAML_KEYS.items()})

_MISSING: Any = object()
MAX_CONFIG_BYTES = 4 * 1024 * 1024  # a configuration is a few KiB; refuse what cannot be one
MAX_CONFIG_VALUES = 200_000  # values after following YAML aliases
_REQUIRED_POINTS: tuple[tuple[ExtensionPoint, str], ...] = (
    ("queue_sort", "exactly one queue sort plugin required, got none"),
    ("bind", "at least one bind plugin required, none is enabled"),
)


# ---------------------------------------------------------------------------------------------------
# Effective plugin lists


def effective_multi_point(profile: Profile) -> list[PluginRef]:
    """The profile's MultiPoint list: the default MultiPoint merged with the user's (upstream order).

    Merge (upstream `mergePluginSet`): unless the user's `multiPoint.disabled` has `"*"`, each default
    not named in `multiPoint.disabled` is kept in default order, replaced in place by the user's entry of
    the same name (taking the user's weight, possibly None); then the user's other entries are appended in
    the user's order.

    How the framework expands it, for each specific point P (what `effective_plugins` does):
    take `(enabled, disabled, disable_all) = effective_point(profile, P)`;
    if `disable_all`, P's plugins are exactly `enabled`; otherwise walk this list and skip plugins that do
    not implement P or whose name is in `disabled`; of the rest, those also in `enabled` are "overridden"
    (the specific entry wins, including its weight) and the others are "multi-point". P's final order is:
    the overridden plugins in `enabled` order, then the multi-point plugins in this list's order, then
    the remaining `enabled` plugins in `enabled` order. A plugin in `enabled` that does not implement P
    is a configuration error. Score weights: None means 1; weights at other points are ignored.
    """
    return list(profile.plugins.multi_point.enabled)


def effective_point(profile: Profile, point: ExtensionPoint) -> tuple[list[PluginRef], set[str], bool]:
    """The user's configuration of one specific point: `(enabled, disabled names, disable_all)`.

    `enabled` is in the user's order with the user's weights; `disabled` never contains `"*"`;
    `disable_all` is True when `disabled: [{name: "*"}]` was given (MultiPoint is then not expanded
    into this point at all). See `effective_multi_point` for how to combine them.
    """
    if point not in EXTENSION_POINTS:
        raise ValueError(f"not a specific extension point: {point!r}")
    ps = profile.plugins.point(point)
    disabled = set(ps.disabled)
    disable_all = "*" in disabled
    disabled.discard("*")
    return list(ps.enabled), disabled, disable_all


def effective_plugins(profile: Profile, point: ExtensionPoint, implements: Implements) -> list[PluginRef]:
    """The final, ordered plugins of `point` (upstream `expandMultiPointPlugins` + score weights).

    Implements the combination described in `effective_multi_point`. At `score` every weight is
    resolved (None becomes 1); at other points weights are dropped (None). Raises ConfigError when a
    plugin explicitly enabled at `point` does not implement it.
    """
    enabled, disabled, disable_all = effective_point(profile, point)
    for ref in enabled:
        if not implements(ref.name, point):
            raise ConfigError(
                f"plugins.{POINT_YAML_KEYS[point]}: plugin {_q(ref.name)} does not implement {point}"
            )
    if disable_all:
        result = enabled
    else:
        specific = {ref.name for ref in enabled}
        overridden: set[str] = set()
        multi: list[PluginRef] = []
        for ref in effective_multi_point(profile):
            if not implements(ref.name, point) or ref.name in disabled:
                continue
            if ref.name in specific:
                overridden.add(ref.name)
            elif all(m.name != ref.name for m in multi):
                multi.append(ref)
        result = (
            [r for r in enabled if r.name in overridden]
            + multi
            + [r for r in enabled if r.name not in overridden]
        )
    if point == "score":
        return [PluginRef(r.name, r.weight or 1) for r in result]
    return [PluginRef(r.name) for r in result]


def upstream_runs(profile: Profile, name: str, points: tuple[ExtensionPoint, ...] = ("pre_filter", "filter")) -> bool:
    """Whether kube-scheduler, given this profile, would run default plugin `name` at any of `points`.

    For default plugins pyscheduler may lack (the fail-closed guard asks): upstream runs it unless the
    profile disables it (by name or `"*"`) both at multiPoint and at each of the points, or re-enables it.
    """
    multi = profile.plugins.multi_point
    in_multi = not ("*" in multi.disabled or name in multi.disabled) or any(r.name == name for r in multi.enabled)
    for point in points:
        ps = profile.plugins.point(point)
        if any(r.name == name for r in ps.enabled):
            return True
        if in_multi and "*" not in ps.disabled and name not in ps.disabled:
            return True
    return False


# ---------------------------------------------------------------------------------------------------
# Loading


def load_config_file(
    path: str | os.PathLike[str],
    known_plugins: Collection[str],
    parse_args: ArgsParser,
    *,
    implements: Implements | None = None,
    env: Mapping[str, str] | None = None,
) -> SchedulerConfiguration:
    """Read a YAML `KubeSchedulerConfiguration` file and `load_config` it.

    An unreadable file, a YAML syntax error, a duplicate key (strict decoding) or a document that is not a
    mapping raises ConfigError naming the file.
    """
    p = Path(path)
    try:
        if p.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{p}: config file is larger than {MAX_CONFIG_BYTES} bytes")
        text = decode_text(p.read_bytes(), str(p))
    except OSError as e:
        raise ConfigError(f"{p}: cannot read config file: {e.strerror or e}") from e
    except DocumentError as e:
        raise ConfigError(f"{e}") from e
    loader: _StrictSafeLoader | None = None
    try:
        loader = _StrictSafeLoader(text)  # the reader checks characters here already: inside the try
        loader.name = str(p)  # YAML error marks name the file instead of "<unicode string>"
        raw = bounded(loader.get_single_data(), str(p), MAX_CONFIG_VALUES)
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: invalid YAML: {e}") from e
    except DocumentError as e:
        raise ConfigError(str(e)) from e
    except (RecursionError, ValueError) as e:  # e.g. an integer of more than 4300 digits
        raise ConfigError(f"{p}: invalid YAML: {e}") from e
    finally:
        if loader is not None:
            loader.dispose()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{p}: must contain a KubeSchedulerConfiguration mapping, got {_type_name(raw)}")
    return load_config(raw, known_plugins, parse_args, implements=implements, env=env)


def load_config(
    raw: Mapping[str, Any] | None,
    known_plugins: Collection[str],
    parse_args: ArgsParser,
    *,
    implements: Implements | None = None,
    env: Mapping[str, str] | None = None,
) -> SchedulerConfiguration:
    """Decode, default and validate a `KubeSchedulerConfiguration` (None: no `--config`, all defaults).

    `known_plugins`: names of the plugins pyscheduler can run. `parse_args(name, args)`: see `ArgsParser`;
    it is called for every `pluginConfig` entry and, with None, for every enabled plugin without one
    (results that are None are not stored). `implements`, when given, enables the checks that need to know
    which plugin implements which point (as upstream's framework does at startup): an explicitly enabled
    plugin must implement its point, each profile has exactly one queue sort and at least one bind plugin,
    and all profiles share the same queue sort plugin and args. `env` (default `os.environ`) supplies
    POD_NAMESPACE, the default lease namespace.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    known = frozenset(known_plugins)
    if raw is None:
        raw = {"apiVersion": API_VERSION, "kind": KIND}
    obj = _mapping(raw, "")
    _check_fields(obj, "", _TOP_FIELDS)

    api_version = obj.get("apiVersion")
    if api_version != API_VERSION:
        what = "missing" if api_version is None else f"got {_q(api_version)}"
        raise ConfigError(f"apiVersion: must be {_q(API_VERSION)}, {what}")
    kind = obj.get("kind")
    if kind != KIND:
        what = "missing" if kind is None else f"got {_q(kind)}"
        raise ConfigError(f"kind: must be {_q(KIND)}, {what}")

    parallelism = _int(obj, "parallelism", "", 16, hi=INT32_MAX)
    if parallelism <= 0:
        raise ConfigError(f"parallelism: must be greater than 0, got {parallelism}")
    percentage = _percentage(obj, "percentageOfNodesToScore", "")
    initial = _int(obj, "podInitialBackoffSeconds", "", 1, hi=INT64_MAX)
    if initial <= 0:
        raise ConfigError(f"podInitialBackoffSeconds: must be greater than 0, got {initial}")
    maximum = _int(obj, "podMaxBackoffSeconds", "", 10, hi=INT64_MAX)
    if maximum < initial:
        raise ConfigError(
            f"podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds "
            f"({initial}), got {maximum}"
        )
    enable_profiling = _bool(obj, "enableProfiling", "", True)
    enable_contention = _bool(obj, "enableContentionProfiling", "", enable_profiling)
    delay_cache = _bool(obj, "delayCacheUntilActive", "", False)

    extenders = _list(obj, "extenders", "")
    if extenders:
        raise ConfigError(
            f"extenders: scheduler extenders are not supported by pyscheduler (got {len(extenders)})"
        )

    leader = _leader_election(obj.get("leaderElection"), environ)
    client = _client_connection(obj.get("clientConnection"))

    raw_profiles = _list(obj, "profiles", "")
    if not raw_profiles:
        raw_profiles = [{}]
    profiles = tuple(
        _profile(rp, i, len(raw_profiles), known, parse_args) for i, rp in enumerate(raw_profiles)
    )
    seen_names: dict[str, int] = {}
    for i, prof in enumerate(profiles):
        if prof.scheduler_name in seen_names:
            raise ConfigError(
                f"profiles[{i}].schedulerName: duplicate {_q(prof.scheduler_name)} "
                f"(also profiles[{seen_names[prof.scheduler_name]}].schedulerName)"
            )
        seen_names[prof.scheduler_name] = i
    _check_queue_sort_and_bind(profiles, implements)

    return SchedulerConfiguration(
        profiles=profiles,
        percentage_of_nodes_to_score=0 if percentage is None else percentage,
        pod_initial_backoff_seconds=initial,
        pod_max_backoff_seconds=maximum,
        parallelism=parallelism,
        leader_election=leader,
        client_connection=client,
        enable_profiling=enable_profiling,
        enable_contention_profiling=enable_contention,
        delay_cache_until_active=delay_cache,
    )


# ---------------------------------------------------------------------------------------------------
# Sections


def _leader_election(raw: Any, environ: Mapping[str, str]) -> LeaderElection:
    path = "leaderElection"
    obj = _mapping({} if raw is None else raw, path)
    _check_fields(obj, path, _LEADER_FIELDS)
    elect = _bool(obj, "leaderElect", path, True)
    # Upstream RecommendedDefaultLeaderElectionConfiguration: a zero duration means "use the default".
    lease = _duration(obj, "leaseDuration", path) or 15.0
    renew = _duration(obj, "renewDeadline", path) or 10.0
    retry = _duration(obj, "retryPeriod", path) or 2.0
    lock = _str(obj, "resourceLock", path, "") or "leases"
    name = _str(obj, "resourceName", path, "") or DEFAULT_LEASE_NAME
    namespace = (
        _str(obj, "resourceNamespace", path, "") or environ.get("POD_NAMESPACE") or DEFAULT_LEASE_NAMESPACE
    )
    if elect:
        for key, value in (("leaseDuration", lease), ("renewDeadline", renew), ("retryPeriod", retry)):
            if value <= 0:
                raise ConfigError(f"{path}.{key}: must be greater than zero, got {_fmt_seconds(value)}")
        if lease <= renew:
            raise ConfigError(
                f"{path}.leaseDuration: must be greater than renewDeadline ({_fmt_seconds(renew)}), "
                f"got {_fmt_seconds(lease)}"
            )
        if renew <= LEADER_ELECTION_JITTER_FACTOR * retry:
            raise ConfigError(
                f"{path}.renewDeadline: must be greater than retryPeriod*{LEADER_ELECTION_JITTER_FACTOR} "
                f"({_fmt_seconds(LEADER_ELECTION_JITTER_FACTOR * retry)}), got {_fmt_seconds(renew)}"
            )
        if lock != "leases":
            raise ConfigError(f'{path}.resourceLock: must be "leases", got {_q(lock)}')
    return LeaderElection(
        leader_elect=elect,
        lease_duration_seconds=lease,
        renew_deadline_seconds=renew,
        retry_period_seconds=retry,
        resource_lock=lock,
        resource_name=name,
        resource_namespace=namespace,
    )


def _client_connection(raw: Any) -> ClientConnection:
    path = "clientConnection"
    obj = _mapping({} if raw is None else raw, path)
    _check_fields(obj, path, _CLIENT_FIELDS)
    qps = _float(obj, "qps", path, 0.0)
    burst = _int(obj, "burst", path, 0, hi=INT32_MAX)
    if burst < 0:
        raise ConfigError(f"{path}.burst: must be non-negative, got {burst}")
    return ClientConnection(
        qps=qps if qps != 0.0 else 50.0,
        burst=burst if burst != 0 else 100,
        kubeconfig=_str(obj, "kubeconfig", path, ""),
        content_type=_str(obj, "contentType", path, "") or "application/vnd.kubernetes.protobuf",
        accept_content_types=_str(obj, "acceptContentTypes", path, ""),
    )


def _profile(raw: Any, index: int, count: int, known: frozenset[str], parse_args: ArgsParser) -> Profile:
    path = f"profiles[{index}]"
    obj = _mapping(raw, path)
    _check_fields(obj, path, _PROFILE_FIELDS)

    name_value = obj.get("schedulerName")
    if name_value is None and count == 1:
        scheduler_name = DEFAULT_SCHEDULER_NAME
    else:
        scheduler_name = _str(obj, "schedulerName", path, "")
        if not scheduler_name:
            raise ConfigError(f"{path}.schedulerName: required (every profile of several needs a name)")

    percentage = _percentage(obj, "percentageOfNodesToScore", path)
    plugins = _plugins(obj.get("plugins"), f"{path}.plugins", known)

    plugin_config: dict[str, Any] = {}
    configured: set[str] = set()
    for j, entry in enumerate(_list(obj, "pluginConfig", path)):
        epath = f"{path}.pluginConfig[{j}]"
        e = _mapping(entry, epath)
        _check_fields(e, epath, _PLUGIN_CONFIG_FIELDS)
        name = _plugin_name(e, epath, known, allow_star=False, allow_upstream=False)
        if name in configured:
            raise ConfigError(f"{epath}.name: duplicate {_q(name)}")
        configured.add(name)
        args = _plugin_args(e.get("args"), name, f"{epath}.args")
        parsed = _call_parser(parse_args, name, args, f"{epath}.args")
        if parsed is not None:
            plugin_config[name] = parsed

    for name in sorted(_enabled_names(plugins) - configured):
        parsed = _call_parser(parse_args, name, None, f'{path}.pluginConfig: default args of plugin "{name}"')
        if parsed is not None:
            plugin_config[name] = parsed

    return Profile(
        scheduler_name=scheduler_name,
        percentage_of_nodes_to_score=percentage,
        plugins=plugins,
        plugin_config=MappingProxyType(plugin_config),
    )


def _plugins(raw: Any, path: str, known: frozenset[str]) -> Plugins:
    obj = _mapping({} if raw is None else raw, path)
    _check_fields(obj, path, frozenset(_YAML_TO_POINT))
    sets: dict[str, PluginSet] = {}
    for yaml_key, point in _YAML_TO_POINT.items():
        sets[point] = _plugin_set(obj.get(yaml_key), f"{path}.{yaml_key}", known)
    # Upstream mergePlugins: the only default set is MultiPoint; specific points have no defaults.
    sets["multi_point"] = merge_plugin_set(PluginSet(enabled=DEFAULT_MULTI_POINT), sets["multi_point"])
    return Plugins(**sets)


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream `mergePluginSet`: apply a user's PluginSet on top of a default one.

    Disabled names (or `"*"`) drop defaults; a custom entry named like a kept default replaces it in
    place; other custom entries are appended in order. The result's `disabled` is custom's + default's.
    """
    disabled = (*custom.disabled, *default.disabled)
    custom_by_name = {ref.name: (i, ref) for i, ref in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled:
        for ref in default.enabled:
            if ref.name in disabled:
                continue
            hit = custom_by_name.get(ref.name)
            if hit is not None:
                replaced.add(hit[0])
                ref = hit[1]
            enabled.append(ref)
    enabled.extend(ref for i, ref in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled=tuple(enabled), disabled=disabled)


def _plugin_set(raw: Any, path: str, known: frozenset[str]) -> PluginSet:
    obj = _mapping({} if raw is None else raw, path)
    _check_fields(obj, path, _PLUGIN_SET_FIELDS)
    enabled: list[PluginRef] = []
    for i, entry in enumerate(_list(obj, "enabled", path)):
        epath = f"{path}.enabled[{i}]"
        e = _mapping(entry, epath)
        _check_fields(e, epath, _PLUGIN_FIELDS)
        name = _plugin_name(e, epath, known, allow_star=False, allow_upstream=False)
        if any(ref.name == name for ref in enabled):
            raise ConfigError(f"{epath}.name: plugin {_q(name)} is enabled twice")
        weight = _int(e, "weight", epath, 0, hi=MAX_PLUGIN_WEIGHT)
        if weight < 0:
            raise ConfigError(f"{epath}.weight: must be a positive integer, got {weight}")
        enabled.append(PluginRef(name, weight or None))
    disabled: list[str] = []
    for i, entry in enumerate(_list(obj, "disabled", path)):
        epath = f"{path}.disabled[{i}]"
        e = _mapping(entry, epath)
        _check_fields(e, epath, _PLUGIN_FIELDS)
        _int(e, "weight", epath, 0, hi=MAX_PLUGIN_WEIGHT)  # accepted like upstream, meaningless here
        name = _plugin_name(e, epath, known, allow_star=True, allow_upstream=True)
        if name not in disabled:
            disabled.append(name)
    return PluginSet(enabled=tuple(enabled), disabled=tuple(disabled))


def _plugin_name(
    obj: Mapping[str, Any], path: str, known: frozenset[str], *, allow_star: bool, allow_upstream: bool
) -> str:
    name = _str(obj, "name", path, "")
    if not name:
        raise ConfigError(f"{path}.name: required")
    if name in known or (allow_star and name == "*") or (allow_upstream and name in UPSTREAM_PLUGIN_NAMES):
        return name
    if name in UPSTREAM_PLUGIN_NAMES:
        raise ConfigError(f"{path}.name: plugin {_q(name)} is not supported by pyscheduler")
    raise ConfigError(f"{path}.name: unknown plugin {_q(name)}")


def _plugin_args(raw: Any, name: str, path: str) -> Mapping[str, Any] | None:
    """The args mapping without `apiVersion`/`kind` (checked like upstream's typed decoding)."""
    if raw is None:
        return None
    args = _mapping(raw, path)
    api_version = args.get("apiVersion")
    if api_version is not None and api_version != API_VERSION:
        raise ConfigError(f"{path}.apiVersion: must be {_q(API_VERSION)}, got {_q(api_version)}")
    kind = args.get("kind")
    if kind is not None and kind != f"{name}Args":
        raise ConfigError(
            f"{path}.kind: args for plugin {_q(name)} must be of kind {name}Args, got {_q(kind)}"
        )
    return {k: v for k, v in args.items() if k not in ("apiVersion", "kind")}


def _call_parser(parse_args: ArgsParser, name: str, args: Mapping[str, Any] | None, where: str) -> Any:
    try:
        return parse_args(name, args)
    except (ValueError, TypeError) as e:  # ConfigError is a ValueError
        raise ConfigError(f"{where}: {e}") from e
    except Exception as e:  # an out-of-tree plugin's parser with a bug: still one line naming the field
        raise ConfigError(f"{where}: plugin {_q(name)} failed to parse its args: {type(e).__name__}: {e}") from e


def _enabled_names(plugins: Plugins) -> set[str]:
    """Names enabled at MultiPoint or any point (upstream `pluginsNames`): they get default args."""
    names = {ref.name for ref in plugins.multi_point.enabled}
    for point in EXTENSION_POINTS:
        names.update(ref.name for ref in plugins.point(point).enabled)
    return names


def _check_queue_sort_and_bind(profiles: Sequence[Profile], implements: Implements | None) -> None:
    """Upstream validateCommonQueueSort, plus the framework's one-queue-sort / some-bind checks."""
    first = profiles[0].plugins.queue_sort
    if len(first.enabled) > 1:
        raise ConfigError(
            f"profiles[0].plugins.queueSort.enabled: only one queue sort plugin can be enabled, "
            f"got {len(first.enabled)}"
        )
    for i, prof in enumerate(profiles):
        ppath = f"profiles[{i}].plugins"
        if i > 0 and prof.plugins.queue_sort != first:
            raise ConfigError(f"{ppath}.queueSort: must be the same for all profiles")
        for point, problem in _REQUIRED_POINTS:
            if _surely_empty(prof, point):
                raise ConfigError(f"{ppath}.{POINT_YAML_KEYS[point]}: {problem}")
    if implements is None:
        return

    queue_sorts: list[str] = []
    for i, prof in enumerate(profiles):
        ppath = f"profiles[{i}].plugins"
        for point in EXTENSION_POINTS:
            for k, ref in enumerate(prof.plugins.point(point).enabled):
                if not implements(ref.name, point):
                    raise ConfigError(
                        f"{ppath}.{POINT_YAML_KEYS[point]}.enabled[{k}].name: plugin {_q(ref.name)} "
                        f"does not implement {POINT_YAML_KEYS[point]}"
                    )
        qs = effective_plugins(prof, "queue_sort", implements)
        if len(qs) != 1:
            names = ", ".join(r.name for r in qs) or "none"
            raise ConfigError(f"{ppath}.queueSort: exactly one queue sort plugin required, got {names}")
        if not effective_plugins(prof, "bind", implements):
            raise ConfigError(f"{ppath}.bind: at least one bind plugin required, none is enabled")
        queue_sorts.append(qs[0].name)
        if i > 0:
            if queue_sorts[i] != queue_sorts[0]:
                raise ConfigError(
                    f"{ppath}.queueSort: all profiles must use the same queue sort plugin, "
                    f"got {_q(queue_sorts[i])} but profiles[0] uses {_q(queue_sorts[0])}"
                )
            name = queue_sorts[0]
            if prof.plugin_config.get(name) != profiles[0].plugin_config.get(name):
                raise ConfigError(
                    f"profiles[{i}].pluginConfig: args of queue sort plugin {_q(name)} must be the same "
                    f"for all profiles"
                )


def _surely_empty(profile: Profile, point: ExtensionPoint) -> bool:
    """True when `point` gets no plugin whatever plugins implement: nothing enabled there, and MultiPoint
    contributes nothing (all disabled with "*", or every MultiPoint plugin disabled by name)."""
    enabled, disabled, disable_all = effective_point(profile, point)
    if enabled:
        return False
    return disable_all or all(ref.name in disabled for ref in effective_multi_point(profile))


# ---------------------------------------------------------------------------------------------------
# Typed field access (strict, like upstream's decoder). A null value means "not set".


_type_name = json_type
_q = json_quote
_join = child


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path or 'config'}: must be a mapping, got {_type_name(value)}")
    for key in value:
        if not isinstance(key, str):
            raise ConfigError(f"{path or 'config'}: field names must be strings, got {_q(key)}")
    return value


def _check_fields(obj: Mapping[str, Any], path: str, allowed: frozenset[str]) -> None:
    for key in obj:
        if key not in allowed:
            prefix = f"{path}: " if path else ""
            raise ConfigError(f"{prefix}unknown field {_q(key)}")


def _get(obj: Mapping[str, Any], key: str) -> Any:
    value = obj.get(key, _MISSING)
    return _MISSING if value is None else value


def _list(obj: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = _get(obj, key)
    if value is _MISSING:
        return []
    if not isinstance(value, list | tuple):
        raise ConfigError(f"{_join(path, key)}: must be a list, got {_type_name(value)}")
    return list(value)


def _bool(obj: Mapping[str, Any], key: str, path: str, default: bool) -> bool:
    value = _get(obj, key)
    if value is _MISSING:
        return default
    if not isinstance(value, bool):
        raise ConfigError(f"{_join(path, key)}: must be true or false, got {_type_name(value)} {_q(value)}")
    return value


def _int(obj: Mapping[str, Any], key: str, path: str, default: int, *, hi: int) -> int:
    value = _get(obj, key)
    if value is _MISSING:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{_join(path, key)}: must be an integer, got {_type_name(value)} {_q(value)}")
    if not -hi - 1 <= value <= hi:
        raise ConfigError(f"{_join(path, key)}: out of range, got {value}")
    return value


def _float(obj: Mapping[str, Any], key: str, path: str, default: float) -> float:
    value = _get(obj, key)
    if value is _MISSING:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{_join(path, key)}: must be a number, got {_type_name(value)} {_q(value)}")
    result = float(value)
    if not math.isfinite(result):
        raise ConfigError(f"{_join(path, key)}: must be a finite number, got {_q(value)}")
    return result


def _str(obj: Mapping[str, Any], key: str, path: str, default: str) -> str:
    value = _get(obj, key)
    if value is _MISSING:
        return default
    if not isinstance(value, str):
        raise ConfigError(f"{_join(path, key)}: must be a string, got {_type_name(value)} {_q(value)}")
    return value


def _percentage(obj: Mapping[str, Any], key: str, path: str) -> int | None:
    if _get(obj, key) is _MISSING:
        return None
    value = _int(obj, key, path, 0, hi=INT32_MAX)
    if not 0 <= value <= 100:
        raise ConfigError(f"{_join(path, key)}: must be between 0 and 100, got {value}")
    return value


def _duration(obj: Mapping[str, Any], key: str, path: str) -> float:
    value = _get(obj, key)
    if value is _MISSING:
        return 0.0
    if not isinstance(value, str):
        raise ConfigError(
            f'{_join(path, key)}: must be a duration string like "15s", got {_type_name(value)} {_q(value)}'
        )
    try:
        return parse_duration(value)
    except ValueError as e:
        raise ConfigError(f"{_join(path, key)}: {e}") from e


_DURATION_RE = re.compile(r"(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+")
_DURATION_PART_RE = re.compile(r"([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS: Mapping[str, float] = MappingProxyType(
    {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
)


def parse_duration(text: str) -> float:
    """Parse a Go duration string (`time.ParseDuration`: "15s", "1m30s", "500ms", "-2h", "0") to seconds.

    Raises ValueError naming the bad string.
    """
    body = text
    sign = 1.0
    if body[:1] in ("+", "-"):
        sign = -1.0 if body[0] == "-" else 1.0
        body = body[1:]
    if body == "0":
        return 0.0
    if not body or _DURATION_RE.fullmatch(body) is None:
        raise ValueError(f'invalid duration {_q(text)} (want a Go duration such as "15s", "1m30s", "500ms")')
    total = sum(float(num) * _DURATION_UNITS[unit] for num, unit in _DURATION_PART_RE.findall(body))
    return sign * total


def _fmt_seconds(seconds: float) -> str:
    return f"{seconds:g}s"


class _StrictSafeLoader(DepthCheckedLoader):
    """yaml.SafeLoader that rejects duplicate mapping keys (upstream's strict decoding does)."""


def _construct_strict_mapping(loader: _StrictSafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:
            continue  # unhashable key: construct_mapping reports it
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {_q(key)}",
                key_node.start_mark,
            )
    return loader.construct_mapping(node, deep=True)


_StrictSafeLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_strict_mapping,
)
