"""Index-driven ``tl`` functions: gather, flip, cat, sort, bitonic_merge, topk, histogram, swizzle2d.

``gather`` and ``histogram`` are IR ops of their own (``ir.indexing_ops``);
the rest are built from existing ops: ``flip`` gathers at reversed
positions, ``sort`` is a bitonic network whose every compare-and-swap step
gathers each element's partner (``bitonic_merge`` is its last stage alone),
``topk`` gathers the head of a descending sort, ``cat`` is a join read back one operand after the other, and
``swizzle2d`` is integer arithmetic.
"""
from __future__ import annotations

from tilec import ir
from tilec import language as tl
from tilec.frontend import semantic
from tilec.frontend.tl_ops import block_shape, const_axis, const_int, implements, mask_arg
from tilec.frontend.semantic import Tensor, TypingError, broadcast_to, constant, describe, emit, to_tensor


def _tile(ctx, value, fname: str) -> Tensor:
    x = to_tensor(ctx, value)
    if not x.shape:
        raise TypingError(f"`{fname}` needs a tile, got {describe(x)}")
    return x


def _along(ctx, values: Tensor, shape: tuple, axis: int) -> Tensor:
    """The 1-D tile ``values`` laid along ``axis`` of ``shape`` and broadcast to it."""
    lifted = tuple(n if d == axis else 1 for d, n in enumerate(shape))
    if lifted != values.shape:
        values = emit(ctx, ir.Reshape, src=values.handle, shape=lifted)
    return broadcast_to(ctx, values, shape)


def _positions(ctx, shape: tuple, axis: int) -> Tensor:
    """Each element's ``int32`` position along ``axis``."""
    return _along(ctx, emit(ctx, ir.Arange, start=0, end=shape[axis]), shape, axis)


def gather_along(ctx, src: Tensor, index: Tensor, axis: int) -> Tensor:
    """``src`` read along ``axis`` at ``index`` (checked by the caller)."""
    return emit(ctx, ir.Gather, src=src.handle, index=index.handle, axis=axis)


@implements(tl.gather)
def _gather(ctx, src, index, axis):
    x, idx = _tile(ctx, src, "tl.gather"), _tile(ctx, index, "tl.gather")
    if not (isinstance(idx.elem, ir.ScalarType) and idx.elem.is_int):
        raise TypingError(f"the index of `tl.gather` must be an integer tile, got {describe(idx)}")
    if len(idx.shape) != len(x.shape):
        raise TypingError(f"`tl.gather`: src {describe(x)} and index {describe(idx)} must have one rank")
    ax = const_axis(axis, len(x.shape), "the axis of `tl.gather`")
    if any(s != i for d, (s, i) in enumerate(zip(x.shape, idx.shape)) if d != ax):
        raise TypingError(f"`tl.gather`: index shape {idx.shape} must match src shape {x.shape} on every dim "
                          f"but the axis ({ax})")
    return gather_along(ctx, x, idx, ax)


@implements(tl.flip)
def _flip(ctx, x, dim):
    t = _tile(ctx, x, "tl.flip")
    ax = len(t.shape) - 1 if dim is None else const_axis(dim, len(t.shape), "the dim of `tl.flip`")
    n = t.shape[ax]
    if n == 1:
        return t
    reversed_positions = semantic.binary(ctx, "sub", n - 1, _positions(ctx, t.shape, ax))
    return gather_along(ctx, t, reversed_positions, ax)


@implements(tl.cat)
def _cat(ctx, input, other, can_reorder):
    a, b = _tile(ctx, input, "tl.cat"), _tile(ctx, other, "tl.cat")
    if not can_reorder:
        raise TypingError("`tl.cat` needs can_reorder=True (as in Triton, whose result order is free; "
                          "tilec's is `input` followed by `other`)")
    if len(a.shape) != 1 or a.type != b.type:
        raise TypingError(f"`tl.cat` joins two 1-D tiles of one type, got {describe(a)} and {describe(b)}")
    pairs = emit(ctx, ir.Join, lhs=a.handle, rhs=b.handle)  # (n, 2): column 0 is `input`
    rows = emit(ctx, ir.Permute, src=pairs.handle, order=(1, 0))
    return emit(ctx, ir.Reshape, src=rows.handle, shape=(2 * a.shape[0],))


def _sort_axis(x: Tensor, dim, fname: str) -> int:
    last = len(x.shape) - 1
    if dim is not None and const_axis(dim, len(x.shape), f"the dim of `{fname}`") != last:
        raise TypingError(f"`{fname}` sorts along the last dim only (as Triton), got dim={dim} for {describe(x)}")
    return last


def _compare_and_swap(ctx, x: Tensor, pos: Tensor, stride: int, want_smaller: Tensor) -> Tensor:
    """One bitonic step: each element meets the one ``stride`` positions away
    and keeps the smaller of the two where ``want_smaller``, else the larger.
    Both of a pair decide alike (a NaN keeps both in place)."""
    ax = len(x.shape) - 1
    partner = gather_along(ctx, x, semantic.binary(ctx, "xor", pos, stride), ax)
    smaller, larger = semantic.compare(ctx, "lt", partner, x), semantic.compare(ctx, "gt", partner, x)
    return semantic.where(ctx, semantic.where(ctx, want_smaller, smaller, larger), partner, x)


def _bitonic_merge(ctx, x: Tensor, pos: Tensor, block: int, ascending: Tensor) -> Tensor:
    """One merge stage: compare-and-swap at strides ``block / 2`` down to 1,
    each block of ``block`` elements sorted ``ascending`` where that holds
    (per element), descending elsewhere, if it held a bitonic sequence."""
    stride = block // 2
    while stride >= 1:
        lower = semantic.compare(ctx, "eq", semantic.binary(ctx, "and", pos, stride), 0)
        x = _compare_and_swap(ctx, x, pos, stride, semantic.compare(ctx, "eq", lower, ascending))
        stride //= 2
    return x


def bitonic_sort(ctx, x: Tensor, descending: bool) -> Tensor:
    """``x`` sorted along its last dim by a bitonic network: merges of
    growing blocks, alternately ascending and descending, the last one in the
    requested direction."""
    n = x.shape[-1]
    pos = _positions(ctx, x.shape, len(x.shape) - 1)
    block = 2
    while block < n:
        ascending = semantic.compare(ctx, "eq", semantic.binary(ctx, "and", pos, block), 0)
        x = _bitonic_merge(ctx, x, pos, block, ascending)
        block *= 2
    return _bitonic_merge(ctx, x, pos, n, constant(ctx, not descending, ir.i1))


def _sortable(ctx, value, fname: str) -> Tensor:
    x = _tile(ctx, value, fname)
    if not isinstance(x.elem, ir.ScalarType) or x.elem.is_bool:
        raise TypingError(f"`{fname}` sorts numbers, got {describe(x)}")
    return x


@implements(tl.sort)
def _sort(ctx, x, dim, descending):
    t = _sortable(ctx, x, "tl.sort")
    _sort_axis(t, dim, "tl.sort")
    return bitonic_sort(ctx, t, bool(descending))


@implements(tl.bitonic_merge)
def _bitonic_merge_call(ctx, x, dim, descending):
    t = _sortable(ctx, x, "tl.bitonic_merge")
    _sort_axis(t, dim, "tl.bitonic_merge")
    return _bitonic_merge(ctx, t, _positions(ctx, t.shape, len(t.shape) - 1), t.shape[-1],
                          constant(ctx, not descending, ir.i1))


@implements(tl.topk)
def _topk(ctx, x, k, dim):
    t = _sortable(ctx, x, "tl.topk")
    ax = _sort_axis(t, dim, "tl.topk")
    k = const_int(k, "the k of `tl.topk`")
    if not 1 <= k <= t.shape[ax] or k & (k - 1):
        raise TypingError(f"the k of `tl.topk` must be a power of two from 1 to {t.shape[ax]}, got {k}")
    ranked = bitonic_sort(ctx, t, True)
    if k == t.shape[ax]:
        return ranked
    head = t.shape[:ax] + (k,)
    return gather_along(ctx, ranked, _positions(ctx, head, ax), ax)


@implements(tl.histogram)
def _histogram(ctx, input, num_bins, mask):
    x = _tile(ctx, input, "tl.histogram")
    if len(x.shape) != 1 or not (isinstance(x.elem, ir.ScalarType) and x.elem.is_int):
        raise TypingError(f"`tl.histogram` counts a 1-D integer tile, got {describe(x)}")
    (bins,) = block_shape((num_bins,), "the num_bins of `tl.histogram`")
    return emit(ctx, ir.Histogram, src=x.handle, mask=mask_arg(ctx, mask, x.shape, "tl.histogram"), num_bins=bins)


@implements(tl.swizzle2d)
def _swizzle2d(ctx, i, j, size_i, size_j, size_g):
    """Triton's arithmetic: the group of ``size_g`` rows holding (i, j), then
    the position inside it counted column-major (the last group may be short)."""
    def op(name, a, b):
        return semantic.binary(ctx, name, a, b)
    ij = op("add", op("mul", i, size_j), j)
    size_gj = op("mul", size_g, size_j)
    off_i = op("mul", op("floordiv", ij, size_gj), size_g)
    rows_left = op("sub", size_i, off_i)
    group_rows = semantic.where(ctx, semantic.compare(ctx, "lt", rows_left, size_g), rows_left, size_g)
    return op("add", off_i, op("mod", ij, group_rows)), op("floordiv", op("mod", ij, size_gj), group_rows)
