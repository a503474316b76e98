"""Plugin args types several plugins share and their validation, as upstream's apis/config has them
(types_pluginargs.go `ResourceSpec` and `UtilizationShapePoint`, validation_pluginargs.go
`validateResources` and `validateFunctionShape`): NodeResourcesFit and NodeResourcesBalancedAllocation
score `resources`, NodeResourcesFit and VolumeBinding take a utilization `shape`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from scheduler.config.decode import FieldErrors, as_int, as_list, as_mapping, as_str, check_fields, child

# config.MaxCustomPriorityScore: shape scores are 0..10 and scaled to 0..100.
MAX_CUSTOM_PRIORITY_SCORE: Final = 10
MAX_UTILIZATION: Final = 100

_RESOURCE_FIELDS: Final = frozenset({"name", "weight"})


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A resource a score considers and its weight (config.ResourceSpec)."""

    name: str
    weight: int = 1


@dataclass(frozen=True, slots=True)
class UtilizationShapePoint:
    """One point of the RequestedToCapacityRatio shape: utilization 0..100 maps to score 0..10."""

    utilization: int
    score: int


DEFAULT_RESOURCES: Final = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
"""The v1 default of a scoring strategy's resources (SetDefaults_NodeResourcesFitArgs and BalancedAllocation's)."""


def decode_resources(raw: Any, path: str) -> tuple[ResourceSpec, ...]:
    """Decode a []ResourceSpec, applying the v1 default "weight 0 (or unset) means 1"."""
    out = []
    for i, item in enumerate(as_list(raw, path)):
        where = f"{path}[{i}]"
        entry = as_mapping(item, where)
        check_fields(entry, _RESOURCE_FIELDS, where)
        weight = as_int(entry.get("weight"), child(where, "weight"))
        out.append(ResourceSpec(as_str(entry.get("name"), child(where, "name")), weight or 1))
    return tuple(out)


def validate_resources(resources: Sequence[ResourceSpec], path: str, errs: FieldErrors) -> None:
    """validateResources: every weight in (0, 100]."""
    for i, res in enumerate(resources):
        if res.weight <= 0 or res.weight > 100:
            errs.invalid(
                f"{path}[{i}].weight",
                res.weight,
                f"resource weight of {res.name} not in valid range (0, 100]",
            )


def validate_function_shape(shape: Sequence[UtilizationShapePoint], path: str, errs: FieldErrors) -> None:
    """validateFunctionShape: non-empty, utilization strictly increasing in [0, 100], score in [0, 10]."""
    if not shape:
        errs.required(path, "at least one point must be specified")
        return
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errs.invalid(
                f"{path}[{i}].utilization", shape[i].utilization, "values must be sorted in increasing order"
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= MAX_UTILIZATION:
            errs.invalid(f"{path}[{i}].utilization", point.utilization, "not in valid range [0, 100]")
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errs.invalid(
                f"{path}[{i}].score", point.score, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"
            )
