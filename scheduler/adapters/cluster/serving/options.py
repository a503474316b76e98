"""The serving flags of `pyscheduler run`, checked once at startup into what `run()` serves with.

  --bind-address                        default 0.0.0.0 (all interfaces), as kube-scheduler
  --port                                default 10259, kube-scheduler's secure port
  --tls-cert-file, --tls-private-key-file
                                        the serving certificate (chain) and key; both or neither. Without
                                        them a self-signed pair is made in memory at each start
  --client-ca-file                      also accept client certificates signed by this CA (CN = user, O = groups)
  --authorization-always-allow-paths    open to anyone (default /healthz,/readyz,/livez); a trailing * makes a
                                        prefix; an empty value opens nothing
  --insecure-serving                    plain HTTP with no authentication or authorization, for local
                                        debugging only; refuses to combine with the TLS flags

A flag that cannot be used (unreadable or malformed certificate, key or CA file, a key that does not match
its certificate, a malformed path, a bind address that is not an IP) raises ServingConfigError naming the
flag; `pyscheduler run` prints it as one `error: --flag: ...` line and exits 2 before it contacts the API.
"""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass

from scheduler.adapters.cluster.serving.authz import DEFAULT_ALWAYS_ALLOW_PATHS, PathMatcher
from scheduler.adapters.cluster.serving.certs import (
    CertificateError,
    CertKeyPair,
    check_client_ca,
    read_pair,
    self_signed_pair,
    server_context,
)

DEFAULT_BIND_ADDRESS = "0.0.0.0"
DEFAULT_PORT = 10259


class ServingConfigError(ValueError):
    """A serving flag is unusable; the message starts with the flag's name."""


@dataclass(frozen=True)
class ServingOptions:
    """The serving flags as given on the command line."""

    bind_address: str = DEFAULT_BIND_ADDRESS
    port: int = DEFAULT_PORT
    insecure: bool = False
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    client_ca_file: str | None = None
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS


@dataclass(frozen=True)
class Serving:
    """What `run()` serves with: where, the TLS context (None: plain HTTP, unguarded) and the open paths."""

    bind_address: str
    port: int
    ssl_context: ssl.SSLContext | None
    always_allow: PathMatcher
    self_signed: bool = False
    client_certificates: bool = False

    @property
    def secure(self) -> bool:
        return self.ssl_context is not None

    @property
    def scheme(self) -> str:
        return "https" if self.secure else "http"


def split_paths(value: str) -> tuple[str, ...]:
    """The comma-separated value of --authorization-always-allow-paths ("" is no path at all)."""
    if not value.strip():
        return ()
    return tuple(part.strip() for part in value.split(","))


def prepare_serving(options: ServingOptions) -> Serving:
    """Check every serving flag and build the TLS context (generating the self-signed pair if needed)."""
    try:
        ipaddress.ip_address(options.bind_address)
    except ValueError:
        raise ServingConfigError(f"--bind-address: {options.bind_address!r} is not an IP address") from None
    if not 0 <= options.port <= 65535:
        raise ServingConfigError(f"--port: {options.port} is not a TCP port (0-65535)")
    try:
        matcher = PathMatcher(options.always_allow_paths)
    except ValueError as exc:
        raise ServingConfigError(f"--authorization-always-allow-paths: {exc}") from None
    tls_flags = {
        "--tls-cert-file": options.tls_cert_file,
        "--tls-private-key-file": options.tls_private_key_file,
        "--client-ca-file": options.client_ca_file,
    }
    if options.insecure:
        given = [flag for flag, value in tls_flags.items() if value]
        if given:
            raise ServingConfigError(f"--insecure-serving: cannot be combined with {', '.join(given)}")
        return Serving(options.bind_address, options.port, None, matcher)
    if bool(options.tls_cert_file) != bool(options.tls_private_key_file):
        missing = "--tls-private-key-file" if options.tls_cert_file else "--tls-cert-file"
        other = "--tls-cert-file" if options.tls_cert_file else "--tls-private-key-file"
        raise ServingConfigError(f"{missing}: required together with {other}")
    try:
        pair: CertKeyPair
        if options.tls_cert_file and options.tls_private_key_file:
            pair = read_pair(options.tls_cert_file, options.tls_private_key_file)
        else:
            pair = self_signed_pair(options.bind_address)
        if options.client_ca_file:
            check_client_ca(options.client_ca_file)
        context = server_context(pair, options.client_ca_file)
    except CertificateError as exc:
        raise ServingConfigError(str(exc)) from None
    return Serving(
        options.bind_address,
        options.port,
        context,
        matcher,
        self_signed=not options.tls_cert_file,
        client_certificates=bool(options.client_ca_file),
    )
