"""Triton's front-end surface that real kernels and Triton's own test_core.py
use, run by the interpreter and checked against numpy:

* dtype attributes and lists (``exponent_bias``, ``SINT_TYPES``,
  ``is_int_signed``...), on the host and inside kernels; ``tl.pi32_t``;
* methods and attributes of Python numbers in kernels (``(0).to(tl.int64)``,
  ``(1.5).dtype``), and ``x.dtype`` feeding ``.to``;
* ``tl.constexpr_function`` host helpers called with constexprs;
* ``tl.range``'s scheduling keywords, ``tl.condition``, ``tl.assume``;
* ``tl.TRITON_MAX_TENSOR_NUMEL``, ``tl.slice``, ``tl.constexpr_type``.

Several kernels rewrite cases of Triton's test_core.py (test_constexpr,
test_assume, test_where with pointers, test_tl_range_*, test_dtype_tensor).
"""
from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.errors import CompilationError

# --------------------------------------------------------------------------- #
# dtype attributes on the host
# --------------------------------------------------------------------------- #

FLOAT_LAYOUT = {  # name: (bits, mantissa bits, exponent bias), IEEE / bfloat16
    "fp16": (16, 10, 15), "bf16": (16, 7, 127), "fp32": (32, 23, 127), "fp64": (64, 52, 1023),
}


@pytest.mark.parametrize("name", sorted(FLOAT_LAYOUT))
def test_float_dtype_layout(name):
    d = tl.dtype(name)
    bits, mantissa, bias = FLOAT_LAYOUT[name]
    assert (d.primitive_bitwidth, d.fp_mantissa_width, d.exponent_bias) == (bits, mantissa, bias)
    assert d.itemsize == bits // 8 and d.is_floating() and d.is_standard_floating() and not d.is_fp8()
    assert d.kind() is tl.dtype.KIND.FLOATING


def test_dtype_lists_are_tritons():
    assert tl.dtype.SINT_TYPES == ["int8", "int16", "int32", "int64"]
    assert tl.dtype.UINT_TYPES == ["int1", "uint8", "uint16", "uint32", "uint64"]
    assert tl.dtype.STANDARD_FP_TYPES == ["fp16", "bf16", "fp32", "fp64"]
    assert set(tl.dtype.STANDARD_FP_TYPES) <= set(tl.dtype.FP_TYPES)
    assert all(tl.dtype.is_dtype(n) for n in tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES + tl.dtype.FP_TYPES)
    assert not tl.dtype.is_dtype("int128")


@pytest.mark.parametrize("name", tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES)
def test_integer_dtype_attributes(name):
    d = tl.dtype(name)
    signed = name in tl.dtype.SINT_TYPES
    info = np.iinfo(np.bool_ if name == "int1" else name) if name != "int1" else None
    assert d.is_int() and d.is_int_signed() == signed and d.is_int_unsigned() == (not signed)
    assert d.int_signedness is (tl.dtype.SIGNEDNESS.SIGNED if signed else tl.dtype.SIGNEDNESS.UNSIGNED)
    assert getattr(d, f"is_{name}")() and not getattr(d, "is_int32" if name != "int32" else "is_int64")()
    if info is None:  # int1: a 1-bit unsigned integer, as in Triton
        assert (d.get_int_min_value(), d.get_int_max_value(), d.kind()) == (0, 1, tl.dtype.KIND.BOOLEAN)
    else:
        assert (d.get_int_min_value(), d.get_int_max_value()) == (info.min, info.max)
        assert d.primitive_bitwidth == d.int_bitwidth == info.bits and d.kind() is tl.dtype.KIND.INTEGRAL


def test_pointer_and_constexpr_types():
    assert tl.pi32_t == tl.pointer_type(tl.int32) and tl.pi32_t.is_ptr()
    assert tl.float16.codegen_name() == "float16" and tl.int8.codegen_name() == "int8"
    assert tl.block_type(tl.float16, (4, 8)).nbytes == 64
    assert tl.block_type(tl.float16, (4, 8)).with_element_ty(tl.int8) == tl.block_type(tl.int8, (4, 8))
    assert tl.constexpr(4).type == tl.constexpr_type(4) != tl.constexpr_type(5)
    assert tl.dtype(tl.constexpr("fp32")) == tl.float32
    assert tl.TRITON_MAX_TENSOR_NUMEL == 2**20


# --------------------------------------------------------------------------- #
# dtype attributes inside kernels
# --------------------------------------------------------------------------- #


@tilec.jit
def exponent_kernel(x_ptr, e_ptr, BLOCK: tl.constexpr):
    """The unbiased exponent of each float, from its bits and its dtype's layout."""
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    dt = x.dtype
    tl.static_assert(dt.name in tl.dtype.STANDARD_FP_TYPES and dt.is_floating())
    bits_type: tl.constexpr = tl.dtype("int" + str(dt.primitive_bitwidth))
    tl.static_assert(bits_type.is_int_signed() and bits_type.name in tl.dtype.SINT_TYPES)
    bits = x.to(bits_type, bitcast=True)
    exp_mask = (1 << (dt.primitive_bitwidth - dt.fp_mantissa_width - 1)) - 1
    exponent = (bits >> dt.fp_mantissa_width) & exp_mask
    tl.store(e_ptr + tl.arange(0, BLOCK), exponent.to(tl.int32) - dt.exponent_bias)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_dtype_layout_attributes_in_a_kernel(dtype):
    x = np.array([1.0, 0.75, 3.0, 1e3, -2.5, 1e-3, 65504.0, 6.1e-5], dtype)
    e = np.zeros(8, np.int32)
    exponent_kernel[(1,)](x, e, BLOCK=8)
    np.testing.assert_array_equal(e, np.frexp(x)[1] - 1)


@tilec.jit
def zeros_of_kernel(out_ptr, DTYPE: tl.constexpr):
    """Triton's test_dtype_tensor, storing what it makes."""
    t = tl.zeros((4,), DTYPE) + 3
    tl.static_assert(t.dtype == DTYPE)
    tl.store(out_ptr + tl.arange(0, 4), t)


@pytest.mark.parametrize("name", tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES[1:] + tl.dtype.STANDARD_FP_TYPES)
def test_dtype_tensor(name):
    out = np.zeros(4, np.float64)
    zeros_of_kernel[(1,)](out, DTYPE=tl.dtype(name))
    np.testing.assert_array_equal(out, 3)


# --------------------------------------------------------------------------- #
# Python numbers as tensors: methods and attributes
# --------------------------------------------------------------------------- #


@tilec.jit
def int64_accumulate_kernel(x_ptr, out_ptr, n):
    """``(0).to(tl.int64)`` starts an int64 sum that int32 loads promote into."""
    acc = (0).to(tl.int64)
    for i in range(n):
        acc += tl.load(x_ptr + i)
    tl.static_assert(acc.dtype == tl.int64)
    tl.store(out_ptr, acc)


def test_number_to_makes_a_typed_scalar_that_promotes():
    x = np.full(5, 2_000_000_000, np.int32)  # the sum overflows int32
    out = np.zeros(1, np.int64)
    int64_accumulate_kernel[(1,)](x, out, 5)
    assert out[0] == x.astype(np.int64).sum()


@tilec.jit
def literal_dtype_kernel(f32_ptr, f64_ptr, i64_ptr, i32_ptr):
    """Triton's test_constexpr: a literal's dtype is the type Triton gives it."""
    small = 1.5
    big = 1e50
    wide = 2**40
    tl.static_assert(small.dtype == tl.float32 and big.dtype == tl.float64)
    tl.static_assert(wide.dtype == tl.int64 and (5).dtype == tl.int32 and True.dtype == tl.int1)
    tl.store(f32_ptr.to(tl.pointer_type(small.dtype)), small)
    tl.store(f64_ptr.to(tl.pointer_type(big.dtype)), big)
    tl.store(i64_ptr.to(tl.pointer_type(wide.dtype)), wide)
    tl.store(i32_ptr, (7).to(tl.int8) * 100)  # int8 arithmetic wraps: 700 -> -68


def test_literal_dtypes_and_stores():
    f32, f64, i64, i32 = np.zeros(1, np.uint32), np.zeros(1, np.uint64), np.zeros(1, np.uint64), np.zeros(1, np.int32)
    literal_dtype_kernel[(1,)](f32, f64, i64, i32)
    assert f32.view(np.float32)[0] == 1.5 and f64.view(np.float64)[0] == 1e50 and i64[0] == 2**40
    assert i32[0] == np.int8(np.int16(700) & 0xFF)


@tilec.jit
def dtype_feeds_to_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    """``x.dtype`` compares, and feeds ``.to``: y is converted to x's type."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs).to(x.dtype)
    tl.static_assert(y.dtype == x.dtype and x.dtype != tl.float32)
    if x.dtype == tl.int16:
        y = y * 2
    tl.store(out_ptr + offs, x + y)


def test_dtype_attribute_feeds_to():
    x = np.arange(8, dtype=np.int16) - 3
    y = np.linspace(-3.7, 3.7, 8).astype(np.float32)
    out = np.zeros(8, np.int16)
    dtype_feeds_to_kernel[(1,)](x, y, out, BLOCK=8)
    np.testing.assert_array_equal(out, x + 2 * np.trunc(y).astype(np.int16))


def test_a_number_still_lacks_other_attributes():
    @tilec.jit
    def kernel(out_ptr):
        tl.store(out_ptr, (5).no_such_thing)

    with pytest.raises(CompilationError, match="int 5 has no attribute `no_such_thing`"):
        kernel.compile(np.zeros(1, np.int32))


# --------------------------------------------------------------------------- #
# constexpr_function
# --------------------------------------------------------------------------- #


@tl.constexpr_function
def block_for(n):
    """The power of two at least ``n`` and 16: host code, run at compile time."""
    return max(16, 1 << (n - 1).bit_length())


@tl.constexpr_function
def accumulator_for(dt):
    return tl.int64 if dt.is_int() else tl.float64


@tilec.jit
def constexpr_function_kernel(x_ptr, out_ptr, N: tl.constexpr):
    BLOCK: tl.constexpr = block_for(N)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N, other=0)
    total = tl.sum(x.to(accumulator_for(x.dtype)), axis=0)
    tl.static_assert(total.dtype == accumulator_for(tl.int32) and BLOCK == block_for(N))
    tl.store(out_ptr, total)


@pytest.mark.parametrize("n", [3, 16, 17, 40])
def test_constexpr_function_in_a_kernel(n):
    x = np.full(n, 2**30, np.int32)
    out = np.zeros(1, np.int64)
    constexpr_function_kernel[(1,)](x, out, N=n)
    assert out[0] == n * 2**30
    assert block_for(n) == max(16, 1 << (n - 1).bit_length())  # on the host too


def test_a_constexpr_function_is_keyed_by_its_source_in_the_disk_cache():
    from tilec.launch import cache

    assert cache.stable_token(block_for) == ("constexpr_function", cache.source_fingerprint(block_for.fn))
    x = np.zeros(4, np.int32)
    plan = constexpr_function_kernel.plan((x, np.zeros(1, np.int64)), {"N": 4})
    assert cache.kernel_key(constexpr_function_kernel.fn, plan.args, plan.options, "host")  # not Uncacheable


@tl.constexpr_function
def identity(x):
    return x


def test_constexpr_function_must_return_a_compile_time_value():
    @tilec.jit
    def kernel(x_ptr):
        tl.store(x_ptr, identity(tl.load(x_ptr)))

    with pytest.raises(CompilationError, match=r"constexpr_function `identity` returned tensor .*compile-time value"):
        kernel.compile(np.zeros(1, np.int32))


# --------------------------------------------------------------------------- #
# Loops: tl.range keywords, tl.condition
# --------------------------------------------------------------------------- #


@tilec.jit
def range_options_kernel(x_ptr, out_ptr, lo, hi, UNROLL: tl.constexpr, STAGES: tl.constexpr,
                         FLATTEN: tl.constexpr, WS: tl.constexpr, NO_MULTI_BUFFER: tl.constexpr,
                         NO_LICM: tl.constexpr):
    acc = 0.0
    for i in tl.range(lo, hi, 2, num_stages=STAGES, loop_unroll_factor=UNROLL, flatten=FLATTEN,
                      warp_specialize=WS, disallow_acc_multi_buffer=NO_MULTI_BUFFER, disable_licm=NO_LICM):
        acc += tl.load(x_ptr + i) * i
    tl.store(out_ptr, acc)


DEFAULT_RANGE_OPTIONS = dict(UNROLL=None, STAGES=None, FLATTEN=False, WS=False, NO_MULTI_BUFFER=False, NO_LICM=False)


@pytest.mark.parametrize("option", [{}, {"UNROLL": 4}, {"UNROLL": 1}, {"STAGES": 3}, {"FLATTEN": True},
                                    {"WS": True}, {"NO_MULTI_BUFFER": True}, {"NO_LICM": True}])
def test_range_keywords_loop_the_same(option):
    x = np.linspace(-2, 2, 16).astype(np.float32)
    out = np.zeros(1, np.float32)
    range_options_kernel[(1,)](x, out, 1, 14, **{**DEFAULT_RANGE_OPTIONS, **option})
    idx = np.arange(1, 14, 2)
    np.testing.assert_allclose(out[0], (x[idx] * idx).sum(), rtol=1e-6)
    range_options_kernel.compile(x, out, 1, 14, target="sm_90", **{**DEFAULT_RANGE_OPTIONS, **option})


@tilec.jit
def condition_kernel(x_ptr, out_ptr, limit):
    """Count the leading elements whose running sum stays below ``limit``."""
    i = 0
    total = tl.load(x_ptr)
    while tl.condition(total < limit, disable_licm=True):
        i += 1
        total += tl.load(x_ptr + i)
    tl.store(out_ptr, i)


def test_condition_is_a_while_test():
    x = np.array([3, 1, 4, 1, 5, 9, 2, 6], np.int32)
    out = np.zeros(1, np.int32)
    condition_kernel[(1,)](x, out, 14)
    assert out[0] == np.argmax(np.cumsum(x) >= 14)


def test_condition_only_tests_a_while_loop():
    @tilec.jit
    def kernel(x_ptr, n):
        if tl.condition(n > 0):
            tl.store(x_ptr, n)

    with pytest.raises(CompilationError, match=r"tl.condition\(...\) can only be the test of a `while` loop"):
        kernel.compile(np.zeros(1, np.int32), 3)


# --------------------------------------------------------------------------- #
# assume, slice, the tile size limit, pi32_t
# --------------------------------------------------------------------------- #


@tilec.jit
def assume_kernel(out_ptr, N: tl.constexpr, BLOCK_N: tl.constexpr):
    """Triton's test_assume."""
    current_size = N - tl.program_id(0) * BLOCK_N
    tl.assume(current_size >= BLOCK_N)
    tl.assume(True)
    if current_size >= 128:
        tl.store(out_ptr + tl.program_id(0), current_size)
    else:
        tl.store(out_ptr + tl.program_id(0), current_size + 101024)


def test_assume():
    out = np.zeros(8, np.float32)
    assume_kernel[(8,)](out, N=1024, BLOCK_N=128)
    np.testing.assert_array_equal(out, 1024 - 128 * np.arange(8))
    assume_kernel.compile(out, N=1024, BLOCK_N=128, target="sm_90")


def test_assume_needs_a_boolean():
    @tilec.jit
    def kernel(x_ptr):
        tl.assume(tl.load(x_ptr))

    with pytest.raises(CompilationError, match="`tl.assume` needs a boolean condition, got fp32"):
        kernel.compile(np.zeros(1, np.float32))


@tilec.jit
def slice_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = (tl.arange(0, BLOCK), 0, BLOCK)
    rows = offs[tl.slice(0, 2, None)][0]
    col = tl.load(x_ptr + rows)[tl.slice(None, None, None), None]
    tl.static_assert(col.shape == (BLOCK, 1) and len(offs[tl.slice(None, None, 2)]) == 2)
    tl.store(out_ptr + rows[:, None] + tl.zeros((1, 2), tl.int32), col * 2)


def test_slice_values_index_tuples_and_tiles():
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    slice_kernel[(1,)](x, out, BLOCK=4)
    np.testing.assert_array_equal(out, 2 * x)


def test_tiles_over_triton_max_tensor_numel_are_refused():
    @tilec.jit
    def kernel(out_ptr):
        t = tl.zeros((2 * tl.TRITON_MAX_TENSOR_NUMEL,), tl.int8)
        tl.store(out_ptr, tl.sum(t, axis=0))

    with pytest.raises(CompilationError, match="more than the limit of 1048576"):
        kernel.compile(np.zeros(1, np.int8))


@tilec.jit
def where_pointers_kernel(cond_ptr, a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    """Triton's test_where with TEST_POINTERS: int64s through tl.pi32_t and back."""
    offs = tl.arange(0, BLOCK)
    decide = tl.load(cond_ptr + offs)
    a = tl.load(a_ptr + offs).to(tl.pi32_t)
    b = tl.load(b_ptr + offs).to(tl.pi32_t)
    tl.static_assert(a.dtype == tl.pi32_t)
    tl.store(out_ptr + offs, tl.where(decide, a, b))


def test_where_on_pi32_t_pointers():
    rs = np.random.RandomState(17)
    cond = rs.randint(0, 2, 16).astype(np.bool_)
    a, b = rs.randint(0, 2**40, 16).astype(np.int64), rs.randint(0, 2**40, 16).astype(np.int64)
    out = np.zeros(16, np.int64)
    where_pointers_kernel[(1,)](cond, a, b, out, BLOCK=16)
    np.testing.assert_array_equal(out, np.where(cond, a, b))


# --------------------------------------------------------------------------- #
# Indexing with None and ':' (Triton's rule: ':' changes nothing)
# --------------------------------------------------------------------------- #


@tilec.jit
def scalar_index_kernel(x_ptr, z_ptr):
    """Triton's test_reduce with axis=None and keep_dims: a scalar pointer indexed
    ``[None, None, :]`` takes a (1, 1) tile; ``:`` past the dims changes nothing."""
    total = tl.sum(tl.load(x_ptr + tl.arange(0, 8)[:, None] * 4 + tl.arange(0, 4)[None, :]), axis=None,
                   keep_dims=True)
    z = z_ptr[None, None, :]
    tl.static_assert(z.shape == (1, 1) and total.shape == (1, 1) and tl.arange(0, 4)[:, :].shape == (4,))
    tl.store(z, total)


def test_none_and_colon_index_as_triton():
    x = np.arange(32, dtype=np.float32)
    z = np.zeros(1, np.float32)
    scalar_index_kernel[(1,)](x, z)
    assert z[0] == x.sum()


def test_none_past_the_dims_is_refused():
    @tilec.jit
    def kernel(x_ptr):
        tl.store(x_ptr + tl.arange(0, 4)[:, :, None], 1)

    with pytest.raises(CompilationError, match="the None at position 2 of the index is past the last dim of"):
        kernel.compile(np.zeros(4, np.int32))
