"""The self-signed serving pair (kube-scheduler's shape), reading given files, and the TLS context."""

from __future__ import annotations

import ipaddress
import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from scheduler.adapters.cluster.serving.certs import (
    CertificateError,
    CertKeyPair,
    read_pair,
    self_signed_pair,
    server_context,
)

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


def sans(cert: x509.Certificate) -> tuple[set[str], set[str]]:
    ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    dns = set(ext.get_values_for_type(x509.DNSName))
    ips = {str(ip) for ip in ext.get_values_for_type(x509.IPAddress)}
    return dns, ips


def common_name(name: x509.Name) -> str:
    return str(name.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


@pytest.mark.parametrize(
    ("bind", "want_ips"),
    [
        pytest.param("0.0.0.0", {"127.0.0.1"}, id="unspecified-v4"),
        pytest.param("::", {"127.0.0.1"}, id="unspecified-v6"),
        pytest.param("127.0.0.1", {"127.0.0.1"}, id="loopback-once"),
        pytest.param("10.1.2.3", {"127.0.0.1", "10.1.2.3"}, id="specific-ip"),
        pytest.param("fd00::7", {"127.0.0.1", "fd00::7"}, id="specific-v6"),
    ],
)
def test_self_signed_sans(bind: str, want_ips: set[str]) -> None:
    """DNS localhost and IP 127.0.0.1 always; the bind address too when it is a specific IP."""
    server, _ca = self_signed_pair(bind, NOW).certificates()
    assert sans(server) == ({"localhost"}, want_ips)


def test_self_signed_shape_is_upstreams() -> None:
    """CA localhost-ca@<unix> signs localhost@<unix>; from one hour ago for a year; chain server then CA."""
    pair = self_signed_pair("0.0.0.0", NOW)
    server, ca = pair.certificates()
    stamp = int(NOW.timestamp())
    assert common_name(ca.subject) == f"localhost-ca@{stamp}"
    assert common_name(server.subject) == f"localhost@{stamp}"
    assert server.issuer == ca.subject
    server.verify_directly_issued_by(ca)
    ca.verify_directly_issued_by(ca)
    for cert in (server, ca):
        assert cert.not_valid_before_utc == NOW - timedelta(hours=1)
        assert cert.not_valid_after_utc == NOW - timedelta(hours=1) + timedelta(days=365)
        assert cert.public_key().key_size == 2048  # type: ignore[union-attr]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert server.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    usages = server.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.SERVER_AUTH]
    key = serialization.load_pem_private_key(pair.key_pem, password=None)
    assert key.public_key().public_numbers() == server.public_key().public_numbers()  # type: ignore[union-attr]


def test_each_start_makes_a_new_pair() -> None:
    a, b = self_signed_pair(), self_signed_pair()
    assert a.key_pem != b.key_pem


def write_pair(directory: Path, pair: CertKeyPair) -> tuple[Path, Path]:
    cert, key = directory / "tls.crt", directory / "tls.key"
    cert.write_bytes(pair.chain_pem)
    key.write_bytes(pair.key_pem)
    return cert, key


def test_read_pair_accepts_a_matching_pair(tmp_path: Path) -> None:
    pair = self_signed_pair()
    cert, key = write_pair(tmp_path, pair)
    assert read_pair(str(cert), str(key)) == pair


def test_read_pair_names_the_flag_of_each_problem(tmp_path: Path) -> None:
    cert, key = write_pair(tmp_path, self_signed_pair())
    other_key = tmp_path / "other.key"
    other_key.write_bytes(self_signed_pair().key_pem)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    cases = [
        (str(tmp_path / "missing.crt"), str(key), "--tls-cert-file", "missing.crt"),
        (str(garbage), str(key), "--tls-cert-file", "no PEM certificate"),
        (str(cert), str(tmp_path / "missing.key"), "--tls-private-key-file", "missing.key"),
        (str(cert), str(garbage), "--tls-private-key-file", "no unencrypted PEM private key"),
        (str(cert), str(other_key), "--tls-private-key-file", "does not match"),
    ]
    for cert_file, key_file, flag, fragment in cases:
        with pytest.raises(CertificateError) as info:
            read_pair(cert_file, key_file)
        assert info.value.flag == flag
        assert str(info.value).startswith(f"{flag}: ") and fragment in str(info.value)


def test_server_context_serves_tls12_and_up_without_client_ca() -> None:
    ctx = server_context(self_signed_pair())
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    assert ctx.verify_mode == ssl.CERT_NONE


def test_server_context_with_client_ca_asks_for_optional_certificates(tmp_path: Path) -> None:
    ca_file = tmp_path / "ca.crt"
    pair = self_signed_pair()
    ca_file.write_bytes(pair.chain_pem.split(b"-----END CERTIFICATE-----\n", 1)[1])
    ctx = server_context(pair, str(ca_file))
    assert ctx.verify_mode == ssl.CERT_OPTIONAL
    assert [c["subject"] for c in ctx.get_ca_certs()]  # exactly the given CA, no system store
    assert len(ctx.get_ca_certs()) == 1


def test_unloadable_client_ca_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(CertificateError, match=r"^--client-ca-file: "):
        server_context(self_signed_pair(), str(tmp_path / "nope.crt"))


def test_sans_ip_parse_roundtrip() -> None:
    """IPAddress SANs are real IP entries (a client checking the IP of https://127.0.0.1 accepts them)."""
    server, _ = self_signed_pair("10.0.0.9", NOW).certificates()
    ext = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("10.0.0.9") in ext.get_values_for_type(x509.IPAddress)
