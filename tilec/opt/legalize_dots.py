"""Dots a target cannot multiply as written, rewritten into dots it can.

``tl.dot`` of two fp8 tiles of one type reaches the IR as an fp8 ``dot``
(``frontend/tl_reduce.py``): a target whose matrix instructions take that
type with the dot's accumulator (``Target.every_matrix_instruction``:
Ada's and Hopper's ``e4m3``/``e5m2``, CDNA3's fnuz formats) runs it there at twice the rate of f16.  On any other target
``widen_fp8_dots`` casts both operands to f16 first.  f16 holds every fp8
value exactly, so the rewritten dot means what the fp8 one does (exact
products, accumulated in ``acc``'s type): the interpreter runs fp8 dots as
they are and is the oracle for both.

A backend calls it before it assigns layouts, with its target's
instructions (a pass of ``tilec.opt`` knows no target).
"""
from __future__ import annotations

from typing import Optional, Sequence

from tilec.ir.core import Function, Op, clone_op, walk
from tilec.ir.ops import Cast, Dot
from tilec.ir.types import ScalarType, elem_type, f16
from tilec.opt.rewrite import rebuild


def has_matrix_instruction(instructions: Sequence, operand: ScalarType, accumulator: ScalarType) -> bool:
    """Whether one of ``instructions`` (``MatrixInstruction``s) takes
    ``operand`` tiles into an ``accumulator`` of that type."""
    return any(i.operand == operand.name and i.accumulator == accumulator.name for i in instructions)


def widen_fp8_dots(fn: Function, instructions: Sequence) -> Function:
    """``fn`` with the operands of every fp8 dot none of ``instructions``
    (a target's ``every_matrix_instruction``) takes cast to f16 (module docstring)."""

    def widened(op: Op) -> bool:
        elem = elem_type(op.a.type)
        return elem.is_fp8 and not has_matrix_instruction(instructions, elem, elem_type(op.acc.type))

    def rewrite(op: Op, vmap: dict) -> Optional[list[Op]]:
        if not (isinstance(op, Dot) and widened(op)):
            return None
        casts = [Cast(loc=op.loc, src=vmap.get(v, v), to=f16).make_results() for v in (op.a, op.b)]
        return casts + [clone_op(op, vmap, a=casts[0].result, b=casts[1].result)]

    # most kernels have no such dot: they are returned as they are, not copied
    if not any(isinstance(op, Dot) and widened(op) for op in walk(fn.body)):
        return fn
    return rebuild(fn, rewrite)
