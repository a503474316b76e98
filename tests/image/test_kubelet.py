"""tests/image/kubelet.py turns a pod spec into podman options faithfully, and refuses what it cannot honour."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import pytest

from tests.image.kubelet import SERVICE_ACCOUNT_DIR, ApiServerAccess, Probe, UnsupportedPodSpec, pod_run

API = ApiServerAccess(host="127.0.0.1", port=6443, ca_pem="CA\n", token="TOKEN")

#: The shape of the chart's Deployment pod template (helm/pyscheduler/templates/deployment.yaml).
CHART_LIKE: dict[str, Any] = {
    "automountServiceAccountToken": True,
    "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [
        {
            "name": "scheduler",
            "image": "pyscheduler:0.1.0",
            "args": ["--config=/etc/pyscheduler/config.yaml", "--port=10259", "--v=2"],
            "env": [
                {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "EXTRA", "value": "1"},
            ],
            "ports": [{"name": "http-metrics", "containerPort": 10259}],
            "livenessProbe": {"httpGet": {"path": "/livez", "port": "http-metrics", "scheme": "HTTP"}},
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": 10259}},
            "securityContext": {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                                "privileged": False, "capabilities": {"drop": ["ALL"]}},
            "resources": {"requests": {"cpu": "100m"}, "limits": {"memory": "512Mi"}},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/pyscheduler", "readOnly": True},
                             {"name": "tmp", "mountPath": "/tmp"}],
        }
    ],
    "volumes": [{"name": "config", "configMap": {"name": "rel-config"}},
                {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}],
}  # fmt: skip


def translate(spec: dict[str, Any], work_dir: Path) -> list[str]:
    run = pod_run(
        spec,
        pod_name="rel-abc",
        namespace="ns",
        config_maps={"rel-config": {"config.yaml": "kind: KubeSchedulerConfiguration\n"}},
        api=API,
        work_dir=work_dir,
    )
    return run.options


def pairs(options: list[str]) -> set[tuple[str, str]]:
    """(flag, value) pairs of options written as `--flag value` (flags with `=` or no value are skipped)."""
    return {(a, b) for a, b in itertools.pairwise(options) if a.startswith("--") and "=" not in a}


def test_chart_like_pod_becomes_the_podman_options_a_kubelet_would_use(tmp_path: Path) -> None:
    """User, groups, read-only root, capabilities, env, volumes, limits, token and probes all carried over."""
    run = pod_run(
        CHART_LIKE,
        pod_name="rel-abc",
        namespace="ns",
        config_maps={"rel-config": {"config.yaml": "kind: KubeSchedulerConfiguration\n"}},
        api=API,
        work_dir=tmp_path,
    )
    got = pairs(run.options)
    expected = {
        ("--hostname", "rel-abc"),
        ("--user", "65532:65532"),
        ("--group-add", "65532"),
        ("--cap-drop", "all"),
        ("--security-opt", "no-new-privileges"),
        ("--env", "POD_NAMESPACE=ns"),
        ("--env", "POD_NAME=rel-abc"),
        ("--env", "EXTRA=1"),
        ("--env", "KUBERNETES_SERVICE_HOST=127.0.0.1"),
        ("--env", "KUBERNETES_SERVICE_PORT=6443"),
        ("--memory", str(512 * 2**20)),
        ("--memory-swap", str(512 * 2**20)),
        ("--tmpfs", f"/tmp:rw,mode=1777,size={64 * 2**20}"),
        ("--volume", f"{tmp_path}/volumes/config:/etc/pyscheduler:ro"),
        ("--volume", f"{tmp_path}/serviceaccount:{SERVICE_ACCOUNT_DIR}:ro"),
    }
    assert expected <= got, expected - got
    assert "--read-only" in run.options and "--read-only-tmpfs=false" in run.options
    assert "--privileged" not in run.options
    assert run.args == CHART_LIKE["containers"][0]["args"]
    assert (run.uid, run.gid, run.grace_seconds) == (65532, 65532, 30)
    assert run.probes == {
        "liveness": Probe("/livez", 10259, "HTTP"),
        "readiness": Probe("/readyz", 10259, "HTTP"),
    }
    assert (tmp_path / "volumes" / "config" / "config.yaml").read_text() == "kind: KubeSchedulerConfiguration\n"
    token = tmp_path / "serviceaccount" / "token"
    assert token.read_text() == "TOKEN" and token.stat().st_mode & 0o777 == 0o644  # readable by UID 65532
    assert (tmp_path / "serviceaccount" / "namespace").read_text() == "ns"


def _with(path: str, value: Any) -> dict[str, Any]:
    """CHART_LIKE with the dotted ``path`` (list indexes as numbers) set to ``value``."""
    spec = copy.deepcopy(CHART_LIKE)
    *parents, last = path.split(".")
    node: Any = spec
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    node[int(last) if last.isdigit() else last] = value
    return spec


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            _with("containers.0.env", [{"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]),
            "env[IP]",
            id="unknown-field-ref",
        ),
        pytest.param(_with("containers.0.envFrom", [{"configMapRef": {"name": "x"}}]), "envFrom", id="env-from"),
        pytest.param(_with("volumes.0", {"name": "config", "secret": {"secretName": "x"}}), "volumes[config]",
                     id="secret-volume"),
        pytest.param(_with("containers.0.securityContext.runAsUser", 0), "runAsNonRoot", id="root-while-non-root"),
        pytest.param(_with("containers.0.securityContext.procMount", "Unmasked"), "procMount", id="unknown-field"),
        pytest.param(_with("containers.0.livenessProbe", {"exec": {"command": ["true"]}}), "httpGet",
                     id="exec-probe"),
        pytest.param(_with("containers.0.resources.limits", {"nvidia.com/gpu": 1}), "nvidia.com/gpu",
                     id="extended-limit"),
        pytest.param(_with("initContainers", [{"name": "init"}]), "init containers", id="init-container"),
    ],
)  # fmt: skip
def test_what_it_cannot_honour_is_refused_by_name(spec: dict[str, Any], message: str, tmp_path: Path) -> None:
    """A chart change the stand-in kubelet would silently drop fails loudly instead, naming the field."""
    with pytest.raises(UnsupportedPodSpec, match=message.replace("[", r"\[").replace("]", r"\]")):
        translate(spec, tmp_path)
