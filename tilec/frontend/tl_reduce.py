"""Reductions, scans and ``dot``.

A reduction or scan is one ``ir.Reduce``/``ir.Scan`` with a combine block
taking ``(acc_0..acc_n-1, x_0..x_n-1)`` scalars; ``combine_block`` builds it
from a *body* ``(ctx, accs, xs) -> values``.  ``sum``/``max``/``argmax``...
are such bodies; ``tl.reduce`` inlines the user's ``@jit`` combiner.
"""
from __future__ import annotations

from typing import Callable

from tilec import ir
from tilec import language as tl
from tilec.frontend import semantic
from tilec.frontend.tl_ops import BUILTINS, const_axis, const_int, dtype_arg, implements, one_of
from tilec.frontend.tl_math import float_arg
from tilec.frontend.semantic import Tensor, TypingError, cast_to, constant, describe, dtype_name, emit, to_tensor

Body = Callable[..., list]


# --------------------------------------------------------------------------- #
# Reduce / scan machinery
# --------------------------------------------------------------------------- #

def scalar_region(ctx, arg_types: list, build: Callable[[list[Tensor]], list[ir.Value]]) -> ir.Block:
    """A region taking scalars of ``arg_types``: ``build(args)`` emits its ops
    (inside the region) and returns the values it yields.  Combine regions
    and ``tl.map_elementwise``'s body are made this way."""
    block = ir.Block()
    args = [Tensor(block.add_arg(t)) for t in arg_types]
    with ctx.builder.at(block):
        ctx.builder.create(ir.Yield, values=build(args))
    return block


def combine_block(ctx, elems: list, body: Body) -> ir.Block:
    """A combine region over element types ``elems``, built by ``body(ctx, accs, xs)``."""
    n = len(elems)

    def build(args: list[Tensor]) -> list[ir.Value]:
        results = body(ctx, args[:n], args[n:])
        return [_combine_result(ctx, r, t) for r, t in zip(results, elems)]
    return scalar_region(ctx, elems + elems, build)


def _combine_result(ctx, value, t: ir.ElemType) -> ir.Value:
    """A combiner's result: numbers take the operand type; tensors must already have it."""
    if semantic.is_number(value):
        return constant(ctx, value, t).handle
    if not isinstance(value, Tensor) or value.type != t:
        raise TypingError(f"a combine function must return scalars of type {dtype_name(t)}, got {describe(value)}")
    return value.handle


def _group(ctx, input, fname: str) -> tuple[list[Tensor], bool]:
    """A tensor or tuple of same-shape tiles; the flag says whether it was a single tensor."""
    single = not isinstance(input, (tuple, list))
    srcs = [to_tensor(ctx, x) for x in ([input] if single else input)]
    shape = srcs[0].shape if srcs else ()
    if not shape:
        raise TypingError(f"`{fname}` needs a tile, got {describe(srcs[0]) if srcs else 'nothing'}")
    if any(s.shape != shape for s in srcs):
        raise TypingError(f"`{fname}`: all inputs must have one shape, got {[s.shape for s in srcs]}")
    return srcs, single


def reduce_tensors(ctx, srcs: list[Tensor], axis, body: Body, keep_dims: bool, fname: str) -> list[Tensor]:
    shape = srcs[0].shape
    ax = None if axis is None else const_axis(axis, len(shape), f"the axis of `{fname}`")
    block = combine_block(ctx, [s.elem for s in srcs], body)
    op = ctx.builder.create(ir.Reduce, srcs=[s.handle for s in srcs], axis=ax, combine=block)
    outs = [Tensor(r) for r in op.results]
    return [_restore_dims(ctx, o, len(shape), ax) for o in outs] if keep_dims else outs


def _restore_dims(ctx, x: Tensor, rank: int, axis) -> Tensor:
    """``keep_dims``: the reduced dims come back with size 1."""
    if axis is None:
        return emit(ctx, ir.Reshape, src=x.handle, shape=(1,) * rank)
    return emit(ctx, ir.ExpandDims, src=x.handle, axis=axis)


def scan_tensors(ctx, srcs: list[Tensor], axis, body: Body, reverse: bool, fname: str) -> list[Tensor]:
    ax = const_axis(axis, len(srcs[0].shape), f"the axis of `{fname}`")
    block = combine_block(ctx, [s.elem for s in srcs], body)
    op = ctx.builder.create(ir.Scan, srcs=[s.handle for s in srcs], axis=ax, reverse=bool(reverse), combine=block)
    return [Tensor(r) for r in op.results]


def _binop(cls: type, **attrs) -> Body:
    def body(ctx, accs, xs):
        return [emit(ctx, cls, lhs=accs[0].handle, rhs=xs[0].handle, **attrs)]
    return body


def _numeric_tile(ctx, input, fname: str) -> Tensor:
    x = _group(ctx, input, fname)[0][0]
    if isinstance(x.elem, ir.PointerType):
        raise TypingError(f"`{fname}` is not defined on pointers ({describe(x)})")
    return x


# --------------------------------------------------------------------------- #
# Built-in reductions and scans
# --------------------------------------------------------------------------- #

def sum_type(elem: ir.ScalarType) -> ir.ScalarType:
    """Triton's default accumulator of ``sum``/``cumsum``: narrow ints to (u)int32, 16-bit floats to f32."""
    if elem.is_int and elem.bits < 32:
        return ir.u32 if elem.kind == "uint" else ir.i32
    return ir.f32 if elem in (ir.f16, ir.bf16) else elem


def _minmax_type(elem: ir.ScalarType) -> ir.ScalarType:
    """``max``/``min`` compute values narrower than 32 bits in float32 / int32 (as Triton)."""
    if elem.bits >= 32:
        return elem
    return ir.f32 if elem.is_float else ir.i32


def _accumulated(ctx, input, dtype, fname: str) -> Tensor:
    x = _numeric_tile(ctx, input, fname)
    return cast_to(ctx, x, sum_type(x.elem) if dtype is None else dtype_arg(dtype, f"the dtype of `{fname}`"))


@implements(tl.sum)
def _sum(ctx, input, axis, keep_dims, dtype):
    return reduce_tensors(ctx, [_accumulated(ctx, input, dtype, "tl.sum")], axis, _binop(ir.Add), keep_dims,
                          "tl.sum")[0]


def _bitwise_reduction(cls: type, fname: str):
    def impl(ctx, input, axis, keep_dims):
        x = _numeric_tile(ctx, input, fname)
        if not x.elem.is_int:
            raise TypingError(f"`{fname}` needs integers, got {describe(x)}")
        return reduce_tensors(ctx, [x], axis, _binop(cls), keep_dims, fname)[0]
    return impl


implements(tl.xor_sum)(_bitwise_reduction(ir.Xor, "tl.xor_sum"))
implements(tl.reduce_or)(_bitwise_reduction(ir.Or, "tl.reduce_or"))


def _arg_combine(pred: str, tie_break_left: bool) -> Body:
    """Keep the better (value, index) pair; on equal values the smaller index if ``tie_break_left``."""
    def body(ctx, accs, xs):
        (v1, i1), (v2, i2) = accs, xs
        better = emit(ctx, ir.Compare, lhs=v1.handle, rhs=v2.handle, pred=pred)
        if tie_break_left:
            same = emit(ctx, ir.Compare, lhs=v1.handle, rhs=v2.handle, pred="eq")
            earlier = emit(ctx, ir.Compare, lhs=i1.handle, rhs=i2.handle, pred="lt")
            tie = emit(ctx, ir.And, lhs=same.handle, rhs=earlier.handle)
            better = emit(ctx, ir.Or, lhs=better.handle, rhs=tie.handle)
        return [emit(ctx, ir.Select, cond=better.handle, a=v.handle, b=w.handle) for v, w in ((v1, v2), (i1, i2))]
    return body


def _indices(ctx, shape: tuple, axis: int, fname: str) -> Tensor:
    """The ``int32`` position of each element along ``axis``, broadcast to ``shape``."""
    n = shape[axis]
    if n & (n - 1):
        raise TypingError(f"`{fname}` with indices needs a power-of-two axis length, got {n}")
    idx = emit(ctx, ir.Arange, start=0, end=n)
    lifted = tuple(n if d == axis else 1 for d in range(len(shape)))
    if lifted != (n,):
        idx = emit(ctx, ir.Reshape, src=idx.handle, shape=lifted)
    return semantic.broadcast_to(ctx, idx, shape)


def arg_reduce(ctx, input, axis, pred: str, tie_break_left: bool, keep_dims: bool, fname: str):
    """(best values, their int32 indices) along ``axis`` (None: over the flattened tile)."""
    x = _numeric_tile(ctx, input, fname)
    if x.elem == ir.bf16:
        x = cast_to(ctx, x, ir.f32)
    rank = len(x.shape)
    if axis is None:
        x = emit(ctx, ir.Reshape, src=x.handle, shape=(x.numel,)) if rank > 1 else x
    ax = 0 if axis is None else const_axis(axis, rank, f"the axis of `{fname}`")
    idx = _indices(ctx, x.shape, ax, fname)
    outs = reduce_tensors(ctx, [x, idx], ax, _arg_combine(pred, bool(tie_break_left)), False, fname)
    return tuple(_restore_dims(ctx, o, rank, axis) for o in outs) if keep_dims else tuple(outs)


def _min_max_reduce(cls: type, pred: str, fname: str):
    def impl(ctx, input, axis, return_indices, return_indices_tie_break_left, keep_dims):
        if return_indices:
            return arg_reduce(ctx, input, axis, pred, return_indices_tie_break_left, keep_dims, fname)
        x = _numeric_tile(ctx, input, fname)
        x = cast_to(ctx, x, _minmax_type(x.elem))
        return reduce_tensors(ctx, [x], axis, _binop(cls), keep_dims, fname)[0]
    return impl


implements(tl.max)(_min_max_reduce(ir.Maximum, "gt", "tl.max"))
implements(tl.min)(_min_max_reduce(ir.Minimum, "lt", "tl.min"))


@implements(tl.argmax)
def _argmax(ctx, input, axis, tie_break_left, keep_dims):
    return arg_reduce(ctx, input, axis, "gt", tie_break_left, keep_dims, "tl.argmax")[1]


@implements(tl.argmin)
def _argmin(ctx, input, axis, tie_break_left, keep_dims):
    return arg_reduce(ctx, input, axis, "lt", tie_break_left, keep_dims, "tl.argmin")[1]


def _user_combine(combine_fn, fname: str) -> Body:
    """A body that inlines the user's ``@jit`` combiner on the block's scalars."""
    def body(ctx, accs, xs):
        out = ctx.inline_jit(combine_fn, [*accs, *xs])
        out = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(out) != len(accs):
            raise TypingError(f"the combine_fn of `{fname}` must return {len(accs)} value(s), got {len(out)}")
        return out
    return body


@implements(tl.reduce)
def _reduce(ctx, input, axis, combine_fn, keep_dims):
    srcs, single = _group(ctx, input, "tl.reduce")
    outs = reduce_tensors(ctx, srcs, axis, _user_combine(combine_fn, "tl.reduce"), keep_dims, "tl.reduce")
    return outs[0] if single else tuple(outs)


@implements(tl.associative_scan)
def _associative_scan(ctx, input, axis, combine_fn, reverse):
    srcs, single = _group(ctx, input, "tl.associative_scan")
    body = _user_combine(combine_fn, "tl.associative_scan")
    outs = scan_tensors(ctx, srcs, axis, body, reverse, "tl.associative_scan")
    return outs[0] if single else tuple(outs)


def _cumulative(cls: type, fname: str):
    def impl(ctx, input, axis, reverse, dtype):
        x = _accumulated(ctx, input, dtype, fname)
        return scan_tensors(ctx, [x], axis, _binop(cls), reverse, fname)[0]
    return impl


implements(tl.cumsum)(_cumulative(ir.Add, "tl.cumsum"))
implements(tl.cumprod)(_cumulative(ir.Mul, "tl.cumprod"))


@implements(tl.softmax)
def _softmax(ctx, x, dim, keep_dims, ieee_rounding):
    t = float_arg(ctx, x, "tl.softmax")
    axis = 0 if dim is None else dim
    peak = reduce_tensors(ctx, [t], axis, _binop(ir.Maximum), True, "tl.softmax")[0]
    num = emit(ctx, ir.Exp, src=semantic.binary(ctx, "sub", t, peak).handle)
    den = reduce_tensors(ctx, [num], axis, _binop(ir.Add), True, "tl.softmax")[0]
    return BUILTINS[tl.fdiv](ctx, num, den, ieee_rounding)


# --------------------------------------------------------------------------- #
# dot
# --------------------------------------------------------------------------- #

_DOT_INPUTS = (ir.i8, ir.f16, ir.bf16, ir.f32, ir.f64)
_MIN_DOT = 16  # Triton requires M, N, K >= 16


def _check_dot_shapes(a: Tensor, b: Tensor) -> None:
    sa, sb = a.shape, b.shape
    if len(sa) != len(sb) or len(sa) not in (2, 3):
        raise TypingError(f"`tl.dot` needs two 2-D (or two batched 3-D) tiles, got shapes {sa} and {sb}")
    if sa[-1] != sb[-2]:
        raise TypingError(f"`tl.dot`: inner dimensions differ: {sa} @ {sb} (K = {sa[-1]} vs {sb[-2]})")
    if sa[:-2] != sb[:-2]:
        raise TypingError(f"`tl.dot`: batch dimensions differ: {sa} @ {sb}")
    m, k, n = sa[-2], sa[-1], sb[-1]
    if min(m, n, k) < _MIN_DOT:
        raise TypingError(f"`tl.dot` needs M, N and K >= {_MIN_DOT} (as Triton), got M={m}, N={n}, K={k}; "
                          "use bigger tiles and mask the loads")


def _dot_result_type(elem: ir.ScalarType, out_dtype) -> ir.ScalarType:
    if elem == ir.i8:
        return ir.i32
    if elem == ir.f64:
        return ir.f64
    out = dtype_arg(out_dtype, "the out_dtype of `tl.dot`")
    if out not in (ir.f32, ir.f16):
        raise TypingError(f"`tl.dot` out_dtype must be tl.float32 or tl.float16, got {dtype_name(out)}; "
                          "cast the result with .to() instead")
    return out


def _dot_precision(elem: ir.ScalarType, input_precision, allow_tf32) -> str:
    """Triton's default for float32 inputs is "tf32"; other inputs are exact ("ieee")."""
    if input_precision is not None and allow_tf32 is not None:
        raise TypingError("`tl.dot`: give input_precision or allow_tf32, not both")
    if input_precision is None:
        input_precision = "ieee" if allow_tf32 is False else "tf32"
    one_of(input_precision, ("tf32", "tf32x3", "ieee"), "`tl.dot` input_precision")
    return input_precision if elem == ir.f32 else "ieee"


def _dot_acc(ctx, acc, shape: tuple, ret: ir.ScalarType) -> Tensor:
    if acc is None:
        return constant(ctx, 0, ret, shape)
    c = to_tensor(ctx, acc)
    if c.shape != shape:
        raise TypingError(f"`tl.dot`: acc has shape {c.shape}, the product has shape {shape}")
    allowed = (ir.i32,) if ret == ir.i32 else (ir.f64,) if ret == ir.f64 else (ir.f32, ir.f16)
    if c.elem not in allowed:
        raise TypingError(f"`tl.dot`: acc of type {dtype_name(c.elem)} cannot accumulate this product; "
                          f"use {' or '.join(map(dtype_name, allowed))}")
    return c


def _fp8_as_f16(ctx, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """Two fp8 operands of different fp8 types as float16, which holds every
    fp8 value: their products then accumulate in float32 (or ``out_dtype``)
    as Triton's fp8 dot does.  Two of one type stay fp8 in the IR: each
    backend runs them on its fp8 matrix instructions or widens them itself
    (``opt/legalize_dots.py``)."""
    if semantic.is_fp8_value(a.handle) and semantic.is_fp8_value(b.handle) and a.elem != b.elem:
        return cast_to(ctx, a, ir.f16), cast_to(ctx, b, ir.f16)
    return a, b


@implements(tl.dot)
def _dot(ctx, input, other, acc, input_precision, allow_tf32, max_num_imprecise_acc, out_dtype):
    a, b = _fp8_as_f16(ctx, to_tensor(ctx, input), to_tensor(ctx, other))
    _check_dot_shapes(a, b)
    if a.elem != b.elem:
        raise TypingError(f"`tl.dot` operands must share a dtype, got {describe(a)} and {describe(b)}; "
                          "cast one with .to()")
    if a.elem not in _DOT_INPUTS and not semantic.is_fp8_value(a.handle):
        raise TypingError(f"`tl.dot` takes int8, fp8, float16, bfloat16, float32 or float64 tiles, got "
                          f"{describe(a)}")
    precision = _dot_precision(a.elem, input_precision, allow_tf32)
    c = _dot_acc(ctx, acc, a.shape[:-1] + b.shape[-1:], _dot_result_type(a.elem, out_dtype))
    if _promotes(a, max_num_imprecise_acc):
        zero = constant(ctx, 0, c.elem, c.shape)
        product = emit(ctx, ir.Dot, a=a.handle, b=b.handle, acc=zero.handle, input_precision=precision)
        return semantic.binary(ctx, "add", c, product)
    return emit(ctx, ir.Dot, a=a.handle, b=b.handle, acc=c.handle, input_precision=precision)


def _promotes(a: Tensor, max_num_imprecise_acc) -> bool:
    """Whether an fp8 dot adds its product to ``acc`` in full f32 precision
    (a dot into zeros, then an add) instead of accumulating into it.

    NVIDIA's fp8 tensor cores (Ada, Hopper) accumulate in a 22-bit float (13
    mantissa bits, truncating); left as it is (``None``, Triton's default on
    Hopper) a K loop's ``acc = tl.dot(a, b, acc)`` accumulates all of K
    that way.  ``max_num_imprecise_acc`` (Triton's) bounds how many K
    elements accumulate imprecisely: tilec promotes once per dot, so it
    must be at least the dot's K.  Other operand types ignore it, as Triton."""
    if max_num_imprecise_acc is None or not semantic.is_fp8_value(a.handle):
        return False
    n, k = const_int(max_num_imprecise_acc, "`tl.dot` max_num_imprecise_acc"), a.shape[-1]
    if n < k:
        raise TypingError(f"`tl.dot`: max_num_imprecise_acc = {n} is below this dot's K = {k}; tilec adds each "
                          f"fp8 dot's product to acc in full precision once, so give at least {k} (or make "
                          f"BLOCK_K at most {n})")
    return True
