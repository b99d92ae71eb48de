"""What a pointer tile accepts as the value, mask, ``other``, ``val`` or
``cmp`` of a memory op (Triton's rule): a scalar splats, a tile of the
pointer's rank repeats its size-1 dims, and a tile of another rank is a
compile error at the user's line (numpy's rule would add leading dims and
silently write or read the same values several times)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.errors import CompilationError


@tilec.jit
def store_value(ptrs, row, col):
    tl.store(ptrs, row)


@tilec.jit
def store_mask(ptrs, row, col):
    tl.store(ptrs, 1, mask=row > 0)


@tilec.jit
def load_mask(ptrs, row, col):
    tl.store(ptrs, tl.load(ptrs, mask=row > 0, other=0))


@tilec.jit
def load_other(ptrs, row, col):
    tl.store(ptrs, tl.load(ptrs, mask=col > 0, other=row))


@tilec.jit
def atomic_val(ptrs, row, col):
    tl.atomic_add(ptrs, row)


@tilec.jit
def atomic_mask(ptrs, row, col):
    tl.atomic_max(ptrs, 1, mask=row > 0)


@tilec.jit
def cas_cmp(ptrs, row, col):
    tl.atomic_cas(ptrs, row, 1)


@tilec.jit
def cas_val(ptrs, row, col):
    tl.atomic_cas(ptrs, 0, row)


@tilec.jit
def rank_kernel(z_ptr, FN: tl.constexpr, LOW: tl.constexpr):
    """``FN(ptrs, row, col)``: ``ptrs`` is a 4x4x4 pointer tile; ``row`` a 4x4
    (LOW) or 1x1x4 tile, ``col`` its 4x4x1 partner of the pointer's rank."""
    r = tl.arange(0, 4)
    ptrs = z_ptr + r[:, None, None] * 16 + r[None, :, None] * 4 + r[None, None, :]
    row = r[None, :] + r[:, None] * 0 if LOW else r[None, None, :]
    FN(ptrs, row, r[:, None, None])


OPS = {  # jit fn -> what the error names
    store_value: "value", store_mask: "mask", load_mask: "mask", load_other: "other",
    atomic_val: "val", atomic_mask: "mask", cas_cmp: "cmp", cas_val: "val",
}


def line_of_call(fn) -> int:
    """The file line of the one statement in ``fn``'s body."""
    lines, first = inspect.getsourcelines(fn.fn)
    return first + len(lines) - 1


@pytest.mark.parametrize("fn", list(OPS), ids=[f.fn.__name__ for f in OPS])
def test_a_tile_of_lower_rank_than_the_pointer_is_refused(fn):
    z = np.zeros(64, np.int32)
    with pytest.raises(CompilationError) as info:
        rank_kernel[(1,)](z, FN=fn, LOW=True)
    message = str(info.value)
    assert f"test_language_ranks.py:{line_of_call(fn)}" in message, message
    assert f"{OPS[fn]} of shape (4, 4)" in message and "(4, 4, 4)" in message and "rank" in message, message
    assert not z.any()


@tilec.jit
def wide_store_kernel(z_ptr):
    r = tl.arange(0, 4)
    tl.store(z_ptr + r[:, None] * 4 + r[None, :], r[None, None, :])


def test_a_tile_of_higher_rank_than_the_pointer_is_refused():
    with pytest.raises(CompilationError, match=r"value of shape \(1, 1, 4\) does not fit the pointer's shape \(4, 4\)"):
        wide_store_kernel[(1,)](np.zeros(16, np.int32))


# Size-1 dims of the pointer's rank still repeat, and scalars still splat.
def expected(fn) -> np.ndarray:
    """What ``rank_kernel(FN=fn, LOW=False)`` leaves in a zeroed 4x4x4 int32 buffer."""
    k, j, i = np.meshgrid(np.arange(4), np.arange(4), np.arange(4), indexing="ij")
    return {
        store_value: i, store_mask: np.where(i > 0, 1, 0), load_mask: np.zeros_like(i),
        load_other: np.where(k > 0, 0, i), atomic_val: i, atomic_mask: np.where(i > 0, 1, 0),
        cas_cmp: np.where(i == 0, 1, 0), cas_val: i,
    }[fn].ravel()


@pytest.mark.parametrize("fn", list(OPS), ids=[f.fn.__name__ for f in OPS])
def test_size_one_dims_of_the_pointers_rank_broadcast(fn):
    z = np.zeros(64, np.int32)
    rank_kernel[(1,)](z, FN=fn, LOW=False)
    np.testing.assert_array_equal(z, expected(fn))
