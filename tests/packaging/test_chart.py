"""The Helm chart helm/pyscheduler, the plain manifests in deploy/ and the Grafana dashboard.

Runs the real helm (v3, built from Go modules by tests/cluster/build.sh into _build/bin/<release>/helm):
`helm lint --strict`, `helm template` with the default values and with variations, and checks what comes out:
least-privilege RBAC, hardened security contexts, the KubeSchedulerConfiguration (it must load with our own
loader), leader election wiring, deploy/pyscheduler.yaml being a fresh render, the strict values schema, and
the metric names used by the dashboard and the alerts (tests/packaging/metrics_catalog.py). The Dockerfile is
checked statically: no container engine is available to build it.

A missing helm binary fails these tests (it does not skip them): the chart is part of the product.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.config.load import load_config
from scheduler.config.types import SchedulerConfiguration
from scheduler.plugins import default_preemption
from scheduler.plugins.registry import REGISTRY, implements, parse_plugin_args
from tests.packaging.metrics_catalog import METRIC_NAMES, series_names

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "pyscheduler"
DASHBOARD = CHART / "dashboards" / "pyscheduler.json"
DEPLOY = REPO / "deploy" / "pyscheduler.yaml"
RENDER_SCRIPT = REPO / "scripts" / "render-manifests.sh"

RELEASE = "pyscheduler"
NAMESPACE = "kube-system"
CONFIG_PATH = "/etc/pyscheduler/config.yaml"
PORT = 10259
KUBE_VERSION = (REPO / "tests" / "cluster" / "VERSION").read_text(encoding="utf-8").strip()
"""The Kubernetes release the e2e tests run (helm's built-in default depends on how helm was linked)."""

Doc = dict[str, Any]
Rule = tuple[str, str, str, str | None]
"""(apiGroup, resource, verb, resourceName or None): one permission, after expanding a PolicyRule."""


# ---------------------------------------------------------------------------------------------------
# helm


def _helm_path() -> Path:
    explicit = os.environ.get("PYSCHEDULER_HELM")
    if explicit:
        return Path(explicit)
    bin_dir = os.environ.get("PYSCHEDULER_BIN_DIR") or str(REPO / "_build" / "bin" / KUBE_VERSION)
    return Path(bin_dir) / "helm"


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = _helm_path()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"helm not found at {path}: build it with `bash tests/cluster/build.sh` (helm v3 from Go modules), "
            "or point PYSCHEDULER_HELM at a helm v3 binary",
            pytrace=False,
        )
    home = tmp_path_factory.mktemp("helm-home")
    saved = {k: os.environ.get(k) for k in ("HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME")}
    for key in saved:
        os.environ[key] = str(home / key.lower())
    try:
        yield path
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _run(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`helm ARGS --kube-version KUBE_VERSION`."""
    return subprocess.run(
        [str(helm), *args, "--kube-version", KUBE_VERSION], capture_output=True, text=True, timeout=120, check=False
    )


@functools.cache
def _template_text(helm: Path, release: str, namespace: str, values_json: str) -> str:
    """`helm template` output; `values_json` is a JSON object of values (cache key), passed as a file."""
    args = ["template", release, str(CHART), "--namespace", namespace]
    with tempfile.TemporaryDirectory(prefix="pyscheduler-values-") as tmp:
        if json.loads(values_json):
            values_file = Path(tmp) / "values.json"
            values_file.write_text(values_json, encoding="utf-8")  # JSON is YAML
            args += ["--values", str(values_file)]
        result = _run(helm, *args)
    assert result.returncode == 0, f"helm {shlex.join(args)} failed:\n{result.stderr}"
    return result.stdout


def render(
    helm: Path, values: Mapping[str, Any] | None = None, *, release: str = RELEASE, namespace: str = NAMESPACE
) -> list[Doc]:
    """The manifests `helm template` renders for `values` (merged over values.yaml)."""
    text = _template_text(helm, release, namespace, json.dumps(values or {}, sort_keys=True))
    return [d for d in yaml.safe_load_all(text) if d is not None]


def only(docs: Sequence[Doc], kind: str, name: str | None = None) -> Doc:
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, got {[d['metadata']['name'] for d in found]}"
    return found[0]


def kinds(docs: Sequence[Doc]) -> list[str]:
    return sorted(d["kind"] for d in docs)


def fullname(release: str) -> str:
    return release if "pyscheduler" in release else f"{release}-pyscheduler"


def scheduler_config(docs: Sequence[Doc]) -> tuple[str, SchedulerConfiguration]:
    """The ConfigMap's config.yaml, and what our own loader makes of it."""
    cm = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-config"))
    text: str = cm["data"]["config.yaml"]
    raw = yaml.safe_load(text)
    # env={}: the lease namespace must come from the file, not from $POD_NAMESPACE.
    return text, load_config(raw, REGISTRY.keys(), parse_plugin_args, implements=implements, env={})


def expand_rules(rules: Sequence[Mapping[str, Any]]) -> set[Rule]:
    out: set[Rule] = set()
    for rule in rules:
        assert set(rule) <= {"apiGroups", "resources", "verbs", "resourceNames"}, rule
        names: list[str | None] = list(rule.get("resourceNames") or [None])
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    for name in names:
                        out.add((group, resource, verb, name))
    return out


# ---------------------------------------------------------------------------------------------------
# lint and template


LINT_VARIANTS = {
    "defaults": [],
    "everything-on": [
        "--set",
        "replicaCount=2,serviceMonitor.enabled=true,prometheusRule.enabled=true,grafanaDashboard.enabled=true,"
        "networkPolicy.enabled=true,serving.tlsSecretName=pyscheduler-tls",
    ],
    "leader-election-one-replica": ["--set", "leaderElection.enabled=true"],
}


@pytest.mark.parametrize("args", LINT_VARIANTS.values(), ids=LINT_VARIANTS.keys())
def test_helm_lint_strict(helm: Path, args: list[str]) -> None:
    result = _run(helm, "lint", "--strict", str(CHART), "--namespace", NAMESPACE, *args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


def test_default_render_has_exactly_the_core_resources(helm: Path) -> None:
    docs = render(helm)
    assert kinds(docs) == [
        "ClusterRole",  # the scheduler's
        "ClusterRole",  # <fullname>-metrics-reader, for scrapers
        "ClusterRoleBinding",  # the scheduler's
        "ClusterRoleBinding",  # to system:auth-delegator
        "ConfigMap",
        "Deployment",
        "Service",
        "ServiceAccount",
    ]
    for doc in docs:
        labels = doc["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "pyscheduler"
        assert labels["app.kubernetes.io/instance"] == RELEASE
        assert labels["app.kubernetes.io/version"] == "0.1.0"
        if doc["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert doc["metadata"]["namespace"] == NAMESPACE, doc["metadata"]


def test_two_replicas_add_lease_rbac_and_pdb(helm: Path) -> None:
    docs = render(helm, {"replicaCount": 2})
    assert kinds(docs) == [
        "ClusterRole",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "PodDisruptionBudget",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    pdb = only(docs, "PodDisruptionBudget")
    assert pdb["apiVersion"] == "policy/v1"
    assert pdb["spec"]["minAvailable"] == 1
    deployment = only(docs, "Deployment")
    assert pdb["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"


# ---------------------------------------------------------------------------------------------------
# RBAC


CLUSTER_RULES: set[Rule] = {
    *{("", r, v, None) for r in ("nodes", "pods", "namespaces") for v in ("get", "list", "watch")},
    # PodTopologySpread's system default constraints (helper.DefaultSelector).
    *{("", r, v, None) for r in ("services", "replicationcontrollers") for v in ("get", "list", "watch")},
    *{("apps", r, v, None) for r in ("replicasets", "statefulsets") for v in ("get", "list", "watch")},
    ("", "pods/binding", "create", None),
    ("", "pods", "delete", None),
    ("", "pods/status", "patch", None),
    *{("policy", "poddisruptionbudgets", v, None) for v in ("list", "watch")},
    *{("events.k8s.io", "events", v, None) for v in ("create", "patch")},
    *{("", r, v, None) for r in ("persistentvolumeclaims", "persistentvolumes") for v in ("list", "watch", "update")},
    *{
        ("storage.k8s.io", r, v, None)
        for r in ("storageclasses", "csinodes", "csidrivers", "csistoragecapacities", "volumeattachments")
        for v in ("list", "watch")
    },
    # DynamicResources: its informers, its claim writes, and the status writes (with the synthetic
    # resourceclaims/binding subresource the API server checks for allocation and reservedFor changes).
    *{
        ("resource.k8s.io", r, v, None)
        for r in ("resourceclaims", "resourceslices", "deviceclasses", "devicetaintrules")
        for v in ("list", "watch")
    },
    *{("resource.k8s.io", "resourceclaims", v, None) for v in ("get", "create", "update", "delete")},
    *{
        ("resource.k8s.io", r, v, None)
        for r in ("resourceclaims/status", "resourceclaims/binding")
        for v in ("update", "patch")
    },
}


def lease_rules(name: str) -> set[Rule]:
    return {
        ("coordination.k8s.io", "leases", "create", None),
        ("coordination.k8s.io", "leases", "get", name),
        ("coordination.k8s.io", "leases", "update", name),
    }


@pytest.mark.parametrize(
    ("values", "release", "namespace", "lease"),
    [
        pytest.param({}, RELEASE, NAMESPACE, None, id="defaults-no-leader-election"),
        pytest.param({"replicaCount": 2}, RELEASE, NAMESPACE, ("kube-system", "pyscheduler"), id="two-replicas"),
        pytest.param(
            {"leaderElection": {"enabled": True}},
            "sched",
            "scheduling",
            ("scheduling", "sched-pyscheduler"),
            id="other-release-and-namespace",
        ),
        pytest.param(
            {"replicaCount": 3, "leaderElection": {"resourceName": "my-lease", "resourceNamespace": "leases"}},
            RELEASE,
            NAMESPACE,
            ("leases", "my-lease"),
            id="explicit-lease",
        ),
    ],
)
def test_rbac_is_exactly_least_privilege(
    helm: Path, values: Doc, release: str, namespace: str, lease: tuple[str, str] | None
) -> None:
    docs = render(helm, values, release=release, namespace=namespace)
    name = fullname(release)
    sa = only(docs, "ServiceAccount")
    subject = {"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": namespace}

    cluster_role = only(docs, "ClusterRole", name)
    assert expand_rules(cluster_role["rules"]) == CLUSTER_RULES
    binding = only(docs, "ClusterRoleBinding", name)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
    assert binding["subjects"] == [subject]
    # The secure port's delegated authn/authz: TokenReviews and SubjectAccessReviews, nothing more.
    delegator = only(docs, "ClusterRoleBinding", f"{name}-auth-delegator")
    assert delegator["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "system:auth-delegator",
    }
    assert delegator["subjects"] == [subject]
    # No RoleBinding to extension-apiserver-authentication-reader: that ConfigMap is never read.
    assert not [d for d in docs if d["kind"] == "RoleBinding" and "authentication-reader" in str(d["roleRef"])]
    reader = only(docs, "ClusterRole", f"{name}-metrics-reader")
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    assert not [d for d in docs if d["kind"] == "ClusterRoleBinding" and d["metadata"]["name"].endswith("-reader")]

    _, config = scheduler_config(docs)
    if lease is None:
        assert not [d for d in docs if d["kind"] in ("Role", "RoleBinding")]
        assert not config.leader_election.leader_elect
        return
    lease_namespace, lease_name = lease
    role = only(docs, "Role")
    assert role["metadata"]["namespace"] == lease_namespace
    assert expand_rules(role["rules"]) == lease_rules(lease_name)
    role_binding = only(docs, "RoleBinding")
    assert role_binding["metadata"]["namespace"] == lease_namespace
    assert role_binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert role_binding["subjects"] == [subject]
    # The Role covers exactly the Lease the scheduler will use.
    le = config.leader_election
    assert le.leader_elect
    assert (le.resource_namespace, le.resource_name) == (lease_namespace, lease_name)


def test_rbac_create_false_renders_no_rbac(helm: Path) -> None:
    docs = render(helm, {"rbac": {"create": False}, "metricsReader": {"create": False}, "replicaCount": 2})
    assert not {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} & set(kinds(docs))
    # The scrapers' role is its own switch.
    docs = render(helm, {"rbac": {"create": False}})
    assert [d["metadata"]["name"] for d in docs if d["kind"].startswith("ClusterRole")] == [
        "pyscheduler-metrics-reader"
    ]


def test_extra_rules_for_out_of_tree_plugins_are_appended(helm: Path) -> None:
    """rbac.extraRules (what an out-of-tree plugin reads) lands in the ClusterRole after the built-in rules."""
    rule = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
    plain = only(render(helm), "ClusterRole", fullname(RELEASE))["rules"]
    extended = only(render(helm, {"rbac": {"extraRules": [rule]}}), "ClusterRole", fullname(RELEASE))["rules"]
    assert extended == [*plain, rule]


def test_metrics_reader_binds_the_given_subjects(helm: Path) -> None:
    subjects = [
        {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"},
        {"kind": "ServiceAccount", "name": "local-prom"},
        {"kind": "Group", "name": "scrapers"},
    ]
    docs = render(helm, {"metricsReader": {"subjects": subjects}})
    binding = only(docs, "ClusterRoleBinding", "pyscheduler-metrics-reader")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "pyscheduler-metrics-reader",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"},
        {"kind": "ServiceAccount", "name": "local-prom", "namespace": NAMESPACE},
        {"kind": "Group", "name": "scrapers", "apiGroup": "rbac.authorization.k8s.io"},
    ]


# ---------------------------------------------------------------------------------------------------
# Deployment


def test_security_contexts_are_hardened(helm: Path) -> None:
    pod = only(render(helm), "Deployment")["spec"]["template"]["spec"]
    psc = pod["securityContext"]
    assert psc["runAsNonRoot"] is True
    assert psc["runAsUser"] > 0 and psc["runAsGroup"] > 0
    assert psc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "hostNetwork" not in pod and "hostPID" not in pod and "hostIPC" not in pod
    (container,) = pod["containers"]
    csc = container["securityContext"]
    assert csc["runAsNonRoot"] is True
    assert csc["readOnlyRootFilesystem"] is True
    assert csc["allowPrivilegeEscalation"] is False
    assert csc["privileged"] is False
    assert csc["capabilities"] == {"drop": ["ALL"]}
    assert csc["seccompProfile"] == {"type": "RuntimeDefault"}
    # A read-only root filesystem still gets a writable /tmp.
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert "/tmp" in mounts
    tmp_volume = next(v for v in pod["volumes"] if v["name"] == mounts["/tmp"]["name"])
    assert "emptyDir" in tmp_volume


def test_deployment_wiring(helm: Path) -> None:
    docs = render(helm)
    deployment = only(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert deployment["spec"]["replicas"] == 1
    # No leader election: two schedulers must not overlap during a rollout.
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert container["image"] == "pyscheduler:0.1.0"  # tag defaults to appVersion
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert "command" not in container  # the image's ENTRYPOINT is `pyscheduler run`
    assert container["args"][:3] == [
        f"--config={CONFIG_PATH}",
        f"--port={PORT}",
        "--authorization-always-allow-paths=/healthz,/readyz,/livez",
    ]
    assert not [a for a in container["args"] if a.startswith("--insecure-serving")]
    assert not [a for a in container["args"] if a.startswith("--tls-")]  # self-signed in memory
    assert pod["serviceAccountName"] == only(docs, "ServiceAccount")["metadata"]["name"]
    assert pod["automountServiceAccountToken"] is True
    assert pod["priorityClassName"] == "system-cluster-critical"

    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}

    assert container["ports"] == [{"name": "https-metrics", "containerPort": PORT, "protocol": "TCP"}]
    for probe, path in (("startupProbe", "/readyz"), ("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "https-metrics", "scheme": "HTTPS"}
    # The initial sync may take minutes on a big, slow cluster before liveness is probed at all.
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300
    assert "--enable-debug-handlers" not in container["args"]

    config_mount = next(m for m in container["volumeMounts"] if m["mountPath"] == str(Path(CONFIG_PATH).parent))
    config_volume = next(v for v in pod["volumes"] if v["name"] == config_mount["name"])
    cm = only(docs, "ConfigMap")
    assert config_volume["configMap"]["name"] == cm["metadata"]["name"]
    assert Path(CONFIG_PATH).name in cm["data"]

    service = only(docs, "Service")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"] == [
        {"name": "https-metrics", "port": PORT, "targetPort": "https-metrics", "protocol": "TCP"}
    ]


MEASURED_PEAK_RSS_MIB = 562  # pyscheduler once synced at 5000 nodes x 30 pods (README, Benchmarks: startup)


def _mebibytes(quantity: str) -> float:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return float(quantity[: -len(suffix)]) * factor / 2**20
    return float(quantity) / 2**20


def test_default_memory_limit_fits_5000_nodes_with_headroom(helm: Path) -> None:
    """The default limit is at least 1.5x the peak RSS measured at 5000 nodes x 30 pods (the README's
    512Mi was below it); the request is below the limit."""
    (container,) = only(render(helm), "Deployment")["spec"]["template"]["spec"]["containers"]
    limit = _mebibytes(container["resources"]["limits"]["memory"])
    assert limit >= 1.5 * MEASURED_PEAK_RSS_MIB
    assert _mebibytes(container["resources"]["requests"]["memory"]) <= limit


def test_debug_handlers_value(helm: Path) -> None:
    """debugHandlers.enabled adds the flag and a ClusterRole for /debug/* (bound to the given subjects)."""
    subjects = [{"kind": "Group", "name": "sre"}, {"kind": "ServiceAccount", "name": "oncall"}]
    docs = render(helm, {"debugHandlers": {"enabled": True, "subjects": subjects}})
    (container,) = only(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert "--enable-debug-handlers" in container["args"]
    name = f"{fullname(RELEASE)}-debug-reader"
    assert only(docs, "ClusterRole", name)["rules"] == [
        {"nonResourceURLs": ["/debug/*"], "verbs": ["get"]},
        {"nonResourceURLs": ["/debug/flags/v"], "verbs": ["put"]},
    ]
    binding = only(docs, "ClusterRoleBinding", name)
    assert binding["subjects"] == [
        {"kind": "Group", "name": "sre", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "ServiceAccount", "name": "oncall", "namespace": NAMESPACE},
    ]
    assert not [d for d in render(helm) if d["metadata"]["name"] == name]


def test_serving_certificate_from_a_secret(helm: Path) -> None:
    docs = render(helm, {"serving": {"tlsSecretName": "pyscheduler-tls", "alwaysAllowPaths": ["/livez", "/readyz"]}})
    pod = only(docs, "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert "--authorization-always-allow-paths=/livez,/readyz" in container["args"]
    assert "--tls-cert-file=/etc/pyscheduler-tls/tls.crt" in container["args"]
    assert "--tls-private-key-file=/etc/pyscheduler-tls/tls.key" in container["args"]
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == "/etc/pyscheduler-tls")
    assert mount["readOnly"] is True
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["secret"] == {"secretName": "pyscheduler-tls"}


def test_network_policy_admits_only_the_monitoring_namespace_on_the_serving_port(helm: Path) -> None:
    assert "NetworkPolicy" not in kinds(render(helm))
    docs = render(helm, {"networkPolicy": {"enabled": True}})
    policy = only(docs, "NetworkPolicy")
    assert policy["apiVersion"] == "networking.k8s.io/v1"
    assert policy["spec"]["podSelector"]["matchLabels"] == only(docs, "Deployment")["spec"]["selector"]["matchLabels"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"port": "https-metrics", "protocol": "TCP"}]
    assert rule["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    peers = [{"namespaceSelector": {"matchLabels": {"team": "obs"}}, "podSelector": {"matchLabels": {"app": "prom"}}}]
    custom = only(render(helm, {"networkPolicy": {"enabled": True, "from": peers}}), "NetworkPolicy")
    assert custom["spec"]["ingress"][0]["from"] == peers


def test_config_checksum_annotation_follows_the_config(helm: Path) -> None:
    def checksum_and_config(values: Doc) -> tuple[str, str]:
        docs = render(helm, values)
        annotations = only(docs, "Deployment")["spec"]["template"]["metadata"]["annotations"]
        text, _ = scheduler_config(docs)
        return annotations["checksum/config"], text

    checksum, text = checksum_and_config({})
    assert checksum == hashlib.sha256(text.rstrip("\n").encode()).hexdigest()
    other, other_text = checksum_and_config({"schedulerConfig": {"parallelism": 8}})
    assert other_text != text
    assert other == hashlib.sha256(other_text.rstrip("\n").encode()).hexdigest()
    assert other != checksum


def test_image_digest_and_tag(helm: Path) -> None:
    digest = "sha256:" + "a" * 64
    tagged = only(render(helm, {"image": {"repository": "registry.example/ps", "tag": "1.2.3"}}), "Deployment")
    assert tagged["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/ps:1.2.3"
    pinned = only(render(helm, {"image": {"digest": digest}}), "Deployment")
    assert pinned["spec"]["template"]["spec"]["containers"][0]["image"] == f"pyscheduler@{digest}"


# ---------------------------------------------------------------------------------------------------
# KubeSchedulerConfiguration


def test_default_config_loads_with_our_loader(helm: Path) -> None:
    _, config = scheduler_config(render(helm))
    assert [p.scheduler_name for p in config.profiles] == ["pyscheduler"]
    le = config.leader_election
    assert not le.leader_elect
    assert (le.resource_namespace, le.resource_name, le.resource_lock) == (NAMESPACE, "pyscheduler", "leases")
    assert (le.lease_duration_seconds, le.renew_deadline_seconds, le.retry_period_seconds) == (15.0, 10.0, 2.0)
    assert (config.parallelism, config.percentage_of_nodes_to_score) == (16, 0)
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (1, 10)
    assert (config.client_connection.qps, config.client_connection.burst) == (50.0, 100)


def test_lease_is_never_kube_schedulers(helm: Path) -> None:
    """Even a release named kube-scheduler does not take the default scheduler's Lease."""
    _, config = scheduler_config(render(helm, {"replicaCount": 2}, release="kube-scheduler"))
    assert config.leader_election.resource_name == "kube-scheduler-pyscheduler"


def test_profiles_and_plugin_config_load_with_our_loader(helm: Path) -> None:
    values = {
        "schedulerName": "bin-packer",
        "schedulerConfig": {
            "percentageOfNodesToScore": 50,
            "plugins": {
                "multiPoint": {"disabled": [{"name": "ImageLocality"}]},
                "score": {"enabled": [{"name": "NodeResourcesFit", "weight": 5}]},
            },
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {
                        "scoringStrategy": {
                            "type": "MostAllocated",
                            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                        }
                    },
                },
                {
                    "name": "DefaultPreemption",
                    "args": {"minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": 50},
                },
            ],
            "extraProfiles": [
                {"schedulerName": "spreader"},
                {"schedulerName": "no-images", "plugins": {"score": {"disabled": [{"name": "ImageLocality"}]}}},
            ],
        },
        "leaderElection": {"enabled": True, "leaseDuration": "30s", "renewDeadline": "20s", "retryPeriod": "4s"},
    }
    docs = render(helm, values)
    _, config = scheduler_config(docs)
    assert [p.scheduler_name for p in config.profiles] == ["bin-packer", "spreader", "no-images"]
    assert config.percentage_of_nodes_to_score == 50
    main = config.profiles[0]
    assert "NodeResourcesFit" in main.plugin_config
    assert main.plugin_config["DefaultPreemption"] == default_preemption.Args(20, 50)
    assert "ImageLocality" not in [ref.name for ref in main.plugins.multi_point.enabled]
    le = config.leader_election
    assert le.leader_elect
    assert (le.lease_duration_seconds, le.renew_deadline_seconds, le.retry_period_seconds) == (30.0, 20.0, 4.0)


# ---------------------------------------------------------------------------------------------------
# values.yaml and values.schema.json


SCHEMA_REJECTS = {
    "typo-top-level": ({"replicaCont": 2}, "replicaCont"),
    "typo-nested": ({"image": {"pullPolicy": "IfNotPresent", "tagg": "x"}}, "tagg"),
    "bad-enum": ({"image": {"pullPolicy": "Sometimes"}}, "pullPolicy"),
    "kube-scheduler-lease": ({"leaderElection": {"resourceName": "kube-scheduler"}}, "resourceName"),
    "default-scheduler-name": ({"schedulerName": "default-scheduler"}, "schedulerName"),
    "typo-extension-point": ({"schedulerConfig": {"plugins": {"filtr": {}}}}, "filtr"),
    "replicas-not-a-number": ({"replicaCount": "two"}, "replicaCount"),
    "bad-duration": ({"leaderElection": {"leaseDuration": "15"}}, "leaseDuration"),
    "always-allow-path-without-slash": ({"serving": {"alwaysAllowPaths": ["healthz"]}}, "alwaysAllowPaths"),
    "always-allow-path-inner-star": ({"serving": {"alwaysAllowPaths": ["/a*b"]}}, "alwaysAllowPaths"),
    "metrics-reader-subject-kind": ({"metricsReader": {"subjects": [{"kind": "Pod", "name": "x"}]}}, "kind"),
    "network-policy-typo": ({"networkPolicy": {"enabeld": True}}, "enabeld"),
    "extra-rule-without-verbs": ({"rbac": {"extraRules": [{"apiGroups": [""], "resources": ["configmaps"]}]}}, "verbs"),
}


@pytest.mark.parametrize(("values", "needle"), SCHEMA_REJECTS.values(), ids=SCHEMA_REJECTS.keys())
def test_schema_rejects_bad_values(helm: Path, tmp_path: Path, values: Doc, needle: str) -> None:
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values), encoding="utf-8")
    result = _run(helm, "template", RELEASE, str(CHART), "--values", str(values_file))
    assert result.returncode != 0, f"values {values} were accepted"
    assert "schema" in result.stderr.lower() and needle in result.stderr, result.stderr


def test_schema_is_strict_everywhere() -> None:
    """Every object the schema describes with properties also forbids other properties."""
    schema = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    loose: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if "properties" in node and node.get("additionalProperties") is not False:
                loose.append(path or "<root>")
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}/{i}")

    walk(schema, "")
    assert not loose


def test_every_value_is_documented() -> None:
    """Each value has a `# --` comment (helm-docs), itself or on the group that contains it."""
    lines = (CHART / "values.yaml").read_text(encoding="utf-8").splitlines()
    key_re = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*):(.*)$")
    undocumented: list[str] = []
    stack: list[tuple[int, str, bool]] = []  # (indent, key, documented)
    for i, line in enumerate(lines):
        m = key_re.match(line)
        if not m:
            continue
        indent, key, rest = len(m.group(1)), m.group(2), m.group(3).strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        j = i - 1
        while j >= 0 and lines[j].strip().startswith("#") and not lines[j].strip().startswith("# --"):
            j -= 1
        documented = (j >= 0 and lines[j].strip().startswith("# --")) or any(doc for _, _, doc in stack)
        is_group = rest == ""
        if not is_group and not documented:
            undocumented.append(".".join([k for _, k, _ in stack] + [key]))
        stack.append((indent, key, documented))
    assert not undocumented


# ---------------------------------------------------------------------------------------------------
# deploy/


def test_deploy_manifests_are_a_fresh_render(helm: Path) -> None:
    result = subprocess.run(
        ["bash", str(RENDER_SCRIPT), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HELM": str(helm)},
    )
    assert result.returncode == 0, (
        f"{DEPLOY.relative_to(REPO)} is out of date; run `bash scripts/render-manifests.sh`:\n"
        + result.stdout[-4000:]
        + result.stderr
    )
    # And it is exactly the default render, documents and all.
    committed = [d for d in yaml.safe_load_all(DEPLOY.read_text(encoding="utf-8")) if d is not None]
    assert committed == render(helm)


# ---------------------------------------------------------------------------------------------------
# Monitoring: ServiceMonitor, PrometheusRule, dashboard, metric names


MONITORING = {
    "serviceMonitor": {"enabled": True},
    "prometheusRule": {"enabled": True},
    "grafanaDashboard": {"enabled": True},
}
REQUIRED_ALERTS = {
    "PySchedulerDown",
    "PySchedulerPodsPendingTooLong",
    "PySchedulerBindErrors",
    "PySchedulerNoLeader",
    "PySchedulerSchedulingSlow",
}
RUNBOOKS = REPO / "docs" / "runbooks.md"


def test_service_monitor(helm: Path) -> None:
    docs = render(helm, {**MONITORING, "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}})
    sm = only(docs, "ServiceMonitor")
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert sm["metadata"]["labels"]["release"] == "prom"
    assert sm["spec"]["selector"]["matchLabels"] == only(docs, "Service")["spec"]["selector"]
    assert sm["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    (endpoint,) = sm["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["path"], endpoint["scheme"]) == ("https-metrics", "/metrics", "https")
    # The scheduler's certificate is self-signed per start; the token is prometheus-operator's current field,
    # `authorization` from a Secret key (not the deprecated bearerTokenFile): the chart's scraper token.
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}
    assert "bearerTokenFile" not in endpoint
    secret_name = f"{fullname(RELEASE)}-metrics-scraper-token"
    assert endpoint["authorization"] == {"type": "Bearer", "credentials": {"name": secret_name, "key": "token"}}
    secret = next(d for d in docs if d["kind"] == "Secret")
    account = next(d for d in docs if d["kind"] == "ServiceAccount" and d["metadata"]["name"].endswith("-scraper"))
    assert secret["metadata"]["name"] == secret_name and secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["annotations"] == {"kubernetes.io/service-account.name": account["metadata"]["name"]}
    assert secret["metadata"]["namespace"] == account["metadata"]["namespace"] == sm["metadata"]["namespace"]
    binding = next(d for d in docs if d["kind"] == "ClusterRoleBinding" and d["metadata"]["name"].endswith("-scraper"))
    assert binding["roleRef"]["name"] == f"{fullname(RELEASE)}-metrics-reader"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": NAMESPACE}
    ]


@pytest.mark.parametrize(
    ("service_monitor", "expected"),
    [
        pytest.param(
            {"scraperToken": {"create": False}, "bearerTokenFile": "/var/run/token"},
            {"bearerTokenFile": "/var/run/token"},
            id="deprecated-file-only-when-asked",
        ),
        pytest.param({"scraperToken": {"create": False}}, {}, id="no-credential"),
    ],
)
def test_service_monitor_credentials_without_the_scraper_token(
    helm: Path, service_monitor: Doc, expected: Doc
) -> None:
    """Without the chart's scraper token: the deprecated bearerTokenFile only when given, else nothing."""
    docs = render(helm, {"serviceMonitor": {"enabled": True, **service_monitor}})
    (endpoint,) = only(docs, "ServiceMonitor")["spec"]["endpoints"]
    assert {k: v for k, v in endpoint.items() if k in ("bearerTokenFile", "authorization")} == expected
    assert not [d for d in docs if d["kind"] == "Secret"]


def test_scraper_token_needs_the_metrics_reader(helm: Path) -> None:
    """The scraper token binds the metrics-reader ClusterRole: without that role, rendering fails saying so."""
    values = {"serviceMonitor": {"enabled": True}, "metricsReader": {"create": False}}
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as fh:
        yaml.safe_dump(values, fh)
        fh.flush()
        result = _run(helm, "template", RELEASE, str(CHART), "--namespace", NAMESPACE, "-f", fh.name)
    assert result.returncode != 0
    assert "serviceMonitor.scraperToken.create binds the metrics-reader ClusterRole" in result.stderr


def test_service_monitor_with_a_ca_and_a_token_secret(helm: Path) -> None:
    values = {
        "serviceMonitor": {
            "enabled": True,
            "insecureSkipVerify": False,
            "tlsConfig": {"ca": {"secret": {"name": "ca", "key": "ca.crt"}}, "serverName": "localhost"},
            "authorization": {"type": "Bearer", "credentials": {"name": "scrape-token", "key": "token"}},
        }
    }
    (endpoint,) = only(render(helm, values), "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["tlsConfig"] == {
        "insecureSkipVerify": False,
        "ca": {"secret": {"name": "ca", "key": "ca.crt"}},
        "serverName": "localhost",
    }
    assert endpoint["authorization"] == {"type": "Bearer", "credentials": {"name": "scrape-token", "key": "token"}}
    assert "bearerTokenFile" not in endpoint


def prometheus_rules(helm: Path) -> list[Doc]:
    rule = only(render(helm, MONITORING), "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


def test_prometheus_rule_alerts(helm: Path) -> None:
    rules = prometheus_rules(helm)
    names = {r["alert"] for r in rules}
    assert names >= REQUIRED_ALERTS
    selector = f'job="{fullname(RELEASE)}",namespace="{NAMESPACE}"'
    for rule in rules:
        assert selector in rule["expr"], rule
        assert rule["labels"]["severity"] in ("critical", "warning")
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
        # Every alert links its runbook: a section of docs/runbooks.md named after it.
        base, _, anchor = rule["annotations"]["runbook_url"].partition("#")
        assert base.endswith("/docs/runbooks.md") and anchor == rule["alert"].lower(), rule
        assert f"\n## {rule['alert']}\n" in RUNBOOKS.read_text(encoding="utf-8"), rule["alert"]
        assert re.fullmatch(r"\d+[smh]", rule["for"]), rule
        assert rule["expr"].count("(") == rule["expr"].count(")"), rule
        assert rule["expr"].count("{") == rule["expr"].count("}"), rule
    down = next(r for r in rules if r["alert"] == "PySchedulerDown")
    assert down["expr"] == f"absent(up{{{selector}}} == 1)"


def test_dashboard_configmap_ships_the_dashboard(helm: Path) -> None:
    docs = render(helm, MONITORING)
    cm = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard"))
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(cm["data"]["pyscheduler.json"]) == json.loads(DASHBOARD.read_text(encoding="utf-8"))


def dashboard() -> Doc:
    data: Doc = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return data


def dashboard_panels() -> list[Doc]:
    out: list[Doc] = []
    for panel in dashboard()["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))
    return out


def dashboard_exprs() -> list[str]:
    return [t["expr"] for p in dashboard_panels() for t in p.get("targets", [])]


REQUIRED_PANELS = {
    "Scheduling attempts by result": ["scheduler_schedule_attempts_total"],
    "Scheduling attempt latency": ["scheduler_scheduling_attempt_duration_seconds_bucket", "0.5", "0.99"],
    "Pending pods by queue": ["scheduler_pending_pods", "queue"],
    "Unschedulable pods by plugin": ["scheduler_unschedulable_pods", "plugin"],
    "Pod scheduling SLI latency": ["scheduler_pod_scheduling_sli_duration_seconds_bucket"],
    "Bind errors": ["pyscheduler_bind_errors_total"],
    "API requests by code": ["rest_client_requests_total", "code"],
    "Cache size": ["scheduler_cache_size"],
    "Cache drift repaired": ["pyscheduler_cache_drift_repaired_total"],
    "Preemption attempts and victims": ["scheduler_preemption_attempts_total", "scheduler_preemption_victims_bucket"],
    "Asynchronous preemptions": ["scheduler_preemption_goroutines_execution_total", "result"],
    "Leader": ["pyscheduler_leader"],
    "CPU": ["process_cpu_seconds_total"],
    "Memory": ["process_resident_memory_bytes"],
}


def test_dashboard_panels_and_job_variable() -> None:
    dash = dashboard()
    assert dash["uid"] == "pyscheduler"
    assert 36 <= dash["schemaVersion"] <= 41
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert variables["job"]["type"] == "query"
    by_title = {p["title"]: p for p in dashboard_panels()}
    for title, needles in REQUIRED_PANELS.items():
        assert title in by_title, f"missing panel {title!r}"
        exprs = " ".join(t["expr"] for t in by_title[title]["targets"])
        for needle in needles:
            assert needle in exprs, (title, needle)
    ids = [p["id"] for p in dashboard_panels()]
    assert len(ids) == len(set(ids))
    for panel in dashboard_panels():
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        for target in panel["targets"]:
            assert 'job=~"$job"' in target["expr"], (panel["title"], target["expr"])
            assert target["expr"].count("(") == target["expr"].count(")"), target["expr"]


_SELECTOR_FUNCS = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_KEYWORDS = frozenset(
    {
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "inf",
        "nan",
    }
)


def promql_metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (identifiers that are not functions/keywords/labels)."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    s = re.sub(r"\{[^}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = _SELECTOR_FUNCS.sub(" ", s)
    names: set[str] = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", s):
        before = s[m.start() - 1] if m.start() else " "
        if before.isdigit() or before in "$.":
            continue
        if s[m.end() :].lstrip().startswith("(") or m.group(0).lower() in _KEYWORDS:
            continue
        names.add(m.group(0))
    return names


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('sum by (result) (rate(a_total{job=~"$job"}[$__rate_interval]))', {"a_total"}),
        ("histogram_quantile(0.99, sum by (le) (rate(b_bucket[5m])))", {"b_bucket"}),
        ('absent(up{job="x"} == 1)', {"up"}),
        ("sum(rate(c[5m])) / (sum(rate(d[5m])) > 0) > 0.05", {"c", "d"}),
        ("max(e) < 1 and on (job) f offset 5m", {"e", "f"}),
    ],
)
def test_promql_metric_names(expr: str, names: set[str]) -> None:
    assert promql_metric_names(expr) == names


def test_every_metric_used_is_documented(helm: Path) -> None:
    used: dict[str, set[str]] = {}
    for expr in dashboard_exprs():
        for name in promql_metric_names(expr):
            used.setdefault(name, set()).add("dashboard")
    for variable in dashboard()["templating"]["list"]:
        if variable["type"] == "query":
            m = re.match(r"label_values\((\w+)", variable["definition"])
            assert m, variable["definition"]
            used.setdefault(m.group(1), set()).add("dashboard variable")
    for rule in prometheus_rules(helm):
        for name in promql_metric_names(rule["expr"]):
            used.setdefault(name, set()).add(f"alert {rule['alert']}")
    unknown = {name: where for name, where in used.items() if name not in series_names()}
    assert not unknown, f"metrics not in tests/packaging/metrics_catalog.py: {unknown}"
    families = {re.sub(r"_(bucket|sum|count)$", "", name) for name in used}
    unused = METRIC_NAMES - families
    assert not unused, f"catalogued metrics that neither the dashboard nor the alerts use: {sorted(unused)}"
