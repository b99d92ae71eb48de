"""The tutorial kernels (tests/kernels/) on small ragged shapes, against numpy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import FEW, assert_close, values
from kernels.layer_norm import layer_norm_backward, layer_norm_forward, numpy_layer_norm, numpy_layer_norm_grads
from kernels.matmul import matmul
from kernels.softmax import softmax
from kernels.vector_add import add


@FEW
@given(data=st.data(), n=st.integers(1, 300), dtype=st.sampled_from(["float16", "float32", "int32"]))
def test_vector_add(data, n, dtype):
    x, y = data.draw(values(dtype, n)), data.draw(values(dtype, n))
    with np.errstate(all="ignore"):
        want = x.astype(np.float64) + y if dtype != "int32" else x.astype(object) + y.astype(object)
    assert_close(add(x, y), want, dtype)


@FEW
@given(data=st.data(), rows=st.integers(1, 6), cols=st.integers(1, 70))
def test_fused_softmax(data, rows, cols):
    x = data.draw(values("float32", (rows, cols), lo=-50, hi=50))
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    assert_close(softmax(x), e / e.sum(axis=1, keepdims=True), "float32", ulps=8, atol=1e-7)


EPS = 1e-5
U32 = 2.0 ** -24  # float32's unit roundoff: the kernels compute in float32 whatever the inputs' dtype


def layer_norm_inputs(data, M: int, N: int, dtype: str) -> tuple:
    """x (M x N) in [-10, 10]; w, b (N) and dy (M x N) in [-2, 2]; negative and positive ``dtype`` values.
    hypothesis fills arrays with repeats, so rows of (nearly) equal values, with tiny variances, come often."""
    x = data.draw(values(dtype, (M, N), lo=-10, hi=10))
    w, b = (data.draw(values(dtype, N, lo=-2, hi=2)) for _ in range(2))
    return x, w, b, data.draw(values(dtype, (M, N), lo=-2, hi=2))


def float32_error_scales(x, w, b, dy) -> dict:
    """For each result of the kernels, what its float32 rounding error is proportional to (float64 inputs).

    The kernels' mean is good to a few ulps of max|x|, an error that rstd amplifies in x - mean:
    their x̂ is good to a few u * cond, cond = 1 + max|x| * rstd of each row (about 1 for well spread
    rows, up to max|x| / sqrt(eps) for rows of nearly equal values).  Each result's scale is how that,
    and the rounding of its own sums, reach it."""
    _, mean, rstd = numpy_layer_norm(x, w, b, EPS)
    rstd_col = rstd[:, None]
    max_x = np.abs(x).max(axis=1, keepdims=True)
    cond = 1 + max_x * rstd_col
    max_xhat = np.abs((x - mean[:, None]) * rstd_col).max(axis=1, keepdims=True)
    max_wdy = np.abs(w * dy).max(axis=1, keepdims=True)
    return {"y": cond * np.abs(w) + np.abs(b), "mean": max_x[:, 0], "rstd": rstd,
            "dx": rstd_col * cond * max_wdy * (1 + max_xhat),  # x̂'s error through c1 = mean(x̂ w dy) and x̂ c1
            "dw": (np.abs(dy) * cond).sum(axis=0),  # each row's x̂ error, weighed by its dy
            "db": np.abs(dy).sum(axis=0)}


@FEW
@given(data=st.data(), M=st.integers(1, 12), N=st.integers(1, 80), dtype=st.sampled_from(["float16", "float32"]),
       group=st.integers(1, 4), forward_block=st.sampled_from([None, 16]),
       dwdb_tile=st.sampled_from([(32, 128), (2, 16)]))
def test_layer_norm_forward_and_backward(data, M, N, dtype, group, forward_block, dwdb_tile):
    """Forward (y, mean, rstd) and backward (dx, dw, db) against the tutorial's float64 references.

    1 to 4 lock groups for up to 12 rows: rows contend for each lock and add into a shared partial
    row.  A forward block of 16 makes its loops run several times; a dw/db tile of 2 x 16 makes that
    kernel loop over the groups and split the columns.  The backward's outputs start as NaN, so an
    element it leaves unwritten fails."""
    x, w, b, dy = layer_norm_inputs(data, M, N, dtype)
    y, mean, rstd = layer_norm_forward(x, w, b, EPS, block_size=forward_block)
    out = tuple(np.full_like(like, np.nan) for like in (dy, w, w))
    dx, dw, db = layer_norm_backward(dy, x, w, mean, rstd, group_size_m=group, block_m=dwdb_tile[0],
                                     block_n=dwdb_tile[1], out=out)
    got = {"y": y, "mean": mean, "rstd": rstd, "dx": dx, "dw": dw, "db": db}
    x, w, b, dy = (a.astype(np.float64) for a in (x, w, b, dy))  # numpy_layer_norm_grads sums db in dy's dtype
    want = dict(zip(("y", "mean", "rstd"), numpy_layer_norm(x, w, b, EPS)))
    want.update(zip(("dx", "dw", "db"), numpy_layer_norm_grads(dy, x, w, EPS)))
    scales = float32_error_scales(x, w, b, dy)
    for name, result in got.items():
        # Within 32 u32 of its error scale (sums of at most 80 terms), then rounded once to its dtype (1 ulp);
        # the floor: products of drawn subnormals underflow float32, not the float64 reference.
        assert_close(result, want[name], result.dtype.name, ulps=1,
                     atol=32 * U32 * scales[name] + np.finfo(np.float32).tiny)


def leaky_relu(x):
    return np.where(x >= 0, x, 0.01 * x)


@pytest.mark.parametrize("activation", ["", "leaky_relu"])
@pytest.mark.parametrize("M,N,K", [(16, 16, 16), (33, 20, 45), (5, 70, 7), (1, 1, 1), (40, 9, 33)])
def test_matmul(M, N, K, activation):
    rng = np.random.default_rng(M * 10000 + N * 100 + K)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    c = matmul(a, b, activation)
    want = a.astype(np.float64) @ b.astype(np.float64)
    if activation:
        want = leaky_relu(want)
    assert_close(c, want, "float16", ulps=2, atol=K * 2.0 ** -20)


def test_matmul_of_a_transposed_view_uses_its_strides():
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (20, 30)).astype(np.float16)
    bt = rng.uniform(-1, 1, (17, 30)).astype(np.float16)
    c = matmul(a, bt.T)
    assert_close(c, a.astype(np.float64) @ bt.T.astype(np.float64), "float16", ulps=2, atol=1e-5)
