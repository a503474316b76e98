"""Property tests: whatever bytes, YAML or mutated cluster file `simulate` and `--config` get, they end with
exit 0 or 2 and a message, never a traceback (bounded by the test timeout, not by a timed assertion)."""

from __future__ import annotations

import contextlib
import copy
import io
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.cli import main
from scheduler.config.errors import ConfigError
from scheduler.core.profile import load_file

# The thread method: a hang inside hypothesis must end the run with every stack dumped. With the signal
# method the alarm fails the example once, hypothesis replays it to shrink, and the replay hangs unwatched
# (that is how a hanging volume simulation went unnoticed until it stalled a whole local run).
pytestmark = pytest.mark.timeout(300, method="thread")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# PYSCHEDULER_FUZZ_EXAMPLES raises the number of examples for a long run (1500 each: ~90 s, all passed).
SETTINGS = settings(
    max_examples=int(os.environ.get("PYSCHEDULER_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["1e999999999", "-1", "500m", "Exists", "NoSchedule", "TCP", "", "0.0.0.0", "In", "Gt"]),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)


def run_cli(*argv: str) -> tuple[int, str]:
    """main() in-process; returns (exit code, stderr). Any exception escaping main fails the test."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, err.getvalue()


def simulate_bytes(data: bytes) -> tuple[int, str]:
    with tempfile.NamedTemporaryFile("wb", suffix=".yaml", delete=False) as fh:
        fh.write(data)
    try:
        return run_cli("simulate", fh.name)
    finally:
        os.unlink(fh.name)


def assert_clean(code: int, err: str) -> None:
    assert code in (0, 2), (code, err)
    if code == 2:
        assert err.startswith("error: ") and "Traceback" not in err, err


@SETTINGS
@given(st.binary(max_size=2000))
def test_random_bytes(data: bytes) -> None:
    assert_clean(*simulate_bytes(data))


@SETTINGS
@given(st.lists(values, min_size=1, max_size=4))
def test_random_yaml_documents(docs: list[Any]) -> None:
    assert_clean(*simulate_bytes(yaml.safe_dump_all(docs).encode()))


def _leaves(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(_leaves(v, (*path, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(_leaves(v, (*path, i)))
    return out


def _mutate(docs: list[Any], where: int, how: int, replacement: Any) -> list[Any]:
    docs = copy.deepcopy(docs)
    paths = _leaves(docs)[1:]
    path = paths[where % len(paths)]
    parent = docs
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if how == 0:
        parent[key] = replacement  # a value of another type or an odd value
    elif how == 1 and isinstance(parent, dict):
        del parent[key]  # a required field goes missing
    elif how == 2:
        parent[key] = [parent[key]]  # a list where a map or scalar is expected
    else:
        parent[key] = {"x": parent[key]}  # a map where a string is expected
    return docs


CLUSTERS = {p.name: list(yaml.safe_load_all(p.read_text())) for p in sorted(EXAMPLES.glob("*.yaml"))}


@SETTINGS
@given(st.sampled_from(sorted(CLUSTERS)), st.integers(0, 10_000), st.integers(0, 3), values)
def test_mutated_cluster_files(name: str, where: int, how: int, replacement: Any) -> None:
    docs = _mutate(CLUSTERS[name], where, how, replacement)
    assert_clean(*simulate_bytes(yaml.safe_dump_all(docs).encode()))


VALID_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "percentageOfNodesToScore": 50,
    "profiles": [
        {
            "schedulerName": "pyscheduler",
            "plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 2}]}},
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}]}},
                }
            ],
        }
    ],
    "leaderElection": {"leaderElect": False},
}


def load_config_bytes(data: bytes) -> None:
    with tempfile.NamedTemporaryFile("wb", suffix=".yaml", delete=False) as fh:
        fh.write(data)
    try:
        load_file(fh.name)
    except ConfigError as exc:
        assert str(exc)
    finally:
        os.unlink(fh.name)


@SETTINGS
@given(st.binary(max_size=2000))
def test_config_random_bytes(data: bytes) -> None:
    load_config_bytes(data)


@SETTINGS
@given(values)
def test_config_random_yaml(doc: Any) -> None:
    load_config_bytes(yaml.safe_dump(doc).encode())


@SETTINGS
@given(st.integers(0, 10_000), st.integers(0, 3), values)
def test_config_mutations(where: int, how: int, replacement: Any) -> None:
    [doc] = _mutate([VALID_CONFIG], where, how, replacement)
    load_config_bytes(yaml.safe_dump(doc).encode())


def test_the_valid_inputs_are_valid() -> None:
    """The unmutated inputs pass, so the mutations above start from something that works."""
    for name, docs in CLUSTERS.items():
        assert simulate_bytes(yaml.safe_dump_all(docs).encode())[0] == 0, name
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        fh.write(yaml.safe_dump(VALID_CONFIG))
    try:
        assert load_file(fh.name).percentage_of_nodes_to_score == 50
    finally:
        os.unlink(fh.name)
