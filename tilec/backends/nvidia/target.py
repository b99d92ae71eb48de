"""NVIDIA GPUs through LLVM's NVPTX backend: the per-arch facts and PTX emission.

Checked with llvmlite 0.50 (LLVM 22.1); see the project's shared FACTS.md and docs/internals.md.
"""
from __future__ import annotations

import functools

from tilec.targets.base import MatrixInstruction, Target, llvm_data_layout

TRIPLE = "nvptx64-nvidia-cuda"
WARP_SIZE = 32
MAX_THREADS_PER_BLOCK = 1024
# 64 K 32-bit registers per block on every arch tilec targets (sm_80 ... sm_90a).
REGISTERS_PER_BLOCK = 64 * 1024
# A thread's widest global or shared access: ld/st.v4.b32.
MAX_VECTOR_BYTES = 16

# The tensor cores' mma.sync.m16n8kK, by (operand, accumulator) element types:
# a row of `a` spans eight 32-bit words (K = 16 halves, 8 tf32s from f32 operands, 32 bytes).
MMA_INSTRUCTIONS = tuple(MatrixInstruction(a, acc, 16, 8, k) for a, acc, k in (
    ("f16", "f32", 16), ("bf16", "f32", 16), ("f16", "f16", 16), ("f32", "f32", 8), ("i8", "i32", 32)))
# Ada and Hopper (sm_89 on) add the fp8 forms, e4m3 and e5m2 (Triton's
# float8e4nv and float8e5) into f32, laid out as int8's.
MMA_FP8_INSTRUCTIONS = tuple(MatrixInstruction(a, "f32", 16, 8, 32) for a in ("f8e4nv", "f8e5"))
FP8_MMA_CAPABILITY = 89
# wgmma.mma_async.m64nNk16 (sm_90a only: not in plain sm_90), a warpgroup of
# four warps at once, operands from shared memory; N is any multiple of 8 up to 256
# (for int8, 8 to 32 then multiples of 16). 8-bit operands must be stored along k.
WGMMA_INSTRUCTIONS = tuple(MatrixInstruction(a, acc, 64, 256, k) for a, acc, k in (
    ("f16", "f32", 16), ("bf16", "f32", 16), ("i8", "i32", 32), ("f8e4nv", "f32", 32), ("f8e5", "f32", 32)))
WGMMA_ARCHS = ("sm_90a",)
# What a device of each arch runs best: its arch-specific variant.
ARCH_SPECIFIC = {"sm_90": "sm_90a"}
# cp.async (sm_80 on): global -> shared copies a thread waits for later.
ASYNC_COPIES = True

# The tensor memory accelerator (cp.async.bulk.tensor, mbarrier transactions): sm_90 on.
TMA_CAPABILITY = 90
# PTX ISA 8.5 (CUDA 12.5): new enough for every sm_90/sm_90a instruction we
# emit, old enough for any CUDA 12.5+ driver and ptxas to accept. A newer ISA
# buys nothing on these archs and only narrows which drivers load the PTX.
PTX_FEATURES = "+ptx85"

# Static shared memory is capped at 48 KB per block; beyond that a kernel opts
# in with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, up to the arch's
# cudaDevAttrMaxSharedMemoryPerBlockOptin.
DEFAULT_SHARED_BYTES = 48 * 1024
MAX_SHARED_BYTES = {
    "sm_80": 163 * 1024,  # A100: 166912
    "sm_86": 99 * 1024,  # GA10x: 101376
    "sm_89": 99 * 1024,  # AD10x: 101376
    "sm_90": 227 * 1024,  # H100: 232448
    "sm_90a": 227 * 1024,  # sm_90 plus wgmma/setmaxnreg (not forward compatible)
}
ARCHS = tuple(MAX_SHARED_BYTES)
# What tilec compiles for when nobody named an arch: `python -m tilec compile`,
# and `kernel.compile(...)` for CUDA arrays on a machine with no usable GPU.
DEFAULT_ARCH = "sm_90"


@functools.cache
def nvptx_target(arch: str) -> Target:
    """The Target for NVIDIA compute capability `arch` ("sm_80" ... "sm_90a").

    Asks llvmlite for the data layout (so it always matches the LLVM doing the
    emission); importing this module does not load llvmlite, calling this does.
    """
    if arch not in MAX_SHARED_BYTES:
        raise ValueError(
            f"unknown NVIDIA arch {arch!r}; tilec supports {', '.join(ARCHS)}"
        )
    return Target(
        name=f"nvptx-{arch}",
        triple=TRIPLE,
        data_layout=llvm_data_layout(TRIPLE, arch, PTX_FEATURES),
        cpu=arch,
        features=PTX_FEATURES,
        warp_size=WARP_SIZE,
        default_shared_bytes=DEFAULT_SHARED_BYTES,
        max_shared_bytes=MAX_SHARED_BYTES[arch],
        max_vector_bytes=MAX_VECTOR_BYTES,
        max_threads_per_block=MAX_THREADS_PER_BLOCK,
        registers_per_block=REGISTERS_PER_BLOCK,
        matrix_instructions=MMA_INSTRUCTIONS + (MMA_FP8_INSTRUCTIONS if capability(arch) >= FP8_MMA_CAPABILITY
                                                else ()),
        group_matrix_instructions=WGMMA_INSTRUCTIONS if arch in WGMMA_ARCHS else (),
        async_copies=ASYNC_COPIES,
        bulk_tensor_copies=capability(arch) >= TMA_CAPABILITY,
    )


#: The inline-PTX operand constraint of an integer register of each width.
REGISTER_CONSTRAINTS = {16: "h", 32: "r", 64: "l"}


def capability(arch: str) -> int:
    """The compute capability of ``arch`` as one number (``sm_90a`` -> 90)."""
    return int(arch.removeprefix("sm_").rstrip("a"))


def emit_ptx(llvm_ir: str, arch: str) -> str:
    """PTX text for the LLVM IR module `llvm_ir` compiled for `arch`.

    Kernels are `define ptx_kernel void @name(...)`. Raises ValueError for an
    unknown arch and RuntimeError for IR that does not parse or verify. An
    intrinsic the arch lacks aborts the process ("Cannot select"): codegen must
    never emit one.
    """
    return nvptx_target(arch).emit_assembly(llvm_ir)


def launch_bounds_attrs(num_warps: int) -> dict[str, str]:
    """Function attributes telling NVPTX the most threads a block of this kernel
    has (`.maxntid` in PTX), which lets ptxas budget registers for it."""
    if not isinstance(num_warps, int) or isinstance(num_warps, bool):
        raise TypeError(f"num_warps must be an int, got {type(num_warps).__name__}")
    threads = num_warps * WARP_SIZE
    if not 0 < threads <= MAX_THREADS_PER_BLOCK:
        raise ValueError(
            f"num_warps={num_warps} gives {threads} threads per block; "
            f"NVIDIA allows 1 to {MAX_THREADS_PER_BLOCK // WARP_SIZE} warps"
        )
    return {"nvvm.maxntid": str(threads)}
