"""The Helm chart installed for real on the e2e control plane, and its ServiceAccount's credentials.

``ChartRelease`` runs the helm built by tests/cluster/build.sh (private HELM_*_HOME, admin kubeconfig) to
install helm/pyscheduler into a fresh namespace, reads back the manifest helm applied, and mints a token for
the chart's ServiceAccount through the TokenRequest API, as a kubelet does for the chart's pod.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio.client import ApiClient

from tests.cluster.harness import REPO_ROOT, default_bin_dir
from tests.e2e.kube import JSON, request_json

CHART = REPO_ROOT / "helm" / "pyscheduler"


def helm_path() -> Path:
    """$PYSCHEDULER_HELM, else the helm next to the control-plane binaries."""
    explicit = os.environ.get("PYSCHEDULER_HELM")
    return Path(explicit) if explicit else default_bin_dir() / "helm"


class ChartRelease:
    """One `helm install` of the chart: its name, namespace and the objects helm created."""

    def __init__(self, name: str, namespace: str, kubeconfig: Path, home: Path):
        self.name = name
        self.namespace = namespace
        self.kubeconfig = kubeconfig
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.manifest: list[JSON] = []

    def helm(self, *args: str) -> str:
        """Runs helm against the admin kubeconfig; returns stdout, fails the test on an error."""
        helm = helm_path()
        if not (helm.is_file() and os.access(helm, os.X_OK)):
            pytest.fail(f"helm not found at {helm}: build it with `bash tests/cluster/build.sh`", pytrace=False)
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        for key in ("HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME"):
            env[key] = str(self.home / key.lower())
        argv = [str(helm), *args, "--kubeconfig", str(self.kubeconfig)]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, env=env)
        assert result.returncode == 0, f"{' '.join(argv)} failed ({result.returncode}):\n{result.stderr}"
        return result.stdout

    def install(self, values: dict[str, Any]) -> None:
        """`helm install` with ``values`` (a values file) into a new namespace; loads the applied manifest."""
        values_file = self.home / "values.yaml"
        values_file.write_text(yaml.safe_dump(values), encoding="utf-8")
        self.helm(
            "install", self.name, str(CHART), "--namespace", self.namespace, "--create-namespace",
            "--values", str(values_file), "--wait=false",
        )  # fmt: skip
        text = self.helm("get", "manifest", self.name, "--namespace", self.namespace)
        self.manifest = [d for d in yaml.safe_load_all(text) if d]

    def uninstall(self) -> None:
        self.helm("uninstall", self.name, "--namespace", self.namespace, "--wait=false")

    def only(self, kind: str) -> JSON:
        """The one object of ``kind`` in the release (fails if there is not exactly one)."""
        found = [d for d in self.manifest if d.get("kind") == kind]
        assert len(found) == 1, f"expected one {kind} in the release manifest, found {len(found)}"
        return found[0]

    def config_maps(self) -> dict[str, dict[str, str]]:
        """{name: data} of the release's ConfigMaps."""
        return {d["metadata"]["name"]: dict(d.get("data") or {}) for d in self.manifest if d["kind"] == "ConfigMap"}

    async def service_account_token(self, api_client: ApiClient, seconds: int = 3600) -> str:
        """A token of the chart's ServiceAccount from the TokenRequest API (what a kubelet mounts)."""
        account = self.only("ServiceAccount")["metadata"]["name"]
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds},
        }
        path = f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{account}/token"
        answer = await request_json(api_client, "POST", path, body=request)
        return str(answer["status"]["token"])
