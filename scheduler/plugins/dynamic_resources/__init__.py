"""DynamicResources (upstream plugins/dynamicresources), split as upstream splits it: `plugin` (the extension
points), `binding` (PreBind's writes and waits, PostFilter's and Unreserve's writes), `claims` (which claims
a pod has), `tracker` (the DRA manager: assume cache, allocations in flight, allocated devices, slices with
DeviceTaintRules), `extended` (extended resources backed by DRA), `scoring`, `explain`, `args`."""

from scheduler.plugins.dynamic_resources.args import Args, parse_args
from scheduler.plugins.dynamic_resources.plugin import DynamicResources, new
from scheduler.plugins.dynamic_resources.state import NAME

__all__ = ["NAME", "Args", "DynamicResources", "new", "parse_args"]
