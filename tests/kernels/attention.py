"""Tutorial 06 (forward only, fp32): flash attention.  Each program owns
BLOCK_M query rows of one (batch, head) and streams over the keys BLOCK_N at
a time with an online softmax: a running row max ``m_i`` and row sum ``l_i``
rescale the accumulator whenever the max grows."""
import math

import numpy as np

import tilec
import tilec.language as tl


@tilec.jit
def _attn_fwd(Q, K, V, sm_scale, Out, Lse,
              stride_z, stride_h, stride_m, H, N_CTX,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    base = off_z * stride_z + off_h * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * stride_m + offs_d[None, :], mask=offs_m[:, None] < N_CTX, other=0.0)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # log2(e): use exp2
    # Causal: keys past the last query row of this block never matter.
    hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX) if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + base + cols[None, :] * stride_m + offs_d[:, None], mask=cols[None, :] < N_CTX, other=0.0)
        qk = tl.dot(q, k, input_precision="ieee")
        valid = cols[None, :] < N_CTX
        if CAUSAL:
            valid = valid & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(valid, qk * qk_scale, -1.0e6)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(V + base + cols[:, None] * stride_m + offs_d[None, :], mask=cols[:, None] < N_CTX, other=0.0)
        acc = tl.dot(p, v, acc, input_precision="ieee")
        m_i = m_ij
    acc = acc / l_i[:, None]
    row_ok = offs_m < N_CTX
    tl.store(Lse + off_hz * N_CTX + offs_m, m_i + tl.math.log2(l_i), mask=row_ok)
    tl.store(Out + base + offs_m[:, None] * stride_m + offs_d[None, :], acc, mask=row_ok[:, None])


def attention(q, k, v, causal, sm_scale=None, block_m=16, block_n=16):
    """softmax(q k^T * sm_scale) v for q, k, v of shape (Z, H, N_CTX, HEAD_DIM), float32.
    Returns the output and the row log-sum-exp in base 2 (what the backward pass needs)."""
    Z, H, N_CTX, HEAD_DIM = q.shape
    sm_scale = 1.0 / math.sqrt(HEAD_DIM) if sm_scale is None else sm_scale
    out = np.empty_like(q)
    lse = np.empty((Z * H, N_CTX), np.float32)
    grid = (tilec.cdiv(N_CTX, block_m), Z * H, 1)
    _attn_fwd[grid](q, k, v, sm_scale, out, lse, H * N_CTX * HEAD_DIM, N_CTX * HEAD_DIM, HEAD_DIM, H, N_CTX,
                    HEAD_DIM=HEAD_DIM, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal)
    return out, lse
