"""Elementwise math functions (``tl.exp``... and the ``tl.math`` namespace).

They take floating-point values of any width and compute in that type (Triton
may require float32/float64 for some; we accept a superset).  A Python number
argument becomes a ``float32`` constant; integers must be converted first.
"""
from __future__ import annotations

from tilec.language.core import builtin, named_builtin


def _math1(name: str, what: str, dtypes: str = "floats"):
    def stub(x):
        pass
    return named_builtin(stub, name, f"Elementwise {what} of ``x`` ({dtypes}).  Also ``x.{name}()``.")


exp = _math1("exp", "e**x")
exp2 = _math1("exp2", "2**x")
log = _math1("log", "natural logarithm")
log2 = _math1("log2", "base-2 logarithm")
sqrt = _math1("sqrt", "square root (may be approximate on GPUs)")
sqrt_rn = _math1("sqrt_rn", "square root rounded to nearest")
rsqrt = _math1("rsqrt", "1 / sqrt(x)")
sin = _math1("sin", "sine")
cos = _math1("cos", "cosine")
erf = _math1("erf", "error function")
floor = _math1("floor", "round toward -inf")
ceil = _math1("ceil", "round toward +inf")
abs = _math1("abs", "absolute value", "any number type; unsigned and bool unchanged")


@builtin
def fma(x, y, z):
    """``x * y + z`` rounded once (floats; operands are promoted to a common type)."""


@builtin
def umulhi(x, y):
    """The high 32 (or 64) bits of the full product of two ``int32``/``uint32``/``int64``/``uint64``."""


@builtin
def fdiv(x, y, ieee_rounding=False):
    """Float division ``x / y`` (both must be floats)."""


@builtin
def div_rn(x, y):
    """Float division rounded to nearest."""
