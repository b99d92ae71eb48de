"""Shared-memory buffers (``gpu_ops``), the same on every GPU: where a
buffer and its slots are, where an element of a ``Shared`` matrix is
(``swizzled_offset``), and the rules for ``local_alloc``, ``local_store`` and
``local_load`` (a backend may lay faster ones over the last two).

A buffer is one register: its base pointer, at the offset the shared-memory
plan (``Analyses.shared``) gave it.
"""
from __future__ import annotations

from tilec import ir
from tilec.ir.layouts import Shared, exact_log2, vector_runs
from tilec.ir.types import ScalarType, TileType, elem_type
from tilec.codegen_llvm.kernel import I32, Ctx, byte_offset, layout_coordinates, lowers
from tilec.codegen_llvm.memory import _from_memory, _pack, _to_memory
from tilec.codegen_llvm.scalar_base import memory_type


def swizzled_offset(ctx: Ctx, layout: Shared, shape: tuple, coords: tuple, elem_bytes: int):
    """Byte offset (i32) of the element at ``coords`` of the matrix (the last
    two dims of a ``Shared`` tile of ``shape``; ``coords`` are i32 values):
    ``Shared``'s docstring gives the formula."""
    b = ctx.b
    slow, fast = layout.matrix_dims
    row, col = coords[slow], coords[fast]
    rows, width = shape[-2:][slow], shape[-2:][fast]
    vec, atom = layout.vec, layout.atom_width(width)
    within_atom = b.and_(col, I32(atom - 1)) if atom < width else col
    chunk = b.lshr(within_atom, I32(exact_log2(vec)))
    within = b.and_(col, I32(vec - 1))
    if layout.max_phase > 1:
        phase = b.and_(b.lshr(row, I32(exact_log2(layout.per_phase))), I32(layout.max_phase - 1))
        chunk = b.xor(chunk, phase)
    index = b.add(b.add(b.mul(row, I32(atom)), b.shl(chunk, I32(exact_log2(vec)))), within)
    if atom < width:
        index = b.add(index, b.mul(b.lshr(col, I32(exact_log2(atom))), I32(rows * atom)))
    return b.mul(index, I32(elem_bytes))


def matrix_bytes(shape: tuple, elem: ScalarType) -> int:
    """Bytes of one matrix (the last two dims) of a shared tile."""
    return shape[-1] * shape[-2] * elem.bytes


def slot_base(ctx: Ctx, buf: ir.Value, slot: ir.Value):
    """The start of matrix ``slot`` of buffer ``buf``."""
    t = buf.type
    step = matrix_bytes(t.shape, t.elem)
    return byte_offset(ctx.b, ctx[buf][0], ctx.b.mul(ctx[slot][0], I32(step)))


def store_shared_tile(ctx: Ctx, regs: list, src: TileType, base, layout: Shared, shape: tuple,
                      vector: int = 1) -> None:
    """Write the registers of ``src`` into the matrix at ``base``: one store
    each, or up to ``vector`` registers at once where they hold consecutive
    elements along the matrix's fast dim (the last) inside one swizzle chunk."""
    b, elem = ctx.b, elem_type(src)
    coords = layout_coordinates(ctx, src.layout, src.shape)
    if layout.matrix_dims[1] == 1 and min(vector, layout.vec) > 1:
        runs = vector_runs(src.layout, src.shape, min(vector, layout.vec), ctx.target.warp_size)
    else:
        runs = [(i, 1) for i in range(len(regs))]
    for start, width in runs:
        offset = swizzled_offset(ctx, layout, shape, coords[start], elem.bytes)
        values = [_to_memory(ctx, v, elem) for v in regs[start:start + width]]
        b.store(_pack(ctx, values), byte_offset(b, base, offset), align=elem.bytes * width)


def read_shared_tile(ctx: Ctx, base, layout: Shared, shape: tuple, elem: ScalarType, dst: TileType) -> list:
    """The registers of ``dst`` (a register layout) read from the matrix at ``base``, one load each."""
    b, out = ctx.b, []
    mem = memory_type(elem)
    for coords in layout_coordinates(ctx, dst.layout, dst.shape):
        offset = swizzled_offset(ctx, layout, shape, coords, elem.bytes)
        out.append(_from_memory(ctx, b.load(byte_offset(b, base, offset), typ=mem, align=elem.bytes), elem))
    return out


@lowers(ir.LocalAlloc)
def local_alloc(ctx: Ctx, op: ir.LocalAlloc) -> None:
    ctx.bind(op.results, [[ctx.shared_at(ctx.plan.offsets[op], op.nbytes)]])


@lowers(ir.LocalStore)
def local_store(ctx: Ctx, op: ir.LocalStore) -> None:
    """The registers into a slot, as wide as the target's widest access allows."""
    buf, src = op.buf.type, op.value.type
    vector = max(1, ctx.target.max_vector_bytes // buf.elem.bytes)
    store_shared_tile(ctx, ctx[op.value], src, slot_base(ctx, op.buf, op.slot), buf.layout, buf.shape, vector)


@lowers(ir.LocalLoad)
def local_load(ctx: Ctx, op: ir.LocalLoad) -> None:
    buf = op.buf.type
    base = slot_base(ctx, op.buf, op.slot)
    ctx.bind(op.results, [read_shared_tile(ctx, base, buf.layout, buf.shape, buf.elem, op.result.type)])
