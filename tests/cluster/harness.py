"""A real Kubernetes control plane on loopback, for tests and benchmarks.

Owns the processes: etcd and kube-apiserver always, kube-controller-manager and the upstream kube-scheduler
on request, all built by ``bash tests/cluster/build.sh`` into ``_build/bin/<release>/``. Every process runs in
its own process group with its log in the control plane's work directory, and every process started here is
stopped again: by ``ControlPlane.stop()`` / the context manager, by an ``atexit`` hook, and on SIGTERM/SIGHUP
(the handler stops the processes, then lets the signal do what it would have done). When the Python process
is killed outright, the children get SIGKILL from the kernel (``PR_SET_PDEATHSIG``).

Example::

    with ControlPlane(ControlPlaneConfig(controller_manager=True)) as cp:
        print(cp.kubeconfig)  # token + insecure-skip-tls-verify, usable by kubectl, helm, kubernetes_asyncio
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
VERSION_FILE = Path(__file__).with_name("VERSION")
BUILD_COMMAND = "bash tests/cluster/build.sh"

#: kube-controller-manager controllers the e2e tests need. Not nodelifecycle: without kubelets it would taint
#: every node NotReady after the grace period. serviceaccount creates each namespace's "default"
#: ServiceAccount, which the ServiceAccount admission plugin requires before a pod can be created.
#: persistentvolume-binder is the PV controller: it binds claims to PVs (the ones a scheduler pre-bound, and
#: Immediate claims), and hands WaitForFirstConsumer claims with a selected node to their provisioner.
#: resourceclaim-controller makes a pod's ResourceClaims from its ResourceClaimTemplates (and records them in
#: the pod's status), takes finished pods out of reservedFor and deletes the claims made for them.
DEFAULT_CONTROLLERS: tuple[str, ...] = (
    "daemonset",
    "deployment",
    "replicaset",
    "statefulset",
    "persistentvolume-binder",
    "resourceclaim-controller",
    "job",
    "garbagecollector",
    "namespace",
    "serviceaccount",
    "serviceaccount-token",
    "root-ca-cert-publisher",
)

ADMIN_USER = "admin"
CLUSTER_NAME = "pyscheduler-e2e"


class ControlPlaneError(RuntimeError):
    """The control plane could not be started (the message includes the tail of the failing process's log)."""


class BinariesMissingError(ControlPlaneError):
    """The control-plane binaries have not been built."""


def pinned_release() -> str:
    """The Kubernetes release pinned in tests/cluster/VERSION, e.g. ``v1.37.2``."""
    return VERSION_FILE.read_text().strip()


def default_bin_dir() -> Path:
    """Where build.sh puts the binaries: $PYSCHEDULER_BIN_DIR, else _build/bin/<release>/."""
    override = os.environ.get("PYSCHEDULER_BIN_DIR")
    return Path(override) if override else REPO_ROOT / "_build" / "bin" / pinned_release()


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports on 127.0.0.1 that nothing listens on right now."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    return free_ports(1)[0]


def log_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file ('' if it does not exist)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


# --- process ownership -------------------------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1
_registry_lock = threading.RLock()
_live_processes: dict[int, ManagedProcess] = {}
_live_planes: dict[int, ControlPlane] = {}
_hooks_installed = False
_previous_handlers: dict[int, Callable[[int, FrameType | None], Any] | int | None] = {}

try:
    _libc: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - not Linux
    _libc = None


def _die_with_parent() -> None:
    """Runs in the child between fork and exec: SIGKILL it when the thread that started it dies."""
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def stop_everything() -> None:
    """Stops every control plane and process started by this module that is still running."""
    with _registry_lock:
        planes = list(_live_planes.values())
        processes = list(_live_processes.values())
    for plane in planes:
        plane.stop()
    for process in processes:
        process.stop()


def _on_terminating_signal(signum: int, frame: FrameType | None) -> None:
    stop_everything()
    previous = _previous_handlers.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _install_hooks() -> None:
    """atexit always; SIGTERM/SIGHUP handlers when in the main thread and the signal is not ignored."""
    global _hooks_installed
    with _registry_lock:
        if _hooks_installed:
            return
        _hooks_installed = True
        atexit.register(stop_everything)
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGTERM, signal.SIGHUP):
            previous = signal.getsignal(signum)
            if previous == signal.SIG_IGN:
                continue
            _previous_handlers[signum] = previous
            signal.signal(signum, _on_terminating_signal)


class ManagedProcess:
    """One child process in its own process group, its output in a log file; ``stop()`` ends the group."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None):
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self._env = dict(env) if env is not None else None
        self._popen: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen is not None else None

    def start(self) -> ManagedProcess:
        _install_hooks()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self._log.write(f"$ {' '.join(self.argv)}\n".encode())
        self._log.flush()
        main_thread = threading.current_thread() is threading.main_thread()
        with _registry_lock:
            self._popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=self._env,
                start_new_session=True,
                # PDEATHSIG fires when the starting *thread* exits: only safe from the main thread.
                preexec_fn=_die_with_parent if main_thread else None,
            )
            _live_processes[id(self)] = self
        return self

    def poll(self) -> int | None:
        """None while running, else the exit code."""
        return self._popen.poll() if self._popen is not None else None

    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def tail(self, lines: int = 40) -> str:
        return log_tail(self.log_path, lines)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to the process group, SIGKILL after ``timeout`` seconds.

        Idempotent, and re-entrant: a signal handler may call it while it is already running.
        """
        popen = self._popen
        if popen is not None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(popen.pid, sig)
                try:
                    popen.wait(timeout=timeout)
                    break
                except subprocess.TimeoutExpired:
                    continue
            # The whole group: the leader may be gone while something it started is still there.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(popen.pid, signal.SIGKILL)
        with _registry_lock:
            self._popen = None
            _live_processes.pop(id(self), None)
            log, self._log = self._log, None
        if log is not None:
            log.close()

    def __repr__(self) -> str:
        return f"ManagedProcess({self.name!r}, pid={self.pid}, log={str(self.log_path)!r})"


# --- the control plane -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ControlPlaneConfig:
    """What to start and how. Defaults suit the e2e tests; benchmarks raise the client limits."""

    bin_dir: Path | None = None  # default: default_bin_dir()
    work_dir: Path | None = None  # default: a new temporary directory, removed by stop()
    keep_work_dir: bool = False  # keep logs and data after stop() (always kept when start() fails)
    controller_manager: bool = False
    controllers: tuple[str, ...] = DEFAULT_CONTROLLERS
    kube_scheduler: bool = False
    scheduler_qps: float = 50.0  # kube-scheduler's own defaults
    scheduler_burst: int = 100
    max_requests_inflight: int = 4000
    max_mutating_requests_inflight: int = 2000
    startup_timeout: float = 120.0
    verbosity: int = 0  # --v of the Kubernetes components
    apiserver_args: tuple[str, ...] = ()


class ControlPlane:
    """etcd + kube-apiserver (+ kube-controller-manager, + kube-scheduler) on free loopback ports."""

    def __init__(self, config: ControlPlaneConfig | None = None):
        self.config = config or ControlPlaneConfig()
        self.bin_dir = self.config.bin_dir or default_bin_dir()
        self.release = pinned_release()
        self.token = secrets.token_hex(24)
        self.processes: dict[str, ManagedProcess] = {}
        self._work_dir: Path | None = None
        self._owns_work_dir = False
        self._apiserver_port: int | None = None
        self._etcd_port: int | None = None
        # How to tell each process is ready again after a restart: (url, token, accept).
        self._probes: dict[str, tuple[str, str | None, Callable[[bytes], bool] | None]] = {}

    # -- public surface --

    @property
    def work_dir(self) -> Path:
        if self._work_dir is None:
            raise ControlPlaneError("the control plane has not been started")
        return self._work_dir

    @property
    def log_dir(self) -> Path:
        return self.work_dir / "logs"

    @property
    def kubeconfig(self) -> Path:
        return self.work_dir / "kubeconfig"

    @property
    def server(self) -> str:
        if self._apiserver_port is None:
            raise ControlPlaneError("the control plane has not been started")
        return f"https://127.0.0.1:{self._apiserver_port}"

    @property
    def etcd_endpoint(self) -> str:
        if self._etcd_port is None:
            raise ControlPlaneError("the control plane has not been started")
        return f"http://127.0.0.1:{self._etcd_port}"

    @property
    def service_account_key(self) -> Path:
        return self.work_dir / "sa.key"

    @property
    def serving_cert(self) -> Path:
        """The apiserver's self-signed serving certificate (its own CA follows it in the file)."""
        return self.work_dir / "pki" / "apiserver.crt"

    def binary(self, name: str) -> Path:
        return self.bin_dir / name

    def check_binaries(self, names: Sequence[str]) -> None:
        missing = [n for n in names if not os.access(self.binary(n), os.X_OK)]
        if missing:
            raise BinariesMissingError(
                f"control-plane binaries missing in {self.bin_dir}: {', '.join(missing)}. "
                f"Build them with `{BUILD_COMMAND}` (Kubernetes {self.release}; ~15-25 min cold on 2 cores)."
            )

    def start(self) -> ControlPlane:
        """Starts everything configured and waits until it is ready; on failure stops what it started."""
        needed = ["etcd", "kube-apiserver"]
        if self.config.controller_manager:
            needed.append("kube-controller-manager")
        if self.config.kube_scheduler:
            needed.append("kube-scheduler")
        self.check_binaries(needed)
        _install_hooks()
        with _registry_lock:
            _live_planes[id(self)] = self
        if self.config.work_dir is not None:
            self._work_dir = self.config.work_dir
            self._work_dir.mkdir(parents=True, exist_ok=True)
        else:
            self._work_dir = Path(tempfile.mkdtemp(prefix="pyscheduler-cp-"))
            self._owns_work_dir = True
        try:
            self._start_etcd()
            self._start_apiserver()
            if self.config.controller_manager:
                self.start_controller_manager()
            if self.config.kube_scheduler:
                self.start_kube_scheduler(qps=self.config.scheduler_qps, burst=self.config.scheduler_burst)
        except BaseException:
            self._stop_processes()
            self._owns_work_dir = False  # keep the logs of a failed start for the error message's reader
            with _registry_lock:
                _live_planes.pop(id(self), None)
            raise
        return self

    def stop(self) -> None:
        """Stops every process (newest first) and removes the work directory unless asked to keep it.

        Re-entrant: the SIGTERM handler calls it again if the signal arrives while it runs.
        """
        self._stop_processes()
        if self._owns_work_dir and not self.config.keep_work_dir and self._work_dir is not None:
            shutil.rmtree(self._work_dir, ignore_errors=True)
            self._owns_work_dir = False
        with _registry_lock:
            _live_planes.pop(id(self), None)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start_controller_manager(self, controllers: Sequence[str] | None = None) -> ManagedProcess:
        """Starts kube-controller-manager (leader election off) and waits for its /healthz."""
        self.check_binaries(["kube-controller-manager"])
        port = free_port()
        argv = [
            str(self.binary("kube-controller-manager")),
            f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={self.work_dir / 'kube-controller-manager-pki'}",
            f"--service-account-private-key-file={self.service_account_key}",
            f"--root-ca-file={self.serving_cert}",
            f"--controllers={','.join(controllers or self.config.controllers)}",
            f"--v={self.config.verbosity}",
        ]
        process = self._launch("kube-controller-manager", argv)
        self._wait_ready(process, f"https://127.0.0.1:{port}/healthz")
        return process

    def start_kube_scheduler(
        self,
        *,
        qps: float = 50.0,
        burst: int = 100,
        extra_args: Sequence[str] = (),
        profiles: Sequence[Mapping[str, Any]] | None = None,
        kubeconfig: Path | None = None,
    ) -> ManagedProcess:
        """Starts the upstream kube-scheduler (default profile, leader election off) and waits for /readyz.

        `profiles` replaces the configuration's profiles (e.g. to give VolumeBinding a short
        bindTimeoutSeconds through pluginConfig). `kubeconfig` replaces the admin kubeconfig for the
        scheduler's own client (e.g. one that reaches the API server through a fault proxy). Stop it with
        ``stop_process("kube-scheduler")`` to run another scheduler against the same cluster.
        """
        self.check_binaries(["kube-scheduler"])
        port = free_port()
        config = self.work_dir / "kube-scheduler.yaml"
        document: dict[str, Any] = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(kubeconfig or self.kubeconfig), "qps": qps, "burst": burst},
            "leaderElection": {"leaderElect": False},
        }
        if profiles is not None:
            document["profiles"] = [dict(p) for p in profiles]
        config.write_text(yaml.safe_dump(document))
        argv = [
            str(self.binary("kube-scheduler")),
            f"--config={config}",
            f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={self.work_dir / 'kube-scheduler-pki'}",
            f"--v={self.config.verbosity}",
            *extra_args,
        ]
        process = self._launch("kube-scheduler", argv)
        self._wait_ready(process, f"https://127.0.0.1:{port}/readyz")
        return process

    def stop_process(self, name: str) -> None:
        """Stops one component (e.g. "kube-scheduler"); a no-op if it is not running."""
        process = self.processes.get(name)
        if process is not None:
            process.stop()
            self.processes.pop(name, None)

    def signal_process(self, name: str, sig: signal.Signals) -> None:
        """Send a signal to a component's process group (SIGSTOP/SIGCONT to freeze etcd, SIGKILL, ...)."""
        process = self.processes[name]
        if process.pid is None:
            raise ControlPlaneError(f"{name} is not running")
        os.killpg(process.pid, sig)

    def kill_process(self, name: str) -> None:
        """SIGKILL a component (no shutdown at all, as a crashed node would); `restart_process` brings it back."""
        process = self.processes[name]
        if process.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGCONT)  # a stopped process must not stay stopped
                os.killpg(process.pid, signal.SIGKILL)
        process.stop(timeout=10)

    def restart_process(self, name: str) -> ManagedProcess:
        """Start a component again with the same arguments (same ports, same etcd data) and wait until ready.

        For kube-apiserver and etcd, whose readiness probes are known; the old process must be gone first
        (`kill_process`).
        """
        old = self.processes[name]
        if old.running():
            raise ControlPlaneError(f"{name} is still running; kill it first")
        url, token, accept = self._probes[name]
        self.processes.pop(name)
        process = self._launch(name, old.argv)
        self._wait_ready(process, url, token=token, accept=accept)
        return process

    def describe(self) -> str:
        lines = [
            f"Kubernetes {self.release} control plane",
            f"  server:     {self.server}",
            f"  kubeconfig: {self.kubeconfig}",
            f"  logs:       {self.log_dir}",
        ]
        lines += [f"  {name}: pid {p.pid}" for name, p in self.processes.items()]
        return "\n".join(lines)

    # -- internals --

    def _launch(self, name: str, argv: Sequence[str]) -> ManagedProcess:
        if name in self.processes:
            raise ControlPlaneError(f"{name} is already running")
        process = ManagedProcess(name, argv, self.log_dir / f"{name}.log").start()
        self.processes[name] = process
        return process

    def _stop_processes(self) -> None:
        for name in reversed(list(self.processes)):
            self.stop_process(name)

    def _start_etcd(self) -> None:
        client, peer = free_ports(2)
        self._etcd_port = client
        argv = [
            str(self.binary("etcd")),
            "--name=pyscheduler-e2e",
            f"--data-dir={self.work_dir / 'etcd'}",
            f"--listen-client-urls=http://127.0.0.1:{client}",
            f"--advertise-client-urls=http://127.0.0.1:{client}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=pyscheduler-e2e=http://127.0.0.1:{peer}",
            "--unsafe-no-fsync",
            "--quota-backend-bytes=8589934592",
            "--log-level=warn",
        ]
        process = self._launch("etcd", argv)
        self._probes["etcd"] = (f"{self.etcd_endpoint}/health", None, _etcd_healthy)
        self._wait_ready(process, f"{self.etcd_endpoint}/health", accept=_etcd_healthy)

    def _start_apiserver(self) -> None:
        work = self.work_dir
        _generate_rsa_key(self.service_account_key)
        tokens = work / "tokens.csv"
        tokens.write_text(f'{self.token},{ADMIN_USER},{ADMIN_USER}-uid,"system:masters"\n')
        tokens.chmod(0o600)
        self._apiserver_port = free_port()
        self._write_kubeconfig()
        # TaintNodesByCondition taints every new node node.kubernetes.io/not-ready:NoSchedule, and only the
        # node-lifecycle controller (not run: no kubelets) would lift it once the node reports Ready.
        disabled = ["TaintNodesByCondition"]
        if not self.config.controller_manager:
            # It needs each namespace's "default" ServiceAccount, which only the controller-manager creates.
            disabled.append("ServiceAccount")
        argv = [
            str(self.binary("kube-apiserver")),
            f"--etcd-servers={self.etcd_endpoint}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self._apiserver_port}",
            f"--cert-dir={work / 'pki'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={self.service_account_key}",
            f"--service-account-signing-key-file={self.service_account_key}",
            "--service-cluster-ip-range=10.0.0.0/24",
            f"--token-auth-file={tokens}",
            "--authorization-mode=RBAC",
            f"--disable-admission-plugins={','.join(disabled)}",
            "--allow-privileged=true",
            # Without it the apiserver keeps trying to publish 127.0.0.1 as the kubernetes Service's endpoint.
            "--endpoint-reconciler-type=none",
            f"--max-requests-inflight={self.config.max_requests_inflight}",
            f"--max-mutating-requests-inflight={self.config.max_mutating_requests_inflight}",
            f"--v={self.config.verbosity}",
            *self.config.apiserver_args,
        ]
        process = self._launch("kube-apiserver", argv)
        self._probes["kube-apiserver"] = (f"{self.server}/readyz", self.token, None)
        self._wait_ready(process, f"{self.server}/readyz", token=self.token)

    def _write_kubeconfig(self) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": CLUSTER_NAME, "cluster": {"server": self.server, "insecure-skip-tls-verify": True}}
            ],
            "users": [{"name": ADMIN_USER, "user": {"token": self.token}}],
            "contexts": [{"name": CLUSTER_NAME, "context": {"cluster": CLUSTER_NAME, "user": ADMIN_USER}}],
            "current-context": CLUSTER_NAME,
        }
        self.kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))
        self.kubeconfig.chmod(0o600)

    def _wait_ready(
        self,
        process: ManagedProcess,
        url: str,
        *,
        token: str | None = None,
        accept: Callable[[bytes], bool] | None = None,
    ) -> None:
        """Polls ``url`` until it answers 200 (and ``accept(body)``); fails fast if the process exits."""
        deadline = time.monotonic() + self.config.startup_timeout
        tls = ssl.create_default_context()
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
        last = "no answer yet"
        while True:
            code = process.poll()
            if code is not None:
                raise ControlPlaneError(
                    f"{process.name} exited with code {code} before {url} was ready.\n"
                    f"--- last lines of {process.log_path} ---\n{process.tail()}"
                )
            try:
                with urllib.request.urlopen(request, timeout=5, context=tls) as response:
                    body: bytes = response.read()
                    if accept is None or accept(body):
                        return
                    last = body.decode(errors="replace")[:500]
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code}: {e.read().decode(errors='replace')[:500]}"
            except (urllib.error.URLError, OSError) as e:
                last = str(e)
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"{process.name} not ready at {url} after {self.config.startup_timeout:.0f} s "
                    f"(last answer: {last}).\n--- last lines of {process.log_path} ---\n{process.tail()}"
                )
            time.sleep(0.25)


def _etcd_healthy(body: bytes) -> bool:
    try:
        return bool(json.loads(body).get("health") == "true")
    except ValueError:
        return False


def _generate_rsa_key(path: Path) -> None:
    """An RSA private key (PEM) for signing and verifying service-account tokens, made by the openssl CLI."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise ControlPlaneError("the openssl command is needed to generate the service-account key")
    result = subprocess.run(
        [openssl, "genrsa", "-out", str(path), "2048"], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise ControlPlaneError(f"openssl genrsa failed: {result.stderr.strip()}")
    path.chmod(0o600)
