"""The resource-allocation arithmetic NodeResourcesFit's scoring and NodeResourcesBalancedAllocation share
(upstream noderesources/resource_allocation.go, v1.37): which amount of a configured resource the incoming
pod requests (calculatePodResourceRequest) and what a node has of it, allocatable and already requested
(calculateResourceAllocatableRequest), resolved once per cycle into a plan the per-node scores read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from scheduler.config.plugin_args import ResourceSpec
from scheduler.framework.types import CPU, EPHEMERAL_STORAGE, MEMORY, NodeInfo, PodInfo, is_scalar_resource_name

# How a scored resource is read from a node: allocatable and already-requested amounts.
KIND_CPU: Final = 0
KIND_MEMORY: Final = 1
KIND_EPHEMERAL: Final = 2
KIND_SCALAR: Final = 3


@dataclass(frozen=True, slots=True)
class ScoredResource:
    """One configured resource with the incoming pod's request for it, resolved once per cycle."""

    kind: int
    name: str
    pod_request: int
    weight: int


def resource_kind(name: str) -> int:
    if name == CPU:
        return KIND_CPU
    if name == MEMORY:
        return KIND_MEMORY
    if name == EPHEMERAL_STORAGE:
        return KIND_EPHEMERAL
    return KIND_SCALAR


def pod_resource_request(pod: PodInfo, name: str, use_requested: bool, pod_level: bool = True) -> int:
    """calculatePodResourceRequest: cpu/memory use the non-zero defaults unless `use_requested`; without
    `pod_level` the pod-level requests are skipped (NodeResourcesFit's scorer, see PodInfo.container_requests)."""
    requests, nz_cpu, nz_mem = pod.requests, pod.non_zero_cpu, pod.non_zero_memory
    if not pod_level and pod.container_requests is not None:
        requests, nz_cpu, nz_mem = pod.container_requests
    if name == CPU:
        return requests.milli_cpu if use_requested else nz_cpu
    if name == MEMORY:
        return requests.memory if use_requested else nz_mem
    if name == EPHEMERAL_STORAGE:
        return requests.ephemeral_storage
    return requests.scalar.get(name, 0)


def score_plan(
    pod: PodInfo, resources: Sequence[ResourceSpec], use_requested: bool, pod_level: bool = True
) -> list[ScoredResource | None]:
    """Per configured resource, the pod's request; None where upstream skips it for every node.

    A scalar resource the pod does not request is skipped (calculateNodeAllocatableRequest), so it never
    enters the weight sum; the list stays parallel to `resources`.
    """
    plan: list[ScoredResource | None] = []
    for spec in resources:
        req = pod_resource_request(pod, spec.name, use_requested, pod_level)
        if req == 0 and is_scalar_resource_name(spec.name):
            plan.append(None)
        else:
            plan.append(ScoredResource(resource_kind(spec.name), spec.name, req, spec.weight))
    return plan


def node_amounts(res: ScoredResource, node: NodeInfo, use_requested: bool) -> tuple[int, int]:
    """(allocatable, already requested) of one resource on a node (calculateResourceAllocatableRequest).

    Fit scoring reads cpu/memory from the non-zero sums; ephemeral storage and scalars always use the
    real requests. A scalar the node does not advertise reads as (0, 0).
    """
    alloc = node.allocatable
    kind = res.kind
    if kind == KIND_CPU:
        return alloc.milli_cpu, node.requested.milli_cpu if use_requested else node.non_zero_cpu
    if kind == KIND_MEMORY:
        return alloc.memory, node.requested.memory if use_requested else node.non_zero_memory
    if kind == KIND_EPHEMERAL:
        return alloc.ephemeral_storage, node.requested.ephemeral_storage
    if res.name in alloc.scalar:
        return alloc.scalar[res.name], node.requested.scalar.get(res.name, 0)
    return 0, 0
