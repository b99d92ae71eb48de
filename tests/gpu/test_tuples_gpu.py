"""Tuple kernel arguments and ``tl.const`` pointers on the GPU, against numpy:
torch CUDA tensors inside nested and named tuples (each leaf its own kernel
parameter), tuples carried through loops, branches and helpers, repeated
launches reusing their variant, and loads through const pointers."""
from __future__ import annotations

import numpy as np
import pytest

from test_language_const import copy_kernel
from test_language_tuples import B, Strided, carried_kernel, named_kernel, sum_leaves_kernel

pytestmark = pytest.mark.gpu


def test_nested_tuples_of_cuda_tensors_and_numbers(torch):
    x = torch.arange(B, dtype=torch.float32, device="cuda")
    y = torch.full((B,), 3.0, device="cuda")
    out = torch.zeros(B + 1, device="cuda")
    sum_leaves_kernel.cache.clear()
    for scale in (5, 7, 9):
        sum_leaves_kernel[(1,)](out, (x, (scale, None, y), 0.5, 1), B=B)
        want = np.arange(B, dtype=np.float32) + scale + 3 + 0.5 + 1
        np.testing.assert_array_equal(out[:B].cpu().numpy(), want)
        assert out[B].item() == 4
    assert len(sum_leaves_kernel.cache) == 1


@pytest.mark.parametrize("n, flip", [(0, 1), (3, 0), (5, 1)])
def test_tuples_through_loops_branches_and_helpers(torch, n, flip):
    x = np.random.default_rng(n).integers(-8, 8, (max(n, 1), B)).astype(np.float32)
    out = torch.zeros(B, device="cuda")
    carried_kernel[(1,)](torch.from_numpy(x).cuda(), out, n, flip, B=B)
    acc = sum((x[i] * 2.0 ** i for i in range(n)), np.zeros(B, np.float32))
    acc = acc * 0.5 if flip > 0 else acc - 1.0
    np.testing.assert_array_equal(out.cpu().numpy(), acc + n + n + 2.0 ** n)


def test_named_tuples_of_cuda_tensors(torch):
    src = torch.arange(B * 3, dtype=torch.float32, device="cuda")
    dst = torch.zeros(B * 2, device="cuda")
    named_kernel[(1,)](Strided(src, 5, 3), Strided(dst, 5, 2), (2, 3), B=B)
    want = np.zeros(B * 2, np.float32)
    want[0:10:2] = np.arange(B * 3, dtype=np.float32)[0:15:3] * 2
    np.testing.assert_array_equal(dst.cpu().numpy(), want)


def test_loads_through_a_const_pointer(torch):
    x = torch.randn(16, device="cuda")
    y = torch.zeros(16, device="cuda")
    copy_kernel[(1,)](x, y, 11, B=16)
    np.testing.assert_array_equal(y.cpu().numpy()[:11], x.cpu().numpy()[:11] * 2)
    assert not y[11:].any()
