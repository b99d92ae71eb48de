"""Control flow in the reference interpreter: if / for / while that diverge
across programs, the grid, print, assert, assume and evaluate_pure.

Kernels are written in the IR text form; the shared builders are in
``interp_kernels.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilec.errors import InterpreterError
from tilec.ir import ops as ir
from tilec.ir.interp_ops import evaluate_pure
from tilec.ir.interpret import interpret
from tilec.ir.types import SCALAR_TYPES

from ir.interp_kernels import FEW, kernel, run_elementwise


# --------------------------------------------------------------------------- #
# Divergence: if / for / while whose outcome differs across programs
# --------------------------------------------------------------------------- #

def per_program_kernel(body: str):
    """``out[pid] = body(pid, k)``: ``body`` defines the scalar i32 ``%r``."""
    return kernel("%out: ptr<i32>, %k: i32", f"""
  %pid = program_id {{axis = 0}} : i32
  %zero = constant {{value = 0, type = i32}} : i32
  %one = constant {{value = 1, type = i32}} : i32
  %two = constant {{value = 2, type = i32}} : i32
{body}
  %p = addptr %out, %pid : ptr<i32>
  store %p, %r, _""")


def run_per_program(body: str, programs: int, k: int) -> list:
    out = np.full(programs, -99, np.int32)
    interpret(per_program_kernel(body), (programs,), [out, k])
    return out.tolist()


IF_BODY = """
  %half = rem %pid, %two : i32
  %odd = cmp %half, %one {pred = "eq"} : i1
  %r = if %odd : i32 {
    %t = mul %pid, %k : i32
    yield [%t]
  } {
    %big = cmp %pid, %k {pred = "gt"} : i1
    %e = if %big : i32 {
      yield [%k]
    } {
      %neg = neg %pid : i32
      yield [%neg]
    }
    yield [%e]
  }"""


@FEW
@given(programs=st.integers(1, 40), k=st.integers(-5, 30))
def test_if_splits_the_batch_and_merges_results(programs, k):
    want = [p * k if p % 2 else (k if p > k else -p) for p in range(programs)]
    assert run_per_program(IF_BODY, programs, k) == want


FOR_BODY = """
  %r = for %pid, %k, %step, [%zero] : i32 {
  ^(%i: i32, %acc: i32):
    %sq = mul %i, %i : i32
    %next = add %acc, %sq : i32
    yield [%next]
  }"""


@FEW
@given(programs=st.integers(1, 40), k=st.integers(-10, 40), step=st.sampled_from([1, 2, 3, -1, -4]))
def test_for_with_trip_counts_that_differ_per_program(programs, k, step):
    body = f"\n  %step = constant {{value = {step}, type = i32}} : i32" + FOR_BODY
    want = [sum(i * i for i in range(p, k, step)) for p in range(programs)]
    assert run_per_program(body, programs, k) == want


def test_for_with_zero_step_is_an_error():
    body = "\n  %step = constant {value = 0, type = i32} : i32" + FOR_BODY
    with pytest.raises(InterpreterError, match="`for` loop step is 0"):
        run_per_program(body, 2, 5)


WHILE_BODY = """
  %start = add %pid, %k : i32
  %r, %steps = while [%start, %zero] : i32, i32 {
  ^(%x: i32, %s: i32):
    %more = cmp %x, %one {pred = "gt"} : i1
    condition %more, [%x, %s]
  } {
  ^(%x1: i32, %s1: i32):
    %h = rem %x1, %two : i32
    %odd = cmp %h, %one {pred = "eq"} : i1
    %tripled = mul %x1, %k3 : i32
    %up = add %tripled, %one : i32
    %down = div %x1, %two : i32
    %nx = select %odd, %up, %down : i32
    %ns = add %s1, %one : i32
    yield [%nx, %ns]
  }"""


def collatz_steps(x: int) -> tuple:
    steps = 0
    while x > 1:
        x, steps = (3 * x + 1 if x % 2 else x // 2), steps + 1
    return x, steps


@FEW
@given(programs=st.integers(1, 40), k=st.integers(-3, 30))
def test_while_runs_each_program_until_its_own_condition_fails(programs, k):
    body = "\n  %k3 = constant {value = 3, type = i32} : i32" + WHILE_BODY.replace("%r, %steps", "%last, %r")
    want = [collatz_steps(p + k)[1] for p in range(programs)]
    assert run_per_program(body, programs, k) == want


def test_grid_of_three_axes_and_num_programs():
    fn = kernel("%out: ptr<i32>", """
  %x = program_id {axis = 0} : i32
  %y = program_id {axis = 1} : i32
  %z = program_id {axis = 2} : i32
  %nx = num_programs {axis = 0} : i32
  %ny = num_programs {axis = 1} : i32
  %nz = num_programs {axis = 2} : i32
  %yz = mul %z, %ny : i32
  %row = add %yz, %y : i32
  %rx = mul %row, %nx : i32
  %lin = add %rx, %x : i32
  %s1 = mul %x, %nz : i32
  %v = add %lin, %s1 : i32
  %p = addptr %out, %lin : ptr<i32>
  store %p, %v, _""")
    out = np.zeros(3 * 4 * 5, np.int32)
    interpret(fn, (3, 4, 5), [out])
    lin = np.arange(60)
    np.testing.assert_array_equal(out, lin + (lin % 3) * 5)


# --------------------------------------------------------------------------- #
# Print, assert, barrier, assume, evaluate_pure
# --------------------------------------------------------------------------- #

def test_print_shows_each_program_and_its_values(capsys):
    fn = kernel("%n: i32", """
  %pid = program_id {axis = 0} : i32
  %v = mul %pid, %n : i32
  %t = arange {start = 0, end = 4} : tile<4xi32>
  barrier
  print [%v, %t] {prefix = "v ="}""")
    interpret(fn, (2,), [10])
    assert capsys.readouterr().out == "pid (0, 0, 0) v =: 0 [0 1 2 3]\npid (1, 0, 0) v =: 10 [0 1 2 3]\n"


def test_failed_assert_names_the_first_program_and_index():
    fn = kernel("%n: i32", """
  %pid = program_id {axis = 0} : i32
  %t = arange {start = 0, end = 8} : tile<8xi32>
  %p = splat %pid {shape = (8,)} : tile<8xi32>
  %s = add %t, %p : tile<8xi32>
  %nt = splat %n {shape = (8,)} : tile<8xi32>
  %ok = cmp %s, %nt {pred = "lt"} : tile<8xi1>
  assert %ok {msg = "s < n"} loc("kernel.py":12:4)""")
    interpret(fn, (3,), [10])
    with pytest.raises(InterpreterError, match=r"kernel.py:12: device_assert failed: s < n \(program 3, index \(7,\)\)"):
        interpret(fn, (4,), [10])


def test_assume_is_the_identity():
    body = '  %r = assume %a0 {{kind = "multiple_of", values = (16,)}} : {R}'
    x = np.arange(40, dtype=np.int32) * 16
    np.testing.assert_array_equal(run_elementwise(["i32"], "i32", body, [x]), x)


def test_evaluate_pure_agrees_with_the_interpreter_on_one_op():
    fn = kernel("%a: i8, %b: i8", "\n  %q = div %a, %b : i8\n  %h = cast %q {to = bf16} : bf16")
    div, cast_op = fn.body.ops
    (q,) = evaluate_pure(div, [np.int8(-128), np.int8(-1)])
    assert q.dtype == np.int8 and int(q) == -128
    (h,) = evaluate_pure(cast_op, [np.int8(-7)])
    assert float(h) == -7.0
    (h,) = evaluate_pure(ir.Cast(src=ir.Value(SCALAR_TYPES["f32"]), to=SCALAR_TYPES["bf16"]).make_results(),
                         [np.float32(1 + 2 ** -8)])
    assert float(h) == 1.0


def test_broken_scalar_multiple_of_promise_is_reported():
    fn = kernel("%out: ptr<i32>, %k: i32", """
  %pid = program_id {axis = 0} : i32
  %v = mul %pid, %k : i32
  %h = assume %v {kind = "multiple_of", values = (4,)} : i32 loc("kernel.py":5:4)
  %p = addptr %out, %pid : ptr<i32>
  store %p, %h, _""")
    out = np.zeros(5, np.int32)
    interpret(fn, (5,), [out, 8])
    np.testing.assert_array_equal(out, np.arange(5) * 8)
    with pytest.raises(InterpreterError, match=r"kernel.py:5: multiple_of\(4\) promise broken: the value is 6 \(program 1\)"):
        interpret(fn, (5,), [out, 6])
