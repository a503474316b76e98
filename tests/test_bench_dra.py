"""The DRA benchmark's logic that needs no server (bench/dra_e2e.py): scheduler_perf's device, the selector
variant matching every device, the pods' claim templates, and the report's medians."""

from __future__ import annotations

import pytest

from bench.dra_e2e import DRIVER, SELECTOR, Result, Run, basic_device, report
from bench.e2e import PYSCHEDULER, UPSTREAM
from scheduler.dra.cel import CelCache, prepare_device


def test_basic_device_is_scheduler_perfs() -> None:
    """resourceslice-basic-devices.yaml: 13 attributes (PCI root cycling over 2), 2 capacities."""
    device = basic_device(3)
    assert device["name"] == "basic-device-3"
    assert len(device["attributes"]) == 13
    assert device["attributes"]["pciRoot"] == {"string": "01"}
    assert device["attributes"]["resource.kubernetes.io/pciRoot"] == {"string": "pci0000:01"}
    assert device["capacity"] == {"memory": {"value": "24480Mi"}, "millicores": {"value": "1k"}}


@pytest.mark.parametrize("index", [pytest.param(i, id=f"device-{i}") for i in (0, 1, 9)])
def test_the_selector_variant_matches_every_device(index: int) -> None:
    """scheduler_perf's "selector" workloads: the expression is evaluated, and true, for every device."""
    compiled = CelCache(10).get_or_compile(SELECTOR)
    assert compiled.error is None
    assert compiled.device_matches(prepare_device(DRIVER, basic_device(index)))


def test_pods_use_the_template_and_stuck_pods_the_one_nothing_satisfies() -> None:
    """Measured pods name test-claim-template; --stuck pods never-claim-template, in another phase."""
    run = Run(PYSCHEDULER, "r1", ["n0"])
    measured, stuck = run.pod(1), run.pod(1, stuck=True)
    assert measured["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == "test-claim-template"
    assert stuck["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == "never-claim-template"
    assert measured["metadata"]["name"] != stuck["metadata"]["name"]
    assert measured["spec"]["schedulerName"] == "pyscheduler"


def test_report_gives_medians_and_leaves_failed_runs_out() -> None:
    """Median pods/s and CPU per pod per scheduler; a run with an error is not counted."""
    results = [
        Result(UPSTREAM, 0, "steady", 100, 10.0, 10.0, cpu_ms_per_pod=8.0, peak_rss_mib=100),
        Result(UPSTREAM, 1, "steady", 120, 10.0, 12.0, cpu_ms_per_pod=9.0, peak_rss_mib=110),
        Result(UPSTREAM, 2, "steady", 140, 10.0, 14.0, cpu_ms_per_pod=10.0, peak_rss_mib=120),
        Result(PYSCHEDULER, 0, "steady", 0, 10.0, 0.0, error="boom"),
        Result(PYSCHEDULER, 1, "steady", 130, 10.0, 13.0, cpu_ms_per_pod=11.0, peak_rss_mib=150),
    ]
    lines = report(results).splitlines()
    assert lines[1].split()[:3] == ["kube-scheduler", "12.0", "9.0"]
    assert lines[2].split()[:3] == ["pyscheduler", "13.0", "11.0"]
