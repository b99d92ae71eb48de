"""Bugs the differential fuzzer (``tests/fuzz``) found, each cut down to the
smallest kernel that shows it and checked against numpy."""
from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import FEW, assert_close, empty, from_host, require, to_host

# An int argument equal to 1 is specialised away (as Triton does); it used to become a
# weakly typed Python 1 in the kernel, so the kernel meant something else when it was 1.
SCALARS = st.sampled_from([1, 1, -3, 2, 7, 200])


@tilec.jit
def scale_by_scalar(x_ptr, z_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(z_ptr + offs, x * s.to(tl.float32), mask=offs < n)


@FEW
@given(s=SCALARS, n=st.integers(1, 16))
def test_to_on_an_int_argument_equal_to_one(s, n):
    """``s.to(...)`` raised "int 1 has no attribute `to`" when ``s`` was 1."""
    x = np.arange(n, dtype=np.float32) - 4
    z = np.zeros(n, np.float32)
    scale_by_scalar[(1,)](x, z, s, n, BLOCK=16)
    np.testing.assert_array_equal(z, x * np.float32(s))


@tilec.jit
def add_scalar(x_ptr, z_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(z_ptr + offs, x + s, mask=offs < n)


@FEW
@given(dtype=st.sampled_from(["bfloat16", "int8", "uint8", "float16"]), s=SCALARS, n=st.integers(1, 16))
def test_an_int_argument_equal_to_one_promotes_as_int32(dtype, s, n):
    """``x + s`` computes in promote(x, int32) for every ``s``: bf16 + 1 used to round in
    bf16, int8 + 1 to wrap in int8 (silently, only when ``s`` was 1)."""
    require(dtype)
    x = np.array([127, -128 if dtype[0] != "u" else 255, -2429, 3, 0, 100] * 3)[:n]
    out = "float32" if dtype == "bfloat16" else "int32" if dtype in ("int8", "uint8") else dtype
    host = to_host(x, dtype)
    z = empty(n, out)
    add_scalar[(1,)](host, z, s, n, BLOCK=16)
    assert_close(z, from_host(host).astype(np.float64 if out[0] == "f" else np.int64) + s, out)
