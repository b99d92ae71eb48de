"""Tutorial 03's matmul through host tensor descriptors (``matmul_descriptor_kernel``),
as the host and GPU tests of the tensor memory accelerator call it: on sm_90 its
K loop copies each block with the accelerator (``tilec/backends/nvidia/tma.py``)
and so does its store of ``c`` (``tma_stores.py``).
And ``c = a @ b.T`` with ``b`` loaded as stored (``N x K``) and transposed for
the dot, through pointers and through descriptors: the pipeliner copies such
a block transposed into its slot."""
from kernels.matmul import matmul_descriptor_kernel

import tilec
import tilec.language as tl
from tilec.tools.tensor_descriptor import TensorDescriptor


def descriptor_arguments(a, b, c, block: tuple) -> tuple[tuple, dict]:
    """The kernel's arguments and constexprs for ``c = a @ b`` in ``block = (BM, BN, BK)``
    tiles (programs in plain row-major order: a group of one row of blocks)."""
    bm, bn, bk = block
    M, K = a.shape
    N = b.shape[1]
    args = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
            TensorDescriptor.from_tensor(c, [bm, bn]), M, N, K)
    return args, dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=1, ACTIVATION="")


def compile_descriptor_matmul(a, b, c, block: tuple, **options):
    """The kernel compiled for these arrays (``options``: target, num_warps, num_stages...)."""
    args, constexprs = descriptor_arguments(a, b, c, block)
    return matmul_descriptor_kernel.compile(*args, **constexprs, **options)


@tilec.jit
def matmul_bt_pointers(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """``c = a @ b.T`` with ``b`` an ``N x K`` row-major matrix loaded as is and
    transposed for the dot (attention's ``q @ k.T``)."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rn[:, None] * K + rk[None, :], mask=(rn[:, None] < N) & (rk[None, :] < K), other=0.0)
        acc = tl.dot(a, b.T, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@tilec.jit
def matmul_bt_descriptors(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """``matmul_bt_pointers`` through host tensor descriptors of ``a`` and ``b``."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([pid_m * BM, k]), b_desc.load([pid_n * BN, k]).T, acc)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

