"""Streaming stores: a large output written without reading it first.

A store to a cache line that is not in the cache reads the line from
memory before it writes it (a read for ownership), so a kernel writing a
large array moves it through memory twice, and the read takes its turn with
the kernel's other traffic: softmax at 4096x2048 spent a third of its time
in its store pass.  A non-temporal store (``!nontemporal``: x86's
``vmovntps``, AArch64's ``stnp``) writes whole lines past the caches and
reads nothing; it pays where the data will not be read again soon, so it is
chosen from what the launcher sees (``launcher.streaming``: the launch's
arrays together exceed the last-level cache, so what it writes leaves the
cache before anyone reads it) and what the compiler sees
(``streamable``): a store whose innermost dim is contiguous in memory over
at least ``MIN_ROW_BYTES`` (the axis analysis), in a kernel that does not
talk between programs (no atomic, no volatile load: a non-temporal store is
ordered only by a fence, which the grid entry makes once, after its
programs), compiled without bounds checks.

Only the variants of target ``cpu-streaming`` have these paths (and the
cross targets', whose objects CI checks): the launcher picks that target
for a launch whose arrays exceed the last-level cache (``launcher.target``),
``cpu`` otherwise, so a kernel never launched on that much data never
compiles them (the vector add tutorial's cold compile: LLVM's time 0.14 ->
0.06 s).  In such a variant the kernel still takes the launcher's flag
(``codegen.STREAM_PARAM``; a variant launched directly, as the tests do, on
arrays that do not stream gets it clear), and such a store runs one of two
ways on it: as before, or (``store_streaming``)
each row as three parts: the elements before its first 64-byte boundary
and after its last one by ordinary stores, and the whole lines between in
chunks of ``CHUNK_LINES``: a chunk's elements and mask computed into a
stack buffer (the loop LLVM vectorizes; 1 KB, which stays in the L1),
then copied out a line a vector, non-temporal where the line's mask is
all set, else a masked store.  A non-temporal vector store needs an
aligned address, which only the running code knows, hence the copy; the
bits written are the same either way.  The whole row staged at once
instead (a second row-sized buffer: softmax at 8192 columns kept 100 KB
of buffers, out of the L1) gained 1% at 8192 columns where the chunks
gain 10%, and lost 9% at 1024.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.types import ScalarType, TileType, elem_type, i8
from tilec.codegen_llvm.memory import _guarded, _to_memory
from tilec.codegen_llvm.scalar_base import bit_width, memory_type
from tilec.backends.host.tiles import (I64, UNROLL_DISABLE, Buffer, Tile, element_pointer, for_each, marked_loop, option,
                                      rolled_loop, vector_loop)

if TYPE_CHECKING:
    from tilec.backends.host.codegen import HostCtx

#: A cache line, in bytes, and the widest non-temporal store (one line).
LINE = 64
#: A store streams only where a row of its tile is contiguous over at least
#: this many bytes: a row's first and last partial lines take ordinary stores.
MIN_ROW_BYTES = 1024
#: The lines a row's elements are computed for at a time before they are
#: copied out: their buffer (1 KB) stays in the L1 cache.
CHUNK_LINES = 16
I8 = llir.IntType(8)


def streamable(ctx: "HostCtx", op: ir.Store) -> bool:
    """Whether ``op`` gets a streaming path (module docstring)."""
    if (ctx.checks is not None or not isinstance(op.ptr.type, TileType) or not ctx.may_stream
            or not isinstance(elem_type(op.value.type), ScalarType)):
        return False
    shape = op.ptr.type.shape
    nbytes = bit_width(memory_type(elem_type(op.value.type))) // 8
    if nbytes == 0 or LINE % nbytes or shape[-1] * nbytes < MIN_ROW_BYTES:
        return False
    return ctx.axes()[op.ptr].contiguity[-1] == shape[-1]


def store_streaming(ctx: "HostCtx", ptr: Tile, value, mask, elem) -> None:
    """``value`` stored at ``ptr`` where ``mask`` (None: everywhere), each row
    as the module docstring says: the elements before its first line
    boundary and after its last one stored as they are, the whole lines
    between in chunks of ``CHUNK_LINES``, each computed into a stack buffer
    (elements and mask bytes) and then copied out a line a vector."""
    b, shape = ctx.b, ptr.shape
    t = memory_type(elem)
    size = bit_width(t) // 8
    lanes, n = LINE // size, shape[-1]
    chunk = (CHUNK_LINES * lanes,)
    values = ctx.buffer(chunk, elem)
    flags = ctx.buffer(chunk, i8) if mask is not None else None

    def row(coords) -> None:
        first = ptr.at(ctx, coords + (I64(0),))
        address = b.ptrtoint(first, I64)
        in_step = b.icmp_unsigned("==", b.and_(address, I64(size - 1)), I64(0))
        to_line = b.udiv(b.and_(b.sub(I64(0), address), I64(LINE - 1)), I64(size))
        head = b.select(b.and_(in_step, b.icmp_unsigned("<", to_line, I64(n))), to_line, I64(n))
        lines = b.udiv(b.sub(I64(n), head), I64(lanes))
        tail = b.add(head, b.mul(lines, I64(lanes)))

        def mask_at(j):
            return None if mask is None else mask.at(ctx, coords + (j,)) if isinstance(mask, Tile) else mask

        def value_at(j):
            v = value.at(ctx, coords + (j,)) if isinstance(value, Tile) else value
            return _to_memory(ctx, v, elem)

        def direct(j: llir.Value) -> None:
            out = b.gep(first, [j], inbounds=True, source_etype=t)
            _guarded(ctx, mask_at(j), lambda: _store(b, value_at(j), out), None)

        def chunk_of_lines(c: llir.Value) -> None:
            start = b.add(head, b.mul(c, I64(chunk[0])))
            count = b.sub(lines, b.mul(c, I64(CHUNK_LINES)))
            count = b.select(b.icmp_unsigned("<", count, I64(CHUNK_LINES)), count, I64(CHUNK_LINES))

            def stage(i: llir.Value) -> None:
                j = b.add(start, i)
                m = mask_at(j)
                if flags is not None:
                    b.store(b.zext(m, I8), element_pointer(ctx, flags, (i,)))
                _guarded(ctx, m, lambda: _store(b, value_at(j), element_pointer(ctx, values, (i,))), None)
            vector_loop(b, b.mul(count, I64(lanes)), stage)
            rolled_loop(b, count, lambda k: _copy_line(ctx, values, flags, b.mul(k, I64(lanes)),
                                                          b.gep(first, [b.add(start, b.mul(k, I64(lanes)))],
                                                                inbounds=True, source_etype=t)))
        scalar_loop(b, head, direct)
        rolled_loop(b, b.udiv(b.add(lines, I64(CHUNK_LINES - 1)), I64(CHUNK_LINES)), chunk_of_lines)
        scalar_loop(b, b.sub(I64(n), tail), lambda i: direct(b.add(tail, i)))
    for_each(ctx, shape[:-1], row)


def scalar_loop(b: llir.IRBuilder, count: llir.Value, body) -> None:
    """A loop of fewer elements than a line, left as it is: neither unrolled nor vectorized."""
    marked_loop(b, count, body, UNROLL_DISABLE, option(b.module, "llvm.loop.vectorize.enable", False))


def _copy_line(ctx: "HostCtx", values: Buffer, flags, at: llir.Value, out: llir.Value) -> None:
    """The line of ``values`` (and of its mask bytes ``flags``, None: all set)
    from element ``at`` stored at the 64-byte aligned ``out``: non-temporal
    where its mask is all set, else a masked store."""
    b = ctx.b
    t = memory_type(values.elem)
    size = bit_width(t) // 8
    lanes = LINE // size
    vector = llir.VectorType(t, lanes)
    v = b.load(element_pointer(ctx, values, (at,)), typ=vector)
    v.align = size
    if flags is None:
        _nontemporal(ctx, b.store(v, out), LINE)
        return
    bits = b.load(element_pointer(ctx, flags, (at,)), typ=llir.VectorType(I8, lanes))
    bits.align = 1
    set_ = b.icmp_unsigned("!=", bits, llir.Constant(bits.type, [0] * lanes))
    full = b.icmp_unsigned("==", b.bitcast(set_, llir.IntType(lanes)), llir.IntType(lanes)(-1))
    with b.if_else(full) as (whole, part):
        with whole:
            _nontemporal(ctx, b.store(v, out), LINE)
        with part:
            space = getattr(out.type, "addrspace", 0)
            masked = ctx.declare(f"llvm.masked.store.v{lanes}{_suffix(t)}.p{space}", llir.VoidType(),
                                 [vector, out.type, llir.IntType(32), set_.type])
            b.call(masked, [v, out, llir.IntType(32)(size), set_])


def _store(b: llir.IRBuilder, value: llir.Value, p: llir.Value) -> None:
    """A store, as ``_guarded`` takes it (no value)."""
    b.store(value, p)


def _nontemporal(ctx: "HostCtx", store: llir.Instruction, align: int) -> None:
    store.align = align
    store.set_metadata("nontemporal", ctx.module.add_metadata([llir.IntType(32)(1)]))


def _suffix(t: llir.Type) -> str:
    """LLVM's name of element type ``t`` in an intrinsic's (``f32``, ``i8``...)."""
    if isinstance(t, llir.IntType):
        return f"i{t.width}"
    return {"half": "f16", "bfloat": "bf16", "float": "f32", "double": "f64"}[str(t)]
