"""The fused-attention tutorial kernel on a GPU through torch tensors, at sizes
and tiles the host interpreter cannot afford: sequences of 128 to 1000
(ragged ones included), head dims 64 and 128, fp16 and bf16, causal or not,
BLOCK_M x BLOCK_N of 64x32 to 128x64 on 4 or 8 warps.

Each output starts as NaN (an element left unwritten fails).  It is checked
against ``torch.nn.functional.scaled_dot_product_attention`` by
||out - sdpa|| / ||sdpa|| (both round p and the output to 16 bits), and the
log-sum-exp against float64 torch.  A tile that does not fit the device's
shared memory or registers is skipped with tilec's reason."""
from __future__ import annotations

import math
import zlib

import pytest

import tilec
from kernels.attention import _attn_fwd, launch_attention

pytestmark = pytest.mark.gpu

# (block_m, block_n, num_warps, num_stages)
CONFIGS = [(64, 32, 4, 2), (128, 64, 4, 3), (128, 64, 8, 3), (64, 64, 4, 3)]
SHAPES = [(2, 3, 128, 64), (1, 2, 1000, 128), (2, 2, 333, 64), (1, 4, 1024, 128)]
DTYPES = ["float16", "bfloat16"]
# ||out - sdpa|| / ||sdpa||: p rounds to fp16 (bf16) in the second dot here and there.
TOLERANCE = {"float16": 2e-3, "bfloat16": 1.6e-2}


def cases():
    for i, config in enumerate(CONFIGS):
        for j, shape in enumerate(SHAPES):
            for d, dtype in enumerate(DTYPES):
                causal = bool((i + j + d) % 2)
                name = f"{'x'.join(map(str, shape))}-{dtype}-{'causal' if causal else 'full'}-" \
                       f"{'_'.join(map(str, config))}"
                yield pytest.param(shape, dtype, causal, config, id=name)


def lse_reference(torch, q, k, causal, sm_scale):
    """The rows' log-sum-exp in base 2 of the scaled logits, float64."""
    s = (q.double() @ k.double().transpose(-1, -2)) * sm_scale
    if causal:
        n = q.shape[2]
        s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    return torch.logsumexp(s, dim=-1) / math.log(2.0)


@pytest.mark.parametrize("shape,dtype,causal,config", list(cases()))
def test_attention_on_the_gpu(torch, request, shape, dtype, causal, config):
    Z, H, N, D = shape
    block_m, block_n, num_warps, num_stages = config
    torch.manual_seed(zlib.crc32(request.node.callspec.id.encode()))
    q, k, v = (torch.randn(shape, device="cuda").to(getattr(torch, dtype)) for _ in range(3))
    out = torch.full(shape, float("nan"), device="cuda", dtype=q.dtype)
    lse = torch.full((Z * H, N), float("nan"), device="cuda", dtype=torch.float32)
    sm_scale = 1.0 / math.sqrt(D)
    try:
        launch_attention(_attn_fwd, q, k, v, out, lse, causal, sm_scale, block_m=block_m, block_n=block_n,
                         num_warps=num_warps, num_stages=num_stages)
    except tilec.OutOfResources as e:
        pytest.skip(f"does not fit this GPU: {e}")
    torch.cuda.synchronize()

    sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale)
    error = ((out.double() - sdpa.double()).norm() / sdpa.double().norm()).item()
    assert error <= TOLERANCE[dtype], f"||tilec - sdpa|| / ||sdpa|| = {error:.3g}"
    lse_error = (lse.double() - lse_reference(torch, q, k, causal, sm_scale).reshape(Z * H, N)).abs().max().item()
    assert lse_error <= 1e-3, f"max |lse - reference| = {lse_error:.3g}"
