"""The gang example plugin, installed from outside the repository, on the real API server and in simulate.

examples/plugins/gang is pip-installed into a scratch directory (its `pyscheduler.plugins` entry point is all
pyscheduler needs). Live: members of a gang are held until the gang exists, then all bind; a gang that cannot
form waits at Permit, times out (3 s), every waiting member is rejected with upstream's message and requeued,
and no member is ever bound. Offline: `pyscheduler simulate` of the example's cluster.yaml binds the full
gang and leaves the short one pending, on a fake clock (its wall time, interpreter start included, is
printed; run with -s).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio.client import ApiClient

from tests.cluster.harness import REPO_ROOT
from tests.e2e.conftest import NodeFactory, PodFactory, StartPyScheduler, list_events
from tests.e2e.kube import JSON, get_pod, wait_for, wait_for_pod_bound
from tests.e2e.out_of_tree import EXAMPLES, install_example

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

NAME_LABEL = "gang.example.com/name"
SIZE_LABEL = "gang.example.com/size"
TIMEOUT = 3
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"leaderElect": False},
    "profiles": [
        {
            "schedulerName": "pyscheduler",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "Gang"}]},
                "queueSort": {"disabled": [{"name": "PrioritySort"}]},
            },
            "pluginConfig": [{"name": "Gang", "args": {"timeoutSeconds": TIMEOUT}}],
        }
    ],
}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_example("gang", tmp_path_factory)


def gang_labels(gang: str, size: int = 3) -> dict[str, str]:
    return {NAME_LABEL: gang, SIZE_LABEL: str(size)}


async def test_a_gang_binds_together_and_a_short_gang_times_out_unbound(
    installed: Path,
    start_pyscheduler: StartPyScheduler,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
    tmp_path: Path,
) -> None:
    """Pool a (3 nodes of 1 CPU): two members wait unbound, the third arrives, all three bind on distinct nodes.
    Pool b (2 nodes): two members placed, both rejected at the 3 s timeout, none bound, still queued."""
    for pool, count in (("a", 3), ("b", 2)):
        for i in range(count):
            await create_node(f"{namespace}-{pool}{i}", labels={"pool": pool}, cpu="1")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    await start_pyscheduler(config=config, env={"PYTHONPATH": str(installed)})

    async def member(gang: str, i: int, pool: str) -> None:
        labels = gang_labels(gang)
        await create_pod(f"{gang}-{i}", labels=labels, node_selector={"pool": pool}, requests={"cpu": "1"})

    for i in range(2):
        await member("train", i, "a")
    await asyncio.sleep(2)
    assert [(await get_pod(api_client, namespace, f"train-{i}"))["spec"].get("nodeName") for i in range(2)] == [
        None,
        None,
    ], "held while the gang is short of members"
    start = time.monotonic()
    await member("train", 2, "a")
    bound = [await wait_for_pod_bound(api_client, namespace, f"train-{i}") for i in range(3)]
    print(f"\nfull gang bound {time.monotonic() - start:.2f} s after its last member was created")
    assert sorted(p["spec"]["nodeName"] for p in bound) == [f"{namespace}-a{i}" for i in range(3)]

    for i in range(3):
        await member("short", i, "b")
    timeout_note = f"0/1 nodes are available: 1 rejected due to timeout after waiting {TIMEOUT}s at plugin Gang."

    async def both_timed_out() -> list[str] | None:
        names = sorted(
            e["regarding"]["name"]
            for e in await list_events(api_client, namespace)
            if e.get("reason") == "FailedScheduling" and e.get("note") == timeout_note
        )
        return names if len(set(names)) >= 2 else None

    timed_out = await wait_for(both_timed_out, what="two members rejected at the Permit timeout", within=TIMEOUT + 20)
    pods: list[JSON] = [await get_pod(api_client, namespace, f"short-{i}") for i in range(3)]
    assert all(p["spec"].get("nodeName") is None for p in pods), "nothing half-bound"
    for pod in pods:
        [cond] = [c for c in pod["status"].get("conditions", []) if c["type"] == "PodScheduled"]
        assert (cond["status"], cond["reason"]) == ("False", "Unschedulable"), pod["metadata"]["name"]
    await asyncio.sleep(TIMEOUT + 1)  # another round of waiting and timing out: still none bound
    later = [await get_pod(api_client, namespace, f"short-{i}") for i in range(3)]
    assert all(p["spec"].get("nodeName") is None for p in later)
    print(f"short gang: {sorted(set(timed_out))} rejected at the {TIMEOUT} s timeout, none bound")


def test_simulate_binds_the_full_gang_and_times_out_the_short_one(installed: Path) -> None:
    """The example's cluster.yaml offline: train bound on pool a (three nodes), short pending with the
    timeout message on a member; a 30 s wait takes no real time (the command's wall time is printed)."""
    gang = EXAMPLES / "gang"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(installed)])}
    argv = [sys.executable, "-m", "scheduler", "simulate", str(gang / "cluster.yaml"), "--config",
            str(gang / "config.yaml"), "-o", "json"]
    start = time.monotonic()
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    took = time.monotonic() - start
    assert out.returncode == 0, out.stderr
    pods = {p["name"]: p for p in json.loads(out.stdout)["pods"]}
    assert sorted(pods[f"train-{i}"]["node"] for i in range(3)) == ["a0", "a1", "a2"]
    assert all(pods[f"short-{i}"]["node"] is None for i in range(3))
    messages = [pods[f"short-{i}"]["message"] for i in range(3)]
    assert "0/1 nodes are available: 1 rejected due to timeout after waiting 30s at plugin Gang." in messages
    print(f"\nsimulate of the gang example (30 s Permit timeouts on the fake clock): {took:.2f} s wall time, "
          "interpreter start included")
