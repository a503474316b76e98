"""VolumeBinding (upstream plugins/volumebinding), split as upstream splits it: `plugin` (the extension
points, args, scoring and explanations), `binder` (which claims a node can serve, and the writes PreBind
waits on), `assume_cache` (the binder's decisions held in memory over the object store)."""

from scheduler.plugins.volume_binding.plugin import NAME, Args, VolumeBinding, new, parse_args

__all__ = ["NAME", "Args", "VolumeBinding", "new", "parse_args"]
