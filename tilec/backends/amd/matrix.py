"""Dots on AMD's matrix units: MFMA on CDNA (``v_mfma_f32_16x16x16f16`` and
``..bf16_1k``, waves of 64) and WMMA on RDNA3 (``v_wmma_f32_16x16x16_f16``
and ``_bf16``, waves of 32); f16 and bf16 operands, an f32 accumulator.
Other dots (f32, int8, fp8, f16 accumulators, batched, tiles under 16) and
every dot on RDNA4 run on the FMA units (``codegen_llvm.dot``).

The accumulator's layout is a plain blocked one whose registers fall where
the instruction writes its results, so everything after the dot (scaling,
reductions, stores) lowers as on any blocked tile:

* MFMA 16x16x16: lane ``l`` holds column ``l % 16`` of rows ``4*(l // 16) + e``
  (``e`` < 4): ``blocked<[4, 1], [4, 16], [wm, wn], [1, 0]>``;
* WMMA 16x16x16 (RDNA3): lane ``l`` holds column ``l % 16`` of rows
  ``2*e + l // 16`` (``e`` < 8): ``blocked<[1, 1], [2, 16], [wm, wn], [1, 0]>``.

The waves form a ``wm`` x ``wn`` grid; a wave's rows are not one contiguous
block (the layout's repetitions interleave the waves), so each instruction
reads the rows of ``a`` its results belong to (``global_row``).  Both
operands go through LDS row-major (``stage_in_smem``): lane ``l``'s ``a``
fragment is row ``global_row(l % 16)`` at ``k`` = ``4*(l // 16) + j`` (MFMA)
or ``j`` (WMMA, each half of the wave holding a copy), its ``b`` fragment
column ``l % 16`` at the same ``k``.

These operand and result layouts are from AMD's ISA documents and LLVM's
intrinsics; they compile and link on CI but have not run on an AMD GPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.layouts import Blocked, Layout, register_offsets
from tilec.ir.types import bf16, elem_type, f16, f32
from tilec.rules import registry
from tilec.targets.base import Target
from tilec.codegen_llvm.dot import fma_dot
from tilec.codegen_llvm.kernel import I32, Ctx, element_address
from tilec.codegen_llvm.shuffle import stage_in_smem

RULES, lowers = registry("Register the decorated ``rule(ctx, op)`` as the AMD backend's for the given op classes.")

TILE = 16  # rows, columns and k of one instruction


@dataclass(frozen=True)
class MatrixKind:
    """One family's 16x16x16 instruction: its operand width, result registers,
    accumulator thread shape and intrinsic names."""

    name: str
    operand_width: int  # elements of a and of b a lane holds
    results: int  # accumulator registers an instruction writes per lane
    spt: tuple[int, int]
    tpw: tuple[int, int]
    intrinsics: dict  # operand element type name -> (LLVM name, trailing i32 arguments)

    def acc_layout(self, wm: int, wn: int) -> Blocked:
        return Blocked(self.spt, self.tpw, (wm, wn), (1, 0))

    def rows_per_wave(self, wm: int) -> int:
        """Rows between one row of a wave's instruction tile and the next, counted in layout repetitions."""
        return self.spt[0] * self.tpw[0] * wm


MFMA = MatrixKind("mfma", 4, 4, (4, 1), (4, 16), {
    "f16": ("llvm.amdgcn.mfma.f32.16x16x16f16", 3), "bf16": ("llvm.amdgcn.mfma.f32.16x16x16bf16.1k", 3)})
WMMA = MatrixKind("wmma", 16, 8, (1, 1), (2, 16), {
    "f16": ("llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v16f16", 0),
    "bf16": ("llvm.amdgcn.wmma.f32.16x16x16.bf16.v8f32.v16i16", 0)})


@dataclass(frozen=True)
class DotPlan:
    """How one dot runs on the matrix unit: the instruction, the wave grid and the accumulator's layout."""

    kind: MatrixKind
    wm: int
    wn: int

    @property
    def acc(self) -> Blocked:
        return self.kind.acc_layout(self.wm, self.wn)


def dot_plan(op: ir.Dot, target: Target, num_warps: int, along_m: bool = False) -> Optional[DotPlan]:
    """The plan of ``op`` on ``target``'s matrix unit; None runs it on the FMA units."""
    kind = _kind(target)
    a_elem, acc_elem = elem_type(op.a.type), elem_type(op.acc.type)
    if kind is None or a_elem not in (f16, bf16) or acc_elem != f32 or len(op.a.type.shape) != 2:
        return None
    if not any(i.operand == a_elem.name and i.accumulator == "f32" for i in target.matrix_instructions):
        return None
    (m, k), n = op.a.type.shape, op.b.type.shape[1]
    if min(m, n, k) < TILE:
        return None
    wm = min(num_warps, m // TILE)
    wn = num_warps // wm
    if (along_m and wn != 1) or wn > n // TILE:
        return None
    return DotPlan(kind, wm, wn)


def _kind(target: Target) -> Optional[MatrixKind]:
    if not target.matrix_instructions:
        return None
    return MFMA if target.warp_size == 64 else WMMA


class AmdMatrixUnit:
    """The ``tilec.opt.layouts.MatrixUnit`` of an arch: operands in any layout
    (they go through LDS), the result in the plan's accumulator layout."""

    def dot_layouts(self, op: ir.Dot, num_warps: int, target: Target, along_m: bool):
        plan = dot_plan(op, target, num_warps, along_m)
        return (None, None, plan.acc) if plan else None

    def is_accumulator(self, layout: Layout) -> bool:
        return isinstance(layout, Blocked) and layout.order == (1, 0) and any(
            (layout.spt, layout.tpw) == (k.spt, k.tpw) for k in (MFMA, WMMA))


AMD_MATRIX_UNIT = AmdMatrixUnit()


def matrix_unit(target: Target) -> AmdMatrixUnit:
    """The ``tilec.opt.layouts.MatrixUnit`` of ``target`` (archs without matrix instructions plan no dot)."""
    return AMD_MATRIX_UNIT


@lowers(ir.Dot)
def matrix_dot(ctx: Ctx, op: ir.Dot) -> None:
    """``acc + a @ b`` on the matrix unit when the layout pass planned it (module docstring), else on the FMA units."""
    plan = dot_plan(op, ctx.target, ctx.num_warps)
    if plan is None or op.result.type.layout != plan.acc:
        plan = dot_plan(op, ctx.target, ctx.num_warps, along_m=True)
    if plan is None or op.result.type.layout != plan.acc:
        fma_dot(ctx, op)
        return
    a_t, b_t = op.a.type, op.b.type
    (m, k_dim), n = a_t.shape, b_t.shape[1]
    a_base, b_base = stage_in_smem(ctx, [(ctx[op.a], a_t), (ctx[op.b], b_t)])
    kind, b = plan.kind, ctx.b
    w0 = b.lshr(ctx.warp, I32(plan.wn.bit_length() - 1))
    w1 = b.and_(ctx.warp, I32(plan.wn - 1))
    lane16, half = b.and_(ctx.lane, I32(TILE - 1)), b.lshr(ctx.lane, I32(4))
    index = {off: i for i, off in enumerate(register_offsets(plan.acc, (m, n)))}
    acc = list(ctx[op.acc])
    name, flags = kind.intrinsics[elem_type(a_t).name]
    elem = _operand_type(elem_type(a_t))
    width = kind.operand_width
    a_rows = [_a_row(ctx, plan, lane16, w0, q) for q in range(m // (TILE * plan.wm))]
    b_cols = [_b_col(ctx, plan, lane16, w1, c) for c in range(n // (TILE * plan.wn))]
    for k0 in range(0, k_dim, TILE):
        first_k = _first_k(ctx, kind, half, k0)
        a_frags = [_fragment(ctx, a_base, b.add(b.mul(row, I32(k_dim)), first_k), 1, width, elem) for row in a_rows]
        b_frags = [_fragment(ctx, b_base, b.add(b.mul(first_k, I32(n)), col), n, width, elem) for col in b_cols]
        for q, a_frag in enumerate(a_frags):
            for c, b_frag in enumerate(b_frags):
                regs = [index[_register_offset(plan, e, q, c)] for e in range(kind.results)]
                c_vec = _vector(b, [acc[r] for r in regs], llir.FloatType())
                out = ctx.call(name, [a_frag, b_frag, c_vec] + [I32(0)] * flags, c_vec.type)
                for e, r in enumerate(regs):
                    acc[r] = b.extract_element(out, I32(e))
    ctx.bind(op.results, [acc])


def _operand_type(t) -> llir.Type:
    """How an operand element travels: f16 as ``half``, bf16 as its bits (the intrinsics take i16 vectors)."""
    return llir.HalfType() if t == f16 else llir.IntType(16)


def _a_row(ctx: Ctx, plan: DotPlan, lane16, w0, q: int):
    """The row of ``a`` whose results lane ``lane16`` of instruction row ``q`` holds (module docstring)."""
    b, wm = ctx.b, plan.wm
    if plan.kind is MFMA:  # local row i = 4*(l // 16) + e: rows i + 16*w0 + 16*wm*q
        return b.add(lane16, b.add(b.mul(w0, I32(TILE)), I32(TILE * wm * q)))
    # WMMA: local row i = 2*e + l // 16: rows (i & 1) + 2*w0 + 2*wm*((i >> 1) + 8*q)
    low = b.and_(lane16, I32(1))
    rep = b.add(b.lshr(lane16, I32(1)), I32(8 * q))
    return b.add(low, b.add(b.mul(w0, I32(2)), b.mul(rep, I32(2 * wm))))


def _b_col(ctx: Ctx, plan: DotPlan, lane16, w1, c: int):
    """The column of ``b`` (and of the result) lane ``lane16`` of instruction column ``c`` holds."""
    b = ctx.b
    return b.add(lane16, b.add(b.mul(w1, I32(TILE)), I32(TILE * plan.wn * c)))


def _first_k(ctx: Ctx, kind: MatrixKind, half, k0: int):
    """The first ``k`` of a lane's operand fragments in the step from ``k0``:
    MFMA's lanes 16-31, 32-47, 48-63 hold the next 4 ``k`` each; WMMA's
    lanes all hold the 16 (lanes 16-31 a copy)."""
    if kind is MFMA:
        return ctx.b.add(I32(k0), ctx.b.mul(half, I32(kind.operand_width)))
    return I32(k0)


def _register_offset(plan: DotPlan, e: int, q: int, c: int) -> tuple[int, int]:
    """The accumulator register offset (rows, columns) of result ``e`` of instruction ``(q, c)``."""
    col = TILE * plan.wn * c
    if plan.kind is MFMA:
        return (e + TILE * plan.wm * q, col)
    return (2 * plan.wm * (e + 8 * q), col)


def _fragment(ctx: Ctx, base, first, step: int, width: int, elem: llir.Type):
    """A lane's operand vector: ``width`` 2-byte elements of the row-major
    copy at ``base``, at element indices ``first + j*step`` (``a``: along a
    row, step 1; ``b``: down a column, step N)."""
    b = ctx.b
    values = [b.load(element_address(b, base, b.add(first, I32(j * step)) if j else first, 2), typ=elem, align=2)
              for j in range(width)]
    return _vector(b, values, elem)


def _vector(b: llir.IRBuilder, values: list, elem: llir.Type):
    vec = llir.Constant(llir.VectorType(elem, len(values)), None)
    for i, v in enumerate(values):
        vec = b.insert_element(vec, v, I32(i))
    return vec
