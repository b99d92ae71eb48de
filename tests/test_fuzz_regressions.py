"""Bugs the differential fuzzer (``tests/fuzz``) found, each cut down to the
smallest kernel that shows it and checked against numpy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import FEW


@tilec.jit
def scale_by_scalar(x_ptr, z_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(z_ptr + offs, x * s.to(tl.float32), mask=offs < n)


@FEW
@given(s=st.sampled_from([1, 1, -3, 2, 7]), n=st.integers(1, 16))
def test_methods_of_an_int_argument_equal_to_one(s, n):
    """An int argument equal to 1 is specialised to a constant; ``s.to(...)`` must still
    compile and mean what it means for any other value (it raised "int 1 has no attribute")."""
    x = np.arange(n, dtype=np.float32) - 4
    z = np.zeros(n, np.float32)
    scale_by_scalar[(1,)](x, z, s, n, BLOCK=16)
    np.testing.assert_array_equal(z, x * np.float32(s))
