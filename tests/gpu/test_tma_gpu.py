"""Host tensor descriptors read by the tensor memory accelerator on the GPU
(sm_90 on): the pipelined K loop of a matmul whose operands come through
``TensorDescriptor`` arguments copies each block with ``cp.async.bulk.tensor``
into mbarrier-guarded slots (``backends/nvidia/tma.py``).  Checked against
torch in float32 on ragged shapes (blocks past every edge read zeros), views
whose rows are wider than the tensor, operands of every 16-bit dtype and f32,
a K loop shorter than the pipeline, and a ``b`` stored ``N x K`` and used
transposed (``tl.dot(a, b.T)``), through pointers and descriptors, fp8 too.

Needs a CUDA GPU of compute capability 9.0 and torch."""
from __future__ import annotations

import pytest

from kernels.descriptor_matmul import descriptor_arguments, matmul_bt_descriptors, matmul_bt_pointers
from kernels.matmul import matmul_descriptor_kernel

import tilec
from tilec.tools.tensor_descriptor import TensorDescriptor

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0),
                       reason="needs a GPU with the tensor memory accelerator (sm_90)"),
]


def run(a, b, BM, BN, BK, num_warps, num_stages, c=None):
    """``c = a @ b`` by the tutorial's descriptor kernel (into a NaN-filled f32 ``c`` unless given)."""
    M, N = a.shape[0], b.shape[1]
    c = torch.full((M, N), float("nan"), device="cuda") if c is None else c
    args, constexprs = descriptor_arguments(a, b, c, (BM, BN, BK))
    options = dict(constexprs, num_warps=num_warps, num_stages=num_stages)
    matmul_descriptor_kernel[(tilec.cdiv(M, BM) * tilec.cdiv(N, BN),)](*args, **options)
    return c, matmul_descriptor_kernel.compile(*args, **options)


CONFIGS = [(128, 128, 64, 8, 3), (64, 64, 32, 4, 4), (256, 128, 64, 8, 3), (128, 256, 64, 8, 3), (64, 128, 16, 4, 2)]
SHAPES = [(256, 256, 256), (200, 136, 72), (1, 64, 300), (130, 257, 1000), (64, 64, 16), (300, 200, 8)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_descriptor_matmul_copies_blocks_with_the_tma(shape, config, dtype):
    M, N, K = shape
    dt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(M * 7 + N * 3 + K)
    a = torch.randn(M, K, device="cuda", generator=gen).to(dt)
    b = torch.randn(K, N, device="cuda", generator=gen).to(dt)
    if (K * a.element_size()) % 16 or (N * b.element_size()) % 16:
        pytest.skip("a descriptor's rows must be 16-byte multiples")
    c, compiled = run(a, b, *config)
    assert "cp.async.bulk.tensor.2d" in compiled.asm["ptx"]
    want = a.float() @ b.float()
    torch.testing.assert_close(c, want, rtol=2e-2, atol=2e-2 * max(1.0, K ** 0.5))


def test_views_with_wider_rows_and_f32_operands():
    """Row strides larger than the tensor's width (a slice of a wider matrix),
    f32 operands (tf32 rounding on the tensor cores)."""
    base_a = torch.randn(160, 96, device="cuda")
    base_b = torch.randn(96, 200, device="cuda")
    a, b = base_a[:150, :72], base_b[:72, :136]
    c, compiled = run(a, b, 64, 64, 32, 4, 3)
    assert "cp.async.bulk.tensor.2d" in compiled.asm["ptx"]
    torch.testing.assert_close(c, a @ b, rtol=1e-2, atol=5e-2)


def test_a_k_loop_shorter_than_the_pipeline():
    """One or two iterations with four stages: the prologue's copies past the
    end are skipped, and no copy is left in flight past the loop."""
    for K in (16, 32):
        a = torch.randn(128, K, device="cuda").half()
        b = torch.randn(K, 128, device="cuda").half()
        c, _ = run(a, b, 128, 128, 16, 4, 4)
        torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("through", ["pointers", "descriptors"])
@pytest.mark.parametrize("shape", [(256, 256, 256), (200, 136, 72), (130, 264, 1000), (64, 64, 16)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("config", [(128, 128, 64, 8, 3), (64, 64, 32, 4, 4), (128, 256, 64, 8, 3)],
                         ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float8_e4m3fn"])
def test_a_b_used_transposed_lands_transposed_in_its_slots(shape, config, dtype, through):
    """``tl.dot(a, b.T)`` with ``b`` stored ``N x K``: its slots hold the
    transpose (K along the fast dim, what wgmma reads without transposing),
    filled by ``cp.async`` (pointers) or the accelerator (descriptors)."""
    M, N, K = shape
    BM, BN, BK, warps, stages = config
    if dtype == "float8_e4m3fn":
        BK *= 2  # the same bytes a row
    gen = torch.Generator(device="cuda").manual_seed(M + 3 * N + 7 * K)
    a = torch.randn(M, K, device="cuda", generator=gen).to(getattr(torch, dtype))
    b = torch.randn(N, K, device="cuda", generator=gen).to(getattr(torch, dtype))
    c = torch.full((M, N), float("nan"), device="cuda")
    grid = (tilec.cdiv(M, BM), tilec.cdiv(N, BN))
    if through == "pointers":
        args, kernel = (a, b, c, M, N, K), matmul_bt_pointers
    else:
        if (K * a.element_size()) % 16:
            pytest.skip("a descriptor's rows must be 16-byte multiples")
        args, kernel = (TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BN, BK]),
                        c, M, N, K), matmul_bt_descriptors
    kernel[grid](*args, BM=BM, BN=BN, BK=BK, num_warps=warps, num_stages=stages)
    ptx = kernel.compile(*args, BM=BM, BN=BN, BK=BK, num_warps=warps, num_stages=stages).asm["ptx"]
    assert ("cp.async.bulk.tensor.2d" in ptx) == (through == "descriptors")
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=2e-2, atol=2e-2 * max(1.0, K ** 0.5))


@pytest.mark.parametrize("shape", [(256, 256, 256), (200, 136, 72), (130, 264, 1000)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("out_dtype", ["float16", "float32"])
def test_a_descriptor_store_writes_the_block_and_nothing_past_the_tensor(shape, out_dtype):
    M, N, K = shape
    a = torch.randn(M, K, device="cuda").half()
    b = torch.randn(K, N, device="cuda").half()
    wide = torch.full((M + 5, N + 64), 7.0, device="cuda", dtype=getattr(torch, out_dtype))
    c = wide[:M, :N]
    _, compiled = run(a, b, 128, 128, 64, 8, 3, c)
    ptx = compiled.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx
    torch.testing.assert_close(c.float(), a.float() @ b.float(), rtol=2e-2, atol=2e-2 * K ** 0.5)
    assert (wide[M:] == 7).all() and (wide[:, N:] == 7).all()
