"""Creation and shape ops through the public API: ``arange``, ``zeros``,
``full``, ``zeros_like``, ``None`` indexing, ``expand_dims``, ``broadcast``,
``broadcast_to``, ``reshape``, ``view``, ``ravel``, ``trans``, ``permute``,
``join``, ``split``, ``interleave``."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import ALL, PROPERTY, assert_close, cast, empty, exact, require, to_host, values

SHAPE_DTYPES = ("int1", "int8", "uint16", "int32", "int64", "float16", "bfloat16", "float32", "float64")


@tilec.jit
def load_2d(x_ptr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    return tl.load(x_ptr + rm[:, None] * BN + rn[None, :])


@tilec.jit
def store_flat(z_ptr, value, SIZE: tl.constexpr):
    """Stores any tile of SIZE elements in row-major order."""
    tl.store(z_ptr + tl.arange(0, SIZE), tl.reshape(value, SIZE))


def run(kernel, inputs, out_shape, out_dtype, **meta):
    z = empty(out_shape, out_dtype)
    kernel[(1,)](*(to_host(v, d) for v, d in inputs), z, **meta)
    return z


@tilec.jit
def creation_kernel(z_ptr, x_ptr, START: tl.constexpr, END: tl.constexpr, DT: tl.constexpr, FILL: tl.constexpr):
    n: tl.constexpr = END - START
    r = tl.arange(START, END)
    tl.static_assert(r.dtype == tl.int32)
    x = tl.load(x_ptr + r - START)
    tl.store(z_ptr + tl.arange(0, n), r.to(DT))
    tl.store(z_ptr + n + tl.arange(0, n), tl.zeros((n,), DT))
    tl.store(z_ptr + 2 * n + tl.arange(0, n), tl.full((n,), FILL, DT))
    tl.store(z_ptr + 3 * n + tl.arange(0, n), tl.zeros_like(x))
    tl.store(z_ptr + 4 * n + tl.arange(0, n), tl.full([n], FILL, DT))


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("start,end", [(0, 8), (5, 9), (3, 4), (16, 32)])
def test_creation_ops(dtype, start, end):
    require(dtype)
    n = end - start
    fill = True if dtype == "int1" else 7
    x = cast(np.arange(n) % 2, dtype)
    z = empty(5 * n, dtype, fill=1)
    creation_kernel[(1,)](z, to_host(x, dtype), START=start, END=end, DT=getattr(tl, dtype), FILL=fill)
    want = np.concatenate([np.arange(start, end), np.zeros(n), np.full(n, fill), np.zeros(n), np.full(n, fill)])
    assert_close(z, want, dtype)


@tilec.jit
def outer_kernel(a_ptr, b_ptr, c_ptr, z_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    """z[i, j, k] = a[i] * 100 + b[j] * 10 + c[k] through None indexing and expand_dims."""
    a = tl.load(a_ptr + tl.arange(0, A))
    b = tl.load(b_ptr + tl.arange(0, B))
    c = tl.load(c_ptr + tl.arange(0, C))
    bb = tl.expand_dims(tl.expand_dims(b, 0), 2)
    z = a[:, None, None] * 100 + bb * 10 + c[None, None, :]
    tl.static_assert(z.shape == (A, B, C))
    store_flat(z_ptr, z, A * B * C)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_none_indexing_and_expand_dims_broadcast(dtype):
    a, b, c = (cast(np.arange(k) + k, dtype) for k in (2, 4, 8))
    z = run(outer_kernel, [(a, dtype), (b, dtype), (c, dtype)], 64, dtype, A=2, B=4, C=8)
    want = a[:, None, None] * 100 + b[None, :, None] * 10 + c[None, None, :]
    assert_close(z, want.ravel(), dtype)


@tilec.jit
def broadcast_kernel(x_ptr, y_ptr, z_ptr, BM: tl.constexpr, BN: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BN))[None, :]
    y = tl.load(y_ptr + tl.arange(0, BM))[:, None]
    bx, by = tl.broadcast(x, y)
    tl.static_assert(bx.shape == by.shape)
    wide = tl.broadcast_to(x, (BM, BN))
    store_flat(z_ptr, bx * 1000 + by + wide * 0, BM * BN)


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_broadcast_and_broadcast_to(dtype):
    x, y = cast(np.arange(8), dtype), cast(np.arange(4) * 3, dtype)
    z = run(broadcast_kernel, [(x, dtype), (y, dtype)], 32, dtype, BM=4, BN=8)
    assert_close(z, (x[None, :] * 1000 + y[:, None]).ravel(), dtype)


@tilec.jit
def reshape_kernel(x_ptr, z_ptr, BM: tl.constexpr, BN: tl.constexpr):
    x = load_2d(x_ptr, BM, BN)
    r = tl.reshape(x, (BN, BM))
    tl.static_assert(r.shape == (BN, BM))
    r3 = r.reshape(BN, 2, BM // 2)
    store_flat(z_ptr, r3, BM * BN)
    store_flat(z_ptr + BM * BN, tl.ravel(x), BM * BN)


@pytest.mark.parametrize("dtype", SHAPE_DTYPES)
@PROPERTY
@given(data=st.data(), bm=st.sampled_from([2, 4, 8]), bn=st.sampled_from([1, 2, 8, 16]))
def test_reshape_and_ravel_keep_row_major_order(dtype, data, bm, bn):
    require(dtype)
    x = data.draw(values(dtype, (bm, bn)))
    z = run(reshape_kernel, [(x, dtype)], 2 * bm * bn, dtype, BM=bm, BN=bn)
    assert_close(z, np.concatenate([x.ravel(), x.ravel()]), dtype)


@tilec.jit
def view_kernel(x_ptr, z_ptr, BM: tl.constexpr, BN: tl.constexpr):
    x = load_2d(x_ptr, BM, BN)
    v = tl.view(x, (BN, BM))
    tl.static_assert(v.shape == (BN, BM))
    store_flat(z_ptr, v, BM * BN)


def test_view_keeps_the_elements():
    """``view`` may reorder elements (Triton's contract): only the multiset is fixed."""
    x = np.arange(32, dtype=np.int32).reshape(4, 8) * 7 - 50
    z = run(view_kernel, [(x, "int32")], 32, "int32", BM=4, BN=8)
    np.testing.assert_array_equal(np.sort(z), np.sort(x.ravel()))


@tilec.jit
def trans_kernel(x_ptr, z_ptr, BM: tl.constexpr, BN: tl.constexpr):
    x = load_2d(x_ptr, BM, BN)
    t = tl.trans(x)
    tl.static_assert(t.shape == (BN, BM))
    store_flat(z_ptr, t, BM * BN)
    store_flat(z_ptr + BM * BN, x.trans(1, 0), BM * BN)


@pytest.mark.parametrize("dtype", SHAPE_DTYPES)
@PROPERTY
@given(data=st.data(), bm=st.sampled_from([1, 2, 4, 8]), bn=st.sampled_from([2, 4, 16]))
def test_trans(dtype, data, bm, bn):
    require(dtype)
    x = data.draw(values(dtype, (bm, bn)))
    z = run(trans_kernel, [(x, dtype)], 2 * bm * bn, dtype, BM=bm, BN=bn)
    assert_close(z, np.concatenate([x.T.ravel(), x.T.ravel()]), dtype)


@tilec.jit
def permute_kernel(x_ptr, z_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr,
                   D0: tl.constexpr, D1: tl.constexpr, D2: tl.constexpr):
    i = tl.arange(0, A)[:, None, None]
    j = tl.arange(0, B)[None, :, None]
    k = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + i * B * C + j * C + k)
    store_flat(z_ptr, tl.permute(x, (D0, D1, D2)), A * B * C)
    store_flat(z_ptr + A * B * C, x.permute(D0, D1, D2), A * B * C)


@pytest.mark.parametrize("dims", [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0), (0, 2, 1)])
@pytest.mark.parametrize("dtype", ["int8", "float32", "float64"])
def test_permute(dims, dtype):
    x = cast(np.arange(64).reshape(2, 4, 8) - 20, dtype)
    z = run(permute_kernel, [(x, dtype)], 128, dtype, A=2, B=4, C=8, D0=dims[0], D1=dims[1], D2=dims[2])
    want = np.transpose(x, dims).ravel()
    assert_close(z, np.concatenate([want, want]), dtype)


@tilec.jit
def join_split_kernel(a_ptr, b_ptr, j_ptr, s_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    j = tl.join(a, b)
    tl.static_assert(j.shape == (N, 2))
    store_flat(j_ptr, j, 2 * N)
    lo, hi = tl.split(j * 2)
    tl.store(s_ptr + offs, lo)
    tl.store(s_ptr + N + offs, hi)
    store_flat(s_ptr + 2 * N, tl.interleave(b, a), 2 * N)


@pytest.mark.parametrize("dtype", SHAPE_DTYPES[1:])
@PROPERTY
@given(data=st.data(), n=st.sampled_from([1, 2, 8, 16]))
def test_join_split_interleave(dtype, data, n):
    require(dtype)
    a, b = data.draw(values(dtype, n, lo=-100, hi=100)), data.draw(values(dtype, n, lo=-100, hi=100))
    j, s = empty(2 * n, dtype), empty(4 * n, dtype)
    join_split_kernel[(1,)](to_host(a, dtype), to_host(b, dtype), j, s, N=n)
    assert_close(j, np.stack([a, b], -1).ravel(), dtype)
    ae, be = exact(a, dtype), exact(b, dtype)
    assert_close(s, np.concatenate([ae * 2, be * 2, np.stack([be, ae], -1).ravel()]), dtype)


@tilec.jit
def join_scalars_kernel(a_ptr, b_ptr, j_ptr, i_ptr):
    a, b = tl.load(a_ptr), tl.load(b_ptr)
    j = tl.join(a, b)
    tl.static_assert(j.shape == (2,))
    tl.store(j_ptr + tl.arange(0, 2), j)
    tl.store(i_ptr + tl.arange(0, 2), tl.interleave(b, a))


@pytest.mark.parametrize("dtype", SHAPE_DTYPES[1:])
@PROPERTY
@given(data=st.data())
def test_join_and_interleave_of_scalars_are_pairs(dtype, data):
    """As in Triton: two scalars join into a (2,) tile (the GPU's layout pass once crashed on them)."""
    require(dtype)
    a, b = data.draw(values(dtype, 1)), data.draw(values(dtype, 1))
    j, i = empty(2, dtype), empty(2, dtype)
    join_scalars_kernel[(1,)](to_host(a, dtype), to_host(b, dtype), j, i)
    assert_close(j, np.concatenate([a, b]), dtype)
    assert_close(i, np.concatenate([b, a]), dtype)


@tilec.jit
def split_2d_kernel(x_ptr, z_ptr, BM: tl.constexpr):
    """Split along a trailing size-2 axis of a 3-D tile, the shape Triton's split needs."""
    i = tl.arange(0, BM)[:, None, None]
    j = tl.arange(0, 4)[None, :, None]
    k = tl.arange(0, 2)[None, None, :]
    x = tl.load(x_ptr + i * 8 + j * 2 + k)
    even, odd = x.split()
    tl.static_assert(even.shape == (BM, 4))
    store_flat(z_ptr, even - odd, BM * 4)


def test_split_of_a_3d_tile():
    x = (np.arange(32, dtype=np.int32) ** 2).reshape(4, 4, 2)
    z = run(split_2d_kernel, [(x, "int32")], 16, "int32", BM=4)
    np.testing.assert_array_equal(z, (x[..., 0] - x[..., 1]).ravel())


@tilec.jit
def full_like_kernel(x_ptr, z_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    same = tl.full_like(x, 3)
    tl.static_assert(same.dtype == x.dtype)
    tl.store(z_ptr + offs, same)
    tl.store(y_ptr + offs, tl.full_like(x, 2.5, dtype=tl.float32))


def test_full_like():
    x = np.arange(8, dtype=np.int16)
    z, y = np.zeros(8, np.int16), np.zeros(8, np.float32)
    full_like_kernel[(1,)](x, z, y, BLOCK=8)
    np.testing.assert_array_equal(z, np.full(8, 3))
    np.testing.assert_array_equal(y, np.full(8, 2.5))
