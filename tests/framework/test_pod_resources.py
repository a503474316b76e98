"""What a node counts for a bound pod: in-place resize status and pod-level requests, as upstream v1.37.

Cases come from upstream's tables: TestCalculatePodResourcesWithResize and TestPodInfoCalculateResources
(pkg/scheduler/framework/types_test.go) and TestPodResourceRequests / TestAggregateContainerRequestsAndLimits /
TestPodRequestsAndLimitsVerticalScalingWrappers (k8s.io/component-helpers/resource/helpers_test.go).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.backend.cache.cache import pod_update_action
from scheduler.framework.interface import ActionType
from scheduler.framework.types import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    NodeInfo,
    ParseError,
    parse_node,
    parse_pod,
)

M500 = 500 * 10**6  # "500M"
M800 = 800 * 10**6
M1200 = 1200 * 10**6
INFEASIBLE = {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
DEFERRED = {"type": "PodResizePending", "status": "True", "reason": "Deferred"}
IN_PROGRESS = {"type": "PodResizeInProgress", "status": "True"}


def rl(cpu: str | None = None, memory: str | None = None, **others: str) -> dict[str, str]:
    out = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    out.update({k.replace("_", "-"): v for k, v in others.items()})
    return out


def pod(
    *,
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    pod_requests: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    overhead: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": "n1", "containers": containers or [{"name": "c1"}]}
    if init:
        spec["initContainers"] = init
    if pod_requests is not None:
        spec["resources"] = {"requests": pod_requests}
    if overhead:
        spec["overhead"] = overhead
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": spec,
        "status": {"phase": "Running", **(status or {})},
    }


def c(name: str, requests: dict[str, str] | None = None, *, sidecar: bool = False, **kw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": "pause", **kw}
    if requests is not None:
        out["resources"] = {"requests": requests}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def cs(name: str, *, actual: dict[str, str] | None = None, allocated: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if actual is not None:
        out["resources"] = {"requests": actual}
    if allocated is not None:
        out["allocatedResources"] = allocated
    return out


def accounted(obj: dict[str, Any]) -> tuple[int, int, int, int]:
    """(cpu m, memory, non-zero cpu m, non-zero memory) a NodeInfo adds for the pod."""
    info = NodeInfo("n1", parse_node({"metadata": {"name": "n1"}}))
    info.add_pod(parse_pod(obj))
    return info.requested.milli_cpu, info.requested.memory, info.non_zero_cpu, info.non_zero_memory


# TestCalculatePodResourcesWithResize (types_test.go): containers c1, init i1, sidecar s1.
RESIZE_CASES = [
    pytest.param(
        pod(
            containers=[c("c1", rl("500m", "500M"))],
            status={"containerStatuses": [cs("c1", actual=rl("500m", "500M"))]},
        ),
        (500, M500, 500, M500),
        id="no-pending-resize",
    ),
    pytest.param(
        pod(
            containers=[c("c1", rl("500m", "500M"))],
            pod_requests=rl("700m", "500M"),
            status={
                "resources": {"requests": rl("500m", "500M")},
                "containerStatuses": [cs("c1", actual=rl("700m", "500M"))],
            },
        ),
        (700, M500, 700, M500),
        id="pod-level-no-pending-resize",
    ),
    pytest.param(
        pod(
            containers=[c("c1", rl("500m", "500M"))],
            status={"conditions": [IN_PROGRESS], "containerStatuses": [cs("c1", actual=rl("500m", "500M"))]},
        ),
        (500, M500, 500, M500),
        id="resize-in-progress",
    ),
    pytest.param(
        pod(
            containers=[c("c1", rl("500m", "500M"))],
            pod_requests=rl("700m", "500M"),
            status={
                "conditions": [IN_PROGRESS],
                "resources": {"requests": rl("500m", "500M")},
                "containerStatuses": [cs("c1", actual=rl("700m", "500M"))],
            },
        ),
        (700, M500, 700, M500),
        id="pod-level-resize-in-progress",
    ),
    pytest.param(
        pod(
            containers=[c("c1", rl("700m", "800M"))],
            status={"conditions": [DEFERRED], "containerStatuses": [cs("c1", actual=rl("500m", "500M"))]},
        ),
        (700, M800, 700, M800),
        id="deferred-resize-counts-the-larger-spec",
    ),
    pytest.param(
        pod(
            containers=[c("c1", rl("500m", "500M"))],
            pod_requests=rl("700m", "800M"),
            status={
                "conditions": [DEFERRED],
                "resources": {"requests": rl("500m", "500M")},
                "containerStatuses": [cs("c1", actual=rl("500m", "500M"))],
            },
        ),
        (700, M800, 700, M800),
        id="pod-level-deferred-resize",
    ),
    pytest.param(
        pod(
            containers=[c("c1", rl("700m", "800M"))],
            status={"conditions": [INFEASIBLE], "containerStatuses": [cs("c1", actual=rl("500m", "500M"))]},
        ),
        (500, M500, 500, M500),
        id="infeasible-resize-counts-what-is-running",
    ),
    pytest.param(
        pod(
            containers=[c("c1", rl("500m", "500M"))],
            init=[c("i1", rl("700m", "800M"))],
            status={
                "containerStatuses": [cs("c1", actual=rl("500m", "500M"))],
                "initContainerStatuses": [cs("i1", actual=rl("700m", "800M"))],
            },
        ),
        (700, M800, 700, M800),
        id="init-container-no-pending-resize",
    ),
    pytest.param(
        pod(
            containers=[c("c1", rl("500m", "500M"))],
            init=[c("i1", rl("700m", "800M")), c("s1", rl("700m", "800M"), sidecar=True)],
            status={
                "containerStatuses": [cs("c1", actual=rl("500m", "500M"))],
                "initContainerStatuses": [cs("i1", actual=rl("700m", "800M")), cs("s1", actual=rl("700m", "800M"))],
            },
        ),
        (1200, M500 + M800, 1200, M500 + M800),
        id="sidecar-no-pending-resize",
    ),
]


@pytest.mark.parametrize(("obj", "want"), RESIZE_CASES)
def test_calculate_resource_with_resize(obj: dict[str, Any], want: tuple[int, int, int, int]) -> None:
    """A bound pod counts max(spec, actuated, allocated); an Infeasible resize counts only what runs."""
    assert accounted(obj) == want


# TestPodResourceRequests / TestAggregateContainerRequestsAndLimits / ...VerticalScalingWrappers (helpers_test.go),
# cpu only: (pod, want millicores).
REQUEST_CASES = [
    pytest.param(
        pod(
            containers=[c("container-1", rl("4"))],
            status={"conditions": [INFEASIBLE], "containerStatuses": [cs("container-1", actual=rl("2"))]},
        ),
        2000,
        id="resized-infeasible",
    ),
    pytest.param(
        pod(
            containers=[c("container-1", rl("6"))],
            status={
                "conditions": [INFEASIBLE],
                "containerStatuses": [cs("container-1", actual=rl("2"), allocated=rl("4"))],
            },
        ),
        4000,
        id="resized-infeasible-and-in-progress",
    ),
    pytest.param(
        pod(containers=[c("container-1", rl("4"))], status={"containerStatuses": [cs("container-1", actual=rl("2"))]}),
        4000,
        id="resized-no-resize-status",
    ),
    pytest.param(
        pod(
            init=[c("restartable-init-1", rl("4"), sidecar=True)],
            containers=[c("main")],
            status={"conditions": [INFEASIBLE], "initContainerStatuses": [cs("restartable-init-1", actual=rl("2"))]},
        ),
        2000,
        id="restartable-init-container-infeasible",
    ),
    pytest.param(
        pod(
            init=[c("restartable-init-1", rl("4"), sidecar=True)],
            containers=[c("main")],
            status={"initContainerStatuses": [cs("restartable-init-1", actual=rl("2"))]},
        ),
        4000,
        id="restartable-init-container-no-resize-status",
    ),
    pytest.param(
        pod(containers=[c("container-1")], status={"containerStatuses": [cs("container-1", actual=rl("2"))]}),
        2000,
        id="empty-requests-but-status-has-requests",
    ),
    pytest.param(
        pod(
            init=[c("container-1", sidecar=True)],
            containers=[c("main")],
            status={"initContainerStatuses": [cs("container-1", actual=rl("2"))]},
        ),
        2000,
        id="sidecar-empty-requests-but-status-has-requests",
    ),
    pytest.param(
        pod(
            containers=[c("c1", rl("1")), c("c2", rl("2"))],
            status={"containerStatuses": [cs("c1", allocated=rl("2")), cs("c2", allocated=rl("1"))]},
        ),
        3000,
        id="max-of-sums-not-sum-of-maxes",
    ),
    pytest.param(
        pod(
            containers=[c("c1", rl("1"))],
            status={"allocatedResources": rl("4"), "resources": {"requests": rl("3")}},
        ),
        4000,
        id="pod-level-status-replaces-container-statuses",
    ),
    pytest.param(
        pod(
            containers=[c("c1", rl("1"))],
            status={
                "resources": {"requests": rl("3")},
                "containerStatuses": [cs("c1", allocated=rl("6"), actual=rl("5"))],
            },
        ),
        6000,
        id="falls-back-to-containers-without-pod-allocated",
    ),
    pytest.param(
        pod(
            containers=[c("c1", rl("1"))],
            status={"allocatedResources": rl("6"), "containerStatuses": [cs("c1", allocated=rl("6"), actual=rl("5"))]},
        ),
        6000,
        id="falls-back-to-containers-without-pod-resources",
    ),
    pytest.param(
        pod(
            containers=[c("c1", rl("1"))],
            pod_requests=rl("2"),
            status={"allocatedResources": rl("3"), "resources": {"requests": rl("3.5")}},
        ),
        3500,
        id="pod-level-requests-with-status",
    ),
    pytest.param(
        pod(
            containers=[c("c1", rl("1"))],
            pod_requests=rl("10"),
            status={"conditions": [INFEASIBLE], "allocatedResources": rl("3"), "resources": {"requests": rl("4")}},
        ),
        4000,
        id="pod-level-requests-infeasible-resize",
    ),
    pytest.param(
        pod(containers=[c("c1", rl("4"))], status={"conditions": [INFEASIBLE]}),
        0,
        id="infeasible-without-container-status-counts-nothing",
    ),
]


@pytest.mark.parametrize(("obj", "want_cpu"), REQUEST_CASES)
def test_pod_requests_with_status(obj: dict[str, Any], want_cpu: int) -> None:
    """PodRequests(UseStatusResources) as component-helpers computes it, seen through NodeInfo.requested."""
    assert accounted(obj)[0] == want_cpu


def test_three_way_maximum_is_per_resource() -> None:
    """Each resource takes its own maximum of spec, allocated and actuated (upstream: per-resource 3-way)."""
    obj = pod(
        containers=[c("container-1", {"cpu": "30m", "memory": "20M", "ephemeral-storage": "10G"})],
        status={
            "containerStatuses": [
                cs(
                    "container-1",
                    allocated={"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"},
                    actual={"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"},
                )
            ]
        },
    )
    info = NodeInfo("n1", parse_node({"metadata": {"name": "n1"}}))
    info.add_pod(parse_pod(obj))
    assert (info.requested.milli_cpu, info.requested.memory, info.requested.ephemeral_storage) == (
        30,
        30 * 10**6,
        30 * 10**9,
    )


# TestPodInfoCalculateResources (types_test.go): pod-level requests and the non-zero defaults.
POD_LEVEL_CASES = [
    pytest.param(
        pod(containers=[c("c")]), (0, 0, DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST), id="requestless-container"
    ),
    pytest.param(
        pod(
            containers=[c("c", rl("500m", "500M"))],
            init=[c("i", rl("500m", "500M"))],
            pod_requests=rl("1200m", "1200M"),
        ),
        (1200, M1200, 1200, M1200),
        id="init-container-with-pod-level-requests",
    ),
    pytest.param(
        pod(
            containers=[c("c", rl("500m", "500M"))],
            init=[c("s", rl("500m", "500M"), sidecar=True)],
            pod_requests=rl("1200m", "1200M"),
        ),
        (1200, M1200, 1200, M1200),
        id="sidecar-with-pod-level-requests",
    ),
    pytest.param(
        pod(containers=[c("c")], init=[c("i")], pod_requests=rl(memory="1200M")),
        (0, M1200, DEFAULT_MILLI_CPU_REQUEST, M1200),
        id="pod-level-memory-only",
    ),
    pytest.param(
        pod(containers=[c("c")], init=[c("i")], pod_requests=rl("500m")),
        (500, 0, 500, DEFAULT_MEMORY_REQUEST),
        id="pod-level-cpu-only",
    ),
    pytest.param(
        # Pod-level cpu is set and one container requests memory: the whole pod has a memory request, so the
        # container without one gets no 200Mi default (getNonMissingContainerRequests).
        pod(containers=[c("a", rl(memory="1Gi")), c("b")], pod_requests=rl("1")),
        (1000, 2**30, 1000, 2**30),
        id="pod-level-set-no-per-container-default",
    ),
]


@pytest.mark.parametrize(("obj", "want"), POD_LEVEL_CASES)
def test_pod_level_requests_and_non_zero_defaults(obj: dict[str, Any], want: tuple[int, int, int, int]) -> None:
    """Pod-level requests override cpu/memory; defaults apply only to resources the whole pod leaves unset."""
    assert accounted(obj) == want


def test_incoming_pod_scores_with_per_container_defaults() -> None:
    """The pod being scheduled keeps Fit's scoring view: 100m/200Mi for each container missing a request."""
    info = parse_pod(pod(containers=[c("a", rl(memory="1Gi")), c("b")], pod_requests=rl("1")))
    assert (info.non_zero_cpu, info.non_zero_memory) == (1000, 2**30 + DEFAULT_MEMORY_REQUEST)
    assert info.accounted is not None and info.accounted[2] == 2**30


def test_usual_pod_keeps_no_second_record() -> None:
    """A pod without resize status or pod-level requests shares its spec requests with the node view."""
    assert (
        parse_pod(
            pod(containers=[c("c1", rl("1"))], status={"containerStatuses": [{"name": "c1", "ready": True}]})
        ).accounted
        is None
    )
    same = parse_pod(
        pod(containers=[c("c1", rl("1"))], status={"containerStatuses": [cs("c1", actual=rl("1"), allocated=rl("1"))]})
    )
    assert same.accounted is None


def test_remove_pod_subtracts_what_was_added() -> None:
    """Removing a resized pod leaves the node as it was: add and remove use the same accounting."""
    obj = pod(containers=[c("c1", rl("1", "1Gi"))], status={"containerStatuses": [cs("c1", allocated=rl("3", "2Gi"))]})
    info = NodeInfo("n1", parse_node({"metadata": {"name": "n1"}}))
    p = parse_pod(obj)
    info.add_pod(p)
    assert (info.requested.milli_cpu, info.requested.memory) == (3000, 2 * 2**30)
    info.remove_pod(p.uid)
    assert (info.requested.milli_cpu, info.requested.memory, info.non_zero_cpu, info.non_zero_memory) == (0, 0, 0, 0)


def test_scale_down_event_uses_status_resources() -> None:
    """Allocated resources dropping after a resize is a scale-down (extractPodScaleDown uses status)."""
    before = parse_pod(pod(containers=[c("c1", rl("1"))], status={"containerStatuses": [cs("c1", allocated=rl("3"))]}))
    after = parse_pod(pod(containers=[c("c1", rl("1"))], status={"containerStatuses": [cs("c1", allocated=rl("1"))]}))
    assert pod_update_action(before, after) == ActionType.UPDATE_POD_SCALE_DOWN
    assert pod_update_action(after, before) == ActionType.UPDATE  # a scale-up is a plain update


def test_bad_status_quantity_names_the_field() -> None:
    """An unparsable allocated quantity is a ParseError naming the status field."""
    obj = pod(containers=[c("c1", rl("1"))], status={"containerStatuses": [cs("c1", allocated={"cpu": "lots"})]})
    with pytest.raises(ParseError, match=r"status\.containerStatuses\[0\]\.allocatedResources\.cpu"):
        parse_pod(obj)
