"""Plugin registries: the in-tree plugins (upstream plugins/registry.go) plus out-of-tree ones.

Out-of-tree plugins come from installed packages (entry points in the group `pyscheduler.plugins`, each
naming a Plugin subclass) or from `--plugin module:Class` on the command line. A plugin class is built with
`Class(args, handle)`; when it has a `parse_args(raw)` static/class method, that validates its
`pluginConfig` args (raise ValueError/ConfigError naming the field; the loader prefixes the config path).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
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

log = logging.getLogger("pyscheduler.plugins")


class PluginLoadError(ConfigError):
    """An out-of-tree plugin could not be loaded; the message names the entry point or --plugin value."""


# The methods a class deriving from an extension point must define, as groups of alternatives (one of each
# group): without one the base method runs and every pod fails with an empty Error, so such a class is
# refused at load. Reserve wants both halves, as upstream's ReservePlugin interface does.
POINT_METHODS: dict[type[Plugin], tuple[tuple[str, ...], ...]] = {
    fi.PreEnqueuePlugin: (("pre_enqueue",),),
    fi.QueueSortPlugin: (("less", "sort_key"),),
    fi.PreFilterPlugin: (("pre_filter",),),
    fi.FilterPlugin: (("filter", "filter_batch"),),
    fi.PostFilterPlugin: (("post_filter",),),
    fi.PreScorePlugin: (("pre_score",),),
    fi.ScorePlugin: (("score", "score_batch"),),
    fi.ReservePlugin: (("reserve",), ("unreserve",)),
    fi.PermitPlugin: (("permit",),),
    fi.PreBindPlugin: (("pre_bind",),),
    fi.BindPlugin: (("bind",),),
    fi.PostBindPlugin: (("post_bind",),),
}


def missing_methods(cls: type[Plugin]) -> list[tuple[str, tuple[str, ...]]]:
    """(extension point class, the methods it wants) for every extension point `cls` derives from but
    does not define a method of (e.g. `def filtr` instead of `def filter`)."""
    out: list[tuple[str, tuple[str, ...]]] = []
    for base, groups in POINT_METHODS.items():
        if not issubclass(cls, base):
            continue
        for methods in groups:
            if all(getattr(cls, m) is getattr(base, m) for m in methods):
                out.append((base.__name__, methods))
    return out


def spec_of(obj: Any, where: str) -> PluginSpec:
    """A PluginSpec for an out-of-tree object: a PluginSpec, or a Plugin subclass with a non-empty `name`
    that defines a method of every extension point it derives from."""
    if isinstance(obj, PluginSpec):
        cls: type[Plugin] = obj.cls
    elif isinstance(obj, type) and issubclass(obj, Plugin):
        cls = obj
    else:
        raise PluginLoadError(f"{where}: expected a subclass of scheduler.framework.Plugin, got {obj!r}")
    if not cls.name:
        raise PluginLoadError(f"{where}: plugin class {cls.__name__} has no `name`")
    for point, methods in missing_methods(cls):
        wanted = " or ".join(f"`def {m}`" for m in methods)
        raise PluginLoadError(
            f"{where}: plugin class {cls.__name__} derives from {point} but does not define {wanted} "
            "(a misspelt method is never called)"
        )
    if isinstance(obj, PluginSpec):
        return obj
    parse = getattr(cls, "parse_args", None)
    return PluginSpec(cls, cls, parse if callable(parse) else None)


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


def _distribution(ep: importlib.metadata.EntryPoint) -> str:
    """`name version` of the distribution that declares an entry point (what pip list shows)."""
    dist = ep.dist
    if dist is None:
        return "an unknown distribution"
    return f"{dist.metadata['Name'] or dist.name} {dist.version}"


@dataclass(frozen=True, slots=True)
class EntryPoints:
    """The `pyscheduler.plugins` entry points of the installed distributions: the plugins that loaded, and
    the ones that did not (their error is raised only if a profile uses them)."""

    specs: dict[str, PluginSpec]
    broken: dict[str, PluginLoadError]


def entry_point_plugins() -> EntryPoints:
    """Load the plugins advertised in the `pyscheduler.plugins` entry point group.

    Two distributions advertising the same name are refused, naming both (neither may silently replace
    the other). One that fails to load is logged as a warning and kept as an error for when it is used.
    """
    specs: dict[str, PluginSpec] = {}
    broken: dict[str, PluginLoadError] = {}
    seen: dict[str, importlib.metadata.EntryPoint] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        first = seen.get(ep.name)
        if first is not None:
            raise PluginLoadError(
                f"plugin {ep.name!r} is provided by two installed distributions: {_distribution(first)} "
                f"({ep.name} = {first.value}) and {_distribution(ep)} ({ep.name} = {ep.value}); "
                "uninstall one of them or rename its entry point"
            )
        seen[ep.name] = ep
        where = f"entry point {ep.name} = {ep.value} ({ENTRY_POINT_GROUP}) of {_distribution(ep)}"
        try:
            try:
                obj = ep.load()
            except Exception as exc:
                raise PluginLoadError(f"{where}: cannot load: {type(exc).__name__}: {exc}") from exc
            spec = spec_of(obj, where)
            if spec.cls.name != ep.name:
                raise PluginLoadError(f"{where}: the entry point name must be the plugin's name {spec.cls.name!r}")
        except PluginLoadError as err:
            log.warning("plugin entry point ignored: %s (an error only if a profile enables it)", err)
            broken[ep.name] = err
            continue
        specs[ep.name] = spec
    return EntryPoints(specs, broken)


class PluginRegistry(Mapping[str, PluginSpec]):
    """Name -> PluginSpec, in-tree first; what the config loader and the profile builder consult.

    Names of installed entry points that failed to load are known too: looking one up (a profile enabling
    it) raises its PluginLoadError, so an unused broken distribution costs a warning, not the startup.
    """

    def __init__(self, specs: Mapping[str, PluginSpec], broken: Mapping[str, PluginLoadError] | None = None) -> None:
        self._specs = dict(specs)
        self._broken = dict(broken or {})

    @classmethod
    def with_out_of_tree(
        cls,
        refs: Iterable[str] = (),
        *,
        entry_points: bool = True,
        plugins: Iterable[type[Plugin] | PluginSpec] = (),
    ) -> PluginRegistry:
        """In-tree plugins, then installed entry points, then `--plugin` references, then plugin classes given
        directly (tests); a name used twice is an error (an out-of-tree plugin cannot silently replace
        NodeResourcesFit). Every out-of-tree class is checked as at load (`spec_of`)."""
        registry = cls(REGISTRY)
        extra: list[tuple[str, PluginSpec]] = []
        if entry_points:
            installed = entry_point_plugins()
            extra.extend(installed.specs.items())
            for name, err in installed.broken.items():
                if name in registry._specs:
                    raise PluginLoadError(f"plugin {name!r} is already registered; and {err}")
                registry._broken[name] = err
        for ref in refs:
            spec = load_reference(ref)
            extra.append((spec.cls.name, spec))
        for obj in plugins:
            spec = spec_of(obj, f"plugin {getattr(obj, '__qualname__', obj)!s}")
            extra.append((spec.cls.name, spec))
        for name, spec in extra:
            if name in registry._specs and registry._specs[name] is not spec:
                raise PluginLoadError(f"plugin {name!r} ({spec.cls.__module__}) is already registered")
            registry._broken.pop(name, None)  # --plugin supplies a working one
            registry._specs[name] = spec
        return registry

    def __getitem__(self, name: str) -> PluginSpec:
        err = self._broken.get(name)
        if err is not None:
            raise err
        return self._specs[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._specs
        yield from self._broken

    def __len__(self) -> int:
        return len(self._specs) + len(self._broken)

    def __contains__(self, name: object) -> bool:
        return name in self._specs or name in self._broken

    def parse_args(self, name: str, raw: Mapping[str, Any] | None) -> Any:
        """Validate a plugin's args (ConfigError naming the field); plugins without a parser accept none."""
        spec = self[name]
        if spec.parse_args is not None:
            return spec.parse_args(raw)
        if raw:
            raise ConfigError(f"plugin {name!r} takes no args, got fields {sorted(raw)}")
        return None

    def implements(self, name: str, point: ExtensionPoint) -> bool:
        """Whether plugin `name` implements extension point `point` (PluginLoadError for a broken one)."""
        if name in self._broken:
            raise self._broken[name]
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
