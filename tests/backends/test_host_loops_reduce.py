"""The cpu target's loops and reductions against the interpreter, bit for bit:
a ``for``'s carried tile updated in place where only its own next value
reads it element by element (``rules_control.updated_in_place``), in two
buffers wherever anything else reads it (a swap, another carried value, a
reduction, a shifted read); reductions of every length, and float sums in
the host's order to the bit (``rules_reduce.fold``, then the tree, whatever
levels one pass fuses)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import PROPERTY
from tilec.backends.host.rules_control import updated_in_place
from tilec.backends.host.rules_reduce import FUSED_LEVELS, fused_levels
from tilec.ir.core import walk
from tilec.ir.ops import For


@tilec.jit
def carried(x_ptr, out_ptr, n, trips, BLOCK: tl.constexpr):
    """Seven carried tiles, each read its own way; every one stored at the end."""
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)  # in place: acc + x
    a = tl.zeros((BLOCK,), tl.float32) + 1.0  # a and b swap: two buffers
    b = tl.zeros((BLOCK,), tl.float32) - 1.0
    c = tl.zeros((BLOCK,), tl.float32)  # read by d's update: two buffers
    d = tl.zeros((BLOCK,), tl.float32)  # in place: only its own update reads it
    e = tl.zeros((BLOCK,), tl.float32)  # reduced inside the loop: two buffers
    f = tl.zeros((BLOCK,), tl.float32)  # read shifted (a permutation): two buffers
    for t in range(0, trips):
        x = tl.load(x_ptr + t * n + cols, mask=cols < n, other=0.0)
        acc = acc + x
        a, b = b, a + x
        c, d = c + x, d + c
        e = e * 0.5 + tl.max(e, axis=0) + x  # (exact scalings and an order-free reduction: the same bits)
        f = tl.flip(f, 0) + x
    out = out_ptr + tl.arange(0, BLOCK)
    tl.store(out, acc)
    tl.store(out + BLOCK, a)
    tl.store(out + 2 * BLOCK, b)
    tl.store(out + 3 * BLOCK, c)
    tl.store(out + 4 * BLOCK, d)
    tl.store(out + 5 * BLOCK, e)
    tl.store(out + 6 * BLOCK, f)


def compiled(kernel):
    """``kernel`` launched compiled for the cpu target (the suite sends host launches to the interpreter)."""
    return tilec.jit(kernel.fn, interpret=False)


def _loop(kernel, *args, **constexprs) -> For:
    fn = kernel.compile(*args, target="cpu", **constexprs).fn
    return next(op for op in walk(fn.body) if isinstance(op, For))


def test_only_a_tile_its_own_update_reads_is_updated_in_place():
    x, out = np.zeros(64, np.float32), np.zeros(7 * 16, np.float32)
    loop = _loop(carried, x, out, 10, 3, BLOCK=16)
    assert [updated_in_place(loop.body, k) for k in range(len(loop.inits))] == [True, False, False, False, True,
                                                                                 False, False]


@settings(PROPERTY, max_examples=15)
@given(n=st.integers(1, 40), trips=st.integers(0, 4), data=st.data())
def test_carried_tiles_give_the_interpreters_bits(n, trips, data):
    x = data.draw(st.lists(st.floats(-4, 4, width=32), min_size=n * max(trips, 1), max_size=n * max(trips, 1)))
    x = np.array(x, np.float32)
    got, want = (np.full(7 * 32, np.nan, np.float32) for _ in range(2))
    compiled(carried)[(1,)](x, got, n, trips, BLOCK=32)
    carried[(1,)](x, want, n, trips, BLOCK=32)  # the suite's host launches: the interpreter
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@tilec.jit
def running_sum(x_ptr, out_ptr, n, trips, BLOCK: tl.constexpr):
    """A ``tl.zeros`` accumulator only its own update reads (in place), summed and stored."""
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for t in range(0, trips):
        acc += tl.load(x_ptr + t * n + cols, mask=cols < n, other=0.0)
    tl.store(out_ptr + cols, acc)
    tl.store(out_ptr + BLOCK, tl.sum(acc, axis=0))


@pytest.mark.parametrize("trips", [0, 1, 3])
def test_a_zeros_accumulator_is_not_written_before_its_loop(trips):
    """Its first iteration reads the zeros themselves (and so does a loop of no
    iteration's result): no memset of the buffer a program, the interpreter's bits."""
    x = np.random.default_rng(trips).standard_normal(3 * 100).astype(np.float32)
    k = compiled(running_sum)
    assert "llvm.memset.p0" not in k.compile(x, x, 100, trips, BLOCK=128, target="cpu").asm["llir"]  # (p1: out, no trip)
    got, want = np.full(129, np.nan, np.float32), np.full(129, np.nan, np.float32)
    k[(1,)](x, got, 100, trips, BLOCK=128)
    running_sum[(1,)](x, want, 100, trips, BLOCK=128)
    np.testing.assert_array_equal(got[:128].view(np.uint32), want[:128].view(np.uint32))
    np.testing.assert_allclose(got[128], want[128], rtol=1e-6, atol=1e-6)


@tilec.jit
def reductions(x_ptr, i_ptr, out_ptr, iout_ptr, n, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows, cols = tl.arange(0, ROWS), tl.arange(0, COLS)
    at = rows[:, None] * COLS + cols[None, :]
    x = tl.load(x_ptr + at, mask=cols[None, :] < n, other=0.0)
    tl.store(out_ptr + rows, tl.sum(x, axis=1))
    tl.store(out_ptr + ROWS + cols, tl.sum(x, axis=0))
    tl.store(out_ptr + ROWS + COLS + rows, tl.max(x, axis=1))
    tl.store(out_ptr + 2 * ROWS + COLS + cols, tl.min(x, axis=0))
    tl.store(out_ptr + 2 * ROWS + 2 * COLS, tl.sum(x))
    k = tl.load(i_ptr + at, mask=cols[None, :] < n, other=0)
    tl.store(iout_ptr + rows, tl.sum(k, axis=1))
    tl.store(iout_ptr + ROWS + cols, tl.max(k, axis=0))


SHAPES = [(1, 1), (2, 8), (1, 16), (4, 32), (2, 128), (1, 1024), (8, 256)]


def _run_reductions(kernel, rows: int, cols: int, n: int):
    rng = np.random.default_rng(rows * 1000 + cols)
    x = (rng.standard_normal((rows, cols)) * 10.0 ** rng.integers(-6, 7, (rows, cols))).astype(np.float32)
    i = rng.integers(-2**31, 2**31, (rows, cols), dtype=np.int32)
    out, iout = np.zeros(2 * rows + 2 * cols + 1, np.float32), np.zeros(rows + cols, np.int32)
    kernel[(1,)](x, i, out, iout, n, ROWS=rows, COLS=cols)
    return out, iout


@pytest.mark.parametrize("rows, cols", SHAPES)
def test_reductions_of_every_length_give_the_interpreters_answer(rows, cols):
    """max, min and integer sums bit for bit; float sums, whose bits depend
    on the tree's order (the interpreter's is numpy's), within rounding."""
    for n in {cols, max(1, cols - 3)}:
        (got, igot), (want, iwant) = (_run_reductions(k, rows, cols, n) for k in (compiled(reductions), reductions))
        np.testing.assert_array_equal(igot, iwant)
        extrema = slice(rows + cols, 2 * rows + 2 * cols)
        np.testing.assert_array_equal(got[extrema].view(np.uint32), want[extrema].view(np.uint32))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-30 + 1e-6 * np.abs(want).max())


def tree_sum(x: np.ndarray, levels: int) -> np.float32:
    """The host's float32 sum of row ``x`` in its order (``rules_reduce``): a
    tree over ``2^fused_levels(n)`` blocks, neighbours first, where ``n`` is
    even, then halving steps (``i`` + ``i + n - n // 2``, the middle element
    kept where ``n`` is odd) until one element is left."""
    from tilec.backends.host import rules_reduce

    x, n = np.asarray(x, np.float32), len(x)
    if n > 1 and n % 2 == 0:
        m = n >> min(rules_reduce.fused_levels(n), levels)
        blocks = [x[k * m:(k + 1) * m] for k in range(n // m)]
        while len(blocks) > 1:  # neighbours first
            blocks = [blocks[k] + blocks[k + 1] for k in range(0, len(blocks), 2)]
        x, n = blocks[0], m
    while n > 1:
        half, step = n // 2, n - n // 2
        x, n = np.concatenate([x[:half] + x[step:n], x[half:step]]), step
    return x[0]


@tilec.jit
def loaded_sums(x_ptr, y_ptr, z_ptr, out_ptr, n, ROWS: tl.constexpr, COLS: tl.constexpr):
    """The sums of ``reductions``, each of a tile loaded for it alone (lazy, not a buffer)."""
    rows, cols = tl.arange(0, ROWS), tl.arange(0, COLS)
    at = rows[:, None] * COLS + cols[None, :]
    tl.store(out_ptr + rows, tl.sum(tl.load(x_ptr + at, mask=cols[None, :] < n, other=0.0), axis=1))
    tl.store(out_ptr + ROWS + cols, tl.sum(tl.load(y_ptr + at, mask=cols[None, :] < n, other=0.0), axis=0))
    tl.store(out_ptr + ROWS + COLS, tl.sum(tl.load(z_ptr + at, mask=cols[None, :] < n, other=0.0)))


@pytest.mark.parametrize("levels", sorted({1, 2, FUSED_LEVELS}))
@pytest.mark.parametrize("rows, cols", SHAPES + [(16, 8), (4, 2)])
def test_float_sums_add_in_the_hosts_order_bit_for_bit(rows, cols, levels, monkeypatch, tmp_path):
    """Along either axis and over the whole tile, the sums are a numpy model
    of the order (``tree_sum``) to the bit, whatever the levels one pass may
    fuse, of a buffer (read ``k`` blocks at once) and of a tile loaded for
    the sum alone (read once, in order) alike (``fold``)."""
    from tilec.backends.host import rules_reduce

    monkeypatch.setattr(rules_reduce, "FUSED_LEVELS", levels)
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))  # a compile of its own
    n = max(1, cols - 3)
    got, igot = _run_reductions(compiled(reductions), rows, cols, n)
    rng = np.random.default_rng(rows * 1000 + cols)  # _run_reductions' data
    x = (rng.standard_normal((rows, cols)) * 10.0 ** rng.integers(-6, 7, (rows, cols))).astype(np.float32)
    x[:, n:] = 0
    want = np.array([tree_sum(r, levels) for r in x] + [tree_sum(c, levels) for c in x.T]
                    + [tree_sum(x.reshape(-1), levels)], np.float32)
    have = np.concatenate([got[:rows + cols], got[-1:]])
    np.testing.assert_array_equal(have.view(np.uint32), want.view(np.uint32))
    loaded = np.full(rows + cols + 1, np.nan, np.float32)  # read in one pass, in order: the same bits
    x = (rng_x := np.random.default_rng(rows * 1000 + cols)).standard_normal((rows, cols))
    x = (x * 10.0 ** rng_x.integers(-6, 7, (rows, cols))).astype(np.float32)
    compiled(loaded_sums)[(1,)](x, x, x, loaded, n, ROWS=rows, COLS=cols)
    np.testing.assert_array_equal(loaded.view(np.uint32), want.view(np.uint32))


def test_fused_levels_halve_evenly():
    levels = [1, 1, 2, 1, 3, 2, 4, 10]  # how often 2, 3, 4, 6, 8, 12, 16, 1024 halve evenly
    assert [fused_levels(n) for n in (2, 3, 4, 6, 8, 12, 16, 1024)] == [min(k, FUSED_LEVELS) for k in levels]
