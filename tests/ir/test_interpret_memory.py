"""Memory in the reference interpreter: masked loads and stores, bounds and
alignment errors, per-program row pointers, and atomics.

Kernels are written in the IR text form; the shared builders are in
``interp_kernels.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilec.errors import InterpreterError
from tilec.ir.interpret import interpret

from ir.interp_kernels import (
    assert_same, BLOCK, draw, FEW, FLOATS, from_host, HELPER_NAME, kernel, lanes, pointer_to, PROPERTY,
    ref_cast, ref_round, sizes, to_host, wrap,
)


# --------------------------------------------------------------------------- #
# Memory: masks, other, bounds and alignment errors
# --------------------------------------------------------------------------- #



def masked_copy_kernel(t: str):
    """Loads ``x[i]`` where ``i < min(lim, n)`` (``other`` elsewhere) into ``out1[i < n]``, and
    stores the loaded values to ``out2`` only where ``i < lim`` too."""
    tile = f"tile<{BLOCK}x{t}>"
    return lambda other: kernel(
        f"%x: ptr<{t}>, %out1: ptr<{t}>, %out2: ptr<{t}>, %n: i32, %lim: i32",
        lanes() + pointer_to("x", t) + pointer_to("out1", t) + pointer_to("out2", t) + f"""
  %lt = splat %lim {{shape = ({BLOCK},)}} : tile<{BLOCK}xi32>
  %in = cmp %offs, %lt {{pred = "lt"}} : tile<{BLOCK}xi1>
  %o = constant {{value = {other}, type = {tile}}} : {tile}
  %both = and %in, %mask : tile<{BLOCK}xi1>
  %v = load %x_at, %both, %o : {tile}
  store %out1_at, %v, %mask
  store %out2_at, %v, %both""")


@pytest.mark.parametrize("t", ("i1", "i8", "u16", "i64", "f16", "bf16", "f64"))
@PROPERTY
@given(data=st.data(), n=sizes, limit=st.integers(0, 60), other=st.integers(-3, 3))
def test_masked_load_fills_other_and_never_touches_masked_off_lanes(t, data, n, limit, other):
    x = to_host(draw(data, t, n), t)
    out1, out2 = to_host(np.full(n, 1), t), to_host(np.full(n, 1), t)
    # `x` is cut at `limit`: a masked-off lane that was read would be out of bounds
    interpret(masked_copy_kernel(t)(other), (math.ceil(n / BLOCK),), [x[:limit], out1, out2, n, limit])
    inside = np.arange(n) < limit
    fill = ref_cast(np.array([other]), "i64", t)[0]
    assert_same(from_host(out1, t), np.where(inside, from_host(x, t), fill), t)
    assert_same(from_host(out2, t), np.where(inside, from_host(x, t), from_host(to_host(np.ones(n), t), t)), t)


def copy_kernel(t: str = "f32", offset: str = "%offs", prologue: str = ""):
    """``out[i] = x[offset(i)]`` for ``i < n``; the load carries a location."""
    tile = f"tile<{BLOCK}x{t}>"
    return kernel(f"%x: ptr<{t}>, %out: ptr<{t}>, %n: i32", lanes() + prologue + pointer_to("x", t, offs=offset)
                  + pointer_to("out", t) + f"""
  %v = load %x_at, %mask, _ : {tile} loc("kernel.py":7:8)
  store %out_at, %v, %mask loc("kernel.py":8:4)""")


def test_out_of_bounds_load_names_the_argument_offset_and_program():
    x, out = np.zeros(100, np.float32), np.zeros(160, np.float32)
    with pytest.raises(InterpreterError) as info:
        interpret(copy_kernel(), (10,), [x, out, 160])
    msg = str(info.value)
    assert msg.startswith("kernel.py:7: load out of bounds: `x` + 100 is past its 100 elements")
    assert "(masked-in lane of program 6)" in msg and "in kernel `k`" in msg


def test_out_of_bounds_below_and_unmasked_store():
    shift = "\n  %m5 = constant {value = 5, type = tile<16xi32>} : tile<16xi32>\n  %low = sub %offs, %m5 : tile<16xi32>"
    with pytest.raises(InterpreterError, match=r"load out of bounds: `x` \+ -5 is before its first element"):
        interpret(copy_kernel(offset="%low", prologue=shift), (1,), [np.zeros(16, np.float32), np.zeros(16, np.float32), 16])
    fn = kernel("%out: ptr<i16>", "\n  %c = constant {value = 3, type = i16} : i16\n"
                "  %i = constant {value = 7, type = i32} : i32\n  %p = addptr %out, %i : ptr<i16>\n"
                '  store %p, %c, _ loc("kernel.py":3:2)')
    with pytest.raises(InterpreterError, match=r"kernel.py:3: store out of bounds: `out` \+ 7 is past its 7 elements"):
        interpret(fn, (2,), [np.zeros(7, np.int16)])


def test_misaligned_pointer_is_reported_in_bytes():
    raw = np.zeros(80, np.uint8)
    x = raw[2:66].view(np.float32)  # numpy allows the view; its address is 2 bytes off
    with pytest.raises(InterpreterError, match=r"load misaligned: `x` \+ 0 bytes is not a multiple of 4 bytes"):
        interpret(copy_kernel(), (1,), [x, np.zeros(16, np.float32), 16])


@PROPERTY
@given(data=st.data(), n=sizes, step=st.integers(-3, 3).filter(bool), start=st.integers(0, 4))
def test_strided_and_offset_views_are_read_through_their_real_addresses(data, n, step, start):
    base = draw(data, "i32", 4 + 3 * n + 8)
    view = base[start::step] if step > 0 else base[start + 3 * n::step]
    view = view[:n]
    shift = f"\n  %st = constant {{value = {step}, type = tile<16xi32>}} : tile<16xi32>\n  %so = mul %offs, %st : tile<16xi32>"
    out = np.zeros(n, np.int32)
    fn = copy_kernel("i32", "%so", shift)
    # out[i] = x + i * step: pointer arithmetic in i32 elements from the view's first element,
    # whose span (below it for a negative step) is the view's lowest to highest element
    interpret(fn, (math.ceil(n / BLOCK),), [view, out, n])
    np.testing.assert_array_equal(out, view)


def test_pointer_argument_must_be_an_array_and_arity_is_checked():
    with pytest.raises(TypeError, match="argument `x` of kernel `k` is a ptr<f32> and needs a numpy array"):
        interpret(copy_kernel(), (1,), [3, np.zeros(4, np.float32), 4])
    with pytest.raises(TypeError, match="takes 3 arguments, got 2"):
        interpret(copy_kernel(), (1,), [np.zeros(4, np.float32), 4])


# --------------------------------------------------------------------------- #
# Row pointers: a per-program base plus column offsets (softmax-style)
# --------------------------------------------------------------------------- #

ROW_COPY = """
  %pid = program_id {axis = 0} : i32
  %start = mul %pid, %stride : i32
  %row = addptr %x, %start : ptr<f32>
  %cols = arange {start = 0, end = 16} : tile<16xi32>
  %nt = splat %n {shape = (16,)} : tile<16xi32>
  %mask = cmp %cols, %nt {pred = "lt"} : tile<16xi1>
  %rows = splat %row {shape = (16,)} : tile<16xptr<f32>>
  %at = addptr %rows, %cols : tile<16xptr<f32>>
  %v = load %at, %mask, _ : tile<16xf32> loc("kernel.py":9:4)
  %ostart = mul %pid, %n : i32
  %orow = addptr %out, %ostart : ptr<f32>
  %orows = splat %orow {shape = (16,)} : tile<16xptr<f32>>
  %oat = addptr %orows, %cols : tile<16xptr<f32>>
  store %oat, %v, %mask"""


@PROPERTY
@given(data=st.data(), rows=st.integers(1, 20), cols=st.integers(1, 16), pad=st.integers(0, 5))
def test_rows_through_per_program_base_pointers(data, rows, cols, pad):
    x = draw(data, "f32", (rows, cols + pad))
    out = np.zeros((rows, cols), np.float32)
    fn = kernel("%x: ptr<f32>, %out: ptr<f32>, %stride: i32, %n: i32", ROW_COPY)
    interpret(fn, (rows,), [x, out, cols + pad, cols])
    assert_same(out, x[:, :cols], "f32")
    with pytest.raises(InterpreterError, match=rf"load out of bounds: `x` \+ {rows * (cols + pad)} is past its "
                       rf"{rows * (cols + pad)} elements \(masked-in lane of program {rows}\)"):
        interpret(fn, (rows + 1,), [x, np.zeros((rows + 1, cols), np.float32), cols + pad, cols])


def test_uniform_masked_load_with_a_per_program_other():
    fn = kernel("%x: ptr<i32>, %out: ptr<i32>", """
  %pid = program_id {axis = 0} : i32
  %cols = arange {start = 0, end = 8} : tile<8xi32>
  %three = constant {value = 3, type = tile<8xi32>} : tile<8xi32>
  %mask = cmp %cols, %three {pred = "lt"} : tile<8xi1>
  %xs = splat %x {shape = (8,)} : tile<8xptr<i32>>
  %at = addptr %xs, %cols : tile<8xptr<i32>>
  %other = splat %pid {shape = (8,)} : tile<8xi32>
  %v = load %at, %mask, %other : tile<8xi32>
  %eight = constant {value = 8, type = i32} : i32
  %start = mul %pid, %eight : i32
  %row = addptr %out, %start : ptr<i32>
  %rows = splat %row {shape = (8,)} : tile<8xptr<i32>>
  %oat = addptr %rows, %cols : tile<8xptr<i32>>
  store %oat, %v, _""")
    x, out = np.array([7, 8, 9], np.int32), np.zeros((4, 8), np.int32)
    interpret(fn, (4,), [x, out])
    np.testing.assert_array_equal(out, [[7, 8, 9] + [p] * 5 for p in range(4)])


# --------------------------------------------------------------------------- #
# Atomics: program order, repeated addresses, old values, locks
# --------------------------------------------------------------------------- #

def atomic_kernel(kind: str, t: str):
    """Every lane ``i < n`` does ``old[i] = atomic_<kind>(&acc[idx[i]], val[i])``."""
    tile = f"tile<{BLOCK}x{t}>"
    return kernel(f"%acc: ptr<{t}>, %idx: ptr<i32>, %val: ptr<{t}>, %old: ptr<{t}>, %n: i32",
                  lanes() + pointer_to("idx", "i32") + pointer_to("val", t) + pointer_to("old", t) + f"""
  %j = load %idx_at, %mask, _ : tile<{BLOCK}xi32>
  %v = load %val_at, %mask, _ : {tile}
  %acc_s = splat %acc {{shape = ({BLOCK},)}} : tile<{BLOCK}xptr<{t}>>
  %target = addptr %acc_s, %j : tile<{BLOCK}xptr<{t}>>
  %o = atomic_rmw %target, %v, %mask {{kind = "{kind}"}} : {tile}
  store %old_at, %o, %mask""")


ATOMIC_REFERENCES = {"add": lambda a, b: a + b, "max": max, "min": min, "and": lambda a, b: a & b,
                     "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "xchg": lambda a, b: b}


@pytest.mark.parametrize("t", ("i32", "u8", "i64", "f32", "f16", "bf16"))
@pytest.mark.parametrize("kind", sorted(ATOMIC_REFERENCES))
@FEW
@given(data=st.data(), n=sizes, slots=st.integers(1, 5))
def test_atomics_apply_lanes_in_program_order_and_return_old_values(t, kind, data, n, slots):
    if t in FLOATS and kind in ("and", "or", "xor"):
        return
    finite = dict(finite=True, lo=-100, hi=100) if t in FLOATS else {}
    start, vals = draw(data, t, slots, **finite), draw(data, t, n, **finite)
    idx = data.draw(st.lists(st.integers(0, slots - 1), min_size=n, max_size=n)).copy()
    memory, old = start.astype(object if t not in FLOATS else np.float64).tolist(), []
    for j, v in zip(idx, vals.astype(object if t not in FLOATS else np.float64).tolist()):
        old.append(memory[j])
        memory[j] = ATOMIC_REFERENCES[kind](memory[j], v)
        memory[j] = float(ref_round(memory[j], t)) if t in FLOATS else wrap([memory[j]], HELPER_NAME[t])[0]
    acc, got_old = to_host(start, t), to_host(np.zeros(n), t)
    interpret(atomic_kernel(kind, t), (math.ceil(n / BLOCK),), [acc, np.array(idx, np.int32), to_host(vals, t), got_old, n])
    assert_same(from_host(acc, t), np.array(memory, dtype=start.dtype), t)
    assert_same(from_host(got_old, t), np.array(old, dtype=start.dtype), t)


def test_atomic_add_without_used_result_takes_the_ufunc_path_and_counts():
    fn = kernel("%acc: ptr<i32>, %n: i32", lanes() + """
  %one = constant {value = 1, type = tile<16xi32>} : tile<16xi32>
  %acc_s = splat %acc {shape = (16,)} : tile<16xptr<i32>>
  %seven = constant {value = 7, type = tile<16xi32>} : tile<16xi32>
  %slot = rem %offs, %seven : tile<16xi32>
  %at = addptr %acc_s, %slot : tile<16xptr<i32>>
  %o = atomic_rmw %at, %one, %mask {kind = "add"} : tile<16xi32>""")
    acc = np.zeros(7, np.int32)
    interpret(fn, (7,), [acc, 100])
    np.testing.assert_array_equal(acc, np.bincount(np.arange(100) % 7))


def test_uniform_scalar_atomic_runs_once_per_program_in_order():
    fn = kernel("%counter: ptr<i32>, %olds: ptr<i32>", """
  %pid = program_id {axis = 0} : i32
  %one = constant {value = 1, type = i32} : i32
  %old = atomic_rmw %counter, %one, _ {kind = "add"} : i32
  %at = addptr %olds, %pid : ptr<i32>
  store %at, %old, _""")
    counter, olds = np.zeros(1, np.int32), np.full(37, -1, np.int32)
    interpret(fn, (37,), [counter, olds])
    assert counter[0] == 37 and olds.tolist() == list(range(37))


def test_spin_lock_with_atomic_cas_serializes_programs():
    """Each program takes a lock (cas 0 -> 1 in a while loop), does a non-atomic
    read-modify-write of a counter, and releases the lock with xchg."""
    fn = kernel("%lock: ptr<i32>, %counter: ptr<i32>", """
  %zero = constant {value = 0, type = i32} : i32
  %one = constant {value = 1, type = i32} : i32
  %pid = program_id {axis = 0} : i32
  %got = while [%one] : i32 {
  ^(%prev: i32):
    %busy = cmp %prev, %zero {pred = "ne"} : i1
    condition %busy, [%prev]
  } {
  ^(%p: i32):
    %old = atomic_cas %lock, %zero, %one : i32
    yield [%old]
  }
  %c = load %counter, _, _ : i32
  %c2 = add %c, %pid : i32
  store %counter, %c2, _
  %released = atomic_rmw %lock, %zero, _ {kind = "xchg"} : i32""")
    lock, counter = np.zeros(1, np.int32), np.zeros(1, np.int32)
    interpret(fn, (50,), [lock, counter])
    assert counter[0] == sum(range(50)) and lock[0] == 0


# --------------------------------------------------------------------------- #
# Pointers and integers: real addresses outside, the argument remembered inside
# --------------------------------------------------------------------------- #

def test_a_printed_pointer_is_its_real_address(capsys):
    fn = kernel("%x: ptr<f32>", """
  %one = constant {value = 1, type = i32} : i32
  %p = addptr %x, %one : ptr<f32>
  print [%p] {prefix = "p ="}""")
    x = np.zeros(4, np.float32)
    interpret(fn, (1,), [x])
    assert capsys.readouterr().out == f"pid (0, 0, 0) p =: {x.__array_interface__['data'][0] + 4}\n"


def test_bitcasts_between_int64_and_pointers_exchange_real_addresses():
    """``bitcast`` as ``cast``: the int is the real address; the pointer made from it is the
    argument's, so the atomic lands in ``x`` and ``x`` bounds it."""
    fn = kernel("%x: ptr<i32>, %out: ptr<i64>, %k: i32", """
  %a = bitcast %x {to = i64} : i64
  store %out, %a, _
  %q = bitcast %a {to = ptr<i32>} : ptr<i32>
  %at = addptr %q, %k : ptr<i32>
  %old = atomic_rmw %at, %k, _ {kind = "add"} : i32""")
    x, out = np.arange(5, dtype=np.int32), np.zeros(1, np.int64)
    interpret(fn, (3,), [x, out, 2])
    assert out[0] == x.__array_interface__["data"][0] and x.tolist() == [0, 1, 8, 3, 4]
    with pytest.raises(InterpreterError, match=r"atomic_add out of bounds: `x` \+ 5 is past its 5 elements"):
        interpret(fn, (1,), [x, out, 5])
    assert x.tolist() == [0, 1, 8, 3, 4]
