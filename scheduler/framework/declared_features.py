"""Node declared features: which features a pod needs its node to declare (k8s.io/component-helpers
nodedeclaredfeatures v0.37.2, the scheduling half).

A kubelet publishes the features it supports in `node.status.declaredFeatures` (sorted names, validated by
the API server). Upstream keeps the inference in a shared library (the API server's admission plugin and the
kubelet use it too); here it is this module, and the NodeDeclaredFeatures plugin reads its result.

- `FEATURES` is upstream's registry (`features/registry.go`), each entry with its `InferForScheduling` and
  `MaxVersion`. Only three infer anything for scheduling in v0.37.2; the others matter for pod updates
  (in-place resize) or are checked elsewhere (DRA), and infer nothing here, as upstream.
- `infer_for_scheduling` is what `parse_pod` stores in `PodInfo.inferred_features` (once per pod change);
  `required_features` applies the MaxVersion windows against the scheduler's version, as upstream's
  `Framework.InferForPodScheduling` does; a feature past its window is assumed on every node.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from scheduler.release import UPSTREAM_RELEASE

JSON = Mapping[str, Any]


class FeatureInferenceError(ValueError):
    """A pod field the inference reads has the wrong shape; the message names the field."""


# ---------------------------------------------------------------------------------------------------------
# Versions (k8s.io/apimachinery/pkg/util/version: Parse, GreaterThan)

_VERSION_RE: Final = re.compile(r"^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)$")
_IDENTIFIERS: Final = r"[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*"
_EXTRA_RE: Final = re.compile(rf"^(?:-({_IDENTIFIERS}))?(?:\+({_IDENTIFIERS}))?\s*$")


@dataclass(frozen=True, slots=True)
class Version:
    """A Kubernetes version: numeric components, and for a semantic version its pre-release part."""

    components: tuple[int, ...]
    semver: bool = True
    pre_release: str = ""

    @classmethod
    def parse(cls, text: str) -> Version:
        """`version.Parse`: semantic (exactly three components, optional -pre+build) else generic (>= 2)."""
        match = _VERSION_RE.match(text)
        if match is None:
            raise ValueError(f"could not parse {text!r} as version")
        numbers, extra = match.group(1).split("."), match.group(2)
        if numbers[0].startswith("0") and numbers[0] != "0":
            raise ValueError(f"illegal zero-prefixed version component {numbers[0]!r} in {text!r}")
        components = tuple(int(n) for n in numbers)
        semantic = _EXTRA_RE.match(extra) if len(numbers) == 3 else None
        if semantic is not None and not any(n.startswith("0") and n != "0" for n in numbers):
            return cls(components, True, semantic.group(1) or "")
        if len(numbers) < 2:
            raise ValueError(f"illegal version string {text!r}")
        return cls(components, False)

    def compare(self, other: Version) -> int:
        """-1, 0 or 1 (upstream compareInternal: components, then pre-release when both are semantic)."""
        a, b = self.components, other.components
        for m, n in zip(a, b, strict=False):
            if m != n:
                return 1 if m > n else -1
        if len(a) > len(b) and any(a[len(b) :]):
            return 1
        if len(b) > len(a) and any(b[len(a) :]):
            return -1
        if not (self.semver and other.semver) or self.pre_release == other.pre_release:
            return 0
        if not self.pre_release or not other.pre_release:
            return 1 if not self.pre_release else -1
        mine, theirs = self.pre_release.split("."), other.pre_release.split(".")
        for x, y in zip(mine, theirs, strict=False):
            if x.isdigit() and y.isdigit():
                if int(x) != int(y):
                    return 1 if int(x) > int(y) else -1
            elif x != y:
                return 1 if x > y else -1
        if len(mine) != len(theirs):
            return 1 if len(mine) > len(theirs) else -1
        return 0

    def greater_than(self, other: Version) -> bool:
        return self.compare(other) > 0


SCHEDULER_VERSION: Final = Version.parse(UPSTREAM_RELEASE)
"""The scheduler's own version for the MaxVersion windows: the release whose semantics we implement."""


# ---------------------------------------------------------------------------------------------------------
# The registry


@dataclass(frozen=True, slots=True)
class DeclaredFeature:
    """One entry of upstream's registry: its name (what a node declares), the feature gate it depends on,
    whether a pod's spec needs it at scheduling time, and the last version it matters for (None: no end)."""

    name: str
    gate: str
    infer_for_scheduling: Callable[[JSON], bool]
    max_version: Version | None = None


def _never(spec: JSON) -> bool:
    """Features that only matter for pod updates (in-place resize), or that another plugin checks (DRA)."""
    return False


def _items(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise FeatureInferenceError(f"{where}: expected a list, got {type(value).__name__}")
    return value


def _listed(spec: JSON, kind: str) -> list[Any]:
    """spec[kind] as a list (parse_pod has checked `containers`; the other kinds are checked here)."""
    value = spec.get(kind)
    if not value:
        return []
    if type(value) is not list:
        raise FeatureInferenceError(f"spec.{kind}: expected a list, got {type(value).__name__}")
    return value


def _restart_all_containers(spec: JSON) -> bool:
    """A container or init container with a restart rule whose action is RestartAllContainers."""
    for kind in ("containers", "initContainers"):
        for i, c in enumerate(_listed(spec, kind)):
            rules = c.get("restartPolicyRules") if type(c) is dict else None
            if not rules:
                continue
            for j, rule in enumerate(_items(rules, f"spec.{kind}[{i}].restartPolicyRules")):
                if type(rule) is not dict:
                    raise FeatureInferenceError(f"spec.{kind}[{i}].restartPolicyRules[{j}]: expected an object")
                if rule.get("action") == RESTART_ALL_CONTAINERS_ACTION:
                    return True
    return False


def _user_namespaces_host_network(spec: JSON) -> bool:
    """hostNetwork with hostUsers: false (a user namespace on the host's network)."""
    return spec.get("hostNetwork") is True and spec.get("hostUsers") is False


def _volume_bind_mount_options(spec: JSON) -> bool:
    """A volume mount of any container (ephemeral ones included) with bindMountOptions."""
    for kind in ("containers", "initContainers", "ephemeralContainers"):
        for i, c in enumerate(_listed(spec, kind)):
            mounts = c.get("volumeMounts") if type(c) is dict else None
            if not mounts:
                continue
            for mount in _items(mounts, f"spec.{kind}[{i}].volumeMounts"):
                if type(mount) is dict and mount.get("bindMountOptions"):
                    return True
    return False


RESTART_ALL_CONTAINERS_ACTION: Final = "RestartAllContainers"
RESTART_ALL_CONTAINERS: Final = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK: Final = "UserNamespacesHostNetworkSupport"
VOLUME_BIND_MOUNT_OPTIONS: Final = "VolumeBindMountOptions"

FEATURES: Final[tuple[DeclaredFeature, ...]] = tuple(
    sorted(
        (
            DeclaredFeature(RESTART_ALL_CONTAINERS, RESTART_ALL_CONTAINERS, _restart_all_containers),
            DeclaredFeature(
                "InPlacePodLevelResourcesVerticalScaling", "InPlacePodLevelResourcesVerticalScaling", _never
            ),
            DeclaredFeature("ExtendWebSocketsToKubelet", "ExtendWebSocketsToKubelet", _never),
            DeclaredFeature(
                "InPlacePodVerticalScalingInitContainers", "InPlacePodVerticalScalingInitContainers", _never
            ),
            DeclaredFeature(
                "InPlacePodVerticalScalingMemoryBackedVolumes", "InPlacePodVerticalScalingMemoryBackedVolumes", _never
            ),
            DeclaredFeature(USER_NAMESPACES_HOST_NETWORK, USER_NAMESPACES_HOST_NETWORK, _user_namespaces_host_network),
            DeclaredFeature("DRANodeAllocatableResources", "DRANodeAllocatableResources", _never),
            DeclaredFeature(VOLUME_BIND_MOUNT_OPTIONS, VOLUME_BIND_MOUNT_OPTIONS, _volume_bind_mount_options),
            DeclaredFeature("DRAOptionalNodeOperations", "DRAOptionalNodeOperations", _never),
        ),
        key=lambda f: f.name,
    )
)
"""Upstream's `features.AllFeatures` (v0.37.2), sorted by name as `nodedeclaredfeatures.New` sorts it."""

# The entries that can infer anything: the only ones parse_pod has to ask.
_INFERRING: Final = tuple(f for f in FEATURES if f.infer_for_scheduling is not _never)
_CONTAINER_KINDS: Final = ("containers", "initContainers", "ephemeralContainers")


def _may_infer(spec: JSON) -> bool:
    """A cheap screen for the fields `_INFERRING` reads: False means none of them can hold (the usual pod).
    Anything of an unexpected shape answers True, so the full inference reports it with its field."""
    if spec.get("hostNetwork") is True:
        return True
    for kind in _CONTAINER_KINDS:
        containers = spec.get(kind)
        if not containers:
            continue
        if type(containers) is not list:
            return True
        for c in containers:
            if type(c) is not dict or "restartPolicyRules" in c:
                return True
            mounts = c.get("volumeMounts")
            if mounts:
                if type(mounts) is not list:
                    return True
                for m in mounts:
                    if type(m) is not dict or "bindMountOptions" in m:
                        return True
    return False


def infer_for_scheduling(spec: JSON, features: Collection[DeclaredFeature] = FEATURES) -> frozenset[str]:
    """The features whose InferForScheduling holds for this pod spec, before any MaxVersion window.

    For the default registry a pod without restart rules, bind mount options or host network costs one
    screening pass over its containers and their mounts (`_may_infer`): what `parse_pod` adds per pod change.
    """
    if features is FEATURES:
        if not _may_infer(spec):
            return frozenset()
        features = _INFERRING
    found = [f.name for f in features if f.infer_for_scheduling(spec)]
    return frozenset(found) if found else frozenset()


def required_features(
    inferred: frozenset[str], version: Version | None, features: Collection[DeclaredFeature] = FEATURES
) -> frozenset[str]:
    """`inferred` without the features whose MaxVersion the scheduler's version is past (upstream
    InferForPodScheduling's window; a nil target version is an error there too)."""
    if version is None:
        raise ValueError("target version cannot be nil")
    if not inferred:
        return inferred
    expired = {f.name for f in features if f.max_version is not None and version.greater_than(f.max_version)}
    return inferred - expired if expired else inferred


def infer_for_pod_scheduling(
    spec: JSON, version: Version | None, features: Collection[DeclaredFeature] = FEATURES
) -> frozenset[str]:
    """Upstream `Framework.InferForPodScheduling`: the features a node must declare to run this pod."""
    if version is None:
        raise ValueError("target version cannot be nil")
    return required_features(infer_for_scheduling(spec, features), version, features)


def unsatisfied(required: Collection[str], declared: Collection[str]) -> list[str]:
    """The required features a node does not declare, sorted (MatchNodeFeatureSet's UnsatisfiedRequirements)."""
    return sorted(f for f in required if f not in declared)


def parse_declared_features(raw: Any, where: str = "status.declaredFeatures") -> frozenset[str]:
    """A node's declared features as a set (the API server keeps them sorted and unique, so a set loses
    nothing upstream's sorted-list mapping keeps; names no registry entry has are kept and never matter)."""
    names = _items(raw, where)
    for i, name in enumerate(names):
        if not isinstance(name, str):
            raise FeatureInferenceError(f"{where}[{i}]: expected a string, got {type(name).__name__}")
    return frozenset(names) if names else frozenset()
