"""`pyscheduler explain NS/NAME`: why a live pod is where it is, or why it is Pending, node by node.

With `--server URL` the running scheduler answers (GET URL/debug/explain/NS/NAME; it needs
`--enable-debug-handlers`) from its own cache. Its port is HTTPS with delegated authn/authz like
kube-scheduler's, so the request carries a bearer token: `--token`, else the token of the kubeconfig's user
(`--kubeconfig`, else $KUBECONFIG or ~/.kube/config), else the in-cluster service-account token; a
kubeconfig user with a client certificate presents it instead (useful with the scheduler's --client-ca-file).
The server's certificate is verified against `--certificate-authority` (or the system CAs);
`--insecure-skip-tls-verify` skips that, as it must for the self-signed certificate pyscheduler makes by
default. A plain `http://` server (`--insecure-serving`) gets no credential at all: a token is never sent in
clear. Without `--server`, the command LISTs nodes and pods from the API
server (kubeconfig or in-cluster config), loads them into an in-memory scheduler built from `--config`,
and explains the pod locally: it works with no scheduler running, from the API's view of the cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import ssl
import sys
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config import kube_config
from kubernetes_asyncio.config.config_exception import ConfigException

from scheduler.adapters.cluster.client import ApiError, ClientConfigError, KubeClient, transport_error_text
from scheduler.adapters.cluster.debug import pod_getter
from scheduler.adapters.cluster.watch import LIST_PAGE_SIZE, NODES_PATH, POD_FIELD_SELECTOR, PODS_PATH
from scheduler.adapters.memory import MemoryCluster
from scheduler.config.errors import ConfigError
from scheduler.config.types import SchedulerConfiguration
from scheduler.core.explain import Explanation, explain_pod, render_text
from scheduler.core.profile import build_scheduler
from scheduler.framework.objects import KINDS
from scheduler.framework.types import ParseError, parse_pod

EXIT_USAGE = 2
EXIT_FAILED = 1
HTTP_TIMEOUT = 30.0
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


class ExplainError(Exception):
    """The explanation could not be produced; the message is printed as `error: ...`, exit `code`."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


def split_pod_ref(ref: str) -> tuple[str, str]:
    """NAMESPACE/NAME -> (namespace, name); a bare NAME is in "default"."""
    namespace, sep, name = ref.partition("/")
    if not sep:
        return "default", namespace
    if not namespace or not name or "/" in name:
        raise ExplainError(f"invalid pod reference {ref!r}: expected NAMESPACE/NAME")
    return namespace, name


@dataclass(frozen=True)
class ServerAccess:
    """How to reach a running scheduler: a bearer token and/or client certificate, and how to verify it."""

    token: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    ca_file: str | None = None
    insecure_skip_tls_verify: bool = False

    def ssl_context(self) -> ssl.SSLContext:
        """The client TLS context (ExplainError naming the flag when the CA file cannot be used)."""
        try:
            ctx = ssl.create_default_context(cafile=self.ca_file or None)
        except (OSError, ssl.SSLError) as exc:
            raise ExplainError(f"--certificate-authority: {self.ca_file}: {exc}", EXIT_USAGE) from None
        if self.insecure_skip_tls_verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_file and self.key_file:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx


def kubeconfig_for_server(args: argparse.Namespace) -> str | None:
    """The kubeconfig to use, as kubectl finds it: --kubeconfig, else the first existing file of $KUBECONFIG,
    else ~/.kube/config; None when there is none (then the in-cluster service account is used)."""
    if args.kubeconfig:
        if not os.path.isfile(args.kubeconfig):
            raise ExplainError(f"--kubeconfig: {args.kubeconfig}: no such file", EXIT_USAGE)
        return str(args.kubeconfig)
    path = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    return next((p for p in path.split(os.pathsep) if p and os.path.isfile(p)), None)


def in_cluster_token() -> str | None:
    try:
        with open(SERVICE_ACCOUNT_TOKEN, encoding="utf-8") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


async def server_access(args: argparse.Namespace) -> ServerAccess:
    """--token, else the kubeconfig user's token or client certificate, else the in-cluster token."""
    ca_file = getattr(args, "certificate_authority", None)
    insecure = bool(getattr(args, "insecure_skip_tls_verify", False))
    token = getattr(args, "token", None)
    if token:
        return ServerAccess(token=token, ca_file=ca_file, insecure_skip_tls_verify=insecure)
    path = kubeconfig_for_server(args)
    if path is None:
        return ServerAccess(token=in_cluster_token(), ca_file=ca_file, insecure_skip_tls_verify=insecure)
    configuration = Configuration()
    try:
        await kube_config.load_kube_config(config_file=path, client_configuration=configuration, persist_config=False)
    except ConfigException as exc:
        raise ExplainError(f"kubeconfig {path}: {exc}") from exc
    value = await configuration.get_api_key_with_prefix("BearerToken")
    found = str(value or "").removeprefix("Bearer ") or None
    return ServerAccess(
        token=found,
        cert_file=None if found else (configuration.cert_file or None),
        key_file=None if found else (configuration.key_file or None),
        ca_file=ca_file,
        insecure_skip_tls_verify=insecure,
    )


async def from_server(
    server: str, namespace: str, name: str, output: str, access: ServerAccess | None = None
) -> str:
    """Ask a running scheduler (GET /debug/explain/NS/NAME) and return what to print."""
    url = f"{server.rstrip('/')}/debug/explain/{namespace}/{name}"
    fmt = "json" if output == "json" else "text"
    access = access or ServerAccess()
    secure = urlsplit(server).scheme == "https"
    headers = {"Authorization": f"Bearer {access.token}"} if secure and access.token else {}
    tls: ssl.SSLContext | bool = access.ssl_context() if secure else False
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=HTTP_TIMEOUT)) as session,
            session.get(url, params={"format": fmt}, headers=headers, ssl=tls) as resp,
        ):
            body = await resp.text()
            status = resp.status
    except aiohttp.ClientConnectorCertificateError as exc:
        raise ExplainError(
            f"{url}: the server's certificate is not trusted ({exc.certificate_error}); pass "
            "--certificate-authority, or --insecure-skip-tls-verify for pyscheduler's self-signed certificate"
        ) from exc
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ExplainError(
            f"cannot reach the scheduler at {server}: {transport_error_text(exc)} (is it running with "
            "--enable-debug-handlers, and is the URL's port its --port, 10259 by default?)"
        ) from exc
    if status == 401:
        how = "the token was not accepted" if headers else "no credential was sent"
        raise ExplainError(
            f"{url}: 401 Unauthorized: {how}; pass --token, or a --kubeconfig whose user has a token"
        )
    if status == 403:
        with contextlib.suppress(ValueError, AttributeError):
            body = str(json.loads(body).get("message") or body)
        raise ExplainError(f"{url}: 403 {body.strip()} (RBAC: get on nonResourceURLs /debug/*)")
    if status == 429:
        raise ExplainError(f"{url}: 429 {body.strip()}")
    if status == 404 and "not found" not in body:
        raise ExplainError(f"{url}: 404 (is the scheduler running with --enable-debug-handlers?)")
    if status != 200:
        detail = body.strip()
        if fmt == "json":
            with contextlib.suppress(ValueError, AttributeError):
                detail = str(json.loads(body).get("error") or detail)
        raise ExplainError(detail or f"{url}: HTTP {status}")
    if fmt == "json":
        return json.dumps(json.loads(body), indent=2)
    return body.rstrip("\n")


def no_kubeconfig_text() -> str:
    """Why no credentials were found, and what to pass (instead of the in-cluster loader's "Service host/port
    is not set.", which says nothing to someone at a shell)."""
    listed = os.environ.get("KUBECONFIG")
    where = (
        f"$KUBECONFIG names no existing file ({listed})"
        if listed
        else f"$KUBECONFIG is not set and {os.path.expanduser('~/.kube/config')} does not exist"
    )
    return (
        f"no kubeconfig: --kubeconfig is not given, {where}, and this is not a pod in a cluster "
        "(KUBERNETES_SERVICE_HOST is not set). Pass --kubeconfig PATH (or set KUBECONFIG), or explain a pod "
        "of a dump offline with `pyscheduler simulate DUMP.yaml --explain NS/NAME`"
    )


def api_failure_text(exc: ApiError, server: str, kubeconfig: str | None, context: str | None) -> str:
    """What went wrong talking to the API server, with where the address and credentials came from."""
    source = f"kubeconfig {kubeconfig}" if kubeconfig else "in-cluster configuration"
    if context:
        source += f", context {context}"
    if exc.status == 0:
        cause = exc.__cause__
        why = transport_error_text(cause) if cause is not None else exc.message
        return (
            f"cannot reach the API server {server} ({source}): {why}. Is the cluster running, and is this the "
            "right kubeconfig and context?"
        )
    if exc.status == 401:
        return (
            f"the API server {server} did not accept the credentials of {source} (401 Unauthorized): log in "
            "again, or pick another --context"
        )
    if exc.status == 403:
        return (
            f"the API server {server} refused ({source}): 403 {exc.message} (explain needs get on the pod and "
            "list on nodes, pods and the objects its plugins read)"
        )
    return f"the API server {server} answered {exc.status} {exc.reason}: {exc.message}"


async def explain_from_api(
    config: SchedulerConfiguration, kubeconfig: str | None, namespace: str, name: str, context: str | None = None
) -> Explanation:
    """LIST the cluster, load it into an in-memory scheduler and explain the pod against it."""
    kubeconfig = kubeconfig or (config.client_connection.kubeconfig or None)
    if kubeconfig is None and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        raise ExplainError(no_kubeconfig_text(), EXIT_USAGE)
    client = await KubeClient.create(
        kubeconfig,
        qps=config.client_connection.qps,
        burst=config.client_connection.burst,
        context=context,
    )
    cluster = MemoryCluster()
    scheduler = build_scheduler(cluster, config)
    cluster.attach(scheduler)
    kinds = sorted({kind for fwk in scheduler.profiles.values() for kind in fwk.object_kinds()})
    try:
        target = await pod_getter(client)(namespace, name)
        if target is None:
            raise ExplainError(f'pods "{name}" not found in namespace "{namespace}"')
        (nodes, _), (pods, _), *others = await asyncio.gather(
            client.list_all(NODES_PATH, limit=LIST_PAGE_SIZE),
            client.list_all(PODS_PATH, field_selector=POD_FIELD_SELECTOR, limit=LIST_PAGE_SIZE),
            *(client.list_all(KINDS[kind].list_path(), limit=LIST_PAGE_SIZE) for kind in kinds),
        )
    except ApiError as exc:
        raise ExplainError(api_failure_text(exc, str(client.configuration.host), kubeconfig, context)) from exc
    finally:
        await client.close()
    for kind, (objects, _) in zip(kinds, others, strict=True):
        scheduler.events.resync_objects(kind, list(objects))
    for node in nodes:
        cluster.apply_node(node)
    for obj in pods:
        cluster.apply_pod(obj)
    try:
        pod = parse_pod(target)
    except ParseError as exc:
        raise ExplainError(f"pod {namespace}/{name} cannot be parsed: {exc}") from exc
    fwk, snapshot = scheduler.explain_environment(pod.scheduler_name)
    return explain_pod(fwk, pod, snapshot)


async def explain_async(args: argparse.Namespace, config: SchedulerConfiguration) -> str:
    namespace, name = split_pod_ref(args.pod)
    if getattr(args, "namespace", None):
        if "/" in args.pod:
            raise ExplainError(f"give the namespace once: -n {args.namespace} or {args.pod}", EXIT_USAGE)
        namespace = str(args.namespace)
    output = str(args.output)
    if args.server:
        return await from_server(args.server, namespace, name, output, await server_access(args))
    kubeconfig = kubeconfig_for_server(args)
    expl = await explain_from_api(config, kubeconfig, namespace, name, getattr(args, "context", None))
    doc: Any = expl.to_json()
    if output == "json":
        return json.dumps(doc, indent=2)
    return render_text(expl, all_nodes=bool(getattr(args, "all_nodes", False)))


def explain_command(args: argparse.Namespace) -> int:
    """Print the explanation; exit 2 on a bad --config, 1 when the pod or the cluster cannot be read."""
    from scheduler.core.profile import load_config_or_report

    config = load_config_or_report(args.config, plugins=getattr(args, "plugin", None) or ())
    if config is None:
        return EXIT_USAGE
    try:
        text = asyncio.run(explain_async(args, config))
    except ExplainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    except ClientConfigError as exc:  # a missing, unreadable or malformed kubeconfig: fix the input
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as exc:  # a plugin that fails to start
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(text)
    return 0
