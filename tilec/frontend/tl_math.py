"""Elementwise ``tl`` functions: math, min/max/clamp, where, fma, umulhi, divisions, sigmoid."""
from __future__ import annotations

from tilec import ir
from tilec import language as tl
from tilec.frontend import semantic
from tilec.frontend.tl_ops import const_int, implements, one_of
from tilec.frontend.semantic import Tensor, TypingError, describe, emit, operands, to_tensor

def float_arg(ctx, x, fname: str) -> Tensor:
    """A floating-point tensor (a Python number becomes a float32 constant).

    Triton's libdevice-backed functions may insist on float32/float64; we
    accept every float type and compute in it, so any kernel Triton takes runs.
    """
    t = to_tensor(ctx, float(x) if semantic.is_number(x) else x)
    if not semantic.is_float_tensor(t):
        raise TypingError(f"`{fname}` takes floating-point values, got {describe(t)}; convert first: "
                          f"{fname}(x.to(tl.float32))")
    return t


def _math1(cls: type, fname: str):
    def impl(ctx, x):
        return emit(ctx, cls, src=float_arg(ctx, x, fname).handle)
    return impl


_MATH1 = {
    tl.exp: ir.Exp, tl.exp2: ir.Exp2, tl.log: ir.Log, tl.log2: ir.Log2, tl.sqrt: ir.Sqrt, tl.rsqrt: ir.Rsqrt,
    tl.sin: ir.Sin, tl.cos: ir.Cos, tl.erf: ir.Erf, tl.floor: ir.Floor, tl.ceil: ir.Ceil,
}
_MATH1[tl.sqrt_rn] = ir.Sqrt  # the interpreter's sqrt is correctly rounded
for _stub, _cls in _MATH1.items():
    implements(_stub)(_math1(_cls, f"tl.{_stub.__name__}"))


@implements(tl.abs)
def _abs(ctx, x):
    t = to_tensor(ctx, x)
    if isinstance(t.elem, ir.PointerType):
        raise TypingError(f"`tl.abs` is not defined on pointers ({describe(t)})")
    if t.elem.kind in ("uint", "bool"):
        return t
    return emit(ctx, ir.Abs, src=t.handle)


def _min_max(cls: type, fname: str):
    def impl(ctx, x, y, propagate_nan):
        a, b = operands(ctx, x, y, fname)
        mode = one_of(const_int(propagate_nan, f"`{fname}` propagate_nan"),
                      (tl.PropagateNan.NONE, tl.PropagateNan.ALL), f"`{fname}` propagate_nan")
        return emit(ctx, cls, lhs=a.handle, rhs=b.handle, propagate_nan=mode == tl.PropagateNan.ALL)
    return impl


_maximum = implements(tl.maximum)(_min_max(ir.Maximum, "tl.maximum"))
_minimum = implements(tl.minimum)(_min_max(ir.Minimum, "tl.minimum"))


@implements(tl.clamp)
def _clamp(ctx, x, min, max, propagate_nan):
    t = to_tensor(ctx, x)
    if not semantic.is_float_tensor(t):
        raise TypingError(f"`tl.clamp` takes floating-point values, got {describe(t)}; "
                          "use tl.minimum(tl.maximum(x, lo), hi) for integers")
    return _minimum(ctx, _maximum(ctx, t, min, propagate_nan), max, propagate_nan)


@implements(tl.where)
def _where(ctx, condition, x, y):
    return semantic.where(ctx, condition, x, y)


@implements(tl.fma)
def _fma(ctx, x, y, z):
    a, b = operands(ctx, x, y, "tl.fma")
    c, a = operands(ctx, z, a, "tl.fma")
    a, b = operands(ctx, a, b, "tl.fma")
    if not semantic.is_float_tensor(a):
        raise TypingError(f"`tl.fma` takes floating-point values, got {describe(a)}")
    return emit(ctx, ir.Fma, a=a.handle, b=b.handle, c=c.handle)


@implements(tl.umulhi)
def _umulhi(ctx, x, y):
    a, b = operands(ctx, x, y, "tl.umulhi")
    if a.elem not in (ir.i32, ir.u32, ir.i64, ir.u64):
        raise TypingError(f"`tl.umulhi` takes int32/uint32/int64/uint64 values, got {describe(a)}")
    return emit(ctx, ir.UMulHi, lhs=a.handle, rhs=b.handle)


@implements(tl.fdiv)
def _fdiv(ctx, x, y, ieee_rounding):
    for v in (x, y):
        if not (isinstance(v, float) or isinstance(v, Tensor) and semantic.is_float_tensor(v)):
            raise TypingError(f"both operands of `tl.fdiv` must be floats, got {describe(v)}")
    a, b = operands(ctx, x, y, "tl.fdiv", div_or_mod=True)  # f16/bf16 divide in f32, as `/`
    return emit(ctx, ir.Div, lhs=a.handle, rhs=b.handle, rounding="rn" if ieee_rounding else "")


@implements(tl.div_rn)
def _div_rn(ctx, x, y):
    a, b = operands(ctx, x, y, "tl.div_rn")
    float_arg(ctx, a, "tl.div_rn")
    return emit(ctx, ir.Div, lhs=a.handle, rhs=b.handle, rounding="rn")


@implements(tl.sigmoid)
def _sigmoid(ctx, x):
    t = float_arg(ctx, x, "tl.sigmoid")
    e = emit(ctx, ir.Exp, src=emit(ctx, ir.Neg, src=t.handle).handle)
    return semantic.binary(ctx, "truediv", 1.0, semantic.binary(ctx, "add", 1.0, e))
