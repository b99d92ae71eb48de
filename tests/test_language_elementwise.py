"""Elementwise language ops, run through the public API against numpy:
operators, math functions, casts, ``where``, ``maximum``/``minimum``/``clamp``,
``fma``, ``cdiv``, ``umulhi`` and Triton's type promotion.

Each op is a small ``@tilec.jit`` function handed to one generic kernel as a
constexpr (``FN``), so a table row is all a new op needs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from kernels.ops import (
    op_add, op_sub, op_mul, op_truediv, op_fdiv, op_div_rn, op_floordiv, op_mod, op_and, op_or, op_xor, op_shl,
    op_shr, op_eq, op_ne, op_lt, op_le, op_gt, op_ge, op_maximum, op_minimum, op_umulhi, op_cdiv, op_neg,
    op_invert, op_abs, op_exp, op_exp2, op_log, op_log2, op_sqrt, op_sqrt_rn, op_rsqrt, op_sin, op_cos,
    op_sigmoid, op_erf, op_floor, op_ceil, op_method_abs, op_where, op_fma, op_clamp, op_maximum_nan,
    op_minimum_nan,
)
from helpers import (ALL, FLOATS, INTS, FEW, NUMBERS, PROPERTY, SINTS, UINTS, assert_close, c_div, c_rem, cast, empty,
                     exact, from_host, grid1, require, to_host, ulp, values)

BLOCK = 16
PAD = 3  # output slots past n that masked lanes must leave alone


@tilec.jit
def unary_kernel(x_ptr, z_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(z_ptr + offs, FN(x), mask=mask)


@tilec.jit
def binary_kernel(x_ptr, y_ptr, z_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(z_ptr + offs, FN(x, y), mask=mask)


@tilec.jit
def ternary_kernel(x_ptr, y_ptr, w_ptr, z_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    w = tl.load(w_ptr + offs, mask=mask)
    tl.store(z_ptr + offs, FN(x, y, w), mask=mask)


def run_elementwise(kernel, fn, inputs, out_dtype, sentinel=7):
    """Launch ``kernel`` over numpy ``inputs`` (value, dtype pairs); returns the output
    after checking that the PAD slots masked lanes skip still hold ``sentinel``."""
    n = len(inputs[0][0])
    z = empty(n + PAD, out_dtype, fill=sentinel)
    kernel[grid1(n, BLOCK)](*(to_host(v, d) for v, d in inputs), z, n, FN=fn, BLOCK=BLOCK)
    assert_close(from_host(z)[n:], np.full(PAD, sentinel), out_dtype)
    return from_host(z)[:n]


# --------------------------------------------------------------------------- #
# Binary operators
# --------------------------------------------------------------------------- #

def nonzero_divisor(x, y, dtype):
    """Divisors without 0 and without the overflowing ``INT_MIN / -1``."""
    y = np.where(y == 0, 1, y).astype(y.dtype)
    if dtype in SINTS:
        y = np.where((x == np.iinfo(dtype).min) & (y == -1), 1, y).astype(y.dtype)
    return y


def shift_amount(x, y, dtype):
    """Shift counts in [0, bits): larger ones are undefined in Triton (LLVM poison)."""
    return (y.astype(object) % (np.dtype(dtype).itemsize * 8)).astype(y.dtype)


def positive(x, y, dtype):
    return np.clip(np.abs(y.astype(object)), 1, np.iinfo(dtype).max // 2).astype(y.dtype)


def same(dtype):
    return dtype


def boolean(dtype):
    return "int1"


def true_div_type(dtype):
    """``/`` computes in f32 for ints and halfs (Triton's rule), else in the float type."""
    return dtype if dtype in ("float32", "float64") else "float32"


def mod_type(dtype):
    return "float32" if dtype in ("float16", "bfloat16") else dtype


def true_div(x, y, dtype):
    t = true_div_type(dtype)
    with np.errstate(all="ignore"):
        return cast(x, t).astype(np.float64) / cast(y, t).astype(np.float64)


def fmod_or_c_rem(x, y, dtype):
    if dtype in INTS:
        return c_rem(x, y)
    with np.errstate(all="ignore"):
        return np.fmod(x, y)


def fmax(x, y, dtype):
    return np.fmax(x, y) if dtype in FLOATS else np.maximum(x, y)


def fmin(x, y, dtype):
    return np.fmin(x, y) if dtype in FLOATS else np.minimum(x, y)


def umulhi(x, y, dtype):
    bits = np.dtype(dtype).itemsize * 8
    return ((x % (1 << bits)) * (y % (1 << bits))) >> bits


@dataclass
class Binary:
    """One binary op: the jit fn, its numpy reference on exact values, the dtypes it
    accepts, its result dtype, how to make y legal, and its float tolerance in ulps."""
    fn: object
    ref: Callable
    dtypes: tuple
    result: Callable = same
    legal_y: Callable | None = None
    ulps: float = 0


BINARY = {
    "add": Binary(op_add, lambda x, y, d: x + y, NUMBERS),
    "sub": Binary(op_sub, lambda x, y, d: x - y, NUMBERS),
    "mul": Binary(op_mul, lambda x, y, d: x * y, NUMBERS),
    "truediv": Binary(op_truediv, true_div, NUMBERS, true_div_type, None, 2),
    "fdiv": Binary(op_fdiv, true_div, FLOATS, true_div_type, None, 2),
    "div_rn": Binary(op_div_rn, true_div, ("float32", "float64")),
    "floordiv": Binary(op_floordiv, lambda x, y, d: c_div(x, y), INTS, same, nonzero_divisor),
    "mod": Binary(op_mod, fmod_or_c_rem, NUMBERS, mod_type, nonzero_divisor),
    "and": Binary(op_and, lambda x, y, d: x & y, ("int1",) + INTS),
    "or": Binary(op_or, lambda x, y, d: x | y, ("int1",) + INTS),
    "xor": Binary(op_xor, lambda x, y, d: x ^ y, ("int1",) + INTS),
    "shl": Binary(op_shl, lambda x, y, d: x << y, INTS, same, shift_amount),
    "shr": Binary(op_shr, lambda x, y, d: x >> y, INTS, same, shift_amount),
    "eq": Binary(op_eq, lambda x, y, d: x == y, ALL, boolean),
    "ne": Binary(op_ne, lambda x, y, d: x != y, ALL, boolean),
    "lt": Binary(op_lt, lambda x, y, d: x < y, NUMBERS, boolean),
    "le": Binary(op_le, lambda x, y, d: x <= y, NUMBERS, boolean),
    "gt": Binary(op_gt, lambda x, y, d: x > y, NUMBERS, boolean),
    "ge": Binary(op_ge, lambda x, y, d: x >= y, NUMBERS, boolean),
    "maximum": Binary(op_maximum, fmax, NUMBERS),
    "minimum": Binary(op_minimum, fmin, NUMBERS),
    "umulhi": Binary(op_umulhi, umulhi, ("int32", "uint32", "int64", "uint64")),
    "cdiv": Binary(op_cdiv, lambda x, y, d: (x + y - 1) // y, ("int32", "int64", "uint32"), same, positive),
}

# Known bugs of other rooms, routed by the lead; strict, so a fix turns them into failures to remove.
BINARY_CASES = [(name, d) for name, op in BINARY.items() for d in op.dtypes]


@pytest.mark.parametrize("name,dtype", BINARY_CASES)
@PROPERTY
@given(data=st.data(), n=st.integers(1, 40))
def test_binary_op(name, dtype, data, n):
    require(dtype)
    op = BINARY[name]
    x = data.draw(values(dtype, n, lo=0 if name == "cdiv" else None, hi=2**30 if name == "cdiv" else None))
    y = data.draw(values(dtype, n))
    if op.legal_y:
        y = op.legal_y(x, y, dtype)
    out = op.result(dtype)
    got = run_elementwise(binary_kernel, op.fn, [(x, dtype), (y, dtype)], out)
    with np.errstate(all="ignore"):
        want = op.ref(exact(x, dtype), exact(y, dtype), dtype)
    assert_close(got, np.asarray(want), out, ulps=op.ulps)


# --------------------------------------------------------------------------- #
# Unary operators and math functions
# --------------------------------------------------------------------------- #

def invert(x, dtype):
    return ~x if dtype == "int1" else -x - 1


def sigmoid(x):
    with np.errstate(all="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


@dataclass
class Unary:
    """One unary op: jit fn, numpy reference on exact values, dtypes, ulps per float
    dtype (f16/bf16, f32, f64), the finite range to draw from (None: everything)
    and whether float32/bfloat16 results under 2^-126 may be 0 (``flushes``)."""
    fn: object
    ref: Callable
    dtypes: tuple
    ulps: tuple = (0, 0, 0)
    bound: float | None = None
    flushes: bool = False


# GPUs' exp2 is Triton's, ex2.approx.ftz on NVIDIA and the bare v_exp_f32 on AMD: results under 2^-126 are 0 there
FLUSHED = 2.0 ** -126


MATH = (1, 4, 2)  # transcendental functions: computed in f64 and rounded, then a few ulps

UNARY = {
    "neg": Unary(op_neg, lambda x, d: -x, NUMBERS),
    "invert": Unary(op_invert, invert, ("int1",) + INTS),
    "abs": Unary(op_abs, lambda x, d: abs(x), NUMBERS),
    "method_abs": Unary(op_method_abs, lambda x, d: abs(x), ("int32", "float32")),
    "exp": Unary(op_exp, lambda x, d: np.exp(x), FLOATS, MATH),
    "exp2": Unary(op_exp2, lambda x, d: np.exp2(x), FLOATS, MATH, flushes=True),
    "log": Unary(op_log, lambda x, d: np.log(x), FLOATS, MATH),
    "log2": Unary(op_log2, lambda x, d: np.log2(x), FLOATS, MATH),
    "sqrt": Unary(op_sqrt, lambda x, d: np.sqrt(x), FLOATS),
    "sqrt_rn": Unary(op_sqrt_rn, lambda x, d: np.sqrt(x), ("float32", "float64")),
    "rsqrt": Unary(op_rsqrt, lambda x, d: 1.0 / np.sqrt(x), FLOATS, (1, 2, 1)),
    "sin": Unary(op_sin, lambda x, d: np.sin(x), FLOATS, MATH, 1e4),
    "cos": Unary(op_cos, lambda x, d: np.cos(x), FLOATS, MATH, 1e4),
    "sigmoid": Unary(op_sigmoid, lambda x, d: sigmoid(x), FLOATS, (2, 4, 2)),
    "erf": Unary(op_erf, lambda x, d: np.vectorize(math.erf, otypes=[float])(x), FLOATS, MATH),
    "floor": Unary(op_floor, lambda x, d: np.floor(x), FLOATS),
    "ceil": Unary(op_ceil, lambda x, d: np.ceil(x), FLOATS),
}

UNARY_CASES = [(name, d) for name, op in UNARY.items() for d in op.dtypes]


def float_ulps(ulps: tuple, dtype: str) -> float:
    return {"float16": ulps[0], "bfloat16": ulps[0], "float32": ulps[1], "float64": ulps[2]}.get(dtype, 0)


@pytest.mark.parametrize("name,dtype", UNARY_CASES)
@PROPERTY
@given(data=st.data(), n=st.integers(1, 40))
def test_unary_op(name, dtype, data, n):
    require(dtype)
    op = UNARY[name]
    bound = op.bound
    x = data.draw(values(dtype, n, finite=bound is not None,
                         lo=None if bound is None else -bound, hi=bound))
    got = run_elementwise(unary_kernel, op.fn, [(x, dtype)], dtype)
    with np.errstate(all="ignore"):
        want = op.ref(exact(x, dtype), dtype)
    assert_close(got, np.asarray(want), dtype, ulps=float_ulps(op.ulps, dtype), atol=flush_atol(op, dtype))


def flush_atol(op: Unary, dtype: str) -> float:
    return FLUSHED if op.flushes and dtype in ("float32", "bfloat16") else 0.0


@pytest.mark.parametrize("name", ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "sigmoid", "erf",
                                  "floor", "ceil", "abs", "neg"])
def test_unary_special_float_values(name):
    """NaN, ±inf, ±0 and the largest/smallest f32 follow IEEE (and numpy)."""
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 3.4e38, -3.4e38, 1e-45], np.float32)
    op = UNARY[name]
    got = run_elementwise(unary_kernel, op.fn, [(x, "float32")], "float32")
    with np.errstate(all="ignore"):
        want = op.ref(x.astype(np.float64), "float32")
    assert_close(got, np.asarray(want), "float32", ulps=float_ulps(op.ulps, "float32"), atol=flush_atol(op, "float32"))


# --------------------------------------------------------------------------- #
# Ternary ops: where, fma, clamp
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("dtype", ALL)
@PROPERTY
@given(data=st.data(), n=st.integers(1, 40))
def test_where(dtype, data, n):
    require(dtype)
    c = data.draw(values("int1", n))
    x, y = data.draw(values(dtype, n)), data.draw(values(dtype, n))
    got = run_elementwise(ternary_kernel, op_where, [(c, "int1"), (x, dtype), (y, dtype)], dtype)
    assert_close(got, np.where(c, exact(x, dtype), exact(y, dtype)), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@PROPERTY
@given(data=st.data(), n=st.integers(1, 40))
def test_fma(dtype, data, n):
    require(dtype)
    x, y, w = (data.draw(values(dtype, n, finite=True, lo=-1e4, hi=1e4)) for _ in range(3))
    got = run_elementwise(ternary_kernel, op_fma, [(x, dtype), (y, dtype), (w, dtype)], dtype)
    fused = np.vectorize(lambda a, b, c: float(Fraction(a) * Fraction(b) + Fraction(c)), otypes=[float])
    want = fused(exact(x, dtype), exact(y, dtype), exact(w, dtype))
    # 1 ulp of the result, plus 1 ulp of the product so that an unfused x*y+w also passes
    product_ulp = ulp(exact(x, dtype) * exact(y, dtype), dtype)
    assert_close(got, want, dtype, ulps=1, atol=product_ulp)


@pytest.mark.parametrize("dtype", FLOATS)
@PROPERTY
@given(data=st.data(), n=st.integers(1, 40))
def test_clamp(dtype, data, n):
    require(dtype)
    x, a, b = (data.draw(values(dtype, n, finite=True)) for _ in range(3))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    got = run_elementwise(ternary_kernel, op_clamp, [(x, dtype), (lo, dtype), (hi, dtype)], dtype)
    assert_close(got, np.minimum(np.maximum(exact(x, dtype), lo), hi), dtype)


@pytest.mark.parametrize("fn,ref", [(op_maximum, np.fmax), (op_minimum, np.fmin),
                                    (op_maximum_nan, np.maximum), (op_minimum_nan, np.minimum)])
def test_maximum_minimum_nan_rules(fn, ref):
    """Default: a NaN operand yields the other one; ``PropagateNan.ALL``: NaN wins."""
    x = np.array([np.nan, 1.0, np.nan, -np.inf, 2.0], np.float32)
    y = np.array([3.0, np.nan, np.nan, 5.0, -7.0], np.float32)
    got = run_elementwise(binary_kernel, fn, [(x, "float32"), (y, "float32")], "float32")
    assert_close(got, ref(x, y), "float32")


# --------------------------------------------------------------------------- #
# Casts
# --------------------------------------------------------------------------- #

@tilec.jit
def cast_kernel(x_ptr, z_ptr, n, DST: tl.constexpr, METHOD: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if METHOD:
        z = x.to(DST)
    else:
        z = tl.cast(x, DST)
    tl.static_assert(z.dtype == DST)
    tl.store(z_ptr + offs, z, mask=mask)


def cast_source_range(src: str, dst: str):
    """Float → int casts are defined only for values in the target's range."""
    if src in FLOATS and dst in INTS:
        info = np.iinfo(dst)
        return float(info.min) * 0.99, float(info.max) * 0.99
    return None, None


@pytest.mark.parametrize("dst", ALL)
@pytest.mark.parametrize("src", ALL)
@FEW
@given(data=st.data(), n=st.integers(1, 40), method=st.booleans())
def test_cast(src, dst, data, n, method):
    """int→int wraps, float→int truncates toward zero, →float rounds to nearest even,
    →int1 is ``!= 0``."""
    require(src), require(dst)
    lo, hi = cast_source_range(src, dst)
    x = data.draw(values(src, n, finite=lo is not None, lo=lo, hi=hi))
    z = empty(n, dst)
    cast_kernel[grid1(n, BLOCK)](to_host(x, src), z, n, DST=getattr(tl, dst), METHOD=method, BLOCK=BLOCK)
    want = x
    if src in FLOATS and dst in INTS:
        want = np.trunc(exact(x, src)).astype(np.int64 if dst in SINTS else np.uint64)
    assert_close(z, want, dst)


@tilec.jit
def bitcast_kernel(x_ptr, z_ptr, n, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(z_ptr + offs, x.to(DST, bitcast=True), mask=mask)


BITCASTS = [("float32", "int32"), ("int32", "float32"), ("float32", "uint32"), ("float16", "int16"),
            ("int16", "float16"), ("float64", "int64"), ("uint64", "float64"), ("int8", "uint8")]


@pytest.mark.parametrize("src,dst", BITCASTS)
@PROPERTY
@given(data=st.data(), n=st.integers(1, 40))
def test_bitcast(src, dst, data, n):
    x = data.draw(values(src, n))
    z = empty(n, dst)
    bitcast_kernel[grid1(n, BLOCK)](to_host(x, src), z, n, DST=getattr(tl, dst), BLOCK=BLOCK)
    np.testing.assert_array_equal(from_host(z).view(np.uint8), x.view(np.uint8))


# --------------------------------------------------------------------------- #
# Type promotion (Triton's rules), checked by the dtype of the result
# --------------------------------------------------------------------------- #

def int_promote(a: str, b: str) -> str:
    """C's usual arithmetic conversions, as Triton applies them to two int types."""
    bits = {d: np.dtype(d).itemsize * 8 for d in (a, b)}
    if (a in UINTS) == (b in UINTS):
        return a if bits[a] > bits[b] else b
    unsigned, signed = (a, b) if a in UINTS else (b, a)
    return unsigned if bits[unsigned] >= bits[signed] else signed


def promote(a: str, b: str, div_or_mod: bool = False) -> str:
    """The type Triton computes ``a op b`` in, for two tensors."""
    for wide in ("float64", "float32"):
        if wide in (a, b):
            return wide
    if "float16" in (a, b):
        return "float32" if div_or_mod else "float16"
    if "bfloat16" in (a, b):
        return "bfloat16" if a == b and not div_or_mod else "float32"
    return int_promote(a, b)


@tilec.jit
def promote_kernel(x_ptr, y_ptr, z_ptr, n, FN: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = FN(x, y)
    tl.static_assert(z.dtype == OUT)
    tl.store(z_ptr + offs, z, mask=mask)


@pytest.mark.parametrize("b", NUMBERS)
@pytest.mark.parametrize("a", NUMBERS)
def test_promotion_of_mixed_tensors(a, b):
    """``x + y`` and ``x * y`` for every pair of dtypes: the result's dtype and values."""
    require(a), require(b)
    out = promote(a, b)
    x = np.array([1, 2, 3, 100, 7], np.int8)
    y = np.array([-1, 5, 0, 27, 3], np.int8)
    if a in UINTS or b in UINTS:
        y = np.abs(y)
    xo, yo = (exact(cast(cast(v, d), out), out) for v, d in ((x, a), (y, b)))
    for fn, ref in ((op_add, np.add), (op_mul, np.multiply)):
        z = empty(len(x), out)
        promote_kernel[(1,)](to_host(x, a), to_host(y, b), z, len(x), FN=fn, OUT=getattr(tl, out), BLOCK=8)
        assert_close(z, ref(xo, yo), out)


@tilec.jit
def scalar_kernel(x_ptr, z_ptr, n, s, OUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    z = x + s
    tl.static_assert(z.dtype == OUT)
    tl.store(z_ptr + offs, z, mask=mask)


@tilec.jit
def literal_kernel(x_ptr, z_ptr, n, S: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    z = S + x
    tl.static_assert(z.dtype == OUT)
    tl.store(z_ptr + offs, z, mask=mask)


# A Python number (a literal or constexpr) of a lower or equal kind does not promote a tensor
# (kinds: bool < int < float; Triton's dtype.kind() puts signed and unsigned ints in one kind);
# a runtime scalar argument (an i32 or f32 value) promotes as a tensor does.
LITERAL_PROMOTION = [
    ("int8", 3, "int8"), ("int16", -3, "int16"), ("int64", 5, "int64"), ("uint8", 3, "uint8"), ("uint32", 7, "uint32"),
    ("float16", 2, "float16"), ("float16", 1.5, "float16"), ("bfloat16", 0.5, "bfloat16"),
    ("int32", 1.5, "float32"), ("int8", 2.5, "float32"), ("float64", 3, "float64"),
]
RUNTIME_SCALAR_PROMOTION = [
    ("int8", 3, "int32"), ("int16", -3, "int32"), ("int64", 5, "int64"), ("uint8", 3, "int32"),
    ("float16", 2, "float16"), ("float16", 1.5, "float32"), ("bfloat16", 0.5, "float32"),
    ("int32", 1.5, "float32"), ("int8", 2.5, "float32"), ("float64", 3, "float64"),
]


def check_scalar_promotion(kernel, dtype, scalar, out, as_constexpr: bool):
    require(dtype)
    x = np.array([1, -2, 3, 4, 5, -6, 7], np.int64)
    if dtype in UINTS:
        x = np.abs(x)
    z = empty(len(x), out)
    scalar_arg = {"S": scalar} if as_constexpr else {"s": scalar}
    kernel[(1,)](to_host(x, dtype), z, len(x), **scalar_arg, OUT=getattr(tl, out), BLOCK=8)
    assert_close(z, exact(cast(x, dtype), dtype) + scalar, out)


@pytest.mark.parametrize("dtype,scalar,out", LITERAL_PROMOTION)
def test_promotion_with_a_python_number(dtype, scalar, out):
    check_scalar_promotion(literal_kernel, dtype, scalar, out, as_constexpr=True)


@pytest.mark.parametrize("dtype,scalar,out", RUNTIME_SCALAR_PROMOTION)
def test_promotion_with_a_runtime_scalar_argument(dtype, scalar, out):
    check_scalar_promotion(scalar_kernel, dtype, scalar, out, as_constexpr=False)


@tilec.jit
def int_overflow_kernel(x_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(z_ptr + offs, x * 3 + 2147483647)


def test_int32_arithmetic_wraps():
    x = np.array([0, 1, -1, 2**30, -2**31, 2**31 - 1, 12345, -7], np.int32)
    z = np.zeros(8, np.int32)
    int_overflow_kernel[(1,)](x, z, BLOCK=8)
    np.testing.assert_array_equal(z, cast(x.astype(object) * 3 + 2147483647, "int32"))
