"""``>>`` and ``<<`` on every pair of integer dtypes, and with Python numbers on
either side, against a Python-int model of Triton's rule:

* the result has the promoted type (C's usual conversions, ``int1`` unsigned);
* ``>>`` is arithmetic when the LEFT operand's own type is signed, logical
  otherwise, whatever the promoted type (``int8 >> uint8`` is a uint8 that
  keeps the int8's sign fill: ``[-100, -1] >> [2, 1]`` is ``[231, 255]``);
* the count is read unsigned in the promoted type; a count of the bit width or
  more gives 0 for ``<<`` and the sign fill (0 or all ones) for ``>>``.

The model shifts the left operand's *value*: ``x >> s`` is ``floor(x / 2**s)``
wrapped to the result type, which is what an arithmetic shift of a
sign-extended value (or a logical shift of a zero-extended one) computes.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from kernels.ops import op_shl, op_shr
from helpers import INTS, PROPERTY, UINTS, cast, empty, from_host, to_host, values, wrap

INT_DTYPES = ("int1",) + INTS


def bits(dtype: str) -> int:
    return 1 if dtype == "int1" else np.dtype(dtype).itemsize * 8


def is_unsigned(dtype: str) -> bool:
    """Triton counts ``int1`` as unsigned."""
    return dtype == "int1" or dtype in UINTS


def promote(a: str, b: str) -> str:
    """C's usual arithmetic conversions on two int dtypes (Triton's ``integer_promote``)."""
    if is_unsigned(a) == is_unsigned(b):
        return a if bits(a) > bits(b) else b
    unsigned, signed = (a, b) if is_unsigned(a) else (b, a)
    return unsigned if bits(unsigned) >= bits(signed) else signed


def shift_model(x: int, y: int, out: str, left: bool) -> int:
    """One element of ``x << y`` or ``x >> y`` computed in ``out``, before the wrap."""
    count = y % (1 << bits(out))
    if left:
        return 0 if count >= bits(out) else x << count
    return x >> count  # Python's >> floors: the sign fill of a signed x


def expected(x, y, out: str, left: bool) -> np.ndarray:
    got = [shift_model(int(a), int(b), out, left) for a, b in zip(x, y)]
    if out == "int1":
        return np.array([v % 2 for v in got], np.bool_)
    return wrap(np.array(got, dtype=object), out)


def check_shift(z, x, y, out: str, left: bool):
    np.testing.assert_array_equal(from_host(z), expected(x, y, out, left))


@tilec.jit
def shift_kernel(x_ptr, y_ptr, right_ptr, left_ptr, n, OUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    right, left = x >> y, x << y
    tl.static_assert(right.dtype == OUT)
    tl.static_assert(left.dtype == OUT)
    tl.store(right_ptr + offs, right, mask=mask)
    tl.store(left_ptr + offs, left, mask=mask)


def run_shifts(x, a: str, y, b: str):
    x, y, out = cast(x, a), cast(y, b), promote(a, b)
    right, left = empty(len(x), out), empty(len(x), out)
    shift_kernel[(1,)](to_host(x, a), to_host(y, b), right, left, len(x), OUT=getattr(tl, out), BLOCK=32)
    check_shift(right, x, y, out, left=False)
    check_shift(left, x, y, out, left=True)


def test_signed_shifted_by_unsigned_keeps_its_sign_fill():
    """The issue's case: int8 >> uint8 is a uint8, shifted arithmetically (Triton gives [231, 255])."""
    right = empty(2, "uint8")
    shift_kernel[(1,)](np.array([-100, -1], np.int8), np.array([2, 1], np.uint8), right, empty(2, "uint8"), 2,
                       OUT=tl.uint8, BLOCK=32)
    np.testing.assert_array_equal(right, [231, 255])


@pytest.mark.parametrize("a", INT_DTYPES)
@PROPERTY
@given(data=st.data(), n=st.integers(1, 32))
def test_shift_of_every_dtype_pair(a, data, n):
    """Any counts, large and negative ones included (a count is read unsigned)."""
    b = data.draw(st.sampled_from(INT_DTYPES))
    x = data.draw(values(a, n))
    small = st.integers(0, bits(promote(a, b)) + 1)
    y = data.draw(st.one_of(values(b, n), st.lists(small, min_size=n, max_size=n).map(np.array)))
    run_shifts(x, a, y, b)


@tilec.jit
def op_rshr(x, y):
    return y >> x


@tilec.jit
def op_rshl(x, y):
    return y << x


@tilec.jit
def number_kernel(x_ptr, z_ptr, n, FN: tl.constexpr, S: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    z = FN(tl.load(x_ptr + offs, mask=mask), S)
    tl.static_assert(z.dtype == OUT)
    tl.store(z_ptr + offs, z, mask=mask)


NUMBER_SHIFTS = {  # FN -> (the number is on the left, the op is <<)
    op_shr: (False, False), op_shl: (False, True), op_rshr: (True, False), op_rshl: (True, True),
}


@pytest.mark.parametrize("fn", list(NUMBER_SHIFTS), ids=["x>>S", "x<<S", "S>>x", "S<<x"])
@pytest.mark.parametrize("dtype", INTS)
@PROPERTY
@given(data=st.data(), n=st.integers(1, 32))
def test_shift_with_a_python_number(fn, dtype, data, n):
    """A number takes the tensor's type (it is weak), so the tensor's signedness decides."""
    number_on_left, left = NUMBER_SHIFTS[fn]
    x = data.draw(values(dtype, n))
    info = np.iinfo(dtype)
    s = data.draw(st.integers(int(info.min), int(info.max)) if number_on_left else st.integers(0, bits(dtype) + 3))
    z = empty(n, dtype)
    number_kernel[(1,)](to_host(x, dtype), z, n, FN=fn, S=s, OUT=getattr(tl, dtype), BLOCK=32)
    lhs, rhs = ([s] * n, x) if number_on_left else (x, [s] * n)
    check_shift(z, lhs, rhs, dtype, left)


@tilec.jit
def scalar_shift_kernel(x_ptr, y_ptr, z_ptr):
    tl.store(z_ptr, tl.load(x_ptr) >> tl.load(y_ptr))


@pytest.mark.parametrize("a,b", [("int8", "uint8"), ("int16", "uint32"), ("uint8", "int8"), ("int64", "uint64")])
def test_scalar_shift_follows_the_left_operand(a, b):
    x, y = np.array([-100]).astype(a), np.array([3]).astype(b)
    out = promote(a, b)
    z = empty(1, out)
    scalar_shift_kernel[(1,)](x, y, z)
    check_shift(z, x, y, out, left=False)


@pytest.mark.parametrize("a,b,instruction", [("int8", "uint8", "ashr i8"), ("uint8", "int8", "lshr i8"),
                                             ("int16", "uint32", "ashr i32"), ("int32", "int32", "ashr i32"),
                                             ("uint32", "int64", "lshr i64")])
def test_right_shift_lowers_to_the_left_operands_shift(a, b, instruction):
    """The LLVM IR for sm_90 uses ashr exactly when the left operand is signed."""
    x, y = np.zeros(4, a), np.zeros(4, b)
    out = promote(a, b)
    k = shift_kernel.compile(x, y, empty(4, out), empty(4, out), 4, OUT=getattr(tl, out), BLOCK=32, target="sm_90")
    other = instruction.replace("ashr", "?").replace("lshr", "ashr").replace("?", "lshr")
    assert instruction in k.asm["llir"]
    assert other not in k.asm["llir"]
