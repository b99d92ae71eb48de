"""Tuples in kernels against numpy (the interpreter; every kernel is also
compiled for sm_80/sm_90 by ``gpu_compile_check``): tuple kernel arguments
nested, named and mixing arrays, ints, floats, None, constexprs and ``@jit``
functions; tuples built (named tuples too), indexed, unpacked, iterated,
passed to and returned from ``@jit`` helpers, carried through ``for``/``while``
loops and merged across runtime ``if``s; one variant per tuple structure and
per element specialization; the errors for a tuple whose structure changes;
``tl.tuple`` and ``tl.tuple_type``."""
from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import PROPERTY
from tilec.errors import CompilationError

B = 8


@tilec.jit
def leaf_value(x, offs):
    """What one tuple element adds: 0 for None, the tile a pointer points to, else the number."""
    if x is None:
        return tl.zeros(offs.shape, tl.float32)
    elif isinstance(x, tl.tensor) and x.dtype.is_ptr():
        return tl.load(x + offs)
    else:
        return x + tl.zeros(offs.shape, tl.float32)


@tilec.jit
def sum_leaves_kernel(out_ptr, t, B: tl.constexpr):
    """The sum of every element of ``t``, nested one level deep, and ``len(t)`` at [B]."""
    offs = tl.arange(0, B)
    acc = tl.zeros((B,), tl.float32)
    for x in t:
        if isinstance(x, tuple):
            for i in tl.static_range(len(x)):
                acc += leaf_value(x[i], offs)
        else:
            acc += leaf_value(x, offs)
    tl.store(out_ptr + offs, acc)
    tl.store(out_ptr + B, len(t))


LEAVES = st.one_of(
    st.builds(lambda v: np.full(B, v, np.float32) + np.arange(B, dtype=np.float32), st.integers(-50, 50)),
    st.sampled_from([1, 16, 32, -16]) | st.integers(-1000, 1000),
    st.integers(-100, 100).map(lambda v: v / 4),
    st.none(),
    st.integers(-20, 20).map(tl.constexpr),
)
NESTED = st.lists(LEAVES | st.lists(LEAVES, max_size=3).map(tuple), max_size=4).map(tuple)


def leaf_sum(x) -> np.ndarray:
    if isinstance(x, tuple):
        return sum((leaf_sum(v) for v in x), np.zeros(B, np.float32))
    if x is None:
        return np.zeros(B, np.float32)
    return np.float32(x.value if isinstance(x, tl.constexpr) else x) + np.zeros(B, np.float32)


@PROPERTY
@given(t=NESTED)
def test_tuple_arguments_of_mixed_kinds_and_nesting(t):
    out = np.zeros(B + 1, np.float32)
    sum_leaves_kernel[(1,)](out, t, B=B)
    np.testing.assert_array_equal(out[:B], leaf_sum(t))
    assert out[B] == len(t)


@tilec.jit
def halves(state):
    """A helper taking and returning a nested tuple: the accumulator halved, the count kept."""
    acc, (count, scale) = state
    return acc * 0.5, (count, scale)


@tilec.jit
def carried_kernel(x_ptr, out_ptr, n, flip, B: tl.constexpr):
    offs = tl.arange(0, B)
    state = (tl.zeros((B,), tl.float32), (0, 1.0))
    for i in range(n):
        acc, (count, scale) = state
        state = (acc + tl.load(x_ptr + i * B + offs) * scale, (count + 1, scale * 2.0))
    if flip > 0:
        state = halves(state)
    else:
        state = (state[0] - 1.0, state[1])
    w = (0, state[0], None)
    while w[0] < n:
        w = (w[0] + 1, w[1] + 1.0, w[2])
    tl.static_assert(w[2] is None)
    tl.store(out_ptr + offs, w[1] + state[1][0] + state[1][1])


@PROPERTY
@given(n=st.integers(0, 5), flip=st.integers(-1, 1), seed=st.integers(0, 2**16))
def test_tuples_through_loops_branches_and_helpers(n, flip, seed):
    x = np.random.default_rng(seed).integers(-8, 8, (max(n, 1), B)).astype(np.float32)
    out = np.zeros(B, np.float32)
    carried_kernel[(1,)](x, out, n, flip, B=B)
    acc = sum((x[i] * 2.0 ** i for i in range(n)), np.zeros(B, np.float32))
    acc = acc * 0.5 if flip > 0 else acc - 1.0
    np.testing.assert_array_equal(out, acc + n + n + 2.0 ** n)


@tilec.jit
def block_pointer_tuple_kernel(x_ptr, out_ptr, n, B: tl.constexpr):
    """A block pointer inside a tuple a runtime loop carries (it moves, the sum grows)."""
    bp = tl.make_block_ptr(x_ptr, shape=(n * B,), strides=(1,), offsets=(0,), block_shape=(B,), order=(0,))
    state = (bp, tl.zeros((B,), tl.float32))
    for i in range(n):
        p, acc = state
        state = (tl.advance(p, (B,)), acc + tl.load(p))
    tl.store(out_ptr + tl.arange(0, B), state[1])


@PROPERTY
@given(n=st.integers(0, 4))
def test_a_block_pointer_in_a_carried_tuple(n):
    x, out = np.arange(max(n, 1) * B, dtype=np.float32), np.zeros(B, np.float32)
    block_pointer_tuple_kernel[(1,)](x, out, n, B=B)
    np.testing.assert_array_equal(out, x[:n * B].reshape(n, B).sum(0) if n else np.zeros(B))


class Strided(NamedTuple):
    ptr: object
    n: int
    stride: int


@tilec.jit
def named_kernel(src: Strided, dst: Strided, shape: tl.constexpr, B: tl.constexpr):
    """Named tuples as arguments (fields by name) and a constexpr tuple parameter."""
    offs = tl.arange(0, B)
    x = tl.load(src.ptr + offs * src.stride, mask=offs < src.n, other=0.0)
    tl.static_assert(shape[1] == 3)
    tl.store(dst.ptr + offs * dst.stride, x * shape[0], mask=offs < dst.n)


@PROPERTY
@given(n=st.integers(0, B), stride=st.integers(1, 3), scale=st.integers(-3, 3))
def test_named_tuple_arguments_and_a_constexpr_tuple(n, stride, scale):
    src = np.arange(B * 3, dtype=np.float32)
    dst = np.zeros(B * 2, np.float32)
    named_kernel[(1,)](Strided(src, n, stride), Strided(dst, n, 2), (scale, 3), B=B)
    want = np.zeros(B * 2, np.float32)
    want[0:2 * n:2] = src[0:stride * n:stride] * scale
    np.testing.assert_array_equal(dst, want)


class Closure(NamedTuple):
    fn: object
    captured: tuple


@tilec.jit
def scale_by(x, a_ptr, shift):
    return x * tl.load(a_ptr) + shift


@tilec.jit
def closure_kernel(f: Closure, x_ptr, y_ptr, n, B: tl.constexpr):
    """A named tuple holding a @jit function and its extra arguments; a named tuple built in the kernel."""
    offs = tl.arange(0, B)
    src = Strided(ptr=x_ptr, n=n, stride=1)
    x = tl.load(src.ptr + offs * src.stride, mask=offs < src.n, other=0.0)
    tl.store(y_ptr + offs, f.fn(x, *f.captured), mask=offs < src.n)


@PROPERTY
@given(n=st.integers(0, B), a=st.integers(-4, 4), shift=st.integers(-4, 4))
def test_a_named_tuple_carries_a_jit_function_and_is_built_in_a_kernel(n, a, shift):
    x, y = np.arange(B, dtype=np.float32), np.zeros(B, np.float32)
    closure_kernel[(1,)](Closure(scale_by, (np.full(1, a, np.float32), shift)), x, y, n, B=B)
    np.testing.assert_array_equal(y[:n], x[:n] * a + shift)
    assert not y[n:].any()


@tilec.jit
def build_kernel(out_ptr, a, b):
    """Tuples built in the kernel: ``tl.tuple``, slices, negative indexes, ``+``, unpacking."""
    t = tl.tuple([a, b, a + b])
    u = t[1:] + (t[-3],)
    tl.static_assert(len(u) == 3 and isinstance(u, tl.tuple))
    tl.static_assert(tl.tuple((1, 2)) == (1, 2))
    tl.static_assert(tl.tuple((1, 2)).type == tl.tuple_type([tl.constexpr_type(1), tl.constexpr_type(2)]))
    x, y, z = u
    tl.store(out_ptr, x * 100 + y * 10 + z)


@PROPERTY
@given(a=st.integers(-9, 9), b=st.integers(-9, 9))
def test_tuples_built_sliced_and_unpacked_in_a_kernel(a, b):
    out = np.zeros(1, np.int32)
    build_kernel[(1,)](out, a, b)
    assert out[0] == b * 100 + (a + b) * 10 + a


@tilec.jit
def first_kernel(out_ptr, t):
    tl.store(out_ptr, tl.load(t[0]) + t[1])


@pytest.mark.host_only  # about the interpreter itself (the device mirror compiles more variants)
def test_one_variant_per_tuple_structure_and_element_specialization():
    x, out = np.ones(1, np.float32), np.zeros(1, np.float32)
    first_kernel.cache.clear()
    for t in [(x, 3), (x, 5), (x, 1), (x, 32), (x, 48), (x, 2.5), (x, 7, None), (x, 7)]:
        first_kernel[(1,)](out, t)
        assert out[0] == 1 + t[1]
    # (x, i32), (x, 1) as a constexpr, (x, i32 divisible by 16), (x, f32), (x, i32, None)
    assert len(first_kernel.cache) == 5


def test_a_tuple_argument_compiles_to_one_parameter_per_runtime_leaf():
    x = np.ones(B, np.float32)
    compiled = sum_leaves_kernel.compile(np.zeros(B + 1, np.float32), (x, (3, None, x), tl.constexpr(2), 1),
                                         B=B, target="sm_90")
    assert compiled.fn.arg_names == ["out_ptr", "t_0", "t_1_0", "t_1_2"]
    assert len(re.findall(r"^\s*\.param ", compiled.asm["ptx"], re.M)) == 4  # the entry's parameter list


@tilec.jit
def if_structure_kernel(out_ptr, n):
    t = (n, n)
    if n > 0:
        t = (n,)
    tl.store(out_ptr, t[0])


@tilec.jit
def loop_structure_kernel(out_ptr, n):
    t = (n, None)
    for i in range(n):
        t = (t[0] + 1, 4)
    tl.store(out_ptr, t[0])


@tilec.jit
def leaf_type_kernel(out_ptr, n):
    t = (n, n)
    if n > 0:
        t = (n, n.to(tl.float32))
    tl.store(out_ptr, t[1])


@tilec.jit
def in_place_kernel(out_ptr, n):
    t = (n, n)
    t[0] = 1


@tilec.jit
def return_types_kernel(out_ptr, n):
    tl.store(out_ptr, pick(n, (n, n), (n, n.to(tl.float32)))[1])


@tilec.jit
def pick(c, a, b):
    if c > 0:
        return a
    return b


@pytest.mark.parametrize("kernel, message", [
    (if_structure_kernel, "`t` is a tuple (value,) on one path but a tuple (value, value) on another"),
    (loop_structure_kernel, "`t` is a tuple (value, None) on one path but a tuple (value, value) on another"),
    (leaf_type_kernel, "Mismatched type for t[1]: `t[1]` has type f32 in the then-branch but i32"),
    (in_place_kernel, "a tuple cannot be changed in place"),
    (return_types_kernel, "Inconsistent return types: the returned value (element [1]) has type i32"),
])
def test_a_tuple_that_changes_structure_or_type_is_a_clear_error(kernel, message):
    with pytest.raises(CompilationError) as info:
        kernel[(1,)](np.zeros(1, np.float32), 3)
    assert message in str(info.value)


def test_a_parameter_named_like_a_tuple_element_is_refused():
    @tilec.jit
    def clash(t, t_0):
        pass

    with pytest.raises(TypeError, match="parameter `t_0` has the name tilec gives an element of a tuple"):
        clash[(1,)]((np.zeros(1, np.float32),), 2)
