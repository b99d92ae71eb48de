"""Launch grids and the host helpers that size them."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
from tilec.launch.grid import normalize_grid

dims = st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=3)


@given(dims)
def test_tuple_and_list_grids_pad_to_three(d):
    want = tuple(d) + (1,) * (3 - len(d))
    assert normalize_grid(tuple(d), {}, "k") == want
    assert normalize_grid(list(d), {}, "k") == want


@given(st.integers(0, 2**40))
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
        return tuple(x * meta["BLOCK"] for x in d)

    assert normalize_grid(grid, {"BLOCK": block, "n": 5}, "k")[:len(d)] == tuple(x * block for x in d)
    assert seen == {"BLOCK": block, "n": 5}


@pytest.mark.parametrize("grid", [(), (1, 2, 3, 4), []])
def test_grid_rank_is_checked(grid):
    with pytest.raises(ValueError, match="grid of kernel `k` must have 1 to 3 dimensions"):
        normalize_grid(grid, {}, "k")


@pytest.mark.parametrize("grid", [(-1,), (4, -2), -3, lambda meta: (-1,)])
def test_negative_grid_is_an_error(grid):
    with pytest.raises(ValueError, match="grid of kernel `k` must not be negative"):
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
