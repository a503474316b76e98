"""A real Prometheus (Debian's `prometheus` package) scrapes pyscheduler while it schedules a workload.

Then every PromQL expression of the Grafana dashboard (helm/pyscheduler/dashboards/pyscheduler.json, Grafana
variables replaced by concrete values) and of the PrometheusRule the chart renders must parse (status
"success") and return data. An alert expression that is not firing returns nothing by design: for those the
expression must still parse and every series selector in it must return data, so a typo in a metric or label
name cannot hide behind a quiet alert.

Prometheus runs as a plain subprocess on loopback (never as a system service), with its TSDB in tmp_path.
It scrapes the way the chart's ServiceMonitor tells prometheus-operator to: the ServiceMonitor is rendered with
helm and its endpoint (scheme, path, tlsConfig, `authorization`) translated into the scrape_config, the token
being a real TokenRequest token of the chart's scraper ServiceAccount, bound by the chart to its
metrics-reader ClusterRole. So the scrape goes through pyscheduler's TLS, TokenReview and SubjectAccessReview.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from kubernetes_asyncio.client import ApiClient

from tests.cluster.harness import REPO_ROOT, ManagedProcess, default_bin_dir, free_port
from tests.e2e.conftest import NodeFactory, PodFactory, PriorityClassFactory, PySchedulerProcess, wait_for_event
from tests.e2e.kube import request_json, wait_for, wait_for_pod_bound
from tests.e2e.tools import missing_programs, require

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]

DASHBOARD = REPO_ROOT / "helm" / "pyscheduler" / "dashboards" / "pyscheduler.json"
CHART = REPO_ROOT / "helm" / "pyscheduler"
RELEASE = "pyscheduler"
RELEASE_NAMESPACE = "kube-system"
# The alerts' default selector is job="<full name>",namespace="<release namespace>" (a ServiceMonitor's labels):
# the scrape config below gives pyscheduler's target exactly these labels.
JOB = RELEASE
ALERT_SELECTOR = f'job="{JOB}",namespace="{RELEASE_NAMESPACE}"'
SCRAPE_INTERVAL = "1s"
# Grafana variables, as Grafana would expand them for this job. $__rate_interval is wide enough to cover the
# whole test, so rates see the workload however long the control plane takes.
GRAFANA_VARIABLES = {
    "$__rate_interval": "5m",
    "$__interval": "5s",
    "$__range": "5m",
    "$job": JOB,
}

# Queries that may legitimately return no data during this test, with the reason. Every other panel has data
# (the drift counter is initialised at 0 per kind; pyscheduler_leader is 1 once this instance schedules, with
# or without leader election).
ALLOWED_EMPTY: dict[str, str] = {
    f'sum by (feature) (increase(pyscheduler_unsupported_pods_total{{job=~"{JOB}"}}[5m]))': (
        "no field is refused by the fail-closed guard any more (its list is empty since DynamicResources "
        "landed): the counter, initialised per listed feature, has no series"
    ),
}

SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^{}]*)\}")


def prometheus_binary() -> str:
    require(missing_programs({"prometheus": "prometheus"}), needed_for="the dashboard and alert queries test")
    found = shutil.which("prometheus")
    assert found is not None
    return found


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, expression with Grafana variables replaced) for every panel target."""
    board = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    out: list[tuple[str, str]] = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            walk(panel.get("panels", []))
            for target in panel.get("targets", []):
                expr = str(target["expr"])
                for name, value in sorted(GRAFANA_VARIABLES.items(), key=lambda kv: -len(kv[0])):
                    expr = expr.replace(name, value).replace("${" + name[1:] + "}", value)
                assert "$" not in expr, f"unexpanded Grafana variable in {panel.get('title')!r}: {expr}"
                out.append((str(panel.get("title")), expr))

    walk(board["panels"])
    assert out
    return out


def dashboard_variable_metrics() -> list[tuple[str, str]]:
    """(metric, label) of every `label_values(metric, label)` variable."""
    board = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    out = []
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", variable["definition"])
            assert m, variable["definition"]
            out.append((m.group(1), m.group(2)))
    return out


def render_chart(template: str, *values: str) -> list[dict[str, Any]]:
    """The documents of one chart template, rendered with `--set` values."""
    helm = default_bin_dir() / "helm"
    if not helm.is_file():
        pytest.fail(f"no helm at {helm}; build it with: bash tests/cluster/build.sh")
    argv = [str(helm), "template", RELEASE, str(CHART), "--namespace", RELEASE_NAMESPACE]
    for value in values:
        argv += ["--set", value]
    rendered = subprocess.run(
        [*argv, "--show-only", template], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    return [d for d in yaml.safe_load_all(rendered) if d]


def alert_rules() -> list[dict[str, Any]]:
    (doc,) = render_chart("templates/prometheusrule.yaml", "prometheusRule.enabled=true")
    rules = [r for group in doc["spec"]["groups"] for r in group["rules"]]
    assert rules
    for rule in rules:
        assert ALERT_SELECTOR in rule["expr"], rule
    return rules


class Prometheus:
    def __init__(self, process: ManagedProcess, port: int) -> None:
        self.process = process
        self.url = f"http://127.0.0.1:{port}"

    async def get(self, path: str, params: dict[str, str] | list[tuple[str, str]]) -> dict[str, Any]:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session,
            session.get(self.url + path, params=params) as resp,
        ):
            body: dict[str, Any] = await resp.json(content_type=None)
            return body

    async def query(self, expr: str) -> dict[str, Any]:
        return await self.get("/api/v1/query", {"query": expr})


def scrape_config(endpoint: dict[str, Any], target: str, token_file: Path) -> dict[str, Any]:
    """A ServiceMonitor endpoint as the prometheus scrape_config prometheus-operator generates from it.

    The bearer token (bearerTokenFile in the pod, or authorization from a Secret) is `token_file` here.
    """
    known = {"port", "path", "scheme", "interval", "scrapeTimeout", "tlsConfig", "bearerTokenFile", "authorization"}
    assert set(endpoint) <= known, f"translate these ServiceMonitor fields too: {set(endpoint) - known}"
    config: dict[str, Any] = {
        "job_name": JOB,
        "scrape_interval": SCRAPE_INTERVAL,
        "scrape_timeout": SCRAPE_INTERVAL,
        "scheme": endpoint.get("scheme", "http"),
        "metrics_path": endpoint.get("path", "/metrics"),
        "static_configs": [{"targets": [target], "labels": {"namespace": RELEASE_NAMESPACE}}],
    }
    tls = endpoint.get("tlsConfig") or {}
    assert set(tls) <= {"insecureSkipVerify", "serverName"}, f"translate these tlsConfig fields too: {tls}"
    if tls:
        config["tls_config"] = {"insecure_skip_verify": bool(tls.get("insecureSkipVerify", False))}
        if tls.get("serverName"):
            config["tls_config"]["server_name"] = tls["serverName"]
    auth = endpoint.get("authorization")
    if auth or endpoint.get("bearerTokenFile"):
        config["authorization"] = {"type": (auth or {}).get("type", "Bearer"), "credentials_file": str(token_file)}
    return config


@pytest.fixture
async def scrape_token(
    tmp_path: Path, api_client: ApiClient, namespace: str, pyscheduler: PySchedulerProcess
) -> AsyncIterator[Path]:
    """A file with the token the ServiceMonitor's Secret holds: the chart's scraper ServiceAccount, bound by the
    chart's ClusterRoleBinding to the chart's metrics-reader ClusterRole (and no more).

    The objects are the chart's own (renamed into this test's namespace); the token comes from the TokenRequest
    API for that ServiceAccount, as the token controller would write one into the chart's
    `kubernetes.io/service-account-token` Secret (no controller-manager runs here).
    """
    (role,) = render_chart("templates/metrics-reader.yaml")
    assert role["kind"] == "ClusterRole" and role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    scraper = {d["kind"]: d for d in render_chart("templates/metrics-scraper.yaml", "serviceMonitor.enabled=true")}
    assert set(scraper) == {"ServiceAccount", "Secret", "ClusterRoleBinding"}
    account, binding = scraper["ServiceAccount"], scraper["ClusterRoleBinding"]
    assert scraper["Secret"]["type"] == "kubernetes.io/service-account-token"
    assert scraper["Secret"]["metadata"]["annotations"] == {
        "kubernetes.io/service-account.name": account["metadata"]["name"]
    }
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    name = f"{namespace}-metrics-reader"
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    role["metadata"] = {"name": name}
    await request_json(api_client, "POST", f"{rbac}/clusterroles", body=role)
    account["metadata"] = {"name": account["metadata"]["name"], "namespace": namespace}
    await request_json(api_client, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", body=account)
    binding["metadata"] = {"name": name}
    binding["roleRef"]["name"] = name
    (subject,) = binding["subjects"]
    assert subject["name"] == account["metadata"]["name"]
    subject["namespace"] = namespace
    await request_json(api_client, "POST", f"{rbac}/clusterrolebindings", body=binding)
    answer = await request_json(
        api_client,
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{account['metadata']['name']}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    )
    path = tmp_path / "prometheus-token"
    path.write_text(answer["status"]["token"], encoding="utf-8")
    path.chmod(0o600)
    try:
        yield path
    finally:
        await request_json(api_client, "DELETE", f"{rbac}/clusterrolebindings/{name}")
        await request_json(api_client, "DELETE", f"{rbac}/clusterroles/{name}")


@pytest.fixture
def prometheus_config(
    tmp_path: Path, pyscheduler: PySchedulerProcess, scrape_token: Path
) -> Iterator[Path]:
    (monitor,) = render_chart("templates/servicemonitor.yaml", "serviceMonitor.enabled=true")
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"  # the secure port, as the chart deploys it
    # prometheus-operator's current field, naming the chart's scraper token Secret (scrape_token's token).
    assert endpoint["authorization"]["credentials"] == {"name": f"{RELEASE}-metrics-scraper-token", "key": "token"}
    assert "bearerTokenFile" not in endpoint
    scrape = scrape_config(endpoint, f"127.0.0.1:{pyscheduler.port}", scrape_token)
    config = {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "scrape_configs": [scrape],
    }
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    yield path


@pytest.fixture
async def prometheus(tmp_path: Path, prometheus_config: Path) -> AsyncIterator[Prometheus]:
    port = free_port()
    argv = [
        prometheus_binary(),
        f"--config.file={prometheus_config}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--storage.tsdb.retention.time=1h",
        "--log.level=warn",
    ]
    process = ManagedProcess("prometheus", argv, tmp_path / "prometheus.log", env=dict(os.environ)).start()
    prom = Prometheus(process, port)

    async def ready() -> bool:
        if not process.running():
            raise AssertionError(f"prometheus exited with {process.poll()}:\n{process.tail(40)}")
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session,
                session.get(f"{prom.url}/-/ready") as resp,
            ):
                return resp.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False

    try:
        await wait_for(ready, what="prometheus /-/ready", within=30)

        async def scraped() -> bool:
            body = await prom.query(f"up{{{ALERT_SELECTOR}}} == 1")
            return bool(body.get("data", {}).get("result"))

        try:
            await wait_for(scraped, what="a successful scrape of pyscheduler", within=30)
        except AssertionError as e:
            targets = await prom.get("/api/v1/targets", {})
            errors = [t.get("lastError") for t in (targets.get("data") or {}).get("activeTargets", [])]
            raise AssertionError(f"{e}; prometheus says: {errors}") from None
        yield prom
    finally:
        process.stop()


def has_data(body: dict[str, Any]) -> bool:
    """A non-empty result with at least one number that is not NaN (an all-NaN quantile is no data)."""
    data = body.get("data") or {}
    result = data.get("result") or []
    if data.get("resultType") == "scalar":
        return not math.isnan(float(result[1]))
    for series in result:
        values = [series["value"]] if "value" in series else series.get("values", [])
        if any(not math.isnan(float(v[1])) for v in values):
            return True
    return False


async def test_dashboard_and_alert_queries_return_data(
    prometheus: Prometheus,
    pyscheduler: PySchedulerProcess,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
    create_priority_class: PriorityClassFactory,
) -> None:
    # The workload starts after the first scrape, in two waves: rate() cannot see a labelled series' first
    # observation (the child appears with its value already counted), so wave 1 creates the series (as a
    # scheduler that has run for a while has them) and wave 2 makes every rate and quantile move.
    await create_node(f"{namespace}-a", cpu="4")
    await create_node(f"{namespace}-b", cpu="4")
    low = await create_priority_class("prom-low", 10)
    high = await create_priority_class("prom-high", 1000)

    async def wave(index: int, small: int) -> None:
        names = [f"web-{index}-{i}" for i in range(small)]
        for name in names:
            await create_pod(name, requests={"cpu": "100m"})
        await create_pod(f"too-big-{index}", requests={"cpu": "64"})
        # One preemption per wave, on a node of its own: a high-priority pod evicts the low-priority one.
        node = f"{namespace}-preempt-{index}"
        await create_node(node, cpu="1", labels={"e2e/pool": node})
        await create_pod(
            f"victim-{index}",
            scheduler_name="nobody",
            node_name=node,
            requests={"cpu": "1"},
            spec={"priorityClassName": low},
        )
        await create_pod(
            f"preemptor-{index}",
            requests={"cpu": "1"},
            node_selector={"e2e/pool": node},
            spec={"priorityClassName": high},
        )
        for name in names:
            await wait_for_pod_bound(api_client, namespace, name)
        await wait_for_pod_bound(api_client, namespace, f"preemptor-{index}")
        await wait_for_event(api_client, namespace, f"too-big-{index}", "FailedScheduling")
        total = 4 * index  # the small pods and the preemptor

        async def scraped() -> bool:
            # Prometheus has the wave's results: its pods bound, its big pod in the unschedulable queue, and its
            # preemption's background run counted.
            bound = await prometheus.query(
                f'sum(scheduler_schedule_attempts_total{{{ALERT_SELECTOR},result="scheduled"}}) >= {total}'
            )
            stuck = await prometheus.query(
                f'scheduler_pending_pods{{{ALERT_SELECTOR},queue="unschedulable"}} >= {index}'
            )
            preempted = await prometheus.query(
                f"sum(scheduler_preemption_goroutines_execution_total{{{ALERT_SELECTOR}}}) >= {index}"
            )
            return has_data(bound) and has_data(stuck) and has_data(preempted)

        await wait_for(scraped, what=f"prometheus to scrape wave {index}", within=30)
        await asyncio.sleep(3)  # a few more scrapes

    await wave(1, 3)
    await wave(2, 3)

    failures: list[str] = []

    for title, expr in dashboard_queries():
        body = await prometheus.query(expr)
        if body.get("status") != "success":
            failures.append(f"dashboard {title!r}: {expr}: {body.get('errorType')}: {body.get('error')}")
        elif not has_data(body) and expr not in ALLOWED_EMPTY:
            failures.append(f"dashboard {title!r}: no data: {expr}")

    for metric, label in dashboard_variable_metrics():
        body = await prometheus.get(f"/api/v1/label/{label}/values", [("match[]", metric)])
        if JOB not in (body.get("data") or []):
            failures.append(f"dashboard variable label_values({metric}, {label}): {body}")

    for rule in alert_rules():
        expr = str(rule["expr"])
        body = await prometheus.query(expr)
        if body.get("status") != "success":
            failures.append(f"alert {rule['alert']}: {expr}: {body.get('errorType')}: {body.get('error')}")
            continue
        if has_data(body):
            continue  # firing (or would after its `for`), e.g. PodsPendingTooLong with the stuck pod
        # Not firing: every series it reads must exist, or the alert could never fire.
        selectors = SELECTOR.findall(expr)
        assert selectors, f"alert {rule['alert']} has no series selector: {expr}"
        for name, matchers in selectors:
            selector = f"{name}{{{matchers}}}"
            if not has_data(await prometheus.query(selector)):
                failures.append(f"alert {rule['alert']}: {selector} has no data (expr: {expr})")

    assert not failures, "queries that fail or return no data:\n" + "\n".join(failures)
