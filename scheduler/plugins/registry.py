"""Plugin registries: the in-tree plugins (upstream plugins/registry.go) plus out-of-tree ones.

Out-of-tree plugins come from installed packages (entry points in the group `pyscheduler.plugins`, each
naming a Plugin subclass) or from `--plugin module:Class` on the command line. A plugin class is built with
`Class(args, handle)`; when it has a `parse_args(raw)` static/class method, that validates its
`pluginConfig` args (raise ValueError/ConfigError naming the field; the loader prefixes the config path).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.config.errors import ConfigError
from scheduler.config.types import ExtensionPoint
from scheduler.framework import interface as fi
from scheduler.framework.interface import Handle, Plugin
from scheduler.plugins import (
    default_binder,
    default_preemption,
    dynamic_resources,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_declared_features,
    node_name,
    node_ports,
    node_resources_balanced_allocation,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    pod_topology_spread,
    queue_sort,
    scheduling_gates,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)


@dataclass(frozen=True, slots=True)
class PluginSpec:
    """How to build a plugin: its class and, when it takes args, the parser that validates them."""

    cls: type[Plugin]
    factory: Callable[[Any, Handle], Plugin]
    parse_args: Callable[[Mapping[str, Any] | None], Any] | None = None


def _no_args(cls: type[Plugin], new: Callable[[Mapping[str, Any] | None, Handle], Plugin]) -> PluginSpec:
    return PluginSpec(cls, lambda _args, handle: new(None, handle))


REGISTRY: dict[str, PluginSpec] = {
    scheduling_gates.NAME: _no_args(scheduling_gates.SchedulingGates, scheduling_gates.new),
    queue_sort.NAME: _no_args(queue_sort.PrioritySort, queue_sort.new),
    node_unschedulable.NAME: _no_args(node_unschedulable.NodeUnschedulable, node_unschedulable.new),
    node_name.NAME: _no_args(node_name.NodeName, node_name.new),
    taint_toleration.NAME: _no_args(taint_toleration.TaintToleration, taint_toleration.new),
    node_affinity.NAME: PluginSpec(node_affinity.NodeAffinity, node_affinity.NodeAffinity, node_affinity.parse_args),
    node_ports.NAME: _no_args(node_ports.NodePorts, node_ports.new),
    node_resources_fit.NAME: PluginSpec(
        node_resources_fit.NodeResourcesFit, node_resources_fit.NodeResourcesFit, node_resources_fit.parse_args
    ),
    volume_restrictions.NAME: _no_args(volume_restrictions.VolumeRestrictions, volume_restrictions.new),
    node_volume_limits.NAME: _no_args(node_volume_limits.NodeVolumeLimits, node_volume_limits.new),
    volume_binding.NAME: PluginSpec(volume_binding.VolumeBinding, volume_binding.new, volume_binding.parse_args),
    volume_zone.NAME: _no_args(volume_zone.VolumeZone, volume_zone.new),
    node_resources_balanced_allocation.NAME: PluginSpec(
        node_resources_balanced_allocation.NodeResourcesBalancedAllocation,
        node_resources_balanced_allocation.NodeResourcesBalancedAllocation,
        node_resources_balanced_allocation.parse_args,
    ),
    default_preemption.NAME: PluginSpec(
        default_preemption.DefaultPreemption, default_preemption.DefaultPreemption, default_preemption.parse_args
    ),
    pod_topology_spread.NAME: PluginSpec(
        pod_topology_spread.PodTopologySpread, pod_topology_spread.new, pod_topology_spread.parse_args
    ),
    inter_pod_affinity.NAME: PluginSpec(
        inter_pod_affinity.InterPodAffinity, inter_pod_affinity.InterPodAffinity, inter_pod_affinity.parse_args
    ),
    dynamic_resources.NAME: PluginSpec(
        dynamic_resources.DynamicResources, dynamic_resources.new, dynamic_resources.parse_args
    ),
    image_locality.NAME: _no_args(image_locality.ImageLocality, image_locality.new),
    default_binder.NAME: _no_args(default_binder.DefaultBinder, default_binder.new),
    node_declared_features.NAME: _no_args(node_declared_features.NodeDeclaredFeatures, node_declared_features.new),
}

POINT_CLASSES: dict[ExtensionPoint, type[Plugin]] = {
    "pre_enqueue": fi.PreEnqueuePlugin,
    "queue_sort": fi.QueueSortPlugin,
    "pre_filter": fi.PreFilterPlugin,
    "filter": fi.FilterPlugin,
    "post_filter": fi.PostFilterPlugin,
    "pre_score": fi.PreScorePlugin,
    "score": fi.ScorePlugin,
    "reserve": fi.ReservePlugin,
    "permit": fi.PermitPlugin,
    "pre_bind": fi.PreBindPlugin,
    "bind": fi.BindPlugin,
    "post_bind": fi.PostBindPlugin,
}


ENTRY_POINT_GROUP = "pyscheduler.plugins"


class PluginLoadError(Exception):
    """An out-of-tree plugin could not be loaded; the message names the entry point or --plugin value."""


def spec_of(obj: Any, where: str) -> PluginSpec:
    """A PluginSpec for an out-of-tree object: a PluginSpec, or a Plugin subclass with a non-empty `name`."""
    if isinstance(obj, PluginSpec):
        return obj
    if not (isinstance(obj, type) and issubclass(obj, Plugin)):
        raise PluginLoadError(f"{where}: expected a subclass of scheduler.framework.Plugin, got {obj!r}")
    if not obj.name:
        raise PluginLoadError(f"{where}: plugin class {obj.__name__} has no `name`")
    parse = getattr(obj, "parse_args", None)
    return PluginSpec(obj, obj, parse if callable(parse) else None)


def load_reference(ref: str) -> PluginSpec:
    """`module:Attribute` (the --plugin flag) -> its PluginSpec."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise PluginLoadError(f"--plugin {ref}: expected MODULE:CLASS, e.g. my_plugins.cost:CostScore")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or the module itself failing at import
        raise PluginLoadError(f"--plugin {ref}: cannot import {module_name}: {type(exc).__name__}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise PluginLoadError(f"--plugin {ref}: {module_name} has no attribute {attr}")
        obj = getattr(obj, part)
    return spec_of(obj, f"--plugin {ref}")


def entry_point_plugins() -> dict[str, PluginSpec]:
    """Plugins advertised by installed distributions in the `pyscheduler.plugins` entry point group."""
    out: dict[str, PluginSpec] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {ep.name} = {ep.value} ({ENTRY_POINT_GROUP})"
        try:
            obj = ep.load()
        except Exception as exc:
            raise PluginLoadError(f"{where}: cannot load: {type(exc).__name__}: {exc}") from exc
        spec = spec_of(obj, where)
        if spec.cls.name != ep.name:
            raise PluginLoadError(f"{where}: the entry point name must be the plugin's name {spec.cls.name!r}")
        out[ep.name] = spec
    return out


class PluginRegistry(Mapping[str, PluginSpec]):
    """Name -> PluginSpec, in-tree first; what the config loader and the profile builder consult."""

    def __init__(self, specs: Mapping[str, PluginSpec]) -> None:
        self._specs = dict(specs)

    @classmethod
    def with_out_of_tree(cls, refs: Iterable[str] = (), *, entry_points: bool = True) -> PluginRegistry:
        """In-tree plugins, then installed entry points, then `--plugin` references; a name used twice is an
        error (an out-of-tree plugin cannot silently replace NodeResourcesFit)."""
        registry = cls(REGISTRY)
        extra: list[tuple[str, PluginSpec]] = []
        if entry_points:
            extra.extend(entry_point_plugins().items())
        for ref in refs:
            spec = load_reference(ref)
            extra.append((spec.cls.name, spec))
        for name, spec in extra:
            if name in registry._specs and registry._specs[name] is not spec:
                raise PluginLoadError(f"plugin {name!r} ({spec.cls.__module__}) is already registered")
            registry._specs[name] = spec
        return registry

    def __getitem__(self, name: str) -> PluginSpec:
        return self._specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def parse_args(self, name: str, raw: Mapping[str, Any] | None) -> Any:
        """Validate a plugin's args (ConfigError naming the field); plugins without a parser accept none."""
        spec = self._specs[name]
        if spec.parse_args is not None:
            return spec.parse_args(raw)
        if raw:
            raise ConfigError(f"plugin {name!r} takes no args, got fields {sorted(raw)}")
        return None

    def implements(self, name: str, point: ExtensionPoint) -> bool:
        """Whether plugin `name` implements extension point `point`."""
        spec = self._specs.get(name)
        return spec is not None and issubclass(spec.cls, POINT_CLASSES[point])


def parse_plugin_args(name: str, raw: Mapping[str, Any] | None) -> Any:
    """Validate a plugin's args (ConfigError naming the field); plugins without args accept none."""
    spec = REGISTRY[name]
    if spec.parse_args is not None:
        return spec.parse_args(raw)
    if raw:
        raise ConfigError(f"plugin {name!r} takes no args, got fields {sorted(raw)}")
    return None


def implements(name: str, point: ExtensionPoint) -> bool:
    """Whether plugin `name` implements extension point `point` (for config validation and expansion)."""
    spec = REGISTRY.get(name)
    return spec is not None and issubclass(spec.cls, POINT_CLASSES[point])
