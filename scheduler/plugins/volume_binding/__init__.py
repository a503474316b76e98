"""VolumeBinding (upstream plugins/volumebinding), split as upstream splits it: `plugin` (the extension
points, args, scoring and explanations), `binder` (the binder: which claims a node can serve, and the writes
PreBind waits on; with its assume caches)."""

from scheduler.plugins.volume_binding.plugin import NAME, Args, VolumeBinding, new, parse_args

__all__ = ["NAME", "Args", "VolumeBinding", "new", "parse_args"]
