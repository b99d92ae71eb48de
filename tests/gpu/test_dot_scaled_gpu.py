"""``tl.dot_scaled`` on the GPU is Triton 3.6's: one kernel body, compiled once
by Triton and once by tilec, on the same operands (packed e2m1 bytes, fp8
bytes, bf16/fp16 tiles) and e8m0 scales, must write the same product within
the tolerance Triton's own ``test_scaled_dot`` allows (atol 1e-5, rtol 1e-2:
both accumulate in float32, in their own order).  Values are finite, as that
test makes them (Triton's e5m2-to-bf16 conversion does not keep infinities).
Needs a CUDA GPU, torch and Triton."""
from __future__ import annotations

import types

import pytest

import tilec
import tilec.language as tilec_tl

tl = tilec_tl  # the kernel's global `tl`; each compiler gets its own copy of it

pytestmark = pytest.mark.gpu


def dot_scaled_k(a_ptr, a_scale, b_ptr, b_scale, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                 A_FMT: tl.constexpr, B_FMT: tl.constexpr):
    A_COLS: tl.constexpr = K // 2 if A_FMT == "e2m1" else K
    B_ROWS: tl.constexpr = K // 2 if B_FMT == "e2m1" else K
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * A_COLS + tl.arange(0, A_COLS)[None, :])
    b = tl.load(b_ptr + tl.arange(0, B_ROWS)[:, None] * N + tl.arange(0, N)[None, :])
    if a_scale is not None:
        a_scale = tl.load(a_scale + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    if b_scale is not None:
        b_scale = tl.load(b_scale + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    c = tl.dot_scaled(a, a_scale, A_FMT, b, b_scale, B_FMT)
    tl.store(out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def _compiled(fn, tl_module, jit):
    """``fn`` with ``tl`` bound to ``tl_module``, jitted (string annotations are read in the new globals)."""
    copy = types.FunctionType(fn.__code__, {**fn.__globals__, "tl": tl_module}, fn.__name__)
    copy.__annotations__ = dict(fn.__annotations__)
    return jit(copy)


def _operand(torch, g, fmt: str, shape: tuple, compute):
    """Stored data for ``fmt``: bytes for the minifloats (fp8 made finite as
    Triton's test does), a clamped normal tile for the halves."""
    if fmt in ("bf16", "fp16"):
        return torch.randn(shape, generator=g).clamp(-2 ** 6, 2 ** 6 - 1).to(compute).cuda()
    x = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    if fmt != "e2m1":
        top = 0x7C if fmt == "e5m2" else 0x7F
        x = torch.where(x & top == top, x & 0xF3, x)
    return x.cuda()


@pytest.mark.parametrize("a_fmt, b_fmt", [("e2m1", "bf16"), ("bf16", "e2m1"), ("e2m1", "fp16"), ("e2m1", "e2m1"),
                                          ("e4m3", "bf16"), ("e5m2", "e4m3")])
@pytest.mark.parametrize("m, n, k", [(32, 32, 64), (64, 128, 128), (128, 64, 256)])
def test_tilec_computes_what_triton_computes(torch, a_fmt, b_fmt, m, n, k):
    triton = pytest.importorskip("triton")
    compute = torch.float16 if "fp16" in (a_fmt, b_fmt) else torch.bfloat16
    low, high = (0, 142) if compute == torch.bfloat16 else (124, 131)  # Triton's test's scale ranges
    g = torch.Generator(device="cpu").manual_seed(m * 1000 + n * 10 + k)
    a = _operand(torch, g, a_fmt, (m, k // 2 if a_fmt == "e2m1" else k), compute)
    b = _operand(torch, g, b_fmt, (k // 2 if b_fmt == "e2m1" else k, n), compute)
    sa = None if a_fmt in ("bf16", "fp16") else torch.randint(low, high + 1, (m, k // 32), generator=g,
                                                                dtype=torch.uint8).cuda()
    sb = None if b_fmt in ("bf16", "fp16") else torch.randint(low, high + 1, (n, k // 32), generator=g,
                                                                dtype=torch.uint8).cuda()
    outs = []
    for module, jit in ((triton.language, triton.jit), (tilec_tl, tilec.jit)):
        out = torch.full((m, n), float("nan"), dtype=torch.float32, device="cuda")
        _compiled(dot_scaled_k, module, jit)[(1,)](a, sa, b, sb, out, M=m, N=n, K=k, A_FMT=a_fmt, B_FMT=b_fmt)
        outs.append(out.cpu())
    want, got = outs
    assert want.isfinite().all()
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-2)
