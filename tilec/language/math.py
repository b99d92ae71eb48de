"""Elementwise math functions (``tl.exp``... and the ``tl.math`` namespace).

They take floating-point values of any width and compute in that type (Triton
may require float32/float64 for some; we accept a superset).  A Python number
argument becomes a ``float32`` constant; integers must be converted first.
"""
from __future__ import annotations

import inspect

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


# --------------------------------------------------------------------------- #
# libdevice's functions (Triton's ``tl.extra.libdevice``; ``tl.math`` has them too,
# as Triton 2's did).  Parameters are named as Triton's: ``arg0``, ``arg1``...
# --------------------------------------------------------------------------- #

def libdevice_stub(name: str, arity: int, what: str):
    """The stub of libdevice's ``name``, taking ``arity`` tensors (``arg0``...)."""
    def stub(*args):
        pass
    stub.__signature__ = inspect.Signature(
        [inspect.Parameter(f"arg{i}", inspect.Parameter.POSITIONAL_OR_KEYWORD) for i in range(arity)])
    return named_builtin(stub, name, f"Elementwise {what}.")


# name: (arity, what it computes).  Floats are f32/f64 as in Triton (f16/bf16 also
# accepted, computed in f32); docs/language.md lists the types and error bounds.
LIBDEVICE_FUNCTIONS = {
    "acos": (1, "arc cosine"), "acosh": (1, "inverse hyperbolic cosine"), "asin": (1, "arc sine"),
    "asinh": (1, "inverse hyperbolic sine"), "atan": (1, "arc tangent"), "atanh": (1, "inverse hyperbolic tangent"),
    "atan2": (2, "arc tangent of arg0 / arg1, in the quadrant of (arg1, arg0)"),
    "cbrt": (1, "cube root"), "rcbrt": (1, "1 / cube root"), "cosh": (1, "hyperbolic cosine"),
    "sinh": (1, "hyperbolic sine"), "tanh": (1, "hyperbolic tangent"), "tan": (1, "tangent"),
    "sinpi": (1, "sin(pi x)"), "cospi": (1, "cos(pi x)"), "erfc": (1, "complementary error function"),
    "erfcx": (1, "scaled complementary error function exp(x^2) erfc(x)"), "erfinv": (1, "inverse error function"),
    "erfcinv": (1, "inverse complementary error function"), "normcdf": (1, "standard normal CDF"),
    "normcdfinv": (1, "inverse of the standard normal CDF"), "exp10": (1, "10**x"), "expm1": (1, "e**x - 1"),
    "log10": (1, "base-10 logarithm"), "log1p": (1, "log(1 + x)"), "logb": (1, "unbiased exponent, as a float"),
    "ilogb": (1, "unbiased exponent, as an int32"), "lgamma": (1, "log |gamma(x)|"), "tgamma": (1, "gamma function"),
    "j0": (1, "Bessel function J0"), "j1": (1, "Bessel function J1"), "y0": (1, "Bessel function Y0"),
    "y1": (1, "Bessel function Y1"), "jn": (2, "Bessel function J of int32 order arg0 at arg1"),
    "yn": (2, "Bessel function Y of int32 order arg0 at arg1"), "cyl_bessel_i0": (1, "modified Bessel function I0"),
    "cyl_bessel_i1": (1, "modified Bessel function I1"), "trunc": (1, "round toward zero"),
    "rint": (1, "round to nearest even"), "nearbyint": (1, "round to nearest even"),
    "round": (1, "round halves away from zero"), "llrint": (1, "round to nearest even, as int64"),
    "llround": (1, "round halves away from zero, as int64"), "saturatef": (1, "clamp to [0, 1] (NaN gives 0)"),
    "copysign": (2, "|arg0| with arg1's sign"), "fdim": (2, "max(arg0 - arg1, 0)"), "fmod": (2, "C fmod"),
    "remainder": (2, "IEEE remainder (quotient rounded to nearest even)"), "hypot": (2, "sqrt(arg0^2 + arg1^2)"),
    "rhypot": (2, "1 / hypot"), "pow": (2, "arg0 ** arg1 (arg1 float, or int32)"), "nextafter": (2, "next value after arg0 toward arg1"),
    "norm3d": (3, "Euclidean norm of three values"), "rnorm3d": (3, "1 / norm3d"),
    "norm4d": (4, "Euclidean norm of four values"), "rnorm4d": (4, "1 / norm4d"),
    "ldexp": (2, "arg0 * 2**arg1 (arg1 int32)"), "scalbn": (2, "arg0 * 2**arg1 (arg1 int32)"),
    "isnan": (1, "is NaN (int1)"), "isinf": (1, "is +-inf (int1)"), "signbit": (1, "sign bit set (int32 1/0)"),
    "finitef": (1, "is finite (float32; int32 1/0)"), "isfinited": (1, "is finite (float64; int32 1/0)"),
    "fast_sinf": (1, "fast approximate sine (float32)"), "fast_cosf": (1, "fast approximate cosine (float32)"),
    "fast_tanf": (1, "fast approximate tangent (float32)"), "fast_expf": (1, "fast approximate e**x (float32)"),
    "fast_exp10f": (1, "fast approximate 10**x (float32)"), "fast_logf": (1, "fast approximate log (float32)"),
    "fast_log2f": (1, "fast approximate log2 (float32)"), "fast_log10f": (1, "fast approximate log10 (float32)"),
    "fast_powf": (2, "fast approximate power (float32)"), "fast_dividef": (2, "fast approximate arg0 / arg1 (float32)"),
    "byte_perm": (3, "bytes of arg1:arg0 picked by the nibbles of arg2 (int32)"),
    "clz": (1, "count of leading zero bits (int32/int64 -> int32)"), "popc": (1, "count of set bits (-> int32)"),
    "ffs": (1, "1 + index of the lowest set bit, 0 for 0 (-> int32)"), "brev": (1, "bits reversed"),
    "mulhi": (2, "high half of the full product (int32/uint32/int64/uint64)"),
    "mul24": (2, "product of the low 24 bits (int32/uint32)"), "hadd": (2, "(arg0 + arg1) >> 1 without overflow"),
    "rhadd": (2, "(arg0 + arg1 + 1) >> 1 without overflow"),
    "add_rn": (2, "arg0 + arg1 rounded to nearest"), "sub_rn": (2, "arg0 - arg1 rounded to nearest"),
    "mul_rn": (2, "arg0 * arg1 rounded to nearest"), "fma_rn": (3, "arg0 * arg1 + arg2 rounded once to nearest"),
    "rcp_rn": (1, "1 / x rounded to nearest"),
}
# Conversions: <source>2<destination>_<rounding>, and reinterpretations of the bits.
_ROUNDINGS = {"rn": "to nearest even", "rz": "toward zero", "rd": "down", "ru": "up"}
_INTS = {"int": "int32", "uint": "uint32 (its bits as int32)", "ll": "int64", "ull": "uint64 (its bits as int64)"}
for _src, _src_type in (("float", "float32"), ("double", "float64")):
    for _dst, _dst_type in _INTS.items():
        for _mode, _how in _ROUNDINGS.items():
            LIBDEVICE_FUNCTIONS[f"{_src}2{_dst}_{_mode}"] = (1, f"{_src_type} -> {_dst_type}, rounded {_how}")
for _mode in ("rn", "rz"):
    LIBDEVICE_FUNCTIONS[f"double2float_{_mode}"] = (1, f"float64 -> float32, rounded {_ROUNDINGS[_mode]}")
for _src, _src_type in {"int": "int32", "uint": "uint32", "ll": "int64", "ull": "uint64"}.items():
    for _dst, _dst_type in (("float", "float32"), ("double", "float64")):
        LIBDEVICE_FUNCTIONS[f"{_src}2{_dst}_rn"] = (1, f"{_src_type} -> {_dst_type}, rounded to nearest even")
LIBDEVICE_FUNCTIONS.update({
    "int_as_float": (1, "the bits of an int32 as a float32"), "float_as_int": (1, "the bits of a float32 as an int32"),
    "uint_as_float": (1, "the bits of a uint32 as a float32"),
    "float_as_uint": (1, "the bits of a float32 as an int32 (Triton's type for it)"),
    "longlong_as_double": (1, "the bits of an int64 as a float64"),
    "double_as_longlong": (1, "the bits of a float64 as an int64"),
    "double2loint": (1, "the low 32 bits of a float64, as an int32"),
    "double2hiint": (1, "the high 32 bits of a float64, as an int32"),
    "hiloint2double": (2, "the float64 whose high 32 bits are arg0 and low 32 bits arg1 (int32s)"),
})

for _name, (_arity, _what) in LIBDEVICE_FUNCTIONS.items():
    globals()[_name] = libdevice_stub(_name, _arity, _what)
del _name, _arity, _what, _src, _src_type, _dst, _dst_type, _mode, _how
