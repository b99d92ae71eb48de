"""The matmul tutorial kernel on a GPU through torch tensors, at sizes and
tiles the host interpreter cannot afford: 512^3 and ragged 1000 x 777 x 333,
fp16 and bf16 inputs, with and without the fused leaky_relu, tiles of 64 to
256 by 32 or 64, 4 or 8 warps, 1 to 4 stages; operands stored the other way
round; and hypothesis-drawn tiles, ragged sizes, storage and dtypes.

Each output starts as NaN (an element left unwritten fails) and is checked
element by element against a float64 reference within the precision's bound
(``dot_tolerance``, as the host tests), then against ``torch.matmul`` (cuBLAS)
by ||out - ref|| / ||ref||.  A tile that does not fit the device's shared
memory or registers is skipped with tilec's reason."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import PROPERTY, assert_close
from kernels.matmul import launch_matmul, matmul_kernel
from test_language_dot import dot_tolerance, leaky_relu_reference, matmul_config

pytestmark = pytest.mark.gpu

# (block_m, block_n, block_k, group_size_m, num_warps, num_stages)
CONFIGS = [(64, 64, 32, 8, 4, 1), (128, 128, 32, 8, 4, 2), (128, 128, 64, 8, 4, 3), (128, 256, 64, 8, 8, 3),
           (256, 128, 64, 8, 8, 4), (64, 256, 32, 4, 4, 4), (256, 64, 64, 8, 8, 2)]
SIZES = [(512, 512, 512), (1000, 777, 333)]
DTYPES = ["float16", "bfloat16"]
# fp8 inputs (their products are exact; the tensor cores' accumulation is not).
FP8_DTYPES = ["float8_e4m3fn", "float8_e5m2"]
# ||out - torch.matmul|| / ||torch.matmul||: both round to 16 bits; cuBLAS's
# bf16 output keeps 8 mantissa bits where the tutorial stores fp16.
TORCH_TOLERANCE = {"float16": 2e-3, "bfloat16": 1e-2}


def cases():
    """Every configuration at both sizes in both dtypes; the activation alternates,
    so each configuration runs with and without it."""
    for i, config in enumerate(CONFIGS):
        for j, size in enumerate(SIZES):
            for d, dtype in enumerate(DTYPES):
                activation = "leaky_relu" if (i + j + d) % 2 else ""
                name = f"{'x'.join(map(str, size))}-{dtype}-{activation or 'none'}-{'_'.join(map(str, config))}"
                yield pytest.param(size, dtype, activation, config, id=name)


@pytest.mark.parametrize("size,dtype,activation,config", list(cases()))
def test_tutorial_matmul_on_the_gpu(torch, request, size, dtype, activation, config):
    M, N, K = size
    torch.manual_seed(zlib.crc32(request.node.callspec.id.encode()))  # fresh inputs in every case
    a = torch.randn((M, K), device="cuda").to(getattr(torch, dtype))
    b = torch.randn((K, N), device="cuda").to(getattr(torch, dtype))
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    try:
        launch_matmul(matmul_kernel, a, b, c, activation, **matmul_config(config))
    except tilec.OutOfResources as e:
        pytest.skip(f"does not fit this GPU: {e}")
    torch.cuda.synchronize()

    a64, b64 = a.double(), b.double()  # float64 products on the GPU, the checks in numpy
    want, magnitude = (a64 @ b64).cpu().numpy(), (a64.abs() @ b64.abs()).cpu().numpy()
    cublas = torch.matmul(a, b).double().cpu().numpy()
    if activation:
        want, cublas = leaky_relu_reference(want), leaky_relu_reference(cublas)
    got = c.cpu().numpy()
    assert_close(got, want, "float16", **dot_tolerance(dtype, None, "float16", magnitude, K + 1))
    error = np.linalg.norm(got - cublas) / np.linalg.norm(cublas)
    assert error <= TORCH_TOLERANCE[dtype], f"||tilec - torch.matmul|| / ||torch.matmul|| = {error:.3g}"


# Operands stored the other way round: ``a`` along M (a transposed tensor's
# view), ``b`` along K.  On sm_90a these are wgmma's MN-major ``a`` and
# K-major ``b`` (the transpose bits of its descriptors); elsewhere ldmatrix.trans.
STORAGE = ["a_along_m", "b_along_k", "both"]


@pytest.mark.parametrize("storage", STORAGE)
@pytest.mark.parametrize("config", [(128, 128, 64, 8, 4, 3), (128, 256, 64, 8, 8, 3), (64, 64, 32, 8, 4, 2)],
                         ids=lambda c: "_".join(map(str, c)))
def test_matmul_of_transposed_operands_on_the_gpu(torch, request, storage, config):
    M, N, K = 520, 392, 320
    torch.manual_seed(zlib.crc32(request.node.callspec.id.encode()))
    a = torch.randn((M, K), device="cuda").to(torch.float16)
    b = torch.randn((K, N), device="cuda").to(torch.float16)
    a_in = a.t().contiguous().t() if storage in ("a_along_m", "both") else a
    b_in = b.t().contiguous().t() if storage in ("b_along_k", "both") else b
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    launch_matmul(matmul_kernel, a_in, b_in, c, "", **matmul_config(config))
    torch.cuda.synchronize()
    a64, b64 = a.double(), b.double()
    want, magnitude = (a64 @ b64).cpu().numpy(), (a64.abs() @ b64.abs()).cpu().numpy()
    assert_close(c.cpu().numpy(), want, "float16", **dot_tolerance("float16", None, "float16", magnitude, K + 1))


@st.composite
def gpu_matmuls(draw):
    """A tile configuration (warpgroup-sized or not), ragged sizes, an
    operand storage and a dtype: on an H100 most land on wgmma (whole
    warpgroups, M a multiple of 16 x warps), the rest on mma.sync."""
    warps = draw(st.sampled_from([4, 8]))
    bm = draw(st.sampled_from([64, 128, 256]))
    bn = draw(st.sampled_from([16, 32, 64, 128, 256]))
    bk = draw(st.sampled_from([16, 32, 64]))
    stages = draw(st.integers(1, 4))
    sizes = tuple(draw(st.integers(1, 3 * b)) for b in (bm, bn, bk))
    return (bm, bn, bk, 4, warps, stages), sizes, draw(st.sampled_from(STORAGE + ["rows"])), \
        draw(st.sampled_from(DTYPES + FP8_DTYPES))


@settings(PROPERTY, max_examples=40)
@given(case=gpu_matmuls())
def test_matmul_of_drawn_tiles_sizes_and_storage_on_the_gpu(torch, case):
    config, (M, N, K), storage, dtype = case
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(repr(case).encode()))
    a = torch.randn((M, K), device="cuda", generator=gen).to(getattr(torch, dtype))
    b = torch.randn((K, N), device="cuda", generator=gen).to(getattr(torch, dtype))
    a_in = a.t().contiguous().t() if storage in ("a_along_m", "both") else a
    b_in = b.t().contiguous().t() if storage in ("b_along_k", "both") else b
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    try:
        launch_matmul(matmul_kernel, a_in, b_in, c, "", **matmul_config(config))
    except tilec.OutOfResources:
        return  # a tile past the GPU's shared memory or registers: nothing to check
    torch.cuda.synchronize()
    a64, b64 = a.double(), b.double()
    want, magnitude = (a64 @ b64).cpu().numpy(), (a64.abs() @ b64.abs()).cpu().numpy()
    if dtype in FP8_DTYPES:  # exact products added in a float of 13 mantissa bits that truncates
        tolerance = {"atol": magnitude * (K + 1) * 2.0 ** -13, "ulps": 1}
    else:
        tolerance = dot_tolerance(dtype, None, "float16", magnitude, K + 1)
    assert_close(c.cpu().numpy(), want, "float16", **tolerance)


@tilec.jit
def exact_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, ACC: tl.constexpr):
    """``c = a @ b`` for ``a`` and ``b`` of any strides, accumulated in ``ACC``, masked edges."""
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), ACC)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


# 8-bit operands whose products and sums are exact: int8 over its range into
# int32; fp8 holding the integers -4..4 (exact in both formats) into float32,
# every partial sum of K = 1000 below 2^14, so exact even in the 14-bit
# significand NVIDIA's fp8 tensor cores accumulate in.
EXACT = {"int8": (128, "int32"), "float8_e4m3fn": (4, "float32"), "float8_e5m2": (4, "float32")}


@pytest.mark.parametrize("dtype", list(EXACT))
@pytest.mark.parametrize("b_along_k", [True, False], ids=["b_along_k", "b_along_n"])
@pytest.mark.parametrize("config", [(128, 128, 64, 4, 3), (128, 256, 128, 8, 3), (64, 64, 32, 4, 2)],
                         ids=lambda c: "_".join(map(str, c)))
def test_8bit_matmul_is_exact_on_the_gpu(torch, request, dtype, b_along_k, config):
    """Every element equals torch's int64 product: on an H100, wgmma's s8/e4m3/e5m2
    forms where ``b`` runs along k, mma.sync's otherwise."""
    bm, bn, bk, warps, stages = config
    M, N, K = 300, 260, 1000
    bound, acc = EXACT[dtype]
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(request.node.callspec.id.encode()))
    high = bound if dtype == "int8" else bound + 1
    a, b = (torch.randint(-bound, high, shape, device="cuda", generator=gen, dtype=torch.int32)
            for shape in ((M, K), (K, N)))
    a_in, b_in = a.to(getattr(torch, dtype)), b.to(getattr(torch, dtype))
    b_in = b_in.t().contiguous().t() if b_along_k else b_in
    c = torch.full((M, N), -1, device="cuda", dtype=getattr(torch, acc))
    grid = (tilec.cdiv(M, bm), tilec.cdiv(N, bn))
    exact_matmul_kernel[grid](a_in, b_in, c, M, N, K, *a_in.stride(), *b_in.stride(), BM=bm, BN=bn, BK=bk,
                              ACC=getattr(tl, acc), num_warps=warps, num_stages=stages)
    torch.cuda.synchronize()
    want = (a.cpu().long() @ b.cpu().long()).numpy()
    np.testing.assert_array_equal(c.cpu().long().numpy(), want)


@pytest.mark.parametrize("config", [(128, 256, 64, 8, 8, 3), (256, 128, 64, 8, 8, 3), (64, 128, 32, 8, 4, 2)],
                         ids=lambda c: "_".join(map(str, c)))
def test_a_k_loop_of_no_iteration_leaves_the_accumulators_start(torch, config):
    """K = 0: the loop runs no iteration and ``c`` is the accumulator's start,
    zeros, which on sm_90a come from one inline asm before the loop's guard
    (``wgmma.lower_loop_accumulator``), the same registers the loop's
    ``wgmma`` would have accumulated into."""
    a = torch.randn((300, 0), device="cuda").half()
    b = torch.randn((0, 260), device="cuda").half()
    c = torch.full((300, 260), float("nan"), device="cuda", dtype=torch.float16)
    launch_matmul(matmul_kernel, a, b, c, "", **matmul_config(config))
    torch.cuda.synchronize()
    assert bool((c == 0).all())
