"""Shape ``tl`` functions: expand_dims, broadcast(_to), reshape/view/ravel, trans/permute, join/split."""
from __future__ import annotations

import math

from tilec import ir
from tilec import language as tl
from tilec.frontend.tl_ops import block_shape, implements, shape_arg
from tilec.frontend.semantic import Tensor, TypingError, broadcast_pair, broadcast_to, describe, emit, to_tensor


@implements(tl.expand_dims)
def _expand_dims(ctx, input, axis):
    x = to_tensor(ctx, input)
    axes = shape_arg(axis, "the axis of `tl.expand_dims`")
    rank = len(x.shape) + len(axes)
    for a in axes:
        if not -rank <= a < rank:
            raise TypingError(f"`tl.expand_dims`: invalid axis {a}, expected {-rank} <= axis < {rank} for a result "
                              f"of rank {rank}")
    normalized = sorted(a % rank for a in axes)
    if len(set(normalized)) != len(normalized):
        raise TypingError(f"`tl.expand_dims`: duplicate axes, normalized axes = {normalized} (from {axes})")
    for a in normalized:
        x = emit(ctx, ir.ExpandDims, src=x.handle, axis=a)
    return x


@implements(tl.broadcast)
def _broadcast(ctx, input, other):
    return broadcast_pair(ctx, to_tensor(ctx, input), to_tensor(ctx, other))


@implements(tl.broadcast_to)
def _broadcast_to(ctx, input, shape):
    return broadcast_to(ctx, to_tensor(ctx, input), block_shape(shape, "the shape of `tl.broadcast_to`"))


@implements(tl.reshape)
def _reshape(ctx, input, shape, can_reorder):
    x = to_tensor(ctx, input)
    dims = block_shape(shape, "the shape of `tl.reshape`")
    if math.prod(dims) != x.numel:
        raise TypingError(f"cannot reshape {describe(x)} ({x.numel} elements) to {dims} ({math.prod(dims)} elements)")
    if dims == x.shape:
        return x
    return emit(ctx, ir.Reshape, src=x.handle, shape=dims, can_reorder=bool(can_reorder))


@implements(tl.view)
def _view(ctx, input, shape):
    return _reshape(ctx, input, shape, True)


@implements(tl.ravel)
def _ravel(ctx, x, can_reorder):
    t = to_tensor(ctx, x)
    return _reshape(ctx, t, (t.numel,), can_reorder)


@implements(tl.permute)
def _permute(ctx, input, dims):
    x = to_tensor(ctx, input)
    order = shape_arg(dims, "the dims of `tl.permute`")
    if sorted(order) != list(range(len(x.shape))):
        raise TypingError(f"dims {order} are not a permutation of the {len(x.shape)} dims of {describe(x)}")
    if order == tuple(range(len(order))):
        return x
    return emit(ctx, ir.Permute, src=x.handle, order=order)


@implements(tl.trans)
def _trans(ctx, input, dims):
    return _permute(ctx, input, dims if dims else (1, 0))


@implements(tl.join)
def _join(ctx, a, b):
    x, y = broadcast_pair(ctx, to_tensor(ctx, a), to_tensor(ctx, b))
    if x.elem != y.elem:
        raise TypingError(f"`tl.join` needs operands of one dtype, got {describe(x)} and {describe(y)}; "
                          "cast one with .to()")
    if not x.shape:  # two scalars: a (2,) tile, through (1,) tiles joined
        pair = emit(ctx, ir.Join, lhs=broadcast_to(ctx, x, (1,)).handle, rhs=broadcast_to(ctx, y, (1,)).handle)
        return _reshape(ctx, pair, (2,), False)
    return emit(ctx, ir.Join, lhs=x.handle, rhs=y.handle)


@implements(tl.split)
def _split(ctx, a):
    x = to_tensor(ctx, a)
    if not x.shape or x.shape[-1] != 2:
        raise TypingError(f"`tl.split` needs a tile whose last dimension is 2, got {describe(x)}")
    op = ctx.builder.create(ir.Split, src=x.handle)
    return Tensor(op.results[0]), Tensor(op.results[1])


@implements(tl.interleave)
def _interleave(ctx, a, b):
    c = _join(ctx, a, b)
    if len(c.shape) == 1:
        return c
    return _reshape(ctx, c, c.shape[:-2] + (2 * c.shape[-2],), False)
