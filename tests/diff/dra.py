"""DRA for the differential fuzz: random DeviceClasses, ResourceSlices, allocated claims and the claims of
pending pods (generator feature `dra`).

Every choice comes from the scenario generator's `random.Random`, drawn after everything else of the
scenario, so turning `dra` on leaves the rest of each seed's scenario as it was. What varies: one or two
drivers; classes selecting a driver, some with a selector of their own; per node, slices publishing 1-6
devices with random attributes (string model, int numa, bool mig, a semantic version on some) and memory
capacities, now and then a taint (NoSchedule or NoExecute), a device allowing multiple allocations whose
memory is consumable in steps, or a pool whose devices are partitions of shared counters (a counter slice
and a device slice); a network-attached pool (`allNodes`); claims already allocated to some devices (no pod
reserves them); and pending pods' claims: 1-2 requests, each ExactCount (count 1-3) or All, of a random
class, with 0-2 random CEL selectors (one of which may fail at run time on devices without the attribute),
tolerations, a consumable-capacity request, `firstAvailable` subrequests, and a matchAttribute constraint
across two requests. Admin access (which needs a labelled namespace) and DeviceTaintRules (their own watch,
which the runner's sync does not prove) are in tests/e2e/test_dra_shapes.py instead.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]

DRIVERS = ("gpu.difffuzz.example.com", "nic.difffuzz.example.com")
MODELS = ("a100", "h100", "b200")
MEMORY = ("16Gi", "40Gi", "80Gi")
VERSIONS = ("1.0.0", "1.2.0", "2.0.0-rc.1", "2.1.3")
TAINT_KEYS = ("example.com/broken", "example.com/maintenance")
SYNC_DRIVER = "sync.difffuzz.example.com"


@dataclass
class DraObjects:
    """What the DRA part of a scenario adds: cluster-scoped objects, pre-allocated claims, pending claims."""

    classes: list[JSON] = field(default_factory=list)
    slices: list[JSON] = field(default_factory=list)
    # (claim manifest, status.allocation) created before the pending pods; nobody reserves them
    allocated: list[tuple[JSON, JSON]] = field(default_factory=list)
    # pending pod name -> [(pod claim entry name, claim spec)]; the runner makes one claim per entry and attempt
    claims: dict[str, list[tuple[str, JSON]]] = field(default_factory=dict)


class DraGenerator:
    """Draws the DRA objects of one scenario from the scenario generator's rng."""

    def __init__(self, rng: random.Random, prefix: str) -> None:
        self.rng = rng
        self.prefix = prefix
        self.drivers = DRIVERS[: rng.choice((1, 1, 2))]
        self.class_names: list[str] = []
        self.class_driver: dict[str, str] = {}
        self._taken: set[tuple[str, str, str, str]] = set()
        self.devices: list[tuple[str, str, str, str]] = []  # (driver, pool, device, node or "")

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def attr(self, driver: str, name: str) -> str:
        return f'device.attributes["{driver}"].{name}'

    def selector(self, driver: str) -> str:
        """A random CEL selector over the driver's attributes and capacities."""
        rng = self.rng
        memory = f'device.capacity["{driver}"].memory'
        options = [
            f'{self.attr(driver, "model")} == "{rng.choice(MODELS)}"',
            f'{self.attr(driver, "model")} in ["{rng.choice(MODELS)}", "{rng.choice(MODELS)}"]',
            f"{self.attr(driver, 'numa')} >= {rng.randint(0, 1)}",
            f'{memory}.compareTo(quantity("{rng.choice(MEMORY)}")) >= 0',
            f'{memory}.isLessThan(quantity("{rng.choice(MEMORY)}"))',
            f'has({self.attr(driver, "mig")}) && {self.attr(driver, "mig")}',
            f'!{self.attr(driver, "mig")} || {self.attr(driver, "numa")} == 0',
            f'has({self.attr(driver, "version")}) && {self.attr(driver, "version")}.isGreaterThan(semver("1.1.0"))',
            f'{self.attr(driver, "model")}.startsWith("{rng.choice(("a", "h", "b"))}")',
        ]
        if self.chance(0.05):  # a runtime error on devices without a version: the pod's attempt fails with it
            return f'{self.attr(driver, "version")}.isLessThan(semver("2.0.0"))'
        return rng.choice(options)

    # ------------------------------------------------------------------ cluster objects

    def device_class(self, driver: str, index: int) -> JSON:
        name = f"{self.prefix}-{driver.split('.')[0]}-{index}"
        selectors = [{"cel": {"expression": f'device.driver == "{driver}"'}}]
        if index > 0:
            selectors.append({"cel": {"expression": self.selector(driver)}})
        self.class_names.append(name)
        self.class_driver[name] = driver
        spec = {"selectors": selectors}
        return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}

    def device(self, driver: str, name: str) -> JSON:
        rng = self.rng
        attributes: JSON = {"model": {"string": rng.choice(MODELS)}, "numa": {"int": rng.randint(0, 1)}}
        if self.chance(0.5):
            attributes["mig"] = {"bool": self.chance(0.5)}
        if self.chance(0.4):
            attributes["version"] = {"version": rng.choice(VERSIONS)}
        out: JSON = {"name": name, "attributes": attributes, "capacity": {"memory": {"value": rng.choice(MEMORY)}}}
        if self.chance(0.1):
            effect = rng.choice(("NoSchedule", "NoExecute"))
            out["taints"] = [{"key": rng.choice(TAINT_KEYS), "value": "true", "effect": effect}]
        if self.chance(0.1):
            out["allowMultipleAllocations"] = True
            policy = {"default": "8Gi", "validRange": {"min": "8Gi", "step": "8Gi"}}
            out["capacity"]["memory"]["requestPolicy"] = policy
        return out

    def slice(self, driver: str, pool: str, part: str, spec: JSON, slices: int = 1) -> JSON:
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{pool}-{driver.split('.')[0]}{part}"},
            "spec": {"driver": driver, "pool": {"name": pool, "generation": 1, "resourceSliceCount": slices}, **spec},
        }

    def node_slices(self, driver: str, node: str) -> list[JSON]:
        rng = self.rng
        if self.chance(0.15):  # partitionable: one counter set, the whole device and two halves
            counters = [{"name": "mem", "counters": {"memory": {"value": "40Gi"}}}]
            devices = []
            for name, gi in (("whole", 40), ("half-a", 20), ("half-b", 20)):
                dev = self.device(driver, name)
                dev.pop("allowMultipleAllocations", None)
                dev["capacity"] = {"memory": {"value": f"{gi}Gi"}}
                dev["consumesCounters"] = [{"counterSet": "mem", "counters": {"memory": {"value": f"{gi}Gi"}}}]
                devices.append(dev)
                self.devices.append((driver, node, name, node))
            return [
                self.slice(driver, node, "-counters", {"nodeName": node, "sharedCounters": counters}, 2),
                self.slice(driver, node, "-devices", {"nodeName": node, "devices": devices}, 2),
            ]
        devices = [self.device(driver, f"dev-{i}") for i in range(rng.randint(1, 6))]
        self.devices.extend((driver, node, d["name"], node) for d in devices)
        return [self.slice(driver, node, "", {"nodeName": node, "devices": devices})]

    # ------------------------------------------------------------------ claims

    def request(self, name: str, *, sub: bool = False) -> JSON:
        rng = self.rng
        body: JSON = {"deviceClassName": rng.choice(self.class_names)}
        if not sub and self.chance(0.12):
            body["allocationMode"] = "All"
        else:
            body["allocationMode"] = "ExactCount"
            body["count"] = rng.choice((1, 1, 1, 2, 3))
        driver = self.class_driver[body["deviceClassName"]]
        selectors = [self.selector(driver) for _ in range(rng.choice((0, 0, 1, 1, 2)))]
        if selectors:
            body["selectors"] = [{"cel": {"expression": e}} for e in selectors]
        if self.chance(0.2):
            key = rng.choice(TAINT_KEYS)
            toleration: JSON = {"key": key, "operator": "Exists"}
            if self.chance(0.5):
                toleration["effect"] = rng.choice(("NoSchedule", "NoExecute"))
            body["tolerations"] = [toleration]
        if self.chance(0.1):
            body["capacity"] = {"requests": {"memory": rng.choice(("4Gi", "8Gi", "20Gi"))}}
        if sub:
            return {"name": name, **body}
        return {"name": name, "exactly": body}

    def claim_spec(self) -> JSON:
        rng = self.rng
        requests: list[JSON] = []
        for i in range(rng.choice((1, 1, 2))):
            if self.chance(0.15):
                subrequests = [self.request(f"s{j}", sub=True) for j in range(rng.randint(2, 3))]
                requests.append({"name": f"r{i}", "firstAvailable": subrequests})
            else:
                requests.append(self.request(f"r{i}"))
        devices: JSON = {"requests": requests}
        if len(requests) == 2 and self.chance(0.4):
            attribute = rng.choice(("numa", "model"))
            driver = self.drivers[0]
            devices["constraints"] = [{"requests": ["r0", "r1"], "matchAttribute": f"{driver}/{attribute}"}]
        return {"devices": devices}

    def allocated_claim(self, index: int) -> tuple[JSON, JSON] | None:
        """A claim allocated by hand to one free device (as another scheduler left it), or None."""
        free = [d for d in self.devices if d not in self._taken]
        if not free:
            return None
        driver, pool, device, node = self.rng.choice(free)
        self._taken.add((driver, pool, device, node))
        name = f"{self.prefix}-held-{index}"
        request = claim_request(next(c for c in self.class_names if self.class_driver[c] == driver))
        claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name},
            "spec": request,
        }
        result = {"request": "r0", "driver": driver, "pool": pool, "device": device}
        allocation: JSON = {"devices": {"results": [result]}}
        if node:
            term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            allocation["nodeSelector"] = {"nodeSelectorTerms": [term]}
        return claim, allocation

    def objects(self, node_names: list[str], pending: list[JSON]) -> DraObjects:
        rng = self.rng
        out = DraObjects()
        for driver in self.drivers:
            out.classes.extend(self.device_class(driver, i) for i in range(rng.randint(1, 3)))
        for node in node_names:
            for driver in self.drivers:
                if self.chance(0.75):
                    out.slices.extend(self.node_slices(driver, node))
        if self.chance(0.2):
            driver = self.drivers[0]
            pool = f"{self.prefix}-shared"
            devices = [self.device(driver, f"net-{i}") for i in range(rng.randint(1, 2))]
            for d in devices:  # capacity sharing across nodes would make pool-level counts harder to read
                d.pop("allowMultipleAllocations", None)
                d["capacity"]["memory"].pop("requestPolicy", None)
            self.devices.extend((driver, pool, d["name"], "") for d in devices)
            out.slices.append(self.slice(driver, pool, "", {"allNodes": True, "devices": devices}))
        for i in range(rng.choice((0, 0, 1, 2))):
            held = self.allocated_claim(i)
            if held is not None:
                out.allocated.append(held)
        for pod in pending:
            if self.chance(0.6):
                name = str(pod["metadata"]["name"])
                out.claims[name] = [(f"c{j}", self.claim_spec()) for j in range(rng.choice((1, 1, 1, 2)))]
        return out


def sync_objects(prefix: str) -> tuple[JSON, JSON]:
    """The sentinel DeviceClass and ResourceSlice (one device for every node) the runner creates after the
    scenario's: a probe pod's claim for it binds only once the scheduler has seen every class and slice before."""
    name = f"{prefix}-sync"
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{SYNC_DRIVER}"'}}]},
    }
    resource_slice = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": SYNC_DRIVER,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "allNodes": True,
            "devices": [{"name": "sync"}],
        },
    }
    return device_class, resource_slice


def claim_request(class_name: str) -> JSON:
    """A claim spec asking one device of `class_name` (request r0)."""
    exactly = {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": 1}
    return {"devices": {"requests": [{"name": "r0", "exactly": exactly}]}}
