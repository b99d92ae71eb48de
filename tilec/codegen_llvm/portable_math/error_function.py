"""The error function and its complement: erf, erfc.

Near 0, ``erf x = x + x (c + x^2 P(x^2))`` (``|x| < 7/8``).  Beyond,
``erfc x = e^(-x^2) H(z) / (1 + 2x)``, ``H`` a minimax polynomial in
``z = (x - L) / (x + L)`` (the variable of Weideman's erfc, which maps the
whole tail ``[7/8, underflow]`` onto part of ``[-1, 1]``), ``x^2`` as a
pair (an fma) and ``e^(-x^2)`` as ``exp``'s parts, the power of two applied
last so that a subnormal result is rounded once.  ``erf = 1 - erfc`` there; ``erfc``
below 7/8 is ``1 - erf`` (fdlibm's ``0.5 - ((x - 0.5) + x P)`` above 1/4),
and ``2 - erfc|x|`` below -7/8.
"""
from __future__ import annotations

from tilec.codegen_llvm.portable_math import coefficients
from tilec.codegen_llvm.portable_math.constants import coeffs, split
from tilec.codegen_llvm.portable_math.emitter import Emitter, Num, defines
from tilec.codegen_llvm.portable_math.exp_log import exp_tail

#: Where the polynomial of erf ends and the tail begins (the fits' ranges).
NEAR = 0.875
#: erfc underflows to 0 past these (the tail fit's end).
UNDERFLOW = {"f32": 10.1, "f64": 27.3}


def _near_part(e: Emitter, a: Num) -> Num:
    """``erf a - a = a (c + a^2 P(a^2))`` for ``|a| < NEAR``, ``c = 2/sqrt(pi) - 1``
    as a pair (erfc's ``1 - erf`` magnifies an error of erf up to 3.5 times)."""
    c_hi, c_lo = split("erf_slope_minus_1", e.fmt)
    z = a * a
    return e.fma(a, c_hi, a * e.fma(z, e.poly(z, coeffs("erf", e.fmt)), c_lo))


def erfc_tail(e: Emitter, a: Num) -> Num:
    """``erfc a`` for ``a >= NEAR`` (or NaN); 0 past underflow.  ``e^(-a^2) H``
    is one fma, ``(1 + t) H``, and the division by ``1 + 2a`` (a pair) is
    corrected once by its remainder."""
    fmt = e.fmt
    a = e.select(a > UNDERFLOW[fmt.kind], UNDERFLOW[fmt.kind], a)
    centre = coefficients.ERFC_CENTRE[fmt.kind]
    h = e.poly((a - centre) / (a + centre), coeffs("erfc", fmt))
    square = a * a
    t, k = exp_tail(e, -square, -e.fma(a, a, -square))
    num = e.fma(t, h, h)
    twice = a + a
    den = twice + 1.0
    den_lo = (twice - den) + 1.0
    q = num / den
    q = q + (e.fma(-q, den, num) - q * den_lo) / den
    return e.scale(q, k)


@defines("erf")
def erf(e: Emitter, x: Num) -> Num:
    a = e.abs(x)
    near = a + _near_part(e, a)
    far = 1.0 - erfc_tail(e, e.select(a < NEAR, NEAR, a))
    return e.copysign(e.select(a < NEAR, near, far), x)


@defines("erfc")
def erfc(e: Emitter, x: Num) -> Num:
    a = e.abs(x)
    inside = a < NEAR
    near_x = e.select(inside, x, 0.0)
    part = _near_part(e, near_x)
    near = e.select(near_x >= 0.25, 0.5 - ((near_x - 0.5) + part), 1.0 - (near_x + part))
    tail = erfc_tail(e, e.select(inside, NEAR, a))
    return e.select(inside, near, e.select(x < 0.0, 2.0 - tail, tail))
