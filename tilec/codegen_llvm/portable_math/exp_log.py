"""Exponentials and logarithms: exp, exp2, exp10, expm1, log, log2, log10, log1p.

exp-like: ``x = k ln2 + r`` with ``k`` an integer and ``|r| <= ln2/2``
(Cody and Waite: ``r = x - k ln2_hi - k ln2_lo``, each step one fma), a
polynomial for ``e^r``, and ``2^k`` applied in two exact halves so that a
subnormal result is rounded once (``Emitter.scale``).  The argument is
first held to a range just past overflow and underflow, so that infinity
and zero come out of the arithmetic itself.

log-like (musl's, after fdlibm): ``x = 2^k m`` with ``m`` in
``[sqrt(1/2), sqrt(2))``, ``f = m - 1``, ``s = f / (2 + f)`` and
``log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2))``; subnormal ``x`` are scaled
by ``2^P`` first.  log2 and log10 keep ``f - f^2/2`` as a pair of floats so
that the conversion factor is applied in extra precision.
"""
from __future__ import annotations

import math
from typing import Optional

from tilec.codegen_llvm.portable_math.constants import coeffs, smallest_normal, split
from tilec.codegen_llvm.portable_math.emitter import Emitter, Int, Num, defines

#: Past these the result is certainly infinite or zero (or -1 for expm1):
#: arguments are held here, so the arithmetic itself overflows or underflows.
EXP_RANGE = {"f32": (-104.0, 89.0), "f64": (-746.0, 710.0)}
EXP2_RANGE = {"f32": (-152.0, 129.0), "f64": (-1080.0, 1025.0)}
EXP10_RANGE = {"f32": (-46.0, 39.0), "f64": (-325.0, 309.0)}
EXPM1_RANGE = {"f32": (-30.0, 89.0), "f64": (-40.0, 710.0)}


def exp_tail(e: Emitter, x: Num, x_lo: Optional[Num] = None) -> tuple[Num, Int]:
    """``e^(x + x_lo) = (1 + t) * 2^k`` with ``|t| < 0.42`` (``x`` already in
    ``EXP_RANGE``, ``x_lo`` below an ulp of it)."""
    ln2_hi, ln2_lo = split("ln2", e.fmt)
    kf, k = e.round_small(x * (1 / math.log(2)))
    r = e.fma(-kf, ln2_lo, e.fma(-kf, ln2_hi, x))
    r = r if x_lo is None else r + x_lo
    return e.fma(r * r, e.poly(r, coeffs("exp", e.fmt)), r), k


def exp_parts(e: Emitter, x: Num) -> tuple[Num, Int]:
    """``e^x = p * 2^k`` with ``p`` in about ``[0.7, 1.42]`` (``x`` already in ``EXP_RANGE``)."""
    t, k = exp_tail(e, x)
    return t + 1.0, k


@defines("exp", "fast_exp")
def exp(e: Emitter, x: Num) -> Num:
    p, k = exp_parts(e, e.clamp(x, *EXP_RANGE[e.fmt.kind]))
    return e.scale(p, k)


@defines("exp2")
def exp2(e: Emitter, x: Num) -> Num:
    x = e.clamp(x, *EXP2_RANGE[e.fmt.kind])
    kf, k = e.round_small(x)
    r = x - kf
    return e.scale(e.fma(r, e.poly(r, coeffs("exp2", e.fmt)), 1.0), k)


@defines("exp10", "fast_exp10")
def exp10(e: Emitter, x: Num) -> Num:
    """``10^x = 2^k 10^r``, ``r = x - k log10(2)``."""
    hi, lo = split("log10_2", e.fmt)
    x = e.clamp(x, *EXP10_RANGE[e.fmt.kind])
    kf, k = e.round_small(x * (math.log(10) / math.log(2)))
    r = e.fma(-kf, lo, e.fma(-kf, hi, x))
    return e.scale(e.fma(r, e.poly(r, coeffs("exp10", e.fmt)), 1.0), k)


@defines("expm1")
def expm1(e: Emitter, x: Num) -> Num:
    """``2^k (e^r - 1) + (2^k - 1)``, ``r`` and ``e^r - 1`` pairs of floats: while
    ``k <= P``, ``2^k - 1`` is exact and one fma joins the large parts;
    past that, ``2^k (1 + (e^r - 1 - 2^-k))``."""
    fmt = e.fmt
    ln2_hi, ln2_lo = split("ln2", fmt)
    xc = e.clamp(x, *EXPM1_RANGE[fmt.kind])
    kf, k = e.round_small(xc * (1 / math.log(2)))
    exact = e.fma(-kf, ln2_hi, xc)
    r = e.fma(-kf, ln2_lo, exact)
    r_lo = e.fma(-kf, ln2_lo, exact - r)  # what rounding r lost
    r2 = r * r
    rest = e.fma(r2 * r, e.poly(r, coeffs("expm1", fmt)), r2 * 0.5)
    em_hi = r + rest
    em_lo = (r - em_hi) + rest + e.fma(r_lo, r, r_lo)
    big = k > fmt.precision
    scale = e.pow2(e.select(big, 0, k))
    small = e.fma(scale, em_hi, scale - 1.0) + scale * em_lo
    minus_one = e.pow2(0 - e.select(k > 2 * fmt.precision, 2 * fmt.precision, k))
    large = e.scale(1.0 + (em_hi + (em_lo - minus_one)), k)
    return e.keep_zero(x, e.select(big, large, small))


# --------------------------------------------------------------------------- #
# Logarithms
# --------------------------------------------------------------------------- #

class LogParts:
    """``x = 2^k (1 + f)`` and what ``log(1 + f)`` is made of (module docstring)."""

    def __init__(self, e: Emitter, kf: Num, f: Num, fit: str = "log"):
        self.kf, self.f = kf, f
        self.s = f / (f + 2.0)
        z = self.s * self.s
        self.r = z * e.poly(z, coeffs(fit, e.fmt))
        self.hfsq = f * f * 0.5

    def tail(self) -> Num:
        """``s (f^2/2 + R)``, the part of ``log(1 + f)`` past ``f - f^2/2``."""
        return self.s * (self.hfsq + self.r)

    def pair(self) -> tuple[Num, Num]:
        """``log(1 + f)`` as ``hi + lo``: ``hi = f - f^2/2`` rounded, ``lo`` the
        rest (its rounding error exactly, as ``|f| >= f^2/2``, plus the tail)."""
        hi = self.f - self.hfsq
        return hi, (self.f - hi) - self.hfsq + self.tail()


def _sqrt_half_bits(e: Emitter) -> Int:
    return e.bits(e.num(math.sqrt(0.5)))


def _reduce(e: Emitter, bits: Int) -> tuple[Int, Num]:
    """``k`` and ``m`` in ``[sqrt(1/2), sqrt(2))`` with ``x = 2^k m`` (``bits`` those of a normal ``x``)."""
    fmt = e.fmt
    shifted = bits + (e.bits(e.num(1.0)) - _sqrt_half_bits(e))
    k = (shifted >> fmt.mantissa_bits) - fmt.bias
    m = e.from_bits((shifted & ((1 << fmt.mantissa_bits) - 1)) + _sqrt_half_bits(e))
    return k, m


def log_parts(e: Emitter, x: Num, fit: str = "log") -> LogParts:
    """The parts of ``log x`` for positive finite ``x`` (subnormals scaled by
    ``2^P`` first), ``R`` the polynomial ``fit``."""
    tiny = x < smallest_normal(e.fmt)
    k, m = _reduce(e, e.bits(e.select(tiny, x * 2.0 ** e.fmt.precision, x)))
    k = k - e.select(tiny, e.fmt.precision, 0)
    return LogParts(e, e.to_float(k), m - 1.0, fit)


def log_specials(e: Emitter, x: Num, y: Num) -> Num:
    """C's logarithm at its edges: -inf at +-0, NaN below 0 and at NaN, inf at inf."""
    y = e.select(e.eq(x, math.inf), math.inf, y)
    y = e.select(e.eq(x, 0.0), -math.inf, y)
    return e.select(~(x >= 0.0), math.nan, y)


@defines("log", "fast_log")
def log(e: Emitter, x: Num) -> Num:
    ln2_hi, ln2_lo = split("ln2", e.fmt)
    p = log_parts(e, x)
    y = e.fma(p.kf, ln2_hi, p.tail() + p.kf * ln2_lo - p.hfsq + p.f)
    return log_specials(e, x, y)


@defines("log2", "fast_log2")
def log2(e: Emitter, x: Num) -> Num:
    c_hi, c_lo = split("log2e", e.fmt)
    p = log_parts(e, x)
    hi, lo = p.pair()
    return log_specials(e, x, e.fma(hi, c_hi, e.fma(lo, c_hi, hi * c_lo)) + p.kf)


@defines("log10", "fast_log10")
def log10(e: Emitter, x: Num) -> Num:
    c_hi, c_lo = split("log10e", e.fmt)
    l2_hi, l2_lo = split("log10_2", e.fmt)
    p = log_parts(e, x)
    hi, lo = p.pair()
    small = e.fma(p.kf, l2_lo, e.fma(lo, c_hi, hi * c_lo))
    return log_specials(e, x, e.fma(p.kf, l2_hi, e.fma(hi, c_hi, small)))


@defines("log1p")
def log1p(e: Emitter, x: Num) -> Num:
    """``log(u)`` for ``u = 1 + x`` rounded, plus ``c / u``, ``c`` what the rounding
    lost (musl's): ``u`` is never subnormal, as ``x >= -1`` is a multiple of ``2^-P``."""
    fmt = e.fmt
    ln2_hi, ln2_lo = split("ln2", fmt)
    u = x + 1.0
    k, m = _reduce(e, e.bits(u))
    lost = e.select(k >= 2, 1.0 - (u - x), x - (u - 1.0)) / u
    lost = e.select(k > fmt.precision, 0.0, lost)
    kf = e.to_float(k)
    p = LogParts(e, kf, m - 1.0)
    y = e.fma(kf, ln2_hi, p.tail() + (kf * ln2_lo + lost) - p.hfsq + p.f)
    y = e.select(e.eq(x, math.inf), math.inf, y)
    y = e.select(e.eq(x, -1.0), -math.inf, y)
    return e.keep_zero(x, e.select(~(x >= -1.0), math.nan, y))
