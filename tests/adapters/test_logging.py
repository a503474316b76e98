"""klog-like logging: text and JSON formats, the -v mapping, runtime verbosity changes, the V(2) bind line."""

from __future__ import annotations

import io
import json
import logging
import os
import re
from collections.abc import Iterator

import pytest

from scheduler import logging_setup
from scheduler.logging_setup import V2, V4, V10, get_verbosity, set_verbosity, setup_logging, v_level
from scheduler.simulate import simulate
from scheduler.testing import make_node, make_pod

TEXT_LINE = re.compile(
    r"^(?P<sev>[IWEF])(?P<date>\d{4}) (?P<time>\d\d:\d\d:\d\d\.\d{6}) +(?P<pid>\d+) "
    r'(?P<caller>[\w.]+:\d+)\] "(?P<msg>[^"]*)"'
)


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    """Root logging to a StringIO for the test; the previous handlers, levels and verbosity come back after."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, logging.getLogger("kopf").level, get_verbosity())
    buf = io.StringIO()
    try:
        yield buf
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        logging.getLogger("kopf").setLevel(saved[2])
        logging_setup._verbosity = saved[3]


def _lines(buf: io.StringIO) -> list[str]:
    return [line for line in buf.getvalue().splitlines() if line]


def test_text_format_is_klog_like_with_fields(stream: io.StringIO) -> None:
    setup_logging(2, "text", stream)
    log = logging.getLogger("pyscheduler.test")
    log.info("pod bound", extra={"pod": "ns/p", "node": "n1", "count": 3})
    log.warning("careful")
    [first, second] = _lines(stream)
    m = TEXT_LINE.match(first)
    assert m, first
    assert m["sev"] == "I" and m["msg"] == "pod bound"
    assert int(m["pid"]) == os.getpid()
    assert m["caller"].startswith("test_logging.py:")
    assert first.endswith(' pod="ns/p" node="n1" count=3')
    assert second.startswith("W")


def test_json_format_has_ts_v_msg_and_fields(stream: io.StringIO) -> None:
    setup_logging(4, "json", stream)
    log = logging.getLogger("pyscheduler.test")
    log.log(V2, "Successfully bound pod to node", extra={"pod": "ns/p", "node": "n1"})
    log.error("boom", extra={"pod": "ns/q"})
    first, second = (json.loads(line) for line in _lines(stream))
    assert isinstance(first["ts"], float)
    assert first["v"] == 2 and first["level"] == "info"
    assert first["msg"] == "Successfully bound pod to node"
    assert (first["pod"], first["node"]) == ("ns/p", "n1")
    assert first["caller"].startswith("test_logging.py:")
    assert second["level"] == "error" and "v" not in second and second["pod"] == "ns/q"


@pytest.mark.parametrize(
    ("verbosity", "expected"),
    [
        (0, ["warning", "info"]),
        (1, ["warning", "info", "v1"]),
        (2, ["warning", "info", "v1", "v2"]),
        (4, ["warning", "info", "v1", "v2", "v4"]),
        (5, ["warning", "info", "v1", "v2", "v4", "v5", "debug"]),
        (9, ["warning", "info", "v1", "v2", "v4", "v5", "debug", "v7"]),
        (10, ["warning", "info", "v1", "v2", "v4", "v5", "debug", "v7", "v10"]),
    ],
)
def test_verbosity_mapping(stream: io.StringIO, verbosity: int, expected: list[str]) -> None:
    setup_logging(verbosity, "json", stream)
    log = logging.getLogger("pyscheduler.test")
    log.warning("warning")
    log.info("info")
    for n in (1, 2, 4, 5):
        log.log(v_level(n), f"v{n}")
    log.debug("debug")
    log.log(v_level(7), "v7")
    log.log(V10, "v10")
    assert [json.loads(line)["msg"] for line in _lines(stream)] == expected
    if verbosity == 10:
        assert json.loads(_lines(stream)[-1])["v"] == 10  # V(10) is not mistaken for DEBUG's V(5)


def test_disabled_levels_are_cheap_checks(stream: io.StringIO) -> None:
    setup_logging(2, "text", stream)
    log = logging.getLogger("pyscheduler.test")
    assert log.isEnabledFor(V2)
    assert not log.isEnabledFor(V4)
    assert not log.isEnabledFor(logging.DEBUG)


def test_runtime_change_affects_later_logs(stream: io.StringIO) -> None:
    setup_logging(2, "text", stream)
    log = logging.getLogger("pyscheduler.test")
    log.log(V4, "hidden")
    set_verbosity(4)
    assert get_verbosity() == 4
    log.log(V4, "shown")
    set_verbosity(0)
    log.log(V2, "hidden again")
    assert [TEXT_LINE.match(line)["msg"] for line in _lines(stream)] == ["shown"]  # type: ignore[index]
    assert logging.getLogger("kopf").level == logging.WARNING
    set_verbosity(6)
    assert logging.getLogger("kopf").level == logging.DEBUG
    with pytest.raises(ValueError, match=">= 0"):
        set_verbosity(-1)


def test_unknown_format_is_rejected() -> None:
    with pytest.raises(ValueError, match="text or json"):
        logging_setup.make_handler("yaml")


def test_successful_binding_is_logged_at_v2(stream: io.StringIO) -> None:
    """The core's V(2) line per binding, with pod, node, evaluatedNodes and feasibleNodes, as upstream."""
    objects = [make_node("n1").capacity(cpu="4").obj(), make_pod("p").scheduler_name("pyscheduler").obj()]
    setup_logging(2, "json", stream)
    simulate(objects)
    bound = [doc for doc in map(json.loads, _lines(stream)) if doc["msg"] == "Successfully bound pod to node"]
    assert len(bound) == 1
    assert bound[0]["v"] == 2
    assert (bound[0]["pod"], bound[0]["node"]) == ("default/p", "n1")
    assert (bound[0]["evaluatedNodes"], bound[0]["feasibleNodes"]) == (1, 1)

    stream.truncate(0)
    stream.seek(0)
    set_verbosity(1)
    simulate(objects)
    assert "Successfully bound" not in stream.getvalue()
