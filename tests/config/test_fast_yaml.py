"""The yaml-rs fast path gives exactly what the house loader (PyYAML, YAML 1.1) gives, or steps aside."""

from __future__ import annotations

import math
import os
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.config import fast_yaml
from scheduler.config.documents import DocumentError, _load_yaml, bounded


def house(text: str) -> list[Any]:
    return [bounded(doc, f"t: document {i + 1}") for i, doc in enumerate(_load_yaml(text, "t"))]


def fast(text: str) -> list[Any] | None:
    return fast_yaml.load_all(text, house, min_bytes=0)


def canonical(value: Any) -> Any:
    """NaN equal to itself, so two readings compare by value."""
    if isinstance(value, float) and math.isnan(value):
        return "<nan>"
    if isinstance(value, dict):
        return {canonical(k): canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


def agree(text: str) -> bool:
    """Whether the fast path took the text (True) or stepped aside (False); fails when it read it otherwise."""
    try:
        expected: Any = canonical(house(text))
    except DocumentError:
        expected = DocumentError
    try:
        got = fast(text)
    except DocumentError:
        got = [DocumentError]  # a piece PyYAML refused: documents.load_all then reads the whole text
    if got is None:
        return False
    if got == [DocumentError]:
        assert expected is DocumentError, text
        return True
    assert expected is not DocumentError, f"PyYAML refuses what the fast path read: {text!r} -> {got!r}"
    assert canonical(got) == expected, text
    return True


# Plain scalars YAML 1.1 and 1.2 read alike or not, and other text to quote or leave plain.
TRICKY = [
    "yes", "no", "on", "off", "Yes", "NO", "On", "OFF", "y", "n", "Y", "true", "False", "TRUE", "null", "~",
    "Null", "NULL", "017", "0o17", "0x1F", "0X1F", "+0x1", "-0x1", "0b11", "1_000", "1:20", "190:20:30",
    "1e5", "1.0e5", "1.0e+5", "1E5", "-.5", ".5", "+.5", ".inf", "-.Inf", "+.inf", ".NaN", "09", "00", "0",
    "-0", "+12", "12", "1.5", "1.", "2026-01-01", "2026-1-1", "2026-01-01T00:00:00Z", "2026-01-01 10:00:00",
    "<<", "=", "99999999999999999999999", "100m", "1Gi", "10.0.0.1", "fe80::1", "a: b", "#x", "-", "- a",
    "x #y", "é", "kubelet has no disk", "0000000e-0000-4000", "v1", "node-1", "", " a", "a ", "[a]", "{a: 1}",
    "&a", "*a", "!x", "? a", "%x", "---", "...", "a\tb", "5_", "_5", "0.5", "1e", "e5", "0x", "12:60",
]

scalar_text = st.sampled_from(TRICKY) | st.text(alphabet="ab01 .-:#_e", max_size=6)


@st.composite
def scalar(draw: st.DrawFn) -> str:
    """A scalar as YAML text: plain, single- or double-quoted."""
    value = draw(scalar_text)
    style = draw(st.sampled_from(["plain", "plain", "single", "double"]))
    if style == "single":
        return "'" + value.replace("'", "''") + "'"
    if style == "double":
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t") + '"'
    return value


@st.composite
def block(draw: st.DrawFn, indent: int, depth: int = 0) -> str:
    """A block mapping at `indent`, with scalar, nested mapping, sequence and block-scalar values."""
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from(["a", "kind", "name", "yes", "on", "1", "017", "2026-01-01", "<<", "x y"]))
        kind = draw(st.sampled_from(["scalar", "scalar", "map", "seq", "literal", "nextline", "flow", "folded"]))
        pad = " " * indent
        if kind == "map" and depth < 3:
            lines.append(f"{pad}{key}:\n" + draw(block(indent + 2, depth + 1)))
        elif kind == "seq" and depth < 3:
            items = draw(st.lists(scalar(), min_size=1, max_size=3))
            lines.append(f"{pad}{key}:\n" + "".join(f"{pad}- {v}\n" for v in items))
        elif kind == "literal":
            body = draw(st.lists(scalar_text, min_size=1, max_size=2))
            lines.append(f"{pad}{key}: |\n" + "".join(f"{pad}  {b}\n" for b in body))
        elif kind == "nextline":
            lines.append(f"{pad}{key}:\n{pad}  {draw(scalar())}\n")
        elif kind == "folded":  # a long scalar wrapped over lines, as go-yaml (kubectl) writes them
            words = draw(st.lists(scalar_text, min_size=2, max_size=4))
            quote = draw(st.sampled_from(["", "'", '"']))
            sep = draw(st.sampled_from([f"\n{pad}  ", f"\n\n{pad}  ", f"\\\n{pad}  "]))
            if quote != '"':
                sep = sep.replace("\\", "")
            clean = [w.replace("'", "").replace('"', "").replace("\\", "") for w in words]
            lines.append(f"{pad}{key}: {quote}" + sep.join(clean) + f"{quote}\n")
        elif kind == "flow":
            lines.append(f"{pad}{key}: [{draw(scalar())}, {draw(scalar())}]\n")
        else:
            lines.append(f"{pad}{key}: {draw(scalar())}\n")
    return "".join(lines)


@st.composite
def stream(draw: st.DrawFn) -> str:
    """A v1 List of items at column 0, or objects one document each, with comments and blank lines."""
    items = [draw(block(2)) for _ in range(draw(st.integers(1, 4)))]
    if draw(st.booleans()):
        body = "".join("- " + item[2:] + draw(st.sampled_from(["", "# c\n", "\n"])) for item in items)
        return f"apiVersion: v1\nitems:\n{body}kind: List\nmetadata:\n  resourceVersion: {draw(scalar())}\n"
    docs = [item.replace("\n  ", "\n")[2:] for item in items]
    return draw(st.sampled_from(["", "---\n", "# head\n"])) + "---\n".join(docs)


@settings(
    max_examples=int(os.environ.get("PYSCHEDULER_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(stream())
def test_fast_path_reads_what_pyyaml_reads(text: str) -> None:
    """Random Lists and multi-document streams full of YAML 1.1/1.2 look-alikes, quoted or plain: the fast
    path either steps aside or gives PyYAML's documents (and never reads what PyYAML refuses)."""
    agree(text)


@pytest.mark.parametrize(
    "text",
    ["a:\n- :\n", "a:\n  : b\n", ": b\n", "- : b\n", "a:\n-  :\n", "- a: 1\n  : 2\n", "a:\n- :x\n"],
)
def test_an_empty_key_is_pyyamls_error(text: str) -> None:
    """`- :` or `: b` where a key belongs: yaml-rs reads a null key, PyYAML refuses it (found by the test
    above); the fast path steps aside, so the answer is PyYAML's (`:x` is a plain scalar to both)."""
    agree(text)


@pytest.mark.parametrize(
    "text",
    [
        "apiVersion: v1\nitems:\n- a: [yes, &a]\n  a: yes\n- a: [yes, &a]\n  a: yes\nkind: List\n",
        "items:\n- a: [1, &x 2]\n- b: {k: *x}\nkind: List\n",
        "items:\n- a: [1,\n    2, &x 3]\n- a: [*x]\nkind: List\n",
        "items:\n- a: {k: !!str yes}\nkind: List\n",
    ],
)
def test_an_anchor_in_a_flow_collection_is_read_by_pyyaml(text: str) -> None:
    """An anchor, alias or tag inside `[...]` or `{...}` sends the stream to PyYAML, which refuses a repeated
    anchor and resolves an alias across items (found by the test above: each item re-read alone read
    `[yes, &a]` twice without the duplicate anchor PyYAML refuses)."""
    assert fast_yaml.scan(text)[0], text
    agree(text)


KUBECTL_LIST = """apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    labels:
      kubernetes.io/hostname: n1
    name: n1
  status:
    allocatable:
      cpu: 15890m
      pods: '110'
    images:
    - names:
      - registry.example/web@sha256:00000000e0
      sizeBytes: 180000000
- apiVersion: v1
  kind: Pod
  metadata:
    creationTimestamp: '2026-01-01T00:00:00Z'
    name: p
  spec:
    containers:
    - image: web:1.0
      name: main
      ports:
      - containerPort: 8080
    securityContext: {}
# a comment between items
- apiVersion: v1
  kind: Pod
  metadata:
    name: q
kind: List
metadata:
  resourceVersion: ""
"""


@pytest.mark.parametrize(
    ("text", "taken"),
    [
        pytest.param(KUBECTL_LIST, True, id="kubectl-list"),
        pytest.param(KUBECTL_LIST.replace("cpu: 15890m", "cpu: on"), True, id="one-item-re-read"),
        pytest.param(KUBECTL_LIST.replace('resourceVersion: ""', "resourceVersion: 017"), True, id="list-keys-re-read"),
        pytest.param("kind: Pod\n---\nkind: Node\n---\n", True, id="documents-and-an-empty-one"),
        pytest.param("# only a comment\n", True, id="no-document"),
        pytest.param(KUBECTL_LIST.replace("name: p\n", "name: &p p\n"), False, id="anchor"),
        pytest.param(KUBECTL_LIST.replace("name: q\n", "name: *p\n"), False, id="alias"),
        pytest.param(KUBECTL_LIST.replace("name: q\n", "name: !!str q\n"), False, id="tag"),
        pytest.param("%YAML 1.1\n---\na: 1\n", False, id="directive"),
        pytest.param("- - - - a\n", False, id="nesting-run"),
        pytest.param("a:\n" + " " * 200 + "b: 1\n", False, id="deep-indentation"),
        pytest.param("a: b\x07\n", False, id="control-character"),
        pytest.param("a: b\u2028c\n", False, id="yaml-1.1-line-break"),
        pytest.param("a: [1, 2\n", False, id="syntax-error"),
    ],
)
def test_fast_path_cases(text: str, taken: bool) -> None:
    """kubectl's List shape is read item by item, a flagged item or key alone is re-read by PyYAML, and a
    stream with anchors, tags, directives, deep nesting, controls or a syntax error is left to PyYAML."""
    assert agree(text) is taken


def test_flagged_tokens_are_yaml_11_look_alikes() -> None:
    """The scan flags plain tokens YAML 1.1 reads otherwise (and values quoted or plain strings in both
    readings are left alone), so a kubectl dump is read fast."""
    risky, flagged = fast_yaml.scan(KUBECTL_LIST)
    assert (risky, flagged) == (False, [])
    text = "a: on\nb: 'on'\nc: 1_000\nd: 100m\nyes: 1\ne:\n  2026-01-01\nf: 10.0.0.1\n"
    risky, flagged = fast_yaml.scan(text)
    assert not risky
    assert [text[text.rfind("\n", 0, i) + 1 : text.find("\n", i)] for i in flagged] == [
        "a: on", "c: 1_000", "yes: 1", "  2026-01-01"
    ]


def test_deep_nesting_never_reaches_the_parser() -> None:
    """yaml-rs overflows its stack on ~100,000 levels of `- `: such text is refused before parsing."""
    assert fast_yaml.deep("- " * 100_000 + "a")
    assert fast(("- " * 100_000) + "a") is None
    assert yaml.safe_load("a: 1") == {"a": 1}
