"""Bounds checks of code compiled for the ``cpu`` target under ``debug=True``
(``tilec/backends/host/bounds.py``): a masked-in access outside the arrays
passed raises the interpreter's ``InterpreterError``, with the interpreter's
very words (one thread runs the programs in order, so the first bad access
is the interpreter's first bad lane) and without making the access; accesses
in bounds, and masked-off lanes far out of bounds, give the interpreter's
results.  Without ``debug`` the code has no check at all."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from launch.kernels import fresh
from launch.test_cache import disk_cache  # noqa: F401 (a fixture)
from tilec.errors import InterpreterError
from tilec.launch import cache
from tilec.targets import registry

HOST = registry.backend("host")
DTYPES = [np.int8, np.uint16, np.float16, np.int32, np.float32, np.int64, np.float64]
GUARD = 8  # elements of a sentinel around an output: a refused store leaves them


@pytest.fixture(autouse=True)
def _one_thread_runs_the_programs_in_order(monkeypatch):
    monkeypatch.setenv("TILEC_NUM_THREADS", "1")


def launch_both(kernel, grid, make_args, **constexprs):
    """Run ``kernel`` compiled for ``cpu`` with ``debug`` on ``make_args()`` and
    the interpreter on another ``make_args()``: ``(compiled's error or None,
    interpreter's error or None, compiled's arguments, interpreter's)``."""
    errors, arguments = [], []
    for target in ("cpu", "host"):
        args = make_args()
        compiled = kernel.compile(*args, target=target, debug=True, **constexprs)
        try:
            registry.backend_for(target).launcher().launch(compiled, grid, kernel.plan(args, constexprs).args)
            errors.append(None)
        except InterpreterError as e:
            errors.append(str(e))
        arguments.append(args)
    return (*errors, *arguments)


def guarded(n: int, dtype) -> np.ndarray:
    """An output of ``n`` elements inside a buffer (its ``base``) of sentinels."""
    return np.full(GUARD * 2 + n, 7, dtype)[GUARD:GUARD + n]


def guard_kept(out: np.ndarray) -> bool:
    return bool((out.base[:GUARD] == 7).all() and (out.base[-GUARD:] == 7).all())


@tilec.jit
def shifted_copy(x_ptr, out_ptr, n, x_stride, load_shift, store_shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + (offs + load_shift) * x_stride, mask=mask)
    tl.store(out_ptr + offs + store_shift, x + 1, mask=mask)


@st.composite
def copy_cases(draw):
    """A dtype, a ragged ``n``, a block, a view of x (reversed, strided), and shifts
    that keep the accesses in bounds, or take one load or store out (either side)."""
    n = draw(st.integers(1, 90))
    shift = st.one_of(st.just(0), st.integers(-n - 3, n + 3), st.sampled_from([-1, 1, -n, n, 2 ** 20]))
    moved = draw(shift)
    load_shift, store_shift = (moved, 0) if draw(st.sampled_from(["load", "store"])) == "load" else (0, moved)
    return (draw(st.sampled_from(DTYPES)), n, draw(st.sampled_from([1, 4, 32])), draw(st.sampled_from([1, 2, -1])),
            load_shift, store_shift)


@given(copy_cases())
def test_a_bad_load_or_store_raises_the_interpreters_error_and_good_ones_its_results(case):
    dtype, n, block, step, load_shift, store_shift = case

    def make_args():
        x = (np.arange(n * abs(step)) % 100).astype(dtype)[::step]
        return [x, guarded(n, dtype), n, x.strides[0] // x.itemsize, load_shift, store_shift]
    got, want, mine, theirs = launch_both(shifted_copy, (tilec.cdiv(n, block), 1, 1), make_args, BLOCK=block)
    assert got == want
    if want is None:
        np.testing.assert_array_equal(mine[1], theirs[1])
    assert guard_kept(mine[1])


def test_the_error_names_the_line_the_argument_the_offset_and_the_program():
    got, _, _, _ = launch_both(shifted_copy, (3, 1, 1), lambda: [np.zeros(10, np.float32), guarded(10, np.float32),
                                                                 10, 1, 0, 5], BLOCK=4)
    assert "test_host_bounds.py:" in got and "store out of bounds: `out_ptr` + 10 is past its 10 elements" in got
    assert "(masked-in lane of program 1)" in got and "tl.store(out_ptr + offs + store_shift" in got
    assert "(in kernel `shifted_copy`)" in got


@given(n=st.integers(1, 70), block=st.sampled_from([64, 128]), dtype=st.sampled_from(DTYPES))
def test_masked_off_lanes_far_out_of_bounds_are_not_checked(n, block, dtype):
    got, want, mine, theirs = launch_both(shifted_copy, (1, 1, 1), lambda: [np.arange(n).astype(dtype),
                                                                            guarded(n, dtype), n, 1, 0, 0],
                                          BLOCK=block)
    assert got is want is None
    np.testing.assert_array_equal(mine[1], theirs[1])


@tilec.jit
def histogram_of(idx_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    i = tl.load(idx_ptr + offs, mask=offs < n, other=0)
    tl.atomic_add(counts_ptr + i, 1, mask=offs < n)


@given(st.data())
def test_an_atomic_out_of_bounds_raises_as_the_interpreter_does(data):
    bins = data.draw(st.integers(1, 20))
    idx = np.array(data.draw(st.lists(st.integers(-2, bins + 1), min_size=1, max_size=32)), np.int32)
    got, want, mine, _ = launch_both(histogram_of, (1, 1, 1), lambda: [idx, np.zeros(bins, np.int64), len(idx)],
                                     BLOCK=32)
    assert got == want
    inside = ((idx >= 0) & (idx < bins)).all()
    assert (want is None) == inside
    if inside:
        np.testing.assert_array_equal(mine[1], np.bincount(idx, minlength=bins))


@tilec.jit
def through_an_int(x_ptr, out_ptr, byte_shift):
    p = (x_ptr.to(tl.int64) + byte_shift).to(tl.pointer_type(tl.int32))
    tl.store(out_ptr, tl.atomic_cas(p, 0, 0) + tl.load(p))


@pytest.mark.parametrize("byte_shift", [0, 4, 1, 6, -4, 16])
def test_a_pointer_made_from_an_int_is_checked_against_every_array(byte_shift):
    got, want, mine, theirs = launch_both(through_an_int, (1, 1, 1),
                                          lambda: [np.arange(4, dtype=np.int32), np.zeros(1, np.int32), byte_shift])
    assert (got is None) == (want is None) == (byte_shift in (0, 4))
    if got is None:
        np.testing.assert_array_equal(mine[1], theirs[1])
    else:
        assert ("misaligned" if byte_shift % 4 else "out of bounds") in got and "`x_ptr`" in got


@tilec.jit
def pick(a_ptr, b_ptr, out_ptr, n, use_a, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = tl.where(use_a, a_ptr, b_ptr)
    tl.store(out_ptr + offs, tl.load(p + offs, mask=offs < n), mask=offs < n)


@pytest.mark.parametrize("use_a", [True, False])
@pytest.mark.parametrize("n", [5, 8])
def test_a_pointer_of_two_arguments_may_point_into_either(use_a, n):
    got, want, mine, _ = launch_both(pick, (1, 1, 1), lambda: [np.arange(8.0), np.arange(5.0) + 10, np.zeros(8), n,
                                                               use_a], BLOCK=8)
    assert got == want and (got is None) == (use_a or n == 5)
    if got is None:
        np.testing.assert_array_equal(mine[2][:n], (np.arange(8.0) if use_a else np.arange(5.0) + 10)[:n])
    else:
        assert "load out of bounds: `b_ptr` + 5 is past its 5 elements" in got


def test_debug_comes_from_jit_or_the_launch_and_without_it_nothing_is_checked(monkeypatch):
    monkeypatch.delenv("TILEC_INTERPRET")  # host arrays then run compiled
    x, out = np.zeros(10, np.float32), np.zeros(10, np.float32)
    args = (x, out, 10, 1, 0, 3)
    with pytest.raises(InterpreterError, match="store out of bounds: `out_ptr` \\+ 10"):
        tilec.jit(debug=True)(shifted_copy.fn)[(1,)](*args, BLOCK=16)
    with pytest.raises(InterpreterError, match="store out of bounds"):
        fresh(shifted_copy)[(1,)](*args, BLOCK=16, debug=True)
    on, off = (tilec.jit(debug=True)(shifted_copy.fn).compile(*args, BLOCK=16, debug=d) for d in (None, False))
    assert on.options.debug and not off.options.debug
    assert "%bounds" in on.asm["llir"] and "cmpxchg" in on.asm["llir"]
    plain = fresh(shifted_copy).compile(*args, BLOCK=16)
    assert off.asm["llir"] == plain.asm["llir"] and "bounds" not in plain.asm["llir"]
    assert "cmpxchg" not in plain.asm["llir"]


def test_a_variant_from_the_disk_cache_reports_the_same_access(disk_cache):
    def make_args():
        return [np.zeros(10, np.float32), guarded(10, np.float32), 10, 1, -2, 0]
    first, _, _, _ = launch_both(fresh(shifted_copy), (1, 1, 1), make_args, BLOCK=16)
    again, _, _, _ = launch_both(fresh(shifted_copy), (1, 1, 1), make_args, BLOCK=16)
    assert cache.STATS["hit"] >= 1 and first == again
    assert "load out of bounds: `x_ptr` + -2 is before its first element" in again
