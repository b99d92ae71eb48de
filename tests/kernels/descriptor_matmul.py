"""Tutorial 03's matmul through host tensor descriptors (``matmul_descriptor_kernel``),
as the host and GPU tests of the tensor memory accelerator call it: on sm_90 its
K loop copies each block with the accelerator (``tilec/backends/nvidia/tma.py``)."""
from kernels.matmul import matmul_descriptor_kernel

from tilec.tools.tensor_descriptor import TensorDescriptor


def descriptor_arguments(a, b, c, block: tuple) -> tuple[tuple, dict]:
    """The kernel's arguments and constexprs for ``c = a @ b`` in ``block = (BM, BN, BK)``
    tiles (programs in plain row-major order: a group of one row of blocks)."""
    bm, bn, bk = block
    M, K = a.shape
    N = b.shape[1]
    args = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]), c, M, N, K, N, 1)
    return args, dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=1, ACTIVATION="")


def compile_descriptor_matmul(a, b, c, block: tuple, **options):
    """The kernel compiled for these arrays (``options``: target, num_warps, num_stages...)."""
    args, constexprs = descriptor_arguments(a, b, c, block)
    return matmul_descriptor_kernel.compile(*args, **constexprs, **options)
