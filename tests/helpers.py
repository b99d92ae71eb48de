"""Shared pieces of the end-to-end language tests: dtype tables, host arrays
(bf16 included), numpy references with Triton's semantics, a dtype-aware
``assert_close`` and hypothesis strategies for ragged shapes and values.

Tests launch kernels exactly as users do (``kernel[grid](arrays..., n, BLOCK=)``)
and compare what the kernel wrote with numpy.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

# One place for the budget of every property test here: the interpreter is
# slow and the machine has 2 cores.
PROPERTY = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])
FEW = settings(PROPERTY, max_examples=10)

SINTS = ("int8", "int16", "int32", "int64")
UINTS = ("uint8", "uint16", "uint32", "uint64")
INTS = SINTS + UINTS
FLOATS = ("float16", "bfloat16", "float32", "float64")
NUMBERS = INTS + FLOATS
ALL = ("int1",) + NUMBERS

# How each dtype is held by numpy for references (bf16 as float32).
NUMPY = {"int1": np.bool_, "bfloat16": np.float32,
         **{name: np.dtype(name).type for name in INTS + ("float16", "float32", "float64")}}


# --------------------------------------------------------------------------- #
# bf16 host arrays: numpy has no bf16, so they travel as torch or ml_dtypes arrays
# --------------------------------------------------------------------------- #

def _bf16_backend():
    """The module that can hold bf16 host arrays (torch or ml_dtypes), or None."""
    for name in ("torch", "ml_dtypes"):
        try:
            return __import__(name)
        except ImportError:
            continue
    return None


BF16 = _bf16_backend()


def require(dtype: str) -> None:
    """Skip the current test case when ``dtype`` cannot be passed from the host here."""
    if dtype == "bfloat16" and BF16 is None:
        pytest.skip("bf16 host arrays need torch or ml_dtypes, neither is installed")


def round_bf16(a) -> np.ndarray:
    """float values rounded to bf16 (nearest even), held as float32."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(np.asarray(a, np.float32))
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(nan, np.float32(np.nan), out)


def cast(a, dtype: str) -> np.ndarray:
    """``a`` converted to ``dtype`` the way a kernel's ``.to`` does for in-range values."""
    a = np.asarray(a)
    if dtype == "int1":
        return a != 0
    if a.dtype == object and dtype in INTS:
        return wrap(a, dtype)
    with np.errstate(all="ignore"):
        if dtype == "bfloat16":  # via f32: the double rounding is harmless for the values tests draw
            return round_bf16(a.astype(np.float64).astype(np.float32))
        return a.astype(NUMPY[dtype])


def to_host(a, dtype: str):
    """The array a kernel receives for numpy values ``a`` of ``dtype``."""
    a = np.ascontiguousarray(cast(a, dtype))
    if dtype != "bfloat16":
        return a
    # The upper halves of the float32 values, which round_bf16 made exact: a
    # conversion could change them (torch turns every NaN into 0xFFFF, a
    # negative one, where the reference sees a positive NaN).
    bits = (a.view(np.uint32) >> 16).astype(np.uint16)
    if BF16.__name__ == "torch":
        return BF16.from_numpy(bits.view(np.int16)).view(BF16.bfloat16)
    return bits.view(BF16.bfloat16)


def from_host(h) -> np.ndarray:
    """numpy values of a host array a kernel wrote (bf16 → float32)."""
    if BF16 is not None and BF16.__name__ == "torch" and isinstance(h, BF16.Tensor):
        return h.float().numpy()
    a = np.asarray(h)
    return a.astype(np.float32) if a.dtype.name == "bfloat16" else a


def empty(shape, dtype: str, fill=0):
    """A host output array of ``dtype`` filled with ``fill`` (a sentinel to catch masked lanes)."""
    return to_host(np.full(shape, fill), dtype)


# --------------------------------------------------------------------------- #
# Comparison
# --------------------------------------------------------------------------- #

def ulp(x, dtype: str) -> np.ndarray:
    """The spacing of ``dtype`` at |x| (float64), the unit of float tolerances."""
    x = np.abs(np.asarray(x, np.float64))
    if dtype == "bfloat16":
        return np.spacing(x.astype(np.float32)).astype(np.float64) * 2.0 ** 16
    with np.errstate(all="ignore"):
        return np.spacing(x.astype(NUMPY[dtype])).astype(np.float64)


def assert_close(got, want, dtype: str, ulps: float = 0, atol: float = 0, rtol: float = 0) -> None:
    """``got`` (a host array) equals ``want`` (exact values, any numpy dtype)
    rounded to ``dtype``, within ``ulps`` units in the last place or atol/rtol.

    Integers and booleans must match exactly.  NaN must meet NaN, inf the same inf.
    """
    got = from_host(got)
    if dtype not in FLOATS:
        np.testing.assert_array_equal(got, cast(want, dtype))
        return
    got64 = got.astype(np.float64)
    want64 = cast(want, dtype).astype(np.float64)
    nan_got, nan_want = np.isnan(got64), np.isnan(want64)
    assert (nan_got == nan_want).all(), f"NaN mismatch at {np.argwhere(nan_got != nan_want).ravel()[:8]}: got {got64[nan_got != nan_want][:8]}, want {want64[nan_got != nan_want][:8]}"
    ok = ~nan_want
    with np.errstate(all="ignore"):
        tol = ulps * ulp(want64, dtype) + atol + rtol * np.abs(want64)
        diff = np.abs(got64 - want64)
    good = (got64 == want64) | (diff <= tol)
    bad = ok & ~good
    assert not bad.any(), (f"{bad.sum()} of {bad.size} elements differ ({dtype}, ulps={ulps}, atol={atol}, rtol={rtol}); "
                           f"first at {np.argwhere(bad)[:4].tolist()}: got {got64[bad][:4]}, want {want64[bad][:4]}")


# --------------------------------------------------------------------------- #
# numpy references with Triton's integer semantics
# --------------------------------------------------------------------------- #

def c_div(x, y):
    """C integer division (truncates toward zero), in x's dtype."""
    q = np.abs(x.astype(object)) // np.abs(y.astype(object))
    return np.where((x < 0) != (y < 0), -q, q).astype(x.dtype)


def c_rem(x, y):
    """C remainder: the sign of the dividend."""
    return (x.astype(object) - c_div(x, y).astype(object) * y.astype(object)).astype(x.dtype)


def wrap(values, dtype: str) -> np.ndarray:
    """Python ints reduced modulo 2**bits into ``dtype`` (two's complement wrap)."""
    bits = np.dtype(dtype).itemsize * 8
    u = np.array([int(v) % (1 << bits) for v in np.ravel(values)], dtype=f"uint{bits}")
    return u.view(dtype).reshape(np.shape(values))


def umulhi(x, y, dtype: str) -> np.ndarray:
    """The high half of the unsigned full product, re-read as ``dtype``."""
    bits = np.dtype(dtype).itemsize * 8
    ux = x.view(f"uint{bits}").astype(object)
    uy = y.view(f"uint{bits}").astype(object)
    return wrap((ux * uy) >> bits, dtype)


def exact(a, dtype: str) -> np.ndarray:
    """Values to compute references with: Python ints (object arrays) for ints,
    so that nothing wraps before ``cast`` does; bools for int1; float64 for floats."""
    a = from_host(a) if not isinstance(a, np.ndarray) else a
    if dtype in INTS:
        return a.astype(object)
    return a.astype(np.bool_ if dtype == "int1" else np.float64)


# --------------------------------------------------------------------------- #
# Strategies
# --------------------------------------------------------------------------- #

sizes = st.integers(1, 45)


def _elements(dtype: str, finite: bool, lo=None, hi=None):
    if dtype == "int1":
        return st.booleans()
    if dtype in INTS:
        info = np.iinfo(dtype)
        return st.integers(info.min if lo is None else max(lo, info.min), info.max if hi is None else min(hi, info.max))
    width = {"float16": 16, "bfloat16": 32, "float32": 32, "float64": 64}[dtype]
    special = not finite and lo is None and hi is None
    lo, hi = (None if v is None else _representable(v, dtype) for v in (lo, hi))
    return st.floats(lo, hi, width=width, allow_nan=special, allow_infinity=special)


def _representable(v: float, dtype: str) -> float:
    """``v`` moved toward zero onto a value of ``dtype`` (hypothesis wants exact bounds)."""
    held = NUMPY[dtype]
    info = np.finfo(held)
    r = held(min(max(v, float(info.min)), float(info.max)))
    if abs(float(r)) > abs(v):
        r = np.nextafter(r, held(0))
    return float(r)


def values(dtype: str, n, finite: bool = False, lo=None, hi=None):
    """numpy arrays of ``n`` (an int or a shape) ``dtype`` values covering the whole range
    (extremes, negative, NaN/inf unless ``finite``); bf16 values are exactly bf16."""
    shape = n if isinstance(n, tuple) else (n,)
    held = np.float32 if dtype == "bfloat16" else NUMPY[dtype]
    arr = hnp.arrays(held, shape, elements=_elements(dtype, finite, lo, hi))
    return arr.map(round_bf16) if dtype == "bfloat16" else arr


def grid1(n: int, block: int) -> tuple:
    return ((n + block - 1) // block,)
