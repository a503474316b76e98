"""Raw-JSON access to the e2e API server and manifest builders for nodes and pods.

Objects stay plain dicts, as the API server sends them. Requests go through a kubernetes_asyncio ``ApiClient``
but skip its model classes, which cannot read every answer (a pods/binding POST answers with a ``v1.Status``
that ``create_namespaced_pod_binding`` fails to deserialize after the binding succeeded). Every request has a
timeout. An HTTP error raises ``kubernetes_asyncio.client.exceptions.ApiException`` with ``.status``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar, cast

from kubernetes_asyncio.client import ApiClient

REQUEST_TIMEOUT = 30.0
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
HOSTNAME_LABEL = "kubernetes.io/hostname"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
#: Set on every node the e2e fixtures create, to the namespace of the test that created it.
OWNER_LABEL = "e2e.pyscheduler.io/test-namespace"

T = TypeVar("T")
JSON = dict[str, Any]


async def request_json(
    api_client: ApiClient,
    method: str,
    path: str,
    *,
    body: Any = None,
    query: Mapping[str, str | int | bool] | None = None,
    content_type: str = "application/json",
    request_timeout: float = REQUEST_TIMEOUT,
) -> JSON:
    """Sends one API request and returns the decoded JSON answer (raises ApiException on HTTP errors)."""
    result = await api_client.call_api(
        path,
        method,
        query_params=list(query.items()) if query else None,
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
        response_types_map={200: "object", 201: "object", 202: "object"},
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
        _request_timeout=request_timeout,
    )
    return cast(JSON, result)


async def bind_pod(
    api_client: ApiClient,
    namespace: str,
    name: str,
    node_name: str,
    *,
    request_timeout: float = REQUEST_TIMEOUT,
) -> JSON:
    """POSTs a pods/binding, as a scheduler does; returns the v1.Status the API server answers with."""
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }
    return await request_json(
        api_client,
        "POST",
        f"/api/v1/namespaces/{namespace}/pods/{name}/binding",
        body=binding,
        request_timeout=request_timeout,
    )


async def get_pod(api_client: ApiClient, namespace: str, name: str) -> JSON:
    return await request_json(api_client, "GET", f"/api/v1/namespaces/{namespace}/pods/{name}")


async def list_pods(api_client: ApiClient, namespace: str, label_selector: str | None = None) -> list[JSON]:
    query = {"labelSelector": label_selector} if label_selector else None
    answer = await request_json(api_client, "GET", f"/api/v1/namespaces/{namespace}/pods", query=query)
    return cast(list[JSON], answer["items"])


async def wait_for(
    probe: Callable[[], Awaitable[T | None]], *, what: str, within: float = 30.0, interval: float = 0.2
) -> T:
    """Calls ``probe`` until it returns something other than None/False and returns that.

    Raises AssertionError naming ``what`` after ``within`` seconds.
    """
    deadline = time.monotonic() + within
    while True:
        result = await probe()
        if result is not None and result is not False:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within:.0f} s waiting for {what}")
        await asyncio.sleep(interval)


async def wait_for_pod_bound(
    api_client: ApiClient, namespace: str, name: str, *, within: float = 30.0
) -> JSON:
    """Waits until the pod has a spec.nodeName and returns the pod."""

    async def bound() -> JSON | None:
        pod = await get_pod(api_client, namespace, name)
        return pod if pod["spec"].get("nodeName") else None

    return await wait_for(bound, what=f"pod {namespace}/{name} to be bound", within=within)


async def unschedulable_message(
    api_client: ApiClient, namespace: str, name: str, *, prefix: str = "", within: float = 60
) -> str:
    """The pod's PodScheduled=False message (reason Unschedulable), once it starts with `prefix`; the pod must
    stay unbound meanwhile (a scheduler that saw it before all nodes reached its cache retries when they
    arrive: a prefix such as "0/4 nodes" waits for the attempt that saw every node)."""

    async def probe() -> str | None:
        pod = await get_pod(api_client, namespace, name)
        assert not pod["spec"].get("nodeName"), f"{name} was bound to {pod['spec']['nodeName']}: it must fit nowhere"
        cond = status_condition(pod, "PodScheduled")
        if cond and cond.get("status") == "False" and str(cond.get("message", "")).startswith(prefix or "0"):
            assert cond.get("reason") == "Unschedulable", cond
            return str(cond["message"])
        return None

    return await wait_for(probe, what=f"PodScheduled=False on {namespace}/{name}", within=within)


async def scheduling_failure_message(
    api_client: ApiClient, namespace: str, name: str, *, scheduler: str, within: float = 90
) -> str:
    """The pod's PodScheduled=False message, whatever its reason (a plugin's Error too); `scheduler` must leave
    the pod unbound meanwhile."""

    async def probe() -> str | None:
        pod = await get_pod(api_client, namespace, name)
        assert not pod["spec"].get("nodeName"), f"{scheduler} bound {name} to {pod['spec']['nodeName']}"
        cond = status_condition(pod, "PodScheduled")
        if cond and cond.get("status") == "False" and cond.get("message"):
            return str(cond["message"])
        return None

    return await wait_for(probe, what=f"PodScheduled=False on {namespace}/{name}", within=within)


async def failed_scheduling_note(api_client: ApiClient, namespace: str, name: str, *, within: float = 60) -> str:
    """The note of the pod's FailedScheduling event (events.k8s.io/v1)."""

    async def probe() -> str | None:
        answer = await request_json(api_client, "GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
        for event in answer["items"]:
            if event.get("reason") == "FailedScheduling" and event["regarding"].get("name") == name:
                return str(event.get("note", ""))
        return None

    return await wait_for(probe, what=f"a FailedScheduling event for {namespace}/{name}", within=within)


def assert_same_outcomes(outcomes: Mapping[str, Mapping[str, Any]]) -> None:
    """pyscheduler's outcome equals upstream's (keyed by scheduler name), messages byte for byte."""
    ours, upstream = outcomes["pyscheduler"], outcomes["default-scheduler"]
    assert ours.keys() == upstream.keys(), outcomes
    for key, value in ours.items():
        assert value == upstream[key], f"{key}:\n  upstream:    {upstream[key]!r}\n  pyscheduler: {value!r}"


def status_condition(obj: Mapping[str, Any], condition_type: str) -> JSON | None:
    """The object's (pod's, node's) status condition of that type, if any."""
    for condition in obj.get("status", {}).get("conditions") or []:
        if condition.get("type") == condition_type:
            return cast(JSON, condition)
    return None


def node_manifest(
    name: str,
    *,
    zone: str | None = None,
    region: str | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    unschedulable: bool = False,
    ready: bool = True,
) -> JSON:
    """A Node with the labels a kubelet sets (hostname, os, arch) plus zone/region and ``labels``.

    A node that is not ``ready`` carries the node.kubernetes.io/not-ready:NoSchedule taint, as the
    node-lifecycle controller puts it on such nodes in a real cluster.
    """
    all_labels = {HOSTNAME_LABEL: name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
    if zone is not None:
        all_labels[ZONE_LABEL] = zone
    if region is not None:
        all_labels[REGION_LABEL] = region
    all_labels.update(labels or {})
    spec: JSON = {}
    all_taints = [dict(t) for t in taints]
    if not ready:
        all_taints.append({"key": NOT_READY_TAINT, "effect": "NoSchedule"})
    if all_taints:
        spec["taints"] = all_taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": spec,
    }


def node_status(
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: int | str = 110,
    ephemeral_storage: str = "100Gi",
    extended: Mapping[str, str | int] | None = None,
    ready: bool = True,
) -> JSON:
    """A NodeStatus with capacity = allocatable and a Ready condition (True unless ``ready=False``).

    Defaults are upstream scheduler_perf's nodes (4 CPUs, 32Gi, 110 pods).
    """
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": ephemeral_storage}
    resources.update({k: str(v) for k, v in (extended or {}).items()})
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "KubeletNotReady",
        "message": "e2e fake node" + ("" if ready else " (not ready)"),
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    return {"capacity": resources, "allocatable": dict(resources), "conditions": [condition]}


def pod_manifest(
    name: str,
    *,
    scheduler_name: str = "pyscheduler",
    node_name: str | None = None,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    ports: Sequence[Mapping[str, Any]] = (),
    host_network: bool = False,
    spec: Mapping[str, Any] | None = None,
) -> JSON:
    """A one-container (pause) Pod; ``spec`` entries are merged into the pod spec last."""
    container: JSON = {"name": "main", "image": PAUSE_IMAGE}
    resources: JSON = {}
    if requests:
        resources["requests"] = dict(requests)
    if limits:
        resources["limits"] = dict(limits)
    if resources:
        container["resources"] = resources
    if ports:
        container["ports"] = [dict(p) for p in ports]
    pod_spec: JSON = {
        "schedulerName": scheduler_name,
        "containers": [container],
        "terminationGracePeriodSeconds": 0,
    }
    if node_name is not None:
        pod_spec["nodeName"] = node_name
    if node_selector:
        pod_spec["nodeSelector"] = dict(node_selector)
    if affinity:
        pod_spec["affinity"] = dict(affinity)
    if tolerations:
        pod_spec["tolerations"] = [dict(t) for t in tolerations]
    if host_network:
        pod_spec["hostNetwork"] = True
    pod_spec.update(spec or {})
    metadata: JSON = {"name": name}
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def single_replica_config(directory: Path) -> Path:
    """A KubeSchedulerConfiguration for one replica: leader election off, as the chart renders it.

    Test processes must not wait for a Lease that a previous, killed test process may still hold.
    """
    path = directory / "pyscheduler-single-replica.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection:\n"
        "  leaderElect: false\n"
    )
    return path
