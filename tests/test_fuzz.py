"""The differential fuzzer (``tests/fuzz``) as part of the suite: a bounded,
derandomized run of random kernels through the interpreter against the numpy
model, and a ``gpu`` run of kernels on CUDA against the interpreter.

Longer runs: ``PYTHONPATH=. python -m tests.fuzz --minutes 30 [--device cuda]``.
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

from fuzz import ops
from fuzz.generate import GPU, HOST, cases
from fuzz.program import Array, Program
from fuzz.run import check_case

# About 30 s on two slow cores, ptxas checks of every kernel included: six times the
# suite's hypothesis budget (150 at its default; 36 in the cpu mirror, test_suite_on_cpu.py).
CI_RUN = settings(max_examples=6 * int(os.environ.get("TILEC_HYPOTHESIS_EXAMPLES", "25")), derandomize=True,
                  deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))


@CI_RUN
@given(case=cases(HOST))
def test_random_kernels_match_the_numpy_model(case):
    program, inputs = case
    assume(check_case(program, inputs, "host"))


@pytest.mark.gpu
@settings(CI_RUN, max_examples=200)
@given(case=cases(GPU))
def test_random_kernels_on_the_gpu_match_the_interpreter(case):
    program, inputs = case
    assume(check_case(program, inputs, "cuda"))


def test_a_wrong_result_is_caught(monkeypatch):
    """The comparison is live: when the model means ``-`` by ``+``, the case fails."""
    x, total = ops.Val("v0", "int32", (True,)), ops.Val("v1", "int32", (True,))
    program = Program((8,), (5,), (Array("in0", "int32", (0,)),),
                      (ops.Load(x, "in0", (0,), -1), ops.Binary(total, "add", x, x), ops.Store("out0", total)), 3)
    inputs = {"in0": np.arange(5, dtype=np.int32) - 2}
    assert check_case(program, inputs)
    monkeypatch.setitem(ops.BINARY, "add", dataclasses.replace(ops.BINARY["add"], ref=np.subtract))
    with pytest.raises(AssertionError, match="interpreter and numpy model differ"):
        check_case(program, inputs)


def test_the_model_shifts_as_triton_does():
    """``>>`` in the promoted type, arithmetic when the left operand's own type is signed:
    Triton gives [231, 255] for int8 [-100, -1] >> uint8 [2, 1], and [39, 127] the other way."""
    left = ops.apply_binary("shr", np.array([-100, -1], np.int8), "int8", np.array([2, 1], np.uint8), "uint8")
    right = ops.apply_binary("shr", np.array([156, 255], np.uint8), "uint8", np.array([2, 1], np.int8), "int8")
    assert left.tolist() == [231, 255] and right.tolist() == [39, 127]
