"""Lowering of ops that compute each element on its own: constants, program
geometry, ``arange``, ``splat``/``broadcast``/``expand_dims`` (which only
copy or rename registers), and every per-element op of ``scalar_ops``
(applied register by register)."""
from __future__ import annotations

import numpy as np
from llvmlite import ir as llir

from tilec import ir
from tilec.ir import fp8
from tilec.ir.layouts import register_offsets
from tilec.ir.types import ScalarType, TileType
from tilec.codegen_llvm import scalar_ops  # noqa: F401  (fills scalar_base.LOWER)
from tilec.codegen_llvm.kernel import I32, LOWER, Ctx, coordinates, lowers, registers_of
from tilec.codegen_llvm.scalar_base import LOWER as SCALAR_LOWER
from tilec.codegen_llvm.scalar_base import llvm_type
from tilec.codegen_llvm.scalar_ops import emit_scalar


def constant(t: ScalarType, value) -> llir.Constant:
    """``value`` as an LLVM constant of element type ``t``, rounded once as the
    interpreter rounds it (ints wrap to the width)."""
    lt = llvm_type(t)
    if t.is_bool:
        return lt(int(bool(value)))
    if t.is_int:
        bits = t.bits
        wrapped = (int(value) + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
        return lt(wrapped)
    if t.is_fp8:
        return lt(int(fp8.encode(np.float64(value), t)))
    if t.name == "f16":
        return llir.FormattedConstant(lt, f"0xH{int(np.float16(value).view(np.uint16)):04X}")
    return lt(float(value))


@lowers(ir.Constant)
def _constant(ctx: Ctx, op: ir.Constant) -> None:
    t = op.result.type
    elem = t.elem if isinstance(t, TileType) else t
    ctx.bind(op.results, [[constant(elem, op.value)] * registers_of(op.result)])


@lowers(ir.ProgramId)
def _program_id(ctx: Ctx, op: ir.ProgramId) -> None:
    ctx.bind(op.results, [[ctx.lowering.program_id(ctx, op.axis)]])


@lowers(ir.NumPrograms)
def _num_programs(ctx: Ctx, op: ir.NumPrograms) -> None:
    ctx.bind(op.results, [[ctx.lowering.num_programs(ctx, op.axis)]])


@lowers(ir.Arange)
def _arange(ctx: Ctx, op: ir.Arange) -> None:
    ctx.bind(op.results, [[ctx.b.add(c, I32(op.start)) if op.start else c
                           for (c,) in coordinates(ctx, op.result)]])


@lowers(ir.Splat)
def _splat(ctx: Ctx, op: ir.Splat) -> None:
    ctx.bind(op.results, [ctx[op.src] * registers_of(op.result)])


@lowers(ir.ExpandDims)
def _expand_dims(ctx: Ctx, op: ir.ExpandDims) -> None:
    """A slice's registers are its parent's with one register along the new dim."""
    src = ctx[op.src]
    ctx.bind(op.results, [src if isinstance(op.src.type, TileType) else src * registers_of(op.result)])


@lowers(ir.Broadcast)
def _broadcast(ctx: Ctx, op: ir.Broadcast) -> None:
    """Same layout, so along the dims the broadcast keeps a thread's base is
    the same in both tiles: each result register copies the source register
    at its offsets there (offset 0 along a size-1 dim)."""
    src, out = op.src.type, op.result.type
    index = {}
    for r, offs in enumerate(register_offsets(src.layout, src.shape)):
        index.setdefault(offs, r)
    regs = ctx[op.src]
    result = [regs[index[tuple(o if n > 1 else 0 for o, n in zip(offs, src.shape))]]
              for offs in register_offsets(out.layout, out.shape)]
    ctx.bind(op.results, [result])


def _elementwise(ctx: Ctx, op: ir.Op) -> None:
    """Any per-element op: ``scalar_ops`` applied to each register."""
    operands = [ctx[v] for v in op.operands]
    n = registers_of(op.results[0])
    ctx.bind(op.results, [[emit_scalar(ctx.scalar, op, [regs[i] for regs in operands]) for i in range(n)]])


for _cls in SCALAR_LOWER:
    LOWER.setdefault(_cls, _elementwise)
