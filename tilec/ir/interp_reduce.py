"""``Reduce``, ``Scan`` and ``Dot`` on batched numpy arrays (axis 0 is the batch).

A combine block made of one associative op on its two arguments (``sum``,
``max``, ``xor_sum``...) runs as a numpy ``reduce``/``accumulate``.  Any
other block (``argmax``'s value/index pick, user combiners) is evaluated on
whole arrays: a pairwise tree for reductions, keeping the left operand the
earlier elements so ties resolve as a left-to-right fold would, and a
sequential loop along the axis for scans.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from tilec.ir import ops as ir
from tilec.ir.interp_dtypes import round_float
from tilec.ir.interp_ops import PURE, evaluates
from tilec.ir.types import ScalarType, bf16, elem_type, f16

_INT_UFUNCS = {ir.Add: np.add, ir.Mul: np.multiply, ir.And: np.bitwise_and, ir.Or: np.bitwise_or,
               ir.Xor: np.bitwise_xor, ir.Maximum: np.maximum, ir.Minimum: np.minimum}
_FLOAT_UFUNCS = {ir.Add: np.add, ir.Mul: np.multiply, ir.Maximum: np.fmax, ir.Minimum: np.fmin}
_NAN_PROPAGATING = {ir.Maximum: np.maximum, ir.Minimum: np.minimum}


def combiner_ufunc(block: ir.Block) -> Optional[np.ufunc]:
    """The numpy ufunc equal to a one-op combine block on one operand, else None.

    bf16, f16 and i1 are left to the general path, which rounds or wraps after
    every combination as the hardware does.
    """
    if len(block.args) != 2 or len(block.ops) != 2:
        return None
    op, term = block.ops
    t = block.args[0].type
    if not isinstance(op, ir.BinaryOp) or set(op.operands) != set(block.args) or term.values != [op.result]:
        return None
    if not isinstance(t, ScalarType) or t.is_bool or t in (f16, bf16):
        return None
    if t.is_float and getattr(op, "propagate_nan", False):
        return _NAN_PROPAGATING.get(type(op))
    return (_FLOAT_UFUNCS if t.is_float else _INT_UFUNCS).get(type(op))


def run_combine(block: ir.Block, vals: list) -> list:
    """Evaluate a region of pure ops on whole arrays; what its terminator yields."""
    env = dict(zip(block.args, vals))
    for op in block.ops[:-1]:
        env.update(zip(op.results, PURE[type(op)](op, [env[v] for v in op.operands])))
    return [env[v] for v in block.terminator.values]


def _tree_reduce(block: ir.Block, xs: list) -> list:
    """Reduce the last axis of every array in ``xs`` by combining neighbours pairwise."""
    while xs[0].shape[-1] > 1:
        n = xs[0].shape[-1]
        pairs = n - n % 2
        combined = run_combine(block, [x[..., 0:pairs:2] for x in xs] + [x[..., 1:pairs:2] for x in xs])
        if n % 2:
            combined = [np.concatenate([c, x[..., -1:]], axis=-1) for c, x in zip(combined, xs)]
        xs = combined
    return [x[..., 0] for x in xs]


@evaluates(ir.Reduce)
def _reduce(op, vals):
    if op.axis is None:
        vals, axis = [v.reshape(v.shape[0], -1) for v in vals], 1
    else:
        axis = op.axis + 1
    ufunc = combiner_ufunc(op.combine)
    if ufunc is not None:
        return [ufunc.reduce(vals[0], axis=axis, dtype=vals[0].dtype)]
    return _tree_reduce(op.combine, [np.moveaxis(v, axis, -1) for v in np.broadcast_arrays(*vals)])


def _sequential_scan(block: ir.Block, xs: list) -> list:
    """Inclusive scan along axis 1 of every array in ``xs``."""
    outs = [np.empty_like(x) for x in xs]
    carry = [x[:, 0] for x in xs]
    for i in range(xs[0].shape[1]):
        if i:
            carry = run_combine(block, carry + [x[:, i] for x in xs])
        for out, c in zip(outs, carry):
            out[:, i] = c
    return outs


@evaluates(ir.Scan)
def _scan(op, vals):
    axis = op.axis + 1
    xs = [np.moveaxis(v, axis, 1) for v in np.broadcast_arrays(*vals)]
    if op.reverse:
        xs = [x[:, ::-1] for x in xs]
    ufunc = combiner_ufunc(op.combine)
    outs = [ufunc.accumulate(xs[0], axis=1, dtype=xs[0].dtype)] if ufunc else _sequential_scan(op.combine, xs)
    if op.reverse:
        outs = [o[:, ::-1] for o in outs]
    return [np.moveaxis(o, 1, axis) for o in outs]


def round_tf32(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to tf32 (10 explicit mantissa bits, nearest even)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    rounded = ((bits + (np.uint32(0xFFF) + ((bits >> 13) & 1))) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isnan(x), x, rounded)


def _dot_inputs(x: np.ndarray, t: ScalarType, precision: str) -> np.ndarray:
    if precision == "tf32" and t.name == "f32":
        return round_tf32(x)
    return x


@evaluates(ir.Dot)
def _dot(op, vals):
    a, b, acc = vals
    t_in, t_acc = elem_type(op.a.type), elem_type(op.acc.type)
    if not t_in.is_float:  # int8 and friends: exact products, wrapping accumulation
        prod = np.matmul(a.astype(np.int64), b.astype(np.int64))
        return [(prod + acc).astype(acc.dtype)]
    wide = np.float64 if np.float64 in (a.dtype, acc.dtype) else np.float32
    # row-major copies: numpy's matmul may add in another order for another memory
    # order, and a dot's bits must not depend on how its operands were made
    a, b = (_dot_inputs(x, t_in, op.input_precision).astype(wide, order="C") for x in (a, b))
    return [round_float(np.matmul(a, b) + acc.astype(wide), t_acc)]
