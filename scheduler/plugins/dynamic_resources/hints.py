"""DynamicResources' QueueingHint for ResourceClaim events (upstream isSchedulableAfterClaimChange, v1.37.2).

A claim event requeues a pod DynamicResources rejected (or gated in PreEnqueue) only when it may help: a claim
that lost its allocation (deallocated, or deleted while allocated) frees devices for anyone; otherwise only a
change of one of the pod's own claims counts: its creation, or a change of its status. Upstream evaluates the
hint for every such pod and event; the claim's name is compared with the pod's claim names first, which gives
upstream's answer (a claim the pod does not name can only matter as a deallocation) without looking the pod's
claims up, so an event costs one cheap test per waiting pod.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.framework.interface import QueueingHint
from scheduler.framework.objects import JSON
from scheduler.framework.types import PodInfo
from scheduler.plugins.dynamic_resources.claims import (
    ClaimError,
    allocation_of,
    name_of,
    namespace_of,
    status_of,
    uid_of,
)

PodClaims = Callable[[PodInfo], list[JSON]]


def names_claim(pod: PodInfo, namespace: str, name: str) -> bool:
    """Whether one of the pod's spec.resourceClaims names this claim (directly, or through the claim generated
    for a template entry as recorded in the pod's status)."""
    if pod.namespace != namespace:
        return False
    for entry in pod.resource_claims:
        if entry.get("resourceClaimName") == name:
            return True
    return any(generated == name for _, generated in pod.resource_claim_statuses)


def after_claim_change(pod_claims: PodClaims, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    """upstream isSchedulableAfterClaimChange for a claim event (`old`/`new`: the claim before and after, None
    for a creation / deletion; both None for a resync, whose changes are unknown)."""
    if not isinstance(new, Mapping):
        if not isinstance(old, Mapping):
            return QueueingHint.QUEUE  # final state unknown: play it safe
        # Deleted: only an allocation it held can matter (normally its removal was an update seen before).
        return QueueingHint.QUEUE if allocation_of(old) is not None else QueueingHint.QUEUE_SKIP
    deallocated = isinstance(old, Mapping) and allocation_of(old) is not None and allocation_of(new) is None
    if not deallocated and not names_claim(pod, namespace_of(new), name_of(new)):
        return QueueingHint.QUEUE_SKIP  # an unrelated claim got modified
    try:
        claims = pod_claims(pod)
    except ClaimError:
        return QueueingHint.QUEUE_SKIP  # the pod still cannot use its claims
    if deallocated:
        return QueueingHint.QUEUE  # devices were freed
    if not any(uid_of(claim) == uid_of(new) for claim in claims):
        return QueueingHint.QUEUE_SKIP
    if not isinstance(old, Mapping):
        return QueueingHint.QUEUE  # the pod's claim got created
    # A change outside the status (e.g. the finalizer) does not matter to the pod.
    return QueueingHint.QUEUE if status_of(old) != status_of(new) else QueueingHint.QUEUE_SKIP
