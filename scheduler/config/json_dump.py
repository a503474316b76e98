"""A `kubectl get -o json` List decoded with each distinct bound-pod spec decoded once.

The bound pods of one Deployment carry the same spec but for `spec.nodeName`: in a 5000-node dump, 50,000
copies of a few specs are half the bytes. Here the List's items are read with their specs left as raw JSON;
each bound pod's spec text, its nodeName value cut out, is the key, and one key's spec is decoded once. Each
pod gets its own top-level spec dict (its nodeName set in it), whose values it shares with the pods of its
key: nothing simulate does writes below a spec's top level of a bound pod (it writes spec.nodeName,
spec.priority and the like, and status), and tests/test_json_dump.py holds it to that.

Exactness: equal keys are equal bytes but for the cut, so equal values of the same JSON types; the cut is the
top-level nodeName's value only when decoding the key with two different stand-ins there gives each back as
spec.nodeName (a nested "nodeName" or a duplicate key fails that, and those pods are decoded one by one).
Every byte is decoded once: a key's text with its first pod, each cut value on its own. An item's own fields
come in a fixed order (apiVersion, kind, metadata, spec, status, then another kind's; what kubectl prints).
Anything else (an item field none of `_Item`'s kinds has, a top level that is no List, a value msgspec
refuses) returns None: the caller then decodes the whole document as before, with the messages it always
gave.
"""

from __future__ import annotations

import mmap
import re
from typing import Any, Final, NamedTuple

import msgspec

_EMPTY: Final = msgspec.Raw(b"")


class _Item(msgspec.Struct, forbid_unknown_fields=True):
    """An item of any kind simulate reads: its fields are these (a field of none of them fails the decode)."""

    apiVersion: Any = msgspec.UNSET
    kind: Any = msgspec.UNSET
    metadata: Any = msgspec.UNSET
    spec: msgspec.Raw = _EMPTY
    status: Any = msgspec.UNSET
    # PriorityClass
    value: Any = msgspec.UNSET
    globalDefault: Any = msgspec.UNSET
    description: Any = msgspec.UNSET
    preemptionPolicy: Any = msgspec.UNSET
    # StorageClass
    provisioner: Any = msgspec.UNSET
    parameters: Any = msgspec.UNSET
    reclaimPolicy: Any = msgspec.UNSET
    mountOptions: Any = msgspec.UNSET
    allowVolumeExpansion: Any = msgspec.UNSET
    volumeBindingMode: Any = msgspec.UNSET
    allowedTopologies: Any = msgspec.UNSET
    # CSIStorageCapacity
    storageClassName: Any = msgspec.UNSET
    capacity: Any = msgspec.UNSET
    maximumVolumeSize: Any = msgspec.UNSET
    nodeTopology: Any = msgspec.UNSET


_OWN_FIELDS: Final = ("apiVersion", "kind", "metadata", "spec", "status")
_OTHER_FIELDS: Final = _Item.__struct_fields__[len(_OWN_FIELDS) :]
assert _Item.__struct_fields__[: len(_OWN_FIELDS)] == _OWN_FIELDS
_FIRST_OTHER: Final = len(_OWN_FIELDS)
_OTHERS_UNSET: Final = (msgspec.UNSET,) * len(_OTHER_FIELDS)


class _List(msgspec.Struct, forbid_unknown_fields=True):
    items: list[_Item]
    apiVersion: Any = msgspec.UNSET
    kind: Any = msgspec.UNSET
    metadata: Any = msgspec.UNSET


_DECODE_LIST: Final = msgspec.json.Decoder(_List).decode
_DECODE: Final = msgspec.json.Decoder().decode
HINTS: Final = 8
"""How many places of nodeName are tried before the spec text is searched (a match is ~6 times cheaper)."""
_NODE_NAME: Final = re.compile(rb'"nodeName"[ \t\r\n]*:[ \t\r\n]*("(?:[^"\\]|\\.)*")', re.DOTALL)
_STAND_INS: Final = (b'"\\u0000pyscheduler:1"', b'"\\u0000pyscheduler:2"')
_STAND_IN_VALUES: Final = tuple(msgspec.json.decode(s) for s in _STAND_INS)
KEY_PREFIX: Final = b"\x00json-spec:"
"""Starts every key this module makes (no MessagePack or pickle key starts so), for PodSpecMemo."""


class _Shared:
    """Per load: each key's template spec (None: that key's pods are decoded one by one), found by a probe
    (where the cut is, the text's length, the bytes after the cut) and then the text compared in place, so a
    pod's spec text is neither copied into a key nor hashed whole."""

    __slots__ = ("by_probe", "hints", "priority_classes")

    def __init__(self) -> None:
        # probe -> [(text before the cut, text after it, key, template)]
        self.by_probe: dict[tuple[int, int, bytes], list[tuple[bytes, bytes, bytes, dict[str, Any] | None]]] = {}
        # Where earlier pods' nodeName was, in the order found (the pods of a Deployment have it at the same
        # place; a dump may list the pods of a few Deployments interleaved). Any place a nodeName is cut gives an
        # exact key: the stand-ins prove each new key's cut, wherever it is.
        self.hints: list[int] = []
        self.priority_classes: list[dict[str, Any]] = []  # the List's PriorityClass items, in order

    def template(self, raw: bytes, start: int, end: int) -> tuple[bytes, dict[str, Any] | None]:
        """The key and template of the spec text `raw` whose nodeName value is raw[start:end]."""
        probe = (start, len(raw) - end, raw[end : end + 64])
        known = self.by_probe.setdefault(probe, [])
        for before, after, key, template in known:
            if raw.startswith(before) and raw.endswith(after):  # lengths are the probe's
                return key, template
        before, after = raw[:start], raw[end:]
        first, second = (_DECODE(before + s + after) for s in _STAND_INS)
        template = None
        if (
            type(first) is dict
            and type(second) is dict
            and first.get("nodeName") == _STAND_IN_VALUES[0]
            and second.get("nodeName") == _STAND_IN_VALUES[1]
        ):
            template = first
        key = KEY_PREFIX + before + b"\x00" + after
        known.append((before, after, key, template))
        return key, template


class Listed(NamedTuple):
    """load_json_list's answer."""

    doc: dict[str, Any]
    keys: dict[int, bytes]  # id(bound pod) -> its spec's key, for the pods whose spec was shared
    priority_classes: list[dict[str, Any]]  # the items of kind PriorityClass, in order (the caller needs them first)


def load_json_list(data: bytes | mmap.mmap) -> Listed | None:
    """The List document in `data`, its shared specs' keys and its PriorityClasses; None when `data` is not
    such a List or anything in it needs the general decoder."""
    try:
        top = _DECODE_LIST(data)
        kind = top.kind
        if not isinstance(kind, str) or not kind.endswith("List"):
            return None
        shared = _Shared()
        keys: dict[int, bytes] = {}
        items = [_item(item, shared, keys) for item in top.items]
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeError, ValueError):
        return None
    doc: dict[str, Any] = {}
    for name in ("apiVersion", "items", "kind", "metadata"):
        value = items if name == "items" else getattr(top, name)
        if value is not msgspec.UNSET:
            doc[name] = value
    return Listed(doc, keys, shared.priority_classes)


def _item(item: _Item, shared: _Shared, keys: dict[int, bytes]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    if item.apiVersion is not msgspec.UNSET:
        obj["apiVersion"] = item.apiVersion
    if item.kind is not msgspec.UNSET:
        obj["kind"] = item.kind
    if item.metadata is not msgspec.UNSET:
        obj["metadata"] = item.metadata
    raw = bytes(item.spec)
    if raw:
        spec = _bound_spec(raw, shared, keys, obj) if item.kind == "Pod" else None
        obj["spec"] = spec if spec is not None else _DECODE(raw)
    if item.status is not msgspec.UNSET:
        obj["status"] = item.status
    values = msgspec.structs.astuple(item)
    if values[_FIRST_OTHER:] != _OTHERS_UNSET:  # another kind's fields (one comparison for a Pod or a Node)
        for name, value in zip(_OTHER_FIELDS, values[_FIRST_OTHER:], strict=True):
            if value is not msgspec.UNSET:
                obj[name] = value
    if item.kind == "PriorityClass":  # (even one without its fields: the caller checks them)
        shared.priority_classes.append(obj)
    return obj


def _bound_spec(raw: bytes, shared: _Shared, keys: dict[int, bytes], obj: dict[str, Any]) -> dict[str, Any] | None:
    """The pod's spec built on its key's template, or None (not bound, or not shareable)."""
    hints = shared.hints
    for at in hints:
        found = _NODE_NAME.match(raw, at)
        if found is not None:
            break
    else:
        found = _NODE_NAME.search(raw)
        if found is None:
            return None
        if len(hints) < HINTS:
            hints.append(found.start())
        else:  # (the first ones stay: each is the place of the pods seen first)
            hints[-1] = found.start()
    node_name = _DECODE(found.group(1))
    if not isinstance(node_name, str) or not node_name:
        return None  # a pending pod: its own spec, which binding writes into
    key, template = shared.template(raw, found.start(1), found.end(1))
    if template is None:
        return None
    spec = dict(template)
    spec["nodeName"] = node_name
    keys[id(obj)] = key
    return spec
