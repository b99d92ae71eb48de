"""Where a pointer may point, on the host (``host_only``: not mirrored onto a GPU): every access is checked against the
argument its pointer came from (two views of one buffer stay apart), and
pointers made from integers (a table of ``data_ptr()`` values, the
grouped-GEMM pattern) find the array they point into, or say they point into
none.  An offset that wrapped in int32 is named as such."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import PROPERTY
from tilec.errors import InterpreterError

# Aliasing views and host addresses held in data are the host's own: the GPU's
# cases are tests/gpu/test_int_pointers_gpu.py.
pytestmark = pytest.mark.host_only

BLOCK = 16


@tilec.jit
def load_at_kernel(x_ptr, y_ptr, out_ptr, i):
    tl.store(out_ptr, tl.load(x_ptr + i))
    tl.store(out_ptr + 1, tl.load(y_ptr))


@tilec.jit
def store_at_kernel(x_ptr, y_ptr, out_ptr, i):
    tl.store(x_ptr + i, tl.load(y_ptr))


@tilec.jit
def atomic_add_at_kernel(x_ptr, y_ptr, out_ptr, i):
    tl.atomic_add(x_ptr + i, tl.load(y_ptr))


@tilec.jit
def masked_tile_load_kernel(x_ptr, y_ptr, out_ptr, start, limit, BLOCK: tl.constexpr):
    """``out[j] = x[start + j]`` where ``start + j < limit``; lanes past it are masked off."""
    offs = start + tl.arange(0, BLOCK)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offs, mask=offs < limit, other=-1.0))
    tl.store(out_ptr + BLOCK, tl.load(y_ptr))


ACCESSES = {"load": load_at_kernel, "store": store_at_kernel, "atomic_add": atomic_add_at_kernel}

# Two views of one 64-element buffer: x at [x0, x0 + nx), y at [y0, y0 + ny); adjacent, overlapping or apart.
views = st.tuples(st.integers(0, 40), st.integers(0, 24), st.integers(0, 63), st.integers(1, 64))


def two_views(v) -> tuple:
    x0, nx, y0, ny = v
    buf = np.arange(64, dtype=np.float32) + 100
    return buf, buf[x0:x0 + nx], buf[y0:min(64, y0 + ny)]


@pytest.mark.parametrize("what", ACCESSES)
@PROPERTY
@given(v=views, i=st.integers(-30, 50))
def test_scalar_access_is_checked_against_its_own_view(what, v, i):
    buf, x, y = two_views(v)
    before, out = buf.copy(), np.zeros(2, np.float32)
    if 0 <= i < len(x):
        ACCESSES[what][(1,)](x, y, out, i)
        want = {"load": before, "store": np.where(np.arange(64) == v[0] + i, before[v[2]], before),
                "atomic_add": np.where(np.arange(64) == v[0] + i, before[v[0] + i] + before[v[2]], before)}
        np.testing.assert_array_equal(buf, want[what])
        if what == "load":
            np.testing.assert_array_equal(out, [before[v[0] + i], before[v[2]]])
        return
    with pytest.raises(InterpreterError, match=rf"{what} out of bounds: `x_ptr` \+ {i} "):
        ACCESSES[what][(1,)](x, y, out, i)
    np.testing.assert_array_equal(buf, before)  # nothing written


@PROPERTY
@given(v=views, start=st.integers(-20, 40), limit=st.integers(-5, 60))
def test_masked_tile_load_is_checked_against_its_own_view_masked_lanes_excluded(v, start, limit):
    buf, x, y = two_views(v)
    out = np.zeros(BLOCK + 1, np.float32)
    offs = start + np.arange(BLOCK)
    live = offs < limit
    bad = live & ((offs < 0) | (offs >= len(x)))
    if bad.any():
        with pytest.raises(InterpreterError, match=rf"load out of bounds: `x_ptr` \+ {offs[bad][0]} "):
            masked_tile_load_kernel[(1,)](x, y, out, start, limit, BLOCK=BLOCK)
        return
    masked_tile_load_kernel[(1,)](x, y, out, start, limit, BLOCK=BLOCK)
    want = np.where(live, buf[np.clip(v[0] + offs, 0, 63)], -1.0)
    np.testing.assert_array_equal(out, np.append(want, y[0]))


def test_reading_past_a_view_into_its_neighbour_is_refused():
    """The issue's case: ``xv, yv = buf[:1000], buf[1000:]``; ``xv + 1023`` is ``yv``'s data."""
    buf = np.arange(2000, dtype=np.float32)
    out = np.zeros(2, np.float32)
    with pytest.raises(InterpreterError, match=r"`x_ptr` \+ 1023 is past its 1000 elements"):
        load_at_kernel[(1,)](buf[:1000], buf[1000:], out, 1023)


@PROPERTY
@given(start=st.integers(0, 59), step=st.integers(-4, 4).filter(lambda s: abs(s) > 1), n=st.integers(1, 30),
       i=st.integers(-70, 70))
def test_a_strided_view_owns_only_its_elements(start, step, n, i):
    """``x = buf[start::step][:n]``: ``x_ptr + i`` is its element ``i / step`` when that is a whole
    index below ``n``; the bytes between its elements are the buffer's, not ``x``'s."""
    buf = np.arange(60, dtype=np.float32)
    x, y, out = buf[start::step][:n], buf[:1], np.zeros(2, np.float32)
    if i % step == 0 and 0 <= i // step < len(x):
        load_at_kernel[(1,)](x, y, out, i)
        assert out[0] == buf[start + i]
        return
    with pytest.raises(InterpreterError, match=rf"load out of bounds: `x_ptr` \+ {i} "):
        load_at_kernel[(1,)](x, y, out, i)


@PROPERTY
@given(rows=st.tuples(st.integers(0, 5), st.integers(1, 6)), cols=st.tuples(st.integers(0, 9), st.integers(1, 10)),
       i=st.integers(0, 60))
def test_a_block_of_a_matrix_owns_only_its_block(rows, cols, i):
    """``x = m[r0:r0 + nr, c0:c0 + nc]`` of a 6 x 10 matrix, read as ``x_ptr + i`` (row stride 10)."""
    m = np.arange(60, dtype=np.float32).reshape(6, 10)
    x = m[rows[0]:rows[0] + rows[1], cols[0]:cols[0] + cols[1]]
    y, out = m[0, :1], np.zeros(2, np.float32)
    r, c = divmod(i, 10)
    if r < x.shape[0] and c < x.shape[1]:
        load_at_kernel[(1,)](x, y, out, i)
        assert out[0] == x[r, c]
        return
    with pytest.raises(InterpreterError, match=rf"load out of bounds: `x_ptr` \+ {i} "):
        load_at_kernel[(1,)](x, y, out, i)


def test_a_transposed_matrix_owns_every_element_of_its_span():
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.zeros(2, np.float32)
    for i in range(12):
        load_at_kernel[(1,)](m.T, m, out, i)
        assert out[0] == i


@tilec.jit
def pick_per_program_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    """Program 0 copies ``x``, program 1 copies ``y``: one pointer, a different argument per program."""
    pid = tl.program_id(0)
    src = tl.where(pid == 0, x_ptr, y_ptr)
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + pid * BLOCK + offs, tl.load(src + offs))


def test_a_pointer_may_come_from_a_different_argument_in_each_program():
    x, y = np.arange(BLOCK, dtype=np.float32), -np.arange(BLOCK, dtype=np.float32) - 1
    out = np.zeros(2 * BLOCK, np.float32)
    pick_per_program_kernel[(2,)](x, y, out, BLOCK=BLOCK)
    np.testing.assert_array_equal(out, np.concatenate([x, y]))


# --------------------------------------------------------------------------- #
# Pointers made from integers
# --------------------------------------------------------------------------- #

@tilec.jit
def grouped_axpy_kernel(a_table, b_table, c_table, sizes, x0, x1, x2, x3, x4, x5, x6, x7, x8,
                        BLOCK: tl.constexpr):
    """Group ``g`` (one program each): ``c = 2 * a + b`` over ``sizes[g]`` elements, its three
    arrays' addresses read from tables (the arrays are passed too, so the host can check them)."""
    g = tl.program_id(0)
    a = tl.load(a_table + g).to(tl.pointer_type(tl.float32))
    b = tl.load(b_table + g).to(tl.pointer_type(tl.float32))
    c = tl.load(c_table + g).to(tl.pointer_type(tl.float32))
    n = tl.load(sizes + g)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(c + offs, 2 * tl.load(a + offs, mask=mask) + tl.load(b + offs, mask=mask), mask=mask)


def address_table(arrays, dtype=np.int64) -> np.ndarray:
    return np.array([a.__array_interface__["data"][0] for a in arrays], dtype)


@pytest.mark.parametrize("table_dtype", [np.int64, np.uint64])
@PROPERTY
@given(sizes=st.lists(st.integers(1, 50), min_size=3, max_size=3), seed=st.integers(0, 2 ** 16))
def test_grouped_kernel_reads_its_arrays_through_a_table_of_addresses(table_dtype, sizes, seed):
    rng = np.random.default_rng(seed)
    a = [rng.standard_normal(n).astype(np.float32) for n in sizes]
    b = [rng.standard_normal(n).astype(np.float32) for n in sizes]
    c = [np.full(n, np.nan, np.float32) for n in sizes]
    tables = [address_table(t, table_dtype) for t in (a, b, c)]
    grouped_axpy_kernel[(3,)](*tables, np.array(sizes, np.int32), *a, *b, *c, BLOCK=BLOCK)
    for ai, bi, ci in zip(a, b, c):
        np.testing.assert_array_equal(ci, 2 * ai + bi)


@tilec.jit
def tile_gather_kernel(table, out_ptr, x0, x1, x2, x3, G: tl.constexpr, BLOCK: tl.constexpr):
    """``out[g, j] = table[g][j]``: a tile of pointers, each made from an integer."""
    gs = tl.arange(0, G)
    rows = tl.load(table + gs).to(tl.pointer_type(tl.int16))
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + gs[:, None] * BLOCK + offs[None, :], tl.load(rows[:, None] + offs[None, :]))


@PROPERTY
@given(starts=st.lists(st.integers(0, 20), min_size=4, max_size=4), seed=st.integers(0, 2 ** 16))
def test_a_tile_of_pointers_made_from_integers(starts, seed):
    """Rows start anywhere inside four arrays (not only at their first element)."""
    xs = [np.random.default_rng(seed + k).integers(-2 ** 15, 2 ** 15, 20 + BLOCK, dtype=np.int16)
          for k in range(4)]
    table = address_table([x[s:] for x, s in zip(xs, starts)])
    out = np.zeros((4, BLOCK), np.int16)
    tile_gather_kernel[(1,)](table, out, *xs, G=4, BLOCK=BLOCK)
    np.testing.assert_array_equal(out, [x[s:s + BLOCK] for x, s in zip(xs, starts)])


@tilec.jit
def addresses_kernel(x_ptr, out64_ptr, outu64_ptr, back_ptr, BLOCK: tl.constexpr):
    """A tile of pointers as int64 and uint64 addresses, and back through an int64 to a pointer."""
    offs = tl.arange(0, BLOCK)
    p = x_ptr + offs
    tl.store(out64_ptr + offs, p.to(tl.int64))
    tl.store(outu64_ptr + offs, p.to(tl.uint64))
    q = (x_ptr.to(tl.int64) + offs.to(tl.int64) * 8).to(tl.pointer_type(tl.float64))
    tl.store(back_ptr + offs, tl.load(q))


def test_pointers_cast_to_ints_are_real_addresses_and_cast_back():
    x = np.linspace(-1, 1, BLOCK)
    out64, outu64, back = np.zeros(BLOCK, np.int64), np.zeros(BLOCK, np.uint64), np.zeros(BLOCK)
    addresses_kernel[(1,)](x, out64, outu64, back, BLOCK=BLOCK)
    want = x.__array_interface__["data"][0] + 8 * np.arange(BLOCK, dtype=np.int64)
    np.testing.assert_array_equal(out64, want)
    np.testing.assert_array_equal(outu64, want.astype(np.uint64))
    np.testing.assert_array_equal(back, x)


@tilec.jit
def below_address_kernel(x_ptr, out_ptr, end, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = (x_ptr + offs).to(tl.int64) < end
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


@PROPERTY
@given(k=st.integers(-3, BLOCK + 3))
def test_a_mask_from_addresses_as_ints(k):
    x, out = np.arange(BLOCK, dtype=np.float32), np.full(BLOCK, -1.0, np.float32)
    below_address_kernel[(1,)](x, out, x.__array_interface__["data"][0] + 4 * k, BLOCK=BLOCK)
    np.testing.assert_array_equal(out, np.where(np.arange(BLOCK) < k, x, -1.0))


@tilec.jit
def scalar_from_int_kernel(addr, out_ptr, x_ptr):
    tl.store(out_ptr, tl.load(addr.to(tl.pointer_type(tl.float32)) + 1))


def test_a_scalar_int_argument_cast_to_a_pointer():
    x, out = np.array([1.5, 2.5, 3.5], np.float32), np.zeros(1, np.float32)
    scalar_from_int_kernel[(1,)](x.__array_interface__["data"][0], out, x)
    assert out[0] == 2.5


def test_a_pointer_from_an_integer_outside_every_argument_is_a_clear_error():
    outside = np.arange(BLOCK, dtype=np.int16)  # not passed to the launch
    xs = [np.zeros(BLOCK, np.int16) for _ in range(4)]
    table = address_table([xs[0], xs[1], outside, xs[3]])
    out = np.zeros((4, BLOCK), np.int16)
    with pytest.raises(InterpreterError, match="pointer made from an integer .* does not point into any array "
                                               "passed to this launch"):
        tile_gather_kernel[(1,)](table, out, *xs, G=4, BLOCK=BLOCK)
    assert not out.any()


def test_an_int32_is_no_address_of_an_array():
    """Sign-extended, an int32 points below every array a host process has."""
    x, out = np.arange(BLOCK, dtype=np.float32), np.zeros(1, np.float32)
    with pytest.raises(InterpreterError, match="made from an integer .* does not point into any array"):
        scalar_from_int_kernel[(1,)](np.int32(-4096), out, x)


@pytest.mark.parametrize("index", [BLOCK - 1, BLOCK])
def test_a_pointer_from_an_integer_is_bounded_by_the_array_it_points_into(index):
    """Made from the address of ``x[index]`` (``x``'s end included), then stepped one past the end."""
    x, out = np.arange(BLOCK, dtype=np.float32), np.zeros(1, np.float32)
    with pytest.raises(InterpreterError, match=rf"`x_ptr` \+ {index + 1} "):
        scalar_from_int_kernel[(1,)](x.__array_interface__["data"][0] + 4 * index, out, x)


# --------------------------------------------------------------------------- #
# int32 overflow of an offset
# --------------------------------------------------------------------------- #

@tilec.jit
def strided_rows_kernel(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), tl.load(x_ptr + pid * stride + tl.arange(0, BLOCK)))


@pytest.mark.parametrize("pid_times_stride", [2 ** 31, 3 * 2 ** 30 + 7 * 2 ** 20])
def test_an_offset_that_wrapped_in_int32_is_named_as_such(pid_times_stride):
    x, out = np.zeros(64, np.float32), np.zeros(4 * BLOCK, np.float32)
    with pytest.raises(InterpreterError, match=r"load out of bounds: `x_ptr` .*probably an int32 overflow.*"
                                               r"`pid.to\(tl.int64\) \* stride`"):
        strided_rows_kernel[(4,)](x, out, pid_times_stride // 2, BLOCK=BLOCK)


def test_a_small_negative_offset_gets_no_overflow_hint():
    x, out = np.zeros(64, np.float32), np.zeros(4 * BLOCK, np.float32)
    with pytest.raises(InterpreterError) as info:
        strided_rows_kernel[(4,)](x, out, -1, BLOCK=BLOCK)
    assert "is before its first element" in str(info.value) and "int32" not in str(info.value)
