"""The in-tree plugin registry: name -> plugin class and its args parser (upstream plugins/registry.go)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.config.errors import ConfigError
from scheduler.config.types import ExtensionPoint
from scheduler.framework import interface as fi
from scheduler.framework.interface import Handle, Plugin
from scheduler.plugins import (
    default_binder,
    image_locality,
    node_affinity,
    node_name,
    node_ports,
    node_resources_balanced_allocation,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
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
    image_locality.NAME: _no_args(image_locality.ImageLocality, image_locality.new),
    default_binder.NAME: _no_args(default_binder.DefaultBinder, default_binder.new),
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
