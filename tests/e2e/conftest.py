"""Fixtures for e2e tests against a real control plane (etcd + kube-apiserver + kube-controller-manager).

One control plane per test session (started on first use, stopped at the end of the session or on
SIGTERM/exit), a fresh namespace per test, and factories that create Ready nodes and pods and remove them
after the test. The binaries come from ``bash tests/cluster/build.sh``; without them every e2e test fails
(not skips) with that hint.

Nodes are cluster-scoped: tests run one after another, and each test's nodes are deleted after it, so a test
sees only its own nodes. Pods default to ``schedulerName: pyscheduler``, so an upstream kube-scheduler
running at the same time leaves them alone.

Set PYSCHEDULER_E2E_KEEP=1 to keep the control plane's work directory (logs, etcd data) after the session.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import new_client_from_config

from tests.cluster.harness import (
    REPO_ROOT,
    BinariesMissingError,
    ControlPlane,
    ControlPlaneConfig,
    ManagedProcess,
    free_port,
)
from tests.e2e import serving
from tests.e2e.kube import (
    JSON,
    OWNER_LABEL,
    REQUEST_TIMEOUT,
    list_pods,
    node_manifest,
    node_status,
    pod_manifest,
    request_json,
    single_replica_config,
    wait_for,
)


class NodeFactory(Protocol):
    """Creates a Ready (by default) node with the given capacity; it is deleted after the test."""

    async def __call__(
        self,
        name: str,
        *,
        zone: str | None = None,
        region: str | None = None,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, str]] = (),
        cpu: str = "4",
        memory: str = "32Gi",
        pods: int | str = 110,
        ephemeral_storage: str = "100Gi",
        extended: Mapping[str, str | int] | None = None,
        unschedulable: bool = False,
        ready: bool = True,
    ) -> JSON: ...


class PodFactory(Protocol):
    """Creates a pod (in the test's namespace unless ``namespace`` is given) and returns it as the API did."""

    async def __call__(
        self,
        name: str,
        *,
        namespace: str | None = None,
        scheduler_name: str = "pyscheduler",
        node_name: str | None = None,
        requests: Mapping[str, str] | None = None,
        limits: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        node_selector: Mapping[str, str] | None = None,
        affinity: Mapping[str, Any] | None = None,
        tolerations: Sequence[Mapping[str, Any]] = (),
        ports: Sequence[Mapping[str, Any]] = (),
        host_network: bool = False,
        spec: Mapping[str, Any] | None = None,
    ) -> JSON: ...


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """etcd + kube-apiserver + kube-controller-manager for the whole session."""
    plane = ControlPlane(
        ControlPlaneConfig(
            controller_manager=True, keep_work_dir=os.environ.get("PYSCHEDULER_E2E_KEEP") == "1"
        )
    )
    try:
        plane.start()
    except BinariesMissingError as e:
        pytest.fail(str(e), pytrace=False)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def kubeconfig(control_plane: ControlPlane) -> Path:
    """The admin kubeconfig (token, insecure-skip-tls-verify) of the session's control plane."""
    return control_plane.kubeconfig


@pytest.fixture
def kube_scheduler(control_plane: ControlPlane) -> Iterator[ManagedProcess]:
    """The upstream kube-scheduler (default profile) running for this test only."""
    process = control_plane.start_kube_scheduler()
    try:
        yield process
    finally:
        control_plane.stop_process("kube-scheduler")


@pytest.fixture
async def api_client(kubeconfig: Path) -> AsyncIterator[ApiClient]:
    """A kubernetes_asyncio ApiClient loaded from the session's kubeconfig, closed after the test."""
    client = await new_client_from_config(config_file=str(kubeconfig), persist_config=False)
    try:
        yield client
    finally:
        await client.close()


def _namespace_name(test_name: str) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", test_name.lower()).strip("-")[:40].rstrip("-")
    return f"e2e-{slug}-{secrets.token_hex(3)}"


@pytest.fixture
async def namespace(
    request: pytest.FixtureRequest, control_plane: ControlPlane, api_client: ApiClient
) -> AsyncIterator[str]:
    """A fresh namespace, ready for pods; afterwards it is deleted and its pods are force-deleted."""
    name = _namespace_name(request.node.name)
    await request_json(
        api_client,
        "POST",
        "/api/v1/namespaces",
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    if "kube-controller-manager" in control_plane.processes:
        # The ServiceAccount admission plugin refuses pods until the controller created "default".
        async def default_service_account() -> bool:
            try:
                await request_json(api_client, "GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")
            except ApiException as e:
                if e.status == 404:
                    return False
                raise
            return True

        await wait_for(default_service_account, what=f"ServiceAccount {name}/default")
    try:
        yield name
    finally:
        await _delete_namespace(api_client, name)


async def _delete_namespace(api_client: ApiClient, name: str) -> None:
    """Deletes the namespace and force-deletes its pods (no kubelet will ever confirm a graceful delete).

    Once the namespace is terminating no new object can be created in it, so when its pods are gone they
    stay gone, whatever the controllers still do; the namespace itself disappears later.
    """
    with contextlib.suppress(ApiException):
        await request_json(api_client, "DELETE", f"/api/v1/namespaces/{name}")

    async def no_pods_left() -> bool:
        if not await list_pods(api_client, name):
            return True
        await request_json(
            api_client, "DELETE", f"/api/v1/namespaces/{name}/pods", query={"gracePeriodSeconds": 0}
        )
        return False

    await wait_for(no_pods_left, what=f"the pods of namespace {name} to be deleted", within=60)


class PriorityClassFactory(Protocol):
    """Creates a PriorityClass (cluster-scoped; the name gets the test's namespace as suffix so parallel
    sessions never collide) and returns its name; it is deleted after the test."""

    async def __call__(self, name: str, value: int, *, preemption_policy: str | None = None) -> str: ...


@pytest.fixture
async def create_priority_class(api_client: ApiClient, namespace: str) -> AsyncIterator[PriorityClassFactory]:
    created: list[str] = []

    async def create(name: str, value: int, *, preemption_policy: str | None = None) -> str:
        full = f"{name}-{namespace}"
        body: JSON = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": full},
            "value": value,
        }
        if preemption_policy is not None:
            body["preemptionPolicy"] = preemption_policy
        await request_json(api_client, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", body=body)
        created.append(full)
        return full

    try:
        yield create
    finally:
        for full in created:
            with contextlib.suppress(ApiException):
                await request_json(api_client, "DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{full}")


class NamespaceFactory(Protocol):
    """Creates one more namespace for the test (ready for pods); deleted, pods force-deleted, afterwards."""

    async def __call__(self, label: str) -> str: ...


@pytest.fixture
async def create_namespace(
    request: pytest.FixtureRequest, control_plane: ControlPlane, api_client: ApiClient
) -> AsyncIterator[NamespaceFactory]:
    created: list[str] = []

    async def create(label: str) -> str:
        name = _namespace_name(f"{label}-{request.node.name}")
        await request_json(
            api_client,
            "POST",
            "/api/v1/namespaces",
            body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        )
        created.append(name)
        if "kube-controller-manager" in control_plane.processes:

            async def default_service_account() -> bool:
                try:
                    await request_json(api_client, "GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")
                except ApiException as e:
                    if e.status == 404:
                        return False
                    raise
                return True

            await wait_for(default_service_account, what=f"ServiceAccount {name}/default")
        return name

    try:
        yield create
    finally:
        for name in created:
            await _delete_namespace(api_client, name)


@pytest.fixture
async def create_node(api_client: ApiClient, namespace: str) -> AsyncIterator[NodeFactory]:
    """Factory for nodes; every node it created is deleted after the test."""
    created: list[str] = []

    async def create(
        name: str,
        *,
        zone: str | None = None,
        region: str | None = None,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, str]] = (),
        cpu: str = "4",
        memory: str = "32Gi",
        pods: int | str = 110,
        ephemeral_storage: str = "100Gi",
        extended: Mapping[str, str | int] | None = None,
        unschedulable: bool = False,
        ready: bool = True,
    ) -> JSON:
        manifest = node_manifest(
            name,
            zone=zone,
            region=region,
            labels={OWNER_LABEL: namespace, **(labels or {})},
            taints=taints,
            unschedulable=unschedulable,
            ready=ready,
        )
        # One request, status included, as a kubelet registers its node: a scheduler watching nodes never sees
        # it without capacity (a node seen between a create and a status update gave misleading events).
        manifest["status"] = node_status(
            cpu=cpu,
            memory=memory,
            pods=pods,
            ephemeral_storage=ephemeral_storage,
            extended=extended,
            ready=ready,
        )
        node = await request_json(api_client, "POST", "/api/v1/nodes", body=manifest)
        created.append(name)
        assert node.get("status", {}).get("allocatable"), f"the API server dropped the status of node {name}"
        return node

    try:
        yield create
    finally:
        for name in created:
            with contextlib.suppress(ApiException):
                await request_json(
                    api_client, "DELETE", f"/api/v1/nodes/{name}", request_timeout=REQUEST_TIMEOUT
                )


@pytest.fixture
def create_pod(api_client: ApiClient, namespace: str) -> PodFactory:
    """Factory for pods; they go with the test's namespace (pods put elsewhere are the caller's to delete)."""
    test_namespace = namespace

    async def create(
        name: str,
        *,
        namespace: str | None = None,
        scheduler_name: str = "pyscheduler",
        node_name: str | None = None,
        requests: Mapping[str, str] | None = None,
        limits: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        node_selector: Mapping[str, str] | None = None,
        affinity: Mapping[str, Any] | None = None,
        tolerations: Sequence[Mapping[str, Any]] = (),
        ports: Sequence[Mapping[str, Any]] = (),
        host_network: bool = False,
        spec: Mapping[str, Any] | None = None,
    ) -> JSON:
        manifest = pod_manifest(
            name,
            scheduler_name=scheduler_name,
            node_name=node_name,
            requests=requests,
            limits=limits,
            labels=labels,
            node_selector=node_selector,
            affinity=affinity,
            tolerations=tolerations,
            ports=ports,
            host_network=host_network,
            spec=spec,
        )
        target = namespace or test_namespace
        return await request_json(api_client, "POST", f"/api/v1/namespaces/{target}/pods", body=manifest)

    return create


# --------------------------------------------------------------------------------------------- pyscheduler


@dataclass
class PySchedulerProcess:
    """A running `pyscheduler run` subprocess, its HTTPS endpoint and a token it accepts (the admin's)."""

    process: ManagedProcess
    port: int
    token: str = ""

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.process.tail(80)

    async def request(
        self, method: str, path: str, *, data: str | None = None, token: str | None = None, retry_429: bool = False
    ) -> tuple[int, str]:
        """`method path` with this process's token (or `token`; "" for none); (status, body)."""
        return await serving.request(
            method, self.url + path, token=self.token if token is None else token, data=data, retry_429=retry_429
        )


class StartPyScheduler(Protocol):
    """Starts `pyscheduler run` (extra flags appended; `config` replaces the single-replica config; `env`
    adds environment variables) and waits for /readyz; SIGTERM at the end of the test must end it with 0."""

    async def __call__(
        self,
        *extra: str,
        config: Path | None = None,
        env: Mapping[str, str] | None = None,
        log_format: str = "text",
    ) -> PySchedulerProcess: ...


async def launch_pyscheduler(
    control_plane: ControlPlane,
    kubeconfig: Path,
    work_dir: Path,
    *extra: str,
    config: Path | None = None,
    env: Mapping[str, str] | None = None,
    log_format: str = "text",
    log_name: str = "pyscheduler",
) -> PySchedulerProcess:
    """Starts `pyscheduler run` (HTTPS on a free port, the admin's token for requests) and waits for /readyz;
    for fixtures of any scope (stop it with `stop_pyscheduler`)."""
    port = free_port()
    argv = [sys.executable, "-m", "scheduler", "run", "--kubeconfig", str(kubeconfig), "--port", str(port)]
    argv += ["--config", str(config or single_replica_config(work_dir))]
    argv += ["--bind-address", "127.0.0.1", "-v", "2", "--log-format", log_format, *extra]
    pythonpath = os.pathsep.join([str(REPO_ROOT), *([env["PYTHONPATH"]] if env and "PYTHONPATH" in env else [])])
    full_env = {**os.environ, **(env or {}), "PYTHONPATH": pythonpath}
    process = ManagedProcess("pyscheduler", argv, work_dir / f"{log_name}.log", env=full_env).start()
    handle = PySchedulerProcess(process, port, control_plane.token)
    begun = time.monotonic()

    async def ready() -> bool:
        if not handle.process.running():
            raise AssertionError(f"pyscheduler exited with {handle.process.poll()}:\n{handle.log()}")
        try:
            status, _ = await handle.request("GET", "/readyz", token="")
        except (aiohttp.ClientError, TimeoutError):
            return False
        return status == 200

    try:
        await wait_for(ready, what="pyscheduler /readyz", within=30)
    except BaseException:
        process.stop()
        raise
    print(f"pyscheduler ready after {time.monotonic() - begun:.2f} s (process start to caches synced)")
    return handle


async def stop_pyscheduler(handle: PySchedulerProcess) -> str | None:
    """SIGTERM, then up to 20 s for the process to end; None when it exited with 0, else what went wrong."""
    process = handle.process
    code = None
    if process.running() and process.pid is not None:
        os.kill(process.pid, signal.SIGTERM)

        async def exited() -> bool:
            return not process.running()

        with contextlib.suppress(AssertionError):
            await wait_for(exited, what="pyscheduler to exit", within=20, interval=0.1)
        code = process.poll()
    log_text = handle.log()
    process.stop()
    return None if code == 0 else f"code {code}:\n{log_text}"


@pytest.fixture
async def start_pyscheduler(
    control_plane: ControlPlane, kubeconfig: Path, tmp_path: Path
) -> AsyncIterator[StartPyScheduler]:
    """Factory of pyscheduler subprocesses (HTTPS on a free port, the admin's token for requests)."""
    started: list[PySchedulerProcess] = []

    async def start(
        *extra: str,
        config: Path | None = None,
        env: Mapping[str, str] | None = None,
        log_format: str = "text",
    ) -> PySchedulerProcess:
        handle = await launch_pyscheduler(
            control_plane,
            kubeconfig,
            tmp_path,
            *extra,
            config=config,
            env=env,
            log_format=log_format,
            log_name=f"pyscheduler-{len(started)}",
        )
        started.append(handle)
        return handle

    try:
        yield start
    finally:
        failures = [failure for handle in started if (failure := await stop_pyscheduler(handle)) is not None]
        assert not failures, f"pyscheduler did not exit cleanly on SIGTERM: {failures}"


@pytest.fixture
async def pyscheduler(start_pyscheduler: StartPyScheduler) -> PySchedulerProcess:
    """pyscheduler as a subprocess with the single-replica config, ready (caches synced)."""
    return await start_pyscheduler()


async def list_events(api_client: ApiClient, namespace: str) -> list[JSON]:
    answer = await request_json(api_client, "GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
    items: list[JSON] = answer["items"]
    return items


async def wait_for_event(api_client: ApiClient, namespace: str, pod_name: str, reason: str) -> JSON:
    async def probe() -> JSON | None:
        for event in await list_events(api_client, namespace):
            if event.get("reason") == reason and event["regarding"].get("name") == pod_name:
                return event
        return None

    return await wait_for(probe, what=f"a {reason} event for {namespace}/{pod_name}", within=20)
