"""Powers: pow and cbrt.

pow: ``|x|^y = 2^(y log2|x|)`` with ``log2|x|`` and the product as pairs of
floats (``f - f^2/2`` split exactly by fmas), then ``exp2`` of the pair;
C99's edges by selects (``pow(x, +-0) = 1``, ``pow(1, y) = 1``, a negative
``x`` to an odd integer is negative, to a non-integer NaN, zeros and
infinities by the sign of ``y`` and whether it is odd).

cbrt: the exponent divided by three in the bits (fdlibm's first guess, 5
bits), Halley's steps (cubic) and a last Newton step whose residual
``y^3 - x`` is exact to the last bits by fmas.
"""
from __future__ import annotations

import math

from tilec.codegen_llvm.portable_math.constants import coeffs, smallest_normal, split
from tilec.codegen_llvm.portable_math.emitter import Emitter, Mask, Num, defines, two_sum
from tilec.codegen_llvm.portable_math.exp_log import EXP2_RANGE, log_parts


def log2_pair(e: Emitter, a: Num) -> tuple[Num, Num]:
    """``log2 a`` as ``hi + lo`` for positive finite ``a``: every part of
    ``log(1 + f) = f - f^2/2 + s (f^2/2 + R)`` carried as a pair (``s``'s
    division and ``f^2`` corrected by fmas), so ``lo`` holds about ``2P`` bits."""
    p = log_parts(e, a, "log_pow")
    f, half = p.f, p.hfsq
    den = f + 2.0
    s_lo = (e.fma(-p.s, den, f) - p.s * ((2.0 - den) + f)) / den
    half_lo = e.fma(f, f, -(f * f)) * 0.5
    w = half + p.r
    w_lo = ((half - w) + p.r) + half_lo
    tail = p.s * w
    tail_lo = e.fma(p.s, w, -tail) + e.fma(s_lo, w, p.s * w_lo)
    lead = f - half
    total, error = two_sum(lead, tail)
    lo = (((f - lead) - half) - half_lo) + (error + tail_lo)
    c_hi, c_lo = split("log2e", e.fmt)
    t_hi = total * c_hi
    t_lo = e.fma(total, c_hi, -t_hi) + e.fma(total, c_lo, lo * c_hi)
    total, error = two_sum(p.kf, t_hi)
    rest = error + t_lo
    lead = total + rest
    return lead, (total - lead) + rest


def exp2_pair(e: Emitter, hi: Num, lo: Num) -> Num:
    """``2^(hi + lo)``, ``lo`` below an ulp of ``hi`` (``hi`` may be huge,
    infinite or NaN: held to ``EXP2_RANGE``, where ``lo`` no longer counts)."""
    hi_held = e.clamp(hi, *EXP2_RANGE[e.fmt.kind])
    kf, k = e.round_small(hi_held)
    r = (hi_held - kf) + e.select(e.eq(hi, hi_held), lo, 0.0)
    return e.scale(e.fma(r, e.poly(r, coeffs("exp2", e.fmt)), 1.0), k)


def _rint(e: Emitter, x: Num) -> Num:
    """``rint(x)`` for any ``x``: below ``2^(P-1)`` adding that power leaves no
    fraction bits; past it every float is an integer."""
    big = 2.0 ** e.fmt.mantissa_bits
    a = e.abs(x)
    return e.select(a < big, e.copysign((a + big) - big, x), x)


def _odd_integer(e: Emitter, y: Num) -> Mask:
    half = y * 0.5
    return e.eq(_rint(e, y), y) & e.ne(_rint(e, half), half)


@defines("pow", "fast_pow")
def pow(e: Emitter, x: Num, y: Num) -> Num:
    ax = e.abs(x)
    l_hi, l_lo = log2_pair(e, e.select((ax > 0.0) & (ax < math.inf), ax, 1.0))
    edge = e.select(e.eq(ax, 0.0), -math.inf, ax)  # log2 of 0, inf, NaN
    l_hi = e.select((ax > 0.0) & (ax < math.inf), l_hi, edge)
    z_hi = y * l_hi
    z_lo = e.fma(y, l_hi, -z_hi) + y * l_lo
    result = exp2_pair(e, z_hi, z_lo)
    result = e.select(e.signbit(x) & _odd_integer(e, y), -result, result)
    integer = e.eq(_rint(e, y), y)
    result = e.select((x < 0.0) & (ax < math.inf) & ~integer, math.nan, result)
    result = e.select(e.eq(y, 0.0) | e.eq(x, 1.0), 1.0, result)
    return e.select(e.eq(ax, 1.0) & e.eq(e.abs(y), math.inf), 1.0, result)


#: Halley's steps after the 5-bit guess, so that the Newton step ends past P bits.
HALLEY_STEPS = {"f32": 1, "f64": 2}


@defines("cbrt")
def cbrt(e: Emitter, x: Num) -> Num:
    fmt = e.fmt
    a = e.abs(x)
    scale_bits = 3 * ((fmt.precision + 2) // 3)  # subnormals and the largest scaled by 2^(+-3n) first
    tiny, huge = a < smallest_normal(fmt), a > 2.0 ** (fmt.bias - 3)
    a_n = e.select(tiny, a * 2.0 ** scale_bits, e.select(huge, a * 2.0 ** -scale_bits, a))
    magic = int((2 * fmt.bias / 3 - 0.0330623565) * 2 ** fmt.mantissa_bits)
    t = e.from_bits(e.bits(a_n).udiv(3) + magic)
    for _ in range(HALLEY_STEPS[fmt.kind]):
        t3 = t * t * t
        t = t * ((t3 + a_n + a_n) / (t3 + t3 + a_n))
    t2 = t * t
    residual = e.fma(t2, t, -a_n) + e.fma(t, t, -t2) * t
    t = t - residual / (t2 * 3.0)
    t = e.select(tiny, t * 2.0 ** -(scale_bits // 3), e.select(huge, t * 2.0 ** (scale_bits // 3), t))
    y = e.copysign(t, x)
    return e.select(e.eq(a, 0.0) | e.eq(a, math.inf) | e.isnan(x), x, y)
