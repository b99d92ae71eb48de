"""CPU torch tensors run compiled for the ``cpu`` target by default, as numpy
arrays do (``launch/args.py`` passes them as numpy views of their memory):
the interpreter's results bit for bit, in every dtype torch and tilec share,
``debug=True`` checks included.  Skipped where torch is not installed."""
from __future__ import annotations

import importlib.util
import os
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
from kernels.vector_add import add_kernel
from tilec.errors import InterpreterError

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int32", "int64", "uint8"]


def compiled_by_default():
    """The environment of a program that did not ask for the interpreter (the suite does)."""
    env = {k: v for k, v in os.environ.items() if k != "TILEC_INTERPRET"}
    return mock.patch.dict(os.environ, env, clear=True)


def tensor(torch, values: list, dtype: str):
    return torch.tensor(values, dtype=torch.float64).to(getattr(torch, dtype))


@given(dtype=st.sampled_from(DTYPES), block=st.sampled_from([1, 16, 128]),
       pairs=st.lists(st.tuples(st.integers(-100, 100), st.floats(-1e3, 1e3)), max_size=300))
def test_cpu_torch_tensors_run_compiled_and_agree_with_the_interpreter(dtype, block, pairs):
    import torch

    n = len(pairs)
    x = tensor(torch, [a for a, _ in pairs], dtype)
    y = tensor(torch, [b if dtype.startswith(("float", "bfloat")) else a for a, b in pairs], dtype)
    out, want = torch.zeros(n + 3, dtype=x.dtype), torch.zeros(n, dtype=x.dtype)
    grid = (tilec.cdiv(n, block),)
    with compiled_by_default():
        ran = tilec.jit(add_kernel.fn)[grid](x, y, out[:n], n, BLOCK_SIZE=block)
    tilec.jit(interpret=True)(add_kernel.fn)[grid](x, y, want, n, BLOCK_SIZE=block)
    assert ran.target == "cpu"
    assert torch.equal(out[:n].view(torch.uint8), want.view(torch.uint8)) and not out[n:].any()


def test_a_bad_access_through_a_cpu_tensor_is_caught_in_debug_mode():
    import torch

    x = torch.arange(40, dtype=torch.float32)
    with compiled_by_default(), pytest.raises(InterpreterError, match="`output_ptr` \\+ 20 is past its 20 elements"):
        tilec.jit(debug=True)(add_kernel.fn)[(3,)](x, x, torch.empty(20), 40, BLOCK_SIZE=16)
    assert np.array_equal(x.numpy(), np.arange(40, dtype=np.float32))
