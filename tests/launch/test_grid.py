"""Launch grids and the host helpers that size them."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from tilec.launch.grid import GRID_LIMITS, normalize_grid

# Within CUDA's limits: x < 2**31, y and z < 2**16.
@tilec.jit
def fill(out_ptr):
    tl.store(out_ptr + tl.arange(0, 4), tl.full((4,), 7, tl.int32))


dims = st.integers(1, 3).flatmap(lambda n: st.tuples(*(st.integers(0, most) for most in GRID_LIMITS[:n])))


@given(dims)
def test_tuple_and_list_grids_pad_to_three(d):
    want = tuple(d) + (1,) * (3 - len(d))
    assert normalize_grid(tuple(d), {}, "k") == want
    assert normalize_grid(list(d), {}, "k") == want


@given(st.integers(0, 2**31 - 1))
def test_int_grid(n):
    assert normalize_grid(n, {}, "k") == (n, 1, 1)


def test_numpy_ints_are_accepted():
    g = normalize_grid((np.int64(3), np.uint8(2)), {}, "k")
    assert g == (3, 2, 1) and all(type(d) is int for d in g)


@given(dims, st.integers(1, 1024))
def test_callable_grid_receives_meta(d, block):
    seen = {}

    def grid(meta):
        seen.update(meta)
        return tuple(x * meta["BLOCK"] // 1024 for x in d)

    assert normalize_grid(grid, {"BLOCK": block, "n": 5}, "k")[:len(d)] == tuple(x * block // 1024 for x in d)
    assert seen == {"BLOCK": block, "n": 5}


@given(dims, st.integers(0, 2), st.integers(1, 2**64), st.sampled_from(["tuple", "list", "numpy", "lambda"]))
def test_grid_past_the_cuda_limits_is_an_error(d, axis, excess, form):
    """The same limits on the host as on a GPU, named with the dimension: a
    grid of 2**40 must fail at once, not after the interpreter runs for minutes."""
    d = list(d) + [1] * (3 - len(d))
    d[axis] = GRID_LIMITS[axis] + excess
    grid = {"tuple": tuple(d), "list": d, "numpy": tuple(np.uint64(x) if x < 2**64 else x for x in d),
            "lambda": lambda meta: tuple(d)}[form]
    message = f"dimension {axis} ({'xyz'[axis]}) is {d[axis]}, over the limit of {GRID_LIMITS[axis]}"
    with pytest.raises(ValueError, match=re.escape(message)):
        normalize_grid(grid, {}, "k")


@pytest.mark.parametrize("grid, axis", [((2**40,), 0), ((1, 2**16), 1), ((1, 1, 2**16), 2), (2**31, 0)])
def test_grid_limits_at_launch(grid, axis):
    """A launch refused before anything runs (here: a grid that would take the interpreter hours)."""
    out = np.zeros(4, np.int32)
    with pytest.raises(ValueError, match=rf"grid of kernel `fill` is too large: dimension {axis}"):
        fill[grid](out)
    assert (out == 0).all()


def test_grid_at_the_limits_is_accepted():
    assert normalize_grid((2**31 - 1, 2**16 - 1, 2**16 - 1), {}, "k") == (2**31 - 1, 2**16 - 1, 2**16 - 1)


@pytest.mark.parametrize("grid", [(0,), (0, 2**16 - 1), (5, 0, 3)])
def test_zero_dimension_launches_nothing(grid):
    out = np.zeros(4, np.int32)
    fill[grid](out)
    assert (out == 0).all()


@pytest.mark.parametrize("grid", [(), (1, 2, 3, 4), []])
def test_grid_rank_is_checked(grid):
    with pytest.raises(ValueError, match="grid of kernel `k` must have 1 to 3 dimensions"):
        normalize_grid(grid, {}, "k")


@pytest.mark.parametrize("grid, axis", [((-1,), 0), ((4, -2), 1), (-3, 0), (lambda meta: (1, 1, -1), 2)])
def test_negative_grid_is_an_error(grid, axis):
    with pytest.raises(ValueError, match=rf"grid of kernel `k` must not be negative, got .* \(dimension {axis}"):
        normalize_grid(grid, {}, "k")


@pytest.mark.parametrize("grid, name", [((2.0,), "float"), ((True,), "bool"), ("3", "str"), ((1, None), "NoneType")])
def test_grid_must_hold_ints(grid, name):
    with pytest.raises(TypeError, match=f"grid of kernel `k` must hold ints, got {name}"):
        normalize_grid(grid, {}, "k")


@given(st.integers(-10**6, 10**6), st.integers(1, 10**4))
def test_cdiv(x, y):
    q = tilec.cdiv(x, y)
    assert q * y >= x > (q - 1) * y  # the smallest multiple of y covering x


@given(st.integers(-5, 2**40))
def test_next_power_of_2(n):
    p = tilec.next_power_of_2(n)
    assert p & (p - 1) == 0 and p >= n and (p == 1 or p // 2 < n)
