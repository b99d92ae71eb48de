"""Checks that IR is well formed, beyond what each op's own ``verify()`` knows.

``verify_function(fn)`` checks, walking blocks in order:

* every operand is defined before its use, in the same block or an
  enclosing one (SSA dominance for structured regions: a region sees the
  values its op's block defined before the op, never the op's results);
* each field holds what its kind says (a ``Value``, ``None``, a list, a ``Block``);
* results and block arguments point back at their op/block and index;
* each op's ``verify()`` passes and its result types equal ``infer_types()``;
* a terminator (``yield``, ``condition``) ends a region and appears nowhere
  else: not mid-block, not in the function body; each region ends with the
  terminator its op expects (``REGION_TERMINATORS``).

``check_roundtrip(fn)`` checks that the text form reads back to the same text.
Every failure raises ``VerifyError`` naming the op's location and quoting it.
"""
from __future__ import annotations

import difflib
from typing import NoReturn, Optional

from tilec.ir.core import Block, Function, Module, Op, Value, VerifyError
from tilec.ir.ops import Condition, While, Yield
from tilec.ir.parser import ParseError, parse_function
from tilec.ir.printer import print_function, print_op, value_names
from tilec.ir.types import TileType, Type, without_layout

__all__ = ["VerifyError", "verify_function", "verify_module", "check_roundtrip", "REGION_TERMINATORS"]

# The terminator that ends each region, keyed by (op class, region field);
# a region not listed ends with ``yield``.
REGION_TERMINATORS: dict[tuple[type, str], type] = {(While, "before"): Condition}


def verify_module(module: Module) -> None:
    """``verify_function`` on each function; names must be unique."""
    seen: set[str] = set()
    for fn in module.functions:
        if fn.name in seen:
            raise VerifyError(f"function @{fn.name} is defined twice")
        seen.add(fn.name)
        verify_function(fn)


def verify_function(fn: Function) -> None:
    """Raise ``VerifyError`` unless ``fn`` is well-formed IR (see the module docstring)."""
    if fn.arg_names and len(fn.arg_names) != len(fn.args):
        raise VerifyError(f"@{fn.name}: {len(fn.arg_names)} argument names for {len(fn.args)} arguments")
    if fn.arg_attrs and len(fn.arg_attrs) != len(fn.args):
        raise VerifyError(f"@{fn.name}: {len(fn.arg_attrs)} argument attribute dicts for {len(fn.args)} arguments")
    _Verifier(fn).block(fn.body, set(), None)


def check_roundtrip(fn: Function) -> None:
    """Raise ``VerifyError`` unless ``fn``'s text (with locations) parses back to the same text."""
    text = print_function(fn, locs=True)
    try:
        again = print_function(parse_function(text), locs=True)
    except ParseError as e:
        raise VerifyError(f"@{fn.name}: the printed IR does not parse back: {e}\n{text}") from e
    if again != text:
        diff = "\n".join(difflib.unified_diff(text.splitlines(), again.splitlines(), "printed", "reparsed",
                                              lineterm=""))
        raise VerifyError(f"@{fn.name}: the printed IR does not read back the same:\n{diff}")


class _Verifier:
    """Walks one function, keeping the set of values visible at each op."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.names: Optional[dict[Value, str]] = None  # made on the first error only

    def block(self, block: Block, visible: set, parent: Optional[tuple[Op, str]]) -> None:
        """Check ``block`` (the function body when ``parent`` is None, else ``(op, field)``)."""
        visible = set(visible)  # values defined here go out of scope with the block
        for i, a in enumerate(block.args):
            if a.owner is not block or a.index != i:
                self.fail_block(parent, f"argument {i} does not belong to its block at that index")
            visible.add(a)
        for i, op in enumerate(block.ops):
            self.placement(op, i + 1 == len(block.ops), parent)
            self.op(op, visible)
            visible.update(op.results)
        if parent is not None:
            self.terminator(block, *parent)

    def placement(self, op: Op, last: bool, parent: Optional[tuple[Op, str]]) -> None:
        if op.IS_TERMINATOR and parent is None:
            self.fail(op, "a terminator cannot appear in the function body")
        if op.IS_TERMINATOR and not last:
            self.fail(op, "a terminator must be the last op of its block")

    def terminator(self, block: Block, op: Op, field: str) -> None:
        want = REGION_TERMINATORS.get((type(op), field), Yield)
        term = block.terminator
        if not isinstance(term, want):
            got = f"`{term.NAME}`" if term is not None else "no terminator"
            self.fail(op, f"region `{field}` must end with `{want.NAME}`, found {got}")

    def op(self, op: Op, visible: set) -> None:
        self.fields(op)
        for v in op.operands:
            if v not in visible:
                self.fail(op, f"operand {self.name(v)} is not defined before this op in an enclosing block")
        for f in op.fields_of_kind("region"):
            self.block(getattr(op, f.name), visible, (op, f.name))
        self.op_own_checks(op)
        for i, r in enumerate(op.results):
            if r.owner is not op or r.index != i:
                self.fail(op, f"result {i} does not point back at this op and index")

    def fields(self, op: Op) -> None:
        """Each field holds what its kind promises, so generic code can walk it."""
        for kind, (holds, wanted) in _FIELD_CHECKS.items():
            for f in op.fields_of_kind(kind):
                v = getattr(op, f.name)
                if not holds(v):
                    self.fail(op, f"field `{f.name}` holds {type(v).__name__}, not {wanted}")

    def op_own_checks(self, op: Op) -> None:
        """The op's ``verify()`` and ``infer_types()``, with their errors quoted."""
        try:
            op.verify()
            inferred = op.infer_types()
        except VerifyError as e:
            raise VerifyError(f"{e}\n    {self.show(op)}") from None
        except Exception as e:  # a malformed op can break its own verifier
            self.fail(op, f"verifier failed: {type(e).__name__}: {e}")
        got = [r.type for r in op.results]
        if not all(_matches(g, i) for g, i in zip(got, inferred)) or len(got) != len(inferred):
            self.fail(op, f"result types {_types(got)} differ from the inferred {_types(inferred)}")

    # --- messages ----------------------------------------------------------------
    def fail(self, op: Op, message: str) -> NoReturn:
        raise VerifyError(f"{op.loc}: {op.NAME}: {message}\n    {self.show(op)}")

    def fail_block(self, parent: Optional[tuple[Op, str]], message: str) -> None:
        if parent is None:
            raise VerifyError(f"@{self.fn.name}: {message}")
        self.fail(parent[0], f"region `{parent[1]}`: {message}")

    def show(self, op: Op) -> str:
        """The op's first line of text, its values named as in the whole function."""
        return print_op(op, self.value_names()).split("\n")[0]

    def name(self, v: Value) -> str:
        return self.value_names().get(v, f"%<{v.name or 'unnamed'}>")

    def value_names(self) -> dict[Value, str]:
        if self.names is None:
            try:
                self.names = value_names(self.fn)
            except Exception:  # too broken to print whole: values print as undefined
                self.names = {}
        return self.names


# What each field kind must hold: (test, description).
_FIELD_CHECKS = {
    "operand": (lambda v: isinstance(v, Value), "a Value"),
    "optional": (lambda v: v is None or isinstance(v, Value), "a Value or None"),
    "variadic": (lambda v: isinstance(v, list) and all(isinstance(x, Value) for x in v), "a list of Values"),
    "region": (lambda v: isinstance(v, Block), "a Block"),
}


def _matches(got: Type, inferred: Type) -> bool:
    """A result type is the inferred one; where the op makes a tile of a new
    shape, the inferred type has no layout and target lowering picks one."""
    if isinstance(inferred, TileType) and inferred.layout is None:
        return without_layout(got) == inferred
    return got == inferred


def _types(types: list) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"
