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
import http.client
import json
import os
import ssl
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:  # imported when used: `explain --server` is one request and starts in a fraction of a second
    from scheduler.adapters.cluster.client import ApiError
    from scheduler.config.types import SchedulerConfiguration
    from scheduler.core.explain import Explanation

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
        if self.insecure_skip_tls_verify:  # nothing to verify against: no CA store to load
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        else:
            try:
                ctx = ssl.create_default_context(cafile=self.ca_file or None)
            except (OSError, ssl.SSLError) as exc:
                raise ExplainError(f"--certificate-authority: {self.ca_file}: {exc}", EXIT_USAGE) from None
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


def _simple_user_access(path: str, context: str | None) -> tuple[str | None, str | None, str | None] | None:
    """(token, cert file, key file) of the kubeconfig's user when it is a plain token, token file or client
    certificate and key files; None when the kubeconfig loader must read it (exec plugins, auth providers,
    inline certificate data, anything unusual), which costs ~0.5 s of imports."""
    from scheduler.config.documents import DocumentError, decode_text, load_all

    try:
        with open(path, "rb") as fh:
            docs = load_all(decode_text(fh.read(), path), path)
    except (OSError, DocumentError):
        return None
    config = docs[0] if len(docs) == 1 and isinstance(docs[0], dict) else None
    if config is None:
        return None
    name = context or config.get("current-context")
    contexts = {c.get("name"): c.get("context") for c in config.get("contexts") or [] if isinstance(c, dict)}
    ctx = contexts.get(name)
    if not isinstance(ctx, dict):
        return None
    users = {u.get("name"): u.get("user") for u in config.get("users") or [] if isinstance(u, dict)}
    user = users.get(ctx.get("user"))
    if not isinstance(user, dict) or not set(user) <= {"token", "tokenFile", "client-certificate", "client-key"}:
        return None
    base = os.path.dirname(os.path.abspath(path))
    token = user.get("token")
    if not token and user.get("tokenFile"):
        try:
            with open(os.path.join(base, str(user["tokenFile"])), encoding="utf-8") as fh:
                token = fh.read().strip()
        except OSError:
            return None
    if token:
        return str(token), None, None
    cert, key = user.get("client-certificate"), user.get("client-key")
    if isinstance(cert, str) and isinstance(key, str):
        return None, os.path.join(base, cert), os.path.join(base, key)
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
    simple = _simple_user_access(path, getattr(args, "context", None))
    if simple is not None:
        return ServerAccess(*simple, ca_file=ca_file, insecure_skip_tls_verify=insecure)
    from kubernetes_asyncio.client import Configuration
    from kubernetes_asyncio.config import kube_config
    from kubernetes_asyncio.config.config_exception import ConfigException

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


def http_get(url: str, headers: dict[str, str], tls: ssl.SSLContext | None) -> tuple[int, str]:
    """One GET with the standard library (status, body text), bounded by HTTP_TIMEOUT. Not aiohttp: a CLI
    that makes one request would spend more time importing it (and building its SSL contexts) than asking."""
    parts = urlsplit(url)
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=HTTP_TIMEOUT, context=tls)
    else:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=HTTP_TIMEOUT)
    try:
        conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace")
    finally:
        conn.close()


def request_error_text(exc: BaseException, url: str) -> str:
    """A failed request to the scheduler in words, as transport_error_text words aiohttp's (the client
    module is imported here, on the error path only: it brings kopf and aiohttp)."""
    from scheduler.adapters.cluster.client import _CONNECT_ERRNO_TEXT

    parts = urlsplit(url)
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    if isinstance(exc, OSError) and exc.errno in _CONNECT_ERRNO_TEXT:
        return f"cannot connect to {parts.hostname}:{parts.port}: {_CONNECT_ERRNO_TEXT[exc.errno]}"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    return str(exc) or type(exc).__name__


async def from_server(
    server: str, namespace: str, name: str, output: str, access: ServerAccess | None = None
) -> str:
    """Ask a running scheduler (GET /debug/explain/NS/NAME) and return what to print."""
    url = f"{server.rstrip('/')}/debug/explain/{namespace}/{name}"
    fmt = "json" if output == "json" else "text"
    access = access or ServerAccess()
    secure = urlsplit(server).scheme == "https"
    headers = {"Authorization": f"Bearer {access.token}"} if secure and access.token else {}
    tls = access.ssl_context() if secure else None
    try:
        status, body = await asyncio.to_thread(http_get, f"{url}?format={fmt}", headers, tls)
    except ssl.SSLCertVerificationError as exc:
        raise ExplainError(
            f"{url}: the server's certificate is not trusted ({exc.verify_message}); pass "
            "--certificate-authority, or --insecure-skip-tls-verify for pyscheduler's self-signed certificate"
        ) from exc
    except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, not HTTP
        raise ExplainError(
            f"cannot reach the scheduler at {server}: {request_error_text(exc, url)} (is it running with "
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
    from scheduler.adapters.cluster.client import transport_error_text
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
    """LIST the cluster, load it into an in-memory scheduler and explain the pod against it.

    Pods are applied page by page as they arrive (the next page is already requested), with the collector
    paused as in the scheduler's initial sync: most of the wait is the LIST itself."""
    from scheduler.adapters.cluster.client import ApiError, KubeClient
    from scheduler.adapters.cluster.debug import pod_getter
    from scheduler.adapters.cluster.watch import LIST_PAGE_SIZE, NODES_PATH, POD_FIELD_SELECTOR, PODS_PATH
    from scheduler.adapters.memory import MemoryCluster
    from scheduler.core import gc_policy
    from scheduler.core.explain import explain_pod
    from scheduler.core.profile import build_scheduler
    from scheduler.framework.objects import KINDS
    from scheduler.framework.types import ParseError, parse_pod

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

    async def pods() -> None:
        pages = client.list_pages(PODS_PATH, field_selector=POD_FIELD_SELECTOR, limit=LIST_PAGE_SIZE)
        async with contextlib.aclosing(pages) as it:
            async for items, _, _ in it:
                for obj in items:
                    cluster.apply_pod(obj)
                await asyncio.sleep(0)  # let the other LISTs read their answers

    gc_policy.tune()
    try:
        with gc_policy.bulk_load():
            target = await pod_getter(client)(namespace, name)
            if target is None:
                raise ExplainError(f'pods "{name}" not found in namespace "{namespace}"')
            # Nodes and the other kinds first (pods fit onto nodes), then the pods while they stream in.
            (nodes, _), *others = await asyncio.gather(
                client.list_all(NODES_PATH, limit=LIST_PAGE_SIZE),
                *(client.list_all(KINDS[kind].list_path(), limit=LIST_PAGE_SIZE) for kind in kinds),
            )
            for kind, (objects, _) in zip(kinds, others, strict=True):
                scheduler.events.resync_objects(kind, list(objects))
            for node in nodes:
                cluster.apply_node(node)
            del nodes, others
            await pods()
    except ApiError as exc:
        raise ExplainError(api_failure_text(exc, str(client.configuration.host), kubeconfig, context)) from exc
    finally:
        await client.close()
    try:
        pod = parse_pod(target)
    except ParseError as exc:
        raise ExplainError(f"pod {namespace}/{name} cannot be parsed: {exc}") from exc
    fwk, snapshot = scheduler.explain_environment(pod.scheduler_name)
    return explain_pod(fwk, pod, snapshot)


async def explain_async(args: argparse.Namespace, config: SchedulerConfiguration | None) -> str:
    """What to print: the running scheduler's answer with --server (no config needed), else a local one."""
    namespace, name = split_pod_ref(args.pod)
    if getattr(args, "namespace", None):
        if "/" in args.pod:
            raise ExplainError(f"give the namespace once: -n {args.namespace} or {args.pod}", EXIT_USAGE)
        namespace = str(args.namespace)
    output = str(args.output)
    if args.server:
        return await from_server(args.server, namespace, name, output, await server_access(args))
    from scheduler.core.explain import render_text

    assert config is not None
    kubeconfig = kubeconfig_for_server(args)
    expl = await explain_from_api(config, kubeconfig, namespace, name, getattr(args, "context", None))
    doc: Any = expl.to_json()
    if output == "json":
        return json.dumps(doc, indent=2)
    return render_text(expl, all_nodes=bool(getattr(args, "all_nodes", False)))


def explain_command(args: argparse.Namespace) -> int:
    """Print the explanation; exit 2 on a bad --config, 1 when the pod or the cluster cannot be read."""
    if args.server:  # one request to the scheduler: no configuration, framework or Kubernetes client to load
        try:
            text = asyncio.run(explain_async(args, None))
        except ExplainError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exc.code
        print(text)
        return 0
    from scheduler.adapters.cluster.client import ClientConfigError
    from scheduler.config.errors import ConfigError
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
