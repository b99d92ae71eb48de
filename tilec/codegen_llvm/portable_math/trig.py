"""Circular functions: sin, cos, tan and their inverses atan, atan2, asin, acos.

sin, cos, tan: ``x = q pi/2 + r`` with ``|r| <= pi/4``, pi/2 in three floats
(Cody and Waite, each step one fma, so the first is exact), the minimax
polynomials of sin and cos on ``r`` (fitted a little past pi/4: the
rounded ``2x/pi`` may pick a ``q`` that leaves ``|r|`` up to ``pi/4 + pi/32``)
and the quadrant ``q mod 4`` choosing between them and their signs.  The
reduction is good while ``q`` is small beside ``2^P``: from ``TRIG_BOUNDS``
on, ``q`` and ``r`` are Payne and Hanek's (``reduction.py``), selected
per element.

atan (fdlibm's): ``|x|`` falls in one of five ranges with a centre ``c``
(0, 1/2, 1, 3/2, infinity), ``atan x = atan c + atan t`` with
``t = (x - c) / (1 + c x)`` (``-1/x`` for the last), ``|t| <= 7/16``, one
polynomial; branch-free, the range picks ``c`` and ``atan c`` by selects.

asin, acos (fdlibm's): below 1/2 a polynomial in ``x``; above,
``asin x = pi/2 - 2 asin(sqrt((1 - x)/2))`` with the square root as a pair
of floats (its rounding error found by an fma).
"""
from __future__ import annotations

import math

from tilec.codegen_llvm.portable_math.constants import coeffs, split
from tilec.codegen_llvm.portable_math.emitter import Emitter, Int, Mask, Num, defines, two_sum
from tilec.codegen_llvm.portable_math.reduction import payne_hanek


#: Where Cody and Waite's reduction gives way to Payne and Hanek's
#: (``reduction.py``): a little inside ``2^(P-2) pi/2``, where rounding
#: ``2x/pi`` to an integer stops working.
TRIG_BOUNDS = {"f32": 6.5e6, "f64": 1.75e15}


class Reduced:
    """``x = q pi/2 + r + r_lo``, ``|r| <= pi/4`` and ``r_lo`` below half an ulp
    of ``r`` (module docstring); ``sin`` and ``cos`` of ``r + r_lo`` as pairs
    ``(leading, rest)`` whose sum is the value."""

    def __init__(self, e: Emitter, x: Num):
        p1, p2, p3 = split("pi_2", e.fmt, 3)
        c_hi, c_lo = split("two_over_pi", e.fmt)
        z = x * c_hi
        qf, self.q = e.round_small(z + e.fma(x, c_lo, e.fma(x, c_hi, -z)))  # 2x/pi rounded once
        exact = e.fma(-qf, p1, x)
        prod = qf * p2
        prod_lo = e.fma(qf, p2, -prod)
        total, error = two_sum(exact, -prod)
        tail = (error - prod_lo) - qf * p3
        r = total + tail
        huge = e.abs(x) >= TRIG_BOUNDS[e.fmt.kind]  # Payne and Hanek's way (false for NaN)
        q_huge, r_huge, r_lo_huge = payne_hanek(e, x)
        self.q = e.select(huge, q_huge, self.q)
        self.r = e.select(huge, r_huge, r)
        self.r_lo = e.select(huge, r_lo_huge, (total - r) + tail)
        self.e = e

    def sin(self) -> tuple[Num, Num]:
        """``r + (r^3 S(r^2) + r_lo (1 - r^2/2))``."""
        e, r = self.e, self.r
        r2 = r * r
        return r, e.fma(r2 * r, e.poly(r2, coeffs("sin", e.fmt)), e.fma(self.r_lo, r2 * -0.5, self.r_lo))

    def cos(self) -> tuple[Num, Num]:
        """``1 - r^2/2`` rounded and the rest, its rounding error included (fdlibm's)."""
        e, r = self.e, self.r
        r2 = r * r
        half = r2 * 0.5
        w = 1.0 - half
        return w, ((1.0 - w) - half) + e.fma(r2 * r2, e.poly(r2, coeffs("cos", e.fmt)), -(r * self.r_lo))

    def odd(self) -> Mask:
        return (self.q & 1).equals(1)


def _flip_if(e: Emitter, y: Num, bit: Int) -> Num:
    """``-y`` where bit 1 of ``bit`` is set."""
    return e.from_bits(e.bits(y) ^ ((bit & 2) << (e.fmt.width - 2)))


def _sin_of_quadrant(e: Emitter, red: Reduced, q: Int) -> Num:
    """``sin(q pi/2 + r)``."""
    odd = (q & 1).equals(1)
    hi, lo = (e.select(odd, c, s) for s, c in zip(red.sin(), red.cos()))
    return _flip_if(e, hi + lo, q)


def _nan_at_infinity(e: Emitter, x: Num, y: Num) -> Num:
    return e.select(e.eq(e.abs(x), math.inf), math.nan, y)


@defines("sin", "fast_sin")
def sin(e: Emitter, x: Num) -> Num:
    red = Reduced(e, x)
    return e.keep_zero(x, _nan_at_infinity(e, x, _sin_of_quadrant(e, red, red.q)))


@defines("cos", "fast_cos")
def cos(e: Emitter, x: Num) -> Num:
    red = Reduced(e, x)
    return _nan_at_infinity(e, x, _sin_of_quadrant(e, red, red.q + 1))


@defines("tan", "fast_tan")
def tan(e: Emitter, x: Num) -> Num:
    """``sin r / cos r``, or ``-cos r / sin r`` in the odd quadrants: the
    quotient of the rounded sums, corrected once by the pairs' remainder."""
    red = Reduced(e, x)
    odd = red.odd()
    (s_hi, s_lo), (c_hi, c_lo) = red.sin(), red.cos()
    num_hi, num_lo = e.select(odd, -c_hi, s_hi), e.select(odd, -c_lo, s_lo)
    den_hi, den_lo = e.select(odd, s_hi, c_hi), e.select(odd, s_lo, c_lo)
    den = den_hi + den_lo
    y = (num_hi + num_lo) / den
    remainder = e.fma(-y, den_hi, num_hi) + (num_lo - y * den_lo)
    return e.keep_zero(x, _nan_at_infinity(e, x, y + remainder / den))


# --------------------------------------------------------------------------- #
# Inverses
# --------------------------------------------------------------------------- #

def _pick(e: Emitter, ranges: list, values: list) -> Num:
    """``values[i]`` for the last of ``ranges`` that holds (``values[0]`` where none does)."""
    out = e.num(values[0])
    for held, v in zip(ranges, values[1:]):
        out = e.select(held, v, out)
    return out


def atan_positive(e: Emitter, a: Num) -> Num:
    """``atan a`` for ``a >= 0`` (or NaN), by fdlibm's five ranges (module docstring)."""
    fmt = e.fmt
    ranges = [a >= bound for bound in (7 / 16, 11 / 16, 19 / 16, 39 / 16)]
    bases = [(0.0, 0.0), split("atan_half", fmt), split("pi_4", fmt), split("atan_1_5", fmt), split("pi_2", fmt)]
    centre = _pick(e, ranges[:3], [0.0, 0.5, 1.0, 1.5])
    outer = ranges[3]
    t = e.select(outer, -1.0, a - centre) / e.select(outer, a, e.fma(centre, a, 1.0))
    z = t * t
    tail = e.fma(t * z, e.poly(z, coeffs("atan", fmt)), _pick(e, ranges, [lo for _, lo in bases]))
    return _pick(e, ranges, [hi for hi, _ in bases]) + (tail + t)


@defines("atan")
def atan(e: Emitter, x: Num) -> Num:
    return e.copysign(atan_positive(e, e.abs(x)), x)


@defines("atan2")
def atan2(e: Emitter, y: Num, x: Num) -> Num:
    """``atan(|y| / |x|)`` (1 for two infinities, 0 for two zeros), taken from pi
    where ``x`` is negative (-0 with a zero ``y``), with ``y``'s sign: C99's every edge."""
    ay, ax = e.abs(y), e.abs(x)
    ratio = ay / ax
    ratio = e.select(e.eq(ay, math.inf) & e.eq(ax, math.inf), 1.0, ratio)
    ratio = e.select(e.eq(ay, 0.0) & e.eq(ax, 0.0), 0.0, ratio)
    base = atan_positive(e, ratio)
    pi_hi, pi_lo = split("pi", e.fmt)
    # pi - base where x < 0, but pi/2 exactly where y is infinite or x is -0 (base is pi/2 there)
    from_pi = ((x < 0.0) & (ay < math.inf)) | (e.signbit(x) & e.eq(ay, 0.0)) | e.eq(x, -math.inf)
    return e.copysign(e.select(from_pi, pi_hi + (pi_lo - base), base), y)


class AsinParts:
    """``asin a = s + (c + p)`` for ``a < 1/2`` (``s = a``, ``c = 0``), and for
    ``a >= 1/2`` ``asin a = pi/2 - 2 (s + (c + p))`` with ``s + c = sqrt((1 - a)/2)``."""

    def __init__(self, e: Emitter, a: Num):
        self.big = a >= 0.5
        z = e.select(self.big, (1.0 - a) * 0.5, a * a)
        s = e.select(self.big, e.sqrt(z), a)
        self.s = s
        self.c = e.select(self.big & (s > 0.0), e.fma(-s, s, z) / (s + s), 0.0)
        self.p = s * z * e.poly(z, coeffs("asin", e.fmt))

    def twice(self) -> tuple[Num, Num]:
        """``2 asin(sqrt((1 - a)/2))`` as its leading part and the rest."""
        return self.s + self.s, (self.c + self.p) * 2.0


@defines("asin")
def asin(e: Emitter, x: Num) -> Num:
    parts = AsinParts(e, e.abs(x))
    hi, lo = parts.twice()
    pi_2_hi, pi_2_lo = split("pi_2", e.fmt)
    large = pi_2_hi - (hi + (lo - pi_2_lo))
    return e.copysign(e.select(parts.big, large, parts.s + (parts.c + parts.p)), x)


@defines("acos")
def acos(e: Emitter, x: Num) -> Num:
    """``pi/2 - asin x`` below 1/2; ``2 asin(...)`` above; ``pi - 2 asin(...)`` below -1/2."""
    parts = AsinParts(e, e.abs(x))
    hi, lo = parts.twice()
    pi_2_hi, pi_2_lo = split("pi_2", e.fmt)
    pi_hi, pi_lo = split("pi", e.fmt)
    small = pi_2_hi - (x + (e.copysign(parts.p, x) - pi_2_lo))
    large = e.select(x < 0.0, pi_hi - (hi + (lo - pi_lo)), hi + lo)
    return e.select(parts.big, large, small)
