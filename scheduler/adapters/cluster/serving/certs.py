"""The serving certificate and the TLS context of the scheduler's port.

Without `--tls-cert-file`/`--tls-private-key-file` kube-scheduler makes an in-memory self-signed pair at
start (`MaybeDefaultWithSelfSignedCerts("localhost", nil, [127.0.0.1])`, client-go's
`GenerateSelfSignedCertKey`): an RSA-2048 CA `CN=localhost-ca@<unix time>` signing an RSA-2048 server
certificate `CN=localhost@<unix time>` for DNS `localhost` and IP `127.0.0.1`, plus the bind address when it
is a specific IP, valid from one hour ago for one year; the served chain is the server certificate followed
by the CA. `self_signed_pair` makes exactly that (kube-scheduler lists `localhost` twice when the bind address
is unspecified; here it appears once). Nothing is written to disk: Python's ssl module only loads a
certificate chain from files, so the PEM bytes go through anonymous memory files (memfd) where the platform
has them, else through a private temporary directory removed at once.

Clients are asked for a certificate only with `--client-ca-file`; one that is presented must chain to that CA
(and only that CA: the system trust store is never used to authenticate callers).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SELF_SIGNED_HOST = "localhost"
SELF_SIGNED_IP = "127.0.0.1"
SELF_SIGNED_VALIDITY = timedelta(days=365)
SELF_SIGNED_BACKDATE = timedelta(hours=1)  # tolerate clients whose clock is a little behind
RSA_BITS = 2048


class CertificateError(ValueError):
    """A certificate, key or CA file cannot be used; `flag` names the command-line flag that gave it."""

    def __init__(self, flag: str, message: str) -> None:
        super().__init__(f"{flag}: {message}")
        self.flag = flag


@dataclass(frozen=True)
class CertKeyPair:
    """A PEM certificate chain (server certificate first) and its PEM private key."""

    chain_pem: bytes
    key_pem: bytes

    def certificates(self) -> list[x509.Certificate]:
        return x509.load_pem_x509_certificates(self.chain_pem)


def self_signed_pair(bind_address: str = "0.0.0.0", now: datetime | None = None) -> CertKeyPair:
    """kube-scheduler's in-memory serving certificate: a fresh CA and a server certificate it signs.

    SANs: DNS `localhost`, IP `127.0.0.1`, and the bind address when it is a specific IP.
    """
    now = now or datetime.now(UTC)
    stamp = int(now.timestamp())
    not_before = now - SELF_SIGNED_BACKDATE
    not_after = not_before + SELF_SIGNED_VALIDITY

    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{SELF_SIGNED_HOST}-ca@{stamp}")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(1)
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
    ips: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ipaddress.ip_address(SELF_SIGNED_IP)]
    bind_ip = _ip_or_none(bind_address)
    if bind_ip is not None and not bind_ip.is_unspecified and bind_ip not in ips:
        ips.append(bind_ip)
    sans: list[x509.GeneralName] = [x509.DNSName(SELF_SIGNED_HOST), *(x509.IPAddress(ip) for ip in ips)]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{SELF_SIGNED_HOST}@{stamp}")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(2)
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    chain = cert.public_bytes(serialization.Encoding.PEM) + ca_cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    return CertKeyPair(chain, key_pem)


def _ip_or_none(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def read_pair(cert_file: str, key_file: str) -> CertKeyPair:
    """The PEM files of --tls-cert-file and --tls-private-key-file, checked (CertificateError names the flag)."""
    chain = _read("--tls-cert-file", cert_file)
    try:
        certs = x509.load_pem_x509_certificates(chain)
    except ValueError as exc:
        raise CertificateError("--tls-cert-file", f"{cert_file}: no PEM certificate ({exc})") from None
    key_pem = _read("--tls-private-key-file", key_file)
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError) as exc:
        raise CertificateError(
            "--tls-private-key-file", f"{key_file}: no unencrypted PEM private key ({exc})"
        ) from None
    spki = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if key.public_key().public_bytes(*spki) != certs[0].public_key().public_bytes(*spki):
        raise CertificateError(
            "--tls-private-key-file", f"{key_file}: the key does not match the first certificate of {cert_file}"
        )
    return CertKeyPair(chain, key_pem)


def check_client_ca(ca_file: str) -> None:
    """--client-ca-file must hold at least one PEM certificate."""
    data = _read("--client-ca-file", ca_file)
    try:
        x509.load_pem_x509_certificates(data)
    except ValueError as exc:
        raise CertificateError("--client-ca-file", f"{ca_file}: no PEM certificate ({exc})") from None


def _read(flag: str, path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CertificateError(flag, f"{path}: {exc.strerror or exc}") from None


def server_context(pair: CertKeyPair, client_ca_file: str | None = None) -> ssl.SSLContext:
    """A TLS 1.2+ server context serving `pair`; with a client CA, clients may present a certificate of it."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    with _memory_files(pair.chain_pem, pair.key_pem) as (chain_path, key_path):
        try:
            ctx.load_cert_chain(chain_path, key_path)
        except ssl.SSLError as exc:
            raise CertificateError("--tls-cert-file", f"the certificate and key cannot be served: {exc}") from None
    if client_ca_file:
        try:
            ctx.load_verify_locations(cafile=client_ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise CertificateError("--client-ca-file", f"{client_ca_file}: {exc}") from None
        ctx.verify_mode = ssl.CERT_OPTIONAL  # a certificate is one way to authenticate, a token the other
    else:
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


@contextlib.contextmanager
def _memory_files(*contents: bytes) -> Iterator[list[str]]:
    """Paths from which `contents` can be read once; nothing of them is left behind afterwards."""
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None and os.path.isdir("/proc/self/fd"):
        fds: list[int] = []
        try:
            for data in contents:
                fd = memfd_create("pyscheduler-serving", getattr(os, "MFD_CLOEXEC", 0))
                fds.append(fd)
                _write_all(fd, data)
            yield [f"/proc/self/fd/{fd}" for fd in fds]
        finally:
            for fd in fds:
                os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="pyscheduler-serving-") as tmp:  # mode 0700
        paths = []
        for i, data in enumerate(contents):
            path = os.path.join(tmp, f"{i}.pem")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            paths.append(path)
        yield paths


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
