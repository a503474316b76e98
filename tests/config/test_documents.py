"""Untrusted YAML/JSON input is read in bounded time and memory, or refused with a message saying why."""

from __future__ import annotations

import pytest

from scheduler.config.documents import DocumentError, bounded, decode_text, load_all


def billion_laughs(levels: int = 9) -> str:
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    prev = "a"
    for i in range(1, levels + 1):
        name = chr(ord("a") + i)
        text += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
        prev = name
    return text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(billion_laughs(), "expands to more than", id="alias-bomb"),
        pytest.param("a: &a [1, *a]\n", "recursive", id="recursive-alias"),
        pytest.param("[" * 5000 + "]" * 5000, "nesting depth", id="flow-nesting"),
        pytest.param("".join(" " * i + "a:\n" for i in range(3000)) + " " * 3000 + "b: 1\n", "nesting", id="block"),
        pytest.param("x: " + "9" * 10000, "digits", id="huge-integer"),
        pytest.param("a: [1, 2\n", "invalid YAML", id="syntax"),
    ],
)
def test_hostile_documents_are_refused(text: str, message: str) -> None:
    """Each hostile shape ends in DocumentError (never RecursionError, ValueError or a hang)."""
    with pytest.raises(DocumentError, match=message):
        load_all(text, "input")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(b"kind: Node\n\xff\xfe", "not UTF-8 text (invalid byte at offset 11)", id="latin1"),
        pytest.param(b"kind: Node\x00\x01\x02", "not a text file (NUL byte at offset 10)", id="binary"),
    ],
)
def test_non_text_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(DocumentError) as err:
        decode_text(data, "input")
    assert str(err.value) == f"input: {message}"


def test_aliases_within_bounds_are_unshared() -> None:
    """A harmless anchor is accepted, but the two uses no longer share one dict (simulate mutates objects)."""
    [doc] = load_all("a: &x {b: [1, 2]}\nc: *x\n", "input")
    assert doc == {"a": {"b": [1, 2]}, "c": {"b": [1, 2]}}
    assert doc["a"] is not doc["c"] and doc["a"]["b"] is not doc["c"]["b"]


def test_unshared_document_is_returned_as_is() -> None:
    doc = {"a": [{"b": 1}], "c": "d"}
    assert bounded(doc, "x") is doc


def test_json_and_yaml_streams() -> None:
    """JSON takes the json path (one document); YAML streams give every document; empty ones are kept."""
    assert load_all('{"kind": "List", "items": []}', "in") == [{"kind": "List", "items": []}]
    assert load_all("a: 1\n---\nb: 2\n", "in") == [{"a": 1}, {"b": 2}]
    assert load_all("[1, 2]", "in") == [[1, 2]]


TRICKY_YAML = [
    "a: yes\nb: on\nc: 0o17\nd: 017\ne: 1_000\nf: ~\ng: 2026-01-01\nh: 2026-01-01T00:00:00Z\ni: .inf\nj: 0x1F\n",
    "base: &b {cpu: 100m, memory: 1Gi}\npod:\n  <<: *b\n  cpu: 200m\nlist: [*b, *b]\n",
    "s: !!str 123\nb: !!binary aGVsbG8=\nn: !!null ''\nf: !!float 1\nq: '00123'\nu: \"\\u00e9\"\n",
    "- [1, 2, [3, {a: b}]]\n- {? [x] : y}\n",
    "---\nkind: Pod\n---\n---\nkind: Node\nmetadata: {labels: {'1': 2, 3: four, true: false}}\n",
]


@pytest.mark.parametrize("text", TRICKY_YAML)
def test_fast_yaml_loader_builds_what_pyyaml_builds(text: str) -> None:
    """The faster constructor (cached scalar resolution, direct str/map/seq building) gives PyYAML's own
    values and errors: YAML 1.1 booleans and octals, merge keys, timestamps, explicit tags, aliases."""
    import yaml

    from scheduler.config.documents import _FAST_LOADER

    assert _FAST_LOADER is not None and _FAST_LOADER.__name__ == "FastSafeLoader"
    try:
        expected: object = list(yaml.load_all(text, Loader=yaml.CSafeLoader))
    except yaml.YAMLError as exc:
        expected = type(exc)
    try:
        got: object = load_all(text, "t")
    except DocumentError:
        got = "error"
    if isinstance(expected, type):
        assert got == "error"
    else:
        assert got == expected
