"""``tl.inline_asm_elementwise`` and ``tl.map_elementwise``: elementwise maps
the kernel's author writes (``ir.InlineAsm``, ``ir.MapElementwise``).

Both broadcast their tensors to one shape and work ``pack`` elements at a
time.  ``map_elementwise`` inlines the user's ``@jit`` function on scalars
into the op's body, a scalar region made as reductions make their combine
regions (``tl_reduce.scalar_region``).
"""
from __future__ import annotations

import inspect
import math

from tilec import ir
from tilec import language as tl
from tilec.frontend.common import unwrap
from tilec.frontend.semantic import Tensor, TypingError, broadcast_all, describe, dtype_name, to_tensor
from tilec.frontend.tl_ops import const_int, dtype_arg, implements
from tilec.frontend.tl_reduce import scalar_region


def _pack_arg(pack, numel: int, fname: str) -> int:
    """``pack``, a positive constexpr int dividing the ``numel`` elements."""
    pack = const_int(unwrap(pack), f"the pack of `{fname}`")
    if pack < 1:
        raise TypingError(f"the pack of `{fname}` must be at least 1, got {pack}")
    if numel % pack:
        raise TypingError(f"`{fname}`: pack={pack} does not divide the {numel} elements of each argument; "
                          "use a pack that divides the tile size")
    return pack


def _broadcast_args(ctx, args, fname: str) -> list[Tensor]:
    """The arguments as tensors of one shape (numbers become scalars of their literal type)."""
    try:
        return broadcast_all(ctx, *(to_tensor(ctx, unwrap(a)) for a in args))
    except TypingError as e:
        raise TypingError(f"`{fname}`: the arguments' {e}") from None


# --------------------------------------------------------------------------- #
# inline_asm_elementwise
# --------------------------------------------------------------------------- #

def _text_arg(value, what: str) -> str:
    value = unwrap(value)
    if not isinstance(value, str):
        raise TypingError(f"{what} must be a constexpr str, got {describe(value)}")
    return value


def _asm_result_types(dtype) -> tuple[tuple, bool]:
    """The result element types and whether they were given as a tuple."""
    dtype = unwrap(dtype)
    several = isinstance(dtype, (tuple, list))
    types = tuple(dtype_arg(unwrap(d), "each dtype of `tl.inline_asm_elementwise`")
                  for d in (dtype if several else (dtype,)))
    if not types:
        raise TypingError("`tl.inline_asm_elementwise` needs at least one result dtype (as Triton); "
                          "return a dummy result if the asm needs none")
    return types, several


def _no_bools(types, what: str) -> None:
    bools = [t for t in types if isinstance(t, ir.ScalarType) and t.is_bool]
    if bools:
        raise TypingError(f"`tl.inline_asm_elementwise` does not take int1 {what}; use tl.int8 or tl.int32 "
                          "(x.to(tl.int32)) and compare afterwards")


@implements(tl.inline_asm_elementwise)
def _inline_asm_elementwise(ctx, asm, constraints, args, dtype, is_pure, pack):
    fname = "tl.inline_asm_elementwise"
    args = unwrap(args)
    if not isinstance(args, (tuple, list)):
        raise TypingError(f"the args of `{fname}` must be a list or tuple of tensors, got {describe(args)}")
    srcs = _broadcast_args(ctx, args, fname)
    types, several = _asm_result_types(dtype)
    _no_bools([s.elem for s in srcs], "arguments")
    _no_bools(types, "results")
    numel = srcs[0].numel if srcs else 1
    op = ctx.builder.create(ir.InlineAsm, srcs=[s.handle for s in srcs], asm=_text_arg(asm, f"the asm of `{fname}`"),
                            constraints=_text_arg(constraints, f"the constraints of `{fname}`"), dtypes=types,
                            pure=bool(unwrap(is_pure)), pack=_pack_arg(pack, numel, fname))
    outs = [Tensor(r) for r in op.results]
    return tuple(outs) if several else outs[0]


# --------------------------------------------------------------------------- #
# map_elementwise
# --------------------------------------------------------------------------- #

def _scalar_results(ctx, out, pack: int, fname: str) -> list[Tensor]:
    """What the scalar function returned, as scalars: ``pack`` of each result,
    the ``pack`` of one result sharing a type."""
    results = list(out) if isinstance(out, (tuple, list)) else [out]
    if out is None or not results or len(results) % pack:
        got = "nothing" if out is None else f"{len(results)} value(s)"
        raise TypingError(f"the function of `{fname}` must return {pack} value(s) per result "
                          f"(pack={pack}), got {got}")
    values = [to_tensor(ctx, unwrap(r)) for r in results]
    for v in values:
        if v.shape:
            raise TypingError(f"the function of `{fname}` works on scalars and must return scalars, "
                              f"got {describe(v)}")
    for k, v in enumerate(values):
        first = values[k - k % pack]
        if v.elem != first.elem:
            raise TypingError(f"the function of `{fname}` returned {dtype_name(first.elem)} and "
                              f"{dtype_name(v.elem)} for the {pack} elements of one result; cast them to one type")
    return values


def _check_arity(scalar_fn, count: int, pack: int, fname: str) -> None:
    """``scalar_fn`` takes ``pack`` scalars of each of the ``count`` arguments."""
    pyfn = scalar_fn.fn
    try:
        inspect.signature(pyfn).bind(*range(count * pack))
    except TypeError:
        raise TypingError(f"`{fname}` calls `{pyfn.__name__}{inspect.signature(pyfn)}` with {count * pack} "
                          f"scalar(s) ({count} argument(s), pack={pack} element(s) of each)") from None


@implements(tl.map_elementwise)
def _map_elementwise(ctx, scalar_fn, args, pack):
    fname = "tl.map_elementwise"
    if not getattr(scalar_fn, "is_tilec_jit", False):
        raise TypingError(f"the first argument of `{fname}` must be a @jit function, got {describe(scalar_fn)}")
    if not args:
        raise TypingError(f"`{fname}` needs at least one tensor to map over")
    srcs = _broadcast_args(ctx, args, fname)
    pack = _pack_arg(pack, math.prod(srcs[0].shape), fname)
    _check_arity(scalar_fn, len(srcs), pack, fname)
    single = []

    def build(scalars: list[Tensor]) -> list[ir.Value]:
        out = ctx.inline_jit(scalar_fn, scalars)
        single.append(not isinstance(out, (tuple, list)))
        return [v.handle for v in _scalar_results(ctx, out, pack, fname)]

    body = scalar_region(ctx, [s.elem for s in srcs for _ in range(pack)], build)
    effects = ir.MapElementwise.effects(body)
    if effects:
        raise TypingError(f"the function of `{fname}` may only compute values; its `{effects[0].NAME}` would run "
                          "once per program on a GPU, not once per element: return the values and store, print "
                          "or update them after the map")
    op = ctx.builder.create(ir.MapElementwise, srcs=[s.handle for s in srcs], pack=pack, body=body)
    outs = [Tensor(r) for r in op.results]
    return outs[0] if single[0] else tuple(outs)
