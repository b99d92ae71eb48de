"""Streaming stores (``tilec/backends/host/streaming.py``): a store whose rows
are contiguous over ``MIN_ROW_BYTES`` or more gets a non-temporal path the
launcher turns on for launches over more than the last-level cache; the
code shows it only where those facts hold, and with it on every element
written is the interpreter's, bit for bit, masked-off ones untouched, at
any alignment of the rows."""
from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl
from backends.test_host_regressions import same_bits
from tilec.backends.host import STREAMING_TARGET, TARGET, launcher, prefetch, streaming
from tilec.backends.host.target import host_target

X86 = host_target().triple.startswith("x86_64")


@tilec.jit
def rows_out(out_ptr, x_ptr, stride, out_stride, m, n, ROWS: tl.constexpr, BLOCK: tl.constexpr,
             HOLES: tl.constexpr, STEP: tl.constexpr):
    """``x * 3`` of ROWS x BLOCK of ``x`` a program, stored where the row
    and column are in bounds (and, with ``HOLES``, every third column
    skipped); ``STEP`` spaces the stored columns."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    inside = (rows[:, None] < m) & (cols[None, :] < n)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=inside, other=0)
    keep = inside & (cols[None, :] % 3 != 1) if HOLES else inside
    tl.store(out_ptr + rows[:, None] * out_stride + cols[None, :] * STEP, x * 3, mask=keep)


@tilec.jit
def rows_out_counted(out_ptr, x_ptr, count_ptr, BLOCK: tl.constexpr):
    """A row copied, and an atomic count of the programs: programs that talk."""
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + cols, tl.load(x_ptr + cols))
    tl.atomic_add(count_ptr, 1)


def compiled(kernel):
    """``kernel`` launched compiled for the cpu target (the suite sends host launches to the interpreter)."""
    return tilec.jit(kernel.fn, interpret=False)


def _code(kernel, *args, debug=False, target=STREAMING_TARGET, **constexprs) -> dict:
    return kernel.compile(*args, target=target, debug=debug, **constexprs).asm


def test_stores_of_long_contiguous_rows_get_a_non_temporal_path_and_no_others():
    x = np.zeros((4, 1024), np.float32)
    args = (x, x, 1024, 1024, 4, 1024)
    code = _code(rows_out, *args, ROWS=2, BLOCK=1024, HOLES=True, STEP=1)
    assert "!nontemporal" in code["llir"]
    # the variant of launches that do not stream has no such path
    assert "!nontemporal" not in _code(rows_out, *args, target=TARGET, ROWS=2, BLOCK=1024, HOLES=True, STEP=1)["llir"]
    if X86:  # aligned lines past the caches, and the fence after the programs
        assert "vmovntps" in code["asm"] and "sfence" in code["asm"]
    too_short = streaming.MIN_ROW_BYTES // 4 // 2  # float32 rows of half the bytes a row must have
    for kwargs in ({"BLOCK": too_short, "HOLES": False, "STEP": 1},  # rows under MIN_ROW_BYTES
                   {"BLOCK": 1024, "HOLES": False, "STEP": 2}):  # not contiguous
        assert "!nontemporal" not in _code(rows_out, *args, ROWS=2, **kwargs)["llir"]
    assert "!nontemporal" not in _code(rows_out, *args, debug=True, ROWS=2, BLOCK=1024, HOLES=False, STEP=1)["llir"]
    count = np.zeros(1, np.int32)
    assert "!nontemporal" not in _code(rows_out_counted, x, x, count, BLOCK=1024)["llir"]


def test_the_launcher_streams_over_more_than_the_last_level_cache(monkeypatch):
    cache = launcher.last_level_cache_bytes()
    assert cache > 0
    assert launcher.streaming(cache + 1) and not launcher.streaming(cache)
    monkeypatch.setattr(launcher, "STREAM_BYTES", 0)
    assert launcher.streaming(1)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8])
@pytest.mark.parametrize("holes", [False, True])
def test_streamed_rows_are_the_interpreters_at_any_alignment(monkeypatch, dtype, holes):
    """Rows at every offset from a line (head, whole lines, tail), rows and
    columns out of bounds, holes in the mask (lines stored masked)."""
    monkeypatch.setattr(launcher, "STREAM_BYTES", 0)  # every launch streams
    m, n, block = 5, 1000, 1024
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((m, n)) * 20).astype(dtype)
    lanes = streaming.LINE // np.dtype(dtype).itemsize
    for offset in sorted({0, 1, lanes // 2 + 1, lanes - 1}):
        results = []
        for kernel in (compiled(rows_out), rows_out):  # the suite's host launches: the interpreter
            whole = np.full((m, n + 2 * lanes), 7, dtype)
            out = whole[:, offset:offset + n]
            kernel[(tilec.cdiv(m, 2),)](out, x, n, whole.shape[1], m, n, ROWS=2, BLOCK=block, HOLES=holes, STEP=1)
            results.append(whole)
        got, want = results
        assert same_bits(got, want) if dtype != np.int8 else np.array_equal(got, want)
        assert (want[:, :offset] == 7).all() and (want[:, offset + n:] == 7).all()


@pytest.mark.parametrize("rows, cols", [(9, 300), (4, 2048)])
def test_streaming_softmax_rows_prefetched_programs_ahead_are_the_interpreters(monkeypatch, rows, cols):
    """Where the launch streams, the next loads prefetched are those
    ``prefetch.LEAD_BYTES`` ahead (programs past the grid's end included): the
    results do not change."""
    from backends.test_host_perf import row_softmax

    monkeypatch.setattr(launcher, "STREAM_BYTES", 0)
    x = np.random.default_rng(rows).standard_normal((rows, cols)).astype(np.float32)
    block = 1 << (cols - 1).bit_length()
    assert prefetch.LEAD_BYTES > block * 4  # more than one program ahead
    got, want = np.full_like(x, np.nan), np.full_like(x, np.nan)
    compiled(row_softmax)[(rows,)](got, x, cols, cols, BLOCK=block)
    row_softmax[(rows,)](want, x, cols, cols, BLOCK=block)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)  # sums in the host's order
