"""InterPodAffinityArgs (upstream apis/config InterPodAffinityArgs and its validation, v1.37): the weight of
existing pods' required affinity in scores, and whether their preferred terms are ignored."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from scheduler.config.decode import (
    ARGS_ENVELOPE_FIELDS,
    FieldErrors,
    as_int,
    as_mapping,
    check_fields,
    check_kind,
    child,
    decode_error,
    json_quote,
    json_type,
)

DEFAULT_HARD_POD_AFFINITY_WEIGHT: Final = 1
MIN_HARD_POD_AFFINITY_WEIGHT: Final = 0
MAX_HARD_POD_AFFINITY_WEIGHT: Final = 100


@dataclass(frozen=True, slots=True)
class Args:
    """InterPodAffinityArgs after defaulting and validation."""

    hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    ignore_preferred_terms_of_existing_pods: bool = False


_ARGS_FIELDS: Final = frozenset({"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"}) | ARGS_ENVELOPE_FIELDS


def parse_args(raw: Mapping[str, Any] | None, *, path: str = "") -> Args:
    """Decode strictly, default (hardPodAffinityWeight 1) and validate (weight in [0, 100])."""
    raw = as_mapping(raw or {}, path)
    check_fields(raw, _ARGS_FIELDS, path)
    check_kind(raw, "InterPodAffinityArgs", path)
    weight_path = child(path, "hardPodAffinityWeight")
    weight_raw = raw.get("hardPodAffinityWeight")
    weight = DEFAULT_HARD_POD_AFFINITY_WEIGHT if weight_raw is None else as_int(weight_raw, weight_path, bits=32)
    ignore_path = child(path, "ignorePreferredTermsOfExistingPods")
    ignore = raw.get("ignorePreferredTermsOfExistingPods")
    if ignore is None:
        ignore = False
    elif not isinstance(ignore, bool):
        decode_error(ignore_path, f"must be a boolean, got {json_type(ignore)} {json_quote(ignore)}")
    errs = FieldErrors()
    if not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
        errs.invalid(
            weight_path,
            weight,
            f"not in valid range [{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]",
        )
    errs.raise_if_any()
    return Args(weight, ignore)


