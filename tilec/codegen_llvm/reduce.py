"""``reduce`` and ``scan``.

A reduction along dims ``D`` of any register layout (blocked, a tensor-core accumulator...)
runs in three steps, each combining with the op's ``combine`` region
(lowered inline on scalars):

1. inside each thread, over its registers along ``D`` (each distinct
   element once: a thread may hold copies);
2. across the lanes of a warp, by butterfly shuffles over the lane bits that
   step along ``D`` (``ThreadBit``; bits that only make copies would count
   twice), each a ``TargetLowering.shuffle_xor`` of 32-bit words;
3. across warps along ``D``, through shared memory: each warp writes its
   partial results, every thread reads and combines the partials of its
   output elements.

A scan gets its whole axis inside each thread (the layout pass sees to it),
so it is a sequential scan over registers.
"""
from __future__ import annotations

import itertools

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.core import Block
from tilec.ir.layouts import register_counts, register_offsets, register_strides, replicating
from tilec.ir.types import TileType, elem_type
from tilec.codegen_llvm.kernel import I32, Ctx, element_address, layout_coordinates, linear_index, lowers, thread_bit, thread_layout_bits
from tilec.codegen_llvm.memory import _from_memory, _to_memory
from tilec.codegen_llvm.scalar_base import bit_width, memory_type


def combine(ctx: Ctx, block: Block, acc: list, x: list) -> list:
    """The values ``block`` yields for scalars ``acc`` and ``x`` (lowered inline)."""
    for arg, v in zip(block.args, acc + x):
        ctx.env[arg] = [v]
    for op in block.ops[:-1]:
        ctx.lower_op(op)
    return [ctx[v][0] for v in block.terminator.values]


def _axis_runs(counts: list[int], strides: list[int], axis: int) -> list[list[int]]:
    """Register indices grouped by their index along the dims other than
    ``axis``; each group lists its registers along ``axis`` in order (a
    scan's layout holds the axis in each thread)."""
    keep = [d for d in range(len(counts)) if d != axis]
    out = []
    for kept in itertools.product(*(range(counts[d]) for d in keep)):
        base = sum(i * strides[d] for i, d in zip(kept, keep))
        out.append([base + i * strides[axis] for i in range(counts[axis])])
    return out


@lowers(ir.Reduce)
def _reduce(ctx: Ctx, op: ir.Reduce) -> None:
    t = op.srcs[0].type
    dims = set(range(len(t.shape))) if op.axis is None else {op.axis}
    srcs = [ctx[v] for v in op.srcs]
    bits = thread_layout_bits(ctx, t.layout, t.shape)
    lane_bits = [x for x in bits if not x.warp and x.dim in dims and not replicating(x, t.shape)]
    warp_bits = [x for x in bits if x.warp and x.dim in dims and not replicating(x, t.shape)]
    partial = {}  # kept offsets -> one value per operand, reduced over the thread and its warp
    for key, regs in _groups(t, dims).items():
        acc = [src[regs[0]] for src in srcs]
        for r in regs[1:]:
            acc = combine(ctx, op.combine, acc, [src[r] for src in srcs])
        for x in lane_bits:
            acc = combine(ctx, op.combine, acc, [shuffle_xor(ctx, v, 1 << x.bit) for v in acc])
        partial[key] = acc
    out_t = op.results[0].type
    keys = register_offsets(out_t.layout, out_t.shape) if isinstance(out_t, TileType) else [()]
    result = _across_warps(ctx, op, [partial[k] for k in keys], warp_bits)
    ctx.bind(op.results, [[p[k] for p in result] for k in range(len(op.srcs))])


def _groups(t: TileType, dims: set) -> dict[tuple, list[int]]:
    """The registers to combine for each offset along the dims not reduced:
    one register per distinct element (a thread may hold copies)."""
    keep = [d for d in range(len(t.shape)) if d not in dims]
    groups: dict[tuple, dict[tuple, int]] = {}
    for r, offs in enumerate(register_offsets(t.layout, t.shape)):
        groups.setdefault(tuple(offs[d] for d in keep), {}).setdefault(offs, r)
    return {key: list(regs.values()) for key, regs in groups.items()}


def _across_warps(ctx: Ctx, op: ir.Reduce, partial: list, warp_bits: list) -> list:
    """Step 3 (module docstring): partials of the warps along the reduced
    dims (those differing in ``warp_bits``) through shared memory."""
    if not warp_bits:
        return partial
    groups = 1 << len(warp_bits)
    out_t = op.results[0].type
    out_shape = out_t.shape if isinstance(out_t, TileType) else ()
    out_numel = out_t.numel if isinstance(out_t, TileType) else 1
    out_coords = (layout_coordinates(ctx, out_t.layout, out_t.shape) if isinstance(out_t, TileType)
                  else [()] * len(partial))
    b = ctx.b
    group = I32(0)
    for i, x in enumerate(warp_bits):
        group = b.or_(group, b.shl(thread_bit(ctx, x), I32(i)))
    elems = [elem_type(v.type) for v in op.srcs]
    sizes = [max(1, e.bits // 8) for e in elems]
    region = [_round_up(groups * out_numel * size, 16) for size in sizes]  # keeps every region aligned
    starts = [sum(region[:k]) for k in range(len(elems))]
    base = ctx.smem(sum(region))
    ctx.barrier()
    slots = [linear_index(ctx, c, out_shape) for c in out_coords]
    for vals, slot in zip(partial, slots):
        where = b.add(b.mul(group, I32(out_numel)), slot)
        for k, v in enumerate(vals):
            b.store(_to_memory(ctx, v, elems[k]), element_address(b, base, where, sizes[k], starts[k]), align=sizes[k])
    ctx.barrier()
    result = []
    for slot in slots:
        acc = None
        for g in range(groups):
            where = b.add(I32(g * out_numel), slot)
            vals = [_from_memory(ctx, b.load(element_address(b, base, where, sizes[k], starts[k]),
                                             typ=memory_type(elems[k]), align=sizes[k]), elems[k])
                    for k in range(len(elems))]
            acc = vals if acc is None else combine(ctx, op.combine, acc, vals)
        result.append(acc)
    return result


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to




# --------------------------------------------------------------------------- #
# Warp shuffles of any type
# --------------------------------------------------------------------------- #

def shuffle_xor(ctx: Ctx, v: llir.Value, lane_mask: int) -> llir.Value:
    """``v`` of the lane whose id differs from ours by ``lane_mask`` (xor):
    split into 32-bit words, shuffled, put back together."""
    b = ctx.b
    bits = bit_width(v.type)
    as_int = b.ptrtoint(v, llir.IntType(64)) if isinstance(v.type, llir.PointerType) else (
        b.bitcast(v, llir.IntType(bits)) if not isinstance(v.type, llir.IntType) else v)
    wide = llir.IntType(max(32, bits))
    word = b.zext(as_int, wide) if bits < 32 else as_int
    parts = [word] if wide.width == 32 else [b.trunc(b.lshr(word, wide(32 * i)), I32) for i in range(wide.width // 32)]
    moved = [ctx.lowering.shuffle_xor(ctx, p, lane_mask) for p in parts]
    if len(moved) == 1:
        word = moved[0]
    else:
        word = wide(0)
        for i, p in enumerate(moved):
            word = b.or_(word, b.shl(b.zext(p, wide), wide(32 * i)))
    back = b.trunc(word, llir.IntType(bits)) if bits < 32 else word
    if isinstance(v.type, llir.PointerType):
        return b.inttoptr(back, v.type)
    return back if isinstance(v.type, llir.IntType) else b.bitcast(back, v.type)


# --------------------------------------------------------------------------- #
# Scan
# --------------------------------------------------------------------------- #

@lowers(ir.Scan)
def _scan(ctx: Ctx, op: ir.Scan) -> None:
    t = op.srcs[0].type
    counts, strides = register_counts(t.layout, t.shape), register_strides(t.layout, t.shape)
    if counts[op.axis] != t.shape[op.axis]:
        raise AssertionError(f"scan layout {t.layout} does not hold axis {op.axis} in each thread")
    srcs = [list(ctx[v]) for v in op.srcs]
    outs = [list(regs) for regs in srcs]
    for group in _axis_runs(counts, strides, op.axis):
        run = list(reversed(group)) if op.reverse else group
        acc = [regs[run[0]] for regs in srcs]
        for r in run[1:]:
            acc = combine(ctx, op.combine, acc, [regs[r] for regs in srcs])
            for k in range(len(outs)):
                outs[k][r] = acc[k]
    ctx.bind(op.results, outs)
