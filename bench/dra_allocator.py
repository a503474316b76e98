"""The DRA allocator alone (scheduler.dra.structured), on upstream scheduler_perf's DRA cluster shape.

`--nodes` nodes, each with one ResourceSlice of `--devices` devices (the attributes and capacities of
test/integration/scheduler_perf/dra/templates/resourceslice-basic-devices.yaml), the DeviceClass
`device.driver == "test-driver.cdi.k8s.io"` and one claim per pod, as SteadyStateClusterResourceClaimTemplate:

- empty: nothing allocated yet, one device per pod;
- half: half of every node's devices held by allocated claims;
- full: every device held but one on each of ten nodes (most nodes fail, as in full_500nodes);
- match: five requests with matchAttribute resource.kubernetes.io/pciRoot over two alternating PCI roots;
- selector: the request selector of selector_empty_500nodes (needs scheduler.dra.cel).

Per pod the plugin makes one allocator (PreFilter) and asks it once per node (Filter). Printed per scenario:
CPU time of new_allocator, of allocate() per node, and of one pod over all nodes; the first pod ("cold":
slices prepared, selectors evaluated) and the median of the following ones ("warm"). Process CPU time, not
wall time: on a shared machine wall time mostly measures the neighbours.

    .venv/bin/python -m bench.dra_allocator --nodes 500 --devices 8
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scheduler.dra.structured import DEFAULT_FEATURES, AllocatedState, new_allocator

DRIVER = "test-driver.cdi.k8s.io"
CLASS_SELECTOR = f'device.driver == "{DRIVER}"'
REQUEST_SELECTOR = (
    f'device.attributes["{DRIVER}"].driverVersion.major() >= 1 && '
    f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("1Mi"))'
)
JSON = dict[str, Any]


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


class Classes:
    def __init__(self, *classes: JSON) -> None:
        self.by_name = {c["metadata"]["name"]: c for c in classes}

    def get(self, name: str) -> JSON | None:
        return self.by_name.get(name)


def resource_slice(index: int, devices: int, pci_roots: int) -> JSON:
    """resourceslice-basic-devices.yaml for node `index`."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"resourceslice-{index}"},
        "spec": {
            "pool": {"name": f"resourceslice-{index}", "generation": 1, "resourceSliceCount": 1},
            "driver": DRIVER,
            "nodeName": f"scheduler-perf-dra-{index}",
            "devices": [
                {
                    "name": f"basic-device-{d}",
                    "attributes": {
                        "driver": {"string": "xe"},
                        "driverVersion": {"version": "1.2.3"},
                        "family": {"string": "Arc Pro B-Series"},
                        "health": {"string": "Healthy"},
                        "model": {"string": "B60"},
                        "pciAddress": {"string": f"0000:0{d}:00.0"},
                        "pciId": {"string": "0xe211"},
                        "pciRoot": {"string": f"0{d % pci_roots}"},
                        "resource.kubernetes.io/pciBusID": {"string": f"0000:0{d}:00.0"},
                        "resource.kubernetes.io/pciRoot": {"string": f"pci0000:0{d % pci_roots}"},
                        "sriov": {"bool": True},
                        "type": {"string": "gpu"},
                    },
                    "capacity": {"memory": {"value": "24480Mi"}, "millicores": {"value": "1k"}},
                }
                for d in range(devices)
            ],
        },
    }


def claim(index: int, requests: int, selectors: list[JSON], constraints: list[JSON]) -> JSON:
    """A claim as resourceclaimtemplate.yaml makes it (API defaults applied)."""
    devices: JSON = {
        "requests": [
            {
                "name": f"req-{r}",
                "exactly": {
                    "deviceClassName": "test-class",
                    "allocationMode": "ExactCount",
                    "count": 1,
                    **({"selectors": selectors} if selectors else {}),
                },
            }
            for r in range(requests)
        ]
    }
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": f"pod-{index}-claim", "namespace": "test"}, "spec": {"devices": devices}}


class StandInCel:
    """Only the class selector, for a checkout without scheduler.dra.cel (warm pods evaluate no CEL anyway)."""

    class _Compiled:
        error = None

        def device_matches(self, device: Any) -> bool:
            return bool(device["driver"] == DRIVER)

    def get_or_compile(self, expression: str) -> Any:
        if expression != CLASS_SELECTOR:
            raise SystemExit("this scenario needs scheduler.dra.cel")
        return self._Compiled()


def cel_cache() -> tuple[Any, str]:
    try:
        cel = importlib.import_module("scheduler.dra.cel")
    except ImportError:
        from scheduler.dra.structured import allocator as allocator_module

        allocator_module._prepare_device = lambda driver, raw: {"driver": driver, **raw}
        allocator_module._cel_runtime_error = lambda: RuntimeError
        return StandInCel(), "stand-in (scheduler.dra.cel not merged)"
    return cel.CelCache(), "scheduler.dra.cel"


def allocated_state(scenario: str, nodes: int, devices: int) -> AllocatedState:
    state = AllocatedState()
    for n in range(nodes):
        if scenario == "half":
            held = range(devices // 2)
        elif scenario == "full":
            held = range(devices - 1 if n < 10 else devices)
        else:
            held = range(0)
        for d in held:
            state.allocated_devices.add((DRIVER, f"resourceslice-{n}", f"basic-device-{d}"))
    return state


def inputs(scenario: str, nodes: int, devices: int, pods: int) -> JSON:
    """Slices, class, one claim per pod, node names and allocated devices of a scenario."""
    requests = 5 if scenario == "match" else 1
    selectors = [{"cel": {"expression": REQUEST_SELECTOR}}] if scenario == "selector" else []
    constraints = [{"matchAttribute": "resource.kubernetes.io/pciRoot"}] if scenario == "match" else []
    return {
        "slices": [resource_slice(n, devices, 2) for n in range(nodes)],
        "class": {"metadata": {"name": "test-class"}, "spec": {"selectors": [{"cel": {"expression": CLASS_SELECTOR}}]}},
        "claims": [claim(p, requests, selectors, constraints) for p in range(pods)],
        "nodes": [f"scheduler-perf-dra-{n}" for n in range(nodes)],
        "allocated": [list(d) for d in sorted(allocated_state(scenario, nodes, devices).allocated_devices)],
    }


def run_upstream(scenario: str, nodes: int, devices: int, pods: int) -> JSON:
    """The same inputs through upstream's incubating allocator (a scratch copy of the module, `go test`)."""
    from tests.dra.structured.upstream.dump_allocator_tables import copy_module

    with tempfile.TemporaryDirectory(prefix="dra-bench-") as tmp:
        work = Path(tmp) / "module"
        copy_module(work)
        (work / "structured/internal/incubating/zz_bench_test.go").write_text(
            (Path(__file__).parent / "dra_allocator_upstream_test.go.txt").read_text()
        )
        data = Path(tmp) / "input.json"
        data.write_text(json.dumps(inputs(scenario, nodes, devices, pods)))
        env = {**os.environ, "DRA_BENCH_INPUT": str(data), "GOFLAGS": "-mod=mod"}
        out = subprocess.run(
            ["go", "test", "-count=1", "-run", "^TestBenchUpstream$", "-v", "./structured/internal/incubating/"],
            cwd=work,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    line = next(line for line in out.splitlines() if line.startswith("UPSTREAM "))
    result: JSON = json.loads(line.removeprefix("UPSTREAM "))
    return {"scenario": scenario, "cel": "upstream (cel-go)", **result}


def run(scenario: str, nodes: int, devices: int, pods: int) -> JSON:
    data = inputs(scenario, nodes, devices, pods)
    slices = data["slices"]
    node_list = [Node(name) for name in data["nodes"]]
    cls = data["class"]
    state = allocated_state(scenario, nodes, devices)
    cel, cel_name = cel_cache()
    classes = Classes(cls)
    make, per_node, per_pod, fits = [], [], [], 0
    gc.collect()
    for p in range(pods):
        claims = [data["claims"][p]]
        start = time.process_time()
        allocator = new_allocator(DEFAULT_FEATURES, state, classes, slices, cel)
        made = time.process_time()
        fits = sum(allocator.allocate(node, claims) is not None for node in node_list)
        done = time.process_time()
        make.append(made - start)
        per_node.append((done - made) / nodes)
        per_pod.append(done - start)
    warm = slice(1, None) if pods > 1 else slice(0, None)
    return {
        "scenario": scenario,
        "cel": cel_name,
        "feasible_nodes": fits,
        "cold_pod_ms": per_pod[0] * 1e3,
        "warm_new_allocator_us": statistics.median(make[warm]) * 1e6,
        "warm_allocate_per_node_us": statistics.median(per_node[warm]) * 1e6,
        "warm_pod_ms": statistics.median(per_pod[warm]) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.dra_allocator", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--devices", type=int, default=8, help="devices per node (upstream's template has 10)")
    parser.add_argument("--pods", type=int, default=20, help="pods per scenario (the first is the cold one)")
    parser.add_argument("--scenarios", default="empty,half,full,match,selector")
    parser.add_argument("--upstream", action="store_true", help="also run upstream's allocator (needs Go)")
    args = parser.parse_args()
    print(f"{args.nodes} nodes x {args.devices} devices, {args.pods} pods per scenario (CPU time)")
    header = f"{'scenario':<9} {'feasible':>8} {'cold pod':>10} {'new_allocator':>14} {'per node':>10} {'pod':>10}  cel"
    print(header)
    for scenario in args.scenarios.split(","):
        runs = [run] + ([run_upstream] if args.upstream else [])
        for runner in runs:
            try:
                r = runner(scenario, args.nodes, args.devices, args.pods)
            except SystemExit as err:
                print(f"{scenario:<9} skipped: {err}")
                continue
            print(
                f"{r['scenario']:<9} {r['feasible_nodes']:>8} {r['cold_pod_ms']:>8.1f}ms "
                f"{r['warm_new_allocator_us']:>12.0f}us {r['warm_allocate_per_node_us']:>8.1f}us "
                f"{r['warm_pod_ms']:>8.2f}ms  {r['cel']}"
            )


if __name__ == "__main__":
    main()
