"""AMD GPUs through LLVM's AMDGPU target: the facts of each arch.

Checked with llvmlite 0.50 (LLVM 22.1), without an AMD GPU: the project's
shared FACTS.md and docs/amd.md say what was checked and how.  CDNA
(gfx90a, gfx942, gfx950) runs waves of 64 lanes and has MFMA matrix
instructions; RDNA3 (gfx1100) and RDNA4 (gfx1201) run waves of 32 (the
``+wavefrontsize32`` feature) with WMMA instead.  Importing this module does
not load llvmlite; ``amdgpu_target`` does.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from tilec.targets.base import MatrixInstruction, Target, llvm_data_layout

TRIPLE = "amdgcn-amd-amdhsa"
# HSA code object v5 (ROCm 5.x on): the module flag ``amdhsa_code_object_version``.
CODE_OBJECT_VERSION = 500
MAX_THREADS_PER_BLOCK = 1024
# A thread's widest global access: global_load_dwordx4.
MAX_VECTOR_BYTES = 16
LDS_BYTES = 64 * 1024
# The most waves a SIMD holds (LLVM's getMaxWavesPerEU): 8 on CDNA2-4, 16 on RDNA3-4 (wave32).
MAX_WAVES_PER_EU = {64: 8, 32: 16}


@dataclass(frozen=True)
class ArchFacts:
    """What differs between the archs tilec compiles for."""

    family: str  # "cdna" or "rdna"
    wave_size: int
    lds_bytes: int  # LDS a workgroup may allocate
    features: str  # LLVM features
    # the matrix instructions a dot runs on, by (operand, accumulator) element types
    matrix: tuple[MatrixInstruction, ...]
    fp8: str  # which fp8 formats the hardware converts: "fnuz" (gfx942), "ocp" (gfx950, gfx12), "" none
    # whose operand and result layouts its instructions use (``matrix.py``):
    # "mfma" (CDNA), "wmma11" (RDNA3), "wmma12" (RDNA4)
    matrix_unit: str


# The matrix instructions a dot runs on (``matrix.py`` names them), by
# (operand, accumulator) element types, in the order a dot tries them (the
# first whose tile and depth fit): the 32x32 forms before the 16x16 ones
# (Triton's heuristic: 32 for large tiles; ``matrix_instr_nonkdim`` puts one
# size first).  MFMA f16/bf16 32x32x8 and 16x16x16 on every CDNA; int8
# 32x32x8/16x16x16 on gfx90a, 32x32x16/16x16x32 on gfx942 and gfx950;
# gfx942 alone has xf32 (f32 operands rounded to tf32: 32x32x4, 16x16x8) and
# fp8 in its "fnuz" formats (32x32x16, 16x16x32).  gfx950 (CDNA4) adds the
# 8-wide f16/bf16 forms (32x32x16, 16x16x32), int8 32x32x32 and 16x16x64,
# and takes fp8 in the OCP formats (``f8e4nv``, ``f8e5``) on the intrinsics
# that are fnuz on gfx942; it has no xf32.  Each arch gets only what it has:
# an intrinsic the arch lacks aborts the process inside LLVM.
def _matrix(*facts: tuple[str, str, int], tile: int = 16) -> tuple[MatrixInstruction, ...]:
    """The ``tile`` x ``tile`` instructions of facts ``(operand, accumulator, k)``."""
    return tuple(MatrixInstruction(a, acc, tile, tile, k) for a, acc, k in facts)


_HALVES = (("f16", "f32", 16), ("bf16", "f32", 16))
_HALVES32 = (("f16", "f32", 8), ("bf16", "f32", 8))
_GFX90A = _matrix(*_HALVES32, ("i8", "i32", 8), tile=32) + _matrix(*_HALVES, ("i8", "i32", 16))
_GFX942 = (_matrix(*_HALVES32, ("i8", "i32", 16), ("f32", "f32", 4), ("f8e4b8", "f32", 16), ("f8e5b16", "f32", 16),
                   tile=32)
           + _matrix(*_HALVES, ("i8", "i32", 32), ("f32", "f32", 8), ("f8e4b8", "f32", 32), ("f8e5b16", "f32", 32)))
_GFX950 = (_matrix(*_HALVES, *_HALVES32, ("i8", "i32", 32), ("i8", "i32", 16), ("f8e4nv", "f32", 16),
                   ("f8e5", "f32", 16), tile=32)
           + _matrix(("f16", "f32", 32), ("bf16", "f32", 32), *_HALVES)
           + _matrix(("i8", "i32", 64), ("i8", "i32", 32), ("f8e4nv", "f32", 32), ("f8e5", "f32", 32)))
# RDNA3's WMMA (f16, bf16, iu8: 16 values a lane, lanes 16-31 a copy of
# lanes 0-15's) and RDNA4's (the same types and OCP fp8: 8 values a lane,
# the two halves of the wave half of ``k`` each; results in other rows).
_WMMA = _matrix(*_HALVES, ("i8", "i32", 16))
_WMMA12 = _matrix(*_HALVES, ("i8", "i32", 16), ("f8e4nv", "f32", 16), ("f8e5", "f32", 16))

ARCH_FACTS = {
    "gfx90a": ArchFacts("cdna", 64, LDS_BYTES, "", _GFX90A, "", "mfma"),
    "gfx942": ArchFacts("cdna", 64, LDS_BYTES, "", _GFX942, "fnuz", "mfma"),
    "gfx950": ArchFacts("cdna", 64, 160 * 1024, "", _GFX950, "ocp", "mfma"),
    "gfx1100": ArchFacts("rdna", 32, LDS_BYTES, "+wavefrontsize32", _WMMA, "", "wmma11"),
    "gfx1201": ArchFacts("rdna", 32, LDS_BYTES, "+wavefrontsize32", _WMMA12, "ocp", "wmma12"),
}
ARCHS = tuple(ARCH_FACTS)
# What tilec compiles for when nobody named an arch (MI300).
DEFAULT_ARCH = "gfx942"


@functools.cache
def amdgpu_target(arch: str) -> Target:
    """The Target for AMD GPU ``arch`` (``gfx90a`` ... ``gfx1201``); the data
    layout is LLVM's own for it."""
    facts = arch_facts(arch)
    return Target(
        name=f"amdgcn-{arch}",
        triple=TRIPLE,
        data_layout=llvm_data_layout(TRIPLE, arch, facts.features),
        cpu=arch,
        features=facts.features,
        warp_size=facts.wave_size,
        default_shared_bytes=facts.lds_bytes,
        max_shared_bytes=facts.lds_bytes,
        max_vector_bytes=MAX_VECTOR_BYTES,
        max_threads_per_block=MAX_THREADS_PER_BLOCK,
        # 512 VGPRs a SIMD lane on CDNA (256 arch + 256 acc), 1536 on RDNA3 (wave32):
        # the register check reads the code object's own counts (stages.check_registers)
        registers_per_block=512 * MAX_THREADS_PER_BLOCK,
        matrix_instructions=facts.matrix,
    )


def arch_facts(arch: str) -> ArchFacts:
    """The ``ArchFacts`` of ``arch``; a ValueError naming the archs for an unknown one."""
    facts = ARCH_FACTS.get(arch)
    if facts is None:
        raise ValueError(f"unknown AMD arch {arch!r}; tilec supports {', '.join(ARCHS)}")
    return facts


def kernel_attributes(num_warps: int, wave_size: int, waves_per_eu: int = 0) -> dict[str, str]:
    """Function attributes of the kernel: the workgroup size it is launched
    with (``amdgpu-flat-work-group-size``: LLVM budgets registers for it),
    that every workgroup is full (``uniform-work-group-size``: the launcher
    only launches whole workgroups) and, when asked (Triton's
    ``waves_per_eu``), how many of its waves a SIMD should hold at once
    (``amdgpu-waves-per-eu``: LLVM keeps the registers a wave uses within
    that share)."""
    if not isinstance(num_warps, int) or isinstance(num_warps, bool):
        raise TypeError(f"num_warps must be an int, got {type(num_warps).__name__}")
    threads = num_warps * wave_size
    if not 0 < threads <= MAX_THREADS_PER_BLOCK:
        raise ValueError(f"num_warps={num_warps} gives {threads} threads per workgroup; AMD GPUs of "
                         f"{wave_size}-lane waves allow 1 to {MAX_THREADS_PER_BLOCK // wave_size} waves")
    if waves_per_eu > MAX_WAVES_PER_EU[wave_size]:
        raise ValueError(f"waves_per_eu={waves_per_eu}: a SIMD of {wave_size}-lane waves holds at most "
                         f"{MAX_WAVES_PER_EU[wave_size]}")
    attributes = {"amdgpu-flat-work-group-size": f"1,{threads}", "uniform-work-group-size": "true"}
    if waves_per_eu:
        attributes["amdgpu-waves-per-eu"] = str(waves_per_eu)
    return attributes
