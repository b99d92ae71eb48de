"""Index-driven shape ops and small reductions of Triton 3.6 against numpy:
``gather``, ``flip``, ``cat``, ``sort``, ``topk``, ``histogram``,
``reduce_or``, ``swizzle2d`` and the function forms ``tl.add``/``tl.sub``/``tl.mul``.

Shapes are hypothesis-drawn powers of two (as ``tl`` requires), values cover
each dtype's range (negatives included), masks are ragged.  Every kernel is
also compiled for the GPU archs by the suite's compile check, and
``test_compiles_for_sm_90`` asks for the NVIDIA stages explicitly.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from tilec.errors import CompilationError
from helpers import ALL, FEW, INTS, NUMBERS, PROPERTY, assert_close, cast, empty, exact, require, to_host, values

pow2 = st.sampled_from([1, 2, 4, 8, 16])


def shapes(rank: int, largest: int = 16):
    return st.tuples(*[st.sampled_from([n for n in (1, 2, 4, 8, 16) if n <= largest])] * rank)


@tilec.jit
def offsets(A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    """Row-major offsets of an A x B x C tile (the rank-3 form of every test's tiles)."""
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    return a * (B * C) + b * C + c


def as3(shape: tuple) -> tuple:
    return (1,) * (3 - len(shape)) + tuple(shape)


# --------------------------------------------------------------------------- #
# gather and flip
# --------------------------------------------------------------------------- #

@tilec.jit
def gather_kernel(x_ptr, i_ptr, z_ptr, X: tl.constexpr, I: tl.constexpr, AXIS: tl.constexpr):
    x = tl.load(x_ptr + offsets(X[0], X[1], X[2]))
    index = tl.load(i_ptr + offsets(I[0], I[1], I[2]))
    z = tl.gather(x, index, AXIS)
    tl.static_assert(z.shape == index.shape)
    tl.store(z_ptr + offsets(I[0], I[1], I[2]), z)


@pytest.mark.parametrize("dtype", ALL)
@FEW
@given(data=st.data(), shape=shapes(3), axis=st.integers(-3, 2),
       index_dtype=st.sampled_from(["int32", "int8", "uint16", "int64"]))
def test_gather_takes_along_the_axis(dtype, data, shape, axis, index_dtype):
    require(dtype)
    x = data.draw(values(dtype, shape))
    index_shape = shape[:axis % 3] + (data.draw(pow2),) + shape[axis % 3 + 1:]
    n = shape[axis]
    index = data.draw(values(index_dtype, index_shape, lo=-n, hi=2 * n - 1))  # out of range wraps mod n
    z = empty(index_shape, dtype)
    gather_kernel[(1,)](to_host(x, dtype), to_host(index, index_dtype), z, X=shape, I=index_shape, AXIS=axis)
    want = np.take_along_axis(x, index.astype(np.int64) % n, axis=axis)
    assert_close(z, want, dtype)


@tilec.jit
def flip_kernel(x_ptr, z_ptr, X: tl.constexpr, DIM: tl.constexpr):
    where = offsets(X[0], X[1], X[2])
    x = tl.load(x_ptr + where)
    tl.store(z_ptr + where, x.flip(DIM) if DIM is not None else tl.flip(x))


@pytest.mark.parametrize("dtype", ALL)
@FEW
@given(data=st.data(), shape=shapes(3), dim=st.sampled_from([None, 0, 1, 2, -1, -3]))
def test_flip_reverses_one_dim(dtype, data, shape, dim):
    require(dtype)
    x = data.draw(values(dtype, shape))
    z = empty(shape, dtype)
    flip_kernel[(1,)](to_host(x, dtype), z, X=shape, DIM=dim)
    assert_close(z, np.flip(x, axis=-1 if dim is None else dim), dtype)


# --------------------------------------------------------------------------- #
# cat
# --------------------------------------------------------------------------- #

@tilec.jit
def cat_kernel(x_ptr, y_ptr, z_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    z = tl.cat(tl.load(x_ptr + offs), tl.load(y_ptr + offs), can_reorder=True)
    tl.static_assert(z.shape == (2 * N,))
    tl.store(z_ptr + tl.arange(0, 2 * N), z)


@pytest.mark.parametrize("dtype", ALL)
@FEW
@given(data=st.data(), n=st.sampled_from([1, 2, 8, 32, 128]))
def test_cat_puts_other_after_input(dtype, data, n):
    require(dtype)
    x, y = data.draw(values(dtype, n)), data.draw(values(dtype, n))
    z = empty(2 * n, dtype)
    cat_kernel[(1,)](to_host(x, dtype), to_host(y, dtype), z, N=n)
    assert_close(z, np.concatenate([x, y]), dtype)


# --------------------------------------------------------------------------- #
# sort and topk
# --------------------------------------------------------------------------- #

@tilec.jit
def sort_kernel(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, DESCENDING: tl.constexpr):
    where = offsets(1, M, N)
    x = tl.reshape(tl.load(x_ptr + where), (M, N))
    tl.store(z_ptr + where, tl.reshape(tl.sort(x, descending=DESCENDING), (1, M, N)))


@pytest.mark.parametrize("dtype", NUMBERS)
@FEW
@given(data=st.data(), m=pow2, n=st.sampled_from([1, 2, 4, 16, 32]), descending=st.booleans())
def test_sort_orders_the_last_dim(dtype, data, m, n, descending):
    require(dtype)
    x = data.draw(values(dtype, (m, n), finite=True))
    z = empty((m, n), dtype)
    sort_kernel[(1,)](to_host(x, dtype), z, M=m, N=n, DESCENDING=descending)
    want = np.sort(x, axis=-1)
    assert_close(z, want[:, ::-1] if descending else want, dtype)


@tilec.jit
def topk_kernel(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    x = tl.reshape(tl.load(x_ptr + offsets(1, M, N)), (M, N))
    top = tl.topk(x, K)
    tl.static_assert(top.shape == (M, K))
    tl.store(z_ptr + offsets(1, M, K), tl.reshape(top, (1, M, K)))


@pytest.mark.parametrize("dtype", NUMBERS)
@FEW
@given(data=st.data(), m=pow2, n=st.sampled_from([2, 8, 32]), k=st.sampled_from([1, 2, 8]))
def test_topk_keeps_the_largest_first(dtype, data, m, n, k):
    require(dtype)
    k = min(k, n)
    x = data.draw(values(dtype, (m, n), finite=True))
    z = empty((m, k), dtype)
    topk_kernel[(1,)](to_host(x, dtype), z, M=m, N=n, K=k)
    assert_close(z, np.sort(x, axis=-1)[:, ::-1][:, :k], dtype)


# --------------------------------------------------------------------------- #
# histogram and reduce_or
# --------------------------------------------------------------------------- #

@tilec.jit
def histogram_kernel(x_ptr, z_ptr, n, N: tl.constexpr, BINS: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    h = tl.histogram(x, BINS, mask=offs < n) if MASKED else x.histogram(BINS)
    tl.static_assert(h.dtype == tl.int32)
    tl.store(z_ptr + tl.arange(0, BINS), h)


@pytest.mark.parametrize("dtype", INTS)
@PROPERTY
@given(data=st.data(), size=st.sampled_from([1, 4, 32, 256]), bins=st.sampled_from([1, 2, 16, 64]),
       masked=st.booleans())
def test_histogram_counts_values_in_range(dtype, data, size, bins, masked):
    x = data.draw(values(dtype, size, lo=-3, hi=bins + 2))  # some out of range: not counted
    n = data.draw(st.integers(0, size)) if masked else size
    z = empty(bins, "int32", fill=-1)
    histogram_kernel[(1,)](to_host(x, dtype), z, n, N=size, BINS=bins, MASKED=masked)
    kept = x[:n].astype(np.int64)
    want = np.bincount(kept[(kept >= 0) & (kept < bins)], minlength=bins)
    np.testing.assert_array_equal(z, want)


@tilec.jit
def reduce_or_kernel(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, KEEP: tl.constexpr):
    x = tl.reshape(tl.load(x_ptr + offsets(1, M, N)), (M, N))
    r = tl.reduce_or(x, AXIS, keep_dims=KEEP) if AXIS != 1 else x.reduce_or(1, keep_dims=KEEP)
    size: tl.constexpr = (1 if AXIS is None else M if AXIS == 1 else N)
    tl.store(z_ptr + tl.arange(0, size), tl.reshape(r, (size,)))


@pytest.mark.parametrize("dtype", ("int1",) + INTS)
@FEW
@given(data=st.data(), m=pow2, n=pow2, axis=st.sampled_from([0, 1, None]), keep=st.booleans())
def test_reduce_or_is_a_bitwise_or(dtype, data, m, n, axis, keep):
    x = data.draw(values(dtype, (m, n)))
    size = {0: n, 1: m, None: 1}[axis]
    z = empty(size, dtype)
    reduce_or_kernel[(1,)](to_host(x, dtype), z, M=m, N=n, AXIS=axis, KEEP=keep)
    want = np.bitwise_or.reduce(x, axis=axis) if axis is not None else np.bitwise_or.reduce(x.ravel())
    np.testing.assert_array_equal(z, np.atleast_1d(want))


# --------------------------------------------------------------------------- #
# swizzle2d and the function forms of the operators
# --------------------------------------------------------------------------- #

def swizzle2d_reference(i, j, size_i, size_j, size_g):
    """Triton's documented mapping, written out with Python ints."""
    ij = i * size_j + j
    group = ij // (size_g * size_j)
    off_i = group * size_g
    rows = min(size_i - off_i, size_g)
    return off_i + ij % rows, (ij % (size_g * size_j)) // rows


@tilec.jit
def swizzle2d_kernel(z_ptr, size_i, SI: tl.constexpr, SJ: tl.constexpr, SG: tl.constexpr):
    i = tl.arange(0, SI)[:, None]
    j = tl.arange(0, SJ)[None, :]
    new_i, new_j = tl.swizzle2d(i, j, size_i, SJ, SG)
    where = i * SJ + j
    tl.store(z_ptr + where, new_i)
    tl.store(z_ptr + SI * SJ + where, new_j)
    ci, cj = tl.swizzle2d(1, 0, SI, SJ, SG)  # constexpr arguments give scalars
    tl.store(z_ptr + 2 * SI * SJ, ci)
    tl.store(z_ptr + 2 * SI * SJ + 1, cj)


@PROPERTY
@given(si=st.sampled_from([4, 8, 16]), sj=pow2, sg=st.integers(1, 5), ragged=st.integers(0, 3))
def test_swizzle2d_groups_rows(si, sj, sg, ragged):
    size_i = si - ragged  # a last group of fewer rows
    z = np.zeros(2 * si * sj + 2, np.int32)
    swizzle2d_kernel[(1,)](z, size_i, SI=si, SJ=sj, SG=sg)
    want = np.array([[swizzle2d_reference(i, j, size_i, sj, sg) for j in range(sj)] for i in range(size_i)])
    np.testing.assert_array_equal(z[:si * sj].reshape(si, sj)[:size_i], want[..., 0])  # rows past size_i
    np.testing.assert_array_equal(z[si * sj:2 * si * sj].reshape(si, sj)[:size_i], want[..., 1])  # are not
    np.testing.assert_array_equal(z[-2:], swizzle2d_reference(1, 0, si, sj, sg))


@tilec.jit
def operators_kernel(x_ptr, y_ptr, z_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(tl.add(x_ptr, offs))
    y = tl.load(y_ptr + offs)
    tl.store(z_ptr + offs, tl.add(x, y))
    tl.store(z_ptr + N + offs, tl.sub(x, y, sanitize_overflow=False))
    tl.store(z_ptr + 2 * N + offs, tl.mul(x, y))
    tl.store(z_ptr + 3 * N + offs, tl.sub(tl.mul(x, 2), 1))


@pytest.mark.parametrize("dtype", NUMBERS)
@FEW
@given(data=st.data(), n=st.sampled_from([1, 8, 64]))
def test_operator_functions_match_the_operators(dtype, data, n):
    require(dtype)
    x, y = data.draw(values(dtype, n, finite=True)), data.draw(values(dtype, n, finite=True))
    z = empty(4 * n, dtype)
    operators_kernel[(1,)](to_host(x, dtype), to_host(y, dtype), z, N=n)
    xs, ys = exact(x, dtype), exact(y, dtype)
    with np.errstate(over="ignore"):
        want = np.concatenate([cast(xs + ys, dtype), cast(xs - ys, dtype), cast(xs * ys, dtype),
                               cast(cast(xs * 2, dtype).astype(xs.dtype) - 1, dtype)])
    assert_close(z, want, dtype, ulps=1)


# --------------------------------------------------------------------------- #
# errors and the GPU compile
# --------------------------------------------------------------------------- #

@tilec.jit
def misuse_kernel(x_ptr, z_ptr, CASE: tl.constexpr):
    offs = tl.arange(0, 8)
    x = tl.load(x_ptr + offs)
    if CASE == "float index":
        z = tl.gather(x, x, 0)
    elif CASE == "cat in order":
        z = tl.cat(x, x)
    elif CASE == "sort dim":
        z = tl.sort(x[None, :], dim=0)
    elif CASE == "topk k":
        z = tl.topk(x, 3)
    elif CASE == "histogram of floats":
        z = tl.histogram(x, 8)
    else:
        z = tl.reduce_or(x, 0)
    tl.store(z_ptr + offs, z)


@pytest.mark.parametrize("case,message", [
    ("float index", "index of `tl.gather` must be an integer tile"),
    ("cat in order", "can_reorder=True"),
    ("sort dim", "last dim only"),
    ("topk k", "power of two"),
    ("histogram of floats", "1-D integer tile"),
    ("reduce_or of floats", "needs integers"),
])
def test_misuse_is_a_compile_error(case, message):
    x = np.zeros(8, np.float32)
    with pytest.raises(CompilationError, match=message.replace("(", r"\(")):
        misuse_kernel[(1,)](x, x, CASE=case)


def test_compiles_for_sm_90():
    """The NVIDIA stages, ptxas included, take every op here (the suite's
    compile check lets a CompilationError pass; this test does not)."""
    f32, i32 = np.zeros(64, np.float32), np.arange(64, dtype=np.int32)
    gather_kernel.compile(f32, i32, f32, X=(1, 4, 8), I=(1, 4, 2), AXIS=2, target="sm_90")
    flip_kernel.compile(f32, f32, X=(2, 4, 8), DIM=1, target="sm_90")
    cat_kernel.compile(f32, f32, f32, N=32, target="sm_90")
    sort_kernel.compile(f32, f32, M=4, N=16, DESCENDING=True, target="sm_90")
    topk_kernel.compile(f32, f32, M=2, N=32, K=4, target="sm_90")
    histogram_kernel.compile(i32, i32, 7, N=64, BINS=16, MASKED=True, target="sm_90")
    reduce_or_kernel.compile(i32, i32, M=4, N=16, AXIS=0, KEEP=False, target="sm_90")
    swizzle2d_kernel.compile(i32, 7, SI=8, SJ=4, SG=3, target="sm_90")
    compiled = operators_kernel.compile(f32, f32, f32, N=16, target="sm_90")
    assert "cubin" in compiled.asm
