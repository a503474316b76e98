"""What a node counts for a pod placed on it: upstream's PodRequests with status resources (in-place resize).

kube-scheduler v1.37 runs with InPlacePodVerticalScaling (GA), InPlacePodLevelResourcesVerticalScaling (beta,
on) and PodLevelResources (beta, on), so a NodeInfo accounts a pod with `PodInfo.CalculateResource`
(framework/types.go), i.e. `resourcehelper.PodRequests(pod, UseStatusResources: true, ...)` from
k8s.io/component-helpers/resource/helpers.go:

- each container counts the larger of its spec requests, its allocated resources
  (`status.containerStatuses[].allocatedResources`) and its actuated requests (`...resources.requests`); the
  pod-level `status.allocatedResources` / `status.resources.requests` replace the container sums when both are
  reported;
- while a resize is `PodResizePending` with reason `Infeasible`, the spec is ignored: only what is allocated
  or actuated counts (a container reporting neither counts nothing);
- pod-level requests (`spec.resources.requests`) override cpu, memory and hugepages, themselves maxed with the
  pod-level status;
- the non-zero amounts used by scoring add 100m/200Mi for a container without cpu/memory, except when
  pod-level requests are set: then only a resource missing from the whole pod gets the default.

Amounts are exact rationals (as resource.Quantity) until the caller rounds them up, so sums and maxima do not
accumulate rounding. This module works on resource maps (API name -> amount) and knows nothing of `Resource`;
`types.parse_pod` turns the result into the records the cache uses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, Final

from scheduler.framework.quantity import parse_quantity

ResourceMap = dict[str, Fraction]  # resource name -> amount in base units (cores, bytes, count)
Tracked = Callable[[str], bool]  # which resource names the scheduler accounts (others are not parsed)

CPU: Final = "cpu"
MEMORY: Final = "memory"
HUGEPAGES_PREFIX: Final = "hugepages-"
RESIZE_PENDING: Final = "PodResizePending"
REASON_INFEASIBLE: Final = "Infeasible"

# schedutil.DefaultMilliCPURequest / DefaultMemoryRequest, as quantities.
DEFAULT_CPU: Final = Fraction(100, 1000)
DEFAULT_MEMORY: Final = Fraction(200 * 1024 * 1024)


class ResourceListError(ValueError):
    """An unparsable quantity; the message names the field."""


def parse_list(raw: Any, where: str, tracked: Tracked) -> ResourceMap:
    """A ResourceList of tracked names as exact amounts; names the field of a bad quantity."""
    if not raw:
        return {}
    if not isinstance(raw, Mapping):
        raise ResourceListError(f"{where}: expected a map of quantities")
    out: ResourceMap = {}
    for name, qty in raw.items():
        if not tracked(name):
            continue
        try:
            out[name] = parse_quantity(qty)
        except (ValueError, TypeError) as exc:
            raise ResourceListError(f"{where}.{name}: {exc}") from exc
    return out


def _add(into: ResourceMap, other: Mapping[str, Fraction]) -> None:
    for name, qty in other.items():
        into[name] = into.get(name, 0) + qty


def _max_into(into: ResourceMap, other: Mapping[str, Fraction]) -> None:
    """maxResourceList: every resource of other, kept when larger (or absent) in into."""
    for name, qty in other.items():
        have = into.get(name)
        if have is None or qty > have:
            into[name] = qty


def _max(*lists: Mapping[str, Fraction]) -> ResourceMap:
    out: ResourceMap = {}
    for one in lists:
        _max_into(out, one)
    return out


def is_resize_infeasible(status: Mapping[str, Any]) -> bool:
    """IsPodResizeInfeasible: the first PodResizePending condition has reason Infeasible."""
    for cond in status.get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == RESIZE_PENDING:
            return cond.get("reason") == REASON_INFEASIBLE
    return False


def is_pod_level_supported(name: str) -> bool:
    """IsSupportedPodLevelResource: cpu, memory and hugepages-*."""
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def pod_level_requests_set(spec: Mapping[str, Any]) -> bool:
    """IsPodLevelRequestsSet: spec.resources.requests names a resource supported at pod level."""
    resources = spec.get("resources")
    if not isinstance(resources, Mapping):
        return False
    return any(is_pod_level_supported(name) for name in resources.get("requests") or ())


def uses_status_resources(spec: Mapping[str, Any], status: Mapping[str, Any], *, skip_conditions: bool = False) -> bool:
    """Whether anything besides the container specs can change what a node counts for the pod.

    False for the usual pod (no resize status, no pod-level requests): then PodRequests with status equals
    the spec-only computation and the caller need not run it. `skip_conditions`: the caller knows no
    condition is of type PodResizePending.
    """
    if pod_level_requests_set(spec):
        return True
    if status.get("allocatedResources") is not None or status.get("resources") is not None:
        return True
    # (`type(x) is dict` first: the ABC check costs more than the rest for the usual decoded object)
    for cond in () if skip_conditions else status.get("conditions") or ():
        if (type(cond) is dict or isinstance(cond, Mapping)) and cond.get("type") == RESIZE_PENDING:
            return True
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or ():
            if (type(cs) is dict or isinstance(cs, Mapping)) and (
                cs.get("allocatedResources") is not None or cs.get("resources") is not None
            ):
                return True
    return False


class _Pod:
    """One pod's spec and status, parsed lazily per container for the PodRequests variants."""

    def __init__(self, spec: Mapping[str, Any], status: Mapping[str, Any], tracked: Tracked) -> None:
        self.spec = spec
        self.status = status
        self.tracked = tracked
        self.containers = [(f"spec.containers[{i}]", c) for i, c in enumerate(spec.get("containers") or ())]
        self.init_containers = [
            (f"spec.initContainers[{i}]", c) for i, c in enumerate(spec.get("initContainers") or ())
        ]

    def container_status(self, name: Any) -> tuple[str, Mapping[str, Any]] | None:
        """findContainerStatus: regular statuses first, then init container statuses."""
        for key in ("containerStatuses", "initContainerStatuses"):
            for i, cs in enumerate(self.status.get(key) or ()):
                if isinstance(cs, Mapping) and cs.get("name") == name:
                    return f"status.{key}[{i}]", cs
        return None

    def spec_requests(self, where: str, container: Mapping[str, Any]) -> ResourceMap:
        """The container's requests after API defaulting (a limit without a request is the request)."""
        resources = container.get("resources") or {}
        merged = dict(resources.get("limits") or {})
        merged.update(resources.get("requests") or {})
        return parse_list(merged, f"{where}.resources.requests", self.tracked)

    def aggregate(
        self,
        pick: Callable[[str, Mapping[str, Any], tuple[str, Mapping[str, Any]] | None, bool], ResourceMap],
        use_status: bool,
        non_missing: Mapping[str, Fraction] | None,
    ) -> ResourceMap:
        """aggregateContainerResourcesByFn: containers summed, sidecars added, each init container maxed in."""
        infeasible = use_status and is_resize_infeasible(self.status)

        def one(where: str, container: Mapping[str, Any]) -> ResourceMap:
            cs = self.container_status(container.get("name")) if use_status else None
            res = pick(where, container, cs, infeasible)
            if non_missing:
                res = dict(res)
                for name, qty in non_missing.items():
                    if name not in res:
                        res[name] = qty
            return res

        result: ResourceMap = {}
        for where, container in self.containers:
            _add(result, one(where, container))
        sidecars: ResourceMap = {}
        init_max: ResourceMap = {}
        for where, container in self.init_containers:
            res = one(where, container)
            if container.get("restartPolicy") == "Always":
                _add(result, res)
                _add(sidecars, res)
                res = sidecars
            else:
                res = dict(res)
                _add(res, sidecars)
            _max_into(init_max, res)
        _max_into(result, init_max)
        return result

    # The three per-container views of component-helpers' PodRequests.

    def pick_spec(
        self, where: str, container: Mapping[str, Any], cs: tuple[str, Mapping[str, Any]] | None, infeasible: bool
    ) -> ResourceMap:
        return self.spec_requests(where, container)

    def pick_allocated(
        self, where: str, container: Mapping[str, Any], cs: tuple[str, Mapping[str, Any]] | None, infeasible: bool
    ) -> ResourceMap:
        if cs is not None and cs[1].get("allocatedResources") is not None:
            return parse_list(cs[1]["allocatedResources"], f"{cs[0]}.allocatedResources", self.tracked)
        if infeasible:
            return {}
        return self.spec_requests(where, container)

    def pick_actuated(
        self, where: str, container: Mapping[str, Any], cs: tuple[str, Mapping[str, Any]] | None, infeasible: bool
    ) -> ResourceMap:
        if cs is not None:
            resources = cs[1].get("resources")
            if isinstance(resources, Mapping) and resources.get("requests") is not None:
                return parse_list(resources["requests"], f"{cs[0]}.resources.requests", self.tracked)
            if cs[1].get("allocatedResources") is not None:
                return parse_list(cs[1]["allocatedResources"], f"{cs[0]}.allocatedResources", self.tracked)
        if infeasible:
            return {}
        return self.spec_requests(where, container)

    def requests(self, use_status: bool, non_missing: Mapping[str, Fraction] | None = None) -> ResourceMap:
        """PodRequests(pod, {UseStatusResources, InPlacePodLevelResourcesVerticalScalingEnabled: use_status,
        NonMissingContainerRequests: non_missing}) with pod-level resources and overhead."""
        status = self.status
        if not use_status:
            reqs = self.aggregate(self.pick_spec, False, non_missing)
            infeasible = False
        else:
            infeasible = is_resize_infeasible(status)
            spec_reqs = self.aggregate(self.pick_spec, True, non_missing)
            pod_allocated = status.get("allocatedResources")
            pod_resources = status.get("resources")
            pod_actuated = pod_resources.get("requests") if isinstance(pod_resources, Mapping) else None
            if pod_allocated is not None and pod_actuated is not None:
                # Pod-level status already sums every container (and is not given container defaults).
                allocated = parse_list(pod_allocated, "status.allocatedResources", self.tracked)
                actuated = parse_list(pod_actuated, "status.resources.requests", self.tracked)
            else:
                allocated = self.aggregate(self.pick_allocated, True, non_missing)
                actuated = self.aggregate(self.pick_actuated, True, non_missing)
            reqs = _max(actuated, allocated) if infeasible else _max(spec_reqs, actuated, allocated)
        spec = self.spec
        if pod_level_requests_set(spec):
            effective = parse_list(spec["resources"]["requests"], "spec.resources.requests", self.tracked)
            pod_resources = status.get("resources")
            if use_status and pod_resources is not None:
                statuses = [
                    parse_list(
                        pod_resources.get("requests") if isinstance(pod_resources, Mapping) else None,
                        "status.resources.requests",
                        self.tracked,
                    ),
                    parse_list(status.get("allocatedResources"), "status.allocatedResources", self.tracked),
                ]
                effective = _max({} if infeasible else effective, *statuses)
            for name, qty in effective.items():
                if is_pod_level_supported(name):
                    reqs[name] = qty
        overhead = spec.get("overhead")
        if overhead:
            _add(reqs, parse_list(overhead, "spec.overhead", self.tracked))
        return reqs


def node_accounted_requests(
    spec: Mapping[str, Any], status: Mapping[str, Any], tracked: Tracked
) -> tuple[ResourceMap, ResourceMap]:
    """(requests, non-zero requests) a NodeInfo counts for the pod (PodInfo.CalculateResource, v1.37)."""
    pod = _Pod(spec, status, tracked)
    requests = pod.requests(use_status=True)
    non_missing: dict[str, Fraction]
    if not pod_level_requests_set(spec):
        non_missing = {CPU: DEFAULT_CPU, MEMORY: DEFAULT_MEMORY}
    else:
        # getNonMissingContainerRequests: only a resource the whole pod leaves unset gets the default.
        non_missing = {}
        if CPU not in requests:
            non_missing[CPU] = DEFAULT_CPU
        if MEMORY not in requests:
            non_missing[MEMORY] = DEFAULT_MEMORY
    non_zero = pod.requests(use_status=True, non_missing=non_missing) if non_missing else requests
    return requests, non_zero
