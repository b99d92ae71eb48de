"""Launch options, ``None`` arguments and the ``@jit`` options on a GPU
(``pytest -m gpu``; skipped without one): what only the hardware shows --
fused and unfused ``a * b + c`` rounding, a register cap ptxas kept, and the
launch fast path with options and ``None`` in its keys."""
from __future__ import annotations

import numpy as np
import pytest

import tilec
from launch.kernels import fresh
from launch.test_jit_surface import strided_copy
from launch.test_launch_options import mul_add_kernel, warps_kernel
from launch.test_none_args import bias_kernel, expected

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    torch.zeros(1, device="cuda")  # torch sets up the primary context we share
    return torch


def mul_add_on_gpu(torch, n, **options):
    rng = np.random.default_rng(n)
    a, b, c = (rng.standard_normal(n).astype(np.float32) * 100 for _ in range(3))
    out = torch.zeros(n, device="cuda")
    handle = fresh(mul_add_kernel)[(tilec.cdiv(n, 128),)](*(torch.from_numpy(v).cuda() for v in (a, b, c)), out, n,
                                                          BLOCK=128, **options)
    return a, b, c, out.cpu().numpy(), handle


@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_unfused_mul_add_rounds_like_numpy(torch, n):
    a, b, c, out, _ = mul_add_on_gpu(torch, n, enable_fp_fusion=False)
    np.testing.assert_array_equal(out, a * b + c)


@pytest.mark.parametrize("n", [1000, 4097])
def test_fused_mul_add_rounds_once(torch, n):
    a, b, c, out, handle = mul_add_on_gpu(torch, n)
    fused = (a.astype(np.float64) * b + c).astype(np.float32)  # the product is exact in f64
    assert (np.abs(out - fused) <= np.spacing(np.abs(fused))).all()
    assert (out != a * b + c).any()  # fused and unfused differ somewhere among thousands of values
    assert "fma.rn.f32" in handle.asm["ptx"]


def test_maxnreg_caps_the_registers_the_kernel_runs_with(torch):
    a, b, c, out, handle = mul_add_on_gpu(torch, 1000, maxnreg=24, num_warps=8)
    np.testing.assert_allclose(out, a * b + c, rtol=1e-6, atol=1e-3)
    assert handle.n_regs is not None and handle.n_regs <= 24


def test_options_and_none_on_the_fast_path(torch):
    kernel = fresh(bias_kernel)
    x = torch.arange(100, device="cuda", dtype=torch.float32)
    out = torch.zeros(100, device="cuda")
    handles = set()
    for bias in (None, x, None, x):
        for fusion in (True, False, True):
            out.zero_()
            handles.add(kernel[(4,)](x, bias, None, out, 100, BLOCK=32, enable_fp_fusion=fusion))
            ref = expected(x.cpu().numpy(), None if bias is None else bias.cpu().numpy(), None)
            np.testing.assert_array_equal(out.cpu().numpy(), ref)
    assert len(handles) == len(kernel.cache) == 4


def test_parameters_named_like_options_on_the_gpu(torch):
    out = torch.zeros(2, device="cuda", dtype=torch.int32)
    fresh(warps_kernel)[(1,)](out, num_warps=8, num_stages=2)
    assert out.tolist() == [8, 2]


def test_do_not_specialize_on_the_gpu(torch):
    kernel = tilec.jit(do_not_specialize=["n", "stride"])(strided_copy)
    for n, stride in [(1, 1), (16, 16), (100, 3)]:
        x = torch.arange(n * stride + 1, device="cuda", dtype=torch.int32)
        out = torch.zeros(n, device="cuda", dtype=torch.int32)
        kernel[(tilec.cdiv(n, 16),)](x, out, n, stride, BLOCK=16)
        assert out.tolist() == x[: n * stride: stride][:n].tolist()
    assert len(kernel.cache) == 1
