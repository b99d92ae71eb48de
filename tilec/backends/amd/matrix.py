"""Dots on AMD's matrix units: MFMA on CDNA (waves of 64) and WMMA on RDNA
(waves of 32), each a 32x32 or 16x16 (MFMA) or 16x16 (WMMA) result tile a
wave computes in one instruction:

* f16, bf16 -> f32: MFMA ``32x32x8f16`` / ``32x32x8bf16_1k`` and
  ``16x16x16f16`` / ``16x16x16bf16_1k`` (every CDNA), gfx950's 8-wide
  ``32x32x16_f16``/``_bf16`` and ``16x16x32_f16``/``_bf16`` (before the
  4-wide forms of their tile), WMMA ``16x16x16_f16`` / ``_bf16`` (RDNA3: 16
  values a lane; RDNA4: 8);
* i8 -> i32: MFMA ``i32_32x32x8i8``, ``i32_16x16x16i8`` (gfx90a),
  ``i32_32x32x16_i8``, ``i32_16x16x32_i8`` (gfx942, gfx950),
  ``i32_32x32x32_i8``, ``i32_16x16x64_i8`` (gfx950), WMMA
  ``i32_16x16x16_iu8`` (RDNA3, RDNA4);
* f32 -> f32 with ``input_precision="tf32"``: MFMA ``f32_32x32x4_xf32``,
  ``f32_16x16x8_xf32`` (gfx942);
* fp8 -> f32: MFMA ``f32_32x32x16_fp8_fp8`` / ``_bf8_bf8`` and
  ``f32_16x16x32_fp8_fp8`` / ``_bf8_bf8``, which take the fnuz formats
  (``f8e4b8``, ``f8e5b16``) on gfx942 and the OCP ones (``f8e4nv``,
  ``f8e5``) on gfx950; WMMA ``f32_16x16x16_fp8_fp8`` / ``_bf8_bf8`` (RDNA4, OCP).

A dot takes a 32x32 form when each wave gets whole 32x32 tiles (Triton's
heuristic: 32 for large tiles), else a 16x16 one; the launch option
``matrix_instr_nonkdim`` (16 or 32) puts that size first (``dot_plan``).

Which arch has which is ``target.ARCH_FACTS`` (an intrinsic an arch lacks
aborts the process inside LLVM, so each arch is given only its own); an f32
dot runs on xf32 only when its ``input_precision`` is ``"tf32"`` (xf32
rounds the inputs to tf32).  Other dots (f32 ``ieee``/``tf32x3``, u8, f16
accumulators, batched, tiles under 16) run on the FMA units
(``codegen_llvm.dot``).  An fp8 dot no instruction of the arch takes was
widened to f16 before the layouts (``opt/legalize_dots.py``); one the arch
takes but whose tiles are too small for it decodes its operands on the FMA units.

The accumulator's layout is a plain blocked one whose registers fall where
the instruction writes its results, so everything after the dot (scaling,
reductions, stores) lowers as on any blocked tile:

* MFMA 16x16: lane ``l`` holds column ``l % 16`` of rows ``4*(l // 16) + e``
  (``e`` < 4): ``blocked<[4, 1], [4, 16], [wm, wn], [1, 0]>``;
* MFMA 32x32: lane ``l`` holds column ``l % 32`` of rows
  ``8*(e // 4) + 4*(l // 32) + e % 4`` (``e`` < 16):
  ``blocked<[4, 1], [2, 32], [wm, wn], [1, 0]>``;
* WMMA (RDNA3): lane ``l`` holds column ``l % 16`` of rows
  ``2*e + l // 16`` (``e`` < 8): ``blocked<[1, 1], [2, 16], [wm, wn], [1, 0]>``;
* WMMA (RDNA4): lane ``l`` holds column ``l % 16`` of rows
  ``8*(l // 16) + e`` (``e`` < 8): ``blocked<[8, 1], [2, 16], [wm, wn], [1, 0]>``.

The waves form a ``wm`` x ``wn`` grid; a wave's rows are not one contiguous
block (the layout's repetitions interleave the waves), so each instruction
reads the rows of ``a`` its results belong to (``_a_row``).  Both operands
go through LDS along ``k``: ``a`` row-major, ``b`` column-major
(``stage_in_smem``), so a lane's fragment is one vector load.  For an
instruction of tile ``T`` and depth ``K``, lane ``l``'s ``a`` fragment is
row ``_a_row(l % T)`` at ``k`` = ``w*(l // T) + j`` (``j`` < ``w``, the
fragment's width: ``K/4`` for MFMA 16x16, ``K/2`` for MFMA 32x32 and RDNA4)
or ``j`` (RDNA3, ``j`` < 16, each half of the wave holding a copy), its
``b`` fragment column ``l % T`` at the same ``k``.

These operand and result layouts are from AMD's ISA documents and LLVM's
intrinsics; they compile and link here but have not run on an AMD GPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.layouts import Blocked, Layout, Shared, register_offsets, replicating, thread_bits, vector_runs
from tilec.ir.types import ScalarType, elem_type, f32
from tilec.rules import registry
from tilec.targets.base import Target
from tilec.backends.amd.target import arch_facts
from tilec.codegen_llvm.dot import fma_dot
from tilec.codegen_llvm.kernel import I32, Ctx, byte_offset, thread_bases
from tilec.codegen_llvm.memory import _pack, _to_memory
from tilec.codegen_llvm.scalar_base import llvm_type, memory_type
from tilec.codegen_llvm.shared_buffers import local_load, read_shared_tile, slot_base, swizzled_offset

RULES, lowers = registry("Register the decorated ``rule(ctx, op)`` as the AMD backend's for the given op classes.")

I1 = llir.IntType(1)


@dataclass(frozen=True)
class Instruction:
    """One ``tile`` x ``tile`` x K instruction: its LLVM intrinsic, its depth
    ``k``, how many elements of ``a`` (and of ``b``) a lane holds, the LLVM
    type a lane's fragment is passed as, and whether it takes sign flags (WMMA iu8)."""

    intrinsic: str
    k: int
    width: int
    fragment: llir.Type
    signed: bool = False


def _vec(elem: llir.Type, n: int) -> llir.VectorType:
    return llir.VectorType(elem, n)


_I16, _I32, _I64 = llir.IntType(16), llir.IntType(32), llir.IntType(64)
_HALF, _F32 = llir.HalfType(), llir.FloatType()


class _BFloat(llir.types.Type):
    """LLVM's ``bfloat`` (llvmlite has none): gfx950's bf16 MFMA takes
    ``<8 x bfloat>`` operands (an LDS load of i16s bitcast to it)."""

    def _to_string(self) -> str:
        return "bfloat"

    def __eq__(self, other) -> bool:
        return isinstance(other, _BFloat)

    def __hash__(self) -> int:
        return hash(_BFloat)


_BF16 = _BFloat()


def _mfma(intrinsic: str, k: int, fragment: llir.Type, tile: int = 16) -> Instruction:
    """An MFMA instruction: the 64 / ``tile`` groups of ``tile`` lanes hold a
    share of ``k`` each (16x16: a quarter; 32x32: a half)."""
    return Instruction(f"llvm.amdgcn.mfma.{intrinsic}", k, k * tile // 64, fragment)


@dataclass(frozen=True)
class MatrixKind:
    """One family of ``tile`` x ``tile`` instructions and where they put
    things: the result registers a lane holds, the accumulator's thread
    shape (a blocked layout's ``spt``, ``tpw``), the trailing i32 arguments
    (MFMA's ``cbsz, abid, blgp``), whether every lane holds the whole ``k``
    of its row (RDNA3's WMMA: lanes 16-31 a copy of lanes 0-15) or the groups
    of ``tile`` lanes hold a share each, and the instructions by (operand
    type, ``k``)."""

    name: str
    tile: int
    results: int  # accumulator registers an instruction writes per lane
    spt: tuple[int, int]
    tpw: tuple[int, int]
    flags: int
    replicated: bool
    instructions: dict  # (operand element type name, k) -> Instruction

    def acc_layout(self, wm: int, wn: int) -> Blocked:
        return Blocked(self.spt, self.tpw, (wm, wn), (1, 0))

    @property
    def rows_per_pass(self) -> int:
        """Rows of the result one wave's lanes hold in one pass of its layout."""
        return self.spt[0] * self.tpw[0]


MFMA = MatrixKind("mfma", 16, 4, (4, 1), (4, 16), 3, False, {
    ("f16", 16): _mfma("f32.16x16x16f16", 16, _vec(_HALF, 4)),
    ("bf16", 16): _mfma("f32.16x16x16bf16.1k", 16, _vec(_I16, 4)),
    ("i8", 16): _mfma("i32.16x16x16i8", 16, _I32),
    ("i8", 32): _mfma("i32.16x16x32.i8", 32, _I64),
    ("f32", 8): _mfma("f32.16x16x8.xf32", 8, _vec(_F32, 2)),
    ("f8e4b8", 32): _mfma("f32.16x16x32.fp8.fp8", 32, _I64),
    ("f8e5b16", 32): _mfma("f32.16x16x32.bf8.bf8", 32, _I64),
    # gfx950 (CDNA4): 8 halves a lane, int8 16 a lane, and fp8 in the OCP
    # formats (the same intrinsics as gfx942's fnuz ones: the arch decides)
    ("f16", 32): _mfma("f32.16x16x32.f16", 32, _vec(_HALF, 8)),
    ("bf16", 32): _mfma("f32.16x16x32.bf16", 32, _vec(_BF16, 8)),
    ("i8", 64): _mfma("i32.16x16x64.i8", 64, _vec(_I32, 4)),
    ("f8e4nv", 32): _mfma("f32.16x16x32.fp8.fp8", 32, _I64),
    ("f8e5", 32): _mfma("f32.16x16x32.bf8.bf8", 32, _I64)})
# MFMA 32x32 (lanes 0-31 and 32-63 hold half of k each): lane l holds
# column l % 32 of rows 8*(e // 4) + 4*(l // 32) + e % 4 (e < 16)
MFMA32 = MatrixKind("mfma32", 32, 16, (4, 1), (2, 32), 3, False, {
    ("f16", 8): _mfma("f32.32x32x8f16", 8, _vec(_HALF, 4), 32),
    ("bf16", 8): _mfma("f32.32x32x8bf16.1k", 8, _vec(_I16, 4), 32),
    ("i8", 8): _mfma("i32.32x32x8i8", 8, _I32, 32),  # gfx90a
    ("i8", 16): _mfma("i32.32x32x16.i8", 16, _I64, 32),  # gfx942, gfx950
    ("f32", 4): _mfma("f32.32x32x4.xf32", 4, _vec(_F32, 2), 32),  # gfx942
    ("f8e4b8", 16): _mfma("f32.32x32x16.fp8.fp8", 16, _I64, 32),
    ("f8e5b16", 16): _mfma("f32.32x32x16.bf8.bf8", 16, _I64, 32),
    # gfx950: 8 halves a lane, int8 16 a lane, OCP fp8
    ("f16", 16): _mfma("f32.32x32x16.f16", 16, _vec(_HALF, 8), 32),
    ("bf16", 16): _mfma("f32.32x32x16.bf16", 16, _vec(_BF16, 8), 32),
    ("i8", 32): _mfma("i32.32x32x32.i8", 32, _vec(_I32, 4), 32),
    ("f8e4nv", 16): _mfma("f32.32x32x16.fp8.fp8", 16, _I64, 32),
    ("f8e5", 16): _mfma("f32.32x32x16.bf8.bf8", 16, _I64, 32)})
# RDNA3 (gfx11): 16 values a lane, lanes 16-31 a copy of lanes 0-15's
WMMA = MatrixKind("wmma", 16, 8, (1, 1), (2, 16), 0, True, {
    ("f16", 16): Instruction("llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v16f16", 16, 16, _vec(_HALF, 16)),
    ("bf16", 16): Instruction("llvm.amdgcn.wmma.f32.16x16x16.bf16.v8f32.v16i16", 16, 16, _vec(_I16, 16)),
    ("i8", 16): Instruction("llvm.amdgcn.wmma.i32.16x16x16.iu8.v8i32.v4i32", 16, 16, _vec(_I32, 4), signed=True)})
# RDNA4 (gfx12): 8 values a lane, lanes 0-15 and 16-31 half of k each (no
# copies); lane l holds column l % 16 of rows 8*(l // 16) + e (e < 8); fp8 OCP
WMMA12 = MatrixKind("wmma12", 16, 8, (8, 1), (2, 16), 0, False, {
    ("f16", 16): Instruction("llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v8f16", 16, 8, _vec(_HALF, 8)),
    ("bf16", 16): Instruction("llvm.amdgcn.wmma.f32.16x16x16.bf16.v8f32.v8i16", 16, 8, _vec(_I16, 8)),
    ("i8", 16): Instruction("llvm.amdgcn.wmma.i32.16x16x16.iu8.v8i32.v2i32", 16, 8, _vec(_I32, 2), signed=True),
    ("f8e4nv", 16): Instruction("llvm.amdgcn.wmma.f32.16x16x16.fp8.fp8.v8f32.v2i32", 16, 8, _vec(_I32, 2)),
    ("f8e5", 16): Instruction("llvm.amdgcn.wmma.f32.16x16x16.bf8.bf8.v8f32.v2i32", 16, 8, _vec(_I32, 2))})
KINDS = (MFMA, MFMA32, WMMA, WMMA12)
# which kind serves an arch's facts of each tile size, by ``ArchFacts.matrix_unit``
_KIND_OF = {("mfma", 16): MFMA, ("mfma", 32): MFMA32, ("wmma11", 16): WMMA, ("wmma12", 16): WMMA12}


@dataclass(frozen=True)
class DotPlan:
    """How one dot runs on the matrix unit: the family, the instruction, the wave grid and the accumulator's layout."""

    kind: MatrixKind
    inst: Instruction
    wm: int
    wn: int

    @property
    def acc(self) -> Blocked:
        return self.kind.acc_layout(self.wm, self.wn)


def dot_plan(op: ir.Dot, target: Target, num_warps: int, along_m: bool = False,
             nonkdim: int = 0) -> Optional[DotPlan]:
    """The plan of ``op`` on ``target``'s matrix unit; None runs it on the FMA
    units.  The arch's instructions for the dot's types are tried in the
    order ``target.ARCH_FACTS`` lists them (32x32 forms first, as Triton's
    heuristic takes 32 for large tiles), those of tile ``nonkdim`` (the
    ``matrix_instr_nonkdim`` option: 16 or 32; 0 leaves the order) before
    the others; the first whose tile, depth and wave grid fit is it."""
    if len(op.a.type.shape) != 2:
        return None
    order = candidates(op, target)
    if nonkdim:
        order.sort(key=lambda pair: pair[0].tile != nonkdim)
    return next(filter(None, (_fit(op, kind, inst, num_warps, along_m) for kind, inst in order)), None)


def _fit(op: ir.Dot, kind: "MatrixKind", inst: Instruction, num_warps: int, along_m: bool) -> Optional[DotPlan]:
    """``op`` planned on ``inst``: waves in a grid of whole tiles (``along_m``:
    one column of waves), ``k`` a multiple of the instruction's; else None."""
    (m, k), n = op.a.type.shape, op.b.type.shape[1]
    tile = kind.tile
    if min(m, n) < tile or k % inst.k:
        return None
    wm = min(num_warps, m // tile)
    wn = num_warps // wm
    if (along_m and wn != 1) or wn > n // tile:
        return None
    return DotPlan(kind, inst, wm, wn)


def lds_layout(plan: DotPlan, operand: int, shape: tuple, elem: ScalarType) -> Shared:
    """The layout of a buffer whose slots of ``shape`` hold operand
    ``operand`` (0: ``a``, 1: ``b``) of a dot planned as ``plan``: stored
    along ``k``, so a lane's fragment is one vector load; in chunks of 16
    bytes or a whole fragment if wider, XOR-swizzled (``Shared``) so that
    consecutive rows (columns of ``b``), which 16 lanes read at one ``k``,
    fall on different banks of a 128-byte line."""
    k_axis = 1 - operand
    vec = max(plan.inst.width, 16 // elem.bytes)
    row_bytes, chunk = shape[k_axis] * elem.bytes, vec * elem.bytes
    order = (k_axis + 1, operand + 1, 0)
    if row_bytes <= chunk:
        return Shared(vec, 1, 1, order)
    return Shared(vec, max(1, 128 // row_bytes), max(1, min(128, row_bytes) // chunk), order)


def candidates(op: ir.Dot, target: Target) -> list[tuple[MatrixKind, Instruction]]:
    """The (kind, instruction) pairs ``target`` has for ``op``'s operand and
    accumulator types, in the arch's order (f32 operands only when
    ``input_precision`` is tf32)."""
    a_elem, acc_elem = elem_type(op.a.type), elem_type(op.acc.type)
    if a_elem == f32 and op.input_precision != "tf32":
        return []
    out = []
    for fact in target.matrix_instructions:
        if (fact.operand, fact.accumulator) == (a_elem.name, acc_elem.name):
            kind = _KIND_OF[arch_facts(target.cpu).matrix_unit, fact.m]
            out.append((kind, kind.instructions[fact.operand, fact.k]))
    return out


@dataclass(frozen=True)
class AmdMatrixUnit:
    """The ``tilec.opt.layouts.MatrixUnit`` of an arch: operands in any layout
    (they go through LDS), the result in the plan's accumulator layout;
    ``nonkdim`` is the ``matrix_instr_nonkdim`` option (``dot_plan``)."""

    nonkdim: int = 0

    def dot_layouts(self, op: ir.Dot, num_warps: int, target: Target, along_m: bool):
        plan = dot_plan(op, target, num_warps, along_m, self.nonkdim)
        return (None, None, plan.acc) if plan else None

    def is_accumulator(self, layout: Layout) -> bool:
        return isinstance(layout, Blocked) and layout.order == (1, 0) and any(
            (layout.spt, layout.tpw) == (k.spt, k.tpw) for k in KINDS)


def matrix_unit(target: Target, nonkdim: int = 0) -> AmdMatrixUnit:
    """The ``tilec.opt.layouts.MatrixUnit`` of ``target`` with tile ``nonkdim``
    preferred (archs without matrix instructions plan no dot)."""
    return AmdMatrixUnit(nonkdim)


def planned(op: ir.Dot, target: Target, num_warps: int) -> Optional[DotPlan]:
    """The plan the layout pass chose for ``op``: the first of the arch's
    instructions (in its order: ``nonkdim`` only puts one tile size first,
    and each tile size has its own accumulator layout) whose plan has
    ``op``'s result layout (``along_m`` only rules plans out); None: the FMA units."""
    if len(op.a.type.shape) != 2:
        return None
    plans = (_fit(op, kind, inst, num_warps, False) for kind, inst in candidates(op, target))
    return next((p for p in plans if p is not None and op.result.type.layout == p.acc), None)


@lowers(ir.Dot)
def matrix_dot(ctx: Ctx, op: ir.Dot) -> None:
    """``acc + a @ b`` on the matrix unit when the layout pass planned it (module docstring), else on the FMA units."""
    plan = planned(op, ctx.target, ctx.num_warps)
    if plan is None:
        fma_dot(ctx, op)
        return
    a_t, b_t = op.a.type, op.b.type
    (m, k_dim), n = a_t.shape, b_t.shape[1]
    a_src, b_src = _operands_in_lds(ctx, op, plan)
    b, tile = ctx.b, plan.kind.tile
    w0 = b.lshr(ctx.warp, I32(plan.wn.bit_length() - 1))
    w1 = b.and_(ctx.warp, I32(plan.wn - 1))
    lane_t, group = b.and_(ctx.lane, I32(tile - 1)), b.lshr(ctx.lane, I32(tile.bit_length() - 1))
    index = {off: i for i, off in enumerate(register_offsets(plan.acc, (m, n)))}
    acc, acc_type = list(ctx[op.acc]), llvm_type(elem_type(op.acc.type))
    elem = elem_type(a_t)
    a_rows = [_a_row(ctx, plan, lane_t, w0, q) for q in range(m // (tile * plan.wm))]
    b_cols = [_b_col(ctx, plan, lane_t, w1, c) for c in range(n // (tile * plan.wn))]
    read_a = _reader(ctx, a_src, (a_rows[0], _first_k(ctx, plan, group, 0)), plan.inst, elem)
    read_b = _reader(ctx, b_src, (_first_k(ctx, plan, group, 0), b_cols[0]), plan.inst, elem)
    for k0 in range(0, k_dim, plan.inst.k):
        first_k = _first_k(ctx, plan, group, k0)
        # rows of instruction row q: q * tile * wm past row 0's (``_a_row``); columns likewise
        a_frags = [read_a((row, first_k), (q * tile * plan.wm, k0)) for q, row in enumerate(a_rows)]
        for c, col in enumerate(b_cols):  # one column's fragment at a time: fewer registers live
            b_frag = read_b((first_k, col), (k0, c * tile * plan.wn))
            for q, a_frag in enumerate(a_frags):
                regs = [index[_register_offset(plan, e, q, c)] for e in range(plan.kind.results)]
                c_vec = _vector(b, [acc[r] for r in regs], acc_type)
                out = ctx.call(plan.inst.intrinsic, _arguments(plan, a_frag, b_frag, c_vec), c_vec.type)
                for e, r in enumerate(regs):
                    acc[r] = b.extract_element(out, I32(e))
    ctx.bind(op.results, [acc])


def _arguments(plan: DotPlan, a_frag, b_frag, c_vec) -> list:
    """The intrinsic's arguments: WMMA iu8 takes each operand's signedness
    (signed) and a clamp flag (off); MFMA ends in ``cbsz, abid, blgp`` = 0."""
    if plan.inst.signed:
        return [I1(1), a_frag, I1(1), b_frag, c_vec, I1(0)]
    return [a_frag, b_frag, c_vec] + [I32(0)] * plan.kind.flags


def _a_row(ctx: Ctx, plan: DotPlan, lane_t, w0, q: int):
    """The row of ``a`` whose results lane ``lane_t`` (the lane mod the tile)
    of instruction row ``q`` holds.  The accumulator's layout puts ``R`` =
    ``kind.rows_per_pass`` rows of each wave in turn, so local row ``i`` of
    the instruction is row ``i % R + R*w0 + R*wm*(i // R + (tile/R)*q)``
    (MFMA 16x16 and RDNA4: R = 16, one block; MFMA 32x32: R = 8; RDNA3: R = 2)."""
    b, wm, tile, r = ctx.b, plan.wm, plan.kind.tile, plan.kind.rows_per_pass
    if r == tile:
        return b.add(lane_t, b.add(b.mul(w0, I32(r)), I32(r * wm * q)))
    low = b.and_(lane_t, I32(r - 1))
    rep = b.add(b.lshr(lane_t, I32(r.bit_length() - 1)), I32(tile // r * q))
    return b.add(low, b.add(b.mul(w0, I32(r)), b.mul(rep, I32(r * wm))))


def _b_col(ctx: Ctx, plan: DotPlan, lane_t, w1, c: int):
    """The column of ``b`` (and of the result) lane ``lane_t`` of instruction column ``c`` holds."""
    b, tile = ctx.b, plan.kind.tile
    return b.add(lane_t, b.add(b.mul(w1, I32(tile)), I32(tile * plan.wn * c)))


def _first_k(ctx: Ctx, plan: DotPlan, group, k0: int):
    """The first ``k`` of a lane's operand fragments in the step from ``k0``:
    lane group ``group`` (the lane // the tile) holds the ``width`` ``k``
    from ``k0 + width*group`` (MFMA, RDNA4); RDNA3's lanes all hold the 16
    (lanes 16-31 a copy)."""
    if plan.kind.replicated:
        return I32(k0)
    return ctx.b.add(I32(k0), ctx.b.mul(group, I32(plan.inst.width)))


def _register_offset(plan: DotPlan, e: int, q: int, c: int) -> tuple[int, int]:
    """The accumulator register offset (rows, columns) of result ``e`` of
    instruction ``(q, c)``: result ``e`` is row ``e % spt`` of pass
    ``e // spt`` of the instruction's passes (``_a_row``)."""
    kind = plan.kind
    r, spt = kind.rows_per_pass, kind.spt[0]
    return (e % spt + r * plan.wm * (e // spt + kind.tile // r * q), kind.tile * plan.wn * c)


def _reader(ctx: Ctx, src: "LdsOperand", first: tuple, inst: Instruction, elem):
    """``read(coords, delta)``: a lane's fragment at matrix coordinates
    ``coords`` (i32 values), which are ``first``'s plus ``delta`` (ints).  In
    an unswizzled matrix (what the dot staged itself) every fragment is at
    one address a lane plus a constant, which LDS loads take as their
    immediate offset (an address each kept one VGPR each live: RDNA spilled
    them); in a swizzled one the XOR makes each address its own."""
    if src.layout.max_phase != 1:
        return lambda coords, delta: _fragment(ctx, src, coords, inst, elem)
    size = max(1, elem.bits // 8)
    base = byte_offset(ctx.b, src.base, swizzled_offset(ctx, src.layout, src.shape, first, size))

    def read(coords, delta):
        at = src.layout.unswizzled_offset(src.shape, delta) * size
        return _load_fragment(ctx, byte_offset(ctx.b, base, at) if at else base, inst, elem)
    return read


def _fragment(ctx: Ctx, src: "LdsOperand", coords: tuple, inst: Instruction, elem):
    """A lane's operand: ``inst.width`` consecutive elements along ``k`` of an
    operand in LDS, from matrix coordinates ``coords``, as one vector load
    (aligned: the ``k`` is a multiple of the width, which a swizzle chunk
    holds whole), in the type the intrinsic takes."""
    size = max(1, elem.bits // 8)
    address = byte_offset(ctx.b, src.base, swizzled_offset(ctx, src.layout, src.shape, coords, size))
    return _load_fragment(ctx, address, inst, elem)


def _load_fragment(ctx: Ctx, address, inst: Instruction, elem):
    """The ``inst.width`` elements at ``address`` as one vector load, in the type the intrinsic takes."""
    b, size = ctx.b, max(1, elem.bits // 8)
    loaded = _vec(memory_type(elem), inst.width)
    value = b.load(address, typ=loaded, align=min(16, inst.width * size))
    return value if str(loaded) == str(inst.fragment) else b.bitcast(value, inst.fragment)


@dataclass(frozen=True)
class LdsOperand:
    """A dot operand's matrix in LDS: where it starts, its ``Shared`` layout and its shape."""

    base: llir.Value
    layout: Shared
    shape: tuple

    def holds_fragments(self, operand: int, inst: Instruction) -> bool:
        """Whether a lane's fragment of ``inst`` (``width`` elements along
        ``k``) is one vector here: stored along ``k`` (``a``'s dim 1, ``b``'s
        dim 0), swizzled in chunks of a multiple of the width."""
        along_k = self.layout.matrix_dims[1] == 1 - operand
        return along_k and (self.layout.max_phase == 1 or self.layout.vec % inst.width == 0)


@dataclass(frozen=True)
class SlotOperand(LdsOperand):
    """A ``local_load`` left to the dot that reads it (``_local_load``), read
    into registers should anything else need it first."""

    ctx: Ctx
    op: ir.LocalLoad

    def registers(self) -> list:
        buf = self.op.buf.type
        return read_shared_tile(self.ctx, self.base, buf.layout, buf.shape, buf.elem, self.op.result.type)


@lowers(ir.LocalLoad)
def _local_load(ctx: Ctx, op: ir.LocalLoad) -> None:
    """A slot whose one user is a dot of the same block is left to the dot
    (which reads the fragments in place, ``_operands_in_lds``); else registers."""
    users = ctx.users.get(op.result, [])
    if len(users) == 1 and isinstance(users[0][0], ir.Dot) and op in users[0][1].ops:
        buf = op.buf.type
        ctx.defer(op.result, SlotOperand(slot_base(ctx, op.buf, op.slot), buf.layout, buf.shape[1:], ctx, op))
        return
    local_load(ctx, op)


def _operands_in_lds(ctx: Ctx, op: ir.Dot, plan: DotPlan) -> list[LdsOperand]:
    """``a`` and ``b`` in LDS: a buffer's slot where the operand is one
    (``_local_load``) that holds the fragments whole, else written here to
    scratch, ``a`` row-major and ``b`` column-major (``_stage``)."""
    out: list = [None, None]
    staged = []
    for i, v in enumerate((op.a, op.b)):
        src = ctx.deferred.get(v)
        if isinstance(src, SlotOperand) and src.holds_fragments(i, plan.inst):
            out[i] = ctx.deferred.pop(v)
        else:
            staged.append(i)
    values = [(op.a, op.b)[i] for i in staged]
    bases = _stage(ctx, [(ctx[v], v.type, i == 1) for i, v in zip(staged, values)]) if staged else []
    for i, v, base in zip(staged, values, bases):
        out[i] = LdsOperand(base, Shared(1, 1, 1, (1 - i, i)), v.type.shape)
    return out


def _stage(ctx: Ctx, tiles: list[tuple]) -> list[llir.Value]:
    """Write each 2-D ``(regs, type, column_major)`` into a region of its own
    of the scratch buffer, row-major or column-major (what
    ``shuffle.stage_in_smem`` writes); after a barrier, return the regions'
    start pointers.  Each lane's stores go to one address of its own (its
    first coordinates') plus constants, which the LDS stores take as their
    immediate offsets, and registers consecutive along the matrix's fast dim
    go as one vector: staged with an address computed per register, K loops kept
    dozens of loop-invariant LDS addresses live in VGPRs (gfx1100 spilled them)."""
    b = ctx.b
    starts, offset = [], 0
    for _, t, _ in tiles:
        starts.append(offset)
        offset += -(-t.numel * elem_type(t).bytes // 16) * 16
    base = ctx.smem(offset)
    ctx.barrier()
    regions = []
    for (regs, t, column_major), start in zip(tiles, starts):
        (rows, cols), elem = t.shape, elem_type(t)
        size = elem.bytes
        strides = (1, rows) if column_major else (cols, 1)
        region = byte_offset(b, base, start)
        first = thread_bases(ctx, t.layout, t.shape)
        lane = byte_offset(b, region, b.mul(b.add(b.mul(first[0], I32(strides[0])),
                                                  b.mul(first[1], I32(strides[1]))), I32(size)))
        offsets = register_offsets(t.layout, t.shape)
        limit = max(1, ctx.target.max_vector_bytes // size)
        runs = (_column_runs(t.layout, t.shape, limit, ctx) if column_major else
                vector_runs(t.layout, t.shape, limit, ctx.target.warp_size))
        for r, width in runs:
            values = [_to_memory(ctx, v, elem) for v in regs[r:r + width]]
            at = (offsets[r][0] * strides[0] + offsets[r][1] * strides[1]) * size
            b.store(_pack(ctx, values), byte_offset(b, lane, at) if at else lane, align=size * width)
        regions.append(region)
    ctx.barrier()
    return regions


def _column_runs(layout: Layout, shape: tuple, limit: int, ctx: Ctx) -> list[tuple[int, int]]:
    """``vector_runs`` for a column-major matrix: ``(first register, count)``
    groups of registers holding consecutive rows of one column (``kᵀ`` loaded
    along ``k``), starting at a multiple of ``count`` rows, at most the least
    row a lane or warp bit adds (so every thread's run is aligned)."""
    offsets = register_offsets(layout, shape)
    steps = [t.value for t in thread_bits(layout, shape, ctx.num_warps, ctx.target.warp_size)
             if t.dim == 0 and not replicating(t, shape)]
    limit = min(limit, min(steps, default=shape[0]))
    runs, i = [], 0
    while i < len(offsets):
        width = limit
        while width > 1 and not (i + width <= len(offsets) and offsets[i][0] % width == 0 and all(
                offsets[i + j] == (offsets[i][0] + j, offsets[i][1]) for j in range(width))):
            width //= 2
        runs.append((i, width))
        i += width
    return runs


def _vector(b: llir.IRBuilder, values: list, elem: llir.Type):
    vec = llir.Constant(llir.VectorType(elem, len(values)), None)
    for i, v in enumerate(values):
        vec = b.insert_element(vec, v, I32(i))
    return vec
