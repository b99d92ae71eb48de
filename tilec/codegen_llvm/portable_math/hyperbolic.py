"""Hyperbolic functions: sinh, cosh, tanh.

``e^|x| / 2`` is ``exp``'s parts with the power of two one lower
(``half_exp``), so ``cosh`` and ``sinh`` stay finite up to their own overflow
(``ln(2 max)``, past ``exp``'s).  Near 0 (``|x| < 1`` and ``< 0.55``),
``sinh`` and ``tanh`` are minimax polynomials; beyond,
``sinh = e^|x|/2 - 1/(4 e^|x|/2)`` and ``tanh = 1 - 2 / (expm1(2|x|) + 2)``.
"""
from __future__ import annotations

from tilec.codegen_llvm.portable_math.constants import coeffs
from tilec.codegen_llvm.portable_math.emitter import Emitter, Num, defines
from tilec.codegen_llvm.portable_math.exp_log import exp_parts

#: ``e^a / 2`` overflows past these (held here, so the arithmetic overflows).
HALF_EXP_LIMIT = {"f32": 90.0, "f64": 711.0}
#: ``tanh`` is 1 to the last bit past these.
TANH_ONE = {"f32": 10.0, "f64": 20.0}
#: Below this ``tanh`` is its polynomial (the fit's range).
TANH_POLY = 0.55


def half_exp(e: Emitter, a: Num) -> Num:
    """``e^a / 2`` for ``a >= 0`` (or NaN)."""
    p, k = exp_parts(e, e.select(a > HALF_EXP_LIMIT[e.fmt.kind], HALF_EXP_LIMIT[e.fmt.kind], a))
    return e.scale(p, k - 1)


@defines("cosh")
def cosh(e: Emitter, x: Num) -> Num:
    h = half_exp(e, e.abs(x))
    return h + 0.25 / h


@defines("sinh")
def sinh(e: Emitter, x: Num) -> Num:
    a = e.abs(x)
    z = a * a
    near = e.fma(a * z, e.poly(z, coeffs("sinh", e.fmt)), a)
    h = half_exp(e, a)
    return e.copysign(e.select(a < 1.0, near, h - 0.25 / h), x)


@defines("tanh")
def tanh(e: Emitter, x: Num) -> Num:
    a = e.abs(x)
    z = a * a
    near = e.fma(a * z, e.poly(z, coeffs("tanh", e.fmt)), a)
    t = e.call("expm1", e.select(a > TANH_ONE[e.fmt.kind], TANH_ONE[e.fmt.kind], a) * 2.0)
    far = 1.0 - 2.0 / (t + 2.0)
    return e.copysign(e.select(a < TANH_POLY, near, far), x)
