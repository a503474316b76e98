"""CEL's grammar (cel-spec's CEL.g4, as cel-go parses it) into ast nodes, with the macros expanded at parse time.

A recursive-descent parser: the grammar is small and LL(1) but for the optional-field forms. Positions and the
"ERROR: <input>:line:col: message" layout match cel-go; the wording of syntax errors is our own (cel-go's
comes from ANTLR's recovery and names the token sets it expected), which is documented in docs/dra.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scheduler.dra.cel import ast
from scheduler.dra.cel.values import Uint

RESERVED = frozenset(
    [
        "as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop", "package",
        "namespace", "return", "var", "void", "while",
    ]
)
INT64_MIN, INT64_MAX, UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\n\r\f]+|//[^\n]*)
  | (?P<num>0[xX][0-9a-fA-F]+[uU]?
      |(?:[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+(?:[eE][+-]?[0-9]+)?)
      |[0-9]+[uU]?)
  | (?P<str>[rR]?[bB]?[rR]?(?:'''|\"\"\"|'|\"))
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|\.\?|\[\?|[-+*/%!<>?:.,\[\](){}])
""",
    re.VERBOSE,
)


class ParseError(Exception):
    """A syntax error at an offset; `more` holds the macro errors found before it (cel-go reports them all)."""

    def __init__(self, pos: int, message: str, more: list[ParseError] | None = None) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message
        self.more = more or []

    def all(self) -> list[ParseError]:
        """This error and the others, by position."""
        return sorted([*self.more, self], key=lambda e: e.pos)


@dataclass
class Token:
    """A lexed token: kind is num, str, ident, op or eof; value is the literal's value for num and str."""

    kind: str
    text: str
    pos: int
    value: object = None


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_ESCAPES.update({c: c for c in "\\'\"`?"})


def _unescape(body: str, pos: int, raw: bool, is_bytes: bool) -> str | bytes:
    if raw:
        return body.encode() if is_bytes else body
    out: list[str | int] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(body):
            raise ParseError(pos, "Syntax error: invalid escape sequence")
        e = body[i + 1]
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 2
        elif e in "xX" and re.match(r"[0-9a-fA-F]{2}", body[i + 2 : i + 4]):
            code = int(body[i + 2 : i + 4], 16)
            out.append(code if is_bytes else chr(code))
            i += 4
        elif e in "uU" and not is_bytes:
            n = 4 if e == "u" else 8
            digits = body[i + 2 : i + 2 + n]
            if not re.fullmatch(rf"[0-9a-fA-F]{{{n}}}", digits):
                raise ParseError(pos, "Syntax error: invalid escape sequence")
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise ParseError(pos, "Syntax error: invalid unicode code point")
            out.append(chr(code))
            i += 2 + n
        elif e in "0123" and re.match(r"[0-7]{3}", body[i + 1 : i + 4]):
            code = int(body[i + 1 : i + 4], 8)
            out.append(code if is_bytes else chr(code))
            i += 4
        else:
            raise ParseError(pos, "Syntax error: invalid escape sequence")
    if is_bytes:
        data = bytearray()
        for part in out:
            data.extend(bytes([part]) if isinstance(part, int) else part.encode())
        return bytes(data)
    return "".join(p if isinstance(p, str) else chr(p) for p in out)


def tokenize(text: str) -> list[Token]:
    """Split the expression into tokens; literals carry their values."""
    tokens: list[Token] = []
    i = 0
    while i < len(text):
        m = _TOKEN.match(text, i)
        if m is None:
            raise ParseError(i, f"Syntax error: token recognition error at: '{text[i]}'")
        kind = m.lastgroup or ""
        if kind == "ws":
            i = m.end()
            continue
        if kind == "str":
            prefix = m.group("str")
            quote = prefix.lstrip("rRbB")
            flags = prefix[: len(prefix) - len(quote)].lower()
            start = m.end()
            end = start
            while True:
                end = text.find(quote, end)
                if end < 0:
                    raise ParseError(i, f"Syntax error: token recognition error at: '{text[i:]}'")
                if "r" not in flags:
                    backslashes = 0
                    j = end - 1
                    while j >= start and text[j] == "\\":
                        backslashes += 1
                        j -= 1
                    if backslashes % 2:
                        end += 1
                        continue
                break
            body = text[start:end]
            if len(quote) == 1 and "\n" in body:
                raise ParseError(i, "Syntax error: token recognition error at: '" + text[i : start + body.index("\n")])
            value = _unescape(body, i, "r" in flags, "b" in flags)
            tokens.append(Token("str", text[i : end + len(quote)], i, value))
            i = end + len(quote)
            continue
        tok = m.group(kind)
        if kind == "num":
            tokens.append(Token("num", tok, i, _number(tok, i)))
        else:
            tokens.append(Token(kind, tok, i))
        i = m.end()
    tokens.append(Token("eof", "<EOF>", len(text)))
    return tokens


def _number(tok: str, pos: int) -> object:
    lower = tok.lower()
    if lower.startswith("0x"):
        if lower.endswith("u"):
            v = int(lower[2:-1], 16)
            if v > UINT64_MAX:
                raise ParseError(pos, "invalid uint literal")
            return Uint(v)
        return int(lower[2:], 16)
    if lower.endswith("u"):
        v = int(lower[:-1])
        if v > UINT64_MAX:
            raise ParseError(pos, "invalid uint literal")
        return Uint(v)
    if "." in lower or "e" in lower:
        return float(lower)
    return int(lower)


_RELATIONS = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "==": "_==_", "!=": "_!=_", "in": "@in"}
_ADDITIVE = {"+": "_+_", "-": "_-_"}
_MULTIPLICATIVE = {"*": "_*_", "/": "_/_", "%": "_%_"}
ONE_VAR_MACROS = {"all": 2, "exists": 2, "exists_one": 2, "filter": 2, "optMap": 2, "optFlatMap": 2, "sortBy": 2}
TWO_VAR_MACROS: dict[str, int | tuple[int, int]] = {"all": 3, "exists": 3, "existsOne": 3, "exists_one": 3}
TWO_VAR_MACROS.update({"transformList": (3, 4), "transformMap": (3, 4)})
TWO_VAR_MACROS["transformMapEntry"] = (3, 4)


class Parser:
    """One expression's parser; `parse()` returns the root node or raises ParseError."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.depth = 0
        # macro misuse (has(x), a comprehension variable that is not a name) is reported, parsing goes on
        self.macro_errors: list[ParseError] = []

    def peek(self, offset: int = 0) -> Token:
        return self.tokens[min(self.i + offset, len(self.tokens) - 1)]

    def take(self) -> Token:
        tok = self.tokens[self.i]
        self.i = min(self.i + 1, len(self.tokens) - 1)
        return tok

    def at(self, text: str) -> bool:
        tok = self.tokens[self.i]
        return tok.kind in ("op", "ident") and tok.text == text

    def expect(self, text: str) -> Token:
        tok = self.peek()
        if not self.at(text):
            raise ParseError(tok.pos, f"Syntax error: mismatched input '{tok.text}' expecting '{text}'")
        return self.take()

    def parse(self) -> ast.Node:
        try:
            node = self.expr()
            tok = self.peek()
            if tok.kind != "eof":
                raise ParseError(tok.pos, f"Syntax error: extraneous input '{tok.text}' expecting <EOF>")
        except ParseError as e:
            e.more = self.macro_errors + e.more
            raise
        if self.macro_errors:
            first, *rest = self.macro_errors
            raise ParseError(first.pos, first.message, rest)
        return node

    def expr(self) -> ast.Node:
        self.depth += 1
        if self.depth > 250:
            raise ParseError(self.peek().pos, "expression recursion limit exceeded")
        cond = self.logical("||", "_||_", self.conditional_and)
        if self.at("?"):
            pos = self.take().pos
            then = self.logical("||", "_||_", self.conditional_and)
            self.expect(":")
            other = self.expr()
            cond = ast.Call(pos, "_?_:_", [cond, then, other])
        self.depth -= 1
        return cond

    def logical(self, op: str, function: str, operand: object) -> ast.Node:
        parse = operand  # a bound method
        assert callable(parse)
        node: ast.Node = parse()
        while self.at(op):
            pos = self.take().pos
            right = parse()
            node = ast.Call(pos, function, [node, right])
        return node

    def conditional_and(self) -> ast.Node:
        return self.logical("&&", "_&&_", self.relation)

    def relation(self) -> ast.Node:
        node = self.additive()
        while True:
            tok = self.peek()
            if tok.kind in ("op", "ident") and tok.text in _RELATIONS:
                self.take()
                node = ast.Call(tok.pos, _RELATIONS[tok.text], [node, self.additive()])
            else:
                return node

    def additive(self) -> ast.Node:
        node = self.multiplicative()
        while self.peek().kind == "op" and self.peek().text in _ADDITIVE:
            tok = self.take()
            node = ast.Call(tok.pos, _ADDITIVE[tok.text], [node, self.multiplicative()])
        return node

    def multiplicative(self) -> ast.Node:
        node = self.unary()
        while self.peek().kind == "op" and self.peek().text in _MULTIPLICATIVE:
            tok = self.take()
            node = ast.Call(tok.pos, _MULTIPLICATIVE[tok.text], [node, self.unary()])
        return node

    def unary(self) -> ast.Node:
        tok = self.peek()
        if self.at("!"):
            ops = []
            while self.at("!"):
                ops.append(self.take().pos)
            node = self.member()
            # cel-go folds an even run of '!' away (as it does for '-').
            if len(ops) % 2:
                return ast.Call(ops[0], "!_", [node])
            return node
        if self.at("-"):
            nxt = self.peek(1)
            if nxt.kind == "num" and not isinstance(nxt.value, Uint):
                self.take()
                value = self.take().value
                assert isinstance(value, (int, float))
                if isinstance(value, int) and not INT64_MIN <= -value <= INT64_MAX:
                    raise ParseError(tok.pos, "invalid int literal")
                return self.member_suffix(ast.Literal(tok.pos, -value))
            ops = []
            while self.at("-"):
                ops.append(self.take().pos)
            node = self.member()
            if len(ops) % 2:
                return ast.Call(ops[0], "-_", [node])
            return node
        return self.member()

    def member(self) -> ast.Node:
        return self.member_suffix(self.primary())

    def member_suffix(self, node: ast.Node) -> ast.Node:
        while True:
            tok = self.peek()
            if tok.kind != "op":
                return node
            if tok.text in (".", ".?"):
                self.take()
                name = self.peek()
                if name.kind != "ident":
                    raise ParseError(name.pos, f"Syntax error: mismatched input '{name.text}' expecting IDENTIFIER")
                self.take()
                if tok.text == "." and self.at("("):
                    paren = self.take().pos
                    args = self.arguments(")")
                    node = self.macro_or_call(paren, name.text, node, args)
                else:
                    node = ast.Select(name.pos - 1 if tok.text == "." else name.pos - 2, node, name.text,
                                      optional=tok.text == ".?")
            elif tok.text in ("[", "[?"):
                self.take()
                index = self.expr()
                self.expect("]")
                node = ast.Call(tok.pos, "_[?_]" if tok.text == "[?" else "_[_]", [node, index])
            else:
                return node

    def arguments(self, close: str) -> list[ast.Node]:
        args: list[ast.Node] = []
        if self.at(close):
            self.take()
            return args
        while True:
            args.append(self.expr())
            if self.at(","):
                self.take()
                if self.at(close):
                    self.take()
                    return args
                continue
            self.expect(close)
            return args

    def primary(self) -> ast.Node:
        tok = self.peek()
        if tok.kind == "num" or tok.kind == "str":
            self.take()
            if type(tok.value) is int and tok.value > INT64_MAX:
                raise ParseError(tok.pos, "invalid int literal")
            return ast.Literal(tok.pos, tok.value)
        if tok.kind == "ident":
            self.take()
            if tok.text in ("true", "false"):
                return ast.Literal(tok.pos, tok.text == "true")
            if tok.text == "null":
                return ast.Literal(tok.pos, None)
            if tok.text in RESERVED:
                raise ParseError(tok.pos, f"reserved identifier: {tok.text}")
            if tok.text == "in":
                raise ParseError(tok.pos, "Syntax error: extraneous input 'in'")
            if self.at("("):
                paren = self.take().pos
                args = self.arguments(")")
                return self.macro_or_call(paren, tok.text, None, args)
            struct = self.struct_literal(tok.text)
            if struct is not None:
                return struct
            return ast.Ident(tok.pos, tok.text)
        if tok.kind == "op":
            if tok.text == ".":
                self.take()
                name = self.take()
                if name.kind != "ident":
                    raise ParseError(name.pos, f"Syntax error: mismatched input '{name.text}' expecting IDENTIFIER")
                if self.at("("):
                    paren = self.take().pos
                    return self.macro_or_call(paren, "." + name.text, None, self.arguments(")"))
                return ast.Ident(name.pos, "." + name.text)
            if tok.text == "(":
                self.take()
                node = self.expr()
                self.expect(")")
                return node
            if tok.text == "[":
                self.take()
                return self.list_literal(tok.pos)
            if tok.text == "{":
                self.take()
                return self.map_literal(tok.pos)
        if tok.kind == "eof":
            raise ParseError(tok.pos, "Syntax error: mismatched input '<EOF>' expecting an expression")
        raise ParseError(tok.pos, f"Syntax error: mismatched input '{tok.text}' expecting an expression")

    def struct_literal(self, first: str) -> ast.Node | None:
        """`a.b.Type{field: value, ...}` after the first identifier, or None (then nothing is consumed)."""
        names = [first]
        k = 0
        while self.peek(k).text == "." and self.peek(k + 1).kind == "ident":
            names.append(self.peek(k + 1).text)
            k += 2
        if self.peek(k).text != "{" or self.peek(k).kind != "op":
            return None
        for _ in range(k):
            self.take()
        brace = self.take().pos
        fields: list[tuple[str, ast.Node]] = []
        while not self.at("}"):
            if self.at("?"):
                self.take()
            name = self.take()
            if name.kind != "ident":
                raise ParseError(name.pos, f"Syntax error: mismatched input '{name.text}' expecting IDENTIFIER")
            self.expect(":")
            fields.append((name.text, self.expr()))
            if not self.at(","):
                break
            self.take()
        self.expect("}")
        return ast.CreateStruct(brace, ".".join(names), fields)

    def list_literal(self, pos: int) -> ast.Node:
        elements: list[ast.Node] = []
        optional: set[int] = set()
        while not self.at("]"):
            if self.at("?"):
                self.take()
                optional.add(len(elements))
            elements.append(self.expr())
            if not self.at(","):
                break
            self.take()
        self.expect("]")
        return ast.CreateList(pos, elements, frozenset(optional))

    def map_literal(self, pos: int) -> ast.Node:
        entries: list[tuple[ast.Node, ast.Node, bool]] = []
        while not self.at("}"):
            opt = False
            if self.at("?"):
                self.take()
                opt = True
            key = self.expr()
            self.expect(":")
            entries.append((key, self.expr(), opt))
            if not self.at(","):
                break
            self.take()
        self.expect("}")
        return ast.CreateMap(pos, entries)

    def macro_or_call(self, pos: int, name: str, target: ast.Node | None, args: list[ast.Node]) -> ast.Node:
        if target is None:
            if name == "has" and len(args) == 1:
                arg = args[0]
                if not isinstance(arg, ast.Select) or arg.optional:
                    self.macro_errors.append(ParseError(arg.pos, "invalid argument to has() macro"))
                    return ast.Literal(pos, False)
                return ast.Select(arg.pos, arg.operand, arg.field, test_only=True)
            return ast.Call(pos, name, args)
        if name == "bind" and len(args) == 3 and isinstance(target, ast.Ident) and target.name == "cel":
            var = self.simple_name(args[0])
            return ast.Comprehension(pos, "bind", args[1], var, None, [args[2]])
        if name in ONE_VAR_MACROS and len(args) == ONE_VAR_MACROS[name]:
            return ast.Comprehension(pos, name, target, self.simple_name(args[0]), None, [args[1]])
        if name == "map" and len(args) in (2, 3):
            return ast.Comprehension(pos, "map", target, self.simple_name(args[0]), None, args[1:])
        two = TWO_VAR_MACROS.get(name)
        if two is not None and (len(args) == two if isinstance(two, int) else len(args) in two):
            var, var2 = self.simple_name(args[0]), self.simple_name(args[1])
            if var == var2:
                raise ParseError(args[1].pos, "duplicate variable name: " + var)
            return ast.Comprehension(pos, name, target, var, var2, args[2:])
        return ast.Call(pos, name, args, target)

    def simple_name(self, node: ast.Node) -> str:
        if not isinstance(node, ast.Ident):
            raise ParseError(node.pos, "argument must be a simple name")
        if node.name.startswith("__") or node.name == "@result":
            raise ParseError(node.pos, "iteration variable overwrites accumulator variable")
        return node.name


def parse(text: str) -> ast.Node:
    """Parse one expression (raises ParseError)."""
    return Parser(text).parse()


def location(text: str, pos: int) -> tuple[int, int, str]:
    """1-based line and column of an offset (cel-go counts code points), and that line's text."""
    line_start = text.rfind("\n", 0, pos) + 1
    line_end = text.find("\n", pos)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    return text.count("\n", 0, pos) + 1, pos - line_start + 1, line


def format_error(text: str, pos: int, message: str) -> str:
    """cel-go's issue layout: `ERROR: <input>:L:C: message` then the line and a caret under the column."""
    line_no, col, line = location(text, pos)
    line = line.replace("\t", " ")
    caret = "." * (col - 1) + "^"
    return f"ERROR: <input>:{line_no}:{col}: {message}\n | {line}\n | {caret}"
