"""Host rules of ``reduce`` and ``scan``: loop nests over the tiles (``dot``: ``rules_dot.py``).

A reduction is a tree, as on a GPU (and as accurate: a float32 sum of
one large term and many small ones, added one after the other, lost up to
ten ulps that the tree keeps).  Its first step over an even length ``n``
is a ``fold``: ``k = 2^fused_levels(n)`` blocks of ``n / k`` (``k`` at most
2^``FUSED_LEVELS``) combined by a tree of neighbours first into a buffer of
one block; a row loaded from memory is read once, in order, one stream as
a copy's (the halving tree's first step read two streams a row, ``i`` and
``i + n/2``: 2x slower than numpy for ``tl.sum(tl.load(row))``).
Each later step combines the first half of what is left along the axis
with the second half, up to ``FUSED_LEVELS`` steps in one loop over the
other dims (vectorized) where the length halves evenly, into a buffer.  A
reduction over every dim reduces the tile read as one row.  A scan along
the last dim keeps its running value in a scalar (an LLVM register once
``mem2reg`` has run); along any other dim the running row lives in the
result buffer and the other dims run innermost, so the vectorizer combines
whole rows at once.  A combine region is lowered per element as scalar
code and applied in order, the earlier elements on the left.
"""
from __future__ import annotations

from tilec import ir
from tilec.ir.types import shape_of
from tilec.codegen_llvm.memory import _from_memory, _to_memory
from tilec.codegen_llvm.scalar_base import counted_loop, memory_type
from tilec.codegen_llvm.control import run_region
from tilec.backends.host.codegen import HostCtx, host_rule
from tilec.backends.host.tiles import I64, Buffer, coords_of, element_pointer, for_each, lazy, numel


#: The most levels of a reduction's tree one loop computes (``fused_levels``):
#: the buffers between levels were most of a softmax row's stack memory.
FUSED_LEVELS = 3


def _combine(ctx: HostCtx, op: ir.Op, accs: list, xs: list) -> list:
    """``op``'s combine region on scalars ``accs`` (the earlier elements) and ``xs``."""
    return run_region(ctx, op.combine, list(accs) + list(xs))


class _Slots:
    """Scalars in stack slots, one per operand of a reduction (LLVM keeps
    them in registers): ``set``/``get`` their values."""

    def __init__(self, ctx: HostCtx, elems: list):
        self.ctx, self.elems = ctx, elems
        self.slots = [ctx.slot(e) for e in elems]

    def set(self, values: list) -> None:
        for slot, v, e in zip(self.slots, values, self.elems):
            self.ctx.b.store(_to_memory(self.ctx, v, e), slot)

    def get(self) -> list:
        return [_from_memory(self.ctx, self.ctx.b.load(s, typ=memory_type(e)), e)
                for s, e in zip(self.slots, self.elems)]


def _with(coords: tuple, axis: int, at) -> tuple:
    """``coords`` with ``at`` inserted as dim ``axis``."""
    return coords[:axis] + (at,) + coords[axis:]


def _store_all(ctx: HostCtx, bufs: list[Buffer], coords: tuple, values: list) -> None:
    for buf, v in zip(bufs, values):
        ctx.b.store(_to_memory(ctx, v, buf.elem), element_pointer(ctx, buf, coords))


def reduce_axis(ctx: HostCtx, op: ir.Op, srcs: list, shape: tuple, axis: int) -> list:
    """``op``'s combine over dim ``axis`` of ``srcs`` (tiles of ``shape``), as a
    tree: the first step over an even length is a ``fold`` of its blocks
    (reading the tiles themselves, in order: a loaded row is read once, a
    buffer is not copied); each other step combines the first half of the
    remaining length with the rest (``i`` with ``i + n - half``, the earlier
    element on the left), one loop over every other dim per step, until one
    layer is left.  A tile per operand of the remaining shape (reading the
    last layer), or scalars when none remains."""
    layer, n = srcs, shape[axis]
    if n > 1 and n % 2 == 0:  # the first step reads the row in order, once
        layer, n = fold(ctx, op, layer, shape, axis)
    while n > 1:
        levels = fused_levels(n) if all(isinstance(t, Buffer) for t in layer) else 1
        layer = _tree_step(ctx, op, layer, shape[:axis] + (n,) + shape[axis + 1:], axis, levels)
        n = n >> levels if levels > 1 else n - n // 2
    out_shape = shape[:axis] + shape[axis + 1:]
    firsts = lambda coords: _with(coords, axis, I64(0))  # noqa: E731
    if not out_shape:
        return [t.at(ctx, (I64(0),) * len(shape)) for t in layer]
    return [lazy(out_shape, t.elem, lambda c, coords, t=t: t.at(c, firsts(coords)), [t]) for t in layer]


def fold(ctx: HostCtx, op: ir.Op, tiles: list, shape: tuple, axis: int) -> tuple[list[Buffer], int]:
    """The first step of ``reduce_axis``'s tree over an even length ``n``: the
    axis is ``k = 2^fused_levels(n)`` blocks of ``m = n / k``, and element ``i``
    of the result (buffers of ``m`` along ``axis``) is the tree over ``i``,
    ``i + m``, ... ``i + (k-1) m`` that combines neighbours first (blocks 0
    and 1, 2 and 3, then those pairs...), the earlier on the left.  Buffers
    are read ``k`` blocks at once: one loop, each result element written
    once, the tree's three levels in flight together.  A tile that is not
    a buffer (a load: memory) is read once, in order, one loop a block (one
    stream from memory, where the halving tree's first step read two): the
    tree's pending subtrees live in a buffer a height, as the digits of a
    binary counter, each block's elements combined a vector at a time.  The same combines in the same
    order either way.  The buffers and ``m``."""
    k = 1 << fused_levels(n := shape[axis])
    m = n // k
    pre, post = shape[:axis], shape[axis + 1:]
    outs = [ctx.buffer(pre + (m,) + post, t.elem) for t in tiles]
    b = ctx.b

    def block_of(before, j: int, c) -> tuple:
        """The coordinates of element ``c[0]`` of block ``j`` along the axis."""
        return before + ((b.add(c[0], I64(j * m)) if j else c[0]),) + c[1:]

    def row(before) -> None:
        if all(isinstance(t, Buffer) for t in tiles):
            def together(c) -> None:
                leaves = [[t.at(ctx, block_of(before, j, c)) for t in tiles] for j in range(k)]
                while len(leaves) > 1:
                    leaves = [_combine(ctx, op, leaves[j], leaves[j + 1]) for j in range(0, len(leaves), 2)]
                _store_all(ctx, outs, before + c, leaves[0])
            for_each(ctx, (m,) + post, together)
            return
        # pending[h]: the tree over the last 2^h blocks not yet combined; block j
        # carries up through the heights of the ones among its low bits
        depth = (k - 1).bit_length()
        pending = [[ctx.buffer((m,) + post, t.elem) for t in tiles] for _ in range(depth)]
        for j in range(k):
            def step(c, j=j) -> None:
                value, h = [t.at(ctx, block_of(before, j, c)) for t in tiles], 0
                while (j >> h) & 1:
                    value = _combine(ctx, op, [p.at(ctx, c) for p in pending[h]], value)
                    h += 1
                if h == depth:
                    _store_all(ctx, outs, before + c, value)
                else:
                    _store_all(ctx, pending[h], c, value)
            for_each(ctx, (m,) + post, step)
    for_each(ctx, pre, row)
    return outs, m


def fused_levels(n: int) -> int:
    """How many levels of the tree one pass over a length ``n`` computes: up to
    ``FUSED_LEVELS`` while the length halves evenly, else one."""
    levels = 1
    while levels < FUSED_LEVELS and n % (2 << levels) == 0:
        levels += 1
    return levels


def _tree_step(ctx: HostCtx, op: ir.Op, tiles: list, shape: tuple, axis: int, levels: int = 1) -> list[Buffer]:
    """``levels`` steps of ``reduce_axis``'s tree on ``tiles`` of ``shape`` in
    one loop (``n`` divisible by ``2^levels`` when more than one): buffers of
    the first ``m = n / 2^levels`` along ``axis``, element ``i`` the tree over
    ``i + k m`` (``k < 2^levels``) that the steps one by one would make: each
    combines ``k`` with ``k + 2^(levels-1)``, then the halves again.  One
    step of an odd ``n`` copies the middle element."""
    b, n = ctx.b, shape[axis]
    half, step = n // 2, n - n // 2
    m = n >> levels if levels > 1 else step
    outs = [ctx.buffer(_with(shape[:axis] + shape[axis + 1:], axis, m), t.elem) for t in tiles]

    def tree(coords) -> None:
        others = coords[:axis] + coords[axis + 1:]
        leaves = [[t.at(ctx, _with(others, axis, b.add(coords[axis], I64(k * m))) if k else coords) for t in tiles]
                  for k in range(1 << levels)]
        while len(leaves) > 1:
            h = len(leaves) // 2
            leaves = [_combine(ctx, op, leaves[k], leaves[k + h]) for k in range(h)]
        _store_all(ctx, outs, coords, leaves[0])
    for_each(ctx, _with(shape[:axis] + shape[axis + 1:], axis, half if levels == 1 else m), tree)
    if step > half:
        def middle(coords) -> None:
            at = _with(coords, axis, I64(half))
            _store_all(ctx, outs, at, [t.at(ctx, at) for t in tiles])
        for_each(ctx, shape[:axis] + shape[axis + 1:], middle)
    return outs


def _axis(op: ir.Reduce) -> int | None:
    """The dim ``op`` reduces; a reduction over every dim of a row, its dim 0."""
    return 0 if op.axis is None and len(shape_of(op.srcs[0].type)) == 1 else op.axis


@host_rule(ir.Reduce)
def _reduce(ctx: HostCtx, op: ir.Reduce) -> None:
    srcs = [ctx[v] for v in op.srcs]
    shape, axis = shape_of(op.srcs[0].type), _axis(op)
    if axis is not None:
        outs = reduce_axis(ctx, op, srcs, shape, axis)
    else:  # over the tile read as one row, in row-major order
        flat = (numel(shape),)
        rows = [lazy(flat, s.elem, lambda c, coords, s=s: s.at(c, coords_of(c, coords[0], shape)), [s]) for s in srcs]
        outs = reduce_axis(ctx, op, rows, flat, 0)
    for v, out in zip(op.results, outs):
        ctx.bind(v, out)


@host_rule(ir.Scan)
def _scan(ctx: HostCtx, op: ir.Scan) -> None:
    srcs = [ctx[v] for v in op.srcs]
    shape, axis = shape_of(op.srcs[0].type), op.axis
    n, b = shape[axis], ctx.b
    outs = [ctx.buffer(shape, s.elem) for s in srcs]
    others = shape[:axis] + shape[axis + 1:]
    first = I64(n - 1 if op.reverse else 0)

    def position(i) -> tuple:
        """The ``i + 1``-th element along the axis in scan order, and the one before it."""
        if op.reverse:
            at = b.sub(I64(n - 2), i)
            return at, b.add(at, I64(1))
        return b.add(i, I64(1)), i
    if axis == len(shape) - 1:
        slots = _Slots(ctx, [s.elem for s in srcs])

        def row(coords) -> None:
            slots.set([s.at(ctx, coords + (first,)) for s in srcs])
            _store_all(ctx, outs, coords + (first,), slots.get())

            def step(i) -> None:
                at = coords + (position(i)[0],)
                slots.set(_combine(ctx, op, slots.get(), [s.at(ctx, at) for s in srcs]))
                _store_all(ctx, outs, at, slots.get())
            counted_loop(b, I64(n - 1), step)
        for_each(ctx, others, row)
    else:
        for_each(ctx, others, lambda coords: _store_all(
            ctx, outs, _with(coords, axis, first), [s.at(ctx, _with(coords, axis, first)) for s in srcs]))

        def layer(i) -> None:
            at, before = position(i)
            for_each(ctx, others, lambda coords: _store_all(
                ctx, outs, _with(coords, axis, at),
                _combine(ctx, op, [o.at(ctx, _with(coords, axis, before)) for o in outs],
                         [s.at(ctx, _with(coords, axis, at)) for s in srcs])))
        counted_loop(b, I64(n - 1), layer)
    for v, out in zip(op.results, outs):
        ctx.bind(v, out)
