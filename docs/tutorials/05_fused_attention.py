"""Tutorial 05 (Triton's 06, forward): fused flash attention,
``softmax(q kᵀ * sm_scale) v`` causal or not, fp16/bf16 (fp32 on the host).

Each program owns ``BLOCK_M`` query rows of one (batch, head) and streams over
the keys ``BLOCK_N`` at a time.  ``q kᵀ`` runs on ``tl.dot`` (fp32
accumulator); an online softmax keeps a running row max ``m_i`` and row sum
``l_i`` and rescales the output accumulator by ``alpha = 2^(m_old - m_new)``
whenever the max grows; ``p`` in the inputs' dtype feeds the second
``tl.dot(p, v, acc)``.  Exponentials are ``exp2`` of logits prescaled by
``sm_scale * log2(e)``.

The key blocks come in two bands, as in Triton's two-stage loop: blocks that
need no mask at all (every key valid and, when causal, before the first query
row of the block), then the few that do (the causal diagonal, the ragged last
block of the sequence) with ``tl.where``; blocks wholly above the diagonal are
never visited.  Causal needs ``BLOCK_M`` to be a multiple of ``BLOCK_N`` so
the bands meet on a block boundary.

``launch_attention`` runs the kernel (or its Triton twin) on numpy arrays or
device tensors alike, so the host tests, the GPU tests and the benchmark
launch it the same way.

Run ``python docs/tutorials/05_fused_attention.py`` (``--small``: the host
interpreter only, as CI); the prose is 05_fused_attention.md beside it.
"""
import math
import sys
from pathlib import Path

if __name__ == "__main__":  # run from a checkout: use its tilec and benchmarks/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

import tilec
import tilec.language as tl
from tilec.tools.tensor_descriptor import TensorDescriptor


@tilec.jit
def _attn_fwd_inner(acc, l_i, m_i, q, K, V, stride_kn, stride_vn, lo, hi, offs_m, offs_n, offs_d, N_CTX,
                    qk_scale, row0, BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr,
                    DESCRIPTORS: tl.constexpr):
    """The online softmax over the key blocks starting in [lo, hi).  Unmasked
    blocks (``MASKED`` false) must lie wholly inside the sequence and, when
    causal, at or below every query row of the program.  With ``DESCRIPTORS``,
    K and V are tensor descriptors over every head's rows, this head's from
    ``row0`` (the sequence a multiple of ``BLOCK_N``)."""
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        if DESCRIPTORS:
            k = K.load([row0 + start_n, 0]).T
        else:
            k_ptrs = K + cols[None, :] * stride_kn + offs_d[:, None]  # kᵀ: HEAD_DIM x BLOCK_N
            if MASKED:
                k = tl.load(k_ptrs, mask=cols[None, :] < N_CTX, other=0.0)
            else:
                k = tl.load(k_ptrs)
        qk = tl.dot(q, k)
        if MASKED:
            if CAUSAL:  # a key at or before a row inside the sequence is inside it too
                valid = offs_m[:, None] >= cols[None, :]
            else:
                valid = cols[None, :] < N_CTX
            qk = qk * qk_scale + tl.where(valid, 0.0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk = qk - m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)  # rescales what the earlier blocks summed
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        if DESCRIPTORS:
            v = V.load([row0 + start_n, 0])
        else:
            v_ptrs = V + cols[:, None] * stride_vn + offs_d[None, :]
            if MASKED:
                v = tl.load(v_ptrs, mask=cols[:, None] < N_CTX, other=0.0)
            else:
                v = tl.load(v_ptrs)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@tilec.jit
def _attn_fwd(Q, K, V, sm_scale, Out, M, H, N_CTX,
              stride_qz, stride_qh, stride_qm, stride_kz, stride_kh, stride_kn,
              stride_vz, stride_vh, stride_vn, stride_oz, stride_oh, stride_om,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
              DESCRIPTORS: tl.constexpr = False):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    row0 = off_hz * N_CTX  # this head's first row among all heads' (DESCRIPTORS)
    if not DESCRIPTORS:
        Q += off_z.to(tl.int64) * stride_qz + off_h.to(tl.int64) * stride_qh
        K += off_z.to(tl.int64) * stride_kz + off_h.to(tl.int64) * stride_kh
        V += off_z.to(tl.int64) * stride_vz + off_h.to(tl.int64) * stride_vh
    Out += off_z.to(tl.int64) * stride_oz + off_h.to(tl.int64) * stride_oh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < N_CTX
    if DESCRIPTORS:
        q = Q.load([row0 + start_m * BLOCK_M, 0])
    else:
        q = tl.load(Q + offs_m[:, None] * stride_qm + offs_d[None, :], mask=row_ok[:, None], other=0.0)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # log2(e): exp(x) = exp2(x * log2(e))
    if CAUSAL:  # keys below the block's first row, then the diagonal band
        full_hi = start_m * BLOCK_M
        masked_hi = tl.minimum(full_hi + BLOCK_M, N_CTX)
    else:  # every whole block of keys, then the ragged last one
        full_hi = N_CTX // BLOCK_N * BLOCK_N
        masked_hi = N_CTX
    acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K, V, stride_kn, stride_vn, 0, full_hi,
                                    offs_m, offs_n, offs_d, N_CTX, qk_scale, row0, BLOCK_N, False, CAUSAL,
                                    DESCRIPTORS)
    acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, K, V, stride_kn, stride_vn, full_hi, masked_hi,
                                    offs_m, offs_n, offs_d, N_CTX, qk_scale, row0, BLOCK_N, True, CAUSAL,
                                    DESCRIPTORS)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    tl.store(M + off_hz * N_CTX + offs_m, m_i, mask=row_ok)
    tl.store(Out + offs_m[:, None] * stride_om + offs_d[None, :], acc.to(Out.dtype.element_ty), mask=row_ok[:, None])


def attention_strides(x) -> tuple:
    """(batch, head, row) strides in elements of a (Z, H, N_CTX, HEAD_DIM) array
    whose rows are contiguous (numpy, ml_dtypes' bf16 or torch)."""
    strides = tuple(s // x.itemsize for s in x.strides) if isinstance(x, np.ndarray) else tuple(x.stride())
    if strides[3] != 1:
        raise ValueError(f"attention needs rows of HEAD_DIM contiguous elements, got strides {strides}")
    return strides[:3]


def launch_attention(kernel, q, k, v, out, lse, causal, sm_scale, block_m=16, block_n=16, num_warps=4,
                     num_stages=2, descriptor=None):
    """``out = softmax(q kᵀ * sm_scale) v`` (rows masked above the diagonal when
    ``causal``) with ``_attn_fwd`` or its Triton twin (``kernel``); q, k, v, out
    of shape (Z, H, N_CTX, HEAD_DIM), ``lse`` (Z * H, N_CTX) float32 gets each
    row's log-sum-exp in base 2 of the scaled logits.  All numpy arrays on the
    host or all device tensors.  With ``descriptor`` (the kernel's language's
    ``TensorDescriptor`` class) q, k and v are read through descriptors over
    all heads' rows: contiguous arrays, N_CTX a multiple of both blocks."""
    Z, H, N_CTX, HEAD_DIM = q.shape
    if causal and block_m % block_n:
        raise ValueError(f"causal attention needs BLOCK_M ({block_m}) to be a multiple of BLOCK_N ({block_n})")
    grid = (tilec.cdiv(N_CTX, block_m), Z * H, 1)
    inputs = (q, k, v)
    if descriptor is not None:
        if N_CTX % block_m or N_CTX % block_n:
            raise ValueError(f"attention through descriptors needs N_CTX ({N_CTX}) to be a multiple of "
                             f"BLOCK_M ({block_m}) and BLOCK_N ({block_n})")
        inputs = tuple(descriptor.from_tensor(x.reshape(Z * H * N_CTX, HEAD_DIM), [block, HEAD_DIM])
                       for x, block in zip(inputs, (block_m, block_n, block_n)))
    kernel[grid](*inputs, sm_scale, out, lse, H, N_CTX,
                 *attention_strides(q), *attention_strides(k), *attention_strides(v), *attention_strides(out),
                 HEAD_DIM=HEAD_DIM, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal, DESCRIPTORS=descriptor is not None,
                 num_warps=num_warps, num_stages=num_stages)


def default_scale(head_dim: int) -> float:
    return 1.0 / math.sqrt(head_dim)


def attention(q, k, v, causal, sm_scale=None, **config):
    """softmax(q kᵀ * sm_scale) v for host arrays q, k, v of shape (Z, H, N_CTX,
    HEAD_DIM) (float16, bfloat16 or float32; ``sm_scale`` defaults to
    1/sqrt(HEAD_DIM)).  Returns the output (q's dtype) and the row log-sum-exp
    in base 2, (Z * H, N_CTX) float32; ``config``: ``launch_attention``'s
    blocks, warps and stages."""
    Z, H, N_CTX, HEAD_DIM = q.shape
    sm_scale = default_scale(HEAD_DIM) if sm_scale is None else sm_scale
    if isinstance(q, np.ndarray):
        out, lse = np.empty_like(q), np.empty((Z * H, N_CTX), np.float32)
    else:  # torch tensors (the host's bf16 arrays, or a GPU's)
        import torch

        out, lse = torch.empty_like(q), torch.empty((Z * H, N_CTX), dtype=torch.float32, device=q.device)
    launch_attention(_attn_fwd, q, k, v, out, lse, causal, sm_scale, **config)
    return out, lse

# The configuration the GPU check and "what tilec does" use (one of
# benchmarks/attention.py's CONFIGS): 128 query rows by 64 keys, 8 warps, 3 stages.
GPU_CONFIG = dict(block_m=128, block_n=64, num_warps=8, num_stages=3)


def reference(q, k, v, causal, sm_scale):
    """softmax(q kᵀ sm_scale) v in float64 from numpy arrays (Z, H, N, D)."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    s = np.einsum("zhmd,zhnd->zhmn", q, k) * sm_scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("zhmn,zhnd->zhmd", p / p.sum(axis=-1, keepdims=True), v)


def check_on_host(checks) -> None:
    rng = np.random.default_rng(0)
    for (Z, H, N, D), causal, dtype in (((1, 2, 64, 16), False, np.float16), ((2, 1, 37, 32), True, np.float16),
                                        ((1, 2, 50, 64), True, np.float32), ((1, 1, 100, 16), False, np.float32)):
        q, k, v = (rng.standard_normal((Z, H, N, D)).astype(dtype) for _ in range(3))
        out, _ = attention(q, k, v, causal, block_m=32, block_n=16)
        checks.close(f"attention {Z}x{H}x{N}x{D} {np.dtype(dtype).name} {'causal' if causal else 'full'} "
                     "against numpy", out, reference(q, k, v, causal, default_scale(D)), rtol=1e-2, atol=1e-2)
    q, k, v = (rng.standard_normal((2, 2, 64, 32)).astype(np.float16) for _ in range(3))
    out, _ = attention(q, k, v, True, block_m=32, block_n=16, descriptor=TensorDescriptor)
    checks.close("attention 2x2x64x32 float16 causal through tensor descriptors against numpy", out,
                 reference(q, k, v, True, default_scale(32)), rtol=1e-2, atol=1e-2)


def check_on_gpu(checks) -> None:
    import torch
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    torch.manual_seed(0)
    for (Z, H, N, D), causal, dtype in (((2, 4, 1024, 64), False, torch.float16),
                                        ((2, 4, 1000, 128), True, torch.float16),
                                        ((1, 8, 777, 128), False, torch.bfloat16),
                                        ((4, 32, 4096, 128), True, torch.float16)):
        q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=dtype) for _ in range(3))
        out, _ = attention(q, k, v, causal, **GPU_CONFIG)
        tol = 1e-2 if dtype == torch.float16 else 3e-2
        checks.close(f"attention {Z}x{H}x{N}x{D} {str(dtype)[6:]} {'causal' if causal else 'full'} against "
                     "torch SDPA", out, sdpa(q, k, v, is_causal=causal), rtol=tol, atol=tol)
    for causal in (False, True):  # the tensor memory accelerator reads q, k and v on an H100
        q, k, v = (torch.randn(2, 8, 2048, 128, device="cuda", dtype=torch.float16) for _ in range(3))
        out, _ = attention(q, k, v, causal, **GPU_CONFIG, descriptor=TensorDescriptor)
        checks.close(f"attention 2x8x2048x128 float16 {'causal' if causal else 'full'} through tensor "
                     "descriptors against torch SDPA", out, sdpa(q, k, v, is_causal=causal), rtol=1e-2, atol=1e-2)


def what_tilec_does(tut) -> None:
    """Compile GPU_CONFIG, head dim 128, fp16, causal, at 4 x 32 x 4096, for an H100, here."""
    Z, H, N, D = 4, 32, 4096, 128
    tut.heading(f"what tilec does: _attn_fwd, BLOCK_M={GPU_CONFIG['block_m']}, BLOCK_N={GPU_CONFIG['block_n']}, "
                f"HEAD_DIM={D}, float16, causal, {GPU_CONFIG['num_warps']} warps, {GPU_CONFIG['num_stages']} "
                f"stages, target {tut.TARGET}")
    x, lse = np.empty(16, np.float16), np.empty(16, np.float32)
    strides = (H * N * D, N * D, D) * 4
    compiled = _attn_fwd.compile(x, x, x, default_scale(D), x, lse, H, N, *strides, HEAD_DIM=D,
                                 BLOCK_M=GPU_CONFIG["block_m"], BLOCK_N=GPU_CONFIG["block_n"], CAUSAL=True,
                                 num_warps=GPU_CONFIG["num_warps"], num_stages=GPU_CONFIG["num_stages"],
                                 target=tut.TARGET)
    tut.show_compiled(compiled, ("for", "dot", "convert_layout", "reduce", "cast", "local_alloc", "async_copy"),
                      ("mma", "wgmma", "ldmatrix", "cp.async", "ex2", "shfl", "bar.sync", "st.shared", "ld.shared",
                       "ld.global", "st.global"), most=60)


def benchmark(tut, out: Path) -> None:
    from benchmarks import attention as attention_benchmark

    tut.heading("benchmark: tilec vs Triton vs torch SDPA (flash), fp16, batch 4, 32 heads, head dims 64 and 128, "
                "causal and not (benchmarks/attention.py)")
    attention_benchmark.main(attention_benchmark.options(["--out", str(out / "attention.json")]))


def main() -> None:
    import tutorial_support

    tutorial_support.run(__doc__, check_on_host, check_on_gpu, what_tilec_does, benchmark)


if __name__ == "__main__":
    main()
