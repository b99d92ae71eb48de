"""Ops that move elements between threads through shared memory:
``convert_layout``, ``reshape``, ``permute``, ``join`` and ``split``.

One mechanism serves them all (``exchange``): after a barrier, every thread
writes its registers into the scratch buffer at a row-major index of the
elements' coordinates, a barrier later it reads the registers of the result
layout from the index of *their* coordinates.  The ops differ only in the
index functions.  Several threads holding one element write the same value
to the same place, which is harmless.
"""
from __future__ import annotations

from typing import Callable, Optional

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.types import PointerType, TileType, elem_type, shape_of
from tilec.ir.layouts import num_registers, register_offsets, replicating, vector_runs
from tilec.codegen_llvm.kernel import I32, Ctx, byte_offset, element_address, layout_coordinates, linear_index, lowers, thread_layout_bits
from tilec.codegen_llvm.memory import _from_memory, _pack, _to_memory
from tilec.codegen_llvm.scalar_base import memory_type

IndexFn = Callable[[tuple], llir.Value]


def tile_coordinates(ctx: Ctx, t) -> list[tuple]:
    """Each register's coordinates; a scalar has one register at ``()``."""
    if isinstance(t, TileType):
        return layout_coordinates(ctx, t.layout, t.shape)
    return [()]


def row_major(ctx: Ctx, shape: tuple, extra: tuple = ()) -> IndexFn:
    """Index function: the row-major index in ``shape`` of coordinates + ``extra``."""
    return lambda coords: linear_index(ctx, tuple(coords) + tuple(I32(e) for e in extra), shape)


def exchange(ctx: Ctx, writes: list[tuple], reads: list[tuple], pred: Optional[llir.Value] = None,
             row_major: bool = False) -> list[list]:
    """Write each ``(regs, type, index_fn)``, then read each ``(type, index_fn)``
    through the scratch buffer; returns the lists read.  ``pred`` limits
    which threads write.  ``row_major``: every index function is the
    row-major index of its tile, so registers holding consecutive elements of
    a row (``vector_runs``) move as one vector, up to the target's widest access."""
    elem = elem_type(writes[0][1])
    mem, size = memory_type(elem), _elem_bytes(elem)
    numel = max(_numel(t) for t in [w[1] for w in writes] + [r[0] for r in reads])
    base = ctx.smem(numel * size)
    b = ctx.b
    ctx.barrier()
    with _maybe(b, pred):
        for regs, t, index_of in writes:
            coords = tile_coordinates(ctx, t)
            for start, width in _runs(ctx, t, size, row_major):
                values = [_to_memory(ctx, v, elem) for v in regs[start:start + width]]
                address = element_address(b, base, index_of(coords[start]), size)
                b.store(_pack(ctx, values), address, align=size * width)
    ctx.barrier()
    out = []
    for t, index_of in reads:
        coords, got = tile_coordinates(ctx, t), []
        for start, width in _runs(ctx, t, size, row_major):
            address = element_address(b, base, index_of(coords[start]), size)
            raw = b.load(address, typ=llir.VectorType(mem, width) if width > 1 else mem, align=size * width)
            parts = [raw] if width == 1 else [b.extract_element(raw, I32(i)) for i in range(width)]
            got.extend(_from_memory(ctx, v, elem) for v in parts)
        out.append(got)
    return out


def _runs(ctx: Ctx, t, size: int, row_major: bool) -> list[tuple[int, int]]:
    """The register groups ``exchange`` moves together: vector runs of a
    row-major tile, else one register at a time."""
    if not isinstance(t, TileType):
        return [(0, 1)]
    if not row_major or isinstance(t.elem, PointerType):  # no vectors of pointers
        return [(i, 1) for i in range(num_registers(t.layout, t.shape))]
    return vector_runs(t.layout, t.shape, max(1, ctx.target.max_vector_bytes // size), ctx.target.warp_size)


def stage_in_smem(ctx: Ctx, tiles: list[tuple], column_major: tuple[int, ...] = ()) -> list[llir.Value]:
    """Write each ``(regs, type)`` row-major into a region of its own of the
    scratch buffer (the 2-D tiles at the positions in ``column_major``
    column-major); after a barrier, return the regions' start pointers."""
    b = ctx.b
    starts, offset = [], 0
    for _, t in tiles:
        starts.append(offset)
        offset += -(-_numel(t) * _elem_bytes(t) // 16) * 16
    base = ctx.smem(offset)
    ctx.barrier()
    regions = []
    for i, ((regs, t), start) in enumerate(zip(tiles, starts)):
        region = byte_offset(b, base, start)
        index = _column_major(ctx, shape_of(t)) if i in column_major else row_major(ctx, shape_of(t))
        size, elem = _elem_bytes(t), elem_type(t)
        for v, coords in zip(regs, tile_coordinates(ctx, t)):
            b.store(_to_memory(ctx, v, elem), element_address(b, region, index(coords), size), align=size)
        regions.append(region)
    ctx.barrier()
    return regions


def _column_major(ctx: Ctx, shape: tuple) -> IndexFn:
    """Index function: element ``(i, j)`` of a 2-D ``shape`` at ``j * rows + i``."""
    return lambda coords: linear_index(ctx, tuple(reversed(coords)), tuple(reversed(shape)))


def _elem_bytes(t) -> int:
    return max(1, elem_type(t).bits // 8)  # a pointer's bits are 64


def _numel(t) -> int:
    return t.numel if isinstance(t, TileType) else 1


class _maybe:
    """``with _maybe(b, pred):`` -- under ``if pred`` when there is one."""

    def __init__(self, b: llir.IRBuilder, pred):
        self.b, self.pred, self.cm = b, pred, None

    def __enter__(self):
        if self.pred is not None:
            self.cm = self.b.if_then(self.pred)
            self.cm.__enter__()

    def __exit__(self, *exc):
        if self.cm is not None:
            return self.cm.__exit__(*exc)
        return False




@lowers(ir.ConvertLayout)
def convert_layout(ctx: Ctx, op: ir.ConvertLayout) -> None:
    """Renaming registers where every thread holds its elements already, else
    through shared memory (``exchange``)."""
    src, dst = op.src.type, op.result.type
    if src.layout == dst.layout:
        ctx.bind(op.results, [ctx[op.src]])
        return
    local = _register_permutation(ctx, src, dst)
    if local is not None:
        regs = ctx[op.src]
        ctx.bind(op.results, [[regs[i] for i in local]])
        return
    index = row_major(ctx, src.shape)
    ctx.bind(op.results, exchange(ctx, [(ctx[op.src], src, index)], [(dst, index)], row_major=True))


def moves_between_threads(ctx: Ctx, src: TileType, dst: TileType) -> bool:
    """Whether converting a tile from ``src``'s layout to ``dst``'s moves
    elements between threads (else it only renames registers)."""
    return src.layout != dst.layout and _register_permutation(ctx, src, dst) is None


def _register_permutation(ctx: Ctx, src: TileType, dst: TileType) -> Optional[list[int]]:
    """When every thread already holds the elements ``dst`` gives it -- the
    two layouts spread lane and warp bits over the dims alike (a tensor-core
    accumulator and the ``a`` operand of a dot chained to it) -- the source
    register each result register is; else None."""
    if _bit_signature(ctx, src) != _bit_signature(ctx, dst):
        return None
    index = {}
    for r, offs in enumerate(register_offsets(src.layout, src.shape)):
        index.setdefault(offs, r)
    wanted = register_offsets(dst.layout, dst.shape)
    if not all(offs in index for offs in wanted):
        return None
    return [index[offs] for offs in wanted]


def _bit_signature(ctx: Ctx, t: TileType) -> set:
    """What each lane/warp bit does in ``t``'s layout (copies or a step along a dim)."""
    return {(b.warp, b.bit, None if replicating(b, t.shape) else (b.dim, b.value))
            for b in thread_layout_bits(ctx, t.layout, t.shape)}


@lowers(ir.Reshape)
def _reshape(ctx: Ctx, op: ir.Reshape) -> None:
    src, dst = op.src.type, op.result.type
    ctx.bind(op.results, exchange(ctx, [(ctx[op.src], src, row_major(ctx, shape_of(src)))],
                                  [(dst, row_major(ctx, shape_of(dst)))], row_major=True))


@lowers(ir.Permute)
def _permute(ctx: Ctx, op: ir.Permute) -> None:
    """Result dim ``i`` is source dim ``order[i]``: write each element where the
    result has it, read back row-major."""
    dst = op.result.type
    to_dst = row_major(ctx, dst.shape)

    def index(coords):
        return to_dst(tuple(coords[i] for i in op.order))
    ctx.bind(op.results, exchange(ctx, [(ctx[op.src], op.src.type, index)], [(dst, to_dst)]))


@lowers(ir.Join)
def _join(ctx: Ctx, op: ir.Join) -> None:
    dst = op.result.type
    writes = [(ctx[v], v.type, row_major(ctx, dst.shape, (k,))) for k, v in enumerate((op.lhs, op.rhs))]
    ctx.bind(op.results, exchange(ctx, writes, [(dst, row_major(ctx, dst.shape))]))


@lowers(ir.Split)
def _split(ctx: Ctx, op: ir.Split) -> None:
    src = op.src.type
    reads = [(r.type, row_major(ctx, src.shape, (k,))) for k, r in enumerate(op.results)]
    ctx.bind(op.results, exchange(ctx, [(ctx[op.src], src, row_major(ctx, src.shape))], reads))
