"""PodTopologySpreadArgs (upstream apis/config PodTopologySpreadArgs and its validation, v1.37): the
default constraints a pod without its own gets, "System" (upstream systemDefaultConstraints) or "List"."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from scheduler.config.decode import (
    ARGS_ENVELOPE_FIELDS,
    as_int,
    as_list,
    as_mapping,
    as_str,
    check_fields,
    check_kind,
    child,
    go_value,
)
from scheduler.config.errors import ConfigError
from scheduler.framework.labels import label_key_errors
from scheduler.plugins.pod_topology_spread.common import (
    DO_NOT_SCHEDULE,
    LABEL_HOSTNAME,
    LABEL_TOPOLOGY_ZONE,
    SCHEDULE_ANYWAY,
)

SYSTEM_DEFAULTING: Final = "System"
LIST_DEFAULTING: Final = "List"

SYSTEM_DEFAULT_CONSTRAINTS: Final[tuple[Mapping[str, Any], ...]] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)
"""Upstream systemDefaultConstraints, used when `defaultingType` is System."""


_ARGS_FIELDS: Final = frozenset({"defaultConstraints", "defaultingType"}) | ARGS_ENVELOPE_FIELDS
_CONSTRAINT_FIELDS: Final = frozenset(
    {
        "maxSkew",
        "topologyKey",
        "whenUnsatisfiable",
        "labelSelector",
        "minDomains",
        "nodeAffinityPolicy",
        "nodeTaintsPolicy",
        "matchLabelKeys",
    }
)


@dataclass(frozen=True, slots=True)
class Args:
    """PodTopologySpreadArgs after defaulting and validation; constraints stay API-shaped dicts."""

    default_constraints: tuple[Mapping[str, Any], ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING


def _decode_constraint(raw: Any, path: str) -> dict[str, Any]:
    """Strictly decode one v1.TopologySpreadConstraint (types only; validation comes after)."""
    entry = as_mapping(raw, path)
    check_fields(entry, _CONSTRAINT_FIELDS, path)
    out: dict[str, Any] = {
        "maxSkew": as_int(entry.get("maxSkew"), child(path, "maxSkew"), 32),
        "topologyKey": as_str(entry.get("topologyKey"), child(path, "topologyKey")),
        "whenUnsatisfiable": as_str(entry.get("whenUnsatisfiable"), child(path, "whenUnsatisfiable")),
    }
    if entry.get("labelSelector") is not None:
        out["labelSelector"] = dict(as_mapping(entry["labelSelector"], child(path, "labelSelector")))
    if entry.get("minDomains") is not None:
        out["minDomains"] = as_int(entry["minDomains"], child(path, "minDomains"), 32)
    for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        if entry.get(policy) is not None:
            out[policy] = as_str(entry[policy], child(path, policy))
    keys_path = child(path, "matchLabelKeys")
    keys = [as_str(k, f"{keys_path}[{i}]") for i, k in enumerate(as_list(entry.get("matchLabelKeys"), keys_path))]
    if keys:
        out["matchLabelKeys"] = keys
    return out


def parse_args(raw: Mapping[str, Any] | None, *, path: str = "") -> Args:
    """Decode, default and validate PodTopologySpreadArgs (ValidatePodTopologySpreadArgs' messages).

    Unknown fields and wrong types are decoding errors naming the field; then every validation error is
    collected and reported together, as field.ErrorList.ToAggregate does.
    """
    raw = as_mapping(raw or {}, path)
    check_fields(raw, _ARGS_FIELDS, path)
    check_kind(raw, "PodTopologySpreadArgs", path)
    dc_path = child(path, "defaultConstraints")
    constraints = [
        _decode_constraint(c, f"{dc_path}[{i}]") for i, c in enumerate(as_list(raw.get("defaultConstraints"), dc_path))
    ]
    defaulting = as_str(raw.get("defaultingType"), child(path, "defaultingType")) or SYSTEM_DEFAULTING

    errs: list[str] = []
    dt_path = child(path, "defaultingType")
    if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        errs.append(f'{dt_path}: Unsupported value: {go_value(defaulting)}: supported values: "System", "List"')
    elif defaulting == SYSTEM_DEFAULTING and constraints:
        errs.append(f"{dt_path}: Invalid value: {go_value(defaulting)}: when .defaultConstraints are not empty")
    for i, c in enumerate(constraints):
        p = f"{dc_path}[{i}]"
        if c["maxSkew"] <= 0:
            errs.append(f"{p}.maxSkew: Invalid value: {c['maxSkew']}: not in valid range (0, inf)")
        key = c["topologyKey"]
        if not key:
            errs.append(f"{p}.topologyKey: Required value: can not be empty")
        else:
            errs.extend(f"{p}.topologyKey: Invalid value: {go_value(key)}: {msg}" for msg in label_key_errors(key))
        action = c["whenUnsatisfiable"]
        if not action:
            errs.append(f"{p}.whenUnsatisfiable: Required value: can not be empty")
        elif action not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            errs.append(
                f"{p}.whenUnsatisfiable: Unsupported value: {go_value(action)}: supported values: "
                '"DoNotSchedule", "ScheduleAnyway"'
            )
        if "labelSelector" in c:
            errs.append(
                f"{p}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
            )
        for other in constraints[:i]:
            if other["topologyKey"] == key and other["whenUnsatisfiable"] == action:
                errs.append(f'{p}: Duplicate value: "{{{key}, {action}}}"')
                break
    deduped = list(dict.fromkeys(errs))  # ToAggregate drops duplicate messages
    if deduped:
        raise ConfigError(deduped[0] if len(deduped) == 1 else "[" + ", ".join(deduped) + "]")
    return Args(tuple(constraints), defaulting)


