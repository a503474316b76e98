"""Differential fuzz of the DRA allocator against upstream's incubating allocator (v0.37.2).

Random (seeded) slices, classes, claims and allocated state, small enough to be read when one differs:
pools over several slices (generations, incomplete pools, node-local, allNodes, nodeSelector and per-device
node selection), devices with attributes, capacities and request policies, shares, taints, shared
counters, binding conditions; claims with ExactCount, All and firstAvailable requests, selectors (some
failing at run time), admin access, tolerations, capacity requests, matchAttribute/distinctAttribute and
configs; now and then an ablated feature set. Each case runs through upstream's allocator (a scratch copy
of the module with fuzz_oracle_test.go.txt, one `go test`), then through ours with our CEL; any difference
in results, error text or allocateOne calls is reported.

    python3 tests/dra/structured/upstream/fuzz_allocator.py --count 2000 --seed 1      # fuzz, report
    python3 tests/dra/structured/upstream/fuzz_allocator.py --write                    # refresh the slice

`--write` stores seeds 1..150 with upstream's answers in fuzz_cases.json, which test_allocator_fuzz.py
replays in the default test run (no Go needed there).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
sys.path.insert(0, str(REPO))

from tests.dra.structured.upstream.dump_allocator_tables import copy_module, instrument_cel  # noqa: E402

OUT = HERE / "fuzz_cases.json"
JSON = dict[str, Any]
DRIVERS = ("gpu.example.com", "nic.example.com")
FEATURES = (
    "AdminAccess",
    "ConsumableCapacity",
    "DeviceBindingAndStatus",
    "DeviceTaints",
    "FractionalCapacityRange",
    "PartitionableDevices",
    "PrioritizedList",
)
CLASS_EXPRESSIONS = {
    "gpu": 'device.driver == "gpu.example.com"',
    "nic": 'device.driver == "nic.example.com"',
    "any": "true",
    "big": (
        'device.driver == "gpu.example.com" && '
        'device.capacity["gpu.example.com"].?memory.orValue(quantity("0")).compareTo(quantity("16Gi")) >= 0'
    ),
    "shared": "device.allowMultipleAllocations == true",
}
CLASS_WEIGHTS = {"gpu": 6, "nic": 2, "any": 2, "big": 1, "shared": 1}
REQUEST_EXPRESSIONS = (
    'device.attributes["gpu.example.com"].?model.orValue("") != "B"',
    '"numa" in device.attributes["gpu.example.com"]',
    'device.attributes["gpu.example.com"].?numa.orValue(0) == 1',
    'device.attributes["gpu.example.com"].model == "A"',  # a runtime error where a device has no model
)


def _maybe(rng: random.Random, p: float) -> bool:
    return rng.random() < p


def _device(rng: random.Random, name: str, counter_sets: list[str], per_device: bool) -> JSON:
    dev: JSON = {"name": name}
    attributes: JSON = {}
    if _maybe(rng, 0.8):
        attributes["numa"] = {"int": rng.randint(0, 1)}
    if _maybe(rng, 0.6):
        attributes["model"] = {"string": rng.choice("AB")}
    if "numa" not in attributes and _maybe(rng, 0.3):
        # Never both "numa" and "gpu.example.com/numa": for a gpu.example.com device both are the same CEL
        # key, and upstream builds the map in Go's random map order (its answer changes from run to run).
        attributes["gpu.example.com/numa"] = {"int": rng.randint(0, 1)}
    if attributes:
        dev["attributes"] = attributes
    if _maybe(rng, 0.5):
        memory: JSON = {"value": rng.choice(["8Gi", "16Gi", "24Gi", "32Gi"])}
        if _maybe(rng, 0.3):
            memory["requestPolicy"] = rng.choice(
                [
                    {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}},
                    {"default": "2Gi", "validValues": ["2Gi", "4Gi", "8Gi"]},
                    {"validRange": {"min": "500Mi", "max": "8Gi"}},
                ]
            )
        dev["capacity"] = {"memory": memory}
    if _maybe(rng, 0.25):
        dev["allowMultipleAllocations"] = True
    if _maybe(rng, 0.12):
        dev["taints"] = [
            {
                "key": rng.choice(["maintenance", "broken"]),
                "value": "x",
                "effect": rng.choice(["NoSchedule", "NoExecute", "None"]),
            }
        ]
    if _maybe(rng, 0.1):
        dev["bindingConditions"] = ["Attached"]
        dev["bindingFailureConditions"] = ["Failed"]
        if _maybe(rng, 0.5):
            dev["bindsToNode"] = True
    if counter_sets and _maybe(rng, 0.5):
        dev["consumesCounters"] = [
            {"counterSet": rng.choice(counter_sets), "counters": {"mem": {"value": rng.choice(["4", "8", "12"])}}}
        ]
    if per_device:
        choice = rng.random()
        if choice < 0.4:
            dev["nodeName"] = rng.choice(["node-1", "node-2"])
        elif choice < 0.7:
            dev["allNodes"] = True
        else:
            dev["nodeSelector"] = {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]
            }
    return dev


def _slices(rng: random.Random) -> list[JSON]:
    slices: list[JSON] = []
    for p in range(rng.randint(1, 3)):
        driver = rng.choice(DRIVERS)
        pool = f"pool-{p}"
        count = rng.randint(1, 2)
        generation = rng.randint(1, 2)
        declared = count + (1 if _maybe(rng, 0.05) else 0)  # sometimes one slice is still missing
        placement = rng.random()
        counter_sets: list[str] = []
        body: list[JSON] = []
        if _maybe(rng, 0.25):
            counter_sets = ["cs-0"]
            total = rng.choice(["8", "16", "24"])
            body.append({"sharedCounters": [{"name": "cs-0", "counters": {"mem": {"value": total}}}]})
            declared += 1
        for _ in range(count):
            body.append({})
        names: list[str] = []
        for i, extra in enumerate(body):
            spec: JSON = {
                "driver": driver,
                "pool": {"name": pool, "generation": generation, "resourceSliceCount": declared},
                **extra,
            }
            per_device = False
            if placement < 0.55:
                spec["nodeName"] = "node-1" if _maybe(rng, 0.85) else "node-2"
            elif placement < 0.7:
                spec["allNodes"] = True
            elif placement < 0.85:
                spec["nodeSelector"] = {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "rack", "operator": rng.choice(["In", "NotIn"]), "values": ["r1"]}
                            ]
                        }
                    ]
                }
            else:
                spec["perDeviceNodeSelection"] = True
                per_device = True
            if "sharedCounters" not in extra:
                devices = []
                for _ in range(rng.randint(0, 5)):
                    name = f"dev-{len(names)}" if not _maybe(rng, 0.03) or not names else rng.choice(names)
                    names.append(name)
                    devices.append(_device(rng, name, counter_sets, per_device))
                spec["devices"] = devices
            slices.append({"metadata": {"name": f"{pool}-{driver.split('.')[0]}-{i}"}, "spec": spec})
        if _maybe(rng, 0.15):  # an outdated slice of the same pool
            old = json.loads(json.dumps(slices[-1]))
            old["metadata"]["name"] += "-old"
            old["spec"]["pool"]["generation"] = generation - 1
            slices.append(old)
    rng.shuffle(slices)
    return slices


def _subrequest(rng: random.Random, name: str) -> JSON:
    cls = rng.choices(list(CLASS_WEIGHTS), weights=list(CLASS_WEIGHTS.values()))[0]
    body: JSON = {"name": name, "deviceClassName": cls, "allocationMode": "ExactCount"}
    body["count"] = 1 if _maybe(rng, 0.75) else 2
    if _maybe(rng, 0.3):
        expression = REQUEST_EXPRESSIONS[rng.randrange(3)] if _maybe(rng, 0.85) else REQUEST_EXPRESSIONS[3]
        body["selectors"] = [{"cel": {"expression": expression}}]
    if _maybe(rng, 0.2):
        body["tolerations"] = [{"key": "maintenance", "operator": "Exists"}]
    if _maybe(rng, 0.15):
        body["capacity"] = {"requests": {"memory": rng.choice(["1Gi", "3Gi", "1500Mi", "9Gi"])}}
    return body


def _claims(rng: random.Random) -> list[JSON]:
    claims = []
    for c in range(rng.randint(1, 2)):
        requests: list[JSON] = []
        for r in range(rng.choice([1, 1, 2, 3])):
            name = f"req-{r}"
            if _maybe(rng, 0.2):
                requests.append({"name": name, "firstAvailable": [_subrequest(rng, f"sub-{s}") for s in range(2)]})
                continue
            body = _subrequest(rng, name)
            del body["name"]
            if _maybe(rng, 0.08):
                body["allocationMode"] = "All"
                del body["count"]
            if _maybe(rng, 0.1):
                body["adminAccess"] = True
            requests.append({"name": name, "exactly": body})
        devices: dict[str, Any] = {"requests": requests}
        if len(requests) > 1 and _maybe(rng, 0.25):
            kind = rng.choice(["matchAttribute", "distinctAttribute"])
            names = [r["name"] for r in requests]
            chosen = names if _maybe(rng, 0.5) else rng.sample(names, 2)
            devices["constraints"] = [{"requests": chosen, kind: "gpu.example.com/numa"}]
        if _maybe(rng, 0.2):
            devices["config"] = [
                {"requests": [requests[0]["name"]], "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}
            ]
        claims.append({"metadata": {"name": f"claim-{c}", "namespace": "fuzz"}, "spec": {"devices": devices}})
    return claims


def generate(seed: int) -> JSON:
    """One random case."""
    rng = random.Random(seed)
    slices = _slices(rng)
    features = {name: True for name in FEATURES}
    if _maybe(rng, 0.2):
        features[rng.choice(FEATURES)] = False
    all_devices = [
        (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])
        for s in slices
        for d in s["spec"].get("devices", [])
    ]
    allocated = sorted({d for d in all_devices if _maybe(rng, 0.08)})
    shared: list[list[str]] = []
    capacity: list[JSON] = []
    for d in all_devices:
        if _maybe(rng, 0.05):
            shared.append([*d, f"share-{len(shared)}"])
            if _maybe(rng, 0.5):
                capacity.append({"device": list(d), "capacity": {"memory": "4Gi"}})
    classes = []
    for name, expression in CLASS_EXPRESSIONS.items():
        spec: JSON = {"selectors": [{"cel": {"expression": expression}}]}
        if name == "gpu" and _maybe(rng, 0.2):
            spec["config"] = [{"opaque": {"driver": "gpu.example.com", "parameters": {"class": True}}}]
        classes.append({"metadata": {"name": name}, "spec": spec})
    return {
        "name": f"seed-{seed}",
        "features": features,
        "claims": _claims(rng),
        "allocatedDevices": [list(d) for d in allocated],
        "allocatedSharedDeviceIDs": shared,
        "allocatedCapacityDevices": capacity,
        "classes": classes,
        "slices": slices,
        "node": {"metadata": {"name": "node-1", "labels": {"rack": rng.choice(["r1", "r2"])}}},
    }


def run_upstream(cases: list[JSON]) -> dict[str, JSON]:
    """What upstream's incubating allocator does with each case."""
    with tempfile.TemporaryDirectory(prefix="dra-alloc-fuzz-") as tmp:
        work = Path(tmp) / "module"
        copy_module(work)
        instrument_cel(work)
        oracle = (HERE / "fuzz_oracle_test.go.txt").read_text()
        (work / "structured/internal/incubating/zz_fuzz_test.go").write_text(oracle)
        source, answers = Path(tmp) / "in.json", Path(tmp) / "out.json"
        source.write_text(json.dumps(cases))
        env = {**os.environ, "DRA_FUZZ_INPUT": str(source), "DRA_FUZZ_OUTPUT": str(answers), "GOFLAGS": "-mod=mod"}
        subprocess.run(
            ["go", "test", "-count=1", "-run", "^TestFuzzOracle$", "./structured/internal/incubating/"],
            cwd=work,
            env=env,
            check=True,
        )
        out: dict[str, JSON] = json.loads(answers.read_text())
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--write", action="store_true", help=f"store the cases and upstream's answers in {OUT.name}")
    args = parser.parse_args()
    cases = [generate(seed) for seed in range(args.seed, args.seed + args.count)]
    answers = run_upstream(cases)
    merged = [{**case, **answers[case["name"]]} for case in cases]
    if args.write:
        # The stored slice is replayed with our CEL only: upstream's CEL records would triple its size.
        stored = [{k: v for k, v in case.items() if k not in ("cel", "celCompile")} for case in merged]
        body = {"upstream": "k8s.io/dynamic-resource-allocation incubating", "cases": stored}
        OUT.write_text(json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n")
        print(f"wrote {OUT} ({len(merged)} cases)")
        return 0
    from tests.dra.structured.fuzz_check import compare

    differences = [(case["name"], diff) for case in merged if (diff := compare(case)) is not None]
    for name, diff in differences:
        print(f"{name}: {diff}")
    print(f"{len(merged)} cases, {len(differences)} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
