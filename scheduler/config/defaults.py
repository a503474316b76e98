"""pyscheduler's default plugins and names (upstream `pkg/scheduler/apis/config/v1/default_plugins.go`)."""

from __future__ import annotations

from scheduler.config.types import PluginRef

DEFAULT_SCHEDULER_NAME = "pyscheduler"
"""Name of the profile when the config has none, or one profile without `schedulerName`."""

DEFAULT_LEASE_NAME = "pyscheduler"
"""Default `leaderElection.resourceName` (upstream's is kube-scheduler; we must never take that lease)."""

DEFAULT_LEASE_NAMESPACE = "kube-system"
"""Default `leaderElection.resourceNamespace` when $POD_NAMESPACE is not set."""

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"

# Upstream getDefaultPlugins() MultiPoint, in upstream order, then applyFeatureGates with v1.37's defaults,
# restricted to the plugins pyscheduler implements. To support another default plugin, insert it at its
# upstream position (listed alongside):
#   ... NodeResourcesFit(1), VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone,
#   PodTopologySpread(2), InterPodAffinity(2), DynamicResources(2) (DynamicResourceAllocation, GA),
#   DefaultPreemption, NodeResourcesBalancedAllocation(1), ImageLocality(1), DefaultBinder,
#   NodeDeclaredFeatures (appended: the NodeDeclaredFeatures gate, GA and locked in v1.37).
# That is 20 plugins upstream, and pyscheduler runs all 20.
# NodeName precedes NodeUnschedulable as in upstream v1.37 default_plugins.go (v1.30-era releases had
# NodeUnschedulable first). Both are Filter-only; the order only decides which reason a node that fails
# both reports.
DEFAULT_MULTI_POINT: tuple[PluginRef, ...] = (
    PluginRef("SchedulingGates"),
    PluginRef("PrioritySort"),
    PluginRef("NodeName"),
    PluginRef("NodeUnschedulable"),
    PluginRef("TaintToleration", 3),
    PluginRef("NodeAffinity", 2),
    PluginRef("NodePorts"),
    PluginRef("NodeResourcesFit", 1),
    PluginRef("VolumeRestrictions"),
    PluginRef("NodeVolumeLimits"),
    PluginRef("VolumeBinding"),
    PluginRef("VolumeZone"),
    PluginRef("PodTopologySpread", 2),
    PluginRef("InterPodAffinity", 2),
    # applyFeatureGates inserts it right before DefaultPreemption (DynamicResourceAllocation is GA and
    # locked): "better to deallocate an idle ResourceClaim than to evict a pod".
    PluginRef("DynamicResources", 2),
    PluginRef("DefaultPreemption"),
    PluginRef("NodeResourcesBalancedAllocation", 1),
    PluginRef("ImageLocality", 1),
    PluginRef("DefaultBinder"),
    PluginRef("NodeDeclaredFeatures"),
)
"""The default MultiPoint enabled list (the only default plugin set in v1)."""

UPSTREAM_PLUGIN_NAMES: frozenset[str] = frozenset(
    {
        "SchedulingGates",
        "PrioritySort",
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DefaultPreemption",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
        "DefaultBinder",
        "DynamicResources",
        "NodeDeclaredFeatures",
        "DeferredPodScheduling",
        "GangScheduling",
    }
)
"""In-tree upstream plugin names: disabling one pyscheduler lacks is a harmless no-op (configs written
for kube-scheduler often do it); enabling or configuring one is reported as not supported."""
