"""The threads that run a host kernel's programs.

``run_programs(run, total, stack_bytes)`` runs programs 0 to ``total - 1``
by calling ``run(first, last)`` on ranges of them (the compiled grid entry,
``grid.py``, called through ctypes, which releases the GIL for the call), on
a pool of ``TILEC_NUM_THREADS`` threads (default: every CPU this process may
use) made once, each with a stack of ``target.STACK_BYTES`` (a program's
buffers live on its thread's stack).  The grid is cut into a few ranges per
thread, taken in order by whichever thread is free, so uneven programs
still keep every thread busy.  The call returns when every program has run.

Programs that need little stack start in the calling thread: the first
one runs there, timed, and when the rest would take less than
``INLINE_SECONDS`` at its pace they run there too (a hand-over to the pool
costs tens of microseconds a thread, more on a busy machine: the small
launches of tests and tutorials); else the pool runs the rest.
Which thread runs a program never changes what it computes; a kernel whose
programs race (atomics whose order shows in the result) is as
deterministic here as on a GPU.
"""
from __future__ import annotations

import functools
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from tilec.environment import num_threads
from tilec.backends.host.target import STACK_BYTES

#: Ranges per thread: enough that a thread finishing early finds work.
RANGES_PER_THREAD = 4
#: Stack a program may use in the calling thread (Python's main thread has 8 MiB).
CALLER_STACK_BYTES = 1 << 20
#: Work below this (seconds, estimated from the first program) is not worth the pool's hand-over.
INLINE_SECONDS = 200e-6


def thread_count() -> int:
    """How many threads run programs (``TILEC_NUM_THREADS``, else the CPUs this process may use)."""
    wanted = num_threads()
    if wanted is not None:
        return wanted
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@functools.cache
def _pool(threads: int) -> ThreadPoolExecutor:
    """``threads`` worker threads with big stacks, started now."""
    previous = threading.stack_size(STACK_BYTES)
    try:
        pool = ThreadPoolExecutor(threads, thread_name_prefix="tilec-cpu")
        barrier = threading.Barrier(threads)
        for f in [pool.submit(barrier.wait) for _ in range(threads)]:
            f.result()
    finally:
        threading.stack_size(previous)
    return pool


# A forked child has none of its parent's threads: it makes its own pool.
os.register_at_fork(after_in_child=_pool.cache_clear)


def ranges(total: int, parts: int) -> list[tuple[int, int]]:
    """``[0, total)`` cut into ``parts`` (at most ``total``) consecutive ranges of near-equal size."""
    parts = max(1, min(parts, total))
    bounds = [total * k // parts for k in range(parts + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def run_programs(run: Callable[[int, int], None], total: int, stack_bytes: int) -> None:
    """Run programs ``0 .. total - 1`` through ``run(first, last)`` (module docstring)."""
    first = 0
    if stack_bytes <= CALLER_STACK_BYTES:
        start = time.perf_counter()
        run(0, 1)
        if total == 1:
            return
        if (time.perf_counter() - start) * (total - 1) < INLINE_SECONDS or thread_count() == 1:
            run(1, total)
            return
        first = 1
    pool = _pool(thread_count())
    threads = min(thread_count(), total)
    parts = ranges(total - first, threads * RANGES_PER_THREAD)
    for f in [pool.submit(run, first + lo, first + hi) for lo, hi in parts]:
        f.result()
