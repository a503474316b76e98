"""`pyscheduler explain NS/NAME` against a real kube-apiserver: from a fresh LIST, and through --server."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from kubernetes_asyncio.client import ApiClient

from tests.cluster.harness import REPO_ROOT
from tests.e2e.conftest import NodeFactory, PodFactory, StartPyScheduler
from tests.e2e.kube import wait_for_pod_bound

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


async def _explain(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "scheduler",
        "explain",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_explain_from_the_api_without_a_running_scheduler(
    kubeconfig: Path, create_node: NodeFactory, create_pod: PodFactory, namespace: str
) -> None:
    await create_node("exp-a", cpu="2")
    await create_node("exp-b", cpu="2", taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}])
    await create_pod("greedy", requests={"cpu": "3"})

    code, out, err = await _explain(f"{namespace}/greedy", "--kubeconfig", str(kubeconfig))
    assert code == 0, err
    assert f"Pod {namespace}/greedy" in out
    assert "Blocking reasons" in out
    assert "1 node(s): NodeResourcesFit: Insufficient cpu  [exp-a]" in out
    assert "1 node(s): TaintToleration: node(s) had untolerated taint(s)  [exp-b]" in out
    assert "1. tolerate taint dedicated=db:NoSchedule" not in out  # exp-b has 2 cpu too: a toleration alone is no fix
    assert "Message: 0/" in out

    code, out, err = await _explain(f"{namespace}/greedy", "--kubeconfig", str(kubeconfig), "--all-nodes")
    assert code == 0, err
    assert "exp-a: infeasible" in out and "Insufficient cpu" in out
    assert "exp-b: infeasible" in out and "untolerated taint" in out

    code, out, err = await _explain(f"{namespace}/greedy", "--kubeconfig", str(kubeconfig), "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    verdicts = {n["name"]: n for n in doc["nodes"]}
    assert not verdicts["exp-a"]["feasible"] and not verdicts["exp-b"]["feasible"]

    code, out, err = await _explain(f"{namespace}/no-such-pod", "--kubeconfig", str(kubeconfig))
    assert code == 1
    assert "not found" in err


async def test_explain_through_the_running_scheduler(
    start_pyscheduler: StartPyScheduler,
    kubeconfig: Path,
    create_node: NodeFactory,
    create_pod: PodFactory,
    api_client: ApiClient,
    namespace: str,
) -> None:
    await create_node("exp-ports", cpu="2")
    sched = await start_pyscheduler("--enable-debug-handlers")
    await create_pod("holder", ports=[{"containerPort": 53, "hostPort": 53, "protocol": "UDP"}])
    await wait_for_pod_bound(api_client, namespace, "holder")
    await create_pod("dns", ports=[{"containerPort": 53, "hostPort": 53, "protocol": "UDP"}])

    # The secure port: the admin's token from --kubeconfig, the self-signed certificate not verified.
    access = ["--server", sched.url, "--kubeconfig", str(kubeconfig), "--insecure-skip-tls-verify"]
    code, out, err = await _explain(f"{namespace}/dns", *access)
    assert code == 0, err
    assert "1 node(s): NodePorts: node(s) didn't have free ports for the requested pod ports  [exp-ports]" in out
    assert f"host port UDP 0.0.0.0:53 is held by pod {namespace}/holder" in out

    code, out, err = await _explain(f"{namespace}/dns", "-o", "json", *access)
    assert code == 0, err
    [verdict] = [n for n in json.loads(out)["nodes"] if n["name"] == "exp-ports"]
    assert [h["pod"] for h in verdict["details"] if h["plugin"] == "NodePorts"] == [f"{namespace}/holder"]

    code, _, err = await _explain(f"{namespace}/nope", *access)
    assert code == 1 and "not found" in err

    # --token instead of a kubeconfig; a wrong one is refused with 401 and a hint.
    token = ["--server", sched.url, "--insecure-skip-tls-verify", "--token"]
    code, out, err = await _explain(f"{namespace}/dns", *token, sched.token)
    assert code == 0 and "[exp-ports]" in out, err
    code, _, err = await _explain(f"{namespace}/dns", *token, "not-a-token")
    assert code == 1 and "401 Unauthorized" in err and "--token" in err, err

    # The certificate is verified unless told otherwise: the self-signed one is not trusted.
    code, _, err = await _explain(f"{namespace}/dns", "--server", sched.url, "--token", sched.token)
    assert code == 1 and "certificate is not trusted" in err and "--insecure-skip-tls-verify" in err, err
