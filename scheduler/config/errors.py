"""The one error type configuration problems raise; its message names the offending field."""


class ConfigError(ValueError):
    """Invalid scheduler configuration; `str(err)` names the field path, e.g. profiles[0].plugins.score."""
