"""A pod template, run the way a kubelet would run it, with podman: the image test's stand-in for a node.

``pod_run`` turns the pod spec of a rendered Deployment (the Helm chart's, in tests/e2e/test_image.py) into
``podman run`` options: the container's args and env (``fieldRef`` to the pod's name and namespace), the
merged pod and container security contexts (user, group, fsGroup, read-only root, capabilities,
no-new-privileges, seccomp), its volumes (ConfigMaps as read-only files, emptyDirs as size-limited tmpfs),
its memory and CPU limits, the pod hostname, and the service-account token with the CA and the
``KUBERNETES_SERVICE_HOST``/``PORT`` variables a kubelet gives every pod. Anything of the spec it does not know
how to honour raises ``UnsupportedPodSpec`` instead of being dropped silently, so a chart change that the
test would no longer reproduce fails the test rather than weakening it.

Not reproduced (no kubelet, one container): probes are returned for the caller to poll, restart policy,
resource requests (scheduling input only), image pull policy.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scheduler.framework.quantity import parse_quantity

JSON = dict[str, Any]
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_GRACE_SECONDS = 30


class UnsupportedPodSpec(ValueError):
    """The pod spec uses something this stand-in kubelet cannot honour; the message names the field."""


@dataclass(frozen=True)
class ApiServerAccess:
    """What a kubelet hands a pod to reach the API server: its address, the cluster CA and a token."""

    host: str
    port: int
    ca_pem: str
    token: str


@dataclass(frozen=True)
class Probe:
    """An httpGet probe with its port resolved to a number."""

    path: str
    port: int
    scheme: str  # "HTTP" or "HTTPS"


@dataclass
class PodRun:
    """``podman run`` options and arguments for the pod's one container, and what the caller polls or waits."""

    options: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    probes: dict[str, Probe] = field(default_factory=dict)  # "liveness", "readiness", "startup"
    grace_seconds: int = DEFAULT_GRACE_SECONDS
    uid: int | None = None  # runAsUser / runAsGroup, None when the image decides
    gid: int | None = None


def pod_run(
    pod_spec: Mapping[str, Any],
    *,
    pod_name: str,
    namespace: str,
    config_maps: Mapping[str, Mapping[str, str]],
    api: ApiServerAccess,
    work_dir: Path,
) -> PodRun:
    """Translates ``pod_spec`` (a Deployment's ``spec.template.spec``); files for mounts go to ``work_dir``."""
    containers = pod_spec.get("containers") or []
    if len(containers) != 1 or pod_spec.get("initContainers"):
        raise UnsupportedPodSpec("spec.containers: exactly one container and no init containers are supported")
    container: Mapping[str, Any] = containers[0]
    run = PodRun(grace_seconds=int(pod_spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)))
    run.options += ["--hostname", pod_name]  # a pod's hostname is its name
    if container.get("command"):
        run.options += ["--entrypoint", json.dumps(container["command"])]
    run.args = [str(a) for a in container.get("args") or []]
    run.options += _env(container, pod_name=pod_name, namespace=namespace)
    run.uid, run.gid = _security(
        pod_spec.get("securityContext") or {}, container.get("securityContext") or {}, run.options
    )
    run.options += _resources(container.get("resources") or {})
    run.options += _volumes(pod_spec, container, config_maps, work_dir)
    if pod_spec.get("automountServiceAccountToken", True):
        run.options += _service_account(api, namespace, work_dir / "serviceaccount")
    ports = {p["name"]: int(p["containerPort"]) for p in container.get("ports") or [] if "name" in p}
    for kind in ("liveness", "readiness", "startup"):
        spec = container.get(f"{kind}Probe")
        if spec:
            run.probes[kind] = _probe(spec, ports, kind)
    return run


def _env(container: Mapping[str, Any], *, pod_name: str, namespace: str) -> list[str]:
    if container.get("envFrom"):
        raise UnsupportedPodSpec("containers[0].envFrom is not supported")
    fields = {"metadata.name": pod_name, "metadata.namespace": namespace}
    options: list[str] = []
    for var in container.get("env") or []:
        name = var["name"]
        if "value" in var:
            value = str(var["value"])
        else:
            path = (var.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath")
            if path not in fields:
                raise UnsupportedPodSpec(f"containers[0].env[{name}]: only values and fieldRef {sorted(fields)}")
            value = fields[path]
        options += ["--env", f"{name}={value}"]
    return options


def _security(
    pod: Mapping[str, Any], container: Mapping[str, Any], options: list[str]
) -> tuple[int | None, int | None]:
    """Appends the options of the merged security context (the container's fields win); returns UID, GID."""
    merged = {**pod, **container}
    known = {
        "runAsUser", "runAsGroup", "runAsNonRoot", "fsGroup", "supplementalGroups", "readOnlyRootFilesystem",
        "allowPrivilegeEscalation", "privileged", "capabilities", "seccompProfile",
    }  # fmt: skip
    unknown = set(merged) - known
    if unknown:
        raise UnsupportedPodSpec(f"securityContext: unsupported fields {sorted(unknown)}")
    uid, gid = merged.get("runAsUser"), merged.get("runAsGroup")
    if merged.get("runAsNonRoot") and uid is not None and int(uid) == 0:
        raise UnsupportedPodSpec("securityContext: runAsNonRoot with runAsUser 0 would never start")
    if uid is not None:
        options += ["--user", f"{uid}:{gid}" if gid is not None else str(uid)]
    for gid in [*([merged["fsGroup"]] if "fsGroup" in merged else []), *merged.get("supplementalGroups", [])]:
        options += ["--group-add", str(gid)]
    if merged.get("readOnlyRootFilesystem"):
        # Only what the pod mounts is writable: no tmpfs of podman's own on /tmp, /run, /var/tmp.
        options += ["--read-only", "--read-only-tmpfs=false"]
    if merged.get("allowPrivilegeEscalation") is False:
        options += ["--security-opt", "no-new-privileges"]
    if merged.get("privileged"):
        options.append("--privileged")
    capabilities = merged.get("capabilities") or {}
    options += [arg for cap in capabilities.get("drop", []) for arg in ("--cap-drop", str(cap).lower())]
    options += [arg for cap in capabilities.get("add", []) for arg in ("--cap-add", str(cap))]
    seccomp = (merged.get("seccompProfile") or {}).get("type", "RuntimeDefault")
    if seccomp == "Unconfined":
        options += ["--security-opt", "seccomp=unconfined"]
    elif seccomp != "RuntimeDefault":  # podman's default profile is the runtime default
        raise UnsupportedPodSpec(f"securityContext.seccompProfile.type {seccomp} is not supported")
    return (int(uid) if uid is not None else None, int(gid) if gid is not None else None)


def _resources(resources: Mapping[str, Any]) -> list[str]:
    limits = resources.get("limits") or {}
    options: list[str] = []
    if "memory" in limits:
        limit = str(math.floor(parse_quantity(limits["memory"])))
        options += ["--memory", limit, "--memory-swap", limit]  # no swap, as on a kubelet's node
    if "cpu" in limits:
        options += ["--cpus", str(float(parse_quantity(limits["cpu"])))]
    unknown = set(limits) - {"memory", "cpu"}
    if unknown:
        raise UnsupportedPodSpec(f"resources.limits: unsupported {sorted(unknown)}")
    return options


def _volumes(
    pod_spec: Mapping[str, Any],
    container: Mapping[str, Any],
    config_maps: Mapping[str, Mapping[str, str]],
    work_dir: Path,
) -> list[str]:
    volumes = {v["name"]: v for v in pod_spec.get("volumes") or []}
    options: list[str] = []
    for mount in container.get("volumeMounts") or []:
        if mount.get("subPath") or mount.get("subPathExpr"):
            raise UnsupportedPodSpec(f"volumeMounts[{mount['name']}]: subPath is not supported")
        volume = volumes[mount["name"]]
        path = mount["mountPath"]
        if "configMap" in volume:
            source = volume["configMap"]
            if source.get("items"):
                raise UnsupportedPodSpec(f"volumes[{volume['name']}].configMap.items is not supported")
            data = config_maps[source["name"]]
            directory = work_dir / "volumes" / volume["name"]
            mode = int(source.get("defaultMode", 0o644))
            _write_files(directory, data, mode)
            options += ["--volume", f"{directory}:{path}:ro"]  # a ConfigMap volume is always read-only
        elif "emptyDir" in volume:
            size = volume["emptyDir"].get("sizeLimit")
            tmpfs = f"{path}:rw,mode=1777" + (f",size={math.floor(parse_quantity(size))}" if size else "")
            options += ["--tmpfs", tmpfs]
        else:
            raise UnsupportedPodSpec(f"volumes[{volume['name']}]: only configMap and emptyDir are supported")
    return options


def _service_account(api: ApiServerAccess, namespace: str, directory: Path) -> list[str]:
    """The projected service-account volume and the service variables every pod gets."""
    _write_files(directory, {"token": api.token, "ca.crt": api.ca_pem, "namespace": namespace}, 0o644)
    return [
        "--volume", f"{directory}:{SERVICE_ACCOUNT_DIR}:ro",
        "--env", f"KUBERNETES_SERVICE_HOST={api.host}",
        "--env", f"KUBERNETES_SERVICE_PORT={api.port}",
    ]  # fmt: skip


def _write_files(directory: Path, files: Mapping[str, str], mode: int) -> None:
    """Files readable by the container's non-root user, as a kubelet's volume (directory 0755)."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    for name, text in files.items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        path.chmod(mode)


def _probe(spec: Mapping[str, Any], ports: Mapping[str, int], kind: str) -> Probe:
    http = spec.get("httpGet")
    if not http:
        raise UnsupportedPodSpec(f"{kind}Probe: only httpGet probes are supported")
    port = http["port"]
    number = ports[port] if isinstance(port, str) else int(port)
    return Probe(path=http.get("path", "/"), port=number, scheme=http.get("scheme", "HTTP"))
