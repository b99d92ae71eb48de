"""Block pointers and tensor descriptors on the GPU against Triton 3.6: one kernel
source, compiled once by Triton and once by tilec, on the same inputs.

* a matmul through block pointers advanced in the K loop, with ragged M, N,
  K (every block checked at the edges; the kernel is
  ``test_language_block_pointers.block_pointer_matmul``): the same f16
  results within the rounding of two f32 accumulation orders;
* a copy through tensor descriptors, made in the kernel and passed from the
  host (``TensorDescriptor.from_tensor``), at offsets that straddle the far
  edges: the same bits.  Offsets stay 16-byte aligned along the rows and
  non-negative: Triton 3.6 on the H100 stops with an illegal instruction at
  a negative one (tilec reads the padding there: the host tests check it).

Needs a CUDA GPU, torch and Triton (Triton's in-kernel descriptors need its
allocator: set here)."""
from __future__ import annotations

import types

import pytest

import tilec
import tilec.language as tilec_tl
from test_language_block_pointers import block_pointer_matmul
from tilec.tools.tensor_descriptor import TensorDescriptor as TilecDescriptor

tl = tilec_tl  # the kernels' global `tl`; each compiler gets its own copy of them


def descriptor_copy_k(X, Y, M, N, om, on, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN])
    dst = tl.make_tensor_descriptor(Y, [M, N], [N, 1], [BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    dst.store([om + pm * BM, on + pn * BN], src.load([om + pm * BM, on + pn * BN]) + 1)


def host_descriptor_copy_k(src, dst, om, on, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    dst.store([om + pm * BM, on + pn * BN], src.load([om + pm * BM, on + pn * BN]) * 2)


def _compiled(fn, tl_module, jit):
    """``fn`` with ``tl`` bound to ``tl_module``, jitted; its annotations are
    strings (``from __future__ import annotations``), read in the new globals."""
    copy = types.FunctionType(fn.__code__, {**fn.__globals__, "tl": tl_module}, fn.__name__)
    copy.__annotations__ = dict(fn.__annotations__)
    return jit(copy)


@pytest.fixture(scope="module")
def triton(torch):
    triton = pytest.importorskip("triton")
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, device="cuda", dtype=torch.int8))
    return triton


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (100, 72, 40), (17, 130, 33)])
def test_block_pointer_matmul_matches_triton(torch, triton, m, n, k):
    g = torch.Generator(device="cpu").manual_seed(m * n + k)
    a = torch.randn(m, k, generator=g).half().cuda()
    b = torch.randn(k, n, generator=g).half().cuda()
    outs = []
    for module, jit in ((triton.language, triton.jit), (tilec_tl, tilec.jit)):
        c = torch.zeros(m, n, dtype=torch.float16, device="cuda")
        grid = (-(-m // 32), -(-n // 32))
        _compiled(block_pointer_matmul.fn, module, jit)[grid](a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0),
                                                BM=32, BN=32, BK=32)
        outs.append(c.float().cpu())
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(outs[1], (a.float() @ b.float()).cpu(), rtol=2e-2, atol=5e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
@pytest.mark.parametrize("om,on", [(0, 0), (3, 32), (16, 0)])
def test_descriptor_copy_matches_triton(torch, triton, dtype, om, on):
    m, n = 45, 72
    t = getattr(torch, dtype)
    x = (torch.arange(m * n, dtype=torch.float32).reshape(m, n) % 251 - 100).to(t).cuda()
    grid = (-(-m // 16) + 1, -(-n // 32) + 1)
    outs = []
    for module, jit in ((triton.language, triton.jit), (tilec_tl, tilec.jit)):
        y = torch.zeros_like(x)
        _compiled(descriptor_copy_k, module, jit)[grid](x, y, m, n, om, on, BM=16, BN=32)
        outs.append(y.cpu())
    assert torch.equal(outs[0].view(torch.uint8), outs[1].view(torch.uint8))


@pytest.mark.gpu
@pytest.mark.parametrize("om,on", [(0, 0), (5, 16)])
def test_host_descriptor_copy_matches_triton(torch, triton, om, on):
    from triton.tools.tensor_descriptor import TensorDescriptor as TritonDescriptor

    m, n = 50, 40
    x = torch.randn(m, n, device="cuda")
    outs = []
    for module, jit, desc in ((triton.language, triton.jit, TritonDescriptor),
                              (tilec_tl, tilec.jit, TilecDescriptor)):
        y = torch.zeros_like(x)
        grid = (-(-m // 16) + 1, -(-n // 16) + 1)
        _compiled(host_descriptor_copy_k, module, jit)[grid](desc.from_tensor(x, [16, 16]),
                                                              desc.from_tensor(y, [16, 16]), om, on, BM=16, BN=16)
        outs.append(y.cpu())
    assert torch.equal(outs[0], outs[1])
