"""Reading what a scheduler logged about each pod: kube-scheduler's klog text lines and pyscheduler's.

Both print `I0102 15:04:05.000000   12345 schedule_one.go:984] "Plugin scored node for pod" pod="ns/p"
plugin="NodeResourcesFit" node="n1" score=85` (pyscheduler's klog-style formatter mirrors the header, the
quoted message and the key=value pairs). A `LogIndex` tails one log file and keeps, per pod, the lines the
differential runs compare: every plugin's weighted score per node, each node's total, the binding line with
its evaluated/feasible node counts, and every unschedulable attempt's message (the one line where the two
schedulers' words differ: upstream's `"Unable to schedule pod; no fit; waiting" ... err="..."`, pyscheduler's
`"unable to schedule pod" ... reason="Unschedulable" error="..."`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PLUGIN_SCORED = "Plugin scored node for pod"
FINAL_SCORE = "Calculated node's final score for pod"
BOUND = "Successfully bound pod to node"
UPSTREAM_NO_FIT = "Unable to schedule pod; no fit; waiting"  # schedule_one.go handleSchedulingFailure, V(2)
OUR_FAILURE = "unable to schedule pod"  # scheduler/core/schedule_one.py handle_scheduling_failure
_WANTED = (PLUGIN_SCORED, FINAL_SCORE, BOUND, UPSTREAM_NO_FIT, OUR_FAILURE)

# Header up to "] ", then the quoted message, then key=value pairs (value: a quoted string or a bare token).
_LINE = re.compile(r'^[IWEF]\d{4} [\d:.]+\s+\d+ [^\]]+\] "(?P<msg>(?:[^"\\]|\\.)*)"(?P<rest>.*)$')
_PAIR = re.compile(r'\s(?P<key>[A-Za-z_][\w.-]*)=(?P<value>"(?:[^"\\]|\\.)*"|\S+)')


def parse_line(line: str) -> tuple[str, dict[str, Any]] | None:
    """(message, fields) of one klog text line, or None when it is not one (continuations, other output)."""
    match = _LINE.match(line.rstrip("\n"))
    if match is None:
        return None
    fields: dict[str, Any] = {}
    for pair in _PAIR.finditer(match.group("rest")):
        raw = pair.group("value")
        if raw.startswith('"'):
            try:
                fields[pair.group("key")] = json.loads(raw)
            except json.JSONDecodeError:
                fields[pair.group("key")] = raw[1:-1]
        else:
            try:
                fields[pair.group("key")] = int(raw)
            except ValueError:
                fields[pair.group("key")] = raw
    return json.loads(f'"{match.group("msg")}"'), fields


@dataclass
class PodLog:
    """What one scheduler logged about one pod (the last attempt wins: a rescored pod replaces its scores)."""

    scores: dict[tuple[str, str], int] = field(default_factory=dict)  # (plugin, node) -> weighted score
    totals: dict[str, int] = field(default_factory=dict)  # node -> total score
    bound_to: str | None = None
    evaluated_nodes: int | None = None
    feasible_nodes: int | None = None
    failures: list[str] = field(default_factory=list)  # each unschedulable attempt's message, in order
    _closed: bool = False  # the last line seen was a final score or the binding: new scores start over

    def plugins(self) -> set[str]:
        return {plugin for plugin, _ in self.scores}

    def scored_nodes(self) -> set[str]:
        return {node for _, node in self.scores} | set(self.totals)


class LogIndex:
    """Tails a scheduler's log file and indexes the score and binding lines by pod ("namespace/name")."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""
        self.pods: dict[str, PodLog] = {}

    def refresh(self) -> None:
        """Read what was appended since the last call (a trailing partial line waits for its end)."""
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return
        if not data:
            return
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        for raw in lines:
            text = raw.decode("utf-8", errors="replace")
            if any(w in text for w in _WANTED):
                self._take(text)

    def _take(self, text: str) -> None:
        parsed = parse_line(text)
        if parsed is None:
            return
        msg, fields = parsed
        pod = fields.get("pod")
        if not isinstance(pod, str):
            return
        entry = self.pods.setdefault(pod, PodLog())
        if msg == PLUGIN_SCORED:
            if entry._closed:  # a new attempt of a pod scored before
                entry.scores, entry.totals, entry._closed = {}, {}, False
            entry.scores[(str(fields.get("plugin")), str(fields.get("node")))] = int(fields["score"])
        elif msg == FINAL_SCORE:
            entry.totals[str(fields.get("node"))] = int(fields["score"])
            entry._closed = True
        elif msg == BOUND:
            entry.bound_to = str(fields.get("node"))
            entry.evaluated_nodes = _int_or_none(fields.get("evaluatedNodes"))
            entry.feasible_nodes = _int_or_none(fields.get("feasibleNodes"))
            entry._closed = True
        elif msg == UPSTREAM_NO_FIT:
            entry.failures.append(str(fields.get("err")))
        elif msg == OUR_FAILURE and fields.get("reason") == "Unschedulable":
            entry.failures.append(str(fields.get("error")))

    def get(self, pod: str) -> PodLog | None:
        self.refresh()
        return self.pods.get(pod)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) else None
