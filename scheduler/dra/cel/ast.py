"""The parsed form of a CEL expression: small immutable nodes, each with its offset for error messages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Node:
    """Base of every node; `pos` is the character offset cel-go reports errors at."""

    pos: int


@dataclass(eq=False)
class Literal(Node):
    """A constant: int, Uint, float, str, bytes, bool or None (null)."""

    value: Any


@dataclass(eq=False)
class Ident(Node):
    """A name: a variable, a comprehension variable, or (qualified) a type name."""

    name: str


@dataclass(eq=False)
class Select(Node):
    """`operand.field`; `test_only` is has(operand.field); `optional` is `operand.?field`."""

    operand: Node
    field: str
    test_only: bool = False
    optional: bool = False


@dataclass(eq=False)
class Call(Node):
    """A function call: global (`target` None) or member (`target.function(args)`); operators are calls too."""

    function: str
    args: list[Node]
    target: Node | None = None


@dataclass(eq=False)
class CreateList(Node):
    """`[a, ?b]`: `optional` holds the indexes of the `?` elements."""

    elements: list[Node]
    optional: frozenset[int] = frozenset()


@dataclass(eq=False)
class CreateMap(Node):
    """`{k: v, ?k2: v2}`: entries are (key, value, optional)."""

    entries: list[tuple[Node, Node, bool]]


@dataclass(eq=False)
class Comprehension(Node):
    """A macro over a range: `kind` is all, exists, exists_one, map, filter (one variable) or the two-variable
    all, exists, existsOne, transformList, transformMap, transformMapEntry; `bind` is cel.bind."""

    kind: str
    range: Node
    var: str
    var2: str | None
    body: list[Node] = field(default_factory=list)


@dataclass(eq=False)
class CreateStruct(Node):
    """`Type{field: value}`: a message literal (the DRA environment declares no message types)."""

    type_name: str
    fields: list[tuple[str, Node]]
