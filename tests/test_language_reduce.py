"""Reductions and scans through the public API: ``sum``, ``max``, ``min``,
``argmax``/``argmin`` (ties go to the lowest index), ``xor_sum``, ``reduce`` with
a ``@tilec.jit`` combine function (one and two operands), ``cumsum``,
``cumprod`` and ``associative_scan``, on ragged masked 2-D tiles along each axis."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import (FLOATS, INTS, NUMBERS, PROPERTY, UINTS, assert_close, empty, exact, require, to_host,
                     ulp, values)


def next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


@tilec.jit
def reduce_kernel(x_ptr, z_ptr, M, N, FN: tl.constexpr, AXIS: tl.constexpr, OTHER: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr):
    """Reduces the M x N matrix at x_ptr along AXIS (None: all) into z_ptr;
    masked lanes read OTHER, the neutral element of FN."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=OTHER)
    r = FN(x, AXIS)
    if AXIS == 0:
        tl.store(z_ptr + rn, r, mask=rn < N)
    elif AXIS == 1:
        tl.store(z_ptr + rm, r, mask=rm < M)
    else:
        tl.store(z_ptr, r)


@tilec.jit
def red_sum(x, AXIS: tl.constexpr):
    return tl.sum(x, axis=AXIS)


@tilec.jit
def red_max(x, AXIS: tl.constexpr):
    return tl.max(x, axis=AXIS)


@tilec.jit
def red_min(x, AXIS: tl.constexpr):
    return tl.min(x, AXIS)


@tilec.jit
def red_argmax(x, AXIS: tl.constexpr):
    return tl.argmax(x, axis=AXIS)


@tilec.jit
def red_argmin(x, AXIS: tl.constexpr):
    return tl.argmin(x, axis=AXIS)


@tilec.jit
def red_xor_sum(x, AXIS: tl.constexpr):
    return tl.xor_sum(x, axis=AXIS)


@tilec.jit
def red_method_sum(x, AXIS: tl.constexpr):
    return x.sum(axis=AXIS)


@tilec.jit
def combine_mul(a, b):
    return a * b


@tilec.jit
def red_product(x, AXIS: tl.constexpr):
    return tl.reduce(x, AXIS, combine_mul)


def sum_type(dtype: str) -> str:
    """Triton's ``sum`` accumulates ints narrower than 32 bits in (u)int32."""
    if dtype in INTS and np.dtype(dtype).itemsize < 4:
        return "uint32" if dtype in UINTS else "int32"
    return dtype


def neutral_max(dtype: str):
    return float("-inf") if dtype in FLOATS else int(np.iinfo(dtype).min)


def neutral_min(dtype: str):
    return float("inf") if dtype in FLOATS else int(np.iinfo(dtype).max)


def object_product(x, axis):
    return np.multiply.reduce(x, axis=axis)


def xor_reduce(x, axis):
    return np.bitwise_xor.reduce(x, axis=axis)


@dataclass
class Reduction:
    """A reduction: jit fn, numpy reference (exact values, axis), dtypes, the
    neutral element masked lanes read, the output dtype, and whether it is
    order-sensitive for floats."""
    fn: object
    ref: Callable
    dtypes: tuple
    neutral: Callable
    out: Callable = lambda d: d
    inexact: bool = False


REDUCTIONS = {
    "sum": Reduction(red_sum, np.sum, NUMBERS, lambda d: 0, sum_type, True),
    "method_sum": Reduction(red_method_sum, np.sum, ("int32", "float32"), lambda d: 0, sum_type, True),
    "max": Reduction(red_max, np.max, NUMBERS, neutral_max),
    "min": Reduction(red_min, np.min, NUMBERS, neutral_min),
    "argmax": Reduction(red_argmax, np.argmax, NUMBERS, neutral_max, lambda d: "int32"),
    "argmin": Reduction(red_argmin, np.argmin, NUMBERS, neutral_min, lambda d: "int32"),
    "xor_sum": Reduction(red_xor_sum, xor_reduce, INTS, lambda d: 0),
    "reduce_mul": Reduction(red_product, object_product, ("int32", "int64", "uint8", "float32"), lambda d: 1,
                            lambda d: d, True),
}

CASES = [(name, d) for name, r in REDUCTIONS.items() for d in r.dtypes]


def reduction_values(name: str, dtype: str, shape):
    """max/min see the whole range (NaN aside); sums and products bounded floats
    (no inf - inf, no f16 overflow); arg-reductions few distinct values (ties)."""
    if name.startswith("arg"):
        return values(dtype, shape, lo=0 if dtype in UINTS else -3, hi=3)
    if dtype in FLOATS and name not in ("max", "min"):
        bound = 1.5 if name == "reduce_mul" else 100.0
        return values(dtype, shape, lo=-bound, hi=bound)
    return values(dtype, shape)


def float_reduction_tolerance(name: str, xs: np.ndarray, axis, dtype: str) -> dict:
    """Reductions may combine in any order: allow one rounding per element, at the
    scale of the sum of magnitudes (sums) or of the result (products)."""
    size = xs.size if axis is None else xs.shape[axis]
    if name == "reduce_mul":  # plus subnormal intermediates (rounded here, flushed on GPUs), grown by |x| <= 1.5
        tiny = float(np.finfo(np.float32 if dtype == "bfloat16" else dtype).tiny)
        return {"rtol": size * 2.0 ** -20, "atol": tiny * 1.5 ** size}
    scale = np.atleast_1d(np.sum(np.abs(xs), axis=axis))
    return {"atol": size * ulp(scale, dtype)}


def flat_tile_index(flat, n: int, bn: int):
    """An index into the flattened m x n matrix as an index into the BM x BN tile."""
    return (flat // n) * bn + flat % n


@pytest.mark.parametrize("name,dtype", CASES)
@PROPERTY
@given(data=st.data(), m=st.integers(1, 9), n=st.integers(1, 19), axis=st.sampled_from([0, 1, None]))
def test_reduction(name, dtype, data, m, n, axis):
    require(dtype)
    red = REDUCTIONS[name]
    x = data.draw(reduction_values(name, dtype, (m, n)))
    x = np.where(np.isnan(x), 0, x).astype(x.dtype)  # NaN rules of reductions are not pinned down here
    out = red.out(dtype)
    z = empty({0: n, 1: m, None: 1}[axis], out)
    reduce_kernel[(1,)](to_host(x, dtype), z, m, n, FN=red.fn, AXIS=axis, OTHER=red.neutral(dtype),
                        BM=next_pow2(m), BN=next_pow2(n))
    xs = exact(x, dtype)
    want = np.atleast_1d(red.ref(xs, axis=axis))
    if name.startswith("arg") and axis is None:
        want = flat_tile_index(want, n, next_pow2(n))
    tolerance = float_reduction_tolerance(name, xs, axis, dtype) if red.inexact and dtype in FLOATS else {}
    assert_close(z, want, out, **tolerance)


@tilec.jit
def keep_dims_kernel(x_ptr, z_ptr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    r = tl.max(x, axis=1, keep_dims=True)
    tl.static_assert(r.shape == (BM, 1))
    tl.store(z_ptr + rm[:, None] * BN + rn[None, :], x - r)


def test_keep_dims_keeps_a_size_one_axis():
    x = np.arange(32, dtype=np.float32).reshape(4, 8) % 7
    z = np.zeros_like(x)
    keep_dims_kernel[(1,)](x, z, BM=4, BN=8)
    np.testing.assert_array_equal(z, x - x.max(axis=1, keepdims=True))


@tilec.jit
def argmax_combine(v0, i0, v1, i1):
    """Larger value wins; on a tie the lower index (so that any order gives one answer)."""
    take_first = (v0 > v1) | ((v0 == v1) & (i0 < i1))
    return tl.where(take_first, v0, v1), tl.where(take_first, i0, i1)


@tilec.jit
def tuple_reduce_kernel(x_ptr, v_ptr, i_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-2147483648)
    v, i = tl.reduce((x, offs), 0, argmax_combine)
    tl.store(v_ptr, v)
    tl.store(i_ptr, i)


@PROPERTY
@given(data=st.data(), n=st.integers(1, 40))
def test_reduce_with_two_operands(data, n):
    x = data.draw(values("int32", n, lo=-4, hi=4))
    v, i = np.zeros(1, np.int32), np.zeros(1, np.int32)
    tuple_reduce_kernel[(1,)](x, v, i, n, BLOCK=next_pow2(n))
    assert (v[0], i[0]) == (x.max(), np.argmax(x))


# --------------------------------------------------------------------------- #
# Scans
# --------------------------------------------------------------------------- #

@tilec.jit
def scan_kernel(x_ptr, z_ptr, M, N, FN: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr,
                OTHER: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=OTHER)
    tl.store(z_ptr + offs, FN(x, AXIS, REVERSE), mask=mask)


@tilec.jit
def scan_cumsum(x, AXIS: tl.constexpr, REVERSE: tl.constexpr):
    return tl.cumsum(x, axis=AXIS, reverse=REVERSE)


@tilec.jit
def scan_cumprod(x, AXIS: tl.constexpr, REVERSE: tl.constexpr):
    return tl.cumprod(x, axis=AXIS, reverse=REVERSE)


@tilec.jit
def combine_max(a, b):
    return tl.maximum(a, b)


@tilec.jit
def scan_running_max(x, AXIS: tl.constexpr, REVERSE: tl.constexpr):
    return tl.associative_scan(x, AXIS, combine_max, reverse=REVERSE)


def np_scan(ufunc, x, axis, reverse):
    """Inclusive scan of exact values with ``ufunc``, optionally from the end."""
    flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
    return flip(ufunc.accumulate(flip(x), axis=axis))


SCANS = {  # name: (jit fn, ufunc, dtypes, neutral element, output dtype)
    "cumsum": (scan_cumsum, np.add, ("int8", "int32", "int64", "uint16", "float16", "float32", "float64"), 0, sum_type),
    "cumprod": (scan_cumprod, np.multiply, ("int32", "int64", "float32"), 1, lambda d: d),
    "running_max": (scan_running_max, np.maximum, ("int8", "int32", "uint64", "float32", "float64"), None, lambda d: d),
}

SCAN_CASES = [(name, d) for name, (_, _, dtypes, _, _) in SCANS.items() for d in dtypes]


@pytest.mark.parametrize("name,dtype", SCAN_CASES)
@PROPERTY
@given(data=st.data(), m=st.integers(1, 9), n=st.integers(1, 19), axis=st.sampled_from([0, 1]),
       reverse=st.booleans())
def test_scan(name, dtype, data, m, n, axis, reverse):
    fn, ufunc, _, neutral, out_type = SCANS[name]
    bound = 2.0 if name == "cumprod" else 1e3
    x = data.draw(values(dtype, (m, n), lo=None if dtype in INTS else -bound, hi=None if dtype in INTS else bound))
    other = neutral if neutral is not None else (neutral_max(dtype) if dtype in FLOATS else int(np.iinfo(dtype).min))
    out = out_type(dtype)
    z = empty((m, n), out)
    scan_kernel[(1,)](to_host(x, dtype), z, m, n, FN=fn, AXIS=axis, REVERSE=reverse, OTHER=other,
                      BM=next_pow2(m), BN=next_pow2(n))
    xs = exact(x, dtype)
    want = np_scan(ufunc, xs, axis, reverse)
    if dtype in FLOATS and name != "running_max":
        scale = np_scan(np.add, np.abs(xs), axis, reverse) if name == "cumsum" else np.abs(want)
        assert_close(z, want, out, atol=max(m, n) * ulp(scale, dtype), ulps=4 if name == "cumprod" else 0,
                     rtol=max(m, n) * 2.0 ** -20 if name == "cumprod" else 0)
    else:
        assert_close(z, want, out)


# --------------------------------------------------------------------------- #
# max with indices, softmax
# --------------------------------------------------------------------------- #

@tilec.jit
def max_indices_kernel(x_ptr, v_ptr, i_ptr, s_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=-float("inf"))
    v, i = tl.max(x, axis=1, return_indices=True)
    tl.store(v_ptr + rm, v, mask=rm < M)
    tl.store(i_ptr + rm, i, mask=rm < M)
    tl.store(s_ptr + rm[:, None] * N + rn[None, :], tl.softmax(x, dim=1), mask=mask)


@PROPERTY
@given(data=st.data(), m=st.integers(1, 9), n=st.integers(1, 19))
def test_max_with_indices_and_softmax(data, m, n):
    x = data.draw(values("float32", (m, n), lo=-3, hi=3)).round()  # rounding makes ties
    v, i, s = np.zeros(m, np.float32), np.zeros(m, np.int32), np.zeros((m, n), np.float32)
    max_indices_kernel[(1,)](x, v, i, s, m, n, BM=next_pow2(m), BN=next_pow2(n))
    np.testing.assert_array_equal(v, x.max(axis=1))
    np.testing.assert_array_equal(i, x.argmax(axis=1))
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    assert_close(s, e / e.sum(axis=1, keepdims=True), "float32", ulps=8, atol=1e-7)
