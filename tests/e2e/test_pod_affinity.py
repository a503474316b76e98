"""Pod affinity and anti-affinity on a real API server: pyscheduler's messages equal upstream kube-scheduler's,
byte for byte, and a Deployment-like set with hostname anti-affinity spreads one replica per node.

Same pattern as test_message_parity.py: the upstream binary of the same release runs next to pyscheduler;
every shape is created twice on the same nodes and bound pods, once per scheduler, and must fit nowhere.
The PodScheduled message and the FailedScheduling note must be equal byte for byte, preemption suffix
included; SHAPES holds the filter part each shape must produce. Both schedulers start after the
namespaces, their labels and the bound pods exist (their informers are synced before they schedule), so
namespaceSelector shapes do not race the Namespace watch.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.cluster.harness import ManagedProcess
from tests.e2e.conftest import NodeFactory, PodFactory, PySchedulerProcess
from tests.e2e.kube import (
    JSON,
    failed_scheduling_note,
    list_pods,
    request_json,
    unschedulable_message,
    wait_for,
    wait_for_pod_bound,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
MERGE_PATCH = "application/merge-patch+json"

AFFINITY = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"
NODE_SELECTOR = "node(s) didn't match Pod's node affinity/selector"


def _term(labels: dict[str, Any], topology_key: str, **extra: Any) -> JSON:
    selector = {"matchLabels": labels} if "matchExpressions" not in labels else labels
    return {"labelSelector": selector, "topologyKey": topology_key, **extra}


def _required(kind: str, *terms: JSON) -> JSON:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def _both(*parts: JSON) -> JSON:
    out: JSON = {}
    for p in parts:
        out.update(p)
    return out


# name -> (pod factory keyword arguments, the message before its preemption suffix). Every shape fits nowhere.
SHAPES: dict[str, tuple[dict[str, Any], str]] = {
    "anti-affinity-zone": (
        {
            "labels": {"app": "a"},
            "affinity": _required(
                "podAntiAffinity",
                _term({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "cache"]}]}, ZONE),
            ),
        },
        f"0/3 nodes are available: 3 {ANTI_AFFINITY}.",
    ),
    "anti-affinity-replica-on-the-only-node": (
        {
            "labels": {"app": "web"},
            "node_selector": {HOST: "ipa-n1"},
            "affinity": _required("podAntiAffinity", _term({"app": "web"}, HOST)),
        },
        f"0/3 nodes are available: 1 {ANTI_AFFINITY}, 2 {NODE_SELECTOR}.",
    ),
    "affinity-no-matching-pod": (
        {"labels": {"app": "x"}, "affinity": _required("podAffinity", _term({"app": "nothing"}, ZONE))},
        f"0/3 nodes are available: 3 {AFFINITY}.",
    ),
    "affinity-first-pod-without-topology-key": (
        {"labels": {"app": "grp"}, "affinity": _required("podAffinity", _term({"app": "grp"}, "example.com/row"))},
        f"0/3 nodes are available: 3 {AFFINITY}.",
    ),
    "affinity-group-exists-elsewhere": (
        {
            "labels": {"app": "db"},
            "node_selector": {"rack": "r1"},
            "affinity": _required("podAffinity", _term({"app": "db"}, "rack")),
        },
        f"0/3 nodes are available: 1 {AFFINITY}, 2 {NODE_SELECTOR}.",
    ),
    "affinity-and-anti-affinity": (
        {
            "labels": {"app": "m"},
            "affinity": _both(
                _required("podAffinity", _term({"app": "db"}, "rack")),
                _required("podAntiAffinity", _term({"app": "db"}, HOST)),
            ),
        },
        f"0/3 nodes are available: 1 {ANTI_AFFINITY}, 2 {AFFINITY}.",
    ),
    "existing-pods-anti-affinity": (
        {"labels": {"app": "batch"}, "node_selector": {ZONE: "z1"}},
        f"0/3 nodes are available: 1 {NODE_SELECTOR}, 2 {EXISTING}.",
    ),
    "anti-affinity-namespace-selector": (
        {
            "labels": {"app": "f"},
            "affinity": _required(
                "podAntiAffinity", _term({"app": "svc"}, HOST, namespaceSelector={"matchLabels": {"team": "blue"}})
            ),
        },
        f"0/3 nodes are available: 3 {ANTI_AFFINITY}.",
    ),
    "existing-anti-affinity-namespace-selector": (
        {"labels": {"app": "lonely"}, "node_selector": {HOST: "ipa-n3"}},
        f"0/3 nodes are available: 1 {EXISTING}, 2 {NODE_SELECTOR}.",
    ),
}


async def _create_namespace(api_client: ApiClient, name: str, labels: dict[str, str]) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
    await request_json(api_client, "POST", "/api/v1/namespaces", body=body)

    async def service_account() -> bool:  # the ServiceAccount admission plugin needs "default"
        try:
            await request_json(api_client, "GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")
        except ApiException as e:
            if e.status == 404:
                return False
            raise
        return True

    await wait_for(service_account, what=f"ServiceAccount {name}/default")


async def _delete_namespace(api_client: ApiClient, name: str) -> None:
    with contextlib.suppress(ApiException):
        await request_json(api_client, "DELETE", f"/api/v1/namespaces/{name}")

    async def no_pods_left() -> bool:
        if not await list_pods(api_client, name):
            return True
        await request_json(api_client, "DELETE", f"/api/v1/namespaces/{name}/pods", query={"gracePeriodSeconds": 0})
        return False

    await wait_for(no_pods_left, what=f"the pods of namespace {name} to be deleted", within=60)


@pytest.fixture
async def blue_namespace(api_client: ApiClient, namespace: str) -> AsyncIterator[str]:
    """A second namespace labelled team=blue (the test's own gets team=red); deleted afterwards."""
    name = f"{namespace}-blue"[:63]
    await _create_namespace(api_client, name, {"team": "blue"})
    await request_json(
        api_client,
        "PATCH",
        f"/api/v1/namespaces/{namespace}",
        body={"metadata": {"labels": {"team": "red"}}},
        content_type=MERGE_PATCH,
    )
    try:
        yield name
    finally:
        await _delete_namespace(api_client, name)


@pytest.fixture
async def affinity_cluster(create_node: NodeFactory, create_pod: PodFactory, blue_namespace: str) -> str:
    """Three nodes (zone z1: racks r1, r2; zone z2: no rack) and bound pods with and without terms; returns
    the blue namespace."""
    blue = blue_namespace
    await create_node("ipa-n1", zone="z1", region="r", labels={"rack": "r1"})
    await create_node("ipa-n2", zone="z1", region="r", labels={"rack": "r2"})
    await create_node("ipa-n3", zone="z2", region="r")
    bound: dict[str, Any] = {"scheduler_name": "nobody", "requests": {"cpu": "100m"}}
    await create_pod(
        "web-0",
        node_name="ipa-n1",
        labels={"app": "web"},
        affinity=_required("podAntiAffinity", _term({"app": "web"}, HOST)),
        **bound,
    )
    await create_pod(
        "db-0",
        node_name="ipa-n2",
        labels={"app": "db"},
        affinity=_required("podAntiAffinity", _term({"app": "batch"}, ZONE)),
        **bound,
    )
    await create_pod("cache-0", node_name="ipa-n3", labels={"app": "cache"}, **bound)
    for i in (1, 2, 3):
        await create_pod(f"svc-{i}", namespace=blue, node_name=f"ipa-n{i}", labels={"app": "svc"}, **bound)
    await create_pod(
        "guard",
        namespace=blue,
        node_name="ipa-n3",
        labels={"app": "guard"},
        affinity=_required(
            "podAntiAffinity", _term({"app": "lonely"}, HOST, namespaceSelector={"matchLabels": {"team": "red"}})
        ),
        **bound,
    )
    return blue


@pytest.fixture
def schedulers_after_cluster(
    affinity_cluster: str, kube_scheduler: ManagedProcess, pyscheduler: PySchedulerProcess
) -> tuple[ManagedProcess, PySchedulerProcess]:
    """Both schedulers, started once the cluster exists (fixtures are set up in the order requested)."""
    return kube_scheduler, pyscheduler


async def test_pod_affinity_failure_messages_equal_upstream_kube_scheduler(
    schedulers_after_cluster: tuple[ManagedProcess, PySchedulerProcess],
    api_client: ApiClient,
    namespace: str,
    create_pod: PodFactory,
) -> None:
    """Affinity, anti-affinity, existing pods' anti-affinity, first-pod exception, namespaceSelector: the
    condition message and event note equal upstream's (preemption suffix included) and say what we expect."""
    kube_scheduler, pyscheduler = schedulers_after_cluster
    assert kube_scheduler.running() and pyscheduler.process.running()
    for shape, (kwargs, _) in SHAPES.items():
        await create_pod(f"{shape}-up", scheduler_name="default-scheduler", **kwargs)
        await create_pod(f"{shape}-py", scheduler_name="pyscheduler", **kwargs)
    mismatches = []
    for shape, (_, expected) in SHAPES.items():
        upstream = await unschedulable_message(api_client, namespace, f"{shape}-up", within=90)
        ours = await unschedulable_message(api_client, namespace, f"{shape}-py", within=90)
        print(f"{shape}: {ours}")
        if upstream != ours:
            mismatches.append(f"{shape}:\n  upstream:    {upstream}\n  pyscheduler: {ours}")
        elif ours.split(" preemption: ", 1)[0] != expected:
            mismatches.append(f"{shape}: the shape does not test what it says:\n  got: {ours}\n  want: {expected}")
        up_note = await failed_scheduling_note(api_client, namespace, f"{shape}-up", within=90)
        our_note = await failed_scheduling_note(api_client, namespace, f"{shape}-py", within=90)
        if up_note != our_note:
            mismatches.append(f"{shape} (event note):\n  upstream:    {up_note}\n  pyscheduler: {our_note}")
    assert not mismatches, "\n".join(mismatches)


async def test_replicas_with_hostname_anti_affinity_land_on_distinct_nodes(
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """A Deployment-like set of 3 replicas with required hostname anti-affinity gets 3 distinct nodes; a 4th
    stays Pending with upstream's words; the first pod of a self-affinity group is placed (first-pod exception)
    and its second pod follows it into the same zone."""
    for i, zone in enumerate(("z1", "z1", "z2")):
        await create_node(f"spread-{i}", zone=zone, region="r")
    anti = _required("podAntiAffinity", _term({"app": "rs"}, HOST))
    for i in range(3):
        await create_pod(f"rs-{i}", labels={"app": "rs"}, affinity=anti, requests={"cpu": "100m"})
    hosts = [(await wait_for_pod_bound(api_client, namespace, f"rs-{i}"))["spec"]["nodeName"] for i in range(3)]
    assert sorted(hosts) == ["spread-0", "spread-1", "spread-2"], pyscheduler.log()
    await create_pod("rs-3", labels={"app": "rs"}, affinity=anti, requests={"cpu": "100m"})
    assert await unschedulable_message(api_client, namespace, "rs-3", within=90) == (
        f"0/3 nodes are available: 3 {ANTI_AFFINITY}. "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )

    group = _required("podAffinity", _term({"app": "grp"}, ZONE))
    await create_pod("grp-0", labels={"app": "grp"}, affinity=group, requests={"cpu": "100m"})
    first = (await wait_for_pod_bound(api_client, namespace, "grp-0"))["spec"]["nodeName"]
    await create_pod("grp-1", labels={"app": "grp"}, affinity=group, requests={"cpu": "100m"})
    second = (await wait_for_pod_bound(api_client, namespace, "grp-1"))["spec"]["nodeName"]
    zone_of = {"spread-0": "z1", "spread-1": "z1", "spread-2": "z2"}
    assert zone_of[second] == zone_of[first]
