"""Build the Scheduler and one Framework per profile from a KubeSchedulerConfiguration."""

from __future__ import annotations

import time
from collections.abc import Callable

from scheduler.config.defaults import UPSTREAM_PLUGIN_NAMES
from scheduler.config.load import effective_plugins, load_config, upstream_runs
from scheduler.config.types import EXTENSION_POINTS, POINT_YAML_KEYS, Profile, SchedulerConfiguration
from scheduler.core.api import ClusterAPI
from scheduler.core.scheduler import Scheduler
from scheduler.framework.interface import Handle, Plugin
from scheduler.framework.observer import Observer
from scheduler.framework.runtime import Framework
from scheduler.plugins.registry import REGISTRY, implements, parse_plugin_args


def default_config() -> SchedulerConfiguration:
    """The configuration used without --config: one profile `pyscheduler` with the default plugins."""
    return load_config(None, REGISTRY.keys(), parse_plugin_args, implements=implements)


def load_file(path: str) -> SchedulerConfiguration:
    """Load and fully validate a configuration file (ConfigError names the field)."""
    from scheduler.config.load import load_config_file

    return load_config_file(path, REGISTRY.keys(), parse_plugin_args, implements=implements)


def config_from_path(path: str | None) -> SchedulerConfiguration:
    """What `--config` names (fully validated), or the default configuration when it names nothing."""
    return load_file(path) if path else default_config()


def build_framework(profile: Profile, handle: Handle, observer: Observer | None = None) -> Framework:
    """Instantiate the profile's plugins once each and wire them to their extension points in order."""
    points: dict[str, list[str]] = {}
    weights: dict[str, int] = {}
    names: list[str] = []
    for point in EXTENSION_POINTS:
        refs = effective_plugins(profile, point, implements)
        points[POINT_YAML_KEYS[point]] = [r.name for r in refs]
        for r in refs:
            if r.name not in names:
                names.append(r.name)
            if point == "score":
                weights[r.name] = r.weight or 1
    plugins: list[Plugin] = []
    for name in names:
        spec = REGISTRY[name]
        args = profile.plugin_config.get(name)
        if args is None and spec.parse_args is not None:
            args = spec.parse_args(None)
        plugins.append(spec.factory(args, handle))
    return Framework(
        profile.scheduler_name,
        plugins,
        points,
        weights,
        percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
        observer=observer,
        upstream_plugins=frozenset(n for n in UPSTREAM_PLUGIN_NAMES if upstream_runs(profile, n)),
        handle=handle,
    )


def build_scheduler(
    api: ClusterAPI,
    config: SchedulerConfiguration | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
    seed: int | None = None,
    observer: Observer | None = None,
    max_in_flight_binds: int = 256,
) -> Scheduler:
    """A Scheduler with every profile of config (default config when None)."""
    config = config or default_config()
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
    scheduler.set_profiles({p.scheduler_name: build_framework(p, handle, observer) for p in config.profiles})
    return scheduler
