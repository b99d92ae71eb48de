"""Block pointers (``tl.make_block_ptr``, ``tl.advance``, ``tl.load``/``tl.store``
with ``boundary_check`` and ``padding_option``) and tensor descriptors
(``tl.make_tensor_descriptor``, ``desc.load``/``desc.store``/``desc.atomic_add``,
``tl.load_tensor_descriptor``/``tl.store_tensor_descriptor``, host
``TensorDescriptor`` arguments) on the interpreter, against numpy.

Blocks straddle the tensor's edge in each dimension, offsets go negative,
every order of the dimensions is tried; out-of-bounds elements read the
padding and are never written.  Then loops and branches carrying them, the
errors (Triton's, as ``tilec.CompilationError`` at the user's line), and
compiles for NVIDIA GPUs.  The comparison with Triton itself is
``tests/gpu/test_block_pointers_gpu.py``'s.
"""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import FEW, PROPERTY
from tilec.tools.tensor_descriptor import TensorDescriptor

DTYPES = ("float32", "float16", "int32", "int8", "int64")


def _data(shape, dtype: str) -> np.ndarray:
    return (np.arange(int(np.prod(shape))).reshape(shape) % 97 - 40).astype(dtype)


def block_reference(x: np.ndarray, offsets, block, checked, fill) -> np.ndarray:
    """numpy's block of ``x`` at ``offsets``: ``fill`` where a checked dimension is out of range."""
    out = np.full(block, fill, dtype=x.dtype)
    for idx in itertools.product(*(range(b) for b in block)):
        pos = tuple(o + i for o, i in zip(offsets, idx))
        if all(0 <= p < n for p, n in zip(pos, x.shape)):
            out[idx] = x[pos]
    return out


# --------------------------------------------------------------------------- #
# Block pointers
# --------------------------------------------------------------------------- #

@tilec.jit
def load_block_2d(X, Y, M, N, sm, sn, om, on, BM: tl.constexpr, BN: tl.constexpr, ORDER: tl.constexpr,
                  CHECK: tl.constexpr, PAD: tl.constexpr):
    bp = tl.make_block_ptr(X, shape=(M, N), strides=(sm, sn), offsets=(om, on), block_shape=(BM, BN), order=ORDER)
    x = tl.load(bp, boundary_check=CHECK, padding_option=PAD)
    tl.store(Y + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], x)


@tilec.jit
def store_block_2d(X, Y, M, N, om, on, BM: tl.constexpr, BN: tl.constexpr, CHECK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :])
    bp = tl.make_block_ptr(Y, (M, N), (N, 1), (om, on), (BM, BN), (1, 0))
    tl.store(bp, x, boundary_check=CHECK)


@st.composite
def straddling(draw, rank: int):
    """(shape, block, offsets, checked): a block that may straddle the edge in the
    checked dimensions (negative offsets too) and lies inside in the others."""
    shape = tuple(draw(st.integers(1, 24)) for _ in range(rank))
    block = tuple(draw(st.sampled_from((1, 2, 4, 8, 16))) for _ in range(rank))
    checked = tuple(d for d in range(rank) if draw(st.booleans()) or block[d] > shape[d])
    offsets = tuple(draw(st.integers(-block[d] - 2, shape[d] + 2)) if d in checked
                    else draw(st.integers(0, shape[d] - block[d])) for d in range(rank))
    return shape, block, offsets, checked


@PROPERTY
@given(case=straddling(2), dtype=st.sampled_from(DTYPES), transposed=st.booleans(),
       order=st.sampled_from([(1, 0), (0, 1)]), pad=st.sampled_from(["", "zero", "nan"]))
def test_block_pointer_load_reads_the_block_and_pads_outside(case, dtype, transposed, order, pad):
    (m, n), block, offsets, checked = case
    if pad == "nan" and not dtype.startswith("float"):
        pad = "zero"
    x = _data((n, m), dtype).T if transposed else _data((m, n), dtype)  # a transposed view: other strides
    y = np.zeros(block, dtype)
    sm, sn = (s // x.itemsize for s in x.strides)
    load_block_2d[(1,)](np.ascontiguousarray(x.T).T if transposed else x, y, m, n, sm, sn, *offsets, *block,
                        order, checked, pad)
    want = block_reference(x, offsets, block, checked, np.nan if pad == "nan" else 0)
    np.testing.assert_array_equal(y, want)


@PROPERTY
@given(case=straddling(2), dtype=st.sampled_from(DTYPES))
def test_block_pointer_store_writes_only_inside(case, dtype):
    (m, n), block, offsets, checked = case
    src = _data(block, dtype)
    y = np.full((m, n), 7, dtype)
    store_block_2d[(1,)](src, y, m, n, *offsets, *block, checked)
    want = np.full((m, n), 7, dtype)
    for i, j in itertools.product(range(block[0]), range(block[1])):
        r, c = offsets[0] + i, offsets[1] + j
        if 0 <= r < m and 0 <= c < n:
            want[r, c] = src[i, j]
    np.testing.assert_array_equal(y, want)


@tilec.jit
def load_block_3d(X, Y, A, B, C, o0, o1, o2, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr,
                  ORDER: tl.constexpr, CHECK: tl.constexpr):
    bp = tl.make_block_ptr(X, (A, B, C), (B * C, C, 1), (o0, o1, o2), (B0, B1, B2), ORDER)
    x = tl.load(bp, boundary_check=CHECK, padding_option="zero")
    r0 = tl.arange(0, B0)[:, None, None] * (B1 * B2)
    tl.store(Y + r0 + tl.arange(0, B1)[None, :, None] * B2 + tl.arange(0, B2)[None, None, :], x)


@FEW
@given(case=straddling(3), order=st.permutations([0, 1, 2]))
def test_block_pointer_3d_in_every_order(case, order):
    shape, block, offsets, checked = case
    x = _data(shape, "int32")
    y = np.zeros(block, np.int32)
    load_block_3d[(1,)](x, y, *shape, *offsets, *block, tuple(order), checked)
    np.testing.assert_array_equal(y, block_reference(x, offsets, block, checked, 0))


@tilec.jit
def row_sums(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Sums rows with a block pointer advanced along them in a loop (the matmul pattern)."""
    pm = tl.program_id(0)
    bp = tl.make_block_ptr(X, (M, N), (N, 1), (pm * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM, BN), tl.float32)
    for _ in range(0, tl.cdiv(N, BN)):
        acc += tl.load(bp, boundary_check=(0, 1))
        bp = tl.advance(bp, (0, BN))
    out = tl.make_block_ptr(Y, (M,), (1,), (pm * BM,), (BM,), (0,))
    tl.store(out, tl.sum(acc, axis=1), boundary_check=(0,))


@FEW
@given(m=st.integers(1, 40), n=st.integers(1, 40), bm=st.sampled_from([4, 16]), bn=st.sampled_from([2, 8]))
def test_block_pointer_advanced_in_a_loop(m, n, bm, bn):
    x = _data((m, n), "float32")
    y = np.zeros(m, np.float32)
    row_sums[(-(-m // bm),)](x, y, m, n, bm, bn)
    np.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-6)


@tilec.jit
def moved_by_branch_and_while(X, Y, N, c, B: tl.constexpr):
    bp = tl.make_block_ptr(X, (N,), (1,), (0,), (B,), (0,))
    if c > 0:
        bp = tl.advance(bp, (B,))
    x = tl.load(bp, boundary_check=(0,))
    i = 0
    while i < c + 2:
        bp = tl.advance(bp, [-1])
        i += 1
    y = tl.load(bp, boundary_check=0, padding_option="zero")
    tl.store(Y + tl.arange(0, B), x * 100 + y)


@pytest.mark.parametrize("c", [0, 1, 3])
def test_block_pointer_through_branches_and_while_loops(c):
    n, b = 40, 16
    x = np.arange(n, dtype=np.int32) + 1
    y = np.zeros(b, np.int32)
    moved_by_branch_and_while[(1,)](x, y, n, c, b)
    start = b if c > 0 else 0
    padded = np.concatenate([np.zeros(8, np.int32), x, np.zeros(b, np.int32)])
    want = x[start:start + b] * 100 + padded[8 + start - (c + 2):8 + start - (c + 2) + b]
    np.testing.assert_array_equal(y, want)


@tilec.jit
def bool_block(X, Y, N, B: tl.constexpr):
    v = tl.load(tl.make_block_ptr(X, (N,), (1,), (0,), (B,), (0,)), boundary_check=(0,))
    tl.store(Y + tl.arange(0, B), v)


def test_a_bool_block_pointer_reads_bytes_as_triton():
    x = np.array([True, False, True], np.bool_)
    y = np.full(4, 9, np.int8)
    bool_block[(1,)](x, y, 3, 4)
    np.testing.assert_array_equal(y, [1, 0, 1, 0])


# --------------------------------------------------------------------------- #
# Tensor descriptors
# --------------------------------------------------------------------------- #

@tilec.jit
def descriptor_copy(X, Y, M, N, om, on, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    src = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN], padding_option=PAD)
    dst = tl.make_tensor_descriptor(Y, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    x = src.load([om, on])
    dst.store([om, on], x)
    tl.store_tensor_descriptor(dst, [0, 0], tl.load_tensor_descriptor(src, [0, 0]))
    tl.static_assert(src.block_shape == (BM, BN) and isinstance(src, tl.tensor_descriptor))
    tl.static_assert(src.type == tl.tensor_descriptor_type(tl.block_type(src.dtype, (BM, BN)), 2))


@tilec.jit
def host_descriptor_copy(src, dst, om, on, BM: tl.constexpr, BN: tl.constexpr):
    dst.store([om, on], src.load([om, on]))


DESCRIPTOR_DTYPES = ("float32", "float16", "int32", "int16", "int64")


@st.composite
def descriptor_case(draw):
    dtype = draw(st.sampled_from(DESCRIPTOR_DTYPES))
    min_bn = 16 // np.dtype(dtype).itemsize
    m, n = draw(st.integers(1, 24)), draw(st.integers(1, 24))
    bm, bn = draw(st.sampled_from((1, 2, 8, 16))), draw(st.sampled_from((min_bn, 2 * min_bn)))
    om, on = draw(st.integers(-bm - 2, m + 2)), draw(st.integers(-bn - 2, n + 2))
    pad = draw(st.sampled_from(["zero", "nan"] if dtype.startswith("float") else ["zero"]))
    return dtype, (m, n), (bm, bn), (om, on), pad


def _descriptor_want(x, offsets, block):
    """A copy of ``x`` through a descriptor: the block at ``offsets`` and at the origin
    written where inside; what was read outside is the padding and is dropped."""
    want = np.zeros_like(x)
    for o in (offsets, (0, 0)):
        for i, j in itertools.product(range(block[0]), range(block[1])):
            r, c = o[0] + i, o[1] + j
            if 0 <= r < x.shape[0] and 0 <= c < x.shape[1]:
                want[r, c] = x[r, c]
    return want


@PROPERTY
@given(case=descriptor_case())
def test_descriptor_made_in_the_kernel_copies_inside_and_drops_outside(case):
    dtype, shape, block, offsets, pad = case
    x, y = _data(shape, dtype), np.zeros(shape, dtype)
    descriptor_copy[(1,)](x, y, *shape, *offsets, *block, pad)
    np.testing.assert_array_equal(y, _descriptor_want(x, offsets, block))


@tilec.jit
def descriptor_block_out(X, Y, M, N, om, on, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    src = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN], padding_option=PAD)
    tl.store(Y + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], src.load([om, on]))


@PROPERTY
@given(case=descriptor_case())
def test_descriptor_load_reads_the_padding_outside(case):
    dtype, shape, block, offsets, pad = case
    x, y = _data(shape, dtype), np.zeros(block, dtype)
    descriptor_block_out[(1,)](x, y, *shape, *offsets, *block, pad)
    want = block_reference(x, offsets, block, (0, 1), np.nan if pad == "nan" else 0)
    np.testing.assert_array_equal(y, want)


@PROPERTY
@given(case=descriptor_case())
def test_host_descriptor_argument(case):
    dtype, shape, block, offsets, _ = case
    per_16_bytes = 16 // np.dtype(dtype).itemsize
    padded = (shape[0], -(-shape[1] // per_16_bytes) * per_16_bytes)  # rows 16-byte aligned, as TMA needs
    x = _data(padded, dtype)[:, :shape[1]]
    y = np.zeros(padded, dtype)[:, :shape[1]]
    src = TensorDescriptor.from_tensor(x, list(block))
    host_descriptor_copy[(1,)](src, TensorDescriptor.from_tensor(y, list(block)), *offsets, *block)
    want = np.zeros_like(x)
    for i, j in itertools.product(range(block[0]), range(block[1])):
        r, c = offsets[0] + i, offsets[1] + j
        if 0 <= r < shape[0] and 0 <= c < shape[1]:
            want[r, c] = x[r, c]
    np.testing.assert_array_equal(y, want)


def test_host_descriptor_of_a_view_with_row_stride():
    x = _data((12, 64), "float32")
    view = x[2:11, 16:40]  # row stride 64, 16-byte aligned base
    y = np.zeros((9, 24), np.float32)
    host_descriptor_copy[(1,)](TensorDescriptor.from_tensor(view, [16, 32]),
                               TensorDescriptor.from_tensor(y, [16, 32]), 0, 0, 16, 32)
    np.testing.assert_array_equal(y, view)


def test_host_descriptor_checks_as_triton():
    x = np.zeros((8, 8), np.float32)
    with pytest.raises(ValueError, match="contiguous"):
        TensorDescriptor(x, [8, 8], [1, 8], [8, 8])
    with pytest.raises(ValueError, match="power of two"):
        TensorDescriptor.from_tensor(x, [3, 8])
    with pytest.raises(ValueError, match="padding"):
        TensorDescriptor.from_tensor(x, [8, 8], padding="one")


def test_a_host_descriptor_whose_shape_overflows_int32_is_refused_before_anything_runs():
    x, y = _data((16, 32), "float32"), np.zeros((16, 32), np.float32)
    huge = TensorDescriptor(x, [2**31, 32], [32, 1], [16, 32])
    with pytest.raises(ValueError, match=r"shape must fit in int32, got \[2147483648, 32\]"):
        host_descriptor_copy[(1,)](huge, TensorDescriptor.from_tensor(y, [16, 32]), 0, 0, 16, 32)
    assert not y.any()


@tilec.jit
def descriptor_atomics(X, M, N, om, on, B: tl.constexpr):
    d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [B, B])
    ones = tl.full((B, B), 1, tl.int32)
    d.atomic_add([om, on], ones)
    d.atomic_max([om, on], ones * 5)
    d.atomic_xor([0, 0], ones)


def test_descriptor_atomics_update_only_inside():
    x = np.zeros((5, 7), np.int32)
    descriptor_atomics[(1,)](x, 5, 7, -2, 3, 4)
    want = np.zeros((5, 7), np.int32)
    want[0:2, 3:7] = 5
    want[0:4, 0:4] ^= 1
    np.testing.assert_array_equal(x, want)


@tilec.jit
def descriptor_in_loop(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    d = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN])
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(N, BN)):
        acc += d.load([0, k * BN])
    tl.store(Y + tl.arange(0, BM), tl.sum(acc, axis=1))


def test_descriptor_loaded_in_a_loop():
    x = _data((8, 37), "float32")
    y = np.zeros(8, np.float32)
    descriptor_in_loop[(1,)](x, y, 8, 37, 8, 8)
    np.testing.assert_allclose(y, x.sum(axis=1))


# --------------------------------------------------------------------------- #
# Errors: tilec.CompilationError at the user's line
# --------------------------------------------------------------------------- #

@tilec.jit
def bad_block_pointer(X, n, CASE: tl.constexpr):
    if CASE == "rank":
        tl.load(tl.make_block_ptr(X, (n, n), (n, 1), (0,), (4, 4), (1, 0)))
    if CASE == "runtime_block":
        tl.load(tl.make_block_ptr(X, (n,), (1,), (0,), (n,), (0,)))
    if CASE == "check_range":
        tl.load(tl.make_block_ptr(X, (n,), (1,), (0,), (4,), (0,)), boundary_check=(1,))
    if CASE == "check_twice":
        tl.load(tl.make_block_ptr(X, (n, n), (n, 1), (0, 0), (4, 4), (1, 0)), boundary_check=(0, 0))
    if CASE == "mask":
        tl.load(tl.make_block_ptr(X, (n,), (1,), (0,), (4,), (0,)), mask=tl.arange(0, 4) < n)
    if CASE == "store_padding":
        tl.store(tl.make_block_ptr(X, (n,), (1,), (0,), (4,), (0,)), 1, padding_option="zero")
    if CASE == "nan_int":
        tl.load(tl.make_block_ptr(X, (n,), (1,), (0,), (4,), (0,)), boundary_check=0, padding_option="nan")
    if CASE == "order":
        tl.make_block_ptr(X, (n,), (1,), (0,), (4,), (1,))
    if CASE == "pointer_tile_check":
        tl.load(X + tl.arange(0, 4), boundary_check=(0,))
    if CASE == "advance_rank":
        tl.advance(tl.make_block_ptr(X, (n,), (1,), (0,), (4,), (0,)), (1, 1))
    if CASE == "int64_offset":
        tl.make_block_ptr(X, (n,), (1,), (n.to(tl.int64),), (4,), (0,))
    if CASE == "value_shape":
        tl.store(tl.make_block_ptr(X, (n,), (1,), (0,), (4,), (0,)), tl.zeros((8,), tl.int32))
    if CASE == "rebuilt_in_loop":
        bp = tl.make_block_ptr(X, (n,), (1,), (0,), (4,), (0,))
        for i in range(n):
            bp = tl.make_block_ptr(X + i, (n,), (1,), (0,), (4,), (0,))
    if CASE == "branch_kinds":
        bp = tl.make_block_ptr(X, (n,), (1,), (0,), (4,), (0,))
        if n > 3:
            bp = tl.make_block_ptr(X, (n,), (1,), (0,), (8,), (0,))
        tl.load(bp)


BLOCK_POINTER_ERRORS = {
    "rank": "block_shape (4, 4) has 2 dimensions, but offsets has 1",
    "runtime_block": "block_shape must be constexpr ints",
    "check_range": "`boundary_check` dimension 1 is out of range",
    "check_twice": "names a dimension twice",
    "mask": "`mask` and `other` arguments cannot be specified for loading block pointers",
    "store_padding": "bad call of `tl.store`",
    "nan_int": "Padding option `nan` is not supported for integer block pointers",
    "order": "must be a permutation",
    "pointer_tile_check": "`boundary_check` and `padding_option` are for block pointers",
    "advance_rank": "needs 1 offsets, got 2",
    "int64_offset": "add a `.to(tl.int32)`",
    "value_shape": "is not the block's shape (4,)",
    "rebuilt_in_loop": "make it before the loop and move it with tl.advance",
    "branch_kinds": "is a block pointer to a 8 block of int32 on one path but a block pointer to a 4 block",
}


@pytest.mark.parametrize("case", BLOCK_POINTER_ERRORS)
def test_block_pointer_errors_are_compilation_errors_at_the_line(case):
    with pytest.raises(tilec.CompilationError, match=re.escape(BLOCK_POINTER_ERRORS[case])) as info:
        bad_block_pointer[(1,)](np.zeros(16, np.int32), 8, case)
    assert info.value.line > bad_block_pointer.fn.__code__.co_firstlineno


@tilec.jit
def bad_descriptor(X, n, CASE: tl.constexpr):
    if CASE == "bytes":
        tl.make_tensor_descriptor(X, [128, 128], [128, 1], [1, 2]).load([0, 0])
    if CASE == "last_stride":
        tl.make_tensor_descriptor(X, [n, n], [2, 3], [4, 4])
    if CASE == "runtime_last_stride":
        tl.make_tensor_descriptor(X, [n, n], [n, n], [4, 4])
    if CASE == "rank":
        tl.make_tensor_descriptor(X, [n, n, n, n, n, n], [1, 1, 1, 1, 1, 1], [4, 4, 4, 4, 4, 4])
    if CASE == "strides":
        tl.make_tensor_descriptor(X, [n, n], [1], [4, 4])
    if CASE == "nan_int":
        tl.make_tensor_descriptor(X, [n, n], [n, 1], [4, 4], padding_option="nan")
    if CASE == "offsets":
        tl.make_tensor_descriptor(X, [n, n], [n, 1], [4, 4]).load([0])
    if CASE == "not_a_descriptor":
        tl.load_tensor_descriptor(X, [0])


DESCRIPTOR_ERRORS = {
    "bytes": "Descriptor block shape must have at least 16 bytes in the last dimension, but got 2 * 4 = 8 bytes",
    "last_stride": "Tensor descriptor last dim must be 1 but got 3",
    "runtime_last_stride": "the last stride must be the constant 1",
    "rank": "Expected 1 <= ndim <= 5 but got 6 dimensions",
    "strides": "Expected 2 strides but got 1",
    "nan_int": "Padding option `nan` is not supported for integer blocks",
    "offsets": "needs 2 offsets, got 1",
    "not_a_descriptor": "needs a tensor descriptor",
}


@pytest.mark.parametrize("case", DESCRIPTOR_ERRORS)
def test_descriptor_errors_are_compilation_errors_as_triton(case):
    with pytest.raises(tilec.CompilationError, match=re.escape(DESCRIPTOR_ERRORS[case])):
        bad_descriptor[(1,)](np.zeros(16, np.int32), 8, case)


def test_descriptor_error_cause_carries_the_message_as_triton():
    with pytest.raises(tilec.CompilationError) as info:
        bad_descriptor[(1,)](np.zeros(16, np.int32), 8, "bytes")
    assert "Descriptor block shape must have at least 16 bytes" in str(info.value.__cause__)


@tilec.jit
def bad_atomic(X, n):
    tl.make_tensor_descriptor(X, [n, n], [n, 1], [4, 4]).atomic_and([0, 0], tl.zeros((4, 4), tl.float32))


def test_descriptor_atomic_refuses_a_dtype_triton_refuses():
    with pytest.raises(tilec.CompilationError, match="`desc.atomic_and` does not support fp32"):
        bad_atomic[(1,)](np.zeros(16, np.float32), 8)


# --------------------------------------------------------------------------- #
# NVIDIA: the same kernels compile and assemble
# --------------------------------------------------------------------------- #

@tilec.jit
def block_pointer_matmul(A, B, C, M, N, K, sam, sbk, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    a = tl.make_block_ptr(A, (M, K), (sam, 1), (pm * BM, 0), (BM, BK), (1, 0))
    b = tl.make_block_ptr(B, (K, N), (sbk, 1), (0, pn * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(tl.load(a, boundary_check=(0, 1)), tl.load(b, boundary_check=(0, 1)))
        a = tl.advance(a, (0, BK))
        b = tl.advance(b, (BK, 0))
    c = tl.make_block_ptr(C, (M, N), (scm, 1), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tl.store(c, acc.to(tl.float16), boundary_check=(0, 1))


def test_block_pointer_matmul_on_the_interpreter():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((40, 24)).astype(np.float16)
    b = rng.standard_normal((24, 36)).astype(np.float16)
    c = np.zeros((40, 36), np.float16)
    block_pointer_matmul[(3, 3)](a, b, c, 40, 36, 24, 24, 36, 36, 16, 16, 16)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_block_pointers_and_descriptors_compile_for_nvidia(arch):
    a, b = np.zeros((64, 64), np.float16), np.zeros((64, 64), np.float16)
    c = np.zeros((64, 64), np.float16)
    compiled = block_pointer_matmul.compile(a, b, c, 64, 64, 64, 64, 64, 64, 64, 64, 32, target=arch)
    assert "cubin" in compiled.asm or "llir" in compiled.asm
    x = np.zeros((64, 64), np.float32)
    compiled = host_descriptor_copy.compile(TensorDescriptor.from_tensor(x, [16, 32]),
                                            TensorDescriptor.from_tensor(x, [16, 32]), 3, 5, 16, 32, target=arch)
    assert "cubin" in compiled.asm or "llir" in compiled.asm
    compiled = descriptor_copy.compile(x, x, 64, 64, 3, 5, 16, 32, "nan", target=arch)
    assert "cubin" in compiled.asm or "llir" in compiled.asm
