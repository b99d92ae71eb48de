"""The numbers the portable math functions are made of: the fitted
polynomials (``coefficients.py``) and irrational constants split into sums
of floats of a format (Cody and Waite's ``ln2 = ln2_hi + ln2_lo``)."""
from __future__ import annotations

from fractions import Fraction

from tilec.codegen_llvm.portable_math import coefficients
from tilec.codegen_llvm.portable_math.emitter import Format

_TABLES = {"f32": coefficients.F32, "f64": coefficients.F64}


def coeffs(name: str, fmt: Format) -> tuple[float, ...]:
    """The fitted polynomial ``name`` for ``fmt``, lowest degree first."""
    return _TABLES[fmt.kind][name]


def _round(x: Fraction, bits: int) -> float:
    """``x`` rounded to nearest even with ``bits`` significant bits (no
    underflow or overflow: the constants here are near 1)."""
    if x == 0:
        return 0.0
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if abs(x) < Fraction(2) ** e:
        e -= 1
    unit = Fraction(2) ** (e - bits + 1)
    return float(round(x / unit) * unit)


def split(name: str, fmt: Format, parts: int = 2) -> tuple[float, ...]:
    """``EXACT[name]`` as ``parts`` floats of ``fmt``, each the rounding of
    what the earlier ones leave: their sum carries ``parts * P`` bits."""
    rest, out = Fraction(coefficients.EXACT[name]), []
    for _ in range(parts):
        out.append(_round(rest, fmt.precision))
        rest -= Fraction(out[-1])
    return tuple(out)


def smallest_normal(fmt: Format) -> float:
    return 2.0 ** (1 - fmt.bias)
