"""C's ``fmod``, exact, without a loop.

``|x| mod |y|`` by long division in chunks of ``P - 1`` bits of quotient:
each step divides the remainder ``r`` by ``b = |y| 2^s`` (``s`` chosen so
that ``r / b < 2^P``), ``q = trunc(rn(r / b))`` is the true quotient's floor
or one more, so ``r - q b`` lies in ``(-b, b)``, is a multiple of ``b``'s
last bit, and is exact in one fma (adding ``b`` back where it is negative
is exact too).  A fixed number of steps covers the widest exponent gap
(largest ``x`` over smallest subnormal ``y``): 12 for f32, 41 for f64 --
straight-line code, so a loop calling ``fmod`` still vectorizes, at the
cost of that many divisions.
"""
from __future__ import annotations

import math

from tilec.codegen_llvm.portable_math.constants import smallest_normal
from tilec.codegen_llvm.portable_math.emitter import Emitter, Int, Num, defines


def _exponent(e: Emitter, v: Num) -> Int:
    """``floor(log2 v)`` for normal ``v``; at least that for subnormal or zero ``v``."""
    return (e.bits(v) >> e.fmt.mantissa_bits) - e.fmt.bias


def _exact_exponent(e: Emitter, v: Num) -> Int:
    """``floor(log2 v)`` for any positive finite ``v``."""
    tiny = v < smallest_normal(e.fmt)
    scaled = _exponent(e, e.select(tiny, v * 2.0 ** e.fmt.precision, v))
    return scaled - e.select(tiny, e.fmt.precision, 0)


def _trunc_below(e: Emitter, v: Num) -> Num:
    """``trunc v`` for ``0 <= v < 2^P``."""
    big = 2.0 ** e.fmt.mantissa_bits
    nearest = e.select(v < big, (v + big) - big, v)
    return e.select(nearest > v, nearest - 1.0, nearest)


def steps(fmt) -> int:
    """Division steps for the widest gap between the exponents (the largest
    ``x`` over the smallest subnormal ``y``): each step but the last closes
    ``P - 1`` bits of it, the last leaves ``r < |y|``."""
    widest_gap = fmt.bias + (fmt.bias - 1 + fmt.mantissa_bits)
    return -(-widest_gap // (fmt.precision - 1))


@defines("fmod")
def fmod(e: Emitter, x: Num, y: Num) -> Num:
    fmt = e.fmt
    a, b = e.abs(x), e.abs(y)
    b_exponent = _exact_exponent(e, b)
    r = a
    for _ in range(steps(fmt)):
        shift = _exponent(e, r) - b_exponent - (fmt.precision - 1)
        shifted = e.scale(b, e.select(shift < 0, 0, shift))
        q = _trunc_below(e, r / shifted)
        rem = e.fma(-q, shifted, r)
        r = e.select(rem < 0.0, rem + shifted, rem)
    result = e.copysign(r, x)
    result = e.select(e.eq(b, math.inf) & (a < math.inf), x, result)
    return e.select(e.eq(b, 0.0) | e.eq(a, math.inf) | e.isnan(x) | e.isnan(y), math.nan, result)
