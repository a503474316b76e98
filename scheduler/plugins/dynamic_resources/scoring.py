"""DynamicResources' Score (upstream computeScore, DRAPrioritizedList GA): a node is better the earlier in
each `firstAvailable` list the subrequest chosen on it is (8 for the first of the up to 8 subrequests, 1 for
the last), summed over the pod's claims; NormalizeScore then scales the best node to 100."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.plugins.dynamic_resources.claims import (
    FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE,
    ClaimStore,
    allocation_of,
    allocation_results,
    create_sub_request_ref,
    device_requests,
    is_sub_request_ref,
)


def compute_score(claims: ClaimStore, results: Sequence[Mapping[str, Any]]) -> int:
    """The node's score: claims allocated earlier use their own allocation, the others take the node's
    allocations in claim order."""
    score = 0
    unallocated = 0
    for _, claim in claims.all():
        allocation = allocation_of(claim)
        if allocation is None:
            if unallocated >= len(results):
                raise ValueError(
                    f"number of allocations {len(results)} is smaller than number of claims needing allocation"
                )
            allocation = results[unallocated]
            unallocated += 1
        chosen = {
            str(r.get("request") or "")
            for r in allocation_results(allocation)
            if is_sub_request_ref(str(r.get("request") or ""))
        }
        if not chosen:
            continue
        for request in device_requests(claim):
            if request.get("exactly") is not None:
                continue
            for i, sub in enumerate(request.get("firstAvailable") or []):
                if isinstance(sub, Mapping):
                    ref = create_sub_request_ref(str(request.get("name") or ""), str(sub.get("name") or ""))
                    if ref in chosen:
                        score += FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE - i
    return score
