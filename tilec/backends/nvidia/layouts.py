"""The NVIDIA backend's layout choice: the shared GPU pass
(``tilec.opt.layouts``) with the tensor cores as its matrix unit.

A dot runs on the tensor cores (``mma.sync``) when the target has an
instruction for its element types and its tiles hold at least one: its
operands then take ``DotOperand`` layouts and its result an ``Mma`` one
(``tilec.ir.layouts_nvidia``); the pass keeps what is computed from the
result in that family.
"""
from __future__ import annotations

from typing import Optional

from tilec import ir
from tilec.ir.core import Function
from tilec.ir.layouts import Layout
from tilec.ir.layouts_nvidia import K_PER_KWIDTH, TILE_M, TILE_N, DotOperand, Mma, mma_layout
from tilec.ir.types import SCALAR_TYPES, elem_type, f32
from tilec.opt import layouts as gpu_layouts
from tilec.targets.base import MatrixInstruction, Target


class TensorCores:
    """The ``MatrixUnit`` of ``tilec.opt.layouts``: ``mma.sync`` tiles."""

    def dot_layouts(self, op: ir.Dot, num_warps: int, target: Target,
                    along_m: bool) -> Optional[tuple[DotOperand, DotOperand, Mma]]:
        return tensor_core_layouts(op, num_warps, target, along_m)

    def is_accumulator(self, layout: Layout) -> bool:
        return isinstance(layout, Mma)


TENSOR_CORES = TensorCores()


def assign_layouts(fn: Function, num_warps: int, target: Target) -> Function:
    """``tilec.opt.layouts.assign_layouts`` with the tensor cores."""
    return gpu_layouts.assign_layouts(fn, num_warps, target, TENSOR_CORES)


def tensor_core_layouts(op: ir.Dot, num_warps: int, target: Target,
                        along_m: bool = False) -> Optional[tuple[DotOperand, DotOperand, Mma]]:
    """The ``(a, b, acc)`` layouts of ``op`` on the tensor cores (one of
    ``target.matrix_instructions``), or None when it runs on the FMA units:
    batched dots, tiles smaller than one instruction, and element types
    without an instruction (f64, f32 with ``input_precision`` other than
    ``"tf32"``).  ``along_m``: every warp owns whole rows (chained dots: a
    row of the first result is a row of the second's ``a``, so no warp needs
    another's elements)."""
    a_elem = elem_type(op.a.type)
    inst = matrix_instruction(target, a_elem, elem_type(op.acc.type))
    if inst is None or (a_elem == f32 and op.input_precision != "tf32") or len(op.a.type.shape) != 2:
        return None
    (m, k), n = op.a.type.shape, op.b.type.shape[1]
    if m < inst.m or n < inst.n or k < inst.k:
        return None
    if along_m:
        mma = Mma((max(1, min(num_warps, m // inst.m)), 1))
    elif fits_warpgroups(op, num_warps, target):
        mma = Mma((num_warps, 1))
    else:
        mma = mma_layout((m, n), num_warps)
    kwidth = inst.k // K_PER_KWIDTH
    return DotOperand(0, kwidth, mma), DotOperand(1, kwidth, mma), mma


def fits_warpgroups(op: ir.Dot, num_warps: int, target: Target) -> bool:
    """True when ``op`` can run on ``target``'s warpgroup instructions
    (``wgmma.py``): one of them for its element types, whole warpgroups,
    each warp 16 whole rows (``Mma((num_warps, 1))``: a warpgroup's four
    warps then hold 64 consecutive rows, the instruction's ``m``), ``n`` a
    multiple of the instruction's 8 and ``k`` of its 16.  Batched dots do not."""
    if len(op.a.type.shape) != 2 or num_warps % 4:
        return False
    a_elem, acc_elem = elem_type(op.a.type), elem_type(op.acc.type)
    inst = next((i for i in target.group_matrix_instructions
                 if SCALAR_TYPES[i.operand] == a_elem and SCALAR_TYPES[i.accumulator] == acc_elem), None)
    (m, k), n = op.a.type.shape, op.b.type.shape[1]
    return inst is not None and m % (TILE_M * num_warps) == 0 and n % TILE_N == 0 and k % inst.k == 0


def matrix_instruction(target: Target, operand, accumulator) -> Optional[MatrixInstruction]:
    """``target``'s matrix instruction for ``operand`` and ``accumulator``
    element types, if any of the 16x8 accumulator tiles ``Mma`` describes."""
    return next((inst for inst in target.matrix_instructions
                 if (inst.m, inst.n) == (TILE_M, TILE_N) and SCALAR_TYPES[inst.operand] == operand
                 and SCALAR_TYPES[inst.accumulator] == accumulator), None)
