"""An out-of-tree plugin, installed from outside the repository, runs through configuration alone.

The example package examples/plugins/cost-score is pip-installed into a scratch directory (as a user would
install it; its `pyscheduler.plugins` entry point is all pyscheduler needs), then: `pyscheduler run` on the
real API server places pods on the cheapest node, and `pyscheduler simulate --explain` shows the
plugin's scores. No `--plugin` flag: discovery by entry point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio.client import ApiClient

from tests.cluster.harness import REPO_ROOT
from tests.e2e.conftest import NodeFactory, PodFactory, StartPyScheduler
from tests.e2e.kube import wait_for_pod_bound
from tests.e2e.out_of_tree import install_example

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

LABEL = "example.com/hourly-cost"
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"leaderElect": False},
    "profiles": [
        {
            "schedulerName": "pyscheduler",
            "plugins": {"multiPoint": {"enabled": [{"name": "CostScore", "weight": 10}]}},
            "pluginConfig": [{"name": "CostScore", "args": {"label": LABEL}}],
        }
    ],
}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example installed into its own directory (a site-packages a user's pip would fill)."""
    return install_example("cost-score", tmp_path_factory)


async def test_installed_plugin_places_pods_on_the_cheapest_node(
    installed: Path,
    start_pyscheduler: StartPyScheduler,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
    tmp_path: Path,
) -> None:
    """Equal nodes except their cost label: every pod lands on the cheapest one (weight 10 x 100 wins)."""
    for name, cost in (("dear", "0.90"), ("cheap", "0.10"), ("mid", "0.40")):
        await create_node(f"{namespace}-{name}", labels={LABEL: cost}, cpu="8")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    await start_pyscheduler(config=config, env={"PYTHONPATH": str(installed)})
    for i in range(3):
        await create_pod(f"p{i}", requests={"cpu": "100m"})
    for i in range(3):
        pod = await wait_for_pod_bound(api_client, namespace, f"p{i}")
        assert pod["spec"]["nodeName"] == f"{namespace}-cheap"


def test_installed_plugin_in_simulate_and_explain(installed: Path, tmp_path: Path) -> None:
    """The same plugin offline: simulate places the pod on the cheapest node and --explain shows CostScore."""
    nodes = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": {LABEL: c}},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
        for n, c in (("a", "0.5"), ("b", "0.2"))
    ]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"schedulerName": "pyscheduler", "containers": [{"name": "c", "image": "nginx"}]}}
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([*nodes, pod]))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(installed)])}
    out = subprocess.run(
        [sys.executable, "-m", "scheduler", "simulate", str(cluster), "--config", str(config),
         "--explain", "default/web", "-o", "json"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["pods"][0]["node"] == "b"
    scores = {n["name"]: n["scores"]["CostScore"] for n in doc["explain"]["nodes"]}
    assert scores == {"a": 0, "b": 1000}  # weight 10 x normalized 0 / 100
