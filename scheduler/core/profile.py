"""Build the Scheduler and one Framework per profile from a KubeSchedulerConfiguration.

Which plugins exist is a `PluginRegistry`: the in-tree plugins plus out-of-tree ones (installed entry
points, `--plugin module:Class`). The process-wide one is built on first use, or by `install_plugins` when
a command was given `--plugin` flags; every function here also takes an explicit registry (tests).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from typing import TextIO

from scheduler.config.defaults import UPSTREAM_PLUGIN_NAMES
from scheduler.config.errors import ConfigError
from scheduler.config.load import effective_plugins, load_config, upstream_runs
from scheduler.config.types import EXTENSION_POINTS, POINT_YAML_KEYS, Profile, SchedulerConfiguration
from scheduler.core.api import ClusterAPI
from scheduler.core.scheduler import Scheduler
from scheduler.framework.interface import Handle, Plugin
from scheduler.framework.observer import Observer
from scheduler.framework.runtime import Framework, PluginResultError
from scheduler.plugins.registry import PluginLoadError, PluginRegistry

_registry: PluginRegistry | None = None


def install_plugins(refs: Iterable[str] = (), *, entry_points: bool = True) -> PluginRegistry:
    """Build the process-wide registry: in-tree + installed entry points + `--plugin` references.

    Raises PluginLoadError (the command prints it and exits 2) when a plugin cannot be loaded.
    """
    global _registry
    _registry = PluginRegistry.with_out_of_tree(refs, entry_points=entry_points)
    return _registry


def plugin_registry() -> PluginRegistry:
    """The process-wide registry (built with installed entry points on first use)."""
    return _registry if _registry is not None else install_plugins()


def default_config(registry: PluginRegistry | None = None) -> SchedulerConfiguration:
    """The configuration used without --config: one profile `pyscheduler` with the default plugins."""
    reg = registry or plugin_registry()
    return load_config(None, reg.keys(), reg.parse_args, implements=reg.implements)


def load_file(path: str, registry: PluginRegistry | None = None) -> SchedulerConfiguration:
    """Load and fully validate a configuration file (ConfigError names the field)."""
    from scheduler.config.load import load_config_file

    reg = registry or plugin_registry()
    return load_config_file(path, reg.keys(), reg.parse_args, implements=reg.implements)


def config_from_path(path: str | None, registry: PluginRegistry | None = None) -> SchedulerConfiguration:
    """What `--config` names (fully validated), or the default configuration when it names nothing."""
    return load_file(path, registry) if path else default_config(registry)


def load_config_or_report(
    path: str | None, err: TextIO | None = None, plugins: Iterable[str] = ()
) -> SchedulerConfiguration | None:
    """The configuration --config names (with the `--plugin` plugins loaded first); None after printing
    `error: ...` when a plugin cannot be loaded or the configuration is invalid.

    Shared by every command (run, simulate, explain) so a bad config reads the same everywhere (exit 2).
    """
    try:
        if plugins:
            install_plugins(plugins)
        return config_from_path(path)
    except (ConfigError, PluginLoadError) as exc:
        print(f"error: {exc}", file=err or sys.stderr)
        return None


def build_framework(
    profile: Profile, handle: Handle, observer: Observer | None = None, registry: PluginRegistry | None = None
) -> Framework:
    """Instantiate the profile's plugins once each and wire them to their extension points in order."""
    reg = registry or plugin_registry()
    points: dict[str, list[str]] = {}
    weights: dict[str, int] = {}
    names: list[str] = []
    for point in EXTENSION_POINTS:
        refs = effective_plugins(profile, point, reg.implements)
        points[POINT_YAML_KEYS[point]] = [r.name for r in refs]
        for r in refs:
            if r.name not in names:
                names.append(r.name)
            if point == "score":
                weights[r.name] = r.weight or 1
    plugins: list[Plugin] = []
    for name in names:
        spec = reg[name]
        args = profile.plugin_config.get(name)
        if args is None and spec.parse_args is not None:
            args = spec.parse_args(None)
        try:
            plugins.append(spec.factory(args, handle))
        except Exception as exc:  # an out-of-tree plugin failing at construction: one clear line, exit 2
            raise ConfigError(
                f"profile {profile.scheduler_name!r}: plugin {name!r} failed to start: {type(exc).__name__}: {exc}"
            ) from exc
    fwk = Framework(
        profile.scheduler_name,
        plugins,
        points,
        weights,
        percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
        observer=observer,
        upstream_plugins=frozenset(n for n in UPSTREAM_PLUGIN_NAMES if upstream_runs(profile, n)),
    )
    fwk.rebuild = lambda other: build_framework(profile, other, None, reg)
    return fwk


def build_scheduler(
    api: ClusterAPI,
    config: SchedulerConfiguration | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
    seed: int | None = None,
    observer: Observer | None = None,
    max_in_flight_binds: int = 256,
    registry: PluginRegistry | None = None,
) -> Scheduler:
    """A Scheduler with every profile of config (default config when None)."""
    config = config or default_config(registry)
    scheduler = Scheduler(
        api,
        percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
        initial_backoff=config.pod_initial_backoff_seconds,
        max_backoff=config.pod_max_backoff_seconds,
        clock=clock,
        seed=seed,
        observer=observer,
        max_in_flight_binds=max_in_flight_binds,
    )
    handle = scheduler.handle()
    frameworks = {p.scheduler_name: build_framework(p, handle, observer, registry) for p in config.profiles}
    try:
        scheduler.set_profiles(frameworks)
    except PluginResultError as exc:  # e.g. events_to_register returned garbage: one line, exit 2
        raise ConfigError(str(exc)) from exc
    return scheduler
