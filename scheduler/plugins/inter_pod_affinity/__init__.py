"""InterPodAffinity (upstream plugins/interpodaffinity), split as upstream splits it: `plugin` (the plugin:
its sums per pod shape, namespaces, events, explanations), `filtering` (PreFilter, Filter), `scoring`
(PreScore, Score, NormalizeScore), `terms` (a pod's affinity terms, parsed once), `topology_counts` (counts
per topology pair and their sums kept across cycles), `common` (what both halves share), `explain`, `args`."""

from scheduler.plugins.inter_pod_affinity.args import Args, parse_args
from scheduler.plugins.inter_pod_affinity.common import NAME
from scheduler.plugins.inter_pod_affinity.plugin import InterPodAffinity, new

__all__ = ["NAME", "Args", "InterPodAffinity", "new", "parse_args"]
