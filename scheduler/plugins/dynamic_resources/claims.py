"""A pod's ResourceClaims: which claim each `spec.resourceClaims[]` entry names, whether the pod may use it,
and the ordered set of claims one scheduling attempt works on (upstream dynamic-resource-allocation/
resourceclaim and the plugin's claims.go).

Claims stay the API's raw JSON: every helper here reads them and none mutates one; a changed claim is always
a copy (`with_status`, `deep_copy`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from scheduler.framework.objects import JSON
from scheduler.framework.types import PodInfo

FINALIZER: Final = "resource.kubernetes.io/delete-protection"
EXTENDED_RESOURCE_CLAIM_ANNOTATION: Final = "resource.kubernetes.io/extended-resource-claim"
# The name of the claim for extended resources while it exists only in memory (PreBind creates it with a
# generated name). Deliberately not a valid object name, so it never collides with a real claim.
SPECIAL_CLAIM_IN_MEM_NAME: Final = "<extended-resources>"
FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE: Final = 8


class ClaimError(Exception):
    """The pod cannot use its claims now (not created yet, being deleted, not its own...); str() is upstream's
    message, which the plugin returns as UnschedulableAndUnresolvable."""


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("spec")
    return value if isinstance(value, Mapping) else {}


def status_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("status")
    return value if isinstance(value, Mapping) else {}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "")


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("uid") or "")


def kobj(obj: Mapping[str, Any]) -> str:
    """klog.KObj: "namespace/name" (just the name for cluster-scoped objects)."""
    ns = namespace_of(obj)
    return f"{ns}/{name_of(obj)}" if ns else name_of(obj)


def allocation_of(claim: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """status.allocation, or None while the claim is not allocated."""
    value = status_of(claim).get("allocation")
    return value if isinstance(value, Mapping) else None


def allocation_results(allocation: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """allocation.devices.results (each one device for one request)."""
    if allocation is None:
        return []
    devices = allocation.get("devices")
    results = devices.get("results") if isinstance(devices, Mapping) else None
    return [r for r in results if isinstance(r, Mapping)] if isinstance(results, list) else []


def reserved_for(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    value = status_of(claim).get("reservedFor")
    return [r for r in value if isinstance(r, Mapping)] if isinstance(value, list) else []


def device_requests(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """spec.devices.requests."""
    devices = spec_of(claim).get("devices")
    requests = devices.get("requests") if isinstance(devices, Mapping) else None
    return [r for r in requests if isinstance(r, Mapping)] if isinstance(requests, list) else []


def has_device_requests(claim: Mapping[str, Any]) -> bool:
    """Whether spec.devices.requests is set (the in-memory extended resource claim has none until Filter)."""
    devices = spec_of(claim).get("devices")
    return isinstance(devices, Mapping) and devices.get("requests") is not None


def is_special_claim_name(name: str) -> bool:
    return name == SPECIAL_CLAIM_IN_MEM_NAME


def deep_copy(claim: Mapping[str, Any]) -> JSON:
    return copy.deepcopy(dict(claim))


def with_status(claim: Mapping[str, Any], **status: Any) -> JSON:
    """A copy of the claim whose status has these fields set (None removes one)."""
    out = deep_copy(claim)
    st = out.setdefault("status", {})
    for key, value in status.items():
        if value is None:
            st.pop(key, None)
        else:
            st[key] = value
    return out


def is_controlled_by(obj: Mapping[str, Any], owner_uid: str) -> bool:
    """metav1.IsControlledBy: the object's controller owner reference has this uid."""
    for ref in meta(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return str(ref.get("uid") or "") == owner_uid
    return False


# ---------------------------------------------------------------------------------------------------------
# Which claim a pod's entry names (resourceclaim.Name, IsForPod, IsReservedForPod)


def claim_name(pod: PodInfo, pod_claim: Mapping[str, Any]) -> tuple[str | None, bool]:
    """resourceclaim.Name: (the claim's name or None when none was generated on purpose, whether it must be
    owned by the pod). Raises ClaimError with upstream's text when the name is not known yet."""
    direct = pod_claim.get("resourceClaimName")
    if direct is not None:
        return str(direct), False
    if pod_claim.get("resourceClaimTemplateName") is not None:
        entry = str(pod_claim.get("name") or "")
        for name, generated in pod.resource_claim_statuses:
            if name == entry:
                return generated, True
        raise ClaimError(f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet')
    raise ClaimError(
        f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{pod_claim.get("name") or ""}": '
        "none of the supported fields are set"
    )


def is_for_pod(pod: PodInfo, claim: Mapping[str, Any]) -> str | None:
    """resourceclaim.IsForPod: None when the pod owns the claim (its controller), else upstream's message."""
    ns, name = namespace_of(claim), name_of(claim)
    if ns != pod.namespace:
        return f"ResourceClaim {ns}/{name} is not in the same namespace as Pod {pod.namespace}/{pod.name}"
    if not is_controlled_by(claim, pod.uid):
        return f"ResourceClaim {ns}/{name} was not created for Pod {pod.namespace}/{pod.name} (Pod is not owner)"
    return None


def is_reserved_for_pod(pod_uid: str, claim: Mapping[str, Any]) -> bool:
    """resourceclaim.IsReservedForPod (PodGroup reservations are off with GenericWorkload)."""
    return any(str(r.get("uid") or "") == pod_uid for r in reserved_for(claim))


def pod_reference(pod: PodInfo) -> JSON:
    """The ResourceClaimConsumerReference for the pod (core group: apiGroup omitted, as the API stores it)."""
    return {"resource": "pods", "name": pod.name, "uid": pod.uid}


def create_sub_request_ref(request: str, sub_request: str) -> str:
    return f"{request}/{sub_request}"


def is_sub_request_ref(ref: str) -> bool:
    return len(ref.split("/")) == 2


# ---------------------------------------------------------------------------------------------------------
# The claims of one attempt


@dataclass(slots=True)
class ClaimStore:
    """claimStore: the pod's claims in spec order, then the claim for its extended resources (if any).

    Entries are replaced (never mutated) when PreBind writes a claim. The extended resource claim starts as
    an in-memory object named SPECIAL_CLAIM_IN_MEM_NAME and becomes the created one in PreBind.
    """

    claims: list[JSON] = field(default_factory=list)
    num_user_owned: int = 0
    initial_extended_uid: str = ""

    @classmethod
    def of(cls, user_claims: Sequence[JSON], extended: JSON | None) -> ClaimStore:
        store = cls(list(user_claims), len(user_claims))
        if extended is not None:
            store.claims.append(extended)
            store.initial_extended_uid = uid_of(extended)
        return store

    def empty(self) -> bool:
        return not self.claims

    def __len__(self) -> int:
        return len(self.claims)

    def all(self) -> Iterator[tuple[int, JSON]]:
        return iter(enumerate(self.claims))

    def user_claims(self) -> Iterator[tuple[int, JSON]]:
        return iter(enumerate(self.claims[: self.num_user_owned]))

    def to_allocate(self) -> list[tuple[int, JSON]]:
        """The claims without an allocation, with their index in the store."""
        return [(i, c) for i, c in enumerate(self.claims) if allocation_of(c) is None]

    def extended_resource_claim(self) -> JSON | None:
        return None if self.num_user_owned == len(self.claims) else self.claims[self.num_user_owned]

    def is_extended(self, index: int) -> bool:
        return index >= self.num_user_owned

    def no_user_claim(self) -> bool:
        return self.num_user_owned == 0

    def get(self, index: int) -> JSON:
        return self.claims[index]

    def set(self, index: int, claim: JSON) -> None:
        self.claims[index] = claim
