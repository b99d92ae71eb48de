"""Reads the text form written by ``printer.py`` back into IR.

``parse_module(text)`` and ``parse_function(text)`` accept exactly what the
printer writes (see its docstring), so a pass can be tested on a few lines of
text and any IR can be cut down to a file.  A tokenizer turns the text into
words, value names, strings and punctuation (newlines included: one op a
line); a recursive-descent ``_Parser`` builds ops generically from their
field kinds, exactly mirroring the printer.  Names are scoped like the IR:
a region sees the values of enclosing blocks defined before its op, and a
value defined in a region is gone after it.

Errors raise ``ParseError`` naming the line and column of the text.
"""
from __future__ import annotations

import dataclasses
import json
import string
from dataclasses import dataclass
from typing import Any, NoReturn, Optional

from tilec.ir.core import UNKNOWN_LOC, Block, Function, Loc, Module, Op, Value, is_trailing
from tilec.ir.ops import all_op_classes
from tilec.ir.layouts import LAYOUT_WORDS, Layout
from tilec.ir.types import SCALAR_TYPES, PointerType, ScalarType, TileType, Type


class ParseError(ValueError):
    """Malformed IR text; ``line`` and ``col`` (1-based) say where."""

    def __init__(self, message: str, line: int, col: int, source_line: str = ""):
        self.message, self.line, self.col = message, line, col
        quote = f"\n    {source_line}\n    {' ' * (col - 1)}^" if source_line.strip() else ""
        super().__init__(f"line {line}, col {col}: {message}{quote}")


# --------------------------------------------------------------------------- #
# Tokens
# --------------------------------------------------------------------------- #

@dataclass(frozen=True)
class Token:
    """``kind`` is punct, word, value (``%x``), symbol (``@f``), string, newline or eof."""

    kind: str
    text: str
    line: int
    col: int


PUNCT = set("()[]{}<>,:=^")
# Words cover identifiers, numbers (``-1e-05``, ``-inf``) and tile dims (``4x8xf32``).
WORD_CHARS = set(string.ascii_letters + string.digits + "_.+-")
SIGILS = {"%": "value", "@": "symbol"}


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, ending with an ``eof`` token."""
    tokens: list[Token] = []
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        ch, col = text[pos], pos - line_start + 1
        if ch in " \t\r":
            pos += 1
            continue
        kind, end = _scan_token(text, pos, line, col)
        tokens.append(Token(kind, text[pos:end], line, col))
        if kind == "newline":
            line, line_start = line + 1, end
        pos = end
    tokens.append(Token("eof", "", line, pos - line_start + 1))
    return tokens


def _scan_token(text: str, pos: int, line: int, col: int) -> tuple[str, int]:
    """The kind and end position of the token starting at ``pos``."""
    ch = text[pos]
    if ch == "\n":
        return "newline", pos + 1
    if ch in PUNCT:
        return "punct", pos + 1
    if ch == '"':
        return "string", _string_end(text, pos, line, col)
    if ch in SIGILS:
        end = _run_end(text, pos + 1, _is_name_char)
        if end == pos + 1:
            raise ParseError(f"`{ch}` must be followed by a name", line, col, _line_of(text, pos))
        return SIGILS[ch], end
    if ch in WORD_CHARS:
        return "word", _run_end(text, pos, WORD_CHARS.__contains__)
    raise ParseError(f"unexpected character {ch!r}", line, col, _line_of(text, pos))


def _run_end(text: str, pos: int, is_part) -> int:
    while pos < len(text) and is_part(text[pos]):
        pos += 1
    return pos


def _is_name_char(ch: str) -> bool:
    """A character of a value name: what the printer keeps (regex ``\\w``, Unicode included)."""
    return ch.isalnum() or ch == "_"


def _string_end(text: str, pos: int, line: int, col: int) -> int:
    """The position after the JSON string literal starting at ``pos``."""
    i = pos + 1
    while i < len(text) and text[i] not in '"\n':
        i += 2 if text[i] == "\\" else 1
    if i >= len(text) or text[i] != '"':
        raise ParseError("unterminated string", line, col, _line_of(text, pos))
    return i + 1


def _line_of(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start:] if end < 0 else text[start:end]


# --------------------------------------------------------------------------- #
# Entry points
# --------------------------------------------------------------------------- #

def parse_module(text: str) -> Module:
    """Every ``func`` in ``text``."""
    return _Parser(text).module()


def parse_function(text: str) -> Function:
    """The single ``func`` in ``text``."""
    p = _Parser(text)
    module = p.module()
    if len(module.functions) != 1:
        p.fail(f"expected exactly one function, found {len(module.functions)}", p.tokens[0])
    return module.functions[0]


_OPERAND_KINDS = ("operand", "optional", "variadic")


class _Parser:
    """Recursive descent over the tokens; one method per piece of the grammar."""

    def __init__(self, text: str):
        self.text_lines = text.split("\n")
        self.tokens = tokenize(text)
        self.pos = 0
        self.ops = all_op_classes()
        self.scopes: list[dict[str, Value]] = []
        self.defined: set[str] = set()  # every name of the current function

    # --- token helpers ---------------------------------------------------------
    def fail(self, message: str, tok: Optional[Token] = None) -> NoReturn:
        tok = tok or self.peek()
        raise ParseError(message, tok.line, tok.col, self.text_lines[tok.line - 1])

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def next(self) -> Token:
        tok = self.peek()
        self.pos += 1
        return tok

    def at(self, text: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.kind in ("punct", "word") and tok.text == text

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.pos += 1
            return True
        return False

    def expect(self, text: str, what: str = "") -> Token:
        if not self.at(text):
            self.fail(f"expected `{text}`{what}, found {_describe(self.peek())}")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> Token:
        if self.peek().kind != kind:
            self.fail(f"expected {what}, found {_describe(self.peek())}")
        return self.next()

    def end_of_line(self) -> None:
        if self.peek().kind not in ("newline", "eof"):
            self.fail(f"expected the end of the line, found {_describe(self.peek())}")
        self.skip_newlines()

    def skip_newlines(self) -> None:
        while self.peek().kind == "newline":
            self.pos += 1

    def comma_list(self, item, close: str) -> list:
        """``item()`` repeated, separated by commas, up to ``close`` (consumed)."""
        items = []
        while not self.accept(close):
            if items:
                self.expect(",", f" or `{close}`")
                if self.accept(close):  # a trailing comma, as in ``(1,)``
                    break
            items.append(item())
        return items

    # --- names -----------------------------------------------------------------
    def define(self, tok: Token, value: Value) -> Value:
        name = tok.text[1:]
        if name in self.defined:
            self.fail(f"value {tok.text} is defined twice", tok)
        self.defined.add(name)
        self.scopes[-1][name] = value
        value.name = name
        return value

    def use(self) -> Value:
        tok = self.expect_kind("value", "a value like `%x`")
        for scope in reversed(self.scopes):
            if tok.text[1:] in scope:
                return scope[tok.text[1:]]
        self.fail(f"value {tok.text} is not defined here", tok)

    # --- functions -------------------------------------------------------------
    def module(self) -> Module:
        module = Module()
        self.skip_newlines()
        while self.peek().kind != "eof":
            module.functions.append(self.function())
        return module

    def function(self) -> Function:
        self.expect("func")
        name = self.expect_kind("symbol", "a function name like `@kernel`").text[1:]
        self.defined, self.scopes = set(), [{}]
        body = Block()
        self.expect("(")
        arg_attrs = self.comma_list(lambda: self.function_arg(body), ")")
        self.expect("{")
        self.end_of_line()
        self.block_ops(body)
        self.expect("}")
        self.end_of_line()
        return Function(name, body, [a.name for a in body.args], arg_attrs)

    def function_arg(self, body: Block) -> dict:
        tok = self.expect_kind("value", "an argument like `%x`")
        self.expect(":")
        self.define(tok, body.add_arg(self.type()))
        return self.attr_dict() if self.at("{") else {}

    def block_ops(self, block: Block) -> None:
        """Ops up to the closing ``}`` (not consumed)."""
        self.skip_newlines()
        while not self.at("}"):
            if self.peek().kind == "eof":
                self.fail("missing `}`")
            block.ops.append(self.op())

    # --- ops -------------------------------------------------------------------
    def op(self) -> Op:
        result_toks = self.result_names()
        name_tok = self.expect_kind("word", "an op name")
        cls = self.ops.get(name_tok.text)
        if cls is None:
            self.fail(f"unknown op `{name_tok.text}`", name_tok)
        fields = self.operands(cls)
        if self.at("{") and self.peek(1).kind != "newline":
            fields.update(self.op_attrs(cls))
        types = self.comma_separated(self.type) if self.accept(":") else []
        if len(types) != len(result_toks):
            self.fail(f"`{cls.NAME}` names {len(result_toks)} result(s) but gives {len(types)} type(s)", name_tok)
        fields.update(self.regions(cls))
        loc = self.loc() if self.at("loc") else UNKNOWN_LOC
        self.end_of_line()
        op = self.construct(cls, fields, loc, name_tok)
        op.results = [self.define(t, Value(ty, op, i)) for i, (t, ty) in enumerate(zip(result_toks, types))]
        return op

    def result_names(self) -> list[Token]:
        if self.peek().kind != "value":
            return []
        toks = [self.next()]
        while self.accept(","):
            toks.append(self.expect_kind("value", "a result name like `%x`"))
        self.expect("=")
        return toks

    def comma_separated(self, item) -> list:
        """Result types: ``item()`` separated by commas (no closing bracket)."""
        items = [item()]
        while self.accept(","):
            items.append(item())
        return items

    def operands(self, cls: type) -> dict[str, Any]:
        """The operand fields of ``cls``, in field order."""
        fields = cls.fields_of_kind(*_OPERAND_KINDS)
        kind = {f.name: k for k in _OPERAND_KINDS for f in cls.fields_of_kind(k)}
        out: dict[str, Any] = {}
        for i, f in enumerate(fields):
            if is_trailing(f) and not self.accept(","):
                out[f.name] = []
                continue
            if i and not is_trailing(f):
                names = ", ".join(g.name for g in fields)
                self.expect(",", f" (`{cls.NAME}` takes operands {names})")
            out[f.name] = self.operand(kind[f.name])
        return out

    def operand(self, kind: str) -> Any:
        if kind == "variadic":
            self.expect("[")
            return self.comma_list(self.use, "]")
        if kind == "optional" and self.accept("_"):
            return None
        return self.use()

    def op_attrs(self, cls: type) -> dict[str, Any]:
        known = {f.name for f in cls.fields_of_kind("attr")}
        self.expect("{")
        entries = self.comma_list(self.attr_entry, "}")
        for tok, _ in entries:
            if tok.text not in known:
                self.fail(f"`{cls.NAME}` has no attribute `{tok.text}` (it has: {', '.join(sorted(known)) or 'none'})",
                          tok)
        return {tok.text: value for tok, value in entries}

    def regions(self, cls: type) -> dict[str, Block]:
        """Each region of ``cls``: ``{`` block ``}``, the next on the same line ``} {``."""
        out = {}
        for f in cls.fields_of_kind("region"):
            self.expect("{", f" (`{cls.NAME}` has region `{f.name}`)")
            self.end_of_line()
            out[f.name] = self.region_block()
            self.expect("}")
        if self.at("{"):
            self.fail(f"`{cls.NAME}` has {len(out)} region(s)")
        return out

    def region_block(self) -> Block:
        block = Block()
        self.scopes.append({})
        if self.accept("^"):
            self.expect("(")
            self.comma_list(lambda: self.block_arg(block), ")")
            self.expect(":")
            self.end_of_line()
        self.block_ops(block)
        self.scopes.pop()
        return block

    def block_arg(self, block: Block) -> Value:
        tok = self.expect_kind("value", "a block argument like `%x`")
        self.expect(":")
        return self.define(tok, block.add_arg(self.type()))

    def construct(self, cls: type, fields: dict, loc: Loc, tok: Token) -> Op:
        missing = [f.name for f in cls.fields_of_kind("attr") if f.name not in fields and _required(f)]
        if missing:
            self.fail(f"`{cls.NAME}` needs attribute(s) {', '.join(missing)}", tok)
        return cls(loc=loc, **fields)

    def loc(self) -> Loc:
        self.expect("loc")
        self.expect("(")
        file = self.string()
        self.expect(":")
        line = self.int_word()
        self.expect(":")
        col = self.int_word()
        self.expect(")")
        return Loc(file, line, col)

    # --- attributes --------------------------------------------------------------
    def attr_dict(self) -> dict[str, Any]:
        self.expect("{")
        return {tok.text: value for tok, value in self.comma_list(self.attr_entry, "}")}

    def attr_entry(self) -> tuple[Token, Any]:
        name = self.expect_kind("word", "an attribute name")
        self.expect("=")
        return name, self.attr_value()

    def attr_value(self) -> Any:
        tok = self.peek()
        if tok.kind == "string":
            return self.string()
        if self.accept("("):
            return tuple(self.comma_list(self.attr_value, ")"))
        if tok.kind != "word":
            self.fail(f"expected an attribute value, found {_describe(tok)}")
        if tok.text in _WORD_CONSTANTS:
            self.next()
            return _WORD_CONSTANTS[tok.text]
        if tok.text in SCALAR_TYPES or tok.text in ("ptr", "tile"):
            return self.type()
        if tok.text in LAYOUT_WORDS:
            return self.layout()
        return self.number()

    def string(self) -> str:
        tok = self.expect_kind("string", "a string")
        try:
            return json.loads(tok.text)
        except json.JSONDecodeError as e:
            self.fail(f"bad string literal: {e.msg}", tok)

    def number(self) -> Any:
        tok = self.next()
        if _is_int(tok.text):
            return int(tok.text)
        try:
            return float(tok.text)
        except ValueError:
            self.fail(f"expected an attribute value, found {_describe(tok)}", tok)

    def int_word(self) -> int:
        tok = self.expect_kind("word", "an integer")
        if not _is_int(tok.text):
            self.fail(f"expected an integer, found {_describe(tok)}", tok)
        return int(tok.text)

    # --- types -------------------------------------------------------------------
    def type(self) -> Type:
        tok = self.expect_kind("word", "a type")
        if tok.text == "tile":
            return self.tile_rest()
        return self.elem_type_rest(tok.text, tok)

    def elem_type_rest(self, word: str, tok: Token) -> Any:
        """The scalar or pointer type that starts with ``word``."""
        if word in SCALAR_TYPES:
            return SCALAR_TYPES[word]
        if word != "ptr":
            self.fail(f"unknown type `{word}`", tok)
        self.expect("<")
        const = self.accept("const")
        elem = self.scalar_type()
        space = self.int_word() if self.accept(",") else 1
        self.expect(">")
        return PointerType(elem, space, const)

    def scalar_type(self) -> ScalarType:
        tok = self.expect_kind("word", "a scalar type")
        if tok.text not in SCALAR_TYPES:
            self.fail(f"unknown scalar type `{tok.text}`", tok)
        return SCALAR_TYPES[tok.text]

    def tile_rest(self) -> TileType:
        """``<4x8xf32>`` or ``<16xptr<f32>>``: dims and element share one word."""
        self.expect("<")
        tok = self.expect_kind("word", "tile dimensions like `4x8xf32`")
        pieces = tok.text.split("x")
        dims = [int(p) for p in _leading_ints(pieces)]
        if not dims or any(d <= 0 for d in dims):
            self.fail(f"bad tile dimensions in `{tok.text}`", tok)
        elem = self.elem_type_rest("x".join(pieces[len(dims):]), tok)
        layout = self.layout() if self.accept(",") else None
        self.expect(">")
        return TileType(tuple(dims), elem, layout)

    def layout(self) -> Layout:
        """``word<field, ...>``: a layout class's ``WORD`` (``LAYOUT_WORDS``)
        and its fields, each an int, an int list ``[...]`` or a layout, as the
        class's ``from_text`` takes them (``blocked<[1, 4], [16, 2], [1, 4], [1, 0]>``,
        ``slice<1, blocked<...>>``)."""
        tok = self.expect_kind("word", "a layout (`blocked<...>`, `slice<...>`, ...)")
        if tok.text not in LAYOUT_WORDS:
            self.fail(f"unknown layout `{tok.text}`", tok)
        self.expect("<")
        fields = self.comma_list(self.layout_field, ">")
        try:
            return LAYOUT_WORDS[tok.text].from_text(fields)
        except (TypeError, ValueError) as e:
            self.fail(f"bad {tok.text} layout: {e}", tok)

    def layout_field(self) -> Any:
        tok = self.peek()
        if tok.text == "[":
            return self.int_list()
        if tok.kind == "word" and tok.text in LAYOUT_WORDS:
            return self.layout()
        return self.int_word()

    def int_list(self) -> tuple[int, ...]:
        self.expect("[")
        return tuple(self.comma_list(self.int_word, "]"))


_WORD_CONSTANTS = {"true": True, "false": False, "none": None}


def _is_int(word: str) -> bool:
    digits = word[1:] if word[:1] in "+-" else word
    return digits.isascii() and digits.isdecimal()


def _leading_ints(pieces: list[str]) -> list[str]:
    out = []
    for p in pieces:
        if not _is_int(p) or p[:1] in "+-":
            break
        out.append(p)
    return out


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _describe(tok: Token) -> str:
    if tok.kind in ("eof", "newline"):
        return "the end of the line" if tok.kind == "newline" else "the end of the text"
    return f"`{tok.text}`"
