"""Bounds checks of code compiled for the ``cpu`` target, under ``debug=True``.

Without ``debug`` compiled code checks nothing (an access out of bounds does
what it does on a GPU) and costs nothing here.  With it, every load, store
and atomic a program makes, where its mask holds, first checks its address:
the ``access`` bytes must lie inside the byte span of a pointer argument
(``interp_memory.array_span``: a view's lowest to highest element, negative
strides included) and be aligned to the element's size.  Which argument is
static where it can be (``opt.written_pointers.pointer_origins``: the
arguments a pointer derives from); a pointer of several, or of none (loaded
from memory, made from an integer), may fall inside any of those, or of all.

The launcher passes the spans in a table of int64, one hidden argument after
the kernel's own (``Table``): first the record of the first bad access
(``RECORD``), then ``lo, hi`` per pointer argument, in argument order.  A
failed check writes the record (the first program to fail wins, by a
compare-and-swap on ``failed``) and returns from the program; the grid
entry runs no further program once ``failed`` is set (``grid.py``), so no
bad access is ever made.  The launcher then raises ``InterpreterError``
(``raise_bad_access``) at the access's line, naming the argument, the offset
in elements and the program, as the interpreter words it.

What the interpreter checks beyond this: an access between the elements of
a strided view (``a[::2]``) lies inside its span, so passes here.

The access sites are numbered in the order ``walk`` visits the optimized tile
IR (``access_sites``), which the codegen and the launcher both see, so the
record holds a number, and a variant loaded from the disk cache (whose IR
keeps its source locations) reads it the same way.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Sequence

import numpy as np
from llvmlite import ir as llir

from tilec import ir
from tilec.errors import InterpreterError
from tilec.ir.core import Function, Op, walk
from tilec.ir.interp_dtypes import memory_dtype
from tilec.ir.interp_memory import _int32_overflow_hint, array_span
from tilec.ir.types import elem_type, is_pointer
from tilec.opt.written_pointers import UNTRACED, pointer_origins

if TYPE_CHECKING:
    from tilec.backends.host.codegen import HostCtx

I1, I64 = llir.IntType(1), llir.IntType(64)
#: The ops that access global memory.
ACCESSES = (ir.Load, ir.Store, ir.AtomicRMW, ir.AtomicCAS)
#: The table's first slots: the first bad access (``failed`` is 1 once one happened).
RECORD = ("failed", "site", "address", "program_x", "program_y", "program_z")
SPANS_AT = len(RECORD)


def access_sites(fn: Function) -> list[Op]:
    """``fn``'s accesses to global memory in ``walk`` order: site ``i`` is the ``i``-th."""
    return [op for op in walk(fn.body) if isinstance(op, ACCESSES)]


def pointer_arguments(fn: Function) -> list[int]:
    """The indices of ``fn``'s pointer arguments, in order (the table's spans)."""
    return [i for i, a in enumerate(fn.args) if is_pointer(a.type)]


def access_size(op: Op) -> int:
    """The bytes one element of ``op``'s access takes in memory."""
    return memory_dtype(elem_type(op.ptr.type).elem).itemsize


def candidates(fn: Function, origins: dict, op: Op) -> list[int]:
    """The pointer arguments ``op``'s pointer may point into: its traced origins,
    else every pointer argument."""
    came_from = origins.get(op.ptr, frozenset({UNTRACED}))
    return sorted(came_from) if came_from and UNTRACED not in came_from else pointer_arguments(fn)


# --- the codegen's side ----------------------------------------------------------------------
class Checks:
    """Emits each access's check in a kernel lowered with ``debug`` (module
    docstring); ``table`` is the kernel's hidden argument."""

    def __init__(self, fn: Function, table: llir.Value):
        self.fn, self.table = fn, table
        self.sites = {op: i for i, op in enumerate(access_sites(fn))}
        self.origins = pointer_origins(fn)
        self.slots = {k: SPANS_AT + 2 * j for j, k in enumerate(pointer_arguments(fn))}
        self._spans: dict[int, tuple[llir.Value, llir.Value]] = {}

    def check(self, ctx: "HostCtx", op: Op, p: llir.Value) -> None:
        """Return from the program, recording ``op``'s site, unless the access at ``p`` is valid."""
        b, size = ctx.b, access_size(op)
        address = b.ptrtoint(p, I64)
        end = b.add(address, I64(size))
        inside = [b.and_(b.icmp_unsigned(">=", address, lo), b.icmp_unsigned("<=", end, hi))
                  for lo, hi in (self._span(ctx, k) for k in candidates(self.fn, self.origins, op))]
        ok = functools.reduce(b.or_, inside, I1(0))
        if size > 1:
            ok = b.and_(ok, b.icmp_unsigned("==", b.and_(address, I64(size - 1)), I64(0)))
        with b.if_then(b.not_(ok), likely=False):
            self._record(ctx, op, address)
            b.ret_void()

    def _span(self, ctx: "HostCtx", k: int) -> tuple[llir.Value, llir.Value]:
        """Argument ``k``'s ``lo, hi``, read from the table once, before the program's code."""
        if k not in self._spans:
            with ctx.in_prologue():
                self._spans[k] = tuple(ctx.b.load(self._slot(ctx, self.slots[k] + j), typ=I64) for j in (0, 1))
        return self._spans[k]

    def _slot(self, ctx: "HostCtx", index: int) -> llir.Value:
        return ctx.b.gep(self.table, [I64(index)], source_etype=I64)

    def _record(self, ctx: "HostCtx", op: Op, address: llir.Value) -> None:
        """The first failure of the launch writes the record."""
        b = ctx.b
        swap = b.cmpxchg(self._slot(ctx, 0), I64(0), I64(1), "monotonic", "monotonic")
        with b.if_then(b.extract_value(swap, 1)):
            values = [I64(self.sites[op]), address] + [b.zext(pid, I64) for pid in ctx.grid[:3]]
            for index, value in enumerate(values, start=1):
                b.store(value, self._slot(ctx, index))


def stop_if_failed(b: llir.IRBuilder, table: llir.Value) -> None:
    """Return from the grid entry when a program has failed a check."""
    failed = b.load_atomic(table, "monotonic", 8, typ=I64)
    with b.if_then(b.icmp_unsigned("!=", failed, I64(0)), likely=False):
        b.ret_void()


# --- the launcher's side ---------------------------------------------------------------------
class Table:
    """One launch's table (module docstring) over the arrays ``values`` of ``fn``'s arguments."""

    def __init__(self, fn: Function, values: Sequence):
        self.fn, pointers = fn, pointer_arguments(fn)
        self.spans = [array_span(fn.arg_names[k], values[k], j) for j, k in enumerate(pointers)]
        self.data = np.zeros(SPANS_AT + 2 * len(pointers), np.int64)
        self.data[SPANS_AT:] = [x for s in self.spans for x in (s.lo, s.hi)]
        self.by_argument = dict(zip(pointers, self.spans))

    @property
    def address(self) -> int:
        return self.data.ctypes.data

    def raise_bad_access(self, grid: tuple[int, int, int]) -> None:
        """InterpreterError at the first bad access, if a program made one."""
        record = dict(zip(RECORD, (int(x) for x in self.data[:SPANS_AT])))
        if not record["failed"]:
            return
        op = access_sites(self.fn)[record["site"]]
        program = (record["program_x"], record["program_y"], record["program_z"])
        name = f"program {program[0]}" if grid[1:] == (1, 1) else "program ({}, {}, {})".format(*program)
        who = f"({'masked-in ' if getattr(op, 'mask', None) is not None else ''}lane of {name})"
        message = self._describe(op, record["address"] % 2**64, who)
        raise InterpreterError(op.loc.file, op.loc.line, op.loc.col, message, kernel=self.fn.name)

    def _describe(self, op: Op, address: int, who: str) -> str:
        """What is wrong with ``op``'s access at ``address``, in the interpreter's words."""
        what = {ir.Load: "load", ir.Store: "store", ir.AtomicCAS: "atomic_cas"}.get(type(op)) \
            or f"atomic_{op.kind}"
        size, allowed = access_size(op), candidates(self.fn, pointer_origins(self.fn), op)
        if not allowed:
            return f"{what} through a pointer ({address:#x}) when no array was passed to this launch {who}"
        span = min((self.by_argument[k] for k in allowed), key=lambda s: _distance(s, address, size))
        inside = span.lo <= address and address + size <= span.hi
        if inside:
            return (f"{what} misaligned: `{span.name}` + {address - span.ptr} bytes is not a multiple of "
                    f"{size} bytes ({elem_type(op.ptr.type).elem}) {who}")
        offset, count = (address - span.ptr) // size, (span.hi - span.ptr) // size
        where = "is before its first element" if address < span.lo else f"is past its {count} elements"
        return f"{what} out of bounds: `{span.name}` + {offset} {where} {who}{_int32_overflow_hint(offset, count)}"


def _distance(span, address: int, size: int) -> int:
    """How many bytes an access of ``size`` at ``address`` lies outside ``span`` (0: inside)."""
    return max(span.lo - address, address + size - span.hi, 0)
