"""Large YAML streams read by a YAML 1.2 parser written in Rust, with the values PyYAML (YAML 1.1) gives.

A 5000-node `kubectl get nodes,pods -A -o yaml` is ~200 MB. PyYAML composes every value into a Python node
object before building it (40 s and 7 GB there); yaml-rs builds the same dicts in ~9 s. But the two read some
plain (unquoted) scalars differently: `yes`/`on`/`off`, `017`, `1_000`, `1:20`, `1e5`, `2026-01-01`, `<<`.
Kubernetes reads YAML as 1.1 (go-yaml v2 behind sigs.k8s.io/yaml), and so does the rest of pyscheduler,
so the fast path must give PyYAML's result or step aside. How:

- `scan()` refuses the fast path for a whole stream that has anything whose reading depends on context or
  the parser (anchors, aliases and tags, in flow collections too, and so every alias bomb; directives,
  unusual document markers, explicit keys, BOMs, control characters, YAML 1.1's extra line breaks), and
  finds every plain scalar whose YAML 1.1 and 1.2 readings may differ (a superset: any token shaped like a
  YAML 1.1 bool, a number with a leading zero, `_`, `:` or an exponent, a timestamp, `<<`, `=`; a tab, a
  CR, a flow collection with content, a block scalar). It runs beside the parse in a forked child (yaml-rs
  holds the GIL: a thread would only take turns with it).
  `deep()` keeps nesting that could be deep from the parser altogether (lines indented 200 or more, runs of
  block indicators).
- The stream is cut into documents at `---` lines, and a `List` document's column-0 `items:` sequence into
  its items (`- ` at column 0), each parsed alone; what `scan()` flags is parsed again by the house
  loader, piece by piece, so one `on` re-reads one item, not 200 MB. Pieces are context-free because the
  stream has no anchors, aliases, tags or directives.
- Anything the fast path cannot read (a syntax error, a duplicate kind of key, ...) gives None: the caller
  reads the whole stream with the house loader, which gives the error PyYAML gives.
"""

from __future__ import annotations

import bisect
import os
import re
import threading
from array import array
from collections.abc import Callable
from typing import Any, Final

import yaml_rs

MIN_FAST_BYTES: Final = 1 << 20
"""Below this the house loader is fast enough and nothing is gained (small files: configs, examples)."""

MAX_INDENT: Final = 200
"""Lines indented this much might nest deeper than libyaml's 1000 levels: refused from the fast path."""

# Where a plain scalar starts in block context: after `: ` (a value), after `- ` (an entry), or after a line's
# indentation (a key, or a value on a line of its own). Each pattern opens with a literal, which the regex
# engine finds quickly; a whole 200 MB text is three passes. After the token: the end of the line, a comment,
# or `:` (the token was a key).
_END = r"(?=[ \t]*(?:\n|$)|[ \t]+#|:(?:[ \t\n]|$))"
_BOOL11 = r"(?:[yY]es|YES|[nN]o|NO|[oO]n|ON|[oO]ff|OFF)"
_NUMBER = (
    r"[-+]?(?:"
    r"0[0-9_xXoObB][0-9a-fA-F_]*"  # a leading zero: YAML 1.1 octal (or a string), 1.2 decimal; 0x 0o 0b
    r"|[0-9_.]*_[0-9_.]*(?:[eE][-+]?[0-9_]*)?"  # underscores: 1.1 ignores them, yaml-rs too (_5 is 5)
    r"|[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?"  # sexagesimal 1:20 (1.1 reads 80)
    r"|(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+"  # exponents (1.1 needs a dot and a sign)
    r"|\.(?:[0-9][0-9_]*|inf|Inf|INF|nan|NaN|NAN)"  # a leading dot (1.1 refuses a sign before it)
    r"|[0-9]{19,}"  # beyond 64 bits
    r")"
)
_TIMESTAMP = r"[0-9]{4}-[0-9][0-9]?-[0-9]"  # YAML 1.1 timestamps (a date, then maybe a time after a space)
_SCALAR = rf"(?=[yYnNoO<=+\-.0-9_])(?:{_BOOL11}{_END}|<<|={_END}|{_NUMBER}{_END}|{_TIMESTAMP})"
_FLOW = r"[\[{][ \t]*[^\]} \t\n]"  # a flow collection with content: read by the house loader
_PROPERTY = r"[&*!]"  # an anchor, alias or tag
_BLOCK_SCALAR = r"[|>]"  # literal and folded scalars: chomping and blank-line edge cases differ (yaml-rs 0.1.6)
_MARKER_RISK = r"%|(?:---|\.\.\.)[ \t]*[^ \t\n#]|\.\.\."  # a directive, a marker with content, a document end
_EMPTY_KEY = r":(?=[ \t\n]|$)"  # `: b` where a key belongs: yaml-rs reads a null key, PyYAML refuses it
_LINE_START = (
    rf"[ \t]*+(?=[yYnNoO<=+\-.0-9_\[{{&*!?%|>:]|---|\.\.\.)"
    rf"(?:{_SCALAR}|{_FLOW}|{_BLOCK_SCALAR}|(?P<risk>{_PROPERTY}|\? |{_MARKER_RISK}|{_EMPTY_KEY}))"
)
# An anchor, alias or tag inside a flow collection (`[yes, &a]`), where the patterns above see only the opener:
# pieces re-read alone would not see an anchor another piece of the document repeats (PyYAML refuses that).
_FLOW_PROPERTY: Final = re.compile(r"[\[{,][ \t]*[&*!]")
_FIRST_LINE: Final = re.compile(_LINE_START)  # the same at the start of the text (a literal prefix is faster)
_AMBIGUOUS: Final = (
    re.compile(rf": ++(?=[yYnNoO<=+\-.0-9_\[{{&*!?|>])(?:{_SCALAR}|{_FLOW}|{_BLOCK_SCALAR}|(?P<risk>{_PROPERTY}|\? ))"),
    re.compile(
        rf"- ++(?=[yYnNoO<=+\-.0-9_\[{{&*!?|>:])"
        rf"(?:{_SCALAR}|{_FLOW}|{_BLOCK_SCALAR}|(?P<risk>{_PROPERTY}|\? |{_EMPTY_KEY}))"
    ),
    re.compile(rf"\n{_LINE_START}"),
    re.compile("\t"),
    re.compile("\r"),
)
# YAML 1.1 line breaks (NEL, LS, PS), BOMs, and C0/C1 controls libyaml refuses, as UTF-8 bytes.
_CONTROL_BYTES: Final = bytes([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_NON_ASCII_RISK: Final = re.compile(rb"\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9]|\xef\xbb\xbf|\xef\xbf[\xbe\xbf]")
_SLICE: Final = 1 << 24
# Runs of block indicators on one line nest without indentation ("- - - x"): too deep to hand to the parser.
_NESTING_RUNS: Final = ("- - ", "- ? ", "? - ", "? ? ", ": - ")
_DOC_MARKER_LINE: Final = re.compile(r"---[ \t]*(?:#[^\n]*)?(?=\n|$)")
_ITEMS_KEY: Final = re.compile(r"^items:[ \t]*(?:#[^\n]*)?\n", re.M)
_COLUMN_0: Final = re.compile(r"\n(?=[^ \t\n#])")  # a line that starts at column 0


def deep(text: str) -> bool:
    """Whether the stream may nest deeply: lines indented MAX_INDENT or more, runs of block indicators.

    Checked before the parser sees the text (yaml-rs overflows its stack on ~100,000 levels); otherwise the
    depth is at most about 2 * MAX_INDENT plus the 255 flow levels yaml-rs allows, under libyaml's 1000.
    """
    margin = " " * MAX_INDENT
    if text.startswith(margin) or text.find("\n" + margin) >= 0:
        return True
    return any(text.find(run) >= 0 for run in _NESTING_RUNS)


def scan(text: str) -> tuple[bool, list[int]]:
    """(risky, flagged): whether only the house loader reads the stream right, and the sorted offsets of every
    token the two YAML versions may read differently (a superset)."""
    flagged: list[int] = []
    first = _FIRST_LINE.match(text)
    if first is not None:
        if first.group("risk") is not None:
            return True, []
        flagged.append(first.end() - 1)
    for pattern in _AMBIGUOUS:
        for m in pattern.finditer(text):
            if m.groupdict().get("risk") is not None:
                return True, []
            flagged.append(m.end() - 1)  # inside the token (its prefix may belong to the previous document)
    if _FLOW_PROPERTY.search(text) is not None:
        return True, []
    if _controls(text):
        return True, []
    flagged.sort()
    return False, flagged


def _controls(text: str) -> bool:
    """Characters libyaml refuses or YAML 1.1 reads as line breaks, checked on 16 MB slices of UTF-8."""
    for i in range(0, len(text), _SLICE):
        data = text[i : i + _SLICE].encode("utf-8", "surrogatepass")
        if len(data.translate(None, _CONTROL_BYTES)) != len(data):
            return True
        if not data.isascii() and _NON_ASCII_RISK.search(data) is not None:
            return True
    return False


Reader = Callable[[str], list[Any]]
"""The house loader: every document of a YAML text, as PyYAML builds them."""


def load_all(text: str, house: Reader, min_bytes: int = MIN_FAST_BYTES) -> list[Any] | None:
    """Every document of the stream as `house` would build it, or None when the fast path steps aside."""
    if len(text) < min_bytes or deep(text):
        return None
    scanning = _Scan(text)
    try:
        pieces = _parse_pieces(text)
    finally:
        result = scanning.result()
    if pieces is None or result is None or result[0]:
        return None
    flagged = result[1]
    docs: list[Any] = []
    for piece in pieces:
        piece.settle(text, flagged, house)
        docs.append(piece.value)
    return docs


class _Scan:
    """scan(text) beside the parse: in a forked child where the OS allows it (yaml-rs holds the GIL, so a
    thread would only take turns with it: the child has a core of its own on a machine with one free), its
    answer read from a pipe once the parse is done; else in a thread. A child that fails reads as risky."""

    def __init__(self, text: str) -> None:
        self._thread: threading.Thread | None = None
        self._local: list[tuple[bool, list[int]]] = []
        self._pid = 0
        self._read = -1
        if hasattr(os, "fork"):
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: scan, write, leave at once (no cleanup of the parent's state)
                code = 1
                try:
                    os.close(read)
                    risky, flagged = scan(text)
                    payload = bytes([1 if risky else 0]) + array("q", flagged).tobytes()
                    with os.fdopen(write, "wb") as out:
                        out.write(payload)
                    code = 0
                finally:
                    os._exit(code)
            os.close(write)
            self._pid, self._read = pid, read
            return
        self._thread = threading.Thread(target=lambda: self._local.append(scan(text)), daemon=True)
        self._thread.start()

    def result(self) -> tuple[bool, list[int]] | None:
        """(risky, flagged) of scan(), or None when the child failed."""
        if self._thread is not None:
            self._thread.join()
            return self._local[0] if self._local else None
        with os.fdopen(self._read, "rb") as answer:
            payload = answer.read()
        _, status = os.waitpid(self._pid, 0)
        if status != 0 or not payload:
            return None
        flagged = array("q")
        flagged.frombytes(payload[1:])
        return payload[0] == 1, flagged.tolist()


def _parse(text: str) -> Any:
    return yaml_rs.loads(text, parse_datetime=False, duplicate_key_policy=yaml_rs.DuplicateKeyPolicy.LastWins)


class _Piece:
    """One document of the stream: parsed whole, or a List whose items were parsed one by one."""

    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end
        self.value: Any = None
        self.items: list[tuple[int, int]] = []  # item spans when the document is a split List
        self.item_values: list[Any] = []

    def settle(self, text: str, flagged: list[int], house: Reader) -> None:
        """Re-read with the house loader what `scan()` flagged: the item, or the rest of the document."""
        if not self.items:
            if _any_in(flagged, self.start, self.end):
                [self.value] = house(text[self.start : self.end]) or [None]
            return
        head_end, tail_start = self.items[0][0], self.items[-1][1]
        if _any_in(flagged, self.start, head_end) or _any_in(flagged, tail_start, self.end):
            [self.value] = house(_without_items(text, self.start, head_end, tail_start, self.end))
            self.value["items"] = []
        values = self.item_values
        for i, (a, b) in enumerate(self.items):
            if _any_in(flagged, a, b):
                [[values[i]]] = house(text[a:b])
        self.value["items"] = values


def _any_in(flagged: list[int], start: int, end: int) -> bool:
    i = bisect.bisect_left(flagged, start)
    return i < len(flagged) and flagged[i] < end


def _without_items(text: str, start: int, head_end: int, tail_start: int, end: int) -> str:
    """The document with its items replaced by an empty list (its other keys in place)."""
    return text[start:head_end] + text[tail_start:end]


def _documents(text: str) -> list[tuple[int, int, bool]]:
    """(start, end, explicit) of each `---`-separated segment; explicit when a marker opened it."""
    spans: list[tuple[int, int, bool]] = []
    start, explicit = 0, False
    at = 0 if text.startswith("---") else text.find("\n---")
    while at >= 0:
        line = at if at == 0 and text.startswith("---") else at + 1
        m = _DOC_MARKER_LINE.match(text, line)
        if m is not None:
            spans.append((start, line, explicit))
            start, explicit = min(m.end() + 1, len(text)), True
        at = text.find("\n---", line + 3)
    spans.append((start, len(text), explicit))
    return spans


def _blank(text: str, start: int, end: int) -> bool:
    """Only blank lines and comments: no document (PyYAML gives none unless a `---` opened it)."""
    return all(not line.strip() or line.lstrip().startswith("#") for line in text[start:end].splitlines())


def _parse_pieces(text: str) -> list[_Piece] | None:
    pieces: list[_Piece] = []
    for start, end, explicit in _documents(text):
        piece = _Piece(start, end)
        try:
            if not _split_list(text, piece):
                piece.value = _parse(text[start:end])
        except (ValueError, TypeError, OverflowError, RecursionError):
            return None
        if piece.value is None and not explicit and _blank(text, start, end):
            continue
        pieces.append(piece)
    return pieces


def _split_list(text: str, piece: _Piece) -> bool:
    """Parse a document whose column-0 `items:` key holds a column-0 block sequence item by item."""
    key = _ITEMS_KEY.search(text, piece.start, piece.end)
    if key is None or not text.startswith("-", key.end()):
        return False
    first = key.end()
    starts = [first]
    last = piece.end
    for m in _COLUMN_0.finditer(text, first, piece.end):
        line = m.end()
        if text.startswith("-", line) and text[line + 1 : line + 2] in (" ", "\t", "\n", ""):
            starts.append(line)
        else:
            last = line
            break
    spans = list(zip(starts, [*starts[1:], last], strict=True))
    rest = _parse(text[piece.start : key.start()] + "items: []\n" + text[last : piece.end])
    if not isinstance(rest, dict) or rest.get("items") != []:
        return False
    values = []
    for a, b in spans:
        item = _parse(text[a:b])
        if not isinstance(item, list) or len(item) != 1:
            raise ValueError("an item that is not one sequence entry")
        values.append(item[0])
    piece.value, piece.items, piece.item_values = rest, spans, values
    return True
