"""What the host backend does for speed, checked by its results: programs
run in the calling thread or on the pool by the time the first one takes
(``threads.run_programs``), every program exactly once either way; a masked
load in a short row loop stays a loop LLVM vectorizes (``tiles.vector_loop``);
a reduction's tree gives the same bits whether its tile is loaded or a buffer."""
from __future__ import annotations

import itertools
import threading
import time

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.backends.host import threads


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
