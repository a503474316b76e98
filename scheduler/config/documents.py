"""Reading untrusted YAML/JSON documents (cluster dumps, configuration files) in bounded time and memory.

What can go wrong with such input, and what happens instead:
- not text (NUL bytes, non-UTF-8): `DocumentError` naming the byte offset;
- nesting thousands deep: libyaml refuses depth > 1000 and the pure-Python fallback is depth-checked, so no
  RecursionError (or C stack overflow) escapes;
- integers with thousands of digits: Python refuses them (int max str digits); reported, not raised through;
- YAML alias bombs ("billion laughs"): anchors make shared objects that would expand exponentially once
  walked or copied; what the aliases add is counted (each distinct object once), a document to which they
  add more than `MAX_EXPANDED_NODES` values is refused, and one that shares objects within the limit is
  unshared (simulate mutates objects: two pods must never share a spec dict; json_dump.py shares only the
  values under a bound pod's spec, which nothing writes). A document without aliases
  is as big as its text, whatever its size: a 5000-node List of 20 million values is no bomb.
JSON input (what `kubectl get -o json` prints) takes msgspec's decoder (stdlib `json` when msgspec refuses
what json accepts: NaN, lone surrogates, numbers beyond float); big YAML streams go through yaml-rs with
YAML 1.1's readings kept (`fast_yaml`), the rest through libyaml with PyYAML's constructor made faster.
"""

from __future__ import annotations

import json
import mmap
import re
from typing import Any, Final

import msgspec
import yaml

from scheduler import caching

MAX_EXPANDED_NODES: Final = 5_000_000
"""Containers and scalars YAML aliases may add to a document once followed (each distinct object counted once)."""

MAX_DEPTH: Final = 500
"""Nesting depth accepted from the pure-Python loader (libyaml stops at 1000 itself)."""

_JSON_START: Final = re.compile(rb"[ \t\r\n]*[\[{]")  # without copying a 500 MB buffer to lstrip it
_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"
_RESOLVE_CACHE_MAX = 100_000
_RESOLVED: dict[tuple[str, bool, bool], str] = {}  # (plain scalar text, implicit flags) -> resolved tag
caching.register_clear(_RESOLVED.clear)


def _fast_loader() -> Any:
    """libyaml's safe loader with a faster constructor (same results; None without libyaml).

    libyaml parses and composes in C, but PyYAML resolves every plain scalar with regexes and builds
    every value through generic Python machinery: 90% of the time on a large dump. Here a scalar's
    resolution is cached by its text (a dump repeats the same keys and values), and strings, mappings and
    sequences are built directly; everything else (ints, bools, nulls, floats, timestamps, merge keys, unknown
    tags and their errors) goes through SafeConstructor exactly as before. Aliased nodes stay shared, so
    `bounded` still sees an alias bomb.
    """
    base = getattr(yaml, "CSafeLoader", None)
    if base is None:
        return None

    class FastSafeLoader(base):  # type: ignore[misc, valid-type]
        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if kind is not yaml.ScalarNode or not isinstance(value, str):
                return super().resolve(kind, value, implicit)
            key = (value, bool(implicit[0]), bool(implicit[1]))
            tag = _RESOLVED.get(key)
            if tag is None:
                tag = str(super().resolve(kind, value, implicit))
                if len(_RESOLVED) >= _RESOLVE_CACHE_MAX:
                    _RESOLVED.clear()
                _RESOLVED[key] = tag
            return tag

        def construct_document(self, node: Any) -> Any:
            memo: dict[int, Any] = {}
            mapping_node, sequence_node = yaml.MappingNode, yaml.SequenceNode

            def build(n: Any) -> Any:
                tag = n.tag
                if tag == _STR and type(n) is yaml.ScalarNode:
                    return n.value
                cls = type(n)
                if cls is mapping_node and tag == _MAP and not any(k.tag == _MERGE for k, _ in n.value):
                    got = memo.get(id(n))
                    if got is not None:
                        return got
                    out: dict[Any, Any] = {}
                    memo[id(n)] = out
                    for key_node, value_node in n.value:
                        key = build(key_node)
                        value = build(value_node)
                        try:
                            out[key] = value
                        except TypeError as exc:  # an unhashable key, as SafeConstructor reports it
                            raise yaml.constructor.ConstructorError(
                                "while constructing a mapping", n.start_mark, "found unhashable key",
                                key_node.start_mark,
                            ) from exc
                    return out
                if cls is sequence_node and tag == _SEQ:
                    got = memo.get(id(n))
                    if got is not None:
                        return got
                    items: list[Any] = []
                    memo[id(n)] = items
                    items.extend(build(child) for child in n.value)
                    return items
                return self.construct_object(n, deep=True)

            try:
                return build(node)
            finally:
                self.constructed_objects.clear()
                self.recursive_objects.clear()
                self.state_generators.clear()
                self.deep_construct = False

    return FastSafeLoader


_FAST_LOADER: Any = _fast_loader()


class DocumentError(ValueError):
    """Input that is not a readable YAML/JSON document; the message says what and where."""


def decode_text(data: bytes, source: str) -> str:
    """UTF-8 text or DocumentError (a binary file, another encoding)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{source}: not UTF-8 text (invalid byte at offset {exc.start})") from exc
    nul = text.find("\x00")
    if nul >= 0:
        raise DocumentError(f"{source}: not a text file (NUL byte at offset {nul})")
    return text


def load_all(text: str, source: str) -> list[Any]:
    """Every document of a YAML stream (or the one JSON document), checked and unshared."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            return [_load_json(text)]  # JSON has no aliases: nothing is shared, nothing to bound
        except (ValueError, RecursionError):
            pass  # YAML flow style also starts with { or [

    def house(part: str) -> list[Any]:
        docs = [bounded(doc, f"{source}: document {i + 1}") for i, doc in enumerate(_load_yaml(part, source))]
        return [without_lone_surrogates(doc) for doc in docs] if _SURROGATE_ESCAPE.search(part) else docs

    if caching.ENABLED:
        from scheduler.config import fast_yaml  # (yaml-rs: imported by a YAML load only, not by a JSON one)

        try:
            docs = fast_yaml.load_all(text, house)
        except DocumentError:
            docs = None  # a piece PyYAML refuses: read it all again, so the error names the file's lines
        if docs is not None:
            return docs
    return house(text)


def looks_like_json(data: bytes | mmap.mmap) -> bool:
    """The first non-blank byte opens a JSON object or array (YAML may too: then the JSON decoders refuse it)."""
    return _JSON_START.match(data) is not None


def load_json_bytes(data: bytes | mmap.mmap) -> Any | None:
    """The JSON document in `data` decoded straight from bytes (no str copy of a 500 MB dump), or None when
    it does not look like JSON or msgspec refuses it: then decode_text and load_all give the answer."""
    if not caching.ENABLED or not looks_like_json(data):
        return None
    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None


def json_bytes(raw: bytes) -> Any:
    """An API answer decoded by msgspec (1.5-3x faster than json, the same values), json's reading when
    msgspec refuses what json accepts (a ValueError either way when it is no JSON)."""
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return json.loads(raw)


def _load_json(text: str) -> Any:
    """msgspec's decoder where it agrees with json's (it refuses NaN, lone surrogates, 1e400: json reads them)."""
    if caching.ENABLED:
        try:
            return msgspec.json.decode(text)
        except (msgspec.DecodeError, RecursionError):
            pass
    doc = json.loads(text)
    return without_lone_surrogates(doc) if _SURROGATE_ESCAPE.search(text) else doc


_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")  # the only way a surrogate gets into parsed text


def without_lone_surrogates(doc: Any) -> Any:
    """Each lone UTF-16 surrogate (`"\\udc80"`, legal JSON and YAML escapes) replaced by U+FFFD, as Go's JSON
    decoder in kube-apiserver replaces it: the string is then a plain one that validation judges (a label
    `app\ufffd` is refused with the apiserver's words) instead of text no encoder can write. Iterative: any
    depth the parser accepted."""

    def clean(value: str) -> str:
        return _SURROGATE.sub("\ufffd", value) if not value.isascii() else value

    if isinstance(doc, str):
        return clean(doc)
    stack = [doc] if isinstance(doc, dict | list) else []
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in [k for k in node if isinstance(k, str) and clean(k) is not k]:
                node[clean(key)] = node.pop(key)
            items: Any = node.items()
        else:
            items = enumerate(node)
        for key, value in list(items):
            if isinstance(value, str):
                node[key] = clean(value)
            elif isinstance(value, dict | list):
                stack.append(value)
    return doc


def _load_yaml(text: str, source: str) -> list[Any]:
    # With caches disabled (scheduler.caching), libyaml's own safe loader: no scalar cache, no fast constructor.
    loader_cls = (_FAST_LOADER if caching.ENABLED else getattr(yaml, "CSafeLoader", None)) or DepthCheckedLoader
    loader = None
    try:
        loader = loader_cls(text)  # the pure-Python reader checks characters here already
        return _iter_docs(loader)
    except yaml.YAMLError as exc:
        raise DocumentError(f"{source}: invalid YAML: {' '.join(str(exc).split())}") from exc
    except RecursionError as exc:
        raise DocumentError(f"{source}: invalid YAML: nested too deeply") from exc
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise DocumentError(f"{source}: invalid YAML value: {exc}") from exc
    finally:
        if loader is not None:
            loader.dispose()


def _iter_docs(loader: Any) -> list[Any]:
    out = []
    while loader.check_data():
        out.append(loader.get_data())
    return out


class DepthCheckedLoader(yaml.SafeLoader):
    """The pure-Python safe loader with a nesting limit (it composes recursively)."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise yaml.composer.ComposerError(None, None, f"nesting deeper than {MAX_DEPTH} levels", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def bounded(doc: Any, where: str, limit: int = MAX_EXPANDED_NODES) -> Any:
    """The document itself when it shares no objects; an unshared copy when it does (within `limit`).

    The expanded size is computed once per distinct container (memoized by identity), so checking costs
    time proportional to the document as parsed, not as expanded. Raises DocumentError when following the
    aliases would add more than `limit` values to those the document has as parsed.
    """
    sizes: dict[int, int] = {}
    shared = False
    parsed = 0  # values as parsed: each distinct container once, with its own scalars
    # Iterative post-order: (node, children done?)
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, done = stack.pop()
        if not isinstance(node, dict | list):
            continue
        key = id(node)
        children = node.values() if isinstance(node, dict) else node
        if not done:
            if key in sizes:
                shared = True
                continue
            sizes[key] = -1  # in progress
            stack.append((node, True))
            for child in children:
                if isinstance(child, dict | list):
                    if id(child) in sizes:
                        shared = True
                    else:
                        stack.append((child, False))
            continue
        total = own = 1
        for child in children:
            if isinstance(child, dict | list):
                size = sizes[id(child)]
                if size < 0:
                    raise DocumentError(f"{where}: a YAML alias refers to a value that contains it (recursive)")
                total += size
            else:
                total += 1
                own += 1
        parsed += own
        sizes[key] = total
        if shared and total - parsed > limit:
            raise DocumentError(f"{where}: expands to more than {limit} values through YAML aliases (an alias bomb?)")
    if not shared:
        return doc
    return _unshare(doc)


def _unshare(root: Any) -> Any:
    """A deep copy in which no container appears twice (aliases become copies); iterative, any depth."""

    def fresh(node: Any) -> Any:
        if isinstance(node, dict):
            return {}
        if isinstance(node, list):
            return [None] * len(node)
        return node

    out = fresh(root)
    stack: list[tuple[Any, Any]] = [(root, out)] if isinstance(root, dict | list) else []
    while stack:
        src, dst = stack.pop()
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for key, value in items:
            copy = fresh(value)
            dst[key] = copy
            if isinstance(value, dict | list):
                stack.append((value, copy))
    return out
