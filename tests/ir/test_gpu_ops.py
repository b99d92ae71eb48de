"""The GPU-level ops (``tilec/ir/gpu_ops.py``): text round trip, verifier
errors, and their meaning in the interpreter (copies land in the right slot
of the right program's buffer, masked-off elements get ``other``)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ir.interp_kernels import PROPERTY
from tilec.errors import InterpreterError
from tilec.ir.interpret import interpret
from tilec.ir.parser import parse_function
from tilec.ir.printer import print_function
from tilec.ir.verify import VerifyError, check_roundtrip, verify_function

SHARED = "shared<8, 2, 4, [2, 1, 0]>"
BUF = f"tile<3x4x8xf32, {SHARED}>"

# Rows ``4*pid .. 4*pid+3`` of an ``n``-element array seen as rows of 8:
# ``%offs``, ``%mask`` (``offs < n``) and ``%{name}_at`` pointers for each array.
ROWS = """
  %pid = program_id {axis = 0} : i32
  %per = constant {value = 32, type = i32} : i32
  %first = mul %pid, %per : i32
  %fs = splat %first {shape = (4, 8)} : tile<4x8xi32>
  %ar4 = arange {start = 0, end = 4} : tile<4xi32>
  %rc = expand_dims %ar4 {axis = 1} : tile<4x1xi32>
  %c8 = constant {value = 8, type = tile<4x1xi32>} : tile<4x1xi32>
  %rs = mul %rc, %c8 : tile<4x1xi32>
  %rb = broadcast %rs {shape = (4, 8)} : tile<4x8xi32>
  %ar8 = arange {start = 0, end = 8} : tile<8xi32>
  %cr = expand_dims %ar8 {axis = 0} : tile<1x8xi32>
  %cb = broadcast %cr {shape = (4, 8)} : tile<4x8xi32>
  %local = add %rb, %cb : tile<4x8xi32>
  %offs = add %fs, %local : tile<4x8xi32>
  %nt = splat %n {shape = (4, 8)} : tile<4x8xi32>
  %mask = cmp %offs, %nt {pred = "lt"} : tile<4x8xi1>"""


def pointers(name: str) -> str:
    return f"""
  %{name}_s = splat %{name} {{shape = (4, 8)}} : tile<4x8xptr<f32>>
  %{name}_at = addptr %{name}_s, %offs : tile<4x8xptr<f32>>"""


def kernel(body: str):
    text = ("func @k(%x: ptr<f32>, %y: ptr<f32>, %out: ptr<f32>, %n: i32, %slot: i32) {" + ROWS
            + pointers("x") + pointers("y") + pointers("out")
            + f"\n  %buf = local_alloc {{shape = (3, 4, 8), elem = f32, layout = {SHARED}}} : {BUF}"
            + body + "\n}\n")
    fn = parse_function(text)
    verify_function(fn)
    check_roundtrip(fn)
    return fn


def run(fn, n: int, slot: int = 1):
    x = np.arange(n, dtype=np.float32) + 1
    y = -x
    out = np.full(n, 99, np.float32)
    interpret(fn, (math.ceil(n / 32),), [x, y, out, n, slot])
    return x, y, out


COPY_BACK = """
  %o = constant {value = 7.0, type = tile<4x8xf32>} : tile<4x8xf32>
  async_copy %buf, %slot, %x_at, %mask, %o
  async_commit
  async_wait {pending = 0}
  %t = local_load %buf, %slot : tile<4x8xf32>
  store %out_at, %t, %mask"""


def test_ops_print_and_parse_back():
    fn = kernel(COPY_BACK)
    text = print_function(fn)
    assert "async_copy %buf, %slot, %x_at, %mask, %o\n" in text
    assert "async_wait {pending = 0}\n" in text
    assert f"%buf = local_alloc {{shape = (3, 4, 8), elem = f32, layout = {SHARED}}} : {BUF}\n" in text


@PROPERTY
@given(n=st.integers(1, 100), slot=st.integers(0, 2))
def test_copy_then_local_load_reads_what_was_copied(n, slot):
    x, _, out = run(kernel(COPY_BACK), n, slot)
    np.testing.assert_array_equal(out, x)


MASKED_OFF_GETS_OTHER = """
  %half = constant {value = 20, type = tile<4x8xi32>} : tile<4x8xi32>
  %low = cmp %offs, %half {pred = "lt"} : tile<4x8xi1>
  %o = constant {value = 7.0, type = tile<4x8xf32>} : tile<4x8xf32>
  async_copy %buf, %slot, %x_at, %low, %o
  async_copy %buf, %slot, %x_at, %low, _
  %zero = constant {value = 0, type = i32} : i32
  async_copy %buf, %zero, %x_at, %low, %o
  %t = local_load %buf, %slot : tile<4x8xf32>
  store %out_at, %t, %mask
  %u = local_load %buf, %zero : tile<4x8xf32>
  store %y_at, %u, %mask"""


def test_masked_off_elements_get_other_or_zero_and_are_never_read():
    n = 50
    x, y, out = run(kernel(MASKED_OFF_GETS_OTHER), n, slot=2)
    i = np.arange(n)
    np.testing.assert_array_equal(out, np.where(i < 20, i + 1, 0))  # the second copy (no other) wins
    np.testing.assert_array_equal(y, np.where(i < 20, i + 1, 7))


DIVERGENT = """
  %two = constant {value = 2, type = i32} : i32
  %odd = rem %pid, %two : i32
  %zero = constant {value = 0, type = i32} : i32
  %even = cmp %odd, %zero {pred = "eq"} : i1
  if %even {
    async_copy %buf, %slot, %x_at, %mask, _
    yield []
  } {
    async_copy %buf, %slot, %y_at, %mask, _
    yield []
  }
  %t = local_load %buf, %slot : tile<4x8xf32>
  store %out_at, %t, %mask"""


@PROPERTY
@given(n=st.integers(33, 200))
def test_copies_in_a_divergent_if_land_in_each_programs_own_buffer(n):
    x, y, out = run(kernel(DIVERGENT), n)
    even = (np.arange(n) // 32) % 2 == 0
    np.testing.assert_array_equal(out, np.where(even, x, y))


LOOP = """
  %zero = constant {value = 0, type = i32} : i32
  %one = constant {value = 1, type = i32} : i32
  %trips = add %pid, %one : i32
  %s3 = constant {value = 3, type = i32} : i32
  for %zero, %trips, %one, [] {
  ^(%k: i32):
    %s = rem %k, %s3 : i32
    %kf = cast %k {to = f32} : f32
    %kt = splat %kf {shape = (4, 8)} : tile<4x8xf32>
    async_copy %buf, %s, %x_at, %mask, _
    %v = local_load %buf, %s : tile<4x8xf32>
    %w = add %v, %kt : tile<4x8xf32>
    store %out_at, %w, %mask
    yield []
  }"""


@PROPERTY
@given(n=st.integers(1, 200))
def test_copies_in_a_loop_of_per_program_trip_counts(n):
    x, _, out = run(kernel(LOOP), n)
    last_k = np.arange(n) // 32  # program p runs p + 1 iterations
    np.testing.assert_array_equal(out, x + last_k)


def test_a_slot_never_copied_reads_as_poison():
    _, _, out = run(kernel("\n  %t = local_load %buf, %slot : tile<4x8xf32>\n  store %out_at, %t, %mask"), 10)
    assert np.isnan(out).all()


def test_slot_out_of_range_is_an_error_naming_the_op():
    with pytest.raises(InterpreterError, match="async_copy` of slot 3 of a buffer of 3 slots"):
        run(kernel(COPY_BACK), 10, slot=3)


# --------------------------------------------------------------------------- #
# Verifier
# --------------------------------------------------------------------------- #

BAD = {
    "layout must be shared": "%b = local_alloc {shape = (3, 4, 8), elem = f32, layout = "
                             "blocked<[1, 1, 1], [1, 4, 8], [1, 1, 1], [2, 1, 0]>} : tile<3x4x8xf32, "
                             "blocked<[1, 1, 1], [1, 4, 8], [1, 1, 1], [2, 1, 0]>>",
    "does not fit shape": f"%b = local_alloc {{shape = (4, 8), elem = f32, layout = {SHARED}}} : "
                          f"tile<4x8xf32, {SHARED}>",
    "slot must be a scalar i32": "%s = constant {value = 0, type = i64} : i64\n"
                                 "  %t = local_load %buf, %s : tile<4x8xf32>",
    "do not fit a slot": "%p = splat %x {shape = (8, 4)} : tile<8x4xptr<f32>>\n"
                         "  async_copy %buf, %slot, %p, _, _",
    "pending must be a non-negative int": "async_wait {pending = -1}",
    "other has type": "%m = constant {value = true, type = tile<4x8xi1>} : tile<4x8xi1>\n"
                 "  async_copy %buf, %slot, %x_at, %m, %m",
}


@pytest.mark.parametrize("message", sorted(BAD))
def test_malformed_ops_are_rejected(message):
    text = print_function(kernel("")).replace("\n}\n", f"\n  {BAD[message]}\n}}\n")
    with pytest.raises(VerifyError, match=message):
        verify_function(parse_function(text))


def test_a_buffer_must_be_a_local_allocs_own_result():
    text = f"""func @k(%b: {BUF}, %s: i32) {{
  %t = local_load %b, %s : tile<4x8xf32>
}}
"""
    with pytest.raises(VerifyError, match="must be a local_alloc's result"):
        verify_function(parse_function(text))
