"""Random clusters and pending pods for differential runs against kube-scheduler (seeded, reproducible).

A `Scenario` is plain API objects: Ready nodes (status included: nodes may be created with their status),
pods already bound to them (`spec.nodeName`, optionally with an in-place resize status or a terminal phase
written through `pods/status`), pending pods without a `schedulerName` (the runner creates each pending pod
once per scheduler), and the other objects they need (a RuntimeClass with pod overhead). `generate(seed,
features)` draws every choice from `random.Random(seed)`, so a seed and a feature set name a scenario for good
(a feature that is off draws no number, so adding a hook leaves the default scenario of every seed unchanged).

What varies: zones/regions and labels, taints of every effect, capacities (cpu, memory, pods,
ephemeral-storage, extended resources, hugepages), cordoned nodes, images on nodes (aliases, untagged names,
one name with different sizes on different nodes); bound pods with labels, requests, host ports, hostNetwork,
sidecars, RuntimeClass overhead, resize statuses and Succeeded/Failed phases; pending pods with requests and
limits, init containers and sidecars, pod-level requests, RuntimeClass overhead, host ports and hostNetwork,
nodeSelector, required and preferred node affinity (every operator, matchFields), tolerations, container
images and image volumes.

Hooks for the plugins that are being built (`Features`, off by default): pod (anti-)affinity terms, topology
spread constraints, Services and ReplicaSets owning pods, and priorities. Turn one on when its plugin lands;
until then pyscheduler refuses such pods (fail closed) and every such pod would be a known difference.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field, fields
from typing import Any

from tests.diff.dra import DraGenerator, DraObjects

JSON = dict[str, Any]

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
HOSTNAME_LABEL = "kubernetes.io/hostname"
RUN_LABEL = "difffuzz.pyscheduler.io/run"
APP_LABEL = "app"
OWNER_ANNOTATION = "difffuzz.pyscheduler.io/owner"  # the runner makes it an ownerReference to that ReplicaSet
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
MB = 1000 * 1000

# Node labels: key -> values (a node gets each key with some probability).
NODE_LABELS: dict[str, tuple[str, ...]] = {
    "disk": ("ssd", "hdd"),
    "gen": tuple(str(i) for i in range(1, 13)),
    "team": ("a", "b", "c"),
    "accelerator": ("nvidia", "amd"),
}
TAINTS: tuple[JSON, ...] = (
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "infra", "effect": "NoSchedule"},
    {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
    {"key": "flaky", "effect": "PreferNoSchedule"},
    {"key": "slow", "value": "yes", "effect": "PreferNoSchedule"},
    {"key": "maintenance", "effect": "NoExecute"},
)
TOLERATIONS: tuple[JSON, ...] = (
    {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Exists"},
    {"key": "dedicated", "operator": "Equal", "value": "cpu", "effect": "NoSchedule"},
    {"key": "spot", "operator": "Equal", "value": "true", "effect": "PreferNoSchedule"},
    {"key": "flaky", "operator": "Exists", "effect": "PreferNoSchedule"},
    {"key": "slow", "operator": "Exists"},
    {"key": "maintenance", "operator": "Exists", "effect": "NoExecute"},
    {"operator": "Exists"},
    {"operator": "Exists", "effect": "PreferNoSchedule"},
)
# Images a node may hold: (names as status.images lists them, size in MB). The same name sometimes appears
# with another size on another node (upstream keeps the first size its cache saw), "registry.example/db"
# is listed untagged (a pod's "registry.example/db" normalizes to ":latest" and does not match it).
NODE_IMAGES: tuple[tuple[tuple[str, ...], int], ...] = (
    (("registry.example/web:1.0", "registry.example/web:latest"), 180),
    (("registry.example/web:2.0",), 210),
    (("registry.example/db",), 900),
    (("registry.example/db:latest",), 950),
    (("registry.example/ml:3", "ml:3"), 2600),
    (("registry.example/tools:latest",), 60),
    (("docker.io/library/nginx:1.25", "nginx:1.25"), 70),
    (("registry.k8s.io/pause:3.10",), 1),
)
POD_IMAGES: tuple[str, ...] = (
    "registry.example/web:1.0",
    "registry.example/web",
    "registry.example/web:2.0",
    "registry.example/db",
    "registry.example/ml:3",
    "ml:3",
    "registry.example/tools",
    "nginx:1.25",
    "docker.io/library/nginx:1.25",
    PAUSE_IMAGE,
    "registry.example/absent:9",
)
CPUS = ("1", "2", "4", "8", "3500m")
MEMORIES = ("2Gi", "4Gi", "8Gi", "16Gi", "3000Mi")
GPU = "example.com/gpu"
FPGA = "example.com/fpga"
HUGEPAGES = "hugepages-2Mi"


@dataclass(frozen=True)
class Features:
    """What the generator may put into pods. The defaults are what pyscheduler evaluates today."""

    resize_status: bool = True  # bound pods with in-place resize status (allocated/actuated, Infeasible...)
    image_volumes: bool = True  # spec.volumes[].image
    pod_level_resources: bool = True  # spec.resources.requests
    sidecars: bool = True  # init containers with restartPolicy Always
    overhead: bool = True  # a RuntimeClass with podFixed overhead, which admission copies into spec.overhead
    pod_affinity: bool = True  # required/preferred podAffinity and podAntiAffinity terms
    spread_constraints: bool = True  # topologySpreadConstraints (DoNotSchedule/ScheduleAnyway)
    # Off by default: ReplicaSets of 0 replicas owning pods need a control plane without the replicaset
    # controller (bench/difffuzz.py has none and turns it on; the e2e control plane runs one).
    owners: bool = False  # Services selecting pods, ReplicaSets owning pods (system default spreading)
    # Off by default so that every seed keeps the scenario it names without it (the runner puts back the
    # bound pods a preemption deleted, so it compares preemptors like every other pod).
    priorities: bool = False  # PriorityClasses, pod priorities, bound pods' start times
    # Off by default so that every seed's default scenario stays what it was: DeviceClasses, ResourceSlices,
    # allocated claims and pending pods' claims (tests/diff/dra.py), drawn after everything else.
    dra: bool = False

    @classmethod
    def parse(cls, names: str) -> Features:
        """Features from a comma list of field names ("pod_affinity,owners"; "all"; "" for the defaults)."""
        known = {f.name for f in fields(cls)}
        if names.strip() == "all":
            return cls(**dict.fromkeys(known, True))
        chosen = {n.strip() for n in names.split(",") if n.strip()}
        unknown = chosen - known
        if unknown:
            raise ValueError(f"unknown features: {sorted(unknown)} (known: {sorted(known)})")
        return cls(**{**{f.name: getattr(cls(), f.name) for f in fields(cls)}, **dict.fromkeys(chosen, True)})


@dataclass
class ExistingPod:
    """A pod bound from the start: its manifest (with spec.nodeName) and a status to write after creation."""

    manifest: JSON
    status: JSON | None = None


@dataclass
class Scenario:
    seed: int
    nodes: list[JSON] = field(default_factory=list)  # full Node objects, status included
    existing: list[ExistingPod] = field(default_factory=list)
    pending: list[JSON] = field(default_factory=list)  # pod manifests; the runner sets name and schedulerName
    objects: list[JSON] = field(default_factory=list)  # other namespaced objects (Services, ReplicaSets, ...)
    cluster_objects: list[JSON] = field(default_factory=list)  # cluster-scoped ones (PriorityClasses)
    dra: DraObjects | None = None  # DRA: classes and slices, allocated claims, pending pods' claims

    def node_names(self) -> list[str]:
        return [str(n["metadata"]["name"]) for n in self.nodes]

    def describe(self) -> str:
        dra = ""
        if self.dra is not None:
            dra = (
                f", {len(self.dra.slices)} slices, {len(self.dra.classes)} classes, "
                f"{len(self.dra.allocated)} allocated claims, {len(self.dra.claims)} pods with claims"
            )
        return (
            f"seed {self.seed}: {len(self.nodes)} nodes, {len(self.existing)} bound pods, "
            f"{len(self.pending)} pending pods{dra}"
        )


class Generator:
    """Draws one scenario; every random choice goes through `self.rng`."""

    def __init__(self, seed: int, features: Features, *, max_nodes: int = 12, max_pending: int = 8) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.features = features
        self.max_nodes = max_nodes
        self.max_pending = max_pending
        self.prefix = f"s{seed}"
        self.runtime_class = f"{self.prefix}-sandboxed"

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # ------------------------------------------------------------------ nodes

    def node(self, index: int) -> JSON:
        rng = self.rng
        name = f"{self.prefix}-n{index}"
        labels = {HOSTNAME_LABEL: name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
        if self.chance(0.85):
            labels[ZONE_LABEL] = rng.choice(("z1", "z2", "z3"))
            labels[REGION_LABEL] = "r1"
        for key, values in NODE_LABELS.items():
            if self.chance(0.5):
                labels[key] = rng.choice(values)
        spec: JSON = {}
        taints: dict[tuple[str, str], JSON] = {}
        for taint in TAINTS:
            if self.chance(
                0.15 if taint["effect"] == "PreferNoSchedule" else 0.05
            ):  # a (key, effect) pair may appear once on a node: the first one drawn stays
                taints.setdefault((taint["key"], taint["effect"]), copy.deepcopy(taint))
        if taints:
            spec["taints"] = list(taints.values())
        if self.chance(0.08):
            spec["unschedulable"] = True
        capacity = {
            "cpu": rng.choice(CPUS),
            "memory": rng.choice(MEMORIES),
            "pods": str(rng.choice((3, 110, 110, 110, 110, 110))),
            "ephemeral-storage": rng.choice(("10Gi", "50Gi", "100Gi")),
        }
        if self.chance(0.3):
            capacity[GPU] = str(rng.randint(0, 4))
        if self.chance(0.15):
            capacity[FPGA] = str(rng.randint(1, 2))
        if self.chance(0.15):
            capacity[HUGEPAGES] = rng.choice(("64Mi", "128Mi"))
        images = []
        for names, size in NODE_IMAGES:
            if self.chance(0.35):
                # Now and then a node reports another size for the same name.
                size_mb = size if self.chance(0.8) else size * rng.choice((2, 3))
                images.append({"names": list(names), "sizeBytes": size_mb * MB})
        status: JSON = {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "difffuzz fake node",
                    "lastHeartbeatTime": "2025-01-01T00:00:00Z",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                }
            ],
        }
        if images:
            status["images"] = images
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
            "status": status,
        }

    # ------------------------------------------------------------------ containers

    def requests(self, *, heavy: bool = False) -> JSON:
        """A container's resources: some of cpu/memory/ephemeral-storage requests, limits, extended ones."""
        rng = self.rng
        requests: JSON = {}
        limits: JSON = {}
        if self.chance(0.75):
            requests["cpu"] = rng.choice(("50m", "100m", "250m", "500m", "1", "1500m") + (("3", "6") if heavy else ()))
        if self.chance(0.7):
            requests["memory"] = rng.choice(
                ("64Mi", "256Mi", "512Mi", "1Gi", "2Gi") + (("6Gi", "12Gi") if heavy else ())
            )
        if self.chance(0.06):
            requests["ephemeral-storage"] = rng.choice(("1Gi", "20Gi", "80Gi"))
        if self.chance(0.15):
            # A limit without a request becomes the request (API defaulting).
            limits["cpu"] = rng.choice(("200m", "2"))
        if self.chance(0.05):
            n = str(rng.randint(1, 3))
            limits[GPU] = n  # extended resources: requests equal limits (defaulted from the limit)
        if self.chance(0.03):
            limits[FPGA] = "1"
        if self.chance(0.05):
            limits[HUGEPAGES] = "32Mi"
            limits.setdefault("memory", requests.get("memory", "256Mi"))
            requests.setdefault("memory", limits["memory"])
        out: JSON = {}
        if requests:
            out["requests"] = requests
        if limits:
            for name in ("cpu", "memory"):
                if name in limits and name in requests and _qty(requests[name]) > _qty(limits[name]):
                    limits[name] = requests[name]  # a request may not exceed its limit
            out["limits"] = limits
        return out

    def container(self, name: str, *, heavy: bool = False, image: str | None = None) -> JSON:
        c: JSON = {"name": name, "image": image or self.rng.choice(POD_IMAGES)}
        resources = self.requests(heavy=heavy)
        if resources:
            c["resources"] = resources
        return c

    def ports(self) -> list[JSON]:
        rng = self.rng
        choices: tuple[JSON, ...] = (
            {"containerPort": 8080, "hostPort": 8080},
            {"containerPort": 53, "hostPort": 53, "protocol": "UDP"},
            {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.10"},
            {"containerPort": 9100, "hostPort": 9100, "hostIP": "10.0.0.11"},
            {"containerPort": 80},
        )
        picked = [copy.deepcopy(p) for p in choices if self.chance(0.25)]
        if not picked:
            picked = [copy.deepcopy(rng.choice(choices[:2]))]
        for i, p in enumerate(picked):
            p["name"] = f"p{i}"
        return picked

    def pod_spec(self, *, heavy: bool) -> JSON:
        rng = self.rng
        spec: JSON = {"containers": [], "terminationGracePeriodSeconds": 0}
        for i in range(rng.choice((1, 1, 1, 2, 3))):
            spec["containers"].append(self.container(f"c{i}", heavy=heavy))
        if self.chance(0.25):
            spec["containers"][0]["ports"] = self.ports()
        if self.chance(0.2):
            init = [self.container("init0", heavy=heavy)]
            if self.features.sidecars and self.chance(0.5):
                sidecar = self.container("sidecar0")
                sidecar["restartPolicy"] = "Always"
                init.insert(rng.randint(0, 1), sidecar)
            spec["initContainers"] = init
        if self.features.overhead and self.chance(0.1):
            spec["runtimeClassName"] = self.runtime_class
        if self.features.image_volumes and self.chance(0.15):
            spec["volumes"] = [
                {"name": "model", "image": {"reference": rng.choice(POD_IMAGES), "pullPolicy": "IfNotPresent"}}
            ]
        return spec

    # ------------------------------------------------------------------ existing pods

    def existing_pod(self, index: int, node: str) -> ExistingPod:
        rng = self.rng
        spec = self.pod_spec(heavy=False)
        spec["nodeName"] = node
        if self.chance(0.05):
            spec["hostNetwork"] = True
            spec["containers"][0]["ports"] = [{"containerPort": 53, "protocol": "UDP"}, {"containerPort": 9153}]
        spec["schedulerName"] = "difffuzz-nobody"
        if self.features.priorities and self.chance(0.3):
            # Victims of several priorities (and pods a low-priority preemptor may not touch).
            spec["priorityClassName"] = rng.choice(("difffuzz-low", "difffuzz-low", "difffuzz-high"))
        manifest: JSON = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{self.prefix}-bound{index}",
                "labels": {APP_LABEL: rng.choice(("web", "db", "cache"))},
            },
            "spec": spec,
        }
        status = None
        roll = rng.random()
        if roll < 0.06:
            status = {"phase": rng.choice(("Succeeded", "Failed"))}
        elif self.features.resize_status and roll < 0.35:
            status = self.resize_status(spec)
        if self.features.priorities:
            # As a kubelet reports them: one start time per pod. Victims of equal priority are ranked by it and
            # preemption's last criterion is the latest start; without one (or with equal ones) kube-scheduler
            # breaks the tie at random (time.Now() per pod, in Go map order), and so would the comparison.
            status = {**(status or {}), "startTime": f"2025-01-01T{index // 60:02d}:{index % 60:02d}:00Z"}
        return ExistingPod(manifest, status)

    def resize_status(self, spec: JSON) -> JSON:
        """A running pod's status after an in-place resize: allocated/actuated requests, maybe a pending resize."""
        rng = self.rng
        statuses = []
        for c in spec["containers"]:
            requests = (c.get("resources") or {}).get("requests") or {}
            allocated = {}
            actual = {}
            for name in ("cpu", "memory"):
                base = requests.get(name) or ("100m" if name == "cpu" else "128Mi")
                allocated[name] = _scale(name, base, rng.choice((0.5, 1, 1, 2, 3)))
                actual[name] = _scale(name, base, rng.choice((0.5, 1, 2)))
            entry: JSON = {
                "name": c["name"],
                "image": c["image"],
                "imageID": "",
                "ready": True,
                "restartCount": 0,
                "started": True,
                "state": {"running": {"startedAt": "2025-01-01T00:00:00Z"}},
            }
            if self.chance(0.8):
                entry["allocatedResources"] = allocated
            if self.chance(0.8):
                entry["resources"] = {"requests": actual}
            statuses.append(entry)
        status: JSON = {"phase": "Running", "containerStatuses": statuses, "startTime": "2025-01-01T00:00:00Z"}
        if self.chance(0.5):
            reason = rng.choice(("Infeasible", "Deferred"))
            status["conditions"] = [
                {
                    "type": "PodResizePending",
                    "status": "True",
                    "reason": reason,
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                }
            ]
        return status

    # ------------------------------------------------------------------ pending pods

    def node_selector_requirement(self, node_names: list[str]) -> JSON:
        rng = self.rng
        kind = rng.random()
        if kind < 0.3:
            key = rng.choice(("disk", "team", ZONE_LABEL))
            values = {"disk": NODE_LABELS["disk"], "team": NODE_LABELS["team"], ZONE_LABEL: ("z1", "z2", "z3")}[key]
            return {
                "key": key,
                "operator": rng.choice(("In", "NotIn")),
                "values": sorted(rng.sample(values, rng.randint(1, 2))),
            }
        if kind < 0.5:
            return {
                "key": rng.choice(("accelerator", "disk", "team")),
                "operator": rng.choice(("Exists", "DoesNotExist")),
            }
        return {"key": "gen", "operator": rng.choice(("Gt", "Lt")), "values": [str(rng.randint(0, 12))]}

    def affinity(self, node_names: list[str]) -> JSON:
        rng = self.rng
        node_affinity: JSON = {}
        if self.chance(0.35):
            terms = []
            for _ in range(rng.choice((1, 1, 2))):
                term: JSON = {}
                if self.chance(0.85):
                    term["matchExpressions"] = [
                        self.node_selector_requirement(node_names) for _ in range(rng.choice((1, 1, 2)))
                    ]
                if self.chance(0.15) or not term:
                    # A node field selector takes exactly one value.
                    term["matchFields"] = [
                        {
                            "key": "metadata.name",
                            "operator": rng.choice(("In", "In", "NotIn")),
                            "values": [rng.choice(node_names)],
                        }
                    ]
                terms.append(term)
            node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
        if self.chance(0.5):
            node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {
                    "weight": rng.randint(1, 100),
                    "preference": {"matchExpressions": [self.node_selector_requirement(node_names)]},
                }
                for _ in range(rng.randint(1, 3))
            ]
        affinity: JSON = {"nodeAffinity": node_affinity} if node_affinity else {}
        if self.features.pod_affinity and self.chance(0.4):
            affinity.update(self.pod_affinity())
        return affinity

    def pod_affinity(self) -> JSON:
        """Hook (InterPodAffinity): required/preferred pod affinity and anti-affinity on app labels."""
        rng = self.rng

        def term() -> JSON:
            return {
                "labelSelector": {"matchLabels": {APP_LABEL: rng.choice(("web", "db", "cache"))}},
                "topologyKey": rng.choice((HOSTNAME_LABEL, ZONE_LABEL)),
            }

        out: JSON = {}
        kind = rng.choice(("podAffinity", "podAntiAffinity"))
        block: JSON = {}
        if self.chance(0.5):
            block["requiredDuringSchedulingIgnoredDuringExecution"] = [term()]
        if self.chance(0.6) or not block:
            block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": term()}
            ]
        out[kind] = block
        return out

    def spread_constraints(self) -> list[JSON]:
        """Hook (PodTopologySpread): one or two constraints over zone/hostname on the pod's app label."""
        rng = self.rng
        out = []
        for key in rng.sample((ZONE_LABEL, HOSTNAME_LABEL), rng.randint(1, 2)):
            c: JSON = {
                "maxSkew": rng.randint(1, 3),
                "topologyKey": key,
                "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
                "labelSelector": {"matchLabels": {APP_LABEL: rng.choice(("web", "db", "cache"))}},
            }
            if self.chance(0.2):
                c["minDomains"] = rng.randint(1, 4)
                c["whenUnsatisfiable"] = "DoNotSchedule"
            out.append(c)
        return out

    def pending_pod(self, index: int, node_names: list[str]) -> JSON:
        rng = self.rng
        spec = self.pod_spec(heavy=self.chance(0.2))
        if self.chance(0.2):
            spec["nodeSelector"] = {
                key: rng.choice(values) for key, values in rng.sample(sorted(NODE_LABELS.items()), 1)
            }
        affinity = self.affinity(node_names)
        if affinity:
            spec["affinity"] = affinity
        if self.chance(0.45):
            spec["tolerations"] = [copy.deepcopy(t) for t in rng.sample(TOLERATIONS, rng.randint(1, 3))]
        if self.chance(0.08):
            spec["hostNetwork"] = True
            spec["containers"][0]["ports"] = [
                {"containerPort": 9153, "protocol": "TCP"},
                {"containerPort": 53, "protocol": "UDP"},
            ]
        if self.features.pod_level_resources and self.chance(0.1):
            spec["resources"] = {"requests": self.pod_level_requests(spec)}
        if self.features.spread_constraints and self.chance(0.4):
            spec["topologySpreadConstraints"] = self.spread_constraints()
        if self.features.priorities and self.chance(0.3):
            spec["priorityClassName"] = rng.choice(("difffuzz-low", "difffuzz-low", "difffuzz-high"))
        labels = {APP_LABEL: rng.choice(("web", "db", "cache"))}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{index}", "labels": labels}, "spec": spec}

    def pod_level_requests(self, spec: JSON) -> JSON:
        """Pod-level requests at least the containers' aggregate (the API requires it) for cpu and/or memory."""
        # Every container counted, init ones too: an upper bound of the aggregate the API compares with.
        containers = spec["containers"] + spec.get("initContainers", [])
        out: JSON = {}
        if self.chance(0.7):
            extra = _qty(self.rng.choice(("0", "250m", "1")))
            out["cpu"] = f"{round((sum(_qty(_request(c, 'cpu')) for c in containers) + extra) * 1000)}m"
        if self.chance(0.7) or not out:
            extra = _qty(self.rng.choice(("0", "256Mi", "1Gi")))
            out["memory"] = str(int(sum(_qty(_request(c, "memory")) for c in containers) + extra))
        return out

    def owners(self, pods: list[JSON]) -> list[JSON]:
        """Hook (PodTopologySpread's system defaults, InterPodAffinity): Services selecting app=web/db and
        ReplicaSets for app=web/cache owning most of their pods. The runner turns OWNER_ANNOTATION into an
        ownerReference once the ReplicaSet exists (its uid is the server's). The ReplicaSets have 0 replicas:
        run without the replicaset controller (bench/difffuzz.py starts no controller-manager), which would
        otherwise delete the pods they own."""
        objects: list[JSON] = []
        for app in ("web", "db"):
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": f"{self.prefix}-{app}"},
                    "spec": {"selector": {APP_LABEL: app}, "ports": [{"port": 80}]},
                }
            )
        for app in ("web", "cache"):
            name = f"{self.prefix}-{app}"
            objects.append(
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {"name": name},
                    "spec": {
                        "replicas": 0,
                        "selector": {"matchLabels": {APP_LABEL: app}},
                        "template": {
                            "metadata": {"labels": {APP_LABEL: app}},
                            "spec": {"containers": [{"name": "c", "image": PAUSE_IMAGE}]},
                        },
                    },
                }
            )
            for pod in pods:
                meta = pod["metadata"]
                if meta["labels"].get(APP_LABEL) == app and self.chance(0.7):
                    meta.setdefault("annotations", {})[OWNER_ANNOTATION] = name
        return objects

    # ------------------------------------------------------------------ the scenario

    def scenario(self) -> Scenario:
        rng = self.rng
        sc = Scenario(self.seed)
        for i in range(rng.randint(min(2, self.max_nodes), self.max_nodes)):
            sc.nodes.append(self.node(i))
        names = sc.node_names()
        index = 0
        for name in names:
            for _ in range(rng.choice((0, 0, 1, 1, 2))):
                sc.existing.append(self.existing_pod(index, name))
                index += 1
        for i in range(rng.randint(2, self.max_pending)):
            sc.pending.append(self.pending_pod(i, names))
        if self.features.owners:
            sc.objects.extend(self.owners([p.manifest for p in sc.existing] + sc.pending))
        if self.features.overhead:
            sc.cluster_objects.append(
                {
                    "apiVersion": "node.k8s.io/v1",
                    "kind": "RuntimeClass",
                    "metadata": {"name": self.runtime_class},
                    "handler": "sandboxed",
                    "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
                }
            )
        if self.features.priorities:
            sc.cluster_objects.extend(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                }
                for name, value in (("difffuzz-low", 10), ("difffuzz-high", 1000))
            )
        if self.features.dra:
            sc.dra = DraGenerator(rng, self.prefix).objects(names, sc.pending)
            for pod in sc.pending:
                entries = sc.dra.claims.get(pod["metadata"]["name"], [])
                if entries:  # the runner names each attempt's claims (resourceClaimName) itself
                    pod["spec"]["resourceClaims"] = [{"name": e, "resourceClaimName": e} for e, _ in entries]
                    resources = pod["spec"]["containers"][0].setdefault("resources", {})
                    resources["claims"] = [{"name": e} for e, _ in entries]
        return sc


def generate(seed: int, features: Features | None = None, *, max_nodes: int = 12, max_pending: int = 8) -> Scenario:
    """The scenario of a seed (same seed and features, same scenario)."""
    return Generator(seed, features or Features(), max_nodes=max_nodes, max_pending=max_pending).scenario()


def _qty(text: str) -> float:
    """A quantity as a float of base units (enough to keep generated requests within their limits)."""
    suffixes = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 1e3, "M": 1e6, "G": 1e9}
    for suffix, factor in suffixes.items():
        if text.endswith(suffix) and text[: -len(suffix)].replace(".", "", 1).isdigit():
            return float(text[: -len(suffix)]) * factor
    return float(text)


def _request(container: JSON, name: str) -> str:
    """A container's effective request for name (the limit when only a limit is set), "0" without either."""
    resources = container.get("resources") or {}
    return str((resources.get("requests") or {}).get(name) or (resources.get("limits") or {}).get(name) or "0")


def _scale(name: str, text: str, factor: float) -> str:
    """A cpu (as millicores) or memory (as Mi) quantity times factor."""
    value = _qty(text) * factor
    if name == "cpu":
        return f"{max(1, round(value * 1000))}m"
    return f"{max(1, round(value / 2**20))}Mi"
