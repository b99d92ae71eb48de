"""``tl.const`` pointers: a parameter annotated ``tl.const`` (or a pointer cast
to ``tl.pointer_type(..., const=True)``) is read through as any other and
refused for stores and atomics at compile time; constness is part of the
pointer's type, so a const and a plain pointer cannot meet in one variable
across a runtime ``if``, a ternary or a helper's returns (Triton's rules and
words, which its ``test_const`` checks)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import PROPERTY, values
from tilec.errors import CompilationError

B = 16


@tilec.jit
def copy_kernel(src: tl.const, dst, n, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n, other=0.0) * 2, mask=offs < n)


@PROPERTY
@given(data=st.data(), n=st.integers(0, B))
def test_loads_through_a_const_pointer(data, n):
    x = data.draw(values("float32", B, finite=True, lo=-1e6, hi=1e6))
    y = np.zeros(B, np.float32)
    copy_kernel[(1,)](x, y, n, B=B)
    np.testing.assert_array_equal(y[:n], x[:n] * 2)
    assert not y[n:].any()


def test_a_const_parameter_is_a_const_pointer_in_the_ir_and_compiles():
    compiled = copy_kernel.compile(np.zeros(B, np.float32), np.zeros(B, np.float32), B, B=B, target="sm_90")
    assert "%src: ptr<const f32>" in compiled.asm["tir"]
    assert compiled.fn.args[0].type.const and not compiled.fn.args[1].type.const


@tilec.jit
def store_through_const(src: tl.const, dst):
    tl.store(src, 1.0)


@tilec.jit
def atomic_through_const(src: "tl.const", dst):
    tl.atomic_add(src, 1.0)


@tilec.jit
def store_through_const_cast(src, dst):
    tl.store(src.to(tl.pointer_type(tl.float32, const=True)), 1.0)


@tilec.jit
def branch_kernel(src: tl.const, dst, c):
    if c > 0:
        out = src
    else:
        out = dst
    tl.store(out, 1.0)


@tilec.jit
def ternary_kernel(src: tl.const, dst, c):
    tl.store(src if c > 0 else dst, 1.0)


@tilec.jit
def pass_one(a, b, c):
    if c > 0:
        return b
    return a


@tilec.jit
def helper_kernel(src: tl.const, dst, c):
    tl.store(pass_one(dst, src, c), 1.0)


@pytest.mark.parametrize("kernel, message", [
    (store_through_const, "Cannot store to a constant pointer: `tl.store` writes through a const_pointer<fp32>"),
    (atomic_through_const, "Cannot store to a constant pointer: `tl.atomic_add`"),
    (store_through_const_cast, "Cannot store to a constant pointer"),
    (branch_kernel, "Mismatched type for out: `out` has type ptr<const f32> in the then-branch but ptr<f32>"),
    (ternary_kernel, "Ternary expression with dynamic condition has inconsistent type"),
    (helper_kernel, "Inconsistent return types: the returned value has type ptr<const f32>"),
])
def test_writing_through_a_const_pointer_or_mixing_it_with_a_plain_one_is_refused(kernel, message):
    args = [np.zeros(1, np.float32), np.zeros(1, np.float32)] + ([3] if kernel.arg_names[-1] == "c" else [])
    with pytest.raises(CompilationError) as info:
        kernel[(1,)](*args)
    assert message in info.value.error_message


@tilec.jit
def cast_away_kernel(src: tl.const, dst):
    tl.store(src.to(tl.pointer_type(tl.float32)), tl.load(dst))


def test_a_const_pointer_cast_to_a_plain_pointer_may_be_written():
    src, dst = np.zeros(1, np.float32), np.full(1, 5, np.float32)
    cast_away_kernel[(1,)](src, dst)
    assert src[0] == 5


@tilec.jit
def const_tuple_kernel(t: tl.const, dst):
    tl.store(dst, tl.load(t[0]) + t[1])


def test_a_const_tuple_parameter_makes_its_pointers_const():
    compiled = const_tuple_kernel.compile((np.ones(1, np.float32), 2), np.zeros(1, np.float32), target="sm_90")
    assert [str(a.type) for a in compiled.fn.args] == ["ptr<const f32>", "i32", "ptr<f32>"]


def test_const_is_part_of_the_pointer_dtype():
    assert tl.pointer_type(tl.float32, const=True) != tl.pointer_type(tl.float32)
    assert tl.pointer_type(tl.float32, const=True).is_const() and not tl.pointer_type(tl.float32).is_const()
