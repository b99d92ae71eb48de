"""Pointers made from integers on the GPU, against numpy: a grouped kernel that
reads a table of ``data_ptr()`` values (ragged group sizes, float16), a tile of
pointers from a table, pointers to int32 read back as bytes through an int64
and through a pointer cast (vectorized across bytes they did not cover before
the axis analysis was fixed), and a mask that compares addresses as ints."""
from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl

pytestmark = pytest.mark.gpu

BLOCK = 128


@tilec.jit
def grouped_axpy_kernel(a_table, b_table, c_table, sizes, BLOCK: tl.constexpr):
    """Group ``g`` (one program each): ``c = 2 * a + b`` over ``sizes[g]`` float16s."""
    g = tl.program_id(0)
    a = tl.load(a_table + g).to(tl.pointer_type(tl.float16))
    b = tl.load(b_table + g).to(tl.pointer_type(tl.float16))
    c = tl.load(c_table + g).to(tl.pointer_type(tl.float16))
    n = tl.load(sizes + g)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(c + offs, 2 * tl.load(a + offs, mask=mask) + tl.load(b + offs, mask=mask), mask=mask)


@tilec.jit
def tile_gather_kernel(table, out_ptr, G: tl.constexpr, BLOCK: tl.constexpr):
    gs = tl.arange(0, G)
    rows = tl.load(table + gs).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + gs[:, None] * BLOCK + offs[None, :], tl.load(rows[:, None] + offs[None, :]))


@tilec.jit
def first_bytes_kernel(x_ptr, via_int_ptr, via_ptr_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = x_ptr + offs
    tl.store(via_int_ptr + offs, tl.load(p.to(tl.int64).to(tl.pointer_type(tl.int8))))
    tl.store(via_ptr_ptr + offs, tl.load(p.to(tl.pointer_type(tl.int8))))


@tilec.jit
def below_address_kernel(x_ptr, out_ptr, end, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = (x_ptr + offs).to(tl.int64) < end
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


@pytest.mark.parametrize("sizes", [(1, 1, 1), (100, 700, 5), (4097, 31, 256)])
def test_grouped_kernel_through_a_table_of_data_ptrs(torch, sizes):
    gen = torch.Generator().manual_seed(sum(sizes))
    a = [torch.randn(n, generator=gen).half().cuda() for n in sizes]
    b = [torch.randn(n, generator=gen).half().cuda() for n in sizes]
    c = [torch.full((n,), float("nan"), dtype=torch.float16, device="cuda") for n in sizes]
    tables = [torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64, device="cuda") for ts in (a, b, c)]
    grouped_axpy_kernel[(len(sizes),)](*tables, torch.tensor(sizes, dtype=torch.int32, device="cuda"),
                                       BLOCK=BLOCK)
    for ai, bi, ci in zip(a, b, c):
        want = (2 * ai.cpu().numpy().astype(np.float32) + bi.cpu().numpy()).astype(np.float16)
        np.testing.assert_array_equal(ci.cpu().numpy(), want)


def test_a_tile_of_pointers_from_a_table(torch):
    x = torch.randn(8 * 64 + 40, device="cuda")
    starts = [0, 64, 3, 200, 129, 448, 5, 17]
    table = torch.tensor([x.data_ptr() + 4 * s for s in starts], dtype=torch.int64, device="cuda")
    out = torch.zeros(8, 64, device="cuda")
    tile_gather_kernel[(1,)](table, out, G=8, BLOCK=64)
    host = x.cpu().numpy()
    np.testing.assert_array_equal(out.cpu().numpy(), [host[s:s + 64] for s in starts])


def test_pointers_to_int32_read_as_bytes(torch):
    x = torch.arange(-512, 512, dtype=torch.int32, device="cuda") * 7
    via_int, via_ptr = (torch.zeros(1024, dtype=torch.int8, device="cuda") for _ in range(2))
    first_bytes_kernel[(1,)](x, via_int, via_ptr, BLOCK=1024)
    want = x.cpu().numpy().astype(np.int8)  # little-endian: the low byte
    np.testing.assert_array_equal(via_int.cpu().numpy(), want)
    np.testing.assert_array_equal(via_ptr.cpu().numpy(), want)


@pytest.mark.parametrize("k", [1, 5, 512, 1020, 1023])  # 512, 1020: `end` 16-byte aligned
def test_a_mask_from_addresses_as_ints(torch, k):
    """Elements below address ``end`` (``k`` of them) are copied; the rest of ``out`` is untouched."""
    x = torch.arange(1024, dtype=torch.float32, device="cuda")
    out = torch.full((1024,), -1.0, device="cuda")
    below_address_kernel[(1,)](x, out, x.data_ptr() + 4 * k, BLOCK=1024)
    want = np.where(np.arange(1024) < k, np.arange(1024, dtype=np.float32), -1.0)
    np.testing.assert_array_equal(out.cpu().numpy(), want)
