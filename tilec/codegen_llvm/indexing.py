"""``gather`` and ``histogram`` through the scratch buffer in shared memory.

``gather`` stages its source row-major (``shuffle.stage_in_smem``), then
each thread reads every result element at the coordinates its index
register names.  ``histogram`` clears ``num_bins`` counters, each thread adds
its elements with shared-memory atomics (one thread per replicated element,
one register per repeated coordinate), and after a barrier every thread
reads the counts its result registers hold.  Both read their index values
in the layout of the tile they produce, so the layout pass gives the index
(``gather``) or the source (``histogram``) and the result one layout
(the default for ops without a rule of their own).
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec import ir
from tilec.errors import TilecError
from tilec.ir.layouts import register_offsets
from tilec.ir.types import TileType, elem_type
from tilec.codegen_llvm.kernel import I32, I64, Ctx, all_of, element_address, linear_index, lowers, owner_predicate
from tilec.codegen_llvm.memory import _from_memory
from tilec.codegen_llvm.scalar_base import memory_type
from tilec.codegen_llvm.shuffle import _elem_bytes, stage_in_smem, tile_coordinates


def _widened(ctx: Ctx, v: llir.Value, t: ir.ScalarType, to: llir.IntType) -> llir.Value:
    """An integer register as ``to`` (an int type), extended by its type's sign."""
    if v.type.width == to.width:
        return v
    if v.type.width > to.width:
        return ctx.b.trunc(v, to)
    return ctx.b.sext(v, to) if t.kind == "int" else ctx.b.zext(v, to)


def _check_one_layout(op, index: TileType, result: TileType) -> None:
    """Result registers are made in the index tile's register order."""
    if index.layout != result.layout:
        raise TilecError(f"{op.NAME}: the index tile ({index.layout}) and the result ({result.layout}) "
                         "must share a layout; the layout pass gives them one")


@lowers(ir.Gather)
def _gather(ctx: Ctx, op: ir.Gather) -> None:
    """``result[c] = src[c with c[axis] = index[c] mod n]`` read from the staged source."""
    src, index, dst = op.src.type, op.index.type, op.result.type
    _check_one_layout(op, index, dst)
    (region,) = stage_in_smem(ctx, [(ctx[op.src], src)])
    b, size, elem = ctx.b, _elem_bytes(src), elem_type(src)
    low_bits = I32(src.shape[op.axis] - 1)
    out = []
    for v, coords in zip(ctx[op.index], tile_coordinates(ctx, index)):
        along = b.and_(_widened(ctx, v, elem_type(index), I32), low_bits)
        at = coords[:op.axis] + (along,) + coords[op.axis + 1:]
        address = element_address(b, region, linear_index(ctx, at, src.shape), size)
        out.append(_from_memory(ctx, b.load(address, typ=memory_type(elem), align=size), elem))
    ctx.bind(op.results, [out])


@lowers(ir.Histogram)
def _histogram(ctx: Ctx, op: ir.Histogram) -> None:
    """Clear the counters, count with atomics, read the counts back."""
    src, dst = op.src.type, op.result.type
    _check_one_layout(op, src, dst)
    b, bins = ctx.b, op.num_bins
    base = ctx.smem(bins * 4)
    places = [element_address(b, base, coords[0], 4) for coords in tile_coordinates(ctx, dst)]
    ctx.barrier()
    for address in places:
        b.store(I32(0), address, align=4)
    ctx.barrier()
    owner = owner_predicate(ctx, src.layout, src.shape)
    masks = ctx[op.mask] if op.mask is not None else None
    seen = set()
    for r, (v, offs) in enumerate(zip(ctx[op.src], register_offsets(src.layout, src.shape))):
        if offs in seen:  # a register repeating an element this thread already counts
            continue
        seen.add(offs)
        wide = _widened(ctx, v, elem_type(src), I64)
        in_range = b.icmp_unsigned("<", wide, llir.Constant(I64, bins))  # negatives are huge unsigned
        counted = all_of(b, [c for c in (in_range, owner, masks[r] if masks else None) if c is not None])
        bin_index = b.select(in_range, b.trunc(wide, I32), I32(0))  # a place to add the 0 of the uncounted
        b.atomic_rmw("add", element_address(b, base, bin_index, 4), b.zext(counted, I32), "monotonic")
    ctx.barrier()
    ctx.bind(op.results, [[b.load(address, typ=I32, align=4) for address in places]])
