"""compute_pod_requests: upstream PodRequests arithmetic (init max, sidecars, overhead, non-zero defaults)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.types import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    ParseError,
    Resource,
    compute_pod_requests,
)
from scheduler.testing import PodBuilder, make_pod

GI = 2**30
DEF_CPU = DEFAULT_MILLI_CPU_REQUEST
DEF_MEM = DEFAULT_MEMORY_REQUEST


def spec(pod: PodBuilder) -> dict[str, Any]:
    spec: dict[str, Any] = pod.obj()["spec"]
    return spec


@pytest.mark.parametrize(
    ("pod", "cpu", "memory", "nz_cpu", "nz_memory"),
    [
        pytest.param(make_pod(), 0, 0, DEF_CPU, DEF_MEM, id="best-effort-gets-defaults-for-scoring-only"),
        pytest.param(
            make_pod().req(cpu="1", memory="1Gi").req(cpu="500m", memory="1Gi"),
            1500,
            2 * GI,
            1500,
            2 * GI,
            id="containers-sum",
        ),
        pytest.param(
            make_pod()
            .req(cpu="2", memory="1G")
            .req(cpu="1", memory="1G")
            .init_container({"cpu": "2", "memory": "1G"})
            .init_container({"cpu": "2", "memory": "3G"}),
            3000,
            3 * 10**9,
            3000,
            3 * 10**9,
            id="upstream-doc-example-init-max-per-dimension",
        ),
        pytest.param(
            make_pod().req(cpu="1").init_container({"cpu": "500m"}, restart_policy="Always"),
            1500,
            0,
            1500,
            2 * DEF_MEM,
            id="sidecar-adds-to-containers",
        ),
        pytest.param(
            make_pod()
            .req(cpu="1")
            .init_container({"cpu": "1"}, restart_policy="Always")
            .init_container({"cpu": "2"}),
            3000,
            0,
            3000,
            2 * DEF_MEM,
            id="init-after-sidecar-runs-beside-it",
        ),
        pytest.param(
            make_pod()
            .req(cpu="1")
            .init_container({"cpu": "2"})
            .init_container({"cpu": "1"}, restart_policy="Always"),
            2000,
            0,
            2000,
            2 * DEF_MEM,
            id="init-before-sidecar-does-not-see-it",
        ),
        pytest.param(
            make_pod().req(cpu="1", memory="1Gi").overhead(cpu="250m", memory="64Mi"),
            1250,
            GI + 64 * 2**20,
            1250,
            GI + 64 * 2**20,
            id="overhead-added-to-both",
        ),
        pytest.param(
            make_pod().container(limits={"cpu": "2", "memory": "1Gi"}),
            2000,
            GI,
            2000,
            GI,
            id="limit-without-request-is-the-request",
        ),
        pytest.param(
            make_pod().container(requests={"cpu": "500m"}, limits={"cpu": "2", "memory": "1Gi"}),
            500,
            GI,
            500,
            GI,
            id="request-wins-over-limit",
        ),
        pytest.param(
            make_pod().req(cpu="0", memory="0"),
            0,
            0,
            0,
            0,
            id="explicit-zero-is-not-missing",
        ),
        pytest.param(
            make_pod().req(cpu="1").req(memory="1Gi"),
            1000,
            GI,
            1000 + DEF_CPU,
            GI + DEF_MEM,
            id="defaults-apply-per-container",
        ),
        pytest.param(
            make_pod().req(cpu="50m").init_container(),
            50,
            0,
            DEF_CPU,
            DEF_MEM,
            id="init-container-defaults-enter-the-max",
        ),
    ],
)
def test_cpu_and_memory(pod: PodBuilder, cpu: int, memory: int, nz_cpu: int, nz_memory: int) -> None:
    """Real requests and non-zero (scoring) requests follow PodRequests and NonMissingContainerRequests."""
    reqs, got_nz_cpu, got_nz_memory = compute_pod_requests(spec(pod))
    assert (reqs.milli_cpu, reqs.memory, got_nz_cpu, got_nz_memory) == (cpu, memory, nz_cpu, nz_memory)


def test_scalars_sum_and_max() -> None:
    """Extended resources and hugepages sum over containers and take the init-container maximum."""
    pod = (
        make_pod()
        .req(cpu="1")
        .extended("example.com/foo", "2")
        .req(cpu="1", **{"hugepages-2Mi": "4Mi"})
        .extended("example.com/foo", "1")
        .init_container({"example.com/foo": "5", "ephemeral-storage": "1Gi"})
    )
    reqs, _, _ = compute_pod_requests(spec(pod))
    assert reqs.scalar == {"example.com/foo": 5, "hugepages-2Mi": 4 * 2**20}
    assert reqs.ephemeral_storage == GI


def test_pod_level_requests_override_cpu_and_memory() -> None:
    """Pod-level requests replace the aggregated cpu/memory (and their non-zero values); overhead adds on."""
    raw = spec(make_pod().req(cpu="1", memory="1Gi").req(cpu="1").overhead(cpu="100m"))
    raw["resources"] = {"requests": {"cpu": "3"}}
    reqs, nz_cpu, nz_memory = compute_pod_requests(raw)
    assert (reqs.milli_cpu, nz_cpu) == (3100, 3100)
    assert reqs.memory == GI
    # Memory has no pod-level value, so each container without one gets the default (what upstream's Fit
    # scoring computes for the incoming pod).
    assert nz_memory == GI + DEF_MEM


def test_unknown_native_names_are_not_tracked() -> None:
    """Names without a slash that are not cpu/memory/storage/hugepages are dropped, as NodeInfo does."""
    reqs, _, _ = compute_pod_requests(spec(make_pod().req(cpu="1", foo="3")))
    assert reqs == Resource(milli_cpu=1000)


@pytest.mark.parametrize(
    ("pod", "where"),
    [
        pytest.param(
            make_pod().req(cpu="lots"), r"spec\.containers\[0\]\.resources\.requests\.cpu", id="container"
        ),
        pytest.param(
            make_pod().req(cpu="1").init_container({"memory": "1Q"}),
            r"spec\.initContainers\[0\]\.resources\.requests\.memory",
            id="init-container",
        ),
    ],
)
def test_bad_quantity_names_the_field(pod: PodBuilder, where: str) -> None:
    """An unparsable quantity raises ParseError naming the container and resource."""
    with pytest.raises(ParseError, match=where):
        compute_pod_requests(spec(pod))


def test_overhead_bad_quantity_names_the_field() -> None:
    """Overhead quantities are parsed with their own field path."""
    raw = spec(make_pod().req(cpu="1"))
    raw["overhead"] = {"cpu": "x"}
    with pytest.raises(ParseError, match=r"spec\.overhead\.cpu"):
        compute_pod_requests(raw)
