"""The named math functions of the ``math_call`` op: Triton's libdevice
functions (``tanh``, ``erfinv``, ``ldexp``, ``isnan``, ``popc``...), each with
its signature, its definition on numpy arrays and the math library's name
for it.

One table (``FUNCTIONS``) serves every room: the front end checks a call
against ``params``/``kinds``, the verifier and ``infer_types`` read the
result's type from ``result``, the interpreter computes ``reference``, and
codegen calls the target's math library by ``library`` (C's base name:
``tanh`` is ``tanhf``/``tanh`` in the C library) or, where ``library`` is
None, builds the function from LLVM instructions.

Definitions.  Float functions are computed in float64 and rounded once to
the operand type (f16 and bf16 included), so the interpreter is within half
an ulp of the float64 reference for f32 and narrower; for f64 it is as exact
as the reference: numpy's and the C library's functions (``math.lgamma``,
``math.erfc``, the C library's Bessel functions ``j0``... through ctypes),
within an ulp or two, and series or Newton steps written here for the
functions neither has (``erfinv``, ``erfcx``, ``cyl_bessel_i1``), to about
1e-15.  Results libdevice leaves to the implementation follow the C
standard: ``ilogb(0)`` and ``ilogb(nan)`` are INT_MIN, ``ilogb(inf)`` INT_MAX.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

# Operand letters of ``MathFunction.params``.
VALUE = "x"   # the call's value type T (a float or an int, by ``kinds``)
INT32 = "n"   # an int32 (an exponent or a Bessel order)

# ``MathFunction.result``: T itself or a fixed type.
SAME = "T"


@dataclass(frozen=True)
class MathFunction:
    """One function of ``math_call``.

    ``params``: a letter an operand, ``VALUE`` (type T) or ``INT32``;
    ``kinds``: ``"float"`` or ``"int"``, what T may be (``int_bits`` limits
    an int T's width); ``result``: ``SAME`` or an IR type name (``"i32"``,
    ``"i1"``, ``"i64"``); ``reference``: the definition, on float64 arrays
    for float T (int32 operands as int64), on T's own arrays for int T;
    ``library``: the math library's base name, or None where codegen builds
    the function itself; ``exact_in``: the operand type is the type of the
    computation (``nextafter`` steps in T, not in float64)."""

    name: str
    params: str
    kinds: str
    result: str
    reference: Callable
    library: Optional[str]
    exact_in: bool = False
    int_bits: tuple = (32, 64)


# --------------------------------------------------------------------------- #
# References for the functions numpy and Python's math lack
# --------------------------------------------------------------------------- #

def _elementwise(fn: Callable) -> Callable:
    """A Python float function applied to every element (NaN where it raises)."""
    def apply(*xs):
        shape = np.broadcast(*xs).shape
        flat = [np.broadcast_to(x, shape).ravel() for x in xs]
        out = np.empty(flat[0].size if flat else 0, np.float64)
        for i, args in enumerate(zip(*flat)):
            try:
                out[i] = fn(*(a.item() for a in args))
            except (ValueError, OverflowError) as e:
                out[i] = _limit_of(fn, args, e)
        return out.reshape(shape)
    return apply


def _limit_of(fn: Callable, args: tuple, error: Exception) -> float:
    """What C gives where Python's ``math`` raises: gamma's signed infinity past
    overflow and at zero (NaN at the negative integers), lgamma's inf at its
    poles, inf past any other overflow, else NaN."""
    x = float(args[0])
    if fn is math.gamma:
        return math.nan if x < 0 and x == math.floor(x) else math.copysign(math.inf, x)
    if isinstance(error, OverflowError) or (fn is math.lgamma and x == math.floor(x)):
        return math.inf
    return math.nan


@functools.cache
def _libm():
    """The C math library (for the Bessel functions), loaded once."""
    lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    for name in ("j0", "j1", "y0", "y1"):
        getattr(lib, name).restype, getattr(lib, name).argtypes = ctypes.c_double, [ctypes.c_double]
    for name in ("jn", "yn"):
        getattr(lib, name).restype, getattr(lib, name).argtypes = ctypes.c_double, [ctypes.c_int, ctypes.c_double]
    return lib


def _bessel(name: str) -> Callable:
    """The C library's Bessel function ``name`` (``j0``... ``yn``), elementwise."""
    return _elementwise(lambda *args: getattr(_libm(), name)(*args))


def _sinpi(x):
    """sin(pi x), reduced exactly to |r| <= 1/2 first (so large x and the zeros are exact)."""
    r = np.fmod(x, 2.0)
    r = np.where(r > 1, r - 2, np.where(r < -1, r + 2, r))
    r = np.where(r > 0.5, 1 - r, np.where(r < -0.5, -1 - r, r))
    return np.where(np.isinf(x), np.nan, np.sin(np.pi * r))


def _cospi(x):
    return _sinpi(0.5 - np.fmod(np.abs(x), 2.0)) + np.where(np.isinf(x), np.nan, 0.0)


def _round_half_away(x):
    """C ``round``: halves away from zero."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _logb(x):
    """The unbiased exponent, as a float (C ``logb``): -inf at 0, inf at +-inf."""
    _, e = np.frexp(x)
    return np.where(x == 0, -np.inf, np.where(np.isfinite(x), e - 1.0, np.abs(x)))


def _ilogb(x):
    """The unbiased exponent as an int32; 0 and NaN give INT_MIN, +-inf INT_MAX."""
    _, e = np.frexp(np.where(np.isfinite(x), x, 1.0))
    low, high = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    return np.where((x == 0) | np.isnan(x), low, np.where(np.isinf(x), high, e - 1)).astype(np.int32)


def _fdim(x, y):
    return np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(x > y, x - y, 0.0))


def _scaled_norm(*xs):
    """sqrt of the sum of squares without overflow: inf if any is inf, even beside a NaN."""
    m = functools.reduce(np.maximum, [np.abs(x) for x in xs])
    safe = np.where((m == 0) | ~np.isfinite(m), 1.0, m)
    norm = safe * np.sqrt(sum((x / safe) ** 2 for x in xs))
    norm = np.where(m == 0, 0.0, norm)
    return np.where(functools.reduce(np.logical_or, [np.isinf(x) for x in xs]), np.inf, norm)


def _erfcx(x):
    """exp(x^2) erfc(x): directly up to 25, a continued fraction beyond (where erfc underflows)."""
    small = np.minimum(x, 25.0)
    direct = np.exp(small * small) * _ERFC(small)
    large = np.maximum(x, 25.0)
    frac = large.copy()
    for k in range(40, 0, -1):
        frac = large + (k / 2) / frac
    return np.where(x <= 25.0, direct, 1 / (math.sqrt(math.pi) * frac))


def _newton(step: Callable, x0, iterations: int = 40):
    """Newton's method: ``x -= step(x)`` from ``x0`` (where a step is not finite, x stays)."""
    x = x0
    for _ in range(iterations):
        dx = step(x)
        x = x - np.where(np.isfinite(dx), dx, 0.0)
    return x


_ERF = _elementwise(math.erf)
_ERFC = _elementwise(math.erfc)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _erfcinv_upper(y):
    """erfc^-1 on (0, 1]: Newton on log(erfc x) = log(erfcx x) - x^2, exact in the far tail too."""
    log_y = np.log(y)
    def step(x):
        e = _erfcx(x)
        return (np.log(e) - x * x - log_y) / (-_TWO_OVER_SQRT_PI / e)
    return np.abs(_newton(step, np.sqrt(np.maximum(-log_y, 0.0))))


def _erfcinv(y):
    """erfc^-1 on [0, 2]: +inf at 0, -inf at 2, NaN outside; erfcinv(2 - y) = -erfcinv(y)."""
    upper = np.where((y > 0) & (y <= 1), y, 1.0)
    lower = np.where((y > 1) & (y < 2), 2 - y, 1.0)
    inside = np.where(y <= 1, _erfcinv_upper(upper), -_erfcinv_upper(lower))
    limits = np.where(y == 0, np.inf, np.where(y == 2, -np.inf, np.nan))
    return np.where((y > 0) & (y < 2), inside, limits)


def _erfinv(y):
    """erf^-1 on [-1, 1]: Newton on erf near 0, erfcinv(1 - |y|) (exact) toward +-1."""
    a = np.abs(y)
    near = np.where(a <= 0.5, y, 0.0)
    center = _newton(lambda x: (_ERF(x) - near) / (_TWO_OVER_SQRT_PI * np.exp(-x * x)), near * math.sqrt(math.pi) / 2)
    tail = np.copysign(_erfcinv(np.where(a > 0.5, 1 - a, 0.5)), y)
    return np.where(a <= 0.5, center, np.where(a <= 1, tail, np.nan))


def _bessel_i1(x):
    """The modified Bessel function I1: its series of positive terms (a few float64
    ulps; I0 is numpy's ``i0``)."""
    a = np.minimum(np.abs(x), 720.0)  # beyond, the result overflows float64 anyway
    half_sq = (a / 2) ** 2
    term = a / 2
    total = term.copy()
    for k in range(1, 1000):
        term = term * half_sq / (k * (k + 1))
        total += term
    return np.copysign(np.where(np.abs(x) > 713, np.inf, total), x)


def _saturate(x):
    return np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0))


# --------------------------------------------------------------------------- #
# Integer references (on T's own arrays)
# --------------------------------------------------------------------------- #

def _unsigned(x):
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _popc(x):
    u = _unsigned(x).astype(np.uint64)
    count = np.zeros(u.shape, np.int32)
    for _ in range(x.dtype.itemsize * 8):
        count += (u & np.uint64(1)).astype(np.int32)
        u = u >> np.uint64(1)
    return count


def _clz(x):
    """Leading zeros of the bit pattern (the width for 0)."""
    u, bits = _unsigned(x).astype(np.uint64), x.dtype.itemsize * 8
    count = np.full(u.shape, bits, np.int32)
    for b in range(bits):
        count = np.where((u >> np.uint64(b)) != 0, bits - 1 - b, count)
    return count.astype(np.int32)


def _ffs(x):
    """1 + the index of the lowest set bit; 0 for 0."""
    u, bits = _unsigned(x).astype(np.uint64), x.dtype.itemsize * 8
    pos = np.zeros(u.shape, np.int32)
    for b in range(bits - 1, -1, -1):
        pos = np.where((u >> np.uint64(b)) & np.uint64(1) != 0, b + 1, pos)
    return pos


def _brev(x):
    u, bits = _unsigned(x).astype(np.uint64), x.dtype.itemsize * 8
    out = np.zeros(u.shape, np.uint64)
    for b in range(bits):
        out |= ((u >> np.uint64(b)) & np.uint64(1)) << np.uint64(bits - 1 - b)
    return out.astype(_unsigned(x).dtype).view(x.dtype)


def _mulhi(a, b):
    """The high half of the full product, signed or unsigned by T."""
    bits = a.dtype.itemsize * 8
    if bits == 32:
        return ((a.astype(np.int64) * b.astype(np.int64)) >> 32).astype(a.dtype)
    wide = [int(p) * int(q) >> 64 for p, q in zip(*(np.broadcast_arrays(a, b)[i].ravel() for i in range(2)))]
    out = np.array([w & (2**64 - 1) for w in wide], np.uint64).view(a.dtype)
    return out.reshape(np.broadcast(a, b).shape)


def _mul24(a, b):
    """The low 32 bits of the product of the low 24 bits (sign-extended for int32)."""
    def low24(v):
        u = v.astype(np.int64) & 0xFFFFFF
        return u - ((u & 0x800000) << 1) if v.dtype.kind == "i" else u
    return (low24(a) * low24(b)).astype(np.int64).astype(a.dtype)


def _byte_perm(x, y, s):
    """Byte ``i`` of the result is byte ``(s >> 4i) & 7`` of the 8 bytes ``y:x`` (x the low four)."""
    wide = (y.view(np.uint32).astype(np.uint64) << np.uint64(32)) | x.view(np.uint32).astype(np.uint64)
    sel = s.view(np.uint32).astype(np.uint64)
    out = np.zeros(np.broadcast(x, y, s).shape, np.uint64)
    for i in range(4):
        byte = (wide >> (((sel >> np.uint64(4 * i)) & np.uint64(7)) * np.uint64(8))) & np.uint64(0xFF)
        out |= byte << np.uint64(8 * i)
    return out.astype(np.uint32).view(x.dtype)


def _hadd(rounding: int) -> Callable:
    """``(a + b + rounding) >> 1`` without overflow."""
    return lambda a, b: ((a.astype(np.int64) + b.astype(np.int64) + rounding) >> 1).astype(a.dtype)


# --------------------------------------------------------------------------- #
# The table
# --------------------------------------------------------------------------- #

def _reciprocal(fn: Callable) -> Callable:
    return lambda *xs: 1.0 / fn(*xs)


_FLOAT_1 = {  # name: (reference, C/libdevice base name)
    "acos": (np.arccos, "acos"), "acosh": (np.arccosh, "acosh"), "asin": (np.arcsin, "asin"),
    "asinh": (np.arcsinh, "asinh"), "atan": (np.arctan, "atan"), "atanh": (np.arctanh, "atanh"),
    "cbrt": (np.cbrt, "cbrt"), "rcbrt": (_reciprocal(np.cbrt), "rcbrt"),
    "cosh": (np.cosh, "cosh"), "sinh": (np.sinh, "sinh"), "tanh": (np.tanh, "tanh"), "tan": (np.tan, "tan"),
    "sinpi": (_sinpi, "sinpi"), "cospi": (_cospi, "cospi"),
    "erfc": (_ERFC, "erfc"), "erfcx": (_erfcx, "erfcx"), "erfinv": (_erfinv, "erfinv"),
    "erfcinv": (_erfcinv, "erfcinv"), "normcdf": (lambda x: 0.5 * _ERFC(-x / math.sqrt(2)), "normcdf"),
    "normcdfinv": (lambda x: -math.sqrt(2) * _erfcinv(2 * x), "normcdfinv"),
    "exp": (np.exp, "exp"), "exp10": (lambda x: np.power(10.0, x), "exp10"), "expm1": (np.expm1, "expm1"),
    "log10": (np.log10, "log10"), "log1p": (np.log1p, "log1p"), "logb": (_logb, "logb"),
    "lgamma": (_elementwise(math.lgamma), "lgamma"), "tgamma": (_elementwise(math.gamma), "tgamma"),
    "j0": (_bessel("j0"), "j0"), "j1": (_bessel("j1"), "j1"), "y0": (_bessel("y0"), "y0"), "y1": (_bessel("y1"), "y1"),
    "cyl_bessel_i0": (np.i0, "cyl_bessel_i0"), "cyl_bessel_i1": (_bessel_i1, "cyl_bessel_i1"),
    "trunc": (np.trunc, "trunc"), "rint": (np.rint, "rint"), "nearbyint": (np.rint, "nearbyint"),
    "round": (_round_half_away, "round"), "saturatef": (_saturate, None),
}
_FLOAT_2 = {
    "atan2": (np.arctan2, "atan2"), "copysign": (np.copysign, "copysign"), "fdim": (_fdim, "fdim"),
    "fmod": (np.fmod, "fmod"), "remainder": (_elementwise(math.remainder), "remainder"),
    "hypot": (np.hypot, "hypot"), "rhypot": (_reciprocal(np.hypot), "rhypot"),
    "pow": (np.power, "pow"),
}
# f32-only fast approximations: libdevice's own versions; defined as the exact function.
_FAST = {
    "fast_sinf": (np.sin, "fast_sin"), "fast_cosf": (np.cos, "fast_cos"), "fast_tanf": (np.tan, "fast_tan"),
    "fast_expf": (np.exp, "fast_exp"), "fast_exp10f": (lambda x: np.power(10.0, x), "fast_exp10"),
    "fast_logf": (np.log, "fast_log"), "fast_log2f": (np.log2, "fast_log2"), "fast_log10f": (np.log10, "fast_log10"),
}


def _table() -> dict[str, MathFunction]:
    fns = [MathFunction(n, "x", "float", SAME, ref, lib) for n, (ref, lib) in _FLOAT_1.items()]
    fns += [MathFunction(n, "xx", "float", SAME, ref, lib) for n, (ref, lib) in _FLOAT_2.items()]
    fns += [MathFunction(n, "x", "float", SAME, ref, lib) for n, (ref, lib) in _FAST.items()]
    fns += [
        MathFunction("fast_powf", "xx", "float", SAME, np.power, "fast_pow"),
        MathFunction("fast_dividef", "xx", "float", SAME, np.true_divide, "fast_fdivide"),
        MathFunction("nextafter", "xx", "float", SAME, np.nextafter, "nextafter", exact_in=True),
        MathFunction("norm3d", "xxx", "float", SAME, _scaled_norm, "norm3d"),
        MathFunction("rnorm3d", "xxx", "float", SAME, _reciprocal(_scaled_norm), "rnorm3d"),
        MathFunction("norm4d", "xxxx", "float", SAME, _scaled_norm, "norm4d"),
        MathFunction("rnorm4d", "xxxx", "float", SAME, _reciprocal(_scaled_norm), "rnorm4d"),
        MathFunction("ldexp", "xn", "float", SAME, np.ldexp, "ldexp"),
        MathFunction("scalbn", "xn", "float", SAME, np.ldexp, "scalbn"),
        MathFunction("powi", "xn", "float", SAME, lambda x, n: np.power(x, n.astype(np.float64)), "powi"),
        MathFunction("jn", "nx", "float", SAME, _bessel("jn"), "jn"),
        MathFunction("yn", "nx", "float", SAME, _bessel("yn"), "yn"),
        MathFunction("ilogb", "x", "float", "i32", _ilogb, "ilogb"),
        MathFunction("llrint", "x", "float", "i64", lambda x: np.rint(x).astype(np.int64), "llrint"),
        MathFunction("llround", "x", "float", "i64", lambda x: _round_half_away(x).astype(np.int64), "llround"),
        MathFunction("isnan", "x", "float", "i1", np.isnan, None),
        MathFunction("isinf", "x", "float", "i1", np.isinf, None),
        MathFunction("signbit", "x", "float", "i32", lambda x: np.signbit(x).astype(np.int32), None),
        MathFunction("finite", "x", "float", "i32", lambda x: np.isfinite(x).astype(np.int32), None),
        MathFunction("clz", "x", "int", "i32", _clz, None),
        MathFunction("popc", "x", "int", "i32", _popc, None),
        MathFunction("ffs", "x", "int", "i32", _ffs, None),
        MathFunction("brev", "x", "int", SAME, _brev, None),
        MathFunction("mulhi", "xx", "int", SAME, _mulhi, None),
        MathFunction("mul24", "xx", "int", SAME, _mul24, None, int_bits=(32,)),
        MathFunction("hadd", "xx", "int", SAME, _hadd(0), None, int_bits=(32,)),
        MathFunction("rhadd", "xx", "int", SAME, _hadd(1), None, int_bits=(32,)),
        MathFunction("byte_perm", "xxx", "int", SAME, _byte_perm, None, int_bits=(32,)),
    ]
    return {f.name: f for f in fns}


FUNCTIONS: dict[str, MathFunction] = _table()
