"""The Helm chart's RBAC is enough and least privilege, proven on a real kube-apiserver with RBAC on.

`helm install` puts the chart into a fresh namespace of the session's control plane (the Deployment never
runs: there are no kubelets). Then pyscheduler runs outside the cluster AS THE CHART'S ServiceAccount: its only
credential is a token minted through the TokenRequest API, and its configuration is the KubeSchedulerConfiguration
the chart rendered into its ConfigMap. With the chart's rules it binds pods, writes `Scheduled` and
`FailedScheduling` events and the PodScheduled condition, and never meets a 403.

The volume plugins are exercised too: a pod whose WaitForFirstConsumer claim binds to a local PV (the PV is
updated by PreBind, the PV controller binds the claim), and a claim of a provisioning class that PreBind
annotates with the selected node.

Then each rule of the ClusterRole is taken away in turn (the ClusterRole is patched as admin, and the test
waits until a SubjectAccessReview shows the authorizer has seen the change) and pyscheduler is started again as
the ServiceAccount, to show that the rule is needed and that losing it gives a clear error naming the verb and
the resource: an exit with the refused LIST for node reads and for each storage kind the volume plugins watch,
and for writes an error log line carrying the API server's `... is forbidden: User "system:serviceaccount:..."
cannot <verb> resource "<resource>" ...` message (for pods/binding and the PV/PVC updates of VolumeBinding's
PreBind also the FailedScheduling event and PodScheduled condition).

The secure port's delegation is proven the same way: without the ClusterRoleBinding to
`system:auth-delegator` the scheduler cannot create TokenReviews, so `/metrics` fails closed (401, even for
system:masters) with the refusal in the log, while the health checks stay open.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio
import yaml
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import new_client_from_config

from tests.cluster.harness import REPO_ROOT, ControlPlane, ManagedProcess, free_port
from tests.e2e import serving
from tests.e2e.conftest import NodeFactory, PodFactory, PriorityClassFactory
from tests.e2e.kube import JSON, get_pod, request_json, status_condition, wait_for, wait_for_pod_bound

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

CHART = REPO_ROOT / "helm" / "pyscheduler"
KUBE_VERSION = (REPO_ROOT / "tests" / "cluster" / "VERSION").read_text(encoding="utf-8").strip()
SCHEDULER_NAME = "pyscheduler"  # the chart's default `schedulerName`, and the e2e pod factory's
RBAC_API = "/apis/rbac.authorization.k8s.io/v1"
MERGE_PATCH = "application/merge-patch+json"


# --------------------------------------------------------------------------------------------- helpers


def _helm_path() -> Path:
    explicit = os.environ.get("PYSCHEDULER_HELM")
    if explicit:
        return Path(explicit)
    bin_dir = os.environ.get("PYSCHEDULER_BIN_DIR") or str(REPO_ROOT / "_build" / "bin" / KUBE_VERSION)
    return Path(bin_dir) / "helm"


def _helm(home: Path, kubeconfig: Path, *args: str) -> str:
    """Run helm with a private HELM_*_HOME against the admin kubeconfig; return stdout (fail on an error)."""
    helm = _helm_path()
    if not (helm.is_file() and os.access(helm, os.X_OK)):
        pytest.fail(f"helm not found at {helm}: build it with `bash tests/cluster/build.sh`", pytrace=False)
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    for key in ("HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME"):
        env[key] = str(home / key.lower())
    argv = [str(helm), *args, "--kubeconfig", str(kubeconfig)]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, env=env)
    assert result.returncode == 0, f"{' '.join(argv)} failed ({result.returncode}):\n{result.stderr}"
    return result.stdout


@dataclass(frozen=True)
class Release:
    """The installed chart: where it is, who it runs as, and how to run pyscheduler like its Deployment."""

    name: str
    namespace: str
    service_account: str
    cluster_role: str
    rules: list[JSON]  # the ClusterRole's rules as installed
    auth_delegator_binding: JSON  # the ClusterRoleBinding to system:auth-delegator, as rendered
    metrics_reader: str  # the scrapers' ClusterRole (GET /metrics)
    sa_kubeconfig: Path  # the ServiceAccount's token; the scheduler's only credential
    config: Path  # the chart's rendered KubeSchedulerConfiguration

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.service_account}"


def _sa_kubeconfig(server: str, user: str, token: str) -> JSON:
    """A kubeconfig like the harness's admin one (token, insecure-skip-tls-verify), for the ServiceAccount."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}],
        "current-context": "e2e",
    }


def _only(docs: list[JSON], kind: str, name_suffix: str = "") -> JSON:
    """The one object of `kind` (whose name ends with `name_suffix`, "" meaning none of the known suffixes)."""
    suffixes = ("-auth-delegator", "-metrics-reader", "-dashboard")

    def wanted(name: str) -> bool:
        return name.endswith(name_suffix) if name_suffix else not name.endswith(suffixes)

    found = [d for d in docs if d.get("kind") == kind and wanted(d["metadata"]["name"])]
    assert len(found) == 1, f"expected one {kind} {name_suffix} in the release manifest, found {len(found)}"
    return found[0]


async def _can(api_client: ApiClient, user: str, namespace: str, verb: str, group: str, resource: str) -> bool:
    """Would the authorizer let `user` (a ServiceAccount) do this? (SubjectAccessReview, asked as admin).

    A `resource` starting with "/" is a non-resource path (`nonResourceAttributes`).
    """
    sa_namespace = user.split(":")[2]
    attributes: JSON
    if resource.startswith("/"):
        attributes = {"nonResourceAttributes": {"path": resource, "verb": verb}}
    else:
        resource, _, subresource = resource.partition("/")
        attributes = {
            "resourceAttributes": {
                "namespace": namespace,
                "verb": verb,
                "group": group,
                "resource": resource,
                "subresource": subresource,
            }
        }
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": user,
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{sa_namespace}", "system:authenticated"],
            **attributes,
        },
    }
    answer = await request_json(api_client, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=review)
    return bool(answer["status"].get("allowed"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def release(
    control_plane: ControlPlane, kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Release]:
    """`helm install` the chart (default values) into a fresh namespace; mint the ServiceAccount's token."""
    suffix = secrets.token_hex(3)
    name, namespace = f"pyscheduler-rbac-{suffix}", f"e2e-rbac-chart-{suffix}"
    work = tmp_path_factory.mktemp("rbac")
    _helm(work, kubeconfig, "install", name, str(CHART), "--namespace", namespace, "--create-namespace", "--wait=false")
    client = await new_client_from_config(config_file=str(kubeconfig), persist_config=False)
    try:
        docs = [d for d in yaml.safe_load_all(_helm(work, kubeconfig, "get", "manifest", name, "-n", namespace)) if d]
        service_account = _only(docs, "ServiceAccount")["metadata"]["name"]
        cluster_role = _only(docs, "ClusterRole")["metadata"]["name"]
        # The Deployment mounts this ConfigMap as --config: the scheduler gets exactly what the chart rendered.
        config = work / "config.yaml"
        config.write_text(_only(docs, "ConfigMap")["data"]["config.yaml"], encoding="utf-8")
        assert yaml.safe_load(config.read_text())["leaderElection"]["leaderElect"] is False  # one replica
        installed = await request_json(client, "GET", f"{RBAC_API}/clusterroles/{cluster_role}")
        token_request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        }
        answer = await request_json(
            client,
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token",
            body=token_request,
        )
        user = f"system:serviceaccount:{namespace}:{service_account}"
        sa_kubeconfig = work / "sa-kubeconfig"
        sa_kubeconfig.write_text(yaml.safe_dump(_sa_kubeconfig(control_plane.server, user, answer["status"]["token"])))
        sa_kubeconfig.chmod(0o600)
        info = Release(
            name,
            namespace,
            service_account,
            cluster_role,
            installed["rules"],
            _only(docs, "ClusterRoleBinding", "-auth-delegator"),
            _only(docs, "ClusterRole", "-metrics-reader")["metadata"]["name"],
            sa_kubeconfig,
            config,
        )
        # The ClusterRoleBinding was created a moment ago: wait until the authorizer has it.
        await wait_for(lambda: _can(client, user, "", "list", "", "nodes"), what=f"{user} to be allowed to list nodes")
        yield info
    finally:
        try:
            _helm(work, kubeconfig, "uninstall", name, "--namespace", namespace, "--wait=false")
        finally:
            with contextlib.suppress(ApiException):
                await request_json(client, "DELETE", f"/api/v1/namespaces/{namespace}")
            await client.close()


# --------------------------------------------------------------------------------------------- the scheduler


@dataclass
class SchedulerRun:
    """`python -m scheduler run` as the chart's ServiceAccount, with the chart's configuration."""

    process: ManagedProcess
    port: int

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.process.log_path.read_text(encoding="utf-8", errors="replace")

    async def request(
        self, method: str, path: str, token: str | None = None, data: str | None = None
    ) -> tuple[int, str]:
        """`method path` on the secure port with `token` (None: no credential); (status, body)."""
        return await serving.request(method, self.url + path, token=token, data=data)

    async def ready(self) -> bool:
        if not self.process.running():
            raise AssertionError(f"pyscheduler exited with {self.process.poll()}:\n{self.process.tail(60)}")
        try:
            status, _ = await self.request("GET", "/readyz")  # open: no token needed
        except (aiohttp.ClientError, TimeoutError):
            return False
        return status == 200

    async def wait_for_log(self, needle: str, *, within: float = 20.0) -> str:
        """Wait until the log contains `needle`; return the first line that does."""

        async def probe() -> str | None:
            return next((line for line in self.log().splitlines() if needle in line), None)

        try:
            return await wait_for(probe, what=f"pyscheduler to log {needle!r}", within=within)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.process.tail(60)}") from None

    async def stop(self) -> int | None:
        """SIGTERM; the exit code (None if it had to be killed)."""
        if self.process.running() and self.process.pid is not None:
            os.kill(self.process.pid, signal.SIGTERM)

            async def exited() -> bool:
                return not self.process.running()

            with contextlib.suppress(AssertionError):
                await wait_for(exited, what="pyscheduler to exit", within=20, interval=0.1)
        code = self.process.poll()
        self.process.stop()
        return code


StartScheduler = Callable[..., Awaitable[SchedulerRun]]
"""start(*extra_args): `pyscheduler run` as the chart's ServiceAccount, plus `extra_args`."""


@pytest.fixture
def start_scheduler(release: Release, tmp_path: Path) -> Iterator[StartScheduler]:
    """Starts pyscheduler as the ServiceAccount (no other credential in its environment); stopped afterwards."""
    runs: list[SchedulerRun] = []

    async def start(*extra: str) -> SchedulerRun:
        port = free_port()
        argv = [
            sys.executable,
            "-m",
            "scheduler",
            "run",
            "--kubeconfig",
            str(release.sa_kubeconfig),
            "--config",
            str(release.config),
            "--port",
            str(port),
            "--bind-address",
            "127.0.0.1",
            "-v",
            "2",
            *extra,
        ]
        # Nothing to fall back on: no $KUBECONFIG, no in-cluster service-account environment.
        drop = {"KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}
        env = {k: v for k, v in os.environ.items() if k not in drop}
        env["PYTHONPATH"] = str(REPO_ROOT)
        log_path = tmp_path / f"pyscheduler-{len(runs)}.log"
        run = SchedulerRun(ManagedProcess("pyscheduler", argv, log_path, env=env).start(), port)
        runs.append(run)
        return run

    yield start
    for run in runs:
        run.process.stop()


async def start_ready(start_scheduler: StartScheduler, *extra: str) -> SchedulerRun:
    run = await start_scheduler(*extra)
    started = time.monotonic()
    await wait_for(run.ready, what="pyscheduler /readyz as the chart's ServiceAccount", within=30)
    print(f"pyscheduler ready as the ServiceAccount after {time.monotonic() - started:.2f} s")
    return run


async def events_for(api_client: ApiClient, namespace: str, pod: str, reason: str) -> list[JSON]:
    answer = await request_json(api_client, "GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
    return [e for e in answer["items"] if e.get("reason") == reason and e["regarding"].get("name") == pod]


async def wait_for_event(api_client: ApiClient, namespace: str, pod: str, reason: str) -> JSON:
    async def probe() -> JSON | None:
        found = await events_for(api_client, namespace, pod, reason)
        return found[0] if found else None

    return await wait_for(probe, what=f"a {reason} event for {namespace}/{pod}", within=20)


def assert_never_forbidden(log: str) -> None:
    lowered = log.lower()
    assert "forbidden" not in lowered and "status=403" not in lowered, f"pyscheduler met a 403:\n{log}"


# --------------------------------------------------------------------------------------------- with the chart's rules


async def test_scheduler_runs_as_the_chart_service_account(
    release: Release,
    start_scheduler: StartScheduler,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """Binds, events and the PodScheduled condition all work with exactly the chart's rules; no 403 anywhere."""
    run = await start_ready(start_scheduler)
    for i in range(2):
        await create_node(f"{namespace}-n{i}", cpu="4", memory="16Gi")
    for i in range(3):
        await create_pod(f"p{i}", requests={"cpu": "100m", "memory": "64Mi"})
    await create_pod("too-big", requests={"cpu": "100"})

    nodes = {f"{namespace}-n{i}" for i in range(2)}
    for i in range(3):
        pod = await wait_for_pod_bound(api_client, namespace, f"p{i}", within=20)
        assert pod["spec"]["nodeName"] in nodes
    scheduled = await wait_for_event(api_client, namespace, "p0", "Scheduled")
    assert scheduled["reportingController"] == SCHEDULER_NAME
    assert scheduled["note"].startswith(f"Successfully assigned {namespace}/p0 to ")

    failed = await wait_for_event(api_client, namespace, "too-big", "FailedScheduling")
    assert "Insufficient cpu" in failed["note"], failed

    async def condition() -> JSON | None:
        return status_condition(await get_pod(api_client, namespace, "too-big"), "PodScheduled")

    cond = await wait_for(condition, what="the PodScheduled condition of too-big", within=20)
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable"), cond
    assert "Insufficient cpu" in cond["message"], cond

    # Volumes: PreBind updates a PV (static binding) and a claim (selected-node for provisioning).
    async with volume_objects(api_client, namespace) as vol:
        await vol.pvc("data", vol.local_class)
        await vol.pvc("provisioned", vol.provisioning_class)
        await create_pod(
            "with-volume", spec={"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}
        )
        await create_pod(
            "with-provisioned", spec={"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "provisioned"}}]}
        )
        pod = await wait_for_pod_bound(api_client, namespace, "with-volume", within=60)
        assert pod["spec"]["nodeName"] == f"{namespace}-n0"
        claim = await vol.wait_claim(
            "data", lambda c: c["spec"].get("volumeName") == vol.pv_name, "data to be bound to the local PV"
        )
        assert claim["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"]
        await vol.wait_claim(
            "provisioned",
            lambda c: bool((c["metadata"].get("annotations") or {}).get(SELECTED_NODE)),
            "pyscheduler to write the selected-node annotation",
        )

    await asyncio.sleep(0.5)  # let any late write (and its error) reach the log
    log = run.log()
    assert_never_forbidden(log)
    assert await run.stop() == 0, f"pyscheduler did not exit cleanly on SIGTERM:\n{log}"


SELECTED_NODE = "volume.kubernetes.io/selected-node"


@dataclass
class VolumeObjects:
    """A local PV on `<namespace>-n0` in a WaitForFirstConsumer class, and a provisioning class (nobody
    provisions for it: PreBind's write of the claim is what is under test)."""

    api: ApiClient
    namespace: str
    local_class: str
    provisioning_class: str
    pv_name: str

    async def pvc(self, name: str, storage_class: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": storage_class,
            },
        }
        await request_json(self.api, "POST", f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims", body=body)

    async def wait_claim(self, name: str, condition: Callable[[JSON], bool], what: str) -> JSON:
        async def probe() -> JSON | None:
            claim = await request_json(
                self.api, "GET", f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims/{name}"
            )
            return claim if condition(claim) else None

        return await wait_for(probe, what=what, within=60)


@contextlib.asynccontextmanager
async def volume_objects(api: ApiClient, namespace: str) -> AsyncIterator[VolumeObjects]:
    local, provisioning, pv = f"{namespace}-local", f"{namespace}-prov", f"{namespace}-pv"
    for name, provisioner in ((local, "kubernetes.io/no-provisioner"), (provisioning, "rbac.e2e.pyscheduler.io")):
        body = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": provisioner,
            "volumeBindingMode": "WaitForFirstConsumer",
        }
        await request_json(api, "POST", "/apis/storage.k8s.io/v1/storageclasses", body=body)
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [f"{namespace}-n0"]}]}
    body = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": local,
            "local": {"path": "/mnt/rbac"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }
    await request_json(api, "POST", "/api/v1/persistentvolumes", body=body)

    async def available() -> bool:  # the PV controller makes a new PV Available; only then can it match a claim
        got = await request_json(api, "GET", f"/api/v1/persistentvolumes/{pv}")
        return bool((got.get("status") or {}).get("phase") == "Available")

    await wait_for(available, what=f"PV {pv} to become Available")
    try:
        yield VolumeObjects(api, namespace, local, provisioning, pv)
    finally:
        claims = await request_json(api, "GET", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims")
        paths = [
            f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{c['metadata']['name']}" for c in claims["items"]
        ]
        paths += [f"/api/v1/persistentvolumes/{pv}"]
        paths += [f"/apis/storage.k8s.io/v1/storageclasses/{n}" for n in (local, provisioning)]
        for path in paths:  # no protection controllers run here: drop their finalizers, then delete
            with contextlib.suppress(ApiException):
                await request_json(
                    api, "PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH
                )
            with contextlib.suppress(ApiException):
                await request_json(api, "DELETE", path)


# --------------------------------------------------------------------------------------------- without one rule


@dataclass(frozen=True)
class Removal:
    """One permission taken away: which (verb, group, resource) it denies, and how to cut it from the rules."""

    verb: str
    group: str
    resource: str

    def cut(self, rules: list[JSON]) -> list[JSON]:
        """The rules without this resource (and only it) in the rule(s) granting it."""
        out: list[JSON] = []
        for rule in copy.deepcopy(rules):
            if self.group in rule["apiGroups"] and self.resource in rule["resources"] and self.verb in rule["verbs"]:
                rule["resources"] = [r for r in rule["resources"] if r != self.resource]
                if not rule["resources"]:
                    continue
            out.append(rule)
        assert out != rules, f"no rule grants {self}"
        return out


@pytest.fixture
async def remove_rule(release: Release, api_client: ApiClient) -> AsyncIterator[Callable[[Removal], Awaitable[None]]]:
    """Patches the chart's ClusterRole (as admin) to drop one permission; restores the rules afterwards."""
    user = release.user
    path = f"{RBAC_API}/clusterroles/{release.cluster_role}"
    removed: list[Removal] = []

    async def remove(removal: Removal) -> None:
        removed.append(removal)
        await request_json(
            api_client, "PATCH", path, body={"rules": removal.cut(release.rules)}, content_type=MERGE_PATCH
        )

        async def denied() -> bool:
            return not await _can(api_client, user, "default", removal.verb, removal.group, removal.resource)

        await wait_for(denied, what=f"{user} to lose {removal.verb} {removal.resource}")

    try:
        yield remove
    finally:
        await request_json(api_client, "PATCH", path, body={"rules": release.rules}, content_type=MERGE_PATCH)
        await wait_for(
            lambda: _can(api_client, user, "default", "create", "", "pods/binding"), what="the rules to be restored"
        )
        await wait_for(lambda: _can(api_client, user, "", "list", "", "nodes"), what="the rules to be restored")
        for r in removed:  # the next test's scheduler must not start before the authorizer has it back

            async def allowed(r: Removal = r) -> bool:
                return await _can(api_client, user, "default", r.verb, r.group, r.resource)

            await wait_for(allowed, what=f"{r.verb} {r.resource} to be restored")


async def test_without_node_reads_the_scheduler_exits_naming_nodes(
    start_scheduler: StartScheduler, remove_rule: Callable[[Removal], Awaitable[None]], release: Release
) -> None:
    """No `nodes` get/list/watch: the initial LIST is refused, pyscheduler exits 1 saying so (never ready)."""
    await remove_rule(Removal("list", "", "nodes"))
    run = await start_scheduler()

    async def exited() -> int | None:
        return run.process.poll()

    code = await wait_for(exited, what="pyscheduler to exit without node reads", within=30, interval=0.2)
    log = run.log()
    assert code == 1, f"exit code {code}:\n{log}"
    line = next((x for x in log.splitlines() if "initial LIST refused by the API server; exiting" in x), None)
    assert line is not None, log
    assert f'User \\"{release.user}\\" cannot list resource \\"nodes\\"' in line, line
    assert "starting to schedule" not in log


async def test_without_pods_binding_the_pod_is_not_bound_and_the_error_says_why(
    start_scheduler: StartScheduler,
    remove_rule: Callable[[Removal], Awaitable[None]],
    release: Release,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """No `pods/binding` create: the binding is refused; log, event and condition carry the 403 message."""
    await remove_rule(Removal("create", "", "pods/binding"))
    run = await start_ready(start_scheduler)
    await create_node(f"{namespace}-n0")
    await create_pod("p0", requests={"cpu": "100m"})

    denial = f'cannot create resource "pods/binding" in API group "" in the namespace "{namespace}"'
    line = await run.wait_for_log("binding failed")
    assert "forbidden" in line and denial.replace('"', '\\"') in line, line
    event = await wait_for_event(api_client, namespace, "p0", "FailedScheduling")
    assert "forbidden" in event["note"] and denial in event["note"] and release.user in event["note"], event
    cond = status_condition(await get_pod(api_client, namespace, "p0"), "PodScheduled")
    assert cond is not None and cond["status"] == "False" and denial in cond["message"], cond
    assert not (await get_pod(api_client, namespace, "p0"))["spec"].get("nodeName")
    await run.stop()


async def test_without_pods_status_patch_the_condition_is_missing_and_logged(
    start_scheduler: StartScheduler,
    remove_rule: Callable[[Removal], Awaitable[None]],
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """No `pods/status` patch: FailedScheduling is still recorded, the PodScheduled condition is not; log says 403."""
    await remove_rule(Removal("patch", "", "pods/status"))
    run = await start_ready(start_scheduler)
    await create_node(f"{namespace}-n0")
    await create_pod("too-big", requests={"cpu": "100"})

    line = await run.wait_for_log("failed to write to the API")
    assert 'kind="status"' in line and "status=403" in line, line
    assert 'cannot patch resource \\"pods/status\\"' in line, line
    await wait_for_event(api_client, namespace, "too-big", "FailedScheduling")
    assert status_condition(await get_pod(api_client, namespace, "too-big"), "PodScheduled") is None
    await run.stop()


async def test_without_events_create_no_event_is_written_and_the_log_says_why(
    start_scheduler: StartScheduler,
    remove_rule: Callable[[Removal], Awaitable[None]],
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """No events.k8s.io `events` create: the pod is still bound, but its Scheduled event is refused (logged)."""
    await remove_rule(Removal("create", "events.k8s.io", "events"))
    run = await start_ready(start_scheduler)
    await create_node(f"{namespace}-n0")
    await create_pod("p0", requests={"cpu": "100m"})

    await wait_for_pod_bound(api_client, namespace, "p0", within=20)
    line = await run.wait_for_log("failed to write to the API")
    assert 'kind="event"' in line and "status=403" in line, line
    assert 'cannot create resource \\"events\\" in API group \\"events.k8s.io\\"' in line, line
    assert await events_for(api_client, namespace, "p0", "Scheduled") == []
    await run.stop()


STORAGE_READS = [
    ("resource.k8s.io", "resourceclaims"),
    ("resource.k8s.io", "resourceslices"),
    ("resource.k8s.io", "deviceclasses"),
    ("resource.k8s.io", "devicetaintrules"),
    ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "csinodes"),
    ("storage.k8s.io", "csidrivers"),
    ("storage.k8s.io", "csistoragecapacities"),
    ("storage.k8s.io", "volumeattachments"),
]


@pytest.mark.parametrize(("group", "resource"), [pytest.param(g, r, id=r) for g, r in STORAGE_READS])
async def test_without_a_storage_read_the_scheduler_exits_naming_it(
    group: str,
    resource: str,
    start_scheduler: StartScheduler,
    remove_rule: Callable[[Removal], Awaitable[None]],
    release: Release,
) -> None:
    """No list/watch of one kind the volume plugins or DynamicResources read: its informer's LIST is refused,
    pyscheduler exits 1 naming the resource, and never starts scheduling (it would decide without that kind)."""
    await remove_rule(Removal("list", group, resource))
    run = await start_scheduler()

    async def exited() -> int | None:
        return run.process.poll()

    code = await wait_for(exited, what=f"pyscheduler to exit without {resource} reads", within=60, interval=0.2)
    log = run.log()
    assert code == 1, f"exit code {code}:\n{log}"
    line = next((x for x in log.splitlines() if "background task ended unexpectedly; exiting" in x), None)
    assert line is not None, log
    assert f"informer-{KIND_OF[resource]}" in line, line
    assert f'cannot list resource \\"{resource}\\"' in line and release.user in line, line
    assert "starting to schedule" not in log


KIND_OF = {
    "resourceclaims": "ResourceClaim",
    "resourceslices": "ResourceSlice",
    "deviceclasses": "DeviceClass",
    "devicetaintrules": "DeviceTaintRule",
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "persistentvolumes": "PersistentVolume",
    "storageclasses": "StorageClass",
    "csinodes": "CSINode",
    "csidrivers": "CSIDriver",
    "csistoragecapacities": "CSIStorageCapacity",
    "volumeattachments": "VolumeAttachment",
}


@pytest.mark.parametrize(
    ("resource", "claim_class", "pod"),
    [
        pytest.param("persistentvolumes", "local", "static", id="persistentvolumes"),
        pytest.param("persistentvolumeclaims", "provisioning", "dynamic", id="persistentvolumeclaims"),
    ],
)
async def test_without_volume_updates_prebind_fails_with_the_403(
    resource: str,
    claim_class: str,
    pod: str,
    start_scheduler: StartScheduler,
    remove_rule: Callable[[Removal], Awaitable[None]],
    release: Release,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """No update of PVs (static binding) or claims (selected-node for provisioning): PreBind's write is refused;
    the pod stays unbound and its FailedScheduling event and PodScheduled condition carry the 403."""
    await remove_rule(Removal("update", "", resource))
    run = await start_ready(start_scheduler)
    await create_node(f"{namespace}-n0")
    async with volume_objects(api_client, namespace) as vol:
        await vol.pvc("data", vol.local_class if claim_class == "local" else vol.provisioning_class)
        await create_pod(pod, spec={"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]})
        denial = f'cannot update resource "{resource}" in API group ""'
        event = await wait_for_event(api_client, namespace, pod, "FailedScheduling")
        note = event["note"]
        assert note.startswith('running PreBind plugin "VolumeBinding": '), note
        assert "forbidden" in note and denial in note and release.user in note, note
        cond = status_condition(await get_pod(api_client, namespace, pod), "PodScheduled")
        assert cond is not None and (cond["status"], cond["reason"]) == ("False", "SchedulerError"), cond
        assert denial in cond["message"]
        assert not (await get_pod(api_client, namespace, pod))["spec"].get("nodeName")
    await run.stop()


# --------------------------------------------------------------------------------------------- DynamicResources

DRA = "/apis/resource.k8s.io/v1"
DRA_DRIVER = "rbac.e2e.pyscheduler.io"


@contextlib.asynccontextmanager
async def dra_objects(api: ApiClient, namespace: str) -> AsyncIterator[None]:
    """A DeviceClass of the test's driver (naming extended resource example.com/rbac-gpu) and a ResourceSlice
    of two devices on `<namespace>-n0`; deleted afterwards with the claims of the namespace."""
    cls = f"{namespace}.{DRA_DRIVER}"
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": cls},
        "spec": {
            "selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}],
            "extendedResourceName": f"{namespace}.example.com/gpu",
        },
    }
    await request_json(api, "POST", f"{DRA}/deviceclasses", body=body)
    node = f"{namespace}-n0"
    slice_ = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{namespace}-gpus"},
        "spec": {
            "driver": DRA_DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}],
        },
    }
    await request_json(api, "POST", f"{DRA}/resourceslices", body=slice_)
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "gpu"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": cls}}]}},
    }
    await request_json(api, "POST", f"{DRA}/namespaces/{namespace}/resourceclaims", body=claim)
    try:
        yield
    finally:
        with contextlib.suppress(ApiException):
            claims = await request_json(api, "GET", f"{DRA}/namespaces/{namespace}/resourceclaims")
            for item in claims["items"]:
                path = f"{DRA}/namespaces/{namespace}/resourceclaims/{item['metadata']['name']}"
                with contextlib.suppress(ApiException):
                    await request_json(
                        api, "PATCH", path, body={"metadata": {"finalizers": None}}, content_type=MERGE_PATCH
                    )
                with contextlib.suppress(ApiException):
                    await request_json(api, "DELETE", path)
        for path in (f"{DRA}/resourceslices/{namespace}-gpus", f"{DRA}/deviceclasses/{cls}"):
            with contextlib.suppress(ApiException):
                await request_json(api, "DELETE", path)


def _claim_pod_spec() -> JSON:
    return {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}]}


async def test_dynamic_resources_run_as_the_chart_service_account(
    start_scheduler: StartScheduler,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """With the chart's rules a pod with a claim binds with its claim allocated and reserved (finalizer,
    status, the resourceclaims/binding check), and a pod asking an extended resource backed by DRA binds
    with the claim pyscheduler creates for it (and its pod status); no 403 anywhere."""
    run = await start_ready(start_scheduler)
    await create_node(f"{namespace}-n0")
    async with dra_objects(api_client, namespace):
        await create_pod("with-claim", spec=_claim_pod_spec())
        await create_pod(
            "extended", requests={f"{namespace}.example.com/gpu": "1"}, limits={f"{namespace}.example.com/gpu": "1"}
        )
        for name in ("with-claim", "extended"):
            pod = await wait_for_pod_bound(api_client, namespace, name, within=60)
            assert pod["spec"]["nodeName"] == f"{namespace}-n0"
        claim = await request_json(api_client, "GET", f"{DRA}/namespaces/{namespace}/resourceclaims/gpu")
        assert claim["status"]["allocation"]["devices"]["results"][0]["driver"] == DRA_DRIVER
        assert claim["status"]["reservedFor"][0]["name"] == "with-claim"
        extended = await get_pod(api_client, namespace, "extended")
        assert extended["status"]["extendedResourceClaimStatus"]["resourceClaimName"].startswith("extended-extended-")
    await asyncio.sleep(0.5)
    assert_never_forbidden(run.log())
    assert await run.stop() == 0


@pytest.mark.parametrize(
    ("verb", "resource", "pod", "denial"),
    [
        pytest.param(
            "update",
            "resourceclaims",
            "with-claim",
            'cannot update resource "resourceclaims" in API group',
            id="finalizer",
        ),
        pytest.param(
            "update",
            "resourceclaims/status",
            "with-claim",
            'cannot update resource "resourceclaims/status" in API group',
            id="status",
        ),
        pytest.param(
            "update",
            "resourceclaims/binding",
            "with-claim",
            'status.reservedFor requires resource="resourceclaims/binding", verb="update"',
            id="binding",
        ),
        pytest.param(
            "create", "resourceclaims", "extended", 'cannot create resource "resourceclaims" in API group', id="create"
        ),
    ],
)
async def test_without_a_claim_write_prebind_fails_with_the_403(
    verb: str,
    resource: str,
    pod: str,
    denial: str,
    start_scheduler: StartScheduler,
    remove_rule: Callable[[Removal], Awaitable[None]],
    release: Release,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
) -> None:
    """Each ResourceClaim write DynamicResources' PreBind makes, taken away: the API server refuses it, the pod
    stays unbound, and its FailedScheduling event and PodScheduled condition carry the refusal."""
    await remove_rule(Removal(verb, "resource.k8s.io", resource))
    run = await start_ready(start_scheduler)
    await create_node(f"{namespace}-n0")
    async with dra_objects(api_client, namespace):
        if pod == "extended":
            gpu = f"{namespace}.example.com/gpu"
            await create_pod(pod, requests={gpu: "1"}, limits={gpu: "1"})
        else:
            await create_pod(pod, spec=_claim_pod_spec())
        event = await wait_for_event(api_client, namespace, pod, "FailedScheduling")
        note = event["note"]
        assert note.startswith('running PreBind plugin "DynamicResources": '), note
        assert denial in note and "forbidden" in note.lower(), note
        cond = status_condition(await get_pod(api_client, namespace, pod), "PodScheduled")
        assert cond is not None and (cond["status"], cond["reason"]) == ("False", "SchedulerError"), cond
        assert not (await get_pod(api_client, namespace, pod))["spec"].get("nodeName")
    await run.stop()


# --------------------------------------------------------------------------------------------- without auth-delegator


async def test_without_the_auth_delegator_binding_metrics_fail_closed(
    release: Release, start_scheduler: StartScheduler, api_client: ApiClient, control_plane: ControlPlane
) -> None:
    """No `system:auth-delegator`: no TokenReview, so /metrics is 401 even for system:masters; health stays open."""
    binding = release.auth_delegator_binding
    path = f"{RBAC_API}/clusterrolebindings/{binding['metadata']['name']}"
    user = release.user
    await request_json(api_client, "DELETE", path)

    async def cannot_review() -> bool:
        return not await _can(api_client, user, "", "create", "authentication.k8s.io", "tokenreviews")

    try:
        await wait_for(cannot_review, what=f"{user} to lose create tokenreviews")
        run = await start_ready(start_scheduler)
        status, body = await run.request("GET", "/metrics", token=control_plane.token)
        assert status == 401, body
        assert '"reason":"Unauthorized"' in body
        line = await run.wait_for_log("unable to authenticate the request")
        assert 'cannot create resource \\"tokenreviews\\" in API group \\"authentication.k8s.io\\"' in line, line
        assert (await run.request("GET", "/healthz"))[0] == 200
        assert await run.stop() == 0
    finally:
        restored = {k: binding[k] for k in ("apiVersion", "kind", "metadata", "roleRef", "subjects")}
        await request_json(api_client, "POST", f"{RBAC_API}/clusterrolebindings", body=restored)

        async def can_review() -> bool:
            return await _can(api_client, user, "", "create", "authentication.k8s.io", "tokenreviews")

        await wait_for(can_review, what="the auth-delegator binding to be restored")


# --------------------------------------------------------------------------------------------- preemption


async def _preemption_setup(
    namespace: str, create_node: NodeFactory, create_pod: PodFactory, create_priority_class: PriorityClassFactory
) -> None:
    """A node full of one low-priority pod and a high-priority pod that needs its room."""
    low = await create_priority_class("rbac-low", 10)
    high = await create_priority_class("rbac-high", 1000)
    await create_node(f"{namespace}-n0", cpu="2")
    await create_pod(
        "victim",
        scheduler_name="nobody",
        node_name=f"{namespace}-n0",
        requests={"cpu": "2"},
        spec={"priorityClassName": low, "terminationGracePeriodSeconds": 30},
    )
    await create_pod("preemptor", requests={"cpu": "2"}, spec={"priorityClassName": high})


async def test_preemption_runs_as_the_chart_service_account(
    release: Release,
    start_scheduler: StartScheduler,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
    create_priority_class: PriorityClassFactory,
) -> None:
    """With the chart's rules: PDBs are read, the victim gets DisruptionTarget and is deleted, a Preempted
    event is written and the preemptor is nominated; no 403 anywhere."""
    run = await start_ready(start_scheduler)
    await _preemption_setup(namespace, create_node, create_pod, create_priority_class)

    async def victim_terminating() -> JSON | None:
        pod = await get_pod(api_client, namespace, "victim")
        return pod if pod["metadata"].get("deletionTimestamp") else None

    victim = await wait_for(victim_terminating, what="the victim to be deleted", within=30)
    cond = status_condition(victim, "DisruptionTarget")
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "PreemptionByScheduler"), cond
    event = await wait_for_event(api_client, namespace, "victim", "Preempted")
    assert event["note"].startswith("Preempted by pod ") and event["reportingController"] == SCHEDULER_NAME

    async def nominated() -> str | None:
        status = (await get_pod(api_client, namespace, "preemptor")).get("status") or {}
        return status.get("nominatedNodeName")

    assert await wait_for(nominated, what="the preemptor's nominatedNodeName", within=20) == f"{namespace}-n0"
    await asyncio.sleep(0.5)  # let any late write (and its error) reach the log
    assert_never_forbidden(run.log())
    assert await run.stop() == 0


async def test_without_pods_delete_the_victim_stays_and_the_log_says_why(
    start_scheduler: StartScheduler,
    remove_rule: Callable[[Removal], Awaitable[None]],
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
    create_priority_class: PriorityClassFactory,
) -> None:
    """No `pods` delete: the preemption's DELETE is refused (logged with the 403 message); nothing is deleted."""
    await remove_rule(Removal("delete", "", "pods"))
    run = await start_ready(start_scheduler)
    await _preemption_setup(namespace, create_node, create_pod, create_priority_class)
    line = await run.wait_for_log("Tried to preempted pod")
    assert (
        "status=403" in line
        and f'cannot delete resource \\"pods\\" in API group \\"\\" in the namespace \\"{namespace}\\"' in line
    ), line
    victim = await get_pod(api_client, namespace, "victim")
    assert not victim["metadata"].get("deletionTimestamp")
    assert not (await get_pod(api_client, namespace, "preemptor"))["spec"].get("nodeName")
    await run.stop()


async def test_without_pdb_reads_the_scheduler_exits_naming_poddisruptionbudgets(
    start_scheduler: StartScheduler, remove_rule: Callable[[Removal], Awaitable[None]], release: Release
) -> None:
    """No policy `poddisruptionbudgets` list/watch: preemption could not weigh budgets, so pyscheduler refuses
    to run (its informer's LIST is refused) and exits 1 naming the resource; it never schedules."""
    await remove_rule(Removal("list", "policy", "poddisruptionbudgets"))
    run = await start_scheduler()

    async def exited() -> int | None:
        return run.process.poll()

    code = await wait_for(exited, what="pyscheduler to exit without PDB reads", within=30, interval=0.2)
    log = run.log()
    assert code == 1, f"exit code {code}:\n{log}"
    assert f'User \\"{release.user}\\" cannot list resource \\"poddisruptionbudgets\\"' in log, log
    assert "starting to schedule" not in log


# --------------------------------------------------------------------------------------------- spreading reads


@pytest.mark.parametrize(
    ("group", "resource"),
    [
        pytest.param("", "services", id="services"),
        pytest.param("", "replicationcontrollers", id="replicationcontrollers"),
        pytest.param("apps", "replicasets", id="replicasets"),
        pytest.param("apps", "statefulsets", id="statefulsets"),
    ],
)
async def test_without_default_spreading_reads_the_scheduler_exits_naming_them(
    start_scheduler: StartScheduler,
    remove_rule: Callable[[Removal], Awaitable[None]],
    release: Release,
    group: str,
    resource: str,
) -> None:
    """PodTopologySpread's system default constraints read Services and controllers (helper.DefaultSelector):
    without one of them the informer's first LIST is refused and pyscheduler exits 1 naming the resource,
    instead of spreading pods with a selector missing that object."""
    await remove_rule(Removal("list", group, resource))
    run = await start_scheduler()

    async def exited() -> int | None:
        return run.process.poll()

    code = await wait_for(exited, what=f"pyscheduler to exit without {resource} reads", within=30, interval=0.2)
    log = run.log()
    assert code == 1, f"exit code {code}:\n{log}"
    line = next((x for x in log.splitlines() if "background task ended unexpectedly; exiting" in x), None)
    assert line is not None, log
    prefix = f"/apis/{group}/v1" if group else "/api/v1"
    assert f"LIST {prefix}/{resource} refused (HTTP 403)" in line, line
    assert f'User \\"{release.user}\\" cannot list resource \\"{resource}\\"' in line, line
    assert "starting to schedule" not in log
