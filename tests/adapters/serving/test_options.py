"""The serving flags of `pyscheduler run`: defaults like kube-scheduler, and a bad flag exits 2 naming it."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from scheduler.adapters.cluster.serving.certs import self_signed_pair
from scheduler.adapters.cluster.serving.options import (
    ServingConfigError,
    ServingOptions,
    prepare_serving,
    split_paths,
)
from scheduler.cli import main


def test_defaults_are_kube_schedulers() -> None:
    """HTTPS on 0.0.0.0:10259 with an in-memory self-signed certificate; only health paths open."""
    serving = prepare_serving(ServingOptions())
    assert (serving.bind_address, serving.port, serving.scheme) == ("0.0.0.0", 10259, "https")
    assert serving.self_signed and not serving.client_certificates
    assert isinstance(serving.ssl_context, ssl.SSLContext)
    assert serving.always_allow.paths == ("/healthz", "/readyz", "/livez")


def test_insecure_serving_is_plain_http() -> None:
    serving = prepare_serving(ServingOptions(insecure=True))
    assert serving.ssl_context is None and serving.scheme == "http"


def test_given_certificate_is_served(tmp_path: Path) -> None:
    pair = self_signed_pair()
    (tmp_path / "tls.crt").write_bytes(pair.chain_pem)
    (tmp_path / "tls.key").write_bytes(pair.key_pem)
    serving = prepare_serving(
        ServingOptions(tls_cert_file=str(tmp_path / "tls.crt"), tls_private_key_file=str(tmp_path / "tls.key"))
    )
    assert serving.secure and not serving.self_signed


@pytest.mark.parametrize(
    ("value", "paths"),
    [
        pytest.param("/healthz,/readyz,/livez", ("/healthz", "/readyz", "/livez"), id="default"),
        pytest.param(" /healthz , /metrics ", ("/healthz", "/metrics"), id="spaces"),
        pytest.param("", (), id="empty-is-none"),
        pytest.param("/a,,/b", ("/a", "", "/b"), id="empty-entry-kept-to-be-refused"),
    ],
)
def test_split_paths(value: str, paths: tuple[str, ...]) -> None:
    assert split_paths(value) == paths


def write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def bad_flag_cases(tmp_path: Path) -> list[tuple[list[str], str]]:
    pair, other = self_signed_pair(), self_signed_pair()
    cert = write(tmp_path, "tls.crt", pair.chain_pem)
    key = write(tmp_path, "tls.key", pair.key_pem)
    other_key = write(tmp_path, "other.key", other.key_pem)
    junk = write(tmp_path, "junk.pem", b"hello\n")
    missing = str(tmp_path / "missing.pem")
    return [
        (["--tls-cert-file", missing, "--tls-private-key-file", key], "--tls-cert-file"),
        (["--tls-cert-file", junk, "--tls-private-key-file", key], "--tls-cert-file"),
        (["--tls-cert-file", cert, "--tls-private-key-file", junk], "--tls-private-key-file"),
        (["--tls-cert-file", cert, "--tls-private-key-file", other_key], "--tls-private-key-file"),
        (["--tls-cert-file", cert], "--tls-private-key-file"),
        (["--tls-private-key-file", key], "--tls-cert-file"),
        (["--client-ca-file", missing], "--client-ca-file"),
        (["--client-ca-file", junk], "--client-ca-file"),
        (["--authorization-always-allow-paths", "/healthz,metrics"], "--authorization-always-allow-paths"),
        (["--authorization-always-allow-paths", "/he*lthz"], "--authorization-always-allow-paths"),
        (["--authorization-always-allow-paths", "/a,,/b"], "--authorization-always-allow-paths"),
        (["--bind-address", "localhost"], "--bind-address"),
        (["--port", "70000"], "--port"),
        (["--insecure-serving", "--tls-cert-file", cert, "--tls-private-key-file", key], "--insecure-serving"),
    ]


def test_every_bad_serving_flag_exits_2_with_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before any API call (no kubeconfig exists here): exit 2, one `error: --flag: ...` line on stderr."""
    kubeconfig = str(tmp_path / "no-kubeconfig")
    for flags, flag in bad_flag_cases(tmp_path):
        code = main(["run", "--kubeconfig", kubeconfig, *flags])
        captured = capsys.readouterr()
        assert code == 2, (flags, captured.err)
        assert captured.out == ""
        lines = captured.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {flag}: "), (flags, captured.err)


def test_prepare_serving_raises_serving_config_error(tmp_path: Path) -> None:
    with pytest.raises(ServingConfigError, match=r"^--client-ca-file: "):
        prepare_serving(ServingOptions(client_ca_file=str(tmp_path / "none")))
