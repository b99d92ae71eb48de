"""What a tile is while the host backend lowers a kernel: a way to compute any
one of its elements, and the loops that visit them.

A CPU program is one thread, so a tile is not spread over threads: it is
either a ``Buffer``, its elements in row-major order in the program's stack
memory, or a ``Lazy``, a function that emits the LLVM code computing the
element at given coordinates (from its operands' elements).  Elementwise ops,
broadcasts and shape ops make lazies, so a chain of them costs no memory: the
op that needs the elements (a store, a reduction, a loop's carried value)
runs one loop nest over the tile and computes each element from the loads
through to the result in one go (``for_each``).  The loop nest is scalar
code; LLVM's loop vectorizer turns its innermost loop (the last dimension,
contiguous in row-major order) into vector code of the CPU's width, with
masked loads and stores where the kernel masks them.

A tile is made a buffer (``HostCtx.bind``'s rule) when recomputing it would
cost more than reading it back or when memory it was loaded from may change
before its last use.

Coordinates are i64 LLVM values, one per dimension; an element's value is
its LLVM register type (``i1`` for booleans), its memory form in a buffer
(``i1`` as a byte, ``scalar_base.memory_type``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from llvmlite import ir as llir

from tilec.ir.types import PointerType, ScalarType
from tilec.codegen_llvm.memory import _from_memory as from_memory, _to_memory as to_memory
from tilec.codegen_llvm.scalar_base import counted_loop, memory_type

if TYPE_CHECKING:
    from tilec.backends.host.codegen import HostCtx

I64 = llir.IntType(64)
Coords = tuple  # of i64 LLVM values, one per dim

#: Above this cost an element used twice is computed once into a buffer.
CHEAP = 6
#: An innermost loop of at least this many elements is left to LLVM's loop
#: vectorizer (``vector_loop``): LLVM would otherwise unroll a short loop
#: (32 elements) fully before the vectorizer runs.
VECTOR_LOOP = 16


@dataclass
class Tile:
    """A tile's elements: ``at(ctx, coords)`` emits the value at ``coords``.

    ``reads`` says whether the elements come from global memory (a later
    store may change them); ``cost`` roughly counts the instructions of one
    element (``CHEAP`` and below are recomputed freely)."""

    shape: tuple[int, ...]
    elem: ScalarType | PointerType
    reads: bool = False
    cost: int = 1

    def at(self, ctx: "HostCtx", coords: Coords) -> llir.Value:
        raise NotImplementedError


@dataclass
class Buffer(Tile):
    """Elements in row-major order at ``ptr`` (stack memory of the program)."""

    ptr: llir.Value = None

    def at(self, ctx: "HostCtx", coords: Coords) -> llir.Value:
        b = ctx.b
        value = b.load(element_pointer(ctx, self, coords), typ=memory_type(self.elem))
        return from_memory(ctx, value, self.elem)


@dataclass
class Lazy(Tile):
    """Elements computed where they are used: ``fn(ctx, coords)``."""

    fn: Callable[["HostCtx", Coords], llir.Value] = field(default=None)

    def at(self, ctx: "HostCtx", coords: Coords) -> llir.Value:
        return self.fn(ctx, coords)


def lazy(shape: tuple, elem, fn: Callable, operands: Sequence[Tile] = (), cost: int = 1) -> Lazy:
    """A ``Lazy`` computing ``fn`` from ``operands``' elements: it reads memory
    when one of them does, and costs ``cost`` plus theirs."""
    tiles = [t for t in operands if isinstance(t, Tile)]
    return Lazy(tuple(shape), elem, any(t.reads for t in tiles), cost + sum(t.cost for t in tiles), fn)


def numel(shape: tuple) -> int:
    return math.prod(shape)


def linear_index(ctx: "HostCtx", coords: Coords, shape: tuple) -> llir.Value:
    """The row-major index (i64) of ``coords`` in a tile of ``shape``."""
    b, index, stride = ctx.b, None, 1
    for c, n in zip(reversed(coords), reversed(shape)):
        term = c if stride == 1 else b.mul(c, I64(stride))
        index = term if index is None else b.add(index, term)
        stride *= n
    return I64(0) if index is None else index


def coords_of(ctx: "HostCtx", index: llir.Value, shape: tuple) -> Coords:
    """The coordinates of row-major ``index`` (i64) in a tile of ``shape``."""
    b, out = ctx.b, []
    for n in reversed(shape):
        out.append(b.urem(index, I64(n)) if n > 1 else I64(0))
        index = b.udiv(index, I64(n)) if n > 1 else index
    return tuple(reversed(out))


def element_pointer(ctx: "HostCtx", buf: Buffer, coords: Coords) -> llir.Value:
    return ctx.b.gep(buf.ptr, [linear_index(ctx, coords, buf.shape)], inbounds=True,
                     source_etype=memory_type(buf.elem))


def for_each(ctx: "HostCtx", shape: tuple, body: Callable[[Coords], None],
             starts: Sequence[int] = ()) -> None:
    """Emit ``body(coords)`` for every element of ``shape`` in row-major order:
    one loop per dim of more than one element, the last innermost (dims of
    one get the constant 0; the innermost a ``vector_loop`` from
    ``VECTOR_LOOP`` elements, the others ``rolled_loop``s); ``starts[d]``
    skips the first elements of dim ``d``."""
    def nest(d: int, coords: Coords) -> None:
        if d == len(shape):
            body(coords)
            return
        start = starts[d] if d < len(starts) else 0
        count = shape[d] - start
        if count == 1:
            nest(d + 1, coords + (I64(start),))
            return
        inner = d == len(shape) - 1 or all(n == 1 for n in shape[d + 1:])
        (vector_loop if inner and count >= VECTOR_LOOP else counted_loop if inner else rolled_loop)(
            ctx.b, I64(count), lambda i: nest(d + 1, coords + ((ctx.b.add(i, I64(start)) if start else i),)))
    nest(0, ())


def vector_loop(b: llir.IRBuilder, count: llir.Value, body: Callable[[llir.Value], None]) -> None:
    """``counted_loop`` for LLVM's loop vectorizer: marked
    ``llvm.loop.unroll.disable``, so that LLVM does not unroll it before the
    vectorizer sees it (a 32-element row of masked loads became 32
    compare-and-branches, scalar code; a row of 32 multiplies, unrolled, was
    vectorized across the loop around it, as gathers and scatters), and
    ``llvm.loop.vectorize.followup_vectorized``, which gives the vector loop
    LLVM makes of it ``llvm.loop.isvectorized`` alone: that loop LLVM unrolls
    as it sees fit (a reduction's short levels become straight-line code)."""
    m = b.module
    marked_loop(b, count, body, UNROLL_DISABLE,
                option(m, "llvm.loop.vectorize.followup_vectorized", option(m, "llvm.loop.isvectorized", 1)))


def rolled_loop(b: llir.IRBuilder, count: llir.Value, body: Callable[[llir.Value], None]) -> None:
    """``counted_loop``, marked ``llvm.loop.unroll.disable``: a loop around
    others (a tile's rows), which LLVM would unroll fully after vectorizing
    the loop inside it, copying that loop a row."""
    marked_loop(b, count, body, UNROLL_DISABLE)


#: The ``llvm.loop`` option that keeps LLVM from unrolling a loop.
UNROLL_DISABLE = "llvm.loop.unroll.disable"


def marked_loop(b: llir.IRBuilder, count: llir.Value, body: Callable[[llir.Value], None], *options) -> None:
    """``counted_loop`` whose ``llvm.loop`` node holds ``options`` (an
    option's name, or its node: ``option``)."""
    counters = []
    counted_loop(b, count, lambda i: (counters.append(i), body(i)))
    latch = counters[0].incomings[-1][1]
    node = llir.values.MDValue(b.module, [], name=str(len(b.module.metadata)))  # a new loop's own node,
    node.operands = (node,) + tuple(option(b.module, o) if isinstance(o, str) else o for o in options)  # first
    latch.terminator.set_metadata("llvm.loop", node)


def option(module: llir.Module, name: str, *values) -> llir.values.MDValue:
    """A loop option's node: its name, then ``values`` (an int is an i32, a
    bool an i1; a node as it is)."""
    def value(v):
        return llir.IntType(1)(v) if isinstance(v, bool) else llir.IntType(32)(v) if isinstance(v, int) else v
    return module.add_metadata([llir.MetaDataString(module, name), *map(value, values)])


def write(ctx: "HostCtx", tile: Tile, buf: Buffer) -> None:
    """Store every element of ``tile`` into ``buf`` (same shape)."""
    def body(coords: Coords) -> None:
        ctx.b.store(to_memory(ctx, tile.at(ctx, coords), tile.elem), element_pointer(ctx, buf, coords))
    for_each(ctx, tile.shape, body)
