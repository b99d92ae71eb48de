"""Small names of Triton 3.6's ``triton.language`` (issue 17): ``tl.bitonic_merge``
against numpy (the network on any input, a sort on a bitonic one), on the
host interpreter and compiled for sm_90 (ptxas included)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from tilec.errors import CompilationError
from helpers import FEW, NUMBERS, assert_close, cast, empty, require, to_host, values


def merge_network(x: np.ndarray, descending: bool) -> np.ndarray:
    """Triton's bitonic merge along the last dim: compare-and-swap at strides
    n/2 .. 1, swapping a pair (lower, upper) where lower > upper (ascending)
    or lower < upper (descending); a NaN swaps nothing."""
    x = x.copy()
    n = x.shape[-1]
    stride = n // 2
    while stride >= 1:
        for i in range(n):
            if i & stride:
                continue
            lo, hi = x[..., i].copy(), x[..., i + stride].copy()
            swap = lo < hi if descending else lo > hi
            x[..., i], x[..., i + stride] = np.where(swap, hi, lo), np.where(swap, lo, hi)
        stride //= 2
    return x


@tilec.jit
def bitonic_merge_kernel(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, DESCENDING: tl.constexpr):
    where = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    z = tl.bitonic_merge(tl.load(x_ptr + where), descending=DESCENDING)
    tl.static_assert(z.shape == (M, N))
    tl.store(z_ptr + where, z)


@pytest.mark.parametrize("dtype", NUMBERS)
@FEW
@given(data=st.data(), m=st.sampled_from([1, 2, 4]), n=st.sampled_from([1, 2, 8, 32]), descending=st.booleans())
def test_bitonic_merge_is_tritons_network(dtype, data, m, n, descending):
    require(dtype)
    x = cast(data.draw(values(dtype, (m, n), finite=True)), dtype)
    z = empty((m, n), dtype)
    bitonic_merge_kernel[(1,)](to_host(x, dtype), z, M=m, N=n, DESCENDING=descending)
    assert_close(z, merge_network(x, descending), dtype)


@pytest.mark.parametrize("descending", [False, True])
def test_bitonic_merge_sorts_a_bitonic_sequence(descending):
    rng = np.random.default_rng(7)
    rows = [np.concatenate([np.sort(rng.standard_normal(k)), -np.sort(-rng.standard_normal(32 - k))])
            for k in (0, 5, 16, 31)]
    x = np.stack(rows).astype(np.float32)
    z = np.empty_like(x)
    bitonic_merge_kernel[(1,)](x, z, M=4, N=32, DESCENDING=descending)
    want = np.sort(x, axis=-1)
    np.testing.assert_array_equal(z, want[:, ::-1] if descending else want)


@tilec.jit
def bitonic_merge_dim0_kernel(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    tl.store(x_ptr + tl.arange(0, 8), tl.reshape(tl.bitonic_merge(x[None, :], dim=0), (8,)))


def test_bitonic_merge_along_another_dim_is_refused():
    with pytest.raises(CompilationError, match="`tl.bitonic_merge` sorts along the last dim only"):
        bitonic_merge_dim0_kernel[(1,)](np.zeros(8, np.float32))


def test_bitonic_merge_compiles_for_sm_90():
    f32 = np.zeros(128, np.float32)
    assert "cubin" in bitonic_merge_kernel.compile(f32, f32, M=4, N=32, DESCENDING=True, target="sm_90").asm
