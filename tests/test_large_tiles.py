"""Large tiles: more than 2**20 elements (Triton's ``TRITON_MAX_TENSOR_NUMEL``)
is a compile error at the line that makes the tile, whatever makes it, and a
legal large tile compiles for sm_90 in bounded time."""
from __future__ import annotations

import inspect
import time

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.errors import CompilationError

LIMIT = 2**20


@tilec.jit
def make_arange(z_ptr):
    tl.store(z_ptr + tl.arange(0, 2 * 1048576), 0)


@tilec.jit
def make_full(z_ptr):
    x = tl.full((2048, 1024), 1.0, tl.float32)
    tl.store(z_ptr, tl.sum(tl.sum(x, 1), 0))


@tilec.jit
def make_zeros(z_ptr):
    x = tl.zeros((8, 1024, 256), tl.int8)
    tl.store(z_ptr, tl.sum(tl.sum(tl.sum(x, 2), 1), 0))


@tilec.jit
def make_broadcast(z_ptr):
    r = tl.arange(0, 2048)
    x = r[:, None] + r[None, :]
    tl.store(z_ptr, tl.max(tl.max(x, 1), 0))


@tilec.jit
def make_broadcast_to(z_ptr):
    x = tl.broadcast_to(tl.arange(0, 1024)[None, :], (4096, 1024))
    tl.store(z_ptr, tl.max(tl.max(x, 1), 0))


@tilec.jit
def make_splat(z_ptr):
    x = tl.zeros((1024, 1024), tl.float32)
    y = x[:, :, None] + tl.zeros((1, 1, 2), tl.float32)
    tl.store(z_ptr, tl.max(tl.max(tl.max(y, 2), 1), 0))


@tilec.jit
def make_dot(z_ptr):
    a = tl.zeros((2048, 16), tl.float16)
    b = tl.zeros((16, 1024), tl.float16)
    c = tl.dot(a, b)
    tl.store(z_ptr, tl.max(tl.max(c, 1), 0))


MAKERS = {  # kernel -> the line (its start) that makes the tile, and the tile's shape
    make_arange: ("tl.store(z_ptr + tl.arange", (2 * LIMIT,)),
    make_full: ("x = tl.full", (2048, 1024)),
    make_zeros: ("x = tl.zeros", (8, 1024, 256)),
    make_broadcast: ("x = r[:, None] + r[None, :]", (2048, 2048)),
    make_broadcast_to: ("x = tl.broadcast_to", (4096, 1024)),
    make_splat: ("y = x[:, :, None]", (1024, 1024, 2)),
    make_dot: ("c = tl.dot", (2048, 1024)),
}


def line_of(kernel, marker: str) -> int:
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, text in enumerate(lines) if text.strip().startswith(marker))


@pytest.mark.parametrize("kernel", list(MAKERS), ids=[k.fn.__name__ for k in MAKERS])
def test_a_tile_over_the_limit_is_refused_where_it_is_made(kernel):
    marker, shape = MAKERS[kernel]
    z = np.zeros(4, np.float32)
    with pytest.raises(CompilationError) as info:
        kernel[(1,)](z)
    message = str(info.value)
    assert f"test_large_tiles.py:{line_of(kernel, marker)}" in message, message
    assert str(shape) in message and str(LIMIT) in message, message
    assert not z.any()


@tilec.jit
def add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("block", [2**21, 2**24])
def test_a_vector_add_over_the_limit_is_refused_at_once_for_sm_90(block):
    """The issue's case: BLOCK=2**24 compiled for over 10 minutes and 5.7 GB."""
    x = np.zeros(16, np.float32)
    start = time.perf_counter()
    with pytest.raises(CompilationError, match=f"{block} elements, more than the limit of {LIMIT}"):
        add_kernel.compile(x, x, x, 16, BLOCK=block, target="sm_90")
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("short", [0, 3], ids=["aligned", "ragged"])
def test_a_two_to_the_fourteen_vector_add_compiles_for_sm_90_in_bounded_time(short):
    """A legal large tile compiles in bounded time.  A ragged length defeats
    vectorization, so each element gets its own guarded access: the worst case
    for LLVM's NVPTX backend, whose cost grows faster than linearly in the
    accesses per thread (docs/internals.md, "Compile time of large tiles")."""
    x = np.zeros(16, np.float32)
    start = time.perf_counter()
    compiled = add_kernel.compile(x, x, x, 2**14 - short, BLOCK=2**14, target="sm_90")
    assert time.perf_counter() - start < 60
    assert "ld.global" in compiled.asm["ptx"]


@pytest.mark.slow
def test_a_ragged_two_to_the_sixteen_vector_add_compiles_for_sm_90_in_seconds():
    """512 guarded accesses a thread: LLVM's NVPTX backend took ~30-40 s here
    on a ``gep`` per register; one base pointer per thread plus constant byte
    offsets takes it to ~1 s, and the whole compile to ~8 s (ptxas most of it)."""
    x = np.zeros(16, np.float32)
    start = time.perf_counter()
    compiled = add_kernel.compile(x, x, x, 2**16 - 3, BLOCK=2**16, target="sm_90")
    assert time.perf_counter() - start < 15
    assert "ld.global" in compiled.asm["ptx"]
