"""The next program's loads, prefetched while this program computes.

A GPU hides a program's memory latency behind other programs in flight; a
CPU thread runs its programs one after the other (``grid.py``), and its
hardware prefetchers follow a stream only while it is read.  A row-wise
kernel reads its row, computes, and stores: while it computes, nothing
asks for the next program's row, so each program's first pass waits on
memory from the start (softmax at 4096 columns: its load pass read at
14 GB/s, where numpy's ``max(axis=1)`` reads the same rows at 30).

So the program asks for the next one's tiles ahead: a load of the kernel's
own block (not in a loop or a branch) whose pointers come from the
arguments, the program's ids and constants alone (``ADDRESS_OPS``, no
memory read) has its pointer tile lowered again for the program
``LEAD_BYTES`` of such loads ahead in the grid entry's order (x fastest:
``programs_ahead``), and the first loop that writes a costly tile computed
without reading memory (``HostCtx.materialize`` of a tile of
``PREFETCH_COST`` or more: softmax's exp) prefetches that tile's cache
lines into L2, a few every vector of the loop, spread over its whole
length (``write_prefetching``).  It does so only where the launch streams
(its arrays exceed the last-level cache, so the loads come from memory:
``streaming.py``: the variants of target ``cpu-streaming``, on the
streaming flag's branch); otherwise the loop writes the tile as before:
from the last-level cache the hardware prefetchers keep up, and the
prefetches cost softmax 4% at 1024 columns.  A prefetch never faults, so the last
program's prefetches past its arrays do no harm.  Kernels without such a
loop, or without such a load, are code as before.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.core import Function, Op, Value
from tilec.ir.types import TileType, elem_type
from tilec.codegen_llvm.kernel import param_type
from tilec.codegen_llvm.memory import _to_memory as to_memory
from tilec.codegen_llvm.scalar_base import bit_width, counted_loop, memory_type
from tilec.backends.host.tiles import I64, Buffer, Tile, coords_of, element_pointer, for_each, linear_index, numel

if TYPE_CHECKING:
    from tilec.backends.host.codegen import HostCtx

#: Ops a prefetched load's pointers may be computed with: no memory read,
#: nothing that may trap (no division), no loop of their own (a cheap tile
#: stays lazy).
ADDRESS_OPS = (ir.Add, ir.Sub, ir.Mul, ir.AddPtr, ir.And, ir.Or, ir.Xor, ir.Shl, ir.Shr, ir.Cast,
               ir.Arange, ir.Splat, ir.Constant, ir.ProgramId, ir.NumPrograms, ir.Broadcast,
               ir.ExpandDims, ir.Reshape)
#: The per-element cost (``tiles.Tile.cost``) from which a tile computed
#: without reading memory is worth hiding the next program's loads behind
#: (a math function's, ``rules_values.MATH_COST``).
PREFETCH_COST = 20
#: A cache line, in bytes (every x86-64 and AArch64 core this runs on).
LINE = 64
#: ``llvm.prefetch``'s locality: 2, the L2 (3, the L1, was slower: the
#: loop's own buffers live there).
LOCALITY = 2
#: Where the launch streams, the loads of the program this many bytes of
#: them ahead are prefetched (``programs_ahead``): softmax's 8 KB rows, one
#: program ahead, still waited on memory (two ahead: +7% at 2048 columns;
#: without streaming, at 1024 columns, two ahead was 15-20% slower).
LEAD_BYTES = 16 << 10


def prefetchable_loads(fn: Function) -> list[ir.Load]:
    """The loads of ``fn``'s own block whose pointer tile is computed from the
    arguments, the program's ids and constants by ``ADDRESS_OPS`` alone."""
    return [op for op in fn.body.ops
            if isinstance(op, ir.Load) and isinstance(op.result.type, TileType) and not op.volatile
            and _address_only(op.ptr)]


def _address_only(v: Value, seen: set | None = None) -> bool:
    seen = set() if seen is None else seen
    owner = v.owner
    if not isinstance(owner, Op):
        return True  # an argument of the kernel (the loads are in its own block)
    if owner in seen:
        return True
    seen.add(owner)
    return isinstance(owner, ADDRESS_OPS) and not owner.regions and all(
        _address_only(o, seen) for o in owner.operands)


def _slice(values: list[Value]) -> set[Op]:
    """The ops computing ``values``."""
    ops, stack = set(), list(values)
    while stack:
        owner = stack.pop().owner
        if isinstance(owner, Op) and owner not in ops:
            ops.add(owner)
            stack.extend(owner.operands)
    return ops


def next_program_ids(ctx: "HostCtx", ahead: llir.Value) -> list[llir.Value]:
    """The ids of the program the grid entry runs ``ahead`` (i32, at least 1)
    after this one (x fastest; along x past the grid's last, at most one row
    of the grid later), and the grid's size: ``GRID_PARAMS``' values for it."""
    b = ctx.b
    (x, y, z), (gx, gy, gz) = ctx.grid[:3], ctx.grid[3:]
    nx = b.add(x, ahead)
    wrap_x = b.icmp_unsigned(">=", nx, gx)
    ny = b.add(y, b.zext(wrap_x, y.type))
    wrap_y = b.icmp_unsigned(">=", ny, gy)
    nz = b.add(z, b.zext(wrap_y, z.type))
    return [b.select(wrap_x, b.sub(nx, gx), nx), b.select(wrap_y, y.type(0), ny), nz, gx, gy, gz]


def programs_ahead(loads: list[ir.Load]) -> llir.Value:
    """How many programs ahead the prefetched loads are (i32): enough for
    ``LEAD_BYTES`` of them, at least one."""
    tile_bytes = sum(numel(load.result.type.shape) * _bytes(memory_type(elem_type(load.result.type))) for load in loads)
    return llir.IntType(32)(max(1, -(-LEAD_BYTES // max(1, tile_bytes))))


def next_pointers(ctx: "HostCtx", loads: list[ir.Load]) -> list[Tile]:
    """``loads``' pointer tiles for the next program, lowered again at the
    builder's place with the next ids (scalars now, tiles lazily); [] where
    that would take a loop (``codegen.NeedsLoop``)."""
    from tilec.backends.host.codegen import NeedsLoop

    fn = ctx.fn
    ops = _slice([load.ptr for load in loads])
    saved_env, saved_grid = ctx.env, ctx.grid
    ctx.env = {a: saved_env[a] for a in fn.args}
    ctx.grid = next_program_ids(ctx, programs_ahead(loads))
    ctx.relowering = True
    try:
        for op in fn.body.ops:
            if op in ops:
                ctx.lower_op(op)
        return [ctx.env[load.ptr] for load in loads]
    except NeedsLoop:
        return []
    finally:
        ctx.env, ctx.grid, ctx.relowering = saved_env, saved_grid, False


def line_chunk(tile: Tile) -> int:
    """The elements of ``tile`` in a cache line, where its innermost dim is a
    whole number of at least two such chunks (``write_prefetching`` can write
    it); else 0."""
    chunk = max(1, LINE // _bytes(memory_type(tile.elem)))
    inner = tile.shape[-1] if tile.shape else 1
    return chunk if inner % chunk == 0 and inner >= 2 * chunk else 0


def write_prefetching(ctx: "HostCtx", tile: Tile, buf: Buffer, pointers: list[Tile]) -> None:
    """Store every element of ``tile`` into ``buf`` (``tiles.write``), each
    cache line's worth of the innermost dim (``line_chunk``, nonzero) a loop
    of its own after the prefetches of the next lines of ``pointers``'
    tiles: their lines spread evenly over the whole loop."""
    b = ctx.b
    chunk = line_chunk(tile)
    outer = tile.shape[:-1] + (tile.shape[-1] // chunk,)
    chunks = numel(outer)
    plans = []  # (pointer tile, elements a line, lines a row, lines, lines each chunk)
    for p in pointers:
        per_line = max(1, LINE // _bytes(memory_type(p.elem.elem)))
        row_lines = -(-p.shape[-1] // per_line)
        lines = numel(p.shape[:-1]) * row_lines
        plans.append((p, per_line, row_lines, lines, -(-lines // chunks)))
    fetch = _prefetch_intrinsic(ctx, pointers[0])

    def body(coords) -> None:
        q = linear_index(ctx, coords, outer)
        for p, per_line, row_lines, lines, each in plans:
            for r in range(each):
                line = b.add(b.mul(q, I64(each)), I64(r)) if each > 1 else q
                if lines < chunks * each:  # the last chunks fetch the last line again
                    line = b.select(b.icmp_unsigned("<", line, I64(lines)), line, I64(lines - 1))
                if lines == row_lines:  # one row
                    row, col = I64(0), line
                else:
                    row, col = b.udiv(line, I64(row_lines)), b.urem(line, I64(row_lines))
                at = coords_of(ctx, row, p.shape[:-1]) + (b.mul(col, I64(per_line)),)
                ptr = p.at(ctx, at)
                b.call(fetch, [ptr, llir.IntType(32)(0), llir.IntType(32)(LOCALITY), llir.IntType(32)(1)])
        start = b.mul(coords[-1], I64(chunk))

        def element(i) -> None:
            at = coords[:-1] + (b.add(start, i),)
            b.store(to_memory(ctx, tile.at(ctx, at), tile.elem), element_pointer(ctx, buf, at))
        counted_loop(b, I64(chunk), element)
    for_each(ctx, outer, body)


def _prefetch_intrinsic(ctx: "HostCtx", pointers: Tile) -> llir.Function:
    """``llvm.prefetch`` for pointers of the address space of ``pointers``' elements."""
    t, i32 = param_type(pointers.elem), llir.IntType(32)
    return ctx.declare(f"llvm.prefetch.p{getattr(t, 'addrspace', 0)}", llir.VoidType(), [t, i32, i32, i32])


def _bytes(t: llir.Type) -> int:
    return max(1, bit_width(t) // 8)
