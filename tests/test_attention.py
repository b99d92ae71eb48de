"""The fused-attention tutorial kernel (tests/kernels/attention.py) on the host
interpreter: ragged sequence lengths, causal or not, fp16/bf16/fp32, against
a float64 numpy reference with a bound derived from the dtype's rounding."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import FEW, assert_close, from_host, require, to_host
from kernels.attention import _attn_fwd, attention, launch_attention

# Relative rounding of the dots' inputs: f16/bf16 are exact (their products are
# exact in the f32 accumulator); f32 rounds to tf32 (tl.dot's default precision).
INPUT_UNIT = {"float16": 0.0, "bfloat16": 0.0, "float32": 2.0 ** -11}
# Relative rounding of p (and of v for f32) on their way into the second dot.
OPERAND_UNIT = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -11}


def attention_reference(q, k, v, causal, sm_scale):
    """softmax(q kᵀ sm_scale) v in float64 and the rows' log-sum-exp in base 2,
    for (Z, H, N, D) arrays (numpy values)."""
    s = np.einsum("zhmd,zhnd->zhmn", q, k) * sm_scale
    if causal:
        n = q.shape[2]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    mx = s.max(axis=-1, keepdims=True)
    p = np.exp(s - mx)
    lse = (mx[..., 0] + np.log(p.sum(axis=-1))) / np.log(2.0)
    return np.einsum("zhmn,zhnd->zhmd", p / p.sum(axis=-1, keepdims=True), v), lse


def attention_tolerance(q, k, v, causal, sm_scale, dtype):
    """(atol of the output, atol of the log-sum-exp), per row.

    A logit is off by at most ``e`` = the inputs' rounding and the f32 sum at
    the scale of |q| |k|ᵀ sm_scale, so each p_j is off by a relative 2e; p and
    v round on their way into the second dot.  The output, a p-weighted mean
    of v, is then off by that relative error times the weighted mean of |v|,
    plus its own rounding (``assert_close``'s ulp)."""
    d, n = q.shape[-1], k.shape[2]
    logits = np.einsum("zhmd,zhnd->zhmn", np.abs(q), np.abs(k)) * sm_scale
    e = logits.max(axis=-1) * (2 * INPUT_UNIT[dtype] + d * 2.0 ** -23) + 2.0 ** -20
    rounding = OPERAND_UNIT[dtype] * (2 if dtype == "float32" else 1) + n * 2.0 ** -23
    mean_abs_v, _ = attention_reference(q, k, np.abs(v), causal, sm_scale)
    out_atol = 2 * (2 * e + rounding)[..., None] * mean_abs_v
    lse_atol = 2 * e / np.log(2.0)
    return out_atol, lse_atol


def random_qkv(rng, shape, dtype, spread=1.0):
    """Host q, k, v of ``dtype`` (normal values, q times ``spread`` for sharper
    softmaxes) and their exact values in float64."""
    host = [to_host(rng.standard_normal(shape) * s, dtype) for s in (spread, 1.0, 1.0)]
    return host, [from_host(h).astype(np.float64) for h in host]


def check_attention(z, h, n, d, causal, dtype, sm_scale, spread, seed, **config):
    require(dtype)
    (q, k, v), (q64, k64, v64) = random_qkv(np.random.default_rng(seed), (z, h, n, d), dtype, spread)
    out, lse = attention(q, k, v, causal, sm_scale, **config)
    assert_attention_close(out, lse, q64, k64, v64, causal, sm_scale, dtype)


def assert_attention_close(out, lse, q, k, v, causal, sm_scale, dtype):
    """The kernel's ``out`` and ``lse`` for float64 q, k, v (Z, H, N, D) match the reference."""
    z, h, n = q.shape[:3]
    want, lse_want = attention_reference(q, k, v, causal, sm_scale)
    out_atol, lse_atol = attention_tolerance(q, k, v, causal, sm_scale, dtype)
    assert_close(out, want, dtype, ulps=1, atol=out_atol)
    assert_close(lse, lse_want.reshape(z * h, n), "float32", ulps=4, atol=lse_atol.reshape(z * h, n))


BLOCKS = [(16, 16), (32, 16), (16, 32)]  # (BLOCK_M, BLOCK_N); causal needs BLOCK_N | BLOCK_M


@settings(FEW, max_examples=8)  # each new (dtype, head dim, blocks, causal) also compiles for 2 GPUs
@given(z=st.integers(1, 2), h=st.integers(1, 2), n=st.integers(1, 100), d=st.sampled_from([16, 32, 64]),
       causal=st.booleans(), dtype=st.sampled_from(["float16", "bfloat16", "float32"]),
       blocks=st.sampled_from(BLOCKS), sm_scale=st.floats(0.05, 1.0), spread=st.sampled_from([1.0, 4.0]),
       seed=st.integers(0, 2 ** 32 - 1))
def test_attention_matches_numpy(z, h, n, d, causal, dtype, blocks, sm_scale, spread, seed):
    if causal and blocks[0] % blocks[1]:
        blocks = blocks[::-1]
    check_attention(z, h, n, d, causal, dtype, sm_scale, spread, seed, block_m=blocks[0], block_n=blocks[1])


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n", [17, 48])
def test_attention_at_block_edges(n, causal):
    """A sequence one past a block boundary, and one of whole blocks whose
    causal diagonal band spans two key blocks (hypothesis draws the rest)."""
    check_attention(1, 2, n, 16, causal, "float16", 0.25, 1.0, seed=n, block_m=32, block_n=16)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_reads_each_tensor_through_its_strides(causal):
    """k and v as (Z, N, H, D) buffers seen as (Z, H, N, D), out into a
    (Z, N, H, D) buffer too: every tensor keeps its own strides."""
    rng = np.random.default_rng(5)
    z, h, n, d = 2, 3, 37, 16
    q = rng.standard_normal((z, h, n, d)).astype(np.float16)
    k, v = (rng.standard_normal((z, n, h, d)).astype(np.float16).transpose(0, 2, 1, 3) for _ in range(2))
    out = np.full((z, n, h, d), np.nan, np.float16).transpose(0, 2, 1, 3)
    lse = np.full((z * h, n), np.nan, np.float32)
    launch_attention(_attn_fwd, q, k, v, out, lse, causal, 0.3, block_m=32, block_n=16)
    assert_attention_close(out, lse, *(x.astype(np.float64) for x in (q, k, v)), causal, 0.3, "float16")


def test_causal_attention_never_reads_keys_past_its_block():
    """Keys and values from row 32 on are NaN: with the blocks past the
    diagonal skipped by the loop bounds (not only masked), rows 0..31 never
    touch them and match the attention of the first 32 rows alone."""
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((1, 2, 80, 16)).astype(np.float16) for _ in range(3))
    k[:, :, 32:], v[:, :, 32:] = np.nan, np.nan
    out, lse = attention(q, k, v, True, 0.5, block_m=32, block_n=16)
    first = (x[:, :, :32].astype(np.float64) for x in (q, k, v))
    assert_attention_close(out[:, :, :32], lse[:, :32], *first, True, 0.5, "float16")


def test_causal_attention_needs_block_n_to_divide_block_m():
    q = np.zeros((1, 1, 16, 16), np.float16)
    with pytest.raises(ValueError, match="multiple of BLOCK_N"):
        attention(q, q, q, True, block_m=16, block_n=32)
