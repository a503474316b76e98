"""`kubectl pyscheduler explain` on a real cluster: the suggested fix, applied, really makes the pod schedule.

The real kubectl (built from the same release) runs our `kubectl-pyscheduler` executable from the PATH, as
it runs any plugin, with the user's kubeconfig and a non-current `--context`. For each fix kind the test
reads the ranked fixes (`-o json`), applies the first one through the API exactly as a user would (add
the toleration, recreate the pod with the lower request or without the selector key, delete the port
holder, uncordon the node, publish the declared feature on the node), and checks that pyscheduler then binds
the pod on one of the predicted nodes, and that the predicted count matches the nodes the change opened.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio.client import ApiClient

from tests.cluster.harness import ControlPlane, default_bin_dir
from tests.e2e.conftest import NodeFactory, PodFactory, PySchedulerProcess
from tests.e2e.kube import JSON, PAUSE_IMAGE, get_pod, request_json, wait_for, wait_for_pod_bound

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


@pytest.fixture
def kubectl_env(control_plane: ControlPlane, kubeconfig: Path, tmp_path: Path) -> dict[str, str]:
    """A user's environment: a kubeconfig whose current context is broken, the good one named by --context,
    and kubectl-pyscheduler on the PATH (the venv's bin, where pip installed it)."""
    config = yaml.safe_load(kubeconfig.read_text())
    good = config["current-context"]
    config["contexts"].append({"name": "broken", "context": {"cluster": "nowhere", "user": "nobody"}})
    config["clusters"].append({"name": "nowhere", "cluster": {"server": "https://127.0.0.1:1"}})
    config["users"].append({"name": "nobody", "user": {"token": "x"}})
    config["current-context"] = "broken"
    path = tmp_path / "user-kubeconfig"
    path.write_text(yaml.safe_dump(config))
    venv_bin = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "KUBECONFIG": str(path),
        "PATH": os.pathsep.join([venv_bin, os.environ.get("PATH", "")]),
        "GOOD_CONTEXT": good,
    }


async def kubectl(env: dict[str, str], *args: str) -> str:
    """The real kubectl with `args` (off the event loop); its stdout. Fails the test on a non-zero exit."""
    argv = [str(default_bin_dir() / "kubectl"), *args]
    out = await asyncio.to_thread(
        subprocess.run, argv, capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


async def kubectl_explain(env: dict[str, str], namespace: str, pod: str) -> JSON:
    """`kubectl pyscheduler explain -n NS POD -o json --context GOOD` through the real kubectl."""
    context = env["GOOD_CONTEXT"]
    out = await kubectl(env, "pyscheduler", "explain", "-n", namespace, pod, "-o", "json", "--context", context)
    doc: JSON = json.loads(out)
    assert doc["apiVersion"] == "explain.pyscheduler.io/v1"
    return doc


def first_fix(doc: JSON, kind: str) -> JSON:
    fixes: list[JSON] = [f for f in doc["fixes"] if f["kind"] == kind]
    assert fixes, f"no {kind} fix in {[f['description'] for f in doc['fixes']]}"
    return fixes[0]


async def pending_then_explained(
    api_client: ApiClient, env: dict[str, str], namespace: str, name: str, kind: str
) -> JSON:
    """Wait until pyscheduler reported the pod unschedulable, then ask kubectl for the fix of `kind`."""

    async def reported() -> bool:
        pod = await get_pod(api_client, namespace, name)
        return any(c.get("type") == "PodScheduled" and c.get("status") == "False"
                   for c in (pod.get("status") or {}).get("conditions") or [])

    await wait_for(reported, what=f"{name} reported unschedulable", within=30)
    return first_fix(await kubectl_explain(env, namespace, name), kind)


async def test_tolerate_taint(
    pyscheduler: PySchedulerProcess, kubectl_env: dict[str, str], api_client: ApiClient, namespace: str,
    create_node: NodeFactory, create_pod: PodFactory,
) -> None:
    for i in range(2):
        await create_node(f"{namespace}-gpu{i}", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    await create_node(f"{namespace}-cordoned", unschedulable=True)
    await create_pod("p", requests={"cpu": "100m"})
    fix = await pending_then_explained(api_client, kubectl_env, namespace, "p", "tolerate-taint")
    assert fix["opensNodes"] == 2 and fix["nodes"] == [f"{namespace}-gpu0", f"{namespace}-gpu1"]
    patch = {"spec": {"tolerations": [fix["change"]["toleration"]]}}
    await request_json(api_client, "PATCH", f"/api/v1/namespaces/{namespace}/pods/p", body=patch,
                       content_type="application/strategic-merge-patch+json")
    bound = await wait_for_pod_bound(api_client, namespace, "p")
    assert bound["spec"]["nodeName"] in fix["nodes"]


async def test_lower_request(
    pyscheduler: PySchedulerProcess, kubectl_env: dict[str, str], api_client: ApiClient, namespace: str,
    create_node: NodeFactory, create_pod: PodFactory,
) -> None:
    await create_node(f"{namespace}-a", cpu="2")
    await create_node(f"{namespace}-b", cpu="3")
    await create_pod("big", requests={"cpu": "4"})
    fix = await pending_then_explained(api_client, kubectl_env, namespace, "big", "lower-request")
    assert fix["change"] == {"resource": "cpu", "request": "3"} and fix["nodes"] == [f"{namespace}-b"]
    await request_json(
        api_client, "DELETE", f"/api/v1/namespaces/{namespace}/pods/big", query={"gracePeriodSeconds": 0}
    )
    await create_pod("big2", requests={"cpu": fix["change"]["request"]})
    bound = await wait_for_pod_bound(api_client, namespace, "big2")
    assert bound["spec"]["nodeName"] in fix["nodes"]


async def test_drop_node_selector(
    pyscheduler: PySchedulerProcess, kubectl_env: dict[str, str], api_client: ApiClient, namespace: str,
    create_node: NodeFactory, create_pod: PodFactory,
) -> None:
    await create_node(f"{namespace}-n1", labels={"disk": "hdd"})
    await create_pod("p", node_selector={"disk": "nvme"})
    fix = await pending_then_explained(api_client, kubectl_env, namespace, "p", "drop-node-selector")
    assert fix["change"] == {"nodeSelector": {"disk": "nvme"}} and fix["opensNodes"] == 1
    await request_json(
        api_client, "DELETE", f"/api/v1/namespaces/{namespace}/pods/p", query={"gracePeriodSeconds": 0}
    )
    await create_pod("p2")
    assert (await wait_for_pod_bound(api_client, namespace, "p2"))["spec"]["nodeName"] in fix["nodes"]


async def test_free_host_port(
    pyscheduler: PySchedulerProcess, kubectl_env: dict[str, str], api_client: ApiClient, namespace: str,
    create_node: NodeFactory, create_pod: PodFactory,
) -> None:
    node = f"{namespace}-n1"
    await create_node(node)
    port = [{"containerPort": 53, "hostPort": 53, "protocol": "UDP"}]
    await create_pod("holder", node_name=node, ports=port, scheduler_name="other")
    await create_pod("dns", ports=port)
    fix = await pending_then_explained(api_client, kubectl_env, namespace, "dns", "free-host-port")
    assert fix["change"]["pods"] == [f"{namespace}/holder"] and fix["nodes"] == [node]
    await request_json(api_client, "DELETE", f"/api/v1/namespaces/{namespace}/pods/holder",
                       query={"gracePeriodSeconds": 0})
    assert (await wait_for_pod_bound(api_client, namespace, "dns"))["spec"]["nodeName"] == node


async def test_uncordon(
    pyscheduler: PySchedulerProcess, kubectl_env: dict[str, str], api_client: ApiClient, namespace: str,
    create_node: NodeFactory, create_pod: PodFactory,
) -> None:
    node = f"{namespace}-cordoned"
    await create_node(node, unschedulable=True)
    await create_pod("p")
    fix = await pending_then_explained(api_client, kubectl_env, namespace, "p", "uncordon")
    assert fix["nodes"] == [node]
    await request_json(api_client, "PATCH", f"/api/v1/nodes/{node}", body={"spec": {"unschedulable": False}},
                       content_type="application/strategic-merge-patch+json")
    assert (await wait_for_pod_bound(api_client, namespace, "p"))["spec"]["nodeName"] == node


async def test_declare_features(
    pyscheduler: PySchedulerProcess, kubectl_env: dict[str, str], api_client: ApiClient, namespace: str,
    create_node: NodeFactory, create_pod: PodFactory,
) -> None:
    """A pod with a RestartAllContainers restart rule and no node declaring the feature: once the predicted
    node's kubelet publishes it (a status PATCH), pyscheduler binds the pod there."""
    node = f"{namespace}-n1"
    await create_node(node)
    rule = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    container = {"name": "main", "image": PAUSE_IMAGE, "restartPolicy": "Never", "restartPolicyRules": [rule]}
    await create_pod("p", spec={"restartPolicy": "Never", "containers": [container]})
    fix = await pending_then_explained(api_client, kubectl_env, namespace, "p", "declare-features")
    assert fix["nodes"] == [node]
    assert fix["change"] == {"node": node, "declaredFeatures": ["RestartAllContainersOnContainerExits"]}
    await request_json(api_client, "PATCH", f"/api/v1/nodes/{node}/status",
                       body={"status": {"declaredFeatures": fix["change"]["declaredFeatures"]}},
                       content_type="application/merge-patch+json")
    assert (await wait_for_pod_bound(api_client, namespace, "p"))["spec"]["nodeName"] == node


async def test_text_output_through_kubectl(
    pyscheduler: PySchedulerProcess, kubectl_env: dict[str, str], namespace: str,
    create_node: NodeFactory, create_pod: PodFactory, api_client: ApiClient,
) -> None:
    """The human form: grouped reasons and the numbered fixes, from the user's shell."""
    await create_node(f"{namespace}-n1", unschedulable=True)
    await create_pod("p")
    await pending_then_explained(api_client, kubectl_env, namespace, "p", "uncordon")
    context = kubectl_env["GOOD_CONTEXT"]
    out = await kubectl(kubectl_env, "pyscheduler", "explain", "-n", namespace, "p", "--context", context)
    assert "1 node(s): NodeUnschedulable: node(s) were unschedulable" in out
    assert f"1. uncordon node {namespace}-n1 -> 1 node(s)" in out


async def test_issue_22_cpu_alone_fixes_cpu_and_cordon(
    pyscheduler: PySchedulerProcess, kubectl_env: dict[str, str], api_client: ApiClient, namespace: str,
    create_node: NodeFactory, create_pod: PodFactory,
) -> None:
    """Short of cpu everywhere, one node also cordoned: the fix is 1800m alone (the largest free cpu of a node
    where cpu is the only blocker), with a ladder; recreated with it, the pod binds there."""
    for name, used, cordoned in (("n1", "2200m", False), ("n2", "2", True), ("n3", "3500m", False)):
        await create_node(f"{namespace}-{name}", cpu="4", unschedulable=cordoned)
        await create_pod(f"used-{name}", node_name=f"{namespace}-{name}", requests={"cpu": used}, scheduler_name="x")
    await create_pod("big", requests={"cpu": "3"})
    fix = await pending_then_explained(api_client, kubectl_env, namespace, "big", "lower-request")
    assert fix["change"] == {"resource": "cpu", "request": "1800m"} and fix["nodes"] == [f"{namespace}-n1"]
    assert [s["step"] for s in fix["ladder"]] == ["cpu <= 1800m", "cpu <= 500m"]
    await request_json(
        api_client, "DELETE", f"/api/v1/namespaces/{namespace}/pods/big", query={"gracePeriodSeconds": 0}
    )
    await create_pod("big2", requests={"cpu": fix["change"]["request"]})
    assert (await wait_for_pod_bound(api_client, namespace, "big2"))["spec"]["nodeName"] == f"{namespace}-n1"


async def test_drop_node_affinity(
    pyscheduler: PySchedulerProcess, kubectl_env: dict[str, str], api_client: ApiClient, namespace: str,
    create_node: NodeFactory, create_pod: PodFactory,
) -> None:
    """Issue 22: the affinity's only requirement is the whole required affinity to drop (not an empty term);
    the JSON names exactly what the manifest loses, and without it the pod binds."""
    await create_node(f"{namespace}-amd", labels={"kubernetes.io/arch": "amd64"})
    required = {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}
    ]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    await create_pod("p", spec={"affinity": affinity})
    fix = await pending_then_explained(api_client, kubectl_env, namespace, "p", "drop-node-affinity")
    assert fix["change"] == {"requiredDuringSchedulingIgnoredDuringExecution": required}
    assert fix["nodes"] == [f"{namespace}-amd"]
    await request_json(
        api_client, "DELETE", f"/api/v1/namespaces/{namespace}/pods/p", query={"gracePeriodSeconds": 0}
    )
    await create_pod("p2")
    assert (await wait_for_pod_bound(api_client, namespace, "p2"))["spec"]["nodeName"] == f"{namespace}-amd"
