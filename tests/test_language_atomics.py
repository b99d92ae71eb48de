"""Atomics through the public API: every read-modify-write kind with masks,
duplicate addresses within a tile and across programs, and the returned old
values; ``atomic_cas`` on tiles and as a spin lock.

Atomic updates of one address happen in some serial order, so the tests check
what holds for every order: the old values each lane got, plus the final
value, are the states of one chain from the initial value, and commutative
kinds end at the fold of all the values."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import FLOATS, PROPERTY, cast, empty, exact, from_host, grid1, to_host, values

BLOCK = 8


@tilec.jit
def rmw_kernel(buf_ptr, idx_ptr, val_ptr, mask_ptr, old_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    idx = tl.load(idx_ptr + offs, mask=inside, other=0)
    val = tl.load(val_ptr + offs, mask=inside)
    mask = tl.load(mask_ptr + offs, mask=inside, other=0) & inside
    old = FN(buf_ptr + idx, val, mask)
    tl.store(old_ptr + offs, old, mask=mask)


@tilec.jit
def at_add(p, v, m):
    return tl.atomic_add(p, v, mask=m)


@tilec.jit
def at_add_relaxed(p, v, m):
    return tl.atomic_add(p, v, mask=m, sem="relaxed", scope="cta")


@tilec.jit
def at_max(p, v, m):
    return tl.atomic_max(p, v, mask=m)


@tilec.jit
def at_min(p, v, m):
    return tl.atomic_min(p, v, mask=m, sem="acquire")


@tilec.jit
def at_and(p, v, m):
    return tl.atomic_and(p, v, mask=m)


@tilec.jit
def at_or(p, v, m):
    return tl.atomic_or(p, v, mask=m, sem="release")


@tilec.jit
def at_xor(p, v, m):
    return tl.atomic_xor(p, v, mask=m)


@tilec.jit
def at_xchg(p, v, m):
    return tl.atomic_xchg(p, v, mask=m)


@dataclass
class Kind:
    """An atomic kind: its jit fn, the update on exact values, the dtypes, and
    whether every order ends at the same value."""
    fn: object
    update: Callable
    dtypes: tuple
    commutative: bool = True


WORD_INTS = ("int32", "uint32", "int64", "uint64")
KINDS = {
    "add": Kind(at_add, lambda a, b: a + b, WORD_INTS + ("float16", "float32", "float64")),
    "add_relaxed": Kind(at_add_relaxed, lambda a, b: a + b, ("int32", "float32")),
    "max": Kind(at_max, max, WORD_INTS + ("float32", "float64")),
    "min": Kind(at_min, min, WORD_INTS + ("float32", "float64")),
    "and": Kind(at_and, lambda a, b: a & b, WORD_INTS),
    "or": Kind(at_or, lambda a, b: a | b, WORD_INTS),
    "xor": Kind(at_xor, lambda a, b: a ^ b, WORD_INTS),
    "xchg": Kind(at_xchg, lambda a, b: b, WORD_INTS + ("float32", "float64"), commutative=False),
}

CASES = [(name, d) for name, k in KINDS.items() for d in k.dtypes]


def atomic_values(dtype: str, n: int):
    """Small integers for floats, so that every order of additions is exact."""
    if dtype in FLOATS:
        return st.lists(st.integers(-64, 64), min_size=n, max_size=n).map(lambda v: np.array(v, dtype))
    return values(dtype, n)


def check_chain(init, update, vals, olds, final, dtype) -> None:
    """The olds and the final value are the states of one serial chain of ``update``s."""
    after = [cast(np.array([update(o, v)], dtype=object), dtype)[0] for o, v in zip(olds, vals)]
    assert Counter(list(olds) + [final]) == Counter([init] + after), (init, list(vals), list(olds), final)


@pytest.mark.parametrize("name,dtype", CASES)
@PROPERTY
@given(data=st.data(), n=st.integers(1, 30), slots=st.integers(1, 6))
def test_atomic_rmw(name, dtype, data, n, slots):
    kind = KINDS[name]
    init = data.draw(atomic_values(dtype, slots))
    vals = data.draw(atomic_values(dtype, n))
    idx = np.array(data.draw(st.lists(st.integers(0, slots - 1), min_size=n, max_size=n)), np.int32)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), np.bool_)
    buf, old = to_host(init, dtype), empty(n, dtype)
    rmw_kernel[grid1(n, BLOCK)](buf, idx, to_host(vals, dtype), mask, old, n, FN=kind.fn, BLOCK=BLOCK)
    got, olds = exact(from_host(buf), dtype), exact(from_host(old), dtype)
    ex_init, ex_vals = exact(init, dtype), exact(vals, dtype)
    for slot in range(slots):
        lanes = np.flatnonzero(mask & (idx == slot))
        check_chain(ex_init[slot], kind.update, ex_vals[lanes], olds[lanes], got[slot], dtype)
        if kind.commutative:
            folded = ex_init[slot]
            for v in ex_vals[lanes]:
                folded = kind.update(folded, v)
            assert got[slot] == cast(np.array([folded], dtype=object), dtype)[0]


@tilec.jit
def counter_kernel(counter_ptr, old_ptr):
    """Every program bumps one counter: the old values are a permutation of 0..n-1."""
    old = tl.atomic_add(counter_ptr, 1)
    tl.store(old_ptr + tl.program_id(0), old)


def test_scalar_atomic_add_across_programs():
    counter, olds = np.zeros(1, np.int32), np.full(37, -1, np.int32)
    counter_kernel[(37,)](counter, olds)
    assert counter[0] == 37
    assert sorted(olds) == list(range(37))


@tilec.jit
def cas_tile_kernel(buf_ptr, cmp_ptr, val_ptr, old_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_cas(buf_ptr + offs, tl.load(cmp_ptr + offs), tl.load(val_ptr + offs))
    tl.store(old_ptr + offs, old)


@pytest.mark.parametrize("dtype", ["int16", "int32", "uint32", "int64", "float32", "float64"])
@PROPERTY
@given(data=st.data())
def test_atomic_cas_on_a_tile(dtype, data):
    init = data.draw(values(dtype, 8, lo=-3, hi=3))
    cmp = np.where(np.array(data.draw(st.lists(st.booleans(), min_size=8, max_size=8))), init, init + 1).astype(init.dtype)
    val = data.draw(values(dtype, 8, lo=-100, hi=100))
    buf, old = init.copy(), np.zeros_like(init)
    cas_tile_kernel[(1,)](buf, cmp, val, old, BLOCK=8)
    np.testing.assert_array_equal(old, init)
    np.testing.assert_array_equal(buf, np.where(init == cmp, val, init))


@tilec.jit
def locked_increment_kernel(lock_ptr, count_ptr, total_ptr, x_ptr, BLOCK: tl.constexpr):
    """Every program adds its row into one shared row under a spin lock
    (``atomic_cas`` to take it, ``atomic_xchg`` to give it back), as Triton's
    layer-norm backward tutorial does."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    count = tl.load(count_ptr)
    row = tl.load(x_ptr + pid * BLOCK + offs)
    if count == 0:
        tl.atomic_xchg(count_ptr, 1)
    else:
        row += tl.load(total_ptr + offs)
    tl.store(total_ptr + offs, row)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


def test_spin_lock_with_cas_and_xchg():
    x = (np.arange(5 * 8, dtype=np.float32).reshape(5, 8) - 11) * 0.5
    lock, count, total = np.zeros(1, np.int32), np.zeros(1, np.int32), np.full(8, 99, np.float32)
    locked_increment_kernel[(5,)](lock, count, total, x, BLOCK=8)
    assert lock[0] == 0 and count[0] == 1
    np.testing.assert_array_equal(total, x.sum(axis=0))
