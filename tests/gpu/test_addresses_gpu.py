"""Addresses of pointer tiles on the GPU (codegen_llvm/addresses.py: a per-thread
base plus constant byte offsets), against the host interpreter: masked copies
whose int32 offsets pass the int32 limit and come back, ragged lengths, every
element size; and a ragged 2**16 tile."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl

pytestmark = pytest.mark.gpu

BLOCK = 1024


@tilec.jit
def shifted_copy(x_ptr, y_ptr, n, start, BLOCK: tl.constexpr):
    """``offs`` wraps past the int32 limit where ``start`` is near it; ``offs - start`` comes back."""
    offs = start + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    local = offs - start
    mask = local < n
    tl.store(y_ptr + local, tl.load(x_ptr + local, mask=mask) + 1, mask=mask)


@tilec.jit
def add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


NEAR_LIMITS = st.one_of(st.integers(2**31 - 3 * BLOCK, 2**31 - 1), st.integers(-2**31, -2**31 + 3 * BLOCK),
                        st.integers(-5, 5))


@given(n=st.integers(1, 3 * BLOCK), start=NEAR_LIMITS, dtype=st.sampled_from([np.int8, np.float16, np.float32,
                                                                                  np.int64]))
def test_offsets_that_wrap_and_come_back_match_the_interpreter(torch, n, start, dtype):
    x = (np.arange(n + 7) % 100).astype(dtype)
    want, got = np.full(n + 7, 3, dtype), torch.full((n + 7,), 3, dtype=getattr(torch, np.dtype(dtype).name),
                                                     device="cuda")
    grid = (tilec.cdiv(n, BLOCK),)
    shifted_copy[grid](x, want, n, start, BLOCK=BLOCK)
    shifted_copy[grid](torch.from_numpy(x).cuda(), got, n, start, BLOCK=BLOCK)
    np.testing.assert_array_equal(got.cpu().numpy(), want)


@pytest.mark.parametrize("short", [0, 3])
def test_a_two_to_the_sixteen_tile_adds_right(torch, short):
    n = 3 * 2**16 - short
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.full((n,), float("nan"), device="cuda")
    add_kernel[(3,)](x, y, z, n, BLOCK=2**16)
    assert torch.equal(z, x + y)
