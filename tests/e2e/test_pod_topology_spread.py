"""PodTopologySpread on a real API server, with upstream kube-scheduler v1.37.2 as the oracle.

1. Messages: spread shapes that fit nowhere (skew, missing topology label, minDomains, hostname skew) give
   the same PodScheduled message and FailedScheduling note as upstream's, up to its ` preemption:` suffix.
2. Hard spreading of a Deployment made by kube-controller-manager (so its pods carry pod-template-hash, which
   the spread constraint's matchLabelKeys uses, and kube-apiserver merges into the selector at create): on
   twin node pools, one for each scheduler, the pods land with the same per-zone and per-node counts.
3. System default spreading of a ReplicaSet's new pod (kube-controller-manager adopts the running pods and
   creates one more): PodTopologySpread's weighted score of every node equals the one upstream logs at -v=10,
   and pyscheduler binds it where upstream bound its twin.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from tests.cluster.harness import REPO_ROOT, ControlPlane, ManagedProcess
from tests.e2e.conftest import NodeFactory, PodFactory, PySchedulerProcess, StartPyScheduler
from tests.e2e.kube import (
    JSON,
    failed_scheduling_note,
    get_pod,
    list_pods,
    request_json,
    unschedulable_message,
    wait_for,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}


def _constraint(max_skew: int, key: str, labels: dict[str, str], **extra: Any) -> JSON:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": labels},
        **extra,
    }


# ------------------------------------------------------------------------------------------- 1. messages

# name -> (pod labels, constraints). Each fits no node of _message_cluster.
SHAPES: dict[str, tuple[dict[str, str], list[JSON]]] = {
    "zone-skew": ({"app": "spread"}, [_constraint(1, ZONE, {"app": "spread"})]),
    "missing-label": ({"app": "spread"}, [_constraint(1, "example.com/rack", {"app": "spread"})]),
    "min-domains": ({"app": "md"}, [_constraint(1, ZONE, {"app": "md"}, minDomains=3)]),
    "hostname-skew": ({"app": "spread"}, [_constraint(1, HOSTNAME, {"app": "spread"})]),
    "zone-and-hostname": (
        {"app": "spread"},
        [_constraint(2, ZONE, {"app": "spread"}), _constraint(1, HOSTNAME, {"app": "spread"})],
    ),
}


async def _message_cluster(create_node: NodeFactory, create_pod: PodFactory) -> None:
    """Zone z1: n1 (2 app=spread, 1 app=md), n2 (1 app=spread); zone z2: n3, tainted (1 app=md); n4: no zone
    label, full (pods=1). Without minDomains the md shape would fit n2 (skew 1+1-1); with 3 it fits nowhere."""
    await create_node("pts-n1", zone="z1", cpu="4", memory="8Gi")
    await create_node("pts-n2", zone="z1", cpu="4", memory="8Gi")
    await create_node("pts-n3", zone="z2", cpu="4", memory="8Gi", taints=[TAINT])
    await create_node("pts-n4", cpu="4", memory="8Gi", pods=1)
    placed = [
        ("s1", "pts-n1", "spread"),
        ("s2", "pts-n1", "spread"),
        ("s3", "pts-n2", "spread"),
        ("m1", "pts-n1", "md"),
        ("m2", "pts-n3", "md"),
        ("full", "pts-n4", "other"),
    ]
    for name, node, app in placed:
        await create_pod(name, scheduler_name="nobody", node_name=node, labels={"app": app})


async def test_spread_failure_messages_equal_upstream(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """Skew, missing label, minDomains: condition message and event note equal upstream's, preemption
    suffix included."""
    await _message_cluster(create_node, create_pod)
    for shape, (labels, constraints) in SHAPES.items():
        for suffix, scheduler in (("up", "default-scheduler"), ("py", "pyscheduler")):
            await create_pod(
                f"{shape}-{suffix}",
                scheduler_name=scheduler,
                labels=labels,
                spec={"topologySpreadConstraints": constraints},
            )
    mismatches = []
    for shape in SHAPES:
        upstream = await unschedulable_message(api_client, namespace, f"{shape}-up")
        ours = await unschedulable_message(api_client, namespace, f"{shape}-py")
        print(f"{shape}: {ours}")
        assert upstream.startswith("0/4 nodes are available: "), upstream
        if upstream != ours:
            mismatches.append(f"{shape}:\n  upstream:    {upstream}\n  pyscheduler: {ours}")
        up_note = await failed_scheduling_note(api_client, namespace, f"{shape}-up")
        our_note = await failed_scheduling_note(api_client, namespace, f"{shape}-py")
        if up_note != our_note:
            mismatches.append(f"{shape} (event):\n  upstream:    {up_note}\n  pyscheduler: {our_note}")
    assert not mismatches, "\n".join(mismatches)
    # The spread reasons themselves appear (n3 is out for its taint and n4 for its pod count first).
    missing = await unschedulable_message(api_client, namespace, "missing-label-py")
    assert "2 node(s) didn't match pod topology spread constraints (missing required label)." in missing, missing
    for shape in ("zone-skew", "min-domains", "hostname-skew", "zone-and-hostname"):
        ours = await unschedulable_message(api_client, namespace, f"{shape}-py")
        assert "2 node(s) didn't match pod topology spread constraints." in ours, ours


# ------------------------------------------------------------------------------------------- 2. a Deployment


def _deployment(name: str, scheduler: str, pool: str, replicas: int) -> JSON:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "schedulerName": scheduler,
                    "nodeSelector": {"pool": pool},
                    "topologySpreadConstraints": [
                        _constraint(1, ZONE, labels, matchLabelKeys=["pod-template-hash"]),
                        _constraint(1, HOSTNAME, labels, matchLabelKeys=["pod-template-hash"]),
                    ],
                    "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
                },
            },
        },
    }


async def _pool(create_node: NodeFactory, pool: str) -> dict[str, str]:
    """Two nodes in zone a, one in b, one in c; returns node -> zone."""
    layout = {
        f"{pool}-a1": f"{pool}-a",
        f"{pool}-a2": f"{pool}-a",
        f"{pool}-b1": f"{pool}-b",
        f"{pool}-c1": f"{pool}-c",
    }
    for node, zone in layout.items():
        await create_node(node, zone=zone, cpu="8", memory="16Gi", labels={"pool": pool})
    return layout


async def _bound(api_client: ApiClient, namespace: str, selector: str, count: int) -> list[JSON]:
    async def probe() -> list[JSON] | None:
        pods = await list_pods(api_client, namespace, selector)
        bound = [p for p in pods if p["spec"].get("nodeName")]
        return bound if len(pods) >= count and len(bound) >= count else None

    return await wait_for(probe, what=f"{count} bound pods with {selector}", within=120)


async def test_deployment_pods_spread_like_upstream(
    kube_scheduler: ManagedProcess,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
) -> None:
    """Seven replicas, zone and hostname maxSkew 1: both schedulers reach the same per-zone and per-node counts
    (zones 3/2/2, nodes 2/1/2/2 with zone a's two nodes sharing its 3), and pending pods stay none."""
    zones = {**await _pool(create_node, "up"), **await _pool(create_node, "py")}
    for name, scheduler, pool in (("web-up", "default-scheduler", "up"), ("web-py", "pyscheduler", "py")):
        await request_json(
            api_client,
            "POST",
            f"/apis/apps/v1/namespaces/{namespace}/deployments",
            body=_deployment(name, scheduler, pool, 7),
        )
    shapes = {}
    for name, pool in (("web-up", "up"), ("web-py", "py")):
        pods = await _bound(api_client, namespace, f"app={name}", 7)
        # kube-apiserver merged matchLabelKeys into the stored selector at create (gate SelectorMerge, v1.37).
        stored = pods[0]["spec"]["topologySpreadConstraints"][0]["labelSelector"]
        hash_value = pods[0]["metadata"]["labels"]["pod-template-hash"]
        assert {"key": "pod-template-hash", "operator": "In", "values": [hash_value]} in stored["matchExpressions"]
        per_node = Counter(p["spec"]["nodeName"].removeprefix(f"{pool}-") for p in pods)
        per_zone = Counter(zones[p["spec"]["nodeName"]].removeprefix(f"{pool}-") for p in pods)
        shapes[name] = (sorted(per_zone.values()), per_node["b1"], per_node["c1"], sorted(per_node.values()))
        print(f"{name}: zones {dict(per_zone)} nodes {dict(per_node)}")
    assert shapes["web-py"] == shapes["web-up"]
    assert shapes["web-py"] == ([2, 2, 3], 2, 2, [1, 2, 2, 2])


# ------------------------------------------------------------------------------------------- 3. system defaults


@pytest.fixture
def verbose_kube_scheduler(control_plane: ControlPlane) -> Iterator[ManagedProcess]:
    """Upstream kube-scheduler at -v=10, which logs every plugin's weighted score of every node."""
    process = control_plane.start_kube_scheduler(extra_args=["--v=10"])
    try:
        yield process
    finally:
        control_plane.stop_process("kube-scheduler")


# The running pods of the ReplicaSet before it is scaled up by one: node role -> pods.
RUNNING = {"a1": 3, "a2": 1, "b1": 0, "c1": 1}


async def _replica_set_with_running_pods(
    api_client: ApiClient, namespace: str, create_node: NodeFactory, create_pod: PodFactory, pool: str, scheduler: str
) -> str:
    """Pool nodes (zones a: a1, a2; b: b1; c1 has no zone label), orphan running pods of app=web-<pool> as
    RUNNING, then a ReplicaSet selecting them with one replica more: kube-controller-manager adopts the five
    and creates a sixth for `scheduler`. Returns the new pod's name (once it exists, bound or not)."""
    for role in RUNNING:
        zone = None if role == "c1" else f"{pool}-{role[0]}"
        await create_node(f"{pool}-{role}", zone=zone, cpu="8", memory="16Gi", labels={"pool": pool})
    labels = {"app": f"web-{pool}"}
    for role, count in RUNNING.items():
        for i in range(count):
            await create_pod(
                f"run-{pool}-{role}-{i}", scheduler_name="nobody", node_name=f"{pool}-{role}", labels=labels
            )
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": f"web-{pool}"},
        "spec": {
            "replicas": sum(RUNNING.values()) + 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "schedulerName": scheduler,
                    "nodeSelector": {"pool": pool},
                    "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
                },
            },
        },
    }
    await request_json(api_client, "POST", f"/apis/apps/v1/namespaces/{namespace}/replicasets", body=rs)

    async def adopted_and_new() -> str | None:
        pods = await list_pods(api_client, namespace, f"app=web-{pool}")
        owned = [p for p in pods if [r["kind"] for r in p["metadata"].get("ownerReferences", [])] == ["ReplicaSet"]]
        new = [p for p in owned if not p["metadata"]["name"].startswith("run-")]
        if len(owned) == sum(RUNNING.values()) + 1 and len(new) == 1:
            return str(new[0]["metadata"]["name"])
        return None

    return await wait_for(adopted_and_new, what=f"web-{pool} to adopt the running pods and create one", within=90)


async def _node_of(api_client: ApiClient, namespace: str, name: str) -> str:
    async def bound() -> str | None:
        node = (await get_pod(api_client, namespace, name))["spec"].get("nodeName")
        return str(node) if node else None

    return await wait_for(bound, what=f"{namespace}/{name} to be bound", within=60)


async def _explain_json(kubeconfig: Path, pod: str) -> JSON:
    """`pyscheduler explain NS/NAME -o json` from a fresh LIST of the API (no scheduler running)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "scheduler",
        "explain",
        pod,
        "--kubeconfig",
        str(kubeconfig),
        "-o",
        "json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    doc: JSON = json.loads(out)
    return doc


_SCORE_LINE = re.compile(
    r'"Plugin scored node for pod" pod="(?P<pod>[^"]+)" plugin="(?P<plugin>[^"]+)" node="(?P<node>[^"]+)" '
    r"score=(?P<score>-?\d+)"
)


async def test_system_default_spreading_scores_equal_upstream(
    verbose_kube_scheduler: ManagedProcess,
    start_pyscheduler: StartPyScheduler,
    api_client: ApiClient,
    kubeconfig: Path,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """A ReplicaSet's new pod: PodTopologySpread's weighted per-node scores (system default constraints, a
    zoneless node included) equal upstream's -v=10 log, and pyscheduler binds it where upstream bound its twin.

    Our scores come from `pyscheduler explain` on the pending pod before pyscheduler starts (explaining a
    bound pod would only look at its node: NodeName's PreFilter)."""
    up_pod = await _replica_set_with_running_pods(
        api_client, namespace, create_node, create_pod, "up", "default-scheduler"
    )
    up_node = (await _node_of(api_client, namespace, up_pod)).removeprefix("up-")
    py_pod = await _replica_set_with_running_pods(api_client, namespace, create_node, create_pod, "py", "pyscheduler")

    upstream: dict[str, dict[str, int]] = {}
    for line in verbose_kube_scheduler.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        m = _SCORE_LINE.search(line)
        if m and m["pod"] == f"{namespace}/{up_pod}":
            upstream.setdefault(m["plugin"], {})[m["node"].removeprefix("up-")] = int(m["score"])
    assert set(upstream.get("PodTopologySpread", {})) == set(RUNNING), f"upstream logged {upstream}"

    explanation = await _explain_json(kubeconfig, f"{namespace}/{py_pod}")
    pool = [n for n in explanation["nodes"] if n["name"].startswith("py-")]
    assert all(n["feasible"] for n in pool), pool
    ours = {n["name"].removeprefix("py-"): n["scores"]["PodTopologySpread"] for n in pool}
    print(f"PodTopologySpread weighted scores: upstream {upstream['PodTopologySpread']}, pyscheduler {ours}")
    assert ours == upstream["PodTopologySpread"]
    # Raw: hostname cnt*ln(4+2)+2, zone cnt*ln(3+2)+4 (domains a, b and "" for zoneless c1, which gets no zone
    # term): a1 3 pods in a zone of 4 -> 18, a2 -> 14, b1 -> 6, c1 -> 4; normalized 100*(18+4-s)/18, weight 2.
    assert ours == {"a1": 44, "a2": 88, "b1": 176, "c1": 200}
    best = {b.removeprefix("py-") for b in explanation["bestNodes"]}
    assert up_node in best, f"upstream chose {up_node}, our best nodes are {best}"

    await start_pyscheduler()
    py_node = (await _node_of(api_client, namespace, py_pod)).removeprefix("py-")
    assert py_node in best
    if len(best) == 1:
        assert py_node == up_node
