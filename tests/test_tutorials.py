"""The tutorial kernels (tests/kernels/) on small ragged shapes, against numpy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import FEW, assert_close, values
from kernels.layer_norm import layer_norm_backward, layer_norm_forward
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


def layer_norm_reference(x, w, b, eps):
    x = x.astype(np.float64)
    mean = x.mean(axis=1)
    rstd = 1.0 / np.sqrt(x.var(axis=1) + eps)
    return (x - mean[:, None]) * rstd[:, None] * w + b, mean, rstd


def layer_norm_grads(dy, x, w, mean, rstd):
    """dx, dw, db of y = xhat * w + b (float64)."""
    xhat = (x.astype(np.float64) - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    c1 = (xhat * wdy).mean(axis=1, keepdims=True)
    c2 = wdy.mean(axis=1, keepdims=True)
    return (wdy - (xhat * c1 + c2)) * rstd[:, None], (dy * xhat).sum(axis=0), dy.sum(axis=0)


@pytest.mark.parametrize("M,N", [(1, 5), (7, 37), (9, 16), (12, 50)])
def test_layer_norm_forward_and_backward(M, N):
    rng = np.random.default_rng(M * 100 + N)
    x = (rng.standard_normal((M, N)) * 3 + 1).astype(np.float32)
    w = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    dy = rng.standard_normal((M, N)).astype(np.float32)
    eps = 1e-5
    y, mean, rstd = layer_norm_forward(x, w, b, eps)
    y_ref, mean_ref, rstd_ref = layer_norm_reference(x, w, b, eps)
    assert_close(mean, mean_ref, "float32", atol=1e-5, rtol=1e-5)
    assert_close(rstd, rstd_ref, "float32", rtol=1e-4)
    assert_close(y, y_ref, "float32", atol=1e-4, rtol=1e-4)
    dx, dw, db = layer_norm_backward(dy, x, w, mean, rstd)
    dx_ref, dw_ref, db_ref = layer_norm_grads(dy, x, w, mean.astype(np.float64), rstd.astype(np.float64))
    assert_close(dx, dx_ref, "float32", atol=1e-4, rtol=1e-4)
    assert_close(dw, dw_ref, "float32", atol=1e-4, rtol=1e-4)
    assert_close(db, db_ref, "float32", atol=1e-4, rtol=1e-4)


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
