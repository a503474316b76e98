"""PodTopologySpread (upstream plugins/podtopologyspread), split as upstream splits it: `plugin` (the plugin:
its constraints, events, explanations and fixes), `filtering` (PreFilter, Filter), `scoring` (PreScore,
Score, NormalizeScore), `common` (constraints, the default selector, what both halves share), `args`
(PodTopologySpreadArgs) and `domain_sums` (per-domain counts kept across cycles)."""

from scheduler.plugins.pod_topology_spread.args import Args, parse_args
from scheduler.plugins.pod_topology_spread.common import NAME
from scheduler.plugins.pod_topology_spread.plugin import PodTopologySpread, new

__all__ = ["NAME", "Args", "PodTopologySpread", "new", "parse_args"]
