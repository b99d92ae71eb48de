"""A matmul whose operands come through host tensor descriptors (``TensorDescriptor``
arguments): on sm_90 its K loop copies each block with the tensor memory
accelerator (``tilec/backends/nvidia/tma.py``).  The host and GPU tests share it."""
import tilec
import tilec.language as tl


@tilec.jit
def descriptor_matmul(a_desc, b_desc, c_ptr, M, N, K, stride_cm,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([pid_m * BM, k * BK])
        b = b_desc.load([k * BK, pid_n * BN])
        acc = tl.dot(a, b, acc)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    c = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :]
    tl.store(c, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
