"""Tutorial 03: blocked matrix multiplication ``c = activation(a @ b)``, fp16
in, fp32 accumulate, fp16 out, with grouped program ordering (better L2 reuse
on a GPU), masks on ragged M/N/K and a fused leaky_relu.

``launch_matmul`` runs the kernel (or its Triton twin) on numpy arrays or
device tensors alike, so the host tests, the GPU tests and the benchmark
launch the same configuration the same way.

Run ``python docs/tutorials/03_matrix_multiplication.py`` (``--small``: the host
interpreter only, as CI); the prose is 03_matrix_multiplication.md beside it.
"""
import sys
from pathlib import Path

if __name__ == "__main__":  # run from a checkout: use its tilec and benchmarks/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

import tilec
import tilec.language as tl
from tilec.tools.tensor_descriptor import TensorDescriptor

@tilec.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@tilec.jit
def grouped_block(M, N, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    # Program id -> (pid_m, pid_n), walking GROUP_SIZE_M rows of blocks at a time.
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    return first_pid_m + ((pid % num_pid_in_group) % group_size_m), (pid % num_pid_in_group) // group_size_m


@tilec.jit
def activate(accumulator, ACTIVATION: tl.constexpr):
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    return accumulator


@tilec.jit
def store_block(c_ptr, accumulator, pid_m, pid_n, M, N, stride_cm, stride_cn,
                BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, ACTIVATION: tl.constexpr):
    c = activate(accumulator, ACTIVATION).to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@tilec.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, ACTIVATION: tl.constexpr):
    pid_m, pid_n = grouped_block(M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)

    # Rows/cols past M/N wrap around (their results are masked at the store).
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    store_block(c_ptr, accumulator, pid_m, pid_n, M, N, stride_cm, stride_cn, BLOCK_SIZE_M, BLOCK_SIZE_N, ACTIVATION)


# The same matmul with a, b and c through tensor descriptors (``TensorDescriptor``
# arguments, blocks of BLOCK_SIZE_M x BLOCK_SIZE_K, BLOCK_SIZE_K x BLOCK_SIZE_N and
# BLOCK_SIZE_M x BLOCK_SIZE_N): a block past the tensor's edge reads zeros and
# writes nothing, so neither the K loop nor the store needs a mask, and on an
# H100 each block is one copy by the tensor memory accelerator.
@tilec.jit
def matmul_descriptor_kernel(a_desc, b_desc, c_desc, M, N, K,
                             BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                             GROUP_SIZE_M: tl.constexpr, ACTIVATION: tl.constexpr):
    pid_m, pid_n = grouped_block(M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = a_desc.load([pid_m * BLOCK_SIZE_M, k * BLOCK_SIZE_K])
        b = b_desc.load([k * BLOCK_SIZE_K, pid_n * BLOCK_SIZE_N])
        accumulator = tl.dot(a, b, accumulator)
    c_desc.store([pid_m * BLOCK_SIZE_M, pid_n * BLOCK_SIZE_N], activate(accumulator, ACTIVATION).to(c_desc.dtype))


def element_strides(x) -> tuple:
    """Strides in elements of a numpy array (ml_dtypes' bf16 included) or a torch tensor."""
    if isinstance(x, np.ndarray):
        return tuple(s // x.itemsize for s in x.strides)
    return tuple(x.stride())


def launch_matmul(kernel, a, b, c, activation="", block_m=16, block_n=16, block_k=16, group_size_m=2,
                  num_warps=4, num_stages=3):
    """``c = activation(a @ b)`` with ``matmul_kernel`` or its Triton twin (``kernel``):
    a (M x K) and b (K x N) of any strides, c (M x N) float16, all numpy
    arrays on the host or all device tensors."""
    M, K = a.shape
    N = b.shape[1]
    grid = lambda META: (tilec.cdiv(M, META["BLOCK_SIZE_M"]) * tilec.cdiv(N, META["BLOCK_SIZE_N"]),)  # noqa: E731
    kernel[grid](a, b, c, M, N, K, *element_strides(a), *element_strides(b), *element_strides(c),
                 BLOCK_SIZE_M=block_m, BLOCK_SIZE_N=block_n, BLOCK_SIZE_K=block_k,
                 GROUP_SIZE_M=group_size_m, ACTIVATION=activation, num_warps=num_warps, num_stages=num_stages)


def launch_matmul_descriptors(kernel, a, b, c, descriptor, activation="", block_m=16, block_n=16, block_k=16,
                              group_size_m=2, num_warps=4, num_stages=3):
    """``c = activation(a @ b)`` with ``matmul_descriptor_kernel`` or its Triton twin
    (``kernel``), ``descriptor`` its language's ``TensorDescriptor`` class; a, b
    and c need rows of 16-byte multiples (a tensor descriptor's rule)."""
    M, K = a.shape
    N = b.shape[1]
    grid = lambda META: (tilec.cdiv(M, META["BLOCK_SIZE_M"]) * tilec.cdiv(N, META["BLOCK_SIZE_N"]),)  # noqa: E731
    kernel[grid](descriptor.from_tensor(a, [block_m, block_k]), descriptor.from_tensor(b, [block_k, block_n]),
                 descriptor.from_tensor(c, [block_m, block_n]), M, N, K, BLOCK_SIZE_M=block_m, BLOCK_SIZE_N=block_n, BLOCK_SIZE_K=block_k,
                 GROUP_SIZE_M=group_size_m, ACTIVATION=activation, num_warps=num_warps, num_stages=num_stages)


def float16_like(a, shape):
    """An uninitialized float16 array of ``shape`` from ``a``'s library, on ``a``'s device."""
    if isinstance(a, np.ndarray):
        return np.empty(shape, np.float16)
    import torch

    return torch.empty(shape, dtype=torch.float16, device=a.device)


def matmul(a, b, activation="", **config):
    """a (M x K) @ b (K x N) in float16 (a float32 accumulator), any strides;
    ``config``: ``launch_matmul``'s block sizes, group size, warps and stages."""
    c = float16_like(a, (a.shape[0], b.shape[1]))
    launch_matmul(matmul_kernel, a, b, c, activation, **config)
    return c

# The configuration the GPU check and "what tilec does" use: a 128x256 tile of
# c per program, k 64 at a time, 8 warps, 3 pipeline stages (one of
# benchmarks/matmul.py's CONFIGS).
GPU_CONFIG = dict(block_m=256, block_n=128, block_k=64, group_size_m=8, num_warps=8, num_stages=3)
# fp8 operands take twice the K a step in the same bytes (benchmarks/results/matmul_fp8.json's winner).
FP8_CONFIG = dict(block_m=256, block_n=128, block_k=128, group_size_m=8, num_warps=8, num_stages=3)


def reference(a, b, activation: str) -> np.ndarray:
    """activation(a @ b) in float64, from numpy arrays."""
    c = a.astype(np.float64) @ b.astype(np.float64)
    return np.where(c >= 0, c, 0.01 * c) if activation == "leaky_relu" else c


def check_on_host(checks) -> None:
    rng = np.random.default_rng(0)
    for (M, N, K), activation in (((32, 32, 32), ""), ((33, 20, 45), "leaky_relu"), ((70, 50, 100), "")):
        a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
        b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
        checks.close(f"matmul {M}x{N}x{K} {activation or 'no activation'} against numpy",
                     matmul(a, b, activation), reference(a, b, activation), rtol=1e-2, atol=1e-2)
    a = rng.uniform(-1, 1, (40, 24)).astype(np.float16)
    b = rng.uniform(-1, 1, (40, 36)).astype(np.float16)
    checks.close("matmul of a transposed view (strides (1, 40)) against numpy",
                 matmul(a.T, b), reference(a.T, b, ""), rtol=1e-2, atol=1e-2)
    a = rng.uniform(-1, 1, (70, 104)).astype(np.float16)
    b = rng.uniform(-1, 1, (104, 56)).astype(np.float16)
    c = np.empty((70, 56), np.float16)
    launch_matmul_descriptors(matmul_descriptor_kernel, a, b, c, TensorDescriptor, "leaky_relu", block_k=32)
    checks.close("matmul 70x56x104 through tensor descriptors against numpy", c, reference(a, b, "leaky_relu"),
                 rtol=1e-2, atol=1e-2)


def check_on_gpu(checks) -> None:
    import torch

    torch.manual_seed(0)
    for (M, N, K), activation in (((512, 512, 512), ""), ((1000, 777, 333), "leaky_relu"),
                                  ((4096, 4096, 4096), "")):
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16)
        want = torch.matmul(a, b)
        if activation:
            want = torch.nn.functional.leaky_relu(want)
        checks.close(f"matmul {M}x{N}x{K} {activation or 'no activation'} against torch",
                     matmul(a, b, activation, **GPU_CONFIG), want, rtol=1e-2, atol=1e-2 * K ** 0.5)
    a = torch.randn(1000, 4096, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, 776, device="cuda", dtype=torch.float16)
    c = torch.empty(1000, 776, device="cuda", dtype=torch.float16)
    launch_matmul_descriptors(matmul_descriptor_kernel, a, b, c, TensorDescriptor, **GPU_CONFIG)
    checks.close("matmul 1000x776x4096 through tensor descriptors (the tensor memory accelerator) against torch",
                 c, torch.matmul(a, b), rtol=1e-2, atol=1e-2 * 4096 ** 0.5)
    # fp8 (e4m3) inputs, b stored along K as Triton's fp8 tutorial has it: the
    # same kernel, on the fp8 tensor cores where the GPU has them
    a = torch.randn(2048, 1024, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(512, 1024, device="cuda").to(torch.float8_e4m3fn).T
    checks.close("matmul 2048x512x1024 of float8_e4m3fn against torch in float32",
                 matmul(a, b, **FP8_CONFIG), a.float() @ b.float(), rtol=1e-2, atol=1e-2 * 1024 ** 0.5)


def what_tilec_does(tut) -> None:
    """Compile GPU_CONFIG at 4096^3 (K a multiple of 64) for an H100, here."""
    config = GPU_CONFIG
    tut.heading(f"what tilec does: matmul_kernel, {config['block_m']}x{config['block_n']}x{config['block_k']}, "
                f"{config['num_warps']} warps, {config['num_stages']} stages, target {tut.TARGET}")
    a = np.empty((4096, 4096), np.float16)
    compiled = matmul_kernel.compile(
        a, a, a, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1, BLOCK_SIZE_M=config["block_m"],
        BLOCK_SIZE_N=config["block_n"], BLOCK_SIZE_K=config["block_k"], GROUP_SIZE_M=config["group_size_m"],
        ACTIVATION="", num_warps=config["num_warps"], num_stages=config["num_stages"], target=tut.TARGET)
    tut.show_compiled(compiled, ("local_alloc", "async_copy", "async_commit", "async_wait", "local_load", "dot",
                                 "dot_wait", "cast", "convert_layout", "store"),
                      ("cp.async", "ldmatrix", "mma", "wgmma", "fence.proxy", "bar.sync", "ld.global", "st.global",
                       "st.shared", "ld.shared"), most=24)


def benchmark(tut, out: Path) -> None:
    from benchmarks import matmul as matmul_benchmark

    tut.heading("benchmark: tilec vs Triton vs cuBLAS, fp16, best of 7 configurations (benchmarks/matmul.py)")
    matmul_benchmark.main(matmul_benchmark.options(
        ["--dtypes", "float16", "--shapes", "1024", "2048", "4096", "8192", "--out", str(out / "matmul.json")]))


def main() -> None:
    import tutorial_support

    tutorial_support.run(__doc__, check_on_host, check_on_gpu, what_tilec_does, benchmark)


if __name__ == "__main__":
    main()
