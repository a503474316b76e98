"""Fail closed: the one list of pod fields that upstream's default profile evaluates and pyscheduler does not.

A pod using any of them is never bound: placing it while ignoring a constraint kube-scheduler enforces
(a volume's zone, a device claim...) is worse for a user than leaving it Pending. Such a pod
gets `PodScheduled=False reason=Unschedulable` and a FailedScheduling event naming the field and the
upstream plugin that would evaluate it, is counted per feature, and is re-checked when the pod changes or
pyscheduler restarts (a newer pyscheduler that has the plugin then schedules it).

An entry applies only while its plugin is missing from pyscheduler's registry and the pod's profile would
run that plugin upstream (a configuration that disables it upstream-style opts out, as kube-scheduler
would then ignore the field too). When a plugin lands, its entries stop applying; remove them then.
docs/feature-gates.md says, for every feature gate v1.37.2 turns on, whether pyscheduler implements it or
which entry here refuses the pods that need it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Final

from scheduler.framework.types import PodInfo

Check = Callable[[PodInfo], str | None]
"""Returns the field path the pod uses (e.g. `spec.volumes[2].persistentVolumeClaim`), or None."""


@dataclass(frozen=True, slots=True)
class UnsupportedFeature:
    """A pod field upstream checks through `plugin`; `feature` is the metric label."""

    feature: str
    plugin: str
    check: Check


@dataclass(frozen=True, slots=True)
class Finding:
    """One unsupported field a pod uses."""

    feature: str
    plugin: str
    field: str


UNSUPPORTED: Final[tuple[UnsupportedFeature, ...]] = ()
"""Every field upstream's default profile (v1.37) evaluates that pyscheduler may lack a plugin for: none
since DynamicResources landed (spec.resourceClaims was the last). The guard stays for the next default
plugin, and for out-of-tree profiles that pass their own entries."""


def find_unsupported(
    pod: PodInfo,
    upstream_plugins: Collection[str],
    implemented: Collection[str],
    features: tuple[UnsupportedFeature, ...] | None = None,
) -> list[Finding]:
    """The unsupported fields pod uses: entries (UNSUPPORTED unless given) whose plugin the profile runs
    upstream but we lack."""
    out: list[Finding] = []
    for entry in UNSUPPORTED if features is None else features:
        if entry.plugin in implemented or entry.plugin not in upstream_plugins:
            continue
        where = entry.check(pod)
        if where is not None:
            out.append(Finding(entry.feature, entry.plugin, where))
    return out


def unsupported_message(findings: list[Finding]) -> str:
    """The FailedScheduling / PodScheduled message for a pod refused by the guard."""
    parts = [f"{f.field} (upstream plugin {f.plugin})" for f in findings]
    return (
        "pyscheduler does not support " + "; ".join(parts) + " yet: the pod is left Pending rather than placed "
        "without checking it; it is retried when the pod changes or pyscheduler restarts"
    )
