"""Control flow, grids and compile-time features through the public API:
``static_range``, runtime ``range``/``tl.range`` loops with carried values,
``while``, runtime ``if`` and early ``return``, nested ``@jit`` calls,
constexpr ``if``, ``static_assert``, ``static_print``, ``device_print``,
``device_assert``, ``debug_barrier``, ``program_id``/``num_programs`` on 1-3-D
grids and ``lambda META`` grids."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import PROPERTY, require, to_host, values
from tilec.errors import InterpreterError


@tilec.jit
def static_range_kernel(x_ptr, z_ptr, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.static_range(STEPS):
        acc += tl.load(x_ptr + i * BLOCK + offs) * (i + 1)
    for i in tl.static_range(1, STEPS, 2):
        acc -= tl.load(x_ptr + i * BLOCK + offs)
    tl.store(z_ptr + offs, acc)


@pytest.mark.parametrize("steps", [1, 3, 4])
def test_static_range(steps):
    x = np.arange(steps * 8, dtype=np.float32).reshape(steps, 8) - 5
    z = np.zeros(8, np.float32)
    static_range_kernel[(1,)](x, z, STEPS=steps, BLOCK=8)
    weights = np.arange(1, steps + 1, dtype=np.float32) - (np.arange(steps) % 2)
    np.testing.assert_array_equal(z, (x * weights[:, None]).sum(axis=0))


@tilec.jit
def runtime_loop_kernel(x_ptr, s_ptr, p_ptr, lo, hi, step, BLOCK: tl.constexpr):
    """Row sums and a wrapping product over rows lo, lo+step, ... < hi: two carried values."""
    offs = tl.arange(0, BLOCK)
    total = tl.zeros((BLOCK,), tl.int32)
    prod = tl.full((BLOCK,), 1, tl.int32)
    for r in range(lo, hi, step):
        row = tl.load(x_ptr + r * BLOCK + offs)
        total += row
        prod = prod * (row | 1)
    tl.store(s_ptr + offs, total)
    tl.store(p_ptr + offs, prod)


@PROPERTY
@given(data=st.data(), rows=st.integers(1, 9), lo=st.integers(0, 9), step=st.integers(1, 4))
def test_runtime_range_with_carried_values(data, rows, lo, step):
    x = data.draw(values("int32", (rows, 8), lo=-1000, hi=1000))
    s, p = np.full(8, 7, np.int32), np.full(8, 7, np.int32)
    runtime_loop_kernel[(1,)](x, s, p, lo, rows, step, BLOCK=8)
    picked = x[lo:rows:step].astype(np.int64)
    np.testing.assert_array_equal(s, picked.sum(axis=0).astype(np.int32))
    want = np.ones(8, np.int64)
    for row in picked:
        want = (want * (row | 1)) & 0xFFFFFFFF
    np.testing.assert_array_equal(p, want.astype(np.uint32).view(np.int32))


@tilec.jit
def tl_range_kernel(x_ptr, z_ptr, n, BLOCK: tl.constexpr):
    acc = 0.0
    for i in tl.range(0, n, 1, num_stages=2):
        acc += tl.load(x_ptr + i)
    tl.store(z_ptr, acc)


def test_tl_range_with_a_scalar_accumulator():
    x = np.arange(13, dtype=np.float32) * 0.25
    z = np.zeros(1, np.float32)
    tl_range_kernel[(1,)](x, z, 13, BLOCK=1)
    assert z[0] == x.sum()
    tl_range_kernel[(1,)](x, z, 0, BLOCK=1)  # zero trips: the initial value survives
    assert z[0] == 0.0


@tilec.jit
def collatz_kernel(x_ptr, steps_ptr):
    """A scalar ``while`` whose body holds a runtime ``if``."""
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    steps = 0
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
    tl.store(steps_ptr + pid, steps)


def collatz_steps(x: int) -> int:
    steps = 0
    while x != 1:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        steps += 1
    return steps


def test_while_loop_with_runtime_if():
    x = np.array([1, 2, 3, 6, 7, 27, 97, 871], np.int64)
    steps = np.zeros(8, np.int32)
    collatz_kernel[(8,)](x, steps)
    np.testing.assert_array_equal(steps, [collatz_steps(int(v)) for v in x])


@tilec.jit
def early_return_kernel(x_ptr, z_ptr, n_valid, threshold, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid >= n_valid:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if tl.sum(x) > threshold:
        tl.store(z_ptr + offs, x * 2)
        return
    tl.store(z_ptr + offs, -x)


def test_runtime_if_and_early_return():
    x = (np.arange(5 * 4, dtype=np.float32).reshape(5, 4) - 8)
    z = np.full((5, 4), 42, np.float32)
    early_return_kernel[(5,)](x, z, 4, 3.5, BLOCK=4)
    sums = x.sum(axis=1)
    want = np.where((sums > 3.5)[:, None], x * 2, -x)
    want[4] = 42
    np.testing.assert_array_equal(z, want)


@tilec.jit
def scaled(x, factor: tl.constexpr):
    if factor == 1:
        return x
    return x * factor


@tilec.jit
def min_and_max(a, b):
    return tl.minimum(a, b), tl.maximum(a, b)


@tilec.jit
def nested_call_kernel(x_ptr, y_ptr, z_ptr, BLOCK: tl.constexpr, FACTOR: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    lo, hi = min_and_max(tl.load(x_ptr + offs), tl.load(y_ptr + offs))
    tl.store(z_ptr + offs, scaled(hi, FACTOR) - scaled(lo, 1))


@pytest.mark.parametrize("factor", [1, 3])
def test_nested_jit_calls_with_tuples_and_constexprs(factor):
    x = np.array([1, 5, -2, 7, 0, 3, 9, -9], np.int32)
    y = np.array([4, 2, -3, 7, 1, -8, 2, 9], np.int32)
    z = np.zeros(8, np.int32)
    nested_call_kernel[(1,)](x, y, z, BLOCK=8, FACTOR=factor)
    np.testing.assert_array_equal(z, np.maximum(x, y) * factor - np.minimum(x, y))


GLOBAL_SCALE = tl.constexpr(5)


@tilec.jit
def constexpr_if_kernel(x_ptr, z_ptr, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.static_assert(BLOCK % 4 == 0, "BLOCK must be a multiple of 4")
    tl.static_print("compiling constexpr_if_kernel with MODE", MODE)
    if MODE == "double":
        x = x * 2
    elif MODE == "scale":
        x = x * GLOBAL_SCALE
    else:
        x = x + max(BLOCK, 3) + len((1, 2))
    tl.store(z_ptr + offs, x)


@pytest.mark.parametrize("mode,fn", [("double", lambda x: x * 2), ("scale", lambda x: x * 5),
                                     ("plus", lambda x: x + 8 + 2)])
def test_constexpr_if_and_static_print(mode, fn, capsys):
    x = np.arange(8, dtype=np.int32)
    z = np.zeros(8, np.int32)
    constexpr_if_kernel[(1,)](x, z, MODE=mode, BLOCK=8)
    np.testing.assert_array_equal(z, fn(x))
    assert f"compiling constexpr_if_kernel with MODE {mode}" in capsys.readouterr().out


@tilec.jit
def print_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("x is", x)


def test_device_print_shows_every_value(capsys):
    x = np.array([1234, -5678, 91011, 4242], np.int32)
    print_kernel[(1,)](x, BLOCK=4)
    out = capsys.readouterr().out
    assert "x is" in out
    for v in x:
        assert str(v) in out


@tilec.jit
def assert_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x > 0, "x must be positive")


def test_device_assert_passes_and_fails():
    assert_kernel[(1,)](np.array([1, 2, 3, 4], np.int32), BLOCK=4)
    with pytest.raises(InterpreterError, match="x must be positive") as info:
        assert_kernel[(1,)](np.array([1, 2, -3, 4], np.int32), BLOCK=4)
    assert "test_language_control.py" in str(info.value)


@tilec.jit
def grid_kernel(z_ptr, BLOCK: tl.constexpr):
    p0, p1, p2 = tl.program_id(0), tl.program_id(1), tl.program_id(axis=2)
    n0, n1, n2 = tl.num_programs(0), tl.num_programs(1), tl.num_programs(axis=2)
    linear = (p2 * n1 + p1) * n0 + p0
    tl.debug_barrier()
    tl.store(z_ptr + linear * 6 + tl.arange(0, BLOCK),
             tl.where(tl.arange(0, BLOCK) == 0, p0, 0) + tl.where(tl.arange(0, BLOCK) == 1, p1, 0)
             + tl.where(tl.arange(0, BLOCK) == 2, p2, 0) + tl.where(tl.arange(0, BLOCK) == 3, n0, 0)
             + tl.where(tl.arange(0, BLOCK) == 4, n1, 0) + tl.where(tl.arange(0, BLOCK) == 5, n2, 0),
             mask=tl.arange(0, BLOCK) < 6)


@pytest.mark.parametrize("grid", [(3,), (2, 3), (2, 3, 4), (1, 1, 5)])
def test_program_ids_and_num_programs_on_grids(grid):
    g = tuple(grid) + (1,) * (3 - len(grid))
    z = np.full(g[0] * g[1] * g[2] * 6, -1, np.int32)
    grid_kernel[grid](z, BLOCK=8)
    want = [(p0, p1, p2, *g) for p2 in range(g[2]) for p1 in range(g[1]) for p0 in range(g[0])]
    np.testing.assert_array_equal(z.reshape(-1, 6), np.array(want))


@tilec.jit
def meta_grid_kernel(x_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


@pytest.mark.parametrize("n", [1, 16, 17, 100])
def test_lambda_meta_grid(n):
    x = np.arange(n, dtype=np.int64)
    z = np.zeros(n, np.int64)
    meta_grid_kernel[lambda META: (tilec.cdiv(META["n"], META["BLOCK"]),)](x, z, n, BLOCK=16)
    np.testing.assert_array_equal(z, x + 1)


@tilec.jit
def types_kernel(x_ptr, DT: tl.constexpr, BLOCK: tl.constexpr):
    """Types are compile-time values a kernel can inspect."""
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.static_assert(isinstance(DT, tl.dtype))
    tl.static_assert(isinstance(x, tl.tensor))
    tl.static_assert(x.dtype == DT)
    tl.static_assert(x_ptr.dtype == tl.pointer_type(DT))
    tl.static_assert(x.type == tl.block_type(DT, (BLOCK,)))


@pytest.mark.parametrize("held,dt", [
    (np.bool_, tl.int1), (np.int8, tl.int8), (np.int16, tl.int16), (np.int32, tl.int32), (np.int64, tl.int64),
    (np.uint8, tl.uint8), (np.uint16, tl.uint16), (np.uint32, tl.uint32), (np.uint64, tl.uint64),
    (np.float16, tl.float16), (np.float32, tl.float32), (np.float64, tl.float64),
])
def test_dtypes_of_loaded_values(held, dt):
    types_kernel[(1,)](np.zeros(4, held), DT=dt, BLOCK=4)


def test_bfloat16_arrays_load_as_bfloat16():
    require("bfloat16")
    types_kernel[(1,)](to_host(np.zeros(4), "bfloat16"), DT=tl.bfloat16, BLOCK=4)
