"""Memory ops through the public API: masked ``load``/``store`` with ``other``,
2-D tiles with strides, scalar pointers, cache hints and ``multiple_of`` /
``max_contiguous`` hints, for every dtype."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import ALL, FLOATS, INTS, NUMBERS, PROPERTY, assert_close, cast, empty, from_host, grid1, require, to_host, values

BLOCK = 16


@tilec.jit
def copy_other_kernel(x_ptr, z_ptr, n, limit, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    """Copies the first ``limit`` of ``n`` values; lanes at or past ``limit`` read ``OTHER``."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < limit, other=OTHER)
    tl.store(z_ptr + offs, x, mask=offs < n)


@pytest.mark.parametrize("dtype", ALL)
@PROPERTY
@given(data=st.data(), n=st.integers(1, 45))
def test_masked_load_other_and_masked_store(dtype, data, n):
    require(dtype)
    x = data.draw(values(dtype, n))
    limit = data.draw(st.integers(0, n))
    other = True if dtype == "int1" else 3
    z = empty(n + 5, dtype, fill=0)
    copy_other_kernel[grid1(n, BLOCK)](to_host(x, dtype), z, n, limit, OTHER=other, BLOCK=BLOCK)
    want = np.concatenate([cast(x[:limit], dtype), cast(np.full(n - limit, other), dtype), cast(np.zeros(5), dtype)])
    assert_close(z, want, dtype)


@tilec.jit
def other_tensor_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.load(y_ptr + offs)
    x = tl.load(x_ptr + offs, mask=offs < n, other=y)
    tl.store(z_ptr + offs, x)


def test_load_other_may_be_a_tensor():
    x = np.arange(16, dtype=np.float32)
    y = -np.arange(16, dtype=np.float32) - 100
    z = np.zeros(16, np.float32)
    other_tensor_kernel[(1,)](x, y, z, 9, BLOCK=16)
    np.testing.assert_array_equal(z, np.where(np.arange(16) < 9, x, y))



@tilec.jit
def broadcast_other_kernel(x_ptr, z_ptr, rows, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    offs = r[:, None] * BLOCK + r[None, :]
    x = tl.load(x_ptr + offs, mask=r[:, None] < rows, other=-r[None, :])
    tl.store(z_ptr + offs, x)


@PROPERTY
@given(rows=st.integers(0, 8))
def test_load_other_broadcast_from_a_row_keeps_the_loaded_lanes(rows):
    """``other`` broadcast along a dim (a strided view on the interpreter) fills only the masked-out lanes
    (the interpreter's fill copy kept the view's strides, so the loaded lanes were lost)."""
    x = np.arange(64, dtype=np.int32) + 100
    z = np.zeros(64, np.int32)
    broadcast_other_kernel[(1,)](x, z, rows, BLOCK=8)
    want = np.where(np.arange(8)[:, None] < rows, x.reshape(8, 8), -np.arange(8)[None, :])
    np.testing.assert_array_equal(z.reshape(8, 8), want)


@tilec.jit
def tile2d_kernel(x_ptr, z_ptr, M, N, stride_xm, stride_xn, stride_zm, stride_zn,
                  BM: tl.constexpr, BN: tl.constexpr):
    """Copies an M x N matrix through BM x BN tiles, writing it transposed."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :] * stride_xn, mask=mask)
    tl.store(z_ptr + rn[None, :] * stride_zm + rm[:, None] * stride_zn, x, mask=mask)


@pytest.mark.parametrize("dtype", ["int8", "int64", "float16", "float32", "float64"])
@PROPERTY
@given(data=st.data(), m=st.integers(1, 20), n=st.integers(1, 20), transposed_view=st.booleans())
def test_2d_tiles_with_strides(dtype, data, m, n, transposed_view):
    x = data.draw(values(dtype, (n, m) if transposed_view else (m, n)))
    x = x.T if transposed_view else x  # a non-contiguous view: strides come from the caller
    base = np.ascontiguousarray(x.T) if transposed_view else x
    sxm, sxn = (1, m) if transposed_view else (n, 1)
    z = np.zeros((n, m), x.dtype)
    grid = ((m + 7) // 8, (n + 3) // 4)
    tile2d_kernel[grid](base, z, m, n, sxm, sxn, m, 1, BM=8, BN=4)
    assert_close(z, x.T, dtype)


@tilec.jit
def scalar_pointer_kernel(x_ptr, z_ptr, i):
    v = tl.load(x_ptr + i)
    tl.store(z_ptr, v * 2)
    tl.store(z_ptr + 1, v + 1)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "float64"])
def test_scalar_load_and_store(dtype):
    x = cast(np.array([5, 9, 100, 7]), dtype)
    z = np.zeros(2, x.dtype)
    scalar_pointer_kernel[(1,)](x, z, 2)
    assert_close(z, np.array([200, 101]), dtype)


@tilec.jit
def hinted_copy_kernel(x_ptr, z_ptr, n, LOAD_CACHE: tl.constexpr, STORE_CACHE: tl.constexpr,
                       EVICTION: tl.constexpr, VOLATILE: tl.constexpr, BLOCK: tl.constexpr):
    start = tl.multiple_of(tl.program_id(0) * BLOCK, BLOCK)
    starts = tl.max_constancy(tl.zeros((BLOCK,), tl.int32) + start, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(starts + tl.arange(0, BLOCK), BLOCK), BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, cache_modifier=LOAD_CACHE, eviction_policy=EVICTION, volatile=VOLATILE)
    tl.store(z_ptr + offs, x, mask=mask, cache_modifier=STORE_CACHE, eviction_policy=EVICTION)


@pytest.mark.parametrize("dtype", ALL)
@PROPERTY
@given(data=st.data(), n=st.integers(1, 60), load_cache=st.sampled_from(["", ".ca", ".cg", ".cv"]),
       store_cache=st.sampled_from(["", ".wb", ".cg", ".cs", ".wt"]),
       eviction=st.sampled_from(["", "evict_first", "evict_last", "evict_normal"]), volatile=st.booleans())
def test_hints_and_cache_modifiers_do_not_change_results(dtype, data, n, load_cache, store_cache, eviction,
                                                          volatile):
    """Every cache hint on every dtype copies the values exactly (on a GPU
    they are the instructions' own qualifiers: tests/codegen/test_kernel_ptx.py)."""
    require(dtype)
    x = data.draw(values(dtype, n))
    z = empty(n, dtype)
    hinted_copy_kernel[grid1(n, BLOCK)](to_host(x, dtype), z, n, LOAD_CACHE=load_cache, STORE_CACHE=store_cache,
                                        EVICTION=eviction, VOLATILE=volatile, BLOCK=BLOCK)
    assert_close(z, x, dtype, ulps=0)


@pytest.mark.parametrize("options, what", [
    (dict(LOAD_CACHE=".cs"), "`tl.load` cache_modifier"), (dict(STORE_CACHE=".ca"), "`tl.store` cache_modifier"),
    (dict(EVICTION="evict_sometimes"), "`tl.load` eviction_policy"),
])
def test_an_unknown_cache_hint_is_an_error_at_its_line_and_writes_nothing(options, what):
    x, z = np.arange(4, dtype=np.float32), np.full(4, -1.0, np.float32)
    hints = {**dict(LOAD_CACHE="", STORE_CACHE="", EVICTION="", VOLATILE=False), **options}
    (given,) = options.values()
    with pytest.raises(tilec.CompilationError, match=rf"{what} must be one of .*; got '{given}'") as e:
        hinted_copy_kernel[(1,)](x, z, 4, BLOCK=BLOCK, **hints)
    assert "cache_modifier=" in open(e.value.file).read().splitlines()[e.value.line - 1]
    np.testing.assert_array_equal(z, np.full(4, -1.0, np.float32))


@tilec.jit
def volatile_kernel(x_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, volatile=True))


def test_volatile_load():
    x = np.arange(8, dtype=np.int32) * -3
    z = np.zeros(8, np.int32)
    volatile_kernel[(1,)](x, z, BLOCK=8)
    np.testing.assert_array_equal(z, x)


@tilec.jit
def store_cast_kernel(x_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs))


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("float64", "float16"), ("int32", "float32"),
                                     ("int64", "int8"), ("float32", "int1")])
def test_store_casts_to_the_pointee_type(src, dst):
    """Triton's rule: ``store`` converts the value to the pointer's element type."""
    x = cast(np.array([1.75, -2.5, 300.0, 0.0, -0.25, 7.0, 65.0, -9.0]), src)
    z = empty(8, dst)
    store_cast_kernel[(1,)](to_host(x, src), z, BLOCK=8)
    want = np.trunc(x.astype(np.float64)).astype(np.int64) if src in FLOATS and dst in INTS else x
    assert_close(z, want, dst)


@tilec.jit
def pointer_offset_kernel(x_ptr, z_ptr, n, BLOCK: tl.constexpr):
    """Pointer arithmetic in elements, with negative and int64 offsets."""
    offs = tl.arange(0, BLOCK)
    last = x_ptr + (n - 1)
    x = tl.load(last - offs, mask=offs < n)
    big = offs.to(tl.int64) + 0
    tl.store(z_ptr + big, x, mask=offs < n)


@pytest.mark.parametrize("dtype", NUMBERS)
def test_pointer_arithmetic_counts_elements(dtype):
    require(dtype)
    x = cast(np.arange(11) * 3 - 7, dtype)
    z = empty(11, dtype)
    pointer_offset_kernel[(1,)](to_host(x, dtype), z, 11, BLOCK=16)
    assert_close(z, from_host(to_host(x, dtype))[::-1], dtype)
