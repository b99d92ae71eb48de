"""The text form of the tile IR (``parser.py`` reads it back).

One op a line, in a generic shape shared by every op::

    %a, %b = name %x, _, [%y, %z] {attr = 1, other = "s"} : f32, f32 {
    ^(%i: i32, %acc: f32):
      ...
    }

Operands follow the op's field order: one value ``%x``, an absent optional
``_``, a variadic list ``[...]`` (a trailing one only when not empty).
Only attributes that differ from their default are printed.  Each region follows as a brace-delimited block whose
first line ``^(...)`` names its arguments (left out when there are none).
With ``locs=True`` every op ends with ``loc("file":line:col)``.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
from typing import Any

from tilec.ir.core import Block, Function, Module, Op, Value, is_trailing


def print_module(module: Module, locs: bool = False) -> str:
    return "\n".join(print_function(f, locs) for f in module.functions)


def print_function(fn: Function, locs: bool = False) -> str:
    return _print_function(_Printer(locs), fn)


def value_names(fn: Function) -> dict[Value, str]:
    """The name (``%x``) the printer gives each value of ``fn``; see ``print_op``."""
    p = _Printer(False)
    _print_function(p, fn)
    return p.names


def _print_function(p: "_Printer", fn: Function) -> str:
    names = fn.arg_names or [None] * len(fn.args)
    attrs = fn.arg_attrs or [{}] * len(fn.args)
    args = ", ".join(f"{p.define(a, n)}: {a.type}{_arg_attr_suffix(d)}" for a, n, d in zip(fn.args, names, attrs))
    lines = [f"func @{fn.name}({args}) {{"]
    p.block_ops(fn.body, lines, "  ")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _arg_attr_suffix(attrs: dict) -> str:
    if not attrs:
        return ""
    return " {" + ", ".join(f"{k} = {format_attr(v)}" for k, v in attrs.items()) + "}"


def print_op(op: Op, names: dict[Value, str] | None = None) -> str:
    """One op (and its regions) alone, for error messages and debugging.

    ``names`` (from ``value_names(fn)``) spells values as the whole function's
    text does; without it, values defined outside ``op`` print as undefined.
    """
    lines: list[str] = []
    p = _Printer(False)
    p.names.update(names or {})
    p.op(op, lines, "")
    return "\n".join(lines)


def format_attr(v: Any) -> str:
    """An attribute value in the text form."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return float.__repr__(v)  # numpy's float64 repr is "np.float64(...)"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (tuple, list)):
        inner = ", ".join(format_attr(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    return str(v)  # types print as themselves


class _Printer:
    def __init__(self, locs: bool):
        self.locs = locs
        self.names: dict[Value, str] = {}
        self.used: set[str] = set()
        self.counter = 0

    def define(self, v: Value, hint: str | None = None) -> str:
        if v in self.names:  # named already (print_op given names, or a value defined twice)
            return self.names[v]
        base = re.sub(r"\W", "_", hint or v.name or "")
        if not base or base[0].isdigit() and base in self.used:
            base = ""
        name = base
        if not base:
            name, self.counter = str(self.counter), self.counter + 1
            while name in self.used:
                name, self.counter = str(self.counter), self.counter + 1
        k = 1
        while name in self.used:
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        self.names[v] = "%" + name
        return self.names[v]

    def ref(self, v: Value | None) -> str:
        if v is None:
            return "_"
        return self.names.get(v, f"%<undefined {v.name or id(v)}>")

    def block_ops(self, block: Block, lines: list[str], indent: str) -> None:
        for op in block.ops:
            self.op(op, lines, indent)

    def op(self, op: Op, lines: list[str], indent: str) -> None:
        parts = []
        for f in op.fields_of_kind("operand", "optional", "variadic"):
            v = getattr(op, f.name)
            if is_trailing(f) and not v:
                continue
            parts.append("[" + ", ".join(self.ref(x) for x in v) + "]" if isinstance(v, list) else self.ref(v))
        attrs = [f"{f.name} = {format_attr(getattr(op, f.name))}" for f in op.fields_of_kind("attr")
                 if not _is_default(f, getattr(op, f.name))]
        text = op.NAME
        if parts:
            text += " " + ", ".join(parts)
        if attrs:
            text += " {" + ", ".join(attrs) + "}"
        if op.results:
            text += " : " + ", ".join(str(r.type) for r in op.results)
        results = ", ".join(self.define(r) for r in op.results)
        head = f"{indent}{results} = {text}" if results else f"{indent}{text}"
        regions = op.regions
        if not regions:
            lines.append(head + self.loc_suffix(op))
            return
        lines.append(head + " {")
        for i, block in enumerate(regions):
            if block.args:
                args = ", ".join(f"{self.define(a)}: {a.type}" for a in block.args)
                lines.append(f"{indent}^({args}):")
            self.block_ops(block, lines, indent + "  ")
            closer = "} {" if i + 1 < len(regions) else "}"
            lines.append(indent + closer + (self.loc_suffix(op) if i + 1 == len(regions) else ""))

    def loc_suffix(self, op: Op) -> str:
        if not self.locs:
            return ""
        return f" loc({json.dumps(op.loc.file)}:{op.loc.line}:{op.loc.col})"


def _is_default(f: dataclasses.Field, v: Any) -> bool:
    return f.default is not dataclasses.MISSING and type(v) is type(f.default) and v == f.default
