"""`pyscheduler` command line: configuration and input errors exit 2 naming the problem."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from scheduler.cli import EXIT_USAGE, main
from scheduler.testing import make_node, make_pod

EXAMPLE = str(Path(__file__).resolve().parent.parent / "examples" / "vanished-node.yaml")


@pytest.fixture(autouse=True)
def _fresh_logging() -> Iterator[None]:
    """`run` installs a root log handler on the stderr of its test; later tests must not write to that one."""
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers[:] = []
    yield
    root.handlers[:] = saved
HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        pytest.param(HEAD + "bogusField: 1\n", ['unknown field "bogusField"'], id="unknown-top-level-field"),
        pytest.param(
            HEAD + "profiles:\n- schedulerName: x\n  bogus: true\n",
            ["profiles[0]", 'unknown field "bogus"'],
            id="unknown-profile-field",
        ),
        pytest.param(
            HEAD + "profiles:\n- plugins:\n    score:\n      enabled: [{name: Nope}]\n",
            ["profiles[0].plugins.score.enabled[0].name", '"Nope"'],
            id="unknown-plugin",
        ),
        pytest.param(HEAD + "percentageOfNodesToScore: 101\n", ["percentageOfNodesToScore"], id="percentage-range"),
        pytest.param("apiVersion: v1\nkind: KubeSchedulerConfiguration\n", ["apiVersion"], id="wrong-api-version"),
    ],
)
def test_bad_config_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, fragments: list[str]
) -> None:
    """A bad --config exits 2 with the field named on stderr and nothing on stdout."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text(body, encoding="utf-8")
    code = main(["simulate", EXAMPLE, "--config", str(cfg)])
    captured = capsys.readouterr()
    assert code == EXIT_USAGE == 2
    assert captured.out == ""
    assert captured.err.startswith("error: ")
    for fragment in fragments:
        assert fragment in captured.err


def test_missing_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A --config that does not exist exits 2 naming the path."""
    missing = tmp_path / "nope.yaml"
    code = main(["simulate", EXAMPLE, "--config", str(missing)])
    captured = capsys.readouterr()
    assert (code, captured.out) == (2, "")
    assert str(missing) in captured.err


def test_missing_cluster_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cluster file that does not exist exits 2 naming the path."""
    missing = tmp_path / "cluster.yaml"
    code = main(["simulate", str(missing)])
    captured = capsys.readouterr()
    assert (code, captured.out) == (2, "")
    assert str(missing) in captured.err


def test_valid_config_is_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A valid --config renaming the profile: pods naming pyscheduler are no longer ours (nothing to report)."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text(HEAD + "profiles:\n- schedulerName: other\n", encoding="utf-8")
    code = main(["simulate", EXAMPLE, "--config", str(cfg)])
    out = capsys.readouterr().out
    assert code == 0
    assert "0/0 pods scheduled" in out


def test_explain_unknown_pod_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """--explain of a pod not in the dump exits 2 naming it."""
    code = main(["simulate", EXAMPLE, "--explain", "nowhere/ghost"])
    captured = capsys.readouterr()
    assert code == 2
    assert "nowhere/ghost" in captured.err


def test_usage_error_without_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    """No subcommand is an argparse usage error (exit 2)."""
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_simulate_with_an_out_of_tree_plugin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--plugin MODULE:CLASS plus a profile enabling it by name: the plugin's score decides the placement."""
    monkeypatch.setattr("scheduler.core.profile._registry", None)  # the process-wide registry is restored after
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: pyscheduler\n  plugins:\n    multiPoint:\n      enabled: [{name: Recorder, weight: 10}]\n"
        "  pluginConfig:\n  - name: Recorder\n    args: {preferNode: b}\n"
    )
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "\n---\n".join(
            [yaml.safe_dump(make_node(n).obj()) for n in ("a", "b", "c")] + [yaml.safe_dump(make_pod("p").obj())]
        )
    )
    code = main(["simulate", "--plugin", "tests.framework.plugin_samples:Recorder", "--config", str(cfg),
                 str(cluster), "-o", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    [outcome] = json.loads(out.out)["pods"]
    assert (outcome["name"], outcome["node"], outcome["message"]) == ("p", "b", None)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--plugin", "nope"], "error: --plugin nope: expected MODULE:CLASS", id="bad-reference"),
        pytest.param(
            ["--plugin", "tests.framework.plugin_samples:NOT_A_PLUGIN"],
            "expected a subclass of scheduler.framework.Plugin",
            id="not-a-plugin",
        ),
    ],
)
def test_bad_plugin_flag_exits_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("scheduler.core.profile._registry", None)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(make_node("a").obj()))
    code = main(["simulate", *argv, str(cluster)])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err


def _kubeconfig(server: str = "https://127.0.0.1:6443", user: str = "{token: abc}") -> bytes:
    """A kubeconfig whose one context points at `server` with `user`'s credentials (flow-style YAML)."""
    return (
        f"apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n"
        f"users: [{{name: u, user: {user}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\n"
        "current-context: x\n"
    ).encode()


KUBECONFIGS = {
    "not-yaml": (b"apiVersion: v1\nclusters: [1, 2\n", "invalid YAML"),
    "binary": (b"\xff\xfe\x00\x01", "not UTF-8 text"),
    "recursive-alias": (b"a: &a [*a]\n", "recursive"),
    "not-a-mapping": (b"- 1\n- 2\n", "expected one YAML mapping"),
    "no-context": (b"apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\ncurrent-context: x\n", "Invalid kube"),
    "server-not-a-url": (_kubeconfig(server="not a url"), "the cluster's server 'not a url' is not a URL"),
    "server-empty": (_kubeconfig(server=""), "the cluster's server is empty"),
    "server-unclosed-ipv6": (_kubeconfig(server="https://[::1"), "is not a URL: Invalid IPv6 URL"),
    "garbage-client-certificate": (
        _kubeconfig(user="{client-certificate-data: Z2FyYmFnZQ==, client-key-data: Z2FyYmFnZQ==}"),
        "client certificate, key or CA unusable",
    ),
}


@pytest.mark.parametrize("command", ["run", "explain"])
@pytest.mark.parametrize(("content", "message"), KUBECONFIGS.values(), ids=KUBECONFIGS.keys())
def test_bad_kubeconfig_is_one_line_and_exit_2(
    command: str, content: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unreadable or malformed kubeconfig (a server that is no URL, a garbage client certificate) ends with
    one `error:` line naming the file, exit 2: no retries, no traceback."""
    path = tmp_path / "kubeconfig"
    path.write_bytes(content)
    argv = ["run", "--kubeconfig", str(path)] if command == "run" else ["explain", "ns/p", "--kubeconfig", str(path)]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: kubeconfig {path}"), err
    assert message in lines[0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["-v", "-3"], "error: -v: -3 is not a verbosity (0-10)", id="negative-verbosity"),
        pytest.param(["--resync-period", "-5"], "error: --resync-period: -5.0 is not a number", id="negative-resync"),
        pytest.param(["--resync-period", "inf"], "error: --resync-period: inf is not a number", id="infinite-resync"),
        pytest.param(["--port", "70000"], "error: --port: 70000 is not a TCP port", id="port"),
        pytest.param(["--bind-address", "999.1.1.1"], "error: --bind-address:", id="bind-address"),
        pytest.param(["--kubeconfig", "/nonexistent/kubeconfig"], "no such file", id="missing-kubeconfig"),
    ],
)
def test_bad_run_flags_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", *argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and "Traceback" not in err


def test_explain_without_any_kubeconfig_says_what_to_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --kubeconfig, no $KUBECONFIG, no ~/.kube/config, not in a pod: one line naming all three, exit 2
    (not the in-cluster loader's "Service host/port is not set.")."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    code = main(["explain", "ns/p"])
    err = capsys.readouterr().err
    assert code == 2, err
    [line] = err.strip().splitlines()
    assert line.startswith("error: no kubeconfig: --kubeconfig is not given, $KUBECONFIG is not set and ")
    assert f"{tmp_path}/.kube/config does not exist" in line and "Pass --kubeconfig PATH" in line
    assert "Service host/port" not in line


def test_explain_against_a_refusing_server_says_where_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing listens at the kubeconfig's server: the server, the kubeconfig and context, and the cause in
    words, exit 1 (never `answered 0` or aiohttp's `ssl:<ssl.SSLContext object at 0x...>`)."""
    from tests.cluster.harness import free_port

    port = free_port()
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx",
        "clusters": [
            {"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}", "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
    }))
    code = main(["explain", "ns/p", "--kubeconfig", str(path), "--context", "ctx"])
    err = capsys.readouterr().err
    assert code == 1, err
    [line] = err.strip().splitlines()
    assert line == (
        f"error: cannot reach the API server https://127.0.0.1:{port} (kubeconfig {path}, context ctx): cannot "
        f"connect to 127.0.0.1:{port}: connection refused (nothing listens there). Is the cluster running, and "
        "is this the right kubeconfig and context?"
    )
    code = main(["explain", "ns/p", "--server", f"https://127.0.0.1:{port}", "--token", "t"])
    [line] = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and line.startswith(
        f"error: cannot reach the scheduler at https://127.0.0.1:{port}: cannot connect to 127.0.0.1:{port}: "
        "connection refused"
    )
    assert "SSLContext" not in line


def dump(tmp_path: Path) -> str:
    """A `kubectl get -o yaml`-shaped dump: one 2-cpu node, two default-scheduler pods of 1 and 1.5 cpu."""
    items = [
        make_node("n1").capacity(cpu="2").obj(),
        make_pod("web-1", "shop").scheduler_name("default-scheduler").req(cpu="1").obj(),
        make_pod("web-2", "shop").scheduler_name("default-scheduler").req(cpu="1500m").obj(),
    ]
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


@pytest.mark.parametrize(
    ("flags", "code", "table_end", "warned"),
    [
        pytest.param([], 0, "0/0 pods scheduled", True, id="other-scheduler-warned"),
        pytest.param(["--fail-on-pending"], 0, "0/0 pods scheduled", True, id="nothing-simulated-nothing-pending"),
        pytest.param(["--scheduler-name", "default-scheduler"], 0, "1/2 pods scheduled", False, id="included"),
        pytest.param(
            ["--scheduler-name", "default-scheduler", "--fail-on-pending"], 1, "1/2 pods scheduled", False,
            id="fail-on-pending",
        ),
    ],
)
def test_simulate_other_schedulers_and_exit_codes(
    flags: list[str], code: int, table_end: str, warned: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dump's pods naming default-scheduler are not simulated and a warning says how to include them;
    --scheduler-name includes them; --fail-on-pending exits 1 when one stays Pending."""
    got = main(["simulate", dump(tmp_path), *flags])
    captured = capsys.readouterr()
    assert got == code
    assert captured.out.rstrip().endswith(table_end)
    warning = (
        "warning: 2 pod(s) without a node name another scheduler and were not simulated: default-scheduler (2). "
        "Only pods whose schedulerName is a profile (pyscheduler) are placed; to place these too, with the same "
        "plugins, pass --scheduler-name default-scheduler\n"
    )
    assert captured.err == (warning if warned else "")
