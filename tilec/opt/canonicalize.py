"""Canonicalization: algebraic identities that hold exactly, bit for bit.

Each rule looks at one freshly cloned op (operands already mapped) and
returns what should replace its single result:

* an existing ``Value`` -- the op disappears (``x * 1`` -> ``x``);
* a new ``Op`` -- it replaces the op and is itself canonicalized again
  (``reshape(reshape(x))`` -> one ``reshape``, which may then vanish);
* ``None`` -- the rule does not apply.

Rules are kept in ``RULES``, a table keyed by op class.  Float rules are only
the IEEE-exact ones: ``x + 0.0`` is *not* ``x`` (``-0.0 + 0.0 == +0.0``),
but ``x * 1.0``, ``x / 1.0``, ``x - 0.0``, ``x + -0.0`` and ``-(-x)`` are.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Union

from tilec.ir import ops
from tilec.ir.core import Function, Op, Value, clone_op
from tilec.ir.types import ScalarType, elem_type, i1, is_float, shape_of
from tilec.opt.fold_constants import fold_uniform_shape_op
from tilec.opt.rewrite import NOT_CONSTANT, constant_value, make_constant, make_op, rebuild, replace_results

Replacement = Union[Value, Op, None]
Rule = Callable[[Op], Replacement]
RULES: dict[type, list[Rule]] = {}

# A chain of rewrites is short (each step removes an op); this only guards
# against two rules that would undo each other forever.
MAX_REWRITES_PER_OP = 16


def rule(*classes: type):
    """Register the decorated function as a rule for each of ``classes``."""
    def register(fn: Rule) -> Rule:
        for cls in classes:
            RULES.setdefault(cls, []).append(fn)
        return fn
    return register


def canonicalize(fn: Function) -> Function:
    """``fn`` with every identity in ``RULES`` applied."""
    return rebuild(fn, _rewrite_op)


def _rewrite_op(op: Op, vmap: dict) -> Optional[list[Op]]:
    if type(op) not in RULES:
        return None  # map_block copies it, canonicalizing inside its regions
    emitted, value = simplify(clone_op(op, vmap))
    replace_results(vmap, op, [value])
    return emitted


def simplify(op: Op) -> tuple[list[Op], Value]:
    """The ops to emit for ``op`` (already cloned: none, or one replacing it)
    and the value standing for its result."""
    for _ in range(MAX_REWRITES_PER_OP):
        replacement = _first_match(op)
        if replacement is None:
            break
        if isinstance(replacement, Value):
            return [], replacement
        op = replacement
    return [op], op.result


def _first_match(op: Op) -> Replacement:
    for r in RULES.get(type(op), ()):
        got = r(op)
        if got is not None:
            return got
    return None


# --------------------------------------------------------------------------- #
# What a constant operand is
# --------------------------------------------------------------------------- #

def _is(v: Value, want: float) -> bool:
    """``v`` is a constant equal to ``want`` (``0`` matches ``+0.0`` and ``-0.0``)."""
    c = constant_value(v)
    return c is not NOT_CONSTANT and c == want


def _is_neg_zero(v: Value) -> bool:
    c = constant_value(v)
    return isinstance(c, float) and c == 0.0 and math.copysign(1.0, c) < 0


def _is_pos_zero(v: Value) -> bool:
    c = constant_value(v)
    return c is not NOT_CONSTANT and c == 0 and not _is_neg_zero(v)


def _int_like(v: Value) -> bool:
    """Integers (``i1`` included) and pointers: exact, no NaN, no signed zero."""
    return not is_float(v.type)


def _zero_of(op: Op) -> Op:
    e = elem_type(op.result.type)
    zero: Any = False if e == i1 else 0.0 if isinstance(e, ScalarType) and e.is_float else 0
    return make_constant(zero, op.result.type, op)


# --------------------------------------------------------------------------- #
# Arithmetic identities
# --------------------------------------------------------------------------- #

@rule(ops.Add)
def _add_zero(op: Op) -> Replacement:
    """``x + 0`` and ``0 + x`` for ints; ``x + -0.0`` and ``-0.0 + x`` for floats."""
    zero = _is if _int_like(op.lhs) else (lambda v, _: _is_neg_zero(v))
    if zero(op.rhs, 0):
        return op.lhs
    return op.rhs if zero(op.lhs, 0) else None


@rule(ops.Sub)
def _sub_zero(op: Op) -> Replacement:
    """``x - 0`` (ints) and ``x - (+0.0)`` (floats: ``-0.0 - 0.0 == -0.0``)."""
    zero = _is(op.rhs, 0) if _int_like(op.lhs) else _is_pos_zero(op.rhs)
    return op.lhs if zero else None


@rule(ops.Mul)
def _mul_one(op: Op) -> Replacement:
    """``x * 1`` and ``1 * x``: exact for every type (NaN stays NaN)."""
    if _is(op.rhs, 1):
        return op.lhs
    return op.rhs if _is(op.lhs, 1) else None


@rule(ops.Mul)
def _mul_zero(op: Op) -> Replacement:
    """``x * 0`` and ``0 * x`` for ints only (floats: NaN, inf and -0.0 differ)."""
    if _int_like(op.lhs) and (_is(op.rhs, 0) or _is(op.lhs, 0)):
        return _zero_of(op)
    return None


@rule(ops.Div)
def _div_one(op: Op) -> Replacement:
    """``x / 1``: exact for ints (C division) and floats alike."""
    return op.lhs if _is(op.rhs, 1) else None


@rule(ops.Neg, ops.Not)
def _double_negation(op: Op) -> Replacement:
    """``-(-x)`` and ``~(~x)``: both are involutions, wrapping ints included."""
    inner = op.src.owner
    return inner.src if type(inner) is type(op) else None


@rule(ops.Select)
def _select_known(op: Op) -> Replacement:
    """``select(true, a, b) -> a``, ``select(false, a, b) -> b``, ``select(c, x, x) -> x``."""
    if op.a is op.b:
        return op.a
    c = constant_value(op.cond)
    if c is NOT_CONSTANT:
        return None
    return op.a if c else op.b


@rule(ops.Compare)
def _compare_self(op: Op) -> Replacement:
    """``x == x`` is true and ``x < x`` false for ints and pointers (no NaN there)."""
    if op.lhs is not op.rhs or not _int_like(op.lhs):
        return None
    return make_constant(op.pred in ("eq", "le", "ge"), op.result.type, op)


@rule(ops.Sub, ops.Xor)
def _cancel_self(op: Op) -> Replacement:
    """``x - x`` and ``x ^ x`` are zero for ints (not floats: ``inf - inf`` is NaN)."""
    return _zero_of(op) if op.lhs is op.rhs and _int_like(op.lhs) else None


@rule(ops.And, ops.Or)
def _idempotent(op: Op) -> Replacement:
    return op.lhs if op.lhs is op.rhs else None


@rule(ops.AddPtr)
def _addptr_zero(op: Op) -> Replacement:
    return op.ptr if _is(op.offset, 0) else None


@rule(ops.Cast, ops.Bitcast)
def _cast_same(op: Op) -> Replacement:
    return op.src if op.src.type == op.result.type else None


# --------------------------------------------------------------------------- #
# Shape identities
# --------------------------------------------------------------------------- #

@rule(ops.Broadcast, ops.Reshape)
def _same_shape(op: Op) -> Replacement:
    return op.src if op.src.type == op.result.type else None


@rule(ops.Splat, ops.Broadcast, ops.Reshape, ops.ExpandDims, ops.Permute)
def _shape_of_constant(op: Op) -> Replacement:
    """A shape op of a constant is a constant of the new shape (fold_constants' rule)."""
    return fold_uniform_shape_op(op)


@rule(ops.Broadcast, ops.ExpandDims, ops.Reshape, ops.Permute)
def _reshape_splat(op: Op) -> Replacement:
    """Every element of a splat is the same scalar, so any reshaping of it is a splat
    (or the scalar itself, for a reshape to shape ``()``)."""
    inner = op.src.owner
    if not isinstance(inner, ops.Splat):
        return None
    shape = shape_of(op.result.type)
    return make_op(ops.Splat, op, src=inner.src, shape=shape) if shape else inner.src


@rule(ops.Broadcast)
def _broadcast_broadcast(op: Op) -> Replacement:
    inner = op.src.owner
    return make_op(ops.Broadcast, op, src=inner.src, shape=op.shape) if isinstance(inner, ops.Broadcast) else None


@rule(ops.Reshape)
def _reshape_reshape(op: Op) -> Replacement:
    """Row-major reshapes compose; the result may reorder only if both allowed it."""
    inner = op.src.owner
    if not isinstance(inner, ops.Reshape):
        return None
    return make_op(ops.Reshape, op, src=inner.src, shape=op.shape,
                   can_reorder=op.can_reorder and inner.can_reorder)


@rule(ops.Permute)
def _permute(op: Op) -> Replacement:
    """The identity permutation vanishes; two permutations compose into one."""
    order = tuple(op.order)
    if order == tuple(range(len(order))):
        return op.src
    inner = op.src.owner
    if not isinstance(inner, ops.Permute):
        return None
    return make_op(ops.Permute, op, src=inner.src, order=tuple(inner.order[i] for i in order))
