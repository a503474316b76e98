"""The container image, built from the repository's Dockerfile with podman and run the way the chart runs it.

Build (tests/image/build.py): a minimal Debian bookworm base made with mmdebstrap stands in for the public
python image (no registry is reachable here), the wheelhouse of the lock files stands in for PyPI, and
``podman build`` runs the Dockerfile unchanged. The first build is cold on a new checkout; a second one shows
what a rebuild costs. Both, the image size and the image's Python distributions and Debian packages are
printed.

Run: the chart is installed for real (leader election on, as it runs with several replicas), and its
Deployment's pod template is run by tests/image/kubelet.py as a kubelet would: the chart's args and env, its
security context (UID 65532, read-only root, all capabilities dropped, no privilege escalation), its
ConfigMap mounted at /etc/pyscheduler, /tmp as a size-limited tmpfs, its memory limit, and the chart
ServiceAccount's token, the cluster CA and KUBERNETES_SERVICE_HOST/PORT for in-cluster configuration. The
container must bind pods, answer the chart's probes, serve /metrics, hold and then release its Lease, and exit
0 on ``podman stop``. Containers are removed (and their conmon awaited) whatever happens.
"""

from __future__ import annotations

import os
import secrets
import ssl
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from tests.cluster.harness import ControlPlane, free_port
from tests.e2e.chart import ChartRelease
from tests.e2e.conftest import NodeFactory, PodFactory
from tests.e2e.kube import JSON, request_json, wait_for, wait_for_pod_bound
from tests.e2e.tools import require
from tests.image import inventory
from tests.image.build import BuildReport, build_image, missing_build_tools
from tests.image.kubelet import ApiServerAccess, PodRun, pod_run
from tests.image.podman import Container, Podman

pytestmark = [pytest.mark.e2e, pytest.mark.image, pytest.mark.timeout(900)]

TAG = "localhost/pyscheduler:e2e"
#: Test containers carry the test run's marker (set by scripts/test.sh), which its leftover check looks for.
CONTAINER_PREFIX = "pyscheduler-e2e-"
RUN_MARKER = os.environ.get("PYSCHEDULER_TEST_RUN", "manual")
#: The scheme of the scheduler's serving port: HTTPS with delegated authentication and authorization
#: (scheduler_get sends the admin token, a system:masters user).
SERVING_SCHEME = "https"


@dataclass(frozen=True)
class BuiltImage:
    first: BuildReport  # cold on a fresh checkout, else served from the caches
    rebuild: BuildReport  # the same build again right after: what a rebuild costs


@pytest.fixture(scope="module")
def podman() -> Iterator[Podman]:
    """The checkout's podman (skipped where podman cannot be had); removes leftovers of killed earlier runs."""
    require(missing_build_tools(), needed_for="the image test", root=True)
    podman = Podman()
    _remove_test_containers(podman)
    yield podman
    _remove_test_containers(podman)


def _remove_test_containers(podman: Podman) -> None:
    names = podman.run("ps", "--all", "--format", "{{.Names}}", "--filter", f"name=^{CONTAINER_PREFIX}").stdout
    for name in names.split():
        podman.container(name).remove()


@pytest.fixture(scope="module")
def image(podman: Podman) -> BuiltImage:
    """The Dockerfile built twice in a row (base, wheelhouse and layers cached under _build/image)."""
    first = build_image(podman, tag=TAG)
    rebuild = build_image(podman, tag=TAG)
    return BuiltImage(first, rebuild)


def test_image_holds_exactly_the_locked_dependencies(
    image: BuiltImage, podman: Podman, capsys: pytest.CaptureFixture[str]
) -> None:
    """/opt/venv holds requirements.lock's pins and pyscheduler, nothing else; the build report is printed."""
    from tests.image.test_lock import RUNTIME_LOCK, pins  # the lock's parser, shared with its own test

    distributions = inventory.python_distributions(podman, TAG)
    packages = inventory.debian_packages(podman, TAG)
    with capsys.disabled():
        kind = "cold" if image.first.cold else "cached inputs"
        print(f"\n--- image build ({kind}) ---\n{image.first.summary()}")
        print(f"--- rebuild right after ---\n{image.rebuild.summary()}")
        print("--- Python distributions in /opt/venv ---")
        print("\n".join(f"  {name}=={version}" for name, version in distributions))
        print(f"--- {len(packages)} Debian packages ---")
        print("  " + " ".join(f"{name}={version}" for name, version in packages))

    locked = {name: str(version) for name, (version, _) in pins(RUNTIME_LOCK).items()}
    installed = {_canonical(name): version for name, version in distributions}
    assert installed.pop("pyscheduler") == "0.1.0"
    assert installed == locked
    assert image.rebuild.image_id == image.first.image_id, "an unchanged tree must rebuild to the same image"
    config = podman.inspect_image(TAG)["Config"]
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["pyscheduler", "run"]
    assert config["Labels"]["org.opencontainers.image.base.name"] == image.first.base


def _canonical(name: str) -> str:
    from packaging.utils import canonicalize_name

    return str(canonicalize_name(name))


# --------------------------------------------------------------------------------------------- run like the chart


@pytest.fixture
async def release(kubeconfig: Path, api_client: ApiClient, tmp_path: Path) -> AsyncIterator[ChartRelease]:
    """The chart installed with leader election on, its serving port on a free host port (host network)."""
    suffix = secrets.token_hex(3)
    chart = ChartRelease(f"pyscheduler-image-{suffix}", f"e2e-image-chart-{suffix}", kubeconfig, tmp_path / "helm")
    chart.install(
        {
            "image": {"repository": TAG.rsplit(":", 1)[0], "tag": TAG.rsplit(":", 1)[1], "pullPolicy": "Never"},
            "leaderElection": {"enabled": True},
            "port": free_port(),
            "logLevel": 2,
        }
    )
    try:
        yield chart
    finally:
        try:
            chart.uninstall()
        finally:
            try:
                await request_json(api_client, "DELETE", f"/api/v1/namespaces/{chart.namespace}")
            except ApiException as e:
                if e.status != 404:
                    raise


@pytest.fixture
def container(podman: Podman) -> Iterator[Container]:
    """A container name of this test run; the container is removed afterwards, pass or fail."""
    handle = podman.container(f"{CONTAINER_PREFIX}{RUN_MARKER}-{secrets.token_hex(3)}")
    try:
        yield handle
    finally:
        handle.remove()


async def scheduler_get(port: int, path: str, token: str) -> tuple[int, str]:
    """GET one of the scheduler's endpoints on the loopback (the container shares the host's network)."""
    tls = ssl.create_default_context()
    tls.check_hostname = False
    tls.verify_mode = ssl.CERT_NONE  # a self-signed serving certificate, as kubelet probes accept
    url = f"{SERVING_SCHEME}://127.0.0.1:{port}{path}"
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session,
        session.get(url, headers={"Authorization": f"Bearer {token}"}, ssl=tls) as response,
    ):
        return response.status, await response.text()


def process_ids(pid: int) -> dict[str, list[int]]:
    """The real, effective, saved and file-system UIDs and GIDs of a process, from /proc on the host."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {
        key: [int(v) for v in line.split()[1:]] for line in lines for key in ("Uid", "Gid") if line.startswith(key)
    }


async def get_lease(api_client: ApiClient, namespace: str, name: str) -> JSON | None:
    try:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
        return await request_json(api_client, "GET", path)
    except ApiException as e:
        if e.status == 404:
            return None
        raise


async def test_image_runs_like_the_chart_deployment(
    image: BuiltImage,
    release: ChartRelease,
    container: Container,
    control_plane: ControlPlane,
    api_client: ApiClient,
    namespace: str,
    create_node: NodeFactory,
    create_pod: PodFactory,
    tmp_path: Path,
) -> None:
    """As the chart's pod: binds pods, answers probes and /metrics, leads, exits 0 on stop and frees the Lease."""
    deployment = release.only("Deployment")
    pod_name = f"{deployment['metadata']['name']}-{secrets.token_hex(5)}"
    api_port = int(control_plane.server.rsplit(":", 1)[1])
    access = ApiServerAccess(
        host="127.0.0.1",
        port=api_port,
        ca_pem=control_plane.serving_cert.read_text(encoding="utf-8"),
        token=await release.service_account_token(api_client),
    )
    run: PodRun = pod_run(
        deployment["spec"]["template"]["spec"],
        pod_name=pod_name,
        namespace=release.namespace,
        config_maps=release.config_maps(),
        api=access,
        work_dir=tmp_path / "pod",
    )
    config = next(iter(release.config_maps().values()))["config.yaml"]
    assert "leaderElect: true" in config, config
    lease_name = deployment["metadata"]["name"]  # the chart's default leaderElection.resourceName

    started = time.monotonic()
    container.start(TAG, run.options, run.args)
    readiness = run.probes["readiness"]
    assert readiness.scheme.lower() == SERVING_SCHEME, "the chart probes another scheme than the test speaks"

    async def ready() -> bool:
        state = container.state()
        if not state["Running"]:
            raise AssertionError(f"the container exited with {state['ExitCode']}:\n{container.logs()}")
        try:
            status, _ = await scheduler_get(readiness.port, readiness.path, control_plane.token)
        except (aiohttp.ClientError, TimeoutError):
            return False
        return status == 200

    try:
        await wait_for(ready, what="the container's readiness probe", within=60, interval=0.25)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{container.logs()}") from None
    print(f"\ncontainer ready after {time.monotonic() - started:.2f} s")

    # The scheduler runs as the chart's non-root UID (read off the host's /proc, not the container's claim).
    uids = process_ids(container.state()["Pid"])
    assert run.uid is not None and run.gid is not None, "the chart must set runAsUser and runAsGroup"
    assert uids == {"Uid": [run.uid] * 4, "Gid": [run.gid] * 4}, uids

    for i in range(2):
        await create_node(f"{namespace}-n{i}", cpu="4", memory="16Gi")
    for i in range(3):
        await create_pod(f"p{i}", requests={"cpu": "100m", "memory": "64Mi"})
    nodes = {f"{namespace}-n{i}" for i in range(2)}
    for i in range(3):
        pod = await wait_for_pod_bound(api_client, namespace, f"p{i}", within=30)
        assert pod["spec"]["nodeName"] in nodes

    liveness = run.probes["liveness"]
    status, body = await scheduler_get(liveness.port, "/healthz", control_plane.token)
    assert status == 200, body
    status, body = await scheduler_get(liveness.port, "/metrics", control_plane.token)
    assert status == 200, body
    attempts = [line for line in body.splitlines() if line.startswith("scheduler_schedule_attempts_total{")]
    scheduled = [line for line in attempts if 'result="scheduled"' in line]
    assert scheduled and float(scheduled[0].rsplit(" ", 1)[1]) >= 3, attempts

    lease = await get_lease(api_client, release.namespace, lease_name)
    assert lease is not None, f"no Lease {release.namespace}/{lease_name}"
    holder = lease["spec"].get("holderIdentity", "")
    assert holder.startswith(f"{pod_name}_"), f"the Lease is held by {holder!r}, not by the pod {pod_name}"

    code = container.stop(grace_seconds=run.grace_seconds)
    logs = container.logs()
    assert code == 0, f"exit code {code} after podman stop:\n{logs}"
    released = await get_lease(api_client, release.namespace, lease_name)
    assert released is not None and not released["spec"].get("holderIdentity"), released
    assert "released the leader lease" in logs, logs
    lowered = logs.lower()
    assert "forbidden" not in lowered and "traceback" not in lowered, logs
