"""Extended resources backed by DRA (upstream extendeddynamicresources.go; DRAExtendedResource, GA in v1.37).

A pod asking `example.com/gpu: 1` on a node that publishes no such allocatable, while a DeviceClass names
that extended resource (or the pod asks `deviceclass.resource.kubernetes.io/<class>`), gets devices of that
class instead: NodeResourcesFit leaves the resource to this plugin, PreFilter makes an in-memory claim with
no requests (owned by the pod, annotated as the extended resource claim), Filter gives it, per node, one
device request per container and resource the node does not provide itself, and PreBind creates it with a
generated name and records in the pod's status which container request maps to which device request.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scheduler.dra.deviceclass import ExtendedResourceClasses, is_dra_extended_resource_name
from scheduler.framework.objects import JSON
from scheduler.framework.types import ContainerExtendedRequests, NodeInfo, PodInfo
from scheduler.plugins.dynamic_resources.claims import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    SPECIAL_CLAIM_IN_MEM_NAME,
    deep_copy,
    is_controlled_by,
    meta,
    name_of,
)

ERR_CANNOT_FIT = "cannot fit resource"
ERR_STALE_CLAIM = "cannot schedule extended resource claim"


def backed_scalar_requests(pod: PodInfo, classes: ExtendedResourceClasses) -> dict[str, int] | None:
    """hasDeviceClassMappedExtendedResource: the pod's scalar requests when one of them is an extended
    resource a DeviceClass backs, else None (the pod has nothing for DRA)."""
    scalar = pod.requests.scalar
    if not scalar or not classes.any():
        return None
    for name, quantity in scalar.items():
        if quantity and is_dra_extended_resource_name(name) and classes.device_class(name) is not None:
            return dict(scalar)
    return None


def find_extended_resource_claim(pod: PodInfo, claims: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """findExtendedResourceClaim: a claim annotated as an extended resource claim whose controller is the pod."""
    for claim in claims:
        annotations = meta(claim).get("annotations") or {}
        if annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        for ref in meta(claim).get("ownerReferences") or []:
            if isinstance(ref, Mapping) and ref.get("name") == pod.name and is_controlled_by(claim, pod.uid):
                return claim
    return None


def new_extended_resource_claim(pod: PodInfo) -> JSON:
    """The in-memory claim for the pod's extended resources: no requests yet, a temporary uid (to track its
    allocation in flight), the name it will be created with generated from the pod's."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": pod.namespace,
            "name": SPECIAL_CLAIM_IN_MEM_NAME,
            "uid": str(uuid.uuid4()),
            "generateName": f"{pod.name}-extended-resources-",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid, "controller": True}
            ],
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        },
        "spec": {},
    }


def node_extended_resources(
    pod_scalar: Mapping[str, int], node: NodeInfo, classes: ExtendedResourceClasses
) -> tuple[dict[str, int], bool]:
    """The extended resources the node must provide through DRA (backed by a class, and 0 allocatable of them
    on the node), and False when some other extended resource is neither allocatable there nor backed."""
    allocatable = node.node.allocatable.scalar if node.node is not None else {}
    needed: dict[str, int] = {}
    for name, quantity in pod_scalar.items():
        if not quantity or not is_dra_extended_resource_name(name):
            continue
        backed = classes.device_class(name) is not None
        if backed and not allocatable.get(name, 0):
            needed[name] = quantity
        elif name not in allocatable:
            return needed, False
    return needed, True


def node_claim(
    claim: Mapping[str, Any], pod: PodInfo, needed: Mapping[str, int], classes: ExtendedResourceClasses
) -> tuple[JSON, list[JSON]]:
    """The node's variant of the extended resource claim (its device requests) and the pod's request
    mappings (container, resource -> device request)."""
    requests, mappings = create_requests_and_mappings(pod.extended_requests, needed, classes)
    out = deep_copy(claim)
    out.setdefault("spec", {})["devices"] = {"requests": requests}
    return out, mappings


def _container_request(
    container: ContainerExtendedRequests, resource: str, class_name: str, reusable: Sequence[JSON | None]
) -> tuple[JSON | None, list[JSON]]:
    """createResourceRequestAndMappings: one container's device request for a resource (None when requests
    of later long-lived containers, which an init container may reuse, cover it) and its mappings."""
    amounts = dict(container.amounts)
    if resource not in amounts or not amounts[resource]:
        return None, []
    wanted = amounts[resource]
    mappings: list[JSON] = []
    covered = 0
    for request in reusable:
        if request is None:
            continue
        covered += int(request["exactly"]["count"])
        mappings.append({"containerName": container.name, "resourceName": resource, "requestName": request["name"]})
        if covered >= wanted:
            return None, mappings
    index = container.request_names.index(resource) if resource in container.request_names else 0
    name = f"container-{container.index}-request-{index}"
    request = {
        "name": name,
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": wanted - covered},
    }
    mappings.append({"containerName": container.name, "resourceName": resource, "requestName": name})
    return request, mappings


def create_requests_and_mappings(
    containers: Sequence[ContainerExtendedRequests], needed: Mapping[str, int], classes: ExtendedResourceClasses
) -> tuple[list[JSON], list[JSON]]:
    """createRequestsAndMappings: per resource (sorted), a request per long-lived container (regular and
    sidecar) and one for the largest short-lived init container (which reuses the requests of the
    long-lived containers after it first); requests sorted by name, mappings long-lived first."""
    by_index = {c.index: c for c in containers}
    count = max(by_index, default=-1) + 1
    requests: list[JSON] = []
    mappings: list[JSON] = []
    for resource in sorted(needed):
        cls = classes.device_class(resource)
        if cls is None:
            continue
        class_name = name_of(cls)
        long_lived: list[JSON | None] = [None] * count
        long_mappings: list[JSON] = []
        for container in containers:
            if container.short_lived:
                continue
            request, found = _container_request(container, resource, class_name, ())
            long_lived[container.index] = request
            long_mappings.extend(found)
        largest: JSON | None = None
        short_names: set[str] = set()
        short_mappings: list[JSON] = []
        for container in containers:
            if not container.short_lived:
                continue
            request, found = _container_request(container, resource, class_name, long_lived[container.index :])
            if request is not None:
                short_names.add(request["name"])
                if largest is None or int(largest["exactly"]["count"]) < int(request["exactly"]["count"]):
                    largest = request
            short_mappings.extend(found)
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest["name"])
            for mapping in short_mappings:
                if mapping["requestName"] in short_names:
                    mapping["requestName"] = largest["name"]
        if largest is not None:
            requests.append(largest)
        requests.extend(r for r in long_lived if r is not None)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: str(r["name"]))
    return requests, mappings
