"""The numbers the portable math functions are made of: the fitted
polynomials (``coefficients.py``) and irrational constants split into sums
of floats of a format (Cody and Waite's ``ln2 = ln2_hi + ln2_lo``)."""
from __future__ import annotations

import functools
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


@functools.cache
def two_over_pi_words(count: int) -> tuple[int, ...]:
    """The first ``32 count`` bits of 2/pi after the binary point as 32-bit
    words, most significant first (``floor(2^(32 count) 2/pi)``): pi by
    Machin's formula ``16 atan(1/5) - 4 atan(1/239)`` in integers, 64 bits
    past what is kept (each series term truncated costs its last unit)."""
    bits = 32 * count + 64

    def atan_inverse(n: int) -> int:  # atan(1/n) 2^bits
        total, power, k = 0, (1 << bits) // n, 0
        while power:
            total += (-1) ** k * (power // (2 * k + 1))
            power //= n * n
            k += 1
        return total
    pi = 16 * atan_inverse(5) - 4 * atan_inverse(239)
    value = (1 << (32 * count + 1 + bits)) // pi
    return tuple((value >> (32 * (count - 1 - i))) & 0xFFFFFFFF for i in range(count))
