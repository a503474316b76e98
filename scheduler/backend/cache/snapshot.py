"""Compatibility alias: the Snapshot type lives in scheduler.framework.snapshot (plugins read it; the cache
fills it). Import it from there; this module goes once no branch imports the old path."""

from scheduler.framework.snapshot import Snapshot

__all__ = ["Snapshot"]
