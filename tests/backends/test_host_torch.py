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


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_cpu_tensor_spec_agrees_with_classify_arg_or_leaves_the_tensor(dtype):
    """The launch fast path's spec (``args._cpu_tensor_spec``): the key
    ``classify_arg`` gives, and a numpy array over the tensor's memory; a
    dtype numpy lacks (bf16), and a tensor numpy cannot view as it is (the
    negative bit), go to the general path."""
    import torch

    from tilec.launch.args import SPECS, NotFast, classify_arg

    base = tensor(torch, list(range(-8, 9)), dtype)
    for t in (base, base[1:], base[::2]):  # aligned, 1 element off, strided
        if dtype == "bfloat16":
            with pytest.raises(NotFast):
                SPECS[type(t)](t)
            continue
        key, value = SPECS[type(t)](t)
        arg = classify_arg("x", t, False, "k")
        assert key == arg.dispatch_key and value.__array_interface__ == arg.value.__array_interface__
    negated = torch._neg_view(torch.ones(4))  # a view with the negative bit: numpy() refuses it
    with pytest.raises(NotFast):
        SPECS[type(negated)](negated)


@given(sizes=st.lists(st.integers(1, 200), min_size=1, max_size=4), dtype=st.sampled_from(DTYPES))
def test_later_launches_on_cpu_tensors_take_the_fast_path_with_the_same_results(sizes, dtype):
    import torch

    from tilec.launch.jit import JITFunction

    k, general = tilec.jit(add_kernel.fn), []
    run_general = JITFunction._run_general
    with compiled_by_default(), mock.patch.object(JITFunction, "_run_general",
                                                  lambda self, *a: general.append(a) or run_general(self, *a)):
        for n in sizes * 2:
            x, y = tensor(torch, [i - n // 2 for i in range(n)], dtype), tensor(torch, [3] * n, dtype)
            out = torch.zeros(n, dtype=x.dtype)
            k[(tilec.cdiv(n, 16),)](x, y, out, n, BLOCK_SIZE=16)
            assert torch.equal(out, x + y)
    fast = dtype != "bfloat16"  # bf16 travels as a view: the general path every time
    assert len(general) == (len(k.cache) if fast else len(sizes) * 2)
