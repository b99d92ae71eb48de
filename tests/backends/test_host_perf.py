"""What the host backend does for speed, checked by its results: programs
run in the calling thread or on the pool by the time the first one takes
(``threads.run_programs``), every program exactly once either way; a masked
load in a short row loop stays a loop LLVM vectorizes (``tiles.vector_loop``);
a reduction's tree gives the same bits whether its tile is loaded or a buffer;
a program prefetches the next one's loads in its costly loop, where their
pointers read no memory and the launch streams, and gives the
interpreter's answer either way."""
from __future__ import annotations

import itertools
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tilec
import tilec.language as tl
from helpers import PROPERTY
from kernels.vector_add import add_kernel
from tilec.backends.host import STREAMING_TARGET, TARGET, prefetch, threads


def ran_programs(total: int, first_seconds: float) -> tuple[list[int], set[str]]:
    """Every program ``run_programs`` ran (in order of ids) and the threads that ran them."""
    seen, names, lock = [], set(), threading.Lock()

    def run(first: int, last: int) -> None:
        if first == 0 and last > 0 and first_seconds:
            time.sleep(first_seconds)
        with lock:
            seen.extend(range(first, last))
            names.add(threading.current_thread().name)
    threads.run_programs(run, total, 0)
    return sorted(seen), names


def test_quick_programs_all_run_in_the_calling_thread(monkeypatch):
    # a clock on which the first program takes one microsecond, far below
    # INLINE_SECONDS, however busy the machine (a real one flaked under load)
    clock = itertools.count(0.0, 1e-6)
    monkeypatch.setattr(threads.time, "perf_counter", lambda: next(clock))
    seen, names = ran_programs(10, 0)
    assert seen == list(range(10))
    assert names == {threading.current_thread().name}


@pytest.mark.skipif(threads.thread_count() < 2, reason="one thread: everything runs in the caller")
def test_slow_programs_go_to_the_pool_once_each():
    seen, names = ran_programs(50, 2 * threads.INLINE_SECONDS)
    assert seen == list(range(50))
    assert any(n.startswith("tilec-cpu") for n in names)


@tilec.jit
def row_sums(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    row = tl.load(x_ptr + tl.program_id(0) * n + cols, mask=cols < n, other=0.0)
    tl.store(out_ptr + tl.program_id(0), tl.sum(row, axis=0) + tl.max(row, axis=0))


def test_a_masked_row_load_is_vector_code_and_the_tree_gives_the_interpreters_bits():
    x = np.random.default_rng(0).standard_normal((5, 29)).astype(np.float32)
    out, want = np.zeros(5, np.float32), np.zeros(5, np.float32)
    compiled = row_sums.compile(x, out, 29, BLOCK=32, target="cpu")
    assert "llvm.masked.load.v" in compiled.asm["llir"]  # not 32 branches, unrolled
    row_sums[(5,)](x, out, 29, BLOCK=32)
    tilec.jit(row_sums.fn, interpret=True)[(5,)](x, want, 29, BLOCK=32)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out, x.sum(axis=1) + x.max(axis=1), rtol=1e-5, atol=1e-5)


# --- the next program's loads, prefetched (prefetch.py) -----------------------------------

@tilec.jit
def row_softmax(out_ptr, x_ptr, stride, n, BLOCK: tl.constexpr):
    """The softmax tutorial's program: its exp is a costly tile computed from a buffer."""
    cols = tl.arange(0, BLOCK)
    row = tl.load(x_ptr + tl.program_id(0) * stride + cols, mask=cols < n, other=-float("inf"))
    e = tl.exp(row - tl.max(row, axis=0))
    tl.store(out_ptr + tl.program_id(0) * stride + cols, e / tl.sum(e, axis=0), mask=cols < n)


@tilec.jit
def tile_exp_2d(out_ptr, x_ptr, idx_ptr, n, ROWS: tl.constexpr, COLS: tl.constexpr, GATHER: tl.constexpr):
    """A 2-D tile per program of a 2-D grid (the next program wraps from the
    last x to the next y); with ``GATHER`` its rows come through a loaded index,
    which no prefetch may follow."""
    rows = tl.program_id(1) * ROWS + tl.arange(0, ROWS)
    if GATHER:
        rows = tl.load(idx_ptr + rows)
    cols = tl.program_id(0) * COLS + tl.arange(0, COLS)
    at = rows[:, None] * n + cols[None, :]
    x = tl.load(x_ptr + at, mask=cols[None, :] < n, other=0.0)
    e = tl.exp(x - tl.max(x, axis=1)[:, None])  # x read twice: a buffer, e computed from it
    tl.store(out_ptr + at, e / tl.sum(e, axis=1)[:, None], mask=cols[None, :] < n)


def _cpu_llir(kernel, *args, target=STREAMING_TARGET, **constexprs) -> str:
    return kernel.compile(*args, target=target, **constexprs).asm["llir"]


def test_the_next_programs_row_is_prefetched_in_the_exp_loop_only_where_its_pointers_read_no_memory():
    x = np.zeros((4, 256), np.float32)
    llir = _cpu_llir(row_softmax, x, x, 256, 256, BLOCK=256)
    assert "@llvm.prefetch" in llir
    assert "@llvm.prefetch" not in _cpu_llir(row_softmax, x, x, 256, 256, target=TARGET, BLOCK=256)  # no streaming
    # one prefetch a chunk of 16 floats, in the loop of exp's scaling (vscalef / ldexp)
    loop = llir[llir.index("call void @llvm.prefetch"):]
    assert "ldexp" in loop[:loop.index("br ")] or "fmul" in loop[:loop.index("br ")]
    idx = np.zeros(8, np.int32)
    for gather, shapes in ((False, [(2, 64)]), (True, [(2,)])):  # the index, not the rows it picks
        fn = tile_exp_2d.compile(x, x, idx, 256, ROWS=2, COLS=64, GATHER=gather, target="cpu").fn
        assert [load.result.type.shape for load in prefetch.prefetchable_loads(fn)] == shapes
        assert "@llvm.prefetch" in _cpu_llir(tile_exp_2d, x, x, idx, 256, ROWS=2, COLS=64, GATHER=gather)
    xs = np.zeros(1 << 12, np.float32)
    assert "@llvm.prefetch" not in _cpu_llir(add_kernel, xs, xs, xs, 1 << 12, BLOCK_SIZE=1024)  # no costly tile


@settings(PROPERTY, max_examples=12)
@given(rows=st.integers(1, 9), cols=st.integers(1, 300), dtype=st.sampled_from([np.float32, np.float64]),
       data=st.data())
def test_prefetching_programs_give_the_interpreters_answer(rows, cols, dtype, data):
    """Prefetches change no result: the softmax rows (any width, the last
    program's prefetch past the array) and 2-D tiles of a 2-D grid as the
    interpreter computes them, where the launch streams (the loop that
    prefetches) and where it does not (the loop as before), bit for bit the
    same either way."""
    x = data.draw(hnp.arrays(dtype, (rows, cols), elements=st.floats(-20, 20, width=32)))
    block = max(16, 1 << (cols - 1).bit_length())
    want = np.full_like(x, np.nan)
    row_softmax[(rows,)](want, x, cols, cols, BLOCK=block)  # the suite's host launches: the interpreter
    got = both_ways(lambda out: compiled(row_softmax)[(rows,)](out, x, cols, cols, BLOCK=block), x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    grid = (tilec.cdiv(cols, 32), tilec.cdiv(rows, 2))
    padded = np.zeros((grid[1] * 2, cols), dtype)
    padded[:rows] = x
    idx = np.arange(grid[1] * 2, dtype=np.int32)
    want = np.full_like(padded, np.nan)
    tile_exp_2d[grid](want, padded, idx, cols, ROWS=2, COLS=32, GATHER=False)
    got = both_ways(lambda out: compiled(tile_exp_2d)[grid](out, padded, idx, cols, ROWS=2, COLS=32, GATHER=False),
                    padded)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)  # sums in the host's order


def both_ways(launch, like: np.ndarray) -> np.ndarray:
    """What ``launch(out)`` writes into ``out`` (like ``like``, NaN first) with
    the launch streaming (``launcher.STREAM_BYTES`` 0) and not, the same bits."""
    from tilec.backends.host import launcher

    outs = []
    for stream_bytes in (1 << 60, 0):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(launcher, "STREAM_BYTES", stream_bytes)
            outs.append(np.full_like(like, np.nan))
            launch(outs[-1])
    np.testing.assert_array_equal(outs[0].view(np.uint8), outs[1].view(np.uint8))
    return outs[0]


def compiled(kernel):
    """``kernel`` launched compiled for the cpu target (the suite sends host launches to the interpreter)."""
    return tilec.jit(kernel.fn, interpret=False)
