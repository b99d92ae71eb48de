"""The tensor cores: ``dot`` on ``mma.sync``, and operands read from shared
memory with ``ldmatrix``.

Layouts (``tilec.ir.layouts_nvidia``): the accumulator is ``Mma``, the operands are
``DotOperand``; both put a thread's elements where the instruction wants its
registers, so a ``dot`` is only a loop of instructions over the register
lists.  An operand reaches its layout from a swizzled shared-memory matrix
(``load_operand``): one ``ldmatrix.x4`` per 16x16 bytes-block pair when the
matrix is stored along ``k`` (or, for 16-bit elements, ``ldmatrix.trans``
along the other dim), element by element otherwise.  ``convert_layout`` from
a register layout to a ``DotOperand`` goes through scratch shared memory the
same way.

``RULES`` holds this file's rules, which the NVIDIA backend's
``TargetLowering`` lays over the generic ones: ``dot`` on an ``Mma`` layout
(the rest on the FMA units, as every backend) and ``convert_layout`` to a
``DotOperand``.

Instructions are inline PTX (``INSTRUCTIONS`` maps the element types to
one), as are ``ldmatrix`` and, in ``async_copy.py``, ``cp.async``.
"""
from __future__ import annotations

import functools

from dataclasses import dataclass

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.layouts import Blocked, Shared, exact_log2, root_layout
from tilec.ir.layouts_nvidia import DotOperand, Mma, mma_grid, swizzled_layout
from tilec.ir.types import ScalarType, TileType, bf16, elem_type, f8e4nv, f8e5, f16, f32, i8, i32
from tilec.rules import registry
from tilec.codegen_llvm.dot import fma_dot, round_tf32
from tilec.codegen_llvm.kernel import I32, I64, LOWER, Ctx, byte_offset
from tilec.codegen_llvm.scalar_base import llvm_type
from tilec.codegen_llvm.shared_buffers import matrix_bytes, read_shared_tile, store_shared_tile, swizzled_offset
from tilec.codegen_llvm.shuffle import convert_layout, moves_between_threads
from tilec.backends.nvidia.wgmma import (lower_dot_wait, lower_loop_accumulator, lower_warpgroup_dot,
                                        starts_loop_accumulator, warpgroup_dot_fits)

RULES, lowers = registry("Register the decorated ``rule(ctx, op)`` as the NVIDIA backend's for the given op classes.")


def _warp_ids(ctx: Ctx, mma: Mma) -> tuple:
    """The warp's ``(m, n)`` place on the layout's warp grid (i32 values)."""
    b, (wm, wn) = ctx.b, mma.wpc
    return b.and_(ctx.warp, I32(wm - 1)), b.and_(b.lshr(ctx.warp, I32(exact_log2(wm))), I32(wn - 1))


# --------------------------------------------------------------------------- #
# dot on mma.sync
# --------------------------------------------------------------------------- #

@dataclass(frozen=True)
class Instruction:
    """One ``mma.sync`` shape and type: its PTX, and how the accumulator
    travels (``acc_words`` 32-bit registers, constraint ``acc_reg``)."""

    ptx: str
    acc_words: int
    acc_reg: str


INSTRUCTIONS = {
    (f16, f32): Instruction("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 4, "f"),
    (bf16, f32): Instruction("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 4, "f"),
    (f16, f16): Instruction("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", 2, "r"),
    (f32, f32): Instruction("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 4, "f"),
    (i8, i32): Instruction("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", 4, "r"),
    (f8e4nv, f32): Instruction("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", 4, "f"),
    (f8e5, f32): Instruction("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32", 4, "f"),
}


@lowers(ir.Dot)
def _dot(ctx: Ctx, op: ir.Dot) -> None:
    """On the tensor cores where the layout pass chose them (an ``Mma``
    result): warpgroup instructions where they fit (``wgmma.py``), else
    ``mma.sync``; else on the FMA units."""
    if warpgroup_dot_fits(ctx, op):
        lower_warpgroup_dot(ctx, op, _step_words)
    elif isinstance(op.result.type.layout, Mma):
        lower_mma_dot(ctx, op)
    else:
        fma_dot(ctx, op)


lowers(ir.DotWait)(lower_dot_wait)


@lowers(ir.Constant)
def _constant(ctx: Ctx, op: ir.Constant) -> None:
    """A warpgroup K loop's starting accumulator from one inline asm
    (``wgmma.lower_loop_accumulator``); any other constant the generic way."""
    if starts_loop_accumulator(ctx, op):
        lower_loop_accumulator(ctx, op)
    else:
        LOWER[ir.Constant](ctx, op)


def lower_mma_dot(ctx: Ctx, op: ir.Dot) -> None:
    """``acc + a @ b`` as ``mma.sync`` instructions over the register lists,
    one ``k`` step at a time.  An operand ``local_load`` left for the dot
    (``Ctx.deferred``) is read by ``ldmatrix`` just before the step that
    needs it, so only one step's operands are live at once."""
    a_t, b_t, c_t = op.a.type, op.b.type, op.result.type
    in_elem, acc_elem = elem_type(a_t), elem_type(c_t)
    inst = INSTRUCTIONS[(in_elem, acc_elem)]
    reps_m, k_steps = mma_grid(a_t.layout, a_t.shape)
    reps_n, _ = mma_grid(b_t.layout, b_t.shape)
    a_words, b_words = _step_words(ctx, op.a, in_elem), _step_words(ctx, op.b, in_elem)
    acc = list(ctx[op.acc])
    fn = _mma_asm(inst)
    for ks in range(k_steps):
        a_step, b_step = a_words(ks), b_words(ks)
        for rm in range(reps_m):
            for rn in range(reps_n):
                at = (rm * reps_n + rn) * 4
                acc[at:at + 4] = _issue(ctx, fn, inst, a_step[rm], b_step[rn], acc[at:at + 4], acc_elem)
    ctx.bind(op.results, [acc])


def _step_words(ctx: Ctx, v: ir.Value, elem: ScalarType):
    """``words(ks)``: per instruction tile along the operand's outer dim, its
    32-bit words for ``k`` step ``ks`` (f32 rounded to tf32, as the
    interpreter does)."""
    layout = v.type.layout
    reps, k_steps = mma_grid(layout, v.type.shape)
    per = 4 if layout.idx == 0 else 2
    reader = ctx.deferred.pop(v, None)
    if reader is None:
        regs = ctx[v]
        if elem == f32:
            regs = [round_tf32(ctx, x) for x in regs]
        packed = [_to_word(ctx, regs[i:i + layout.kwidth], elem) for i in range(0, len(regs), layout.kwidth)]

        def words(ks):
            return [packed[(rep * k_steps + ks) * per:][:per] for rep in range(reps)]
        return words

    def read(ks):
        got = reader.words(ks)
        if elem == f32:
            got = [[_round_word(ctx, w) for w in ws] for ws in got]
        return got
    return read


def _round_word(ctx: Ctx, word):
    b = ctx.b
    return b.bitcast(round_tf32(ctx, b.bitcast(word, llir.FloatType())), I32)


def _mma_asm(inst: Instruction) -> llir.InlineAsm:
    n = inst.acc_words
    outs = ", ".join(f"${i}" for i in range(n))
    a = ", ".join(f"${n + i}" for i in range(4))
    b = ", ".join(f"${n + 4 + i}" for i in range(2))
    c = ", ".join(f"${n + 6 + i}" for i in range(n))
    text = f"{inst.ptx} {{{outs}}}, {{{a}}}, {{{b}}}, {{{c}}};"
    reg = llir.FloatType() if inst.acc_reg == "f" else I32
    constraints = ",".join([f"={inst.acc_reg}"] * n + ["r"] * 6 + [str(i) for i in range(n)])
    ftype = llir.FunctionType(llir.LiteralStructType([reg] * n), [I32] * 6 + [reg] * n)
    return llir.InlineAsm(ftype, text, constraints, side_effect=False)


def _issue(ctx: Ctx, fn, inst: Instruction, a: list, b: list, acc: list, acc_elem: ScalarType) -> list:
    """One instruction: four accumulator elements in, four out."""
    bld = ctx.b
    if inst.acc_words == 2:  # f16 accumulator: element pairs in one register
        acc_in = [_to_word(ctx, acc[i:i + 2], acc_elem) for i in (0, 2)]
    else:
        acc_in = acc
    out = bld.call(fn, a + b + acc_in)
    words = [bld.extract_value(out, i) for i in range(inst.acc_words)]
    if inst.acc_words == 2:
        return [x for w in words for x in _from_word(ctx, w, acc_elem, 2)]
    return words


def _to_word(ctx: Ctx, values: list, elem: ScalarType):
    b = ctx.b
    if len(values) == 1:
        return b.bitcast(values[0], I32)
    vec = llir.Constant(llir.VectorType(llvm_type(elem), len(values)), None)
    for i, v in enumerate(values):
        vec = b.insert_element(vec, v, I32(i))
    return b.bitcast(vec, I32)


def _from_word(ctx: Ctx, word, elem: ScalarType, n: int) -> list:
    b = ctx.b
    if n == 1:
        return [b.bitcast(word, llvm_type(elem))]
    vec = b.bitcast(word, llir.VectorType(llvm_type(elem), n))
    return [b.extract_element(vec, I32(i)) for i in range(n)]


# --------------------------------------------------------------------------- #
# Swizzled shared-memory matrices
# --------------------------------------------------------------------------- #

def split_offset(layout: Shared, shape: tuple, coords: tuple, elem_bytes: int) -> tuple[tuple, int]:
    """Split constant matrix coordinates ``coords`` (added to a lane's own)
    into small ones and a byte immediate: ``swizzled_offset(lane + coords) ==
    swizzled_offset(lane + small) + imm`` for every lane inside the matrix.
    A whole number of swizzle periods along either dim (``max_phase`` rows
    of ``per_phase``; ``max_phase`` vectors, one atom) moves the element by
    a fixed number of bytes: the XOR only touches the bits below a period."""
    fast = layout.matrix_dims[1]
    swizzled = layout.max_phase > 1
    periods = [layout.per_phase * layout.max_phase if swizzled else 1] * 2
    periods[fast] = layout.vec * layout.max_phase if swizzled else 1
    small = tuple(c % period for c, period in zip(coords, periods))
    high = tuple(c - s for c, s in zip(coords, small))
    return small, layout.unswizzled_offset(shape, high) * elem_bytes


def load_shared_tile(ctx: Ctx, base, layout: Shared, shape: tuple, elem: ScalarType, dst: TileType) -> list:
    """The registers of ``dst`` (a register layout) read from the matrix at
    ``base``: ``ldmatrix`` for a ``DotOperand`` that allows it, else one
    ``ld.shared`` per element."""
    if isinstance(dst.layout, DotOperand) and ldmatrix_fits(dst.layout, layout, elem):
        return OperandReader(ctx, base, layout, shape, elem, dst).registers()
    return read_shared_tile(ctx, base, layout, shape, elem, dst)


def ldmatrix_fits(op_layout: DotOperand, layout: Shared, elem: ScalarType) -> bool:
    """``ldmatrix`` moves 8 rows of 16 bytes and hands each lane 4 bytes of
    one row: the matrix must be stored along ``k`` with ``kwidth`` elements
    making 4 bytes, or (``.trans``) along the other dim with 16-bit elements."""
    if elem.bits * op_layout.kwidth != 32 or layout.vec * elem.bytes != 16:
        return False
    k_dim = 1 - op_layout.idx
    return layout.order[0] - (layout.rank - 2) == k_dim or elem.bits == 16


class OperandReader:
    """Reads a ``DotOperand`` tile from a swizzled matrix by ``ldmatrix``,
    one ``k`` step at a time.  Lane ``8j + r`` points at row ``r`` of matrix
    ``j``; each instruction reads four 8x(16-byte) matrices: for ``a``, rows
    0-7 / 8-15 by ``k`` halves (the order of its four words); for ``b``,
    ``k`` halves of two instruction columns (``.x2``: of one)."""

    def __init__(self, ctx: Ctx, base, layout: Shared, shape: tuple, elem: ScalarType, dst: TileType):
        op_layout: DotOperand = dst.layout
        b = ctx.b
        self.ctx, self.base, self.layout, self.shape, self.elem, self.dst = ctx, base, layout, shape, elem, dst
        self.op_layout = op_layout
        self.is_a = op_layout.idx == 0
        self.trans = layout.order[0] - (layout.rank - 2) == op_layout.idx  # stored along the outer dim
        (wm, wn), half = op_layout.parent.wpc, 4 * op_layout.kwidth
        wid_m, wid_n = _warp_ids(ctx, op_layout.parent)
        j, r = b.lshr(ctx.lane, I32(3)), b.and_(ctx.lane, I32(7))
        j_lo, j_hi = b.and_(j, I32(1)), b.and_(b.lshr(j, I32(1)), I32(1))
        self.reps, self.k_steps = mma_grid(op_layout, dst.shape)
        self.outer_size = dst.shape[0] if self.is_a else dst.shape[1]
        if self.is_a:
            outer_warp, self.rep_stride, self.per_call = b.mul(wid_m, I32(16)), 16 * wm, 1
            outer_off, k_off = b.mul(j_lo, I32(8)), b.mul(j_hi, I32(half))
        else:
            outer_warp, self.rep_stride = b.mul(wid_n, I32(8)), 8 * wn
            self.per_call = 2 if self.reps % 2 == 0 else 1
            outer_off = b.mul(j_hi, I32(self.rep_stride)) if self.per_call == 2 else I32(0)
            k_off = b.mul(j_lo, I32(half))
        # this lane's row of its matrix: along k when the tile is stored along the outer dim
        lane_outer = b.add(outer_warp, outer_off)
        self.lane_outer = lane_outer if self.trans else b.add(lane_outer, r)
        self.lane_k = b.add(k_off, r) if self.trans else k_off
        self.words_per_rep = 4 if self.is_a else 2
        self.count = 4 if self.is_a or self.per_call == 2 else 2

    def words(self, ks: int) -> list[list]:
        """Per instruction tile along the outer dim, its words for ``k`` step
        ``ks``.  Each address is a lane's swizzled offset plus an immediate
        (``split_offset``), so a loop keeps few address registers live."""
        b, out = self.ctx.b, []
        wraps = self.reps * self.rep_stride > self.outer_size  # a tile narrower than its warps
        lane_outer, lane_k = self.lane_outer, self.lane_k
        for rep in range(0, self.reps, self.per_call):
            outer, k = rep * self.rep_stride, ks * self.op_layout.k_step
            if wraps:
                lane = (b.and_(b.add(lane_outer, I32(outer)), I32(self.outer_size - 1)), b.add(lane_k, I32(k)))
                imm = 0
            else:
                small, imm = split_offset(self.layout, self.shape, self._matrix_order((outer, k)), self.elem.bytes)
                outer, k = self._matrix_order(small)  # the same swap takes it back
                lane = (b.add(lane_outer, I32(outer)), b.add(lane_k, I32(k)))
            coords = self._matrix_order(lane)
            offset = swizzled_offset(self.ctx, self.layout, self.shape, coords, self.elem.bytes)
            got = b.call(_ldmatrix_asm(self.count, self.trans, imm),
                         [b.ptrtoint(byte_offset(b, self.base, offset), I64)])
            regs = [b.extract_value(got, i) for i in range(self.count)]
            out.extend(regs[i:i + self.words_per_rep] for i in range(0, self.count, self.words_per_rep))
        return out

    def _matrix_order(self, pair: tuple) -> tuple:
        """``(outer, k)`` as the matrix's ``(row, column)`` (``a`` is ``M x K``, ``b`` ``K x N``)."""
        return pair if self.is_a else pair[::-1]

    def registers(self) -> list:
        """The whole tile's registers, in the layout's order."""
        steps = [self.words(ks) for ks in range(self.k_steps)]
        return [x for rep in range(self.reps) for ks in range(self.k_steps) for w in steps[ks][rep]
                for x in _from_word(self.ctx, w, self.elem, self.op_layout.kwidth)]


@functools.cache
def _ldmatrix_asm(count: int, trans: bool, imm: int) -> llir.InlineAsm:
    """``ldmatrix`` of ``count`` matrices from the address operand plus ``imm`` bytes."""
    outs = ", ".join(f"${i}" for i in range(count))
    address = f"${count}+{imm}" if imm else f"${count}"
    text = f"ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 {{{outs}}}, [{address}];"
    ftype = llir.FunctionType(llir.LiteralStructType([I32] * count), [I64])
    return llir.InlineAsm(ftype, text, ",".join(["=r"] * count + ["l"]), side_effect=True)


# --------------------------------------------------------------------------- #
# Register layouts -> operand layouts through scratch shared memory
# --------------------------------------------------------------------------- #

@lowers(ir.ConvertLayout)
def _convert_layout(ctx: Ctx, op: ir.ConvertLayout) -> None:
    """To a ``DotOperand`` through a swizzled matrix (``convert_to_operand``)
    unless the registers only need renaming; any other conversion as every
    backend does it."""
    src, dst = op.src.type, op.result.type
    if isinstance(dst.layout, DotOperand) and moves_between_threads(ctx, src, dst):
        ctx.bind(op.results, [convert_to_operand(ctx, ctx[op.src], src, dst)])
    else:
        convert_layout(ctx, op)


def convert_to_operand(ctx: Ctx, regs: list, src: TileType, dst: TileType) -> list:
    """``src``'s registers in ``dst``'s ``DotOperand`` layout: written to a
    swizzled scratch matrix stored along ``src``'s fastest dim, then read
    back (``ldmatrix`` where it fits)."""
    elem = elem_type(src)
    order = _fastest_first(src)
    layout = swizzled_layout(src.shape, order, elem.bytes)
    base = ctx.smem(matrix_bytes(src.shape, elem))
    ctx.barrier()
    store_shared_tile(ctx, regs, src, base, layout, src.shape)
    ctx.barrier()
    return load_shared_tile(ctx, base, layout, src.shape, elem, dst)


def _fastest_first(t: TileType) -> tuple:
    """Dims of a register tile, the one its threads hold consecutive elements of first."""
    root = root_layout(t.layout)
    if isinstance(root, Blocked) and root.rank == len(t.shape):
        return root.order
    return tuple(reversed(range(len(t.shape))))
