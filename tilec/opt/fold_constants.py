"""Constant folding: a pure op whose operands are all constants becomes a constant.

A ``Constant`` is a scalar, or a tile whose every element is that scalar, so
two kinds of ops fold:

* elementwise ops (arithmetic, compare, select, fma, cast, bitcast) are
  evaluated once, on one element, by the interpreter's own
  ``interp_ops.evaluate_pure`` -- folding and interpreting cannot disagree
  (int wrapping, C division, f16/bf16 rounding all come from there);
* shape ops (splat, broadcast, expand_dims, reshape, permute) of a constant
  just give the same scalar in the new shape.

Division and remainder by zero are never folded: the hardware leaves their
value unspecified, so the op stays for the target to decide.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from tilec.ir import ops
from tilec.ir.core import Function, Op, clone_op
from tilec.ir.interp_dtypes import convert_constant
from tilec.ir.interp_ops import PURE, evaluate_pure
from tilec.ir.types import ScalarType, elem_type
from tilec.opt.rewrite import constant_value, is_constant, make_constant, rebuild, replace_results

ELEMENTWISE = (ops.UnaryOp, ops.BinaryOp, ops.Select, ops.Fma, ops.Cast, ops.Bitcast)
UNIFORM_SHAPE_OPS = (ops.Splat, ops.Broadcast, ops.ExpandDims, ops.Reshape, ops.Permute)


def fold_constants(fn: Function) -> Function:
    """``fn`` with every foldable op on constants replaced by a ``Constant``."""
    return rebuild(fn, _fold_op)


def _fold_op(op: Op, vmap: dict) -> Optional[list[Op]]:
    if not isinstance(op, ELEMENTWISE + UNIFORM_SHAPE_OPS):
        return None
    new = clone_op(op, vmap)
    folded = fold_uniform_shape_op(new) or fold_elementwise_op(new)
    if folded is None:
        return [new]
    replace_results(vmap, op, folded.results)
    return [folded]


def fold_uniform_shape_op(op: Op) -> Optional[Op]:
    """A constant of ``op``'s result type for a shape op of a constant, else None."""
    if not isinstance(op, UNIFORM_SHAPE_OPS) or not is_constant(op.src):
        return None
    return make_constant(constant_value(op.src), op.result.type, op)


def fold_elementwise_op(op: Op) -> Optional[Op]:
    """A constant for an elementwise op (already cloned) whose operands are all constants."""
    if not isinstance(op, ELEMENTWISE) or type(op) not in PURE or _divides_by_zero(op):
        return None
    if not all(is_constant(v) for v in op.operands) or not _all_scalar_types(op):
        return None
    args = [convert_constant(constant_value(v), elem_type(v.type)) for v in op.operands]
    (result,) = evaluate_pure(op, args)
    return make_constant(python_scalar(result, elem_type(op.result.type)), op.result.type, op)


def _all_scalar_types(op: Op) -> bool:
    """No pointers in or out: an address is not a constant (casts int <-> pointer stay)."""
    return all(isinstance(elem_type(v.type), ScalarType) for v in op.operands + op.results)


def _divides_by_zero(op: Op) -> bool:
    return isinstance(op, (ops.Div, ops.Rem)) and is_constant(op.rhs) and constant_value(op.rhs) == 0


def python_scalar(x: np.ndarray, t: ScalarType) -> Any:
    """The Python bool/int/float a ``Constant`` of type ``t`` holds for 0-d array ``x``.

    Folded floats are already rounded to ``t``, so ``float`` is exact and the
    interpreter reads the constant back bit for bit (NaN payloads aside).
    """
    if t.is_bool:
        return bool(x)
    return float(x) if t.is_float else int(x)
