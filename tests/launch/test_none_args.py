"""``None`` for any kernel parameter (Triton's rule): it is a constexpr None,
so each launch with it selects its own variant, and ``if ptr is not None:`` /
``if ptr is None:`` fold at compile time.  Real libraries pass None for an
optional bias or residual pointer.
"""
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tilec
import tilec.language as tl
from launch.kernels import fresh

E2E = settings(max_examples=15, deadline=None)
DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint32", "float16", "float32", "float64"]


@tilec.jit
def bias_kernel(x_ptr, bias_ptr, scale, out_ptr, n, BLOCK: tl.constexpr):
    """out = x (+ bias when given) (* scale when given, else * 3)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m)
    if bias_ptr is not None:
        v += tl.load(bias_ptr + offs, mask=m)
    if scale is None:
        v = v * 3
    else:
        v = v * scale
    tl.store(out_ptr + offs, v, mask=m)


@tilec.jit
def unguarded_kernel(x_ptr, bias_ptr, out_ptr):
    offs = tl.arange(0, 16)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(bias_ptr + offs))


def expected(x, bias, scale):
    v = x if bias is None else x + bias
    return v * (3 if scale is None else scale)


@E2E
@given(dtype=st.sampled_from(DTYPES), n=st.integers(1, 70), with_bias=st.booleans(),
       scale=st.sampled_from([None, 2]), data=st.data())
def test_none_folds_the_branches_away(dtype, n, with_bias, scale, data):
    elems = hnp.arrays(dtype, n, elements=st.integers(0, 20))
    x = data.draw(elems)
    bias = data.draw(elems) if with_bias else None
    out = np.zeros(n, dtype)
    bias_kernel[(tilec.cdiv(n, 16),)](x, bias, scale, out, n, BLOCK=16)
    np.testing.assert_array_equal(out, expected(x, bias, scale).astype(dtype))


def test_each_none_selects_its_own_variant():
    kernel = fresh(bias_kernel)
    x, out = np.arange(20, dtype=np.float32), np.zeros(20, np.float32)
    for bias in (None, x, None):
        for scale in (None, 2.0):
            kernel[(2,)](x, bias, scale, out, 20, BLOCK=16)
    assert len(kernel.cache) == 4
    none_keys = [k for k in kernel.cache if k[0][1] == (None, type(None), None)]
    assert len(none_keys) == 2


def test_a_none_pointer_is_no_kernel_parameter_on_the_gpu():
    x, out = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    with_bias = bias_kernel.compile(x, x, 2.0, out, 16, BLOCK=16, target="sm_80").asm["ptx"]
    without = bias_kernel.compile(x, None, None, out, 16, BLOCK=16, target="sm_80").asm["ptx"]
    assert len(re.findall(r"\.param\s", without)) == len(re.findall(r"\.param\s", with_bias)) - 2


def test_none_for_a_constexpr_still_works():
    @tilec.jit
    def k(out_ptr, FLAG: tl.constexpr):
        tl.store(out_ptr, 1 if FLAG is None else 2)

    out = np.zeros(1, np.int32)
    k[(1,)](out, None)
    assert out[0] == 1


def test_using_a_none_pointer_is_a_compilation_error_at_its_line():
    x, out = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    with pytest.raises(tilec.CompilationError, match=r"test_none_args\.py:\d+: .*NoneType") as e:
        unguarded_kernel[(1,)](x, None, out)
    assert "tl.load(bias_ptr + offs)" in str(e.value)
    assert (out == 0).all()
