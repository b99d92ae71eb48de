"""What the AMD backend's hooks put into LLVM IR and assembly: workgroup ids
and barriers, cross-lane reductions through ``ds_bpermute`` over waves of 64
(CDNA) or 32 (RDNA) lanes, scans inside each lane with the wave across the
other axis, LDS in address space 3 sized in the code object,
atomics with AMDGPU's syncscopes.  Golden facts, checked without a GPU."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tilec
import tilec.language as tl
from backends.amd.amd_helpers import compile_amd, needs_lld, scratch_instructions
from kernels.layer_norm import _layer_norm_fwd_fused
from kernels.softmax import softmax_kernel
from tilec.ir.layouts import Blocked

pytestmark = needs_lld


@tilec.jit
def _row_sum(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + tl.program_id(0), tl.sum(tl.load(x_ptr + offs), axis=0))


@pytest.mark.parametrize("arch, wave", [("gfx942", 64), ("gfx1100", 32)])
def test_a_sum_shuffles_across_the_wave_then_the_waves_through_lds(arch, wave):
    x = np.zeros(1024, np.float32)
    compiled, _, meta = compile_amd(_row_sum, x, x, BLOCK=1024, num_warps=4, target=arch)
    llir = compiled.asm["llir"]
    # a butterfly over the wave: ds_bpermute from lane ^ 1, 2, 4... (byte addresses: 4 x the lane)
    sources = [int(m) for m in re.findall(r"= xor i32 %\S+, (\d+)\n.*@llvm\.amdgcn\.ds\.bpermute", llir)]
    assert sources == [4 << i for i in range(wave.bit_length() - 1)]
    assert "@llvm.nvvm" not in llir
    assert 'fence syncscope("workgroup") release' in llir and 'fence syncscope("workgroup") acquire' in llir
    asm = compiled.asm["asm"]
    assert "ds_bpermute_b32" in asm and "s_barrier" in asm
    # the 4 waves' partial sums meet in LDS: a static array the code object reports
    assert "addrspace(3) global [16 x i8]" in llir and meta[".group_segment_fixed_size"] == 16
    assert meta[".wavefront_size"] == wave


@tilec.jit
def _cumsum(x_ptr, out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr, AXIS: tl.constexpr):
    offs = tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :]
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=AXIS))


@pytest.mark.parametrize("arch, wave", [("gfx942", 64), ("gfx1100", 32)])
@pytest.mark.parametrize("axis", [0, 1])
def test_a_scan_runs_in_each_lane_with_the_waves_lanes_across_the_other_axis(arch, wave, axis):
    x = np.zeros(128 * 64, np.float32)
    compiled, _, meta = compile_amd(_cumsum, x, x, ROWS=128, COLS=64, AXIS=axis, num_warps=4, target=arch)
    scan = next(line for line in compiled.asm["tir-gpu"].splitlines() if " = scan " in line)
    spt, tpw = (tuple(int(n) for n in g.split(", "))
                for g in re.search(r"blocked<\[([\d, ]+)\], \[([\d, ]+)\]", scan).groups())
    # the scanned axis whole in each lane's registers, the wave's lanes along the other one
    assert spt[axis] == (128, 64)[axis] and tpw[axis] == 1 and tpw[1 - axis] == wave
    assert "ds.bpermute" not in compiled.asm["llir"] and scratch_instructions(compiled.asm["asm"]) == []
    assert meta[".wavefront_size"] == wave


@pytest.mark.parametrize("arch, wave", [("gfx90a", 64), ("gfx1100", 32)])
def test_layouts_spread_a_tile_over_waves_of_the_arch(arch, wave):
    x = np.zeros(1 << 16, np.float32)
    compiled = softmax_kernel.compile(x, x, 4096, 4096, 4096, BLOCK_SIZE=4096, num_warps=8, target=arch)
    layouts = {l for l in re.findall(r"blocked<[^>]*>", compiled.asm["tir-gpu"])}
    assert layouts == {f"blocked<[4], [{wave}], [8], [0]>"}, layouts
    assert Blocked((4,), (wave,), (8,), (0,)).spt == (4,)


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_softmax_and_layer_norm_compile_without_spills(arch):
    f32, f16 = np.zeros(1 << 20, np.float32), np.zeros(1 << 20, np.float16)
    soft, _, soft_meta = compile_amd(softmax_kernel, f32, f32, 1000, 1000, 1000, BLOCK_SIZE=1024, num_warps=4,
                                     target=arch)
    norm, _, norm_meta = compile_amd(_layer_norm_fwd_fused, f16, f16, f16, f16, f32, f32, 8192, 8192, 1e-5,
                                     BLOCK_SIZE=8192, num_warps=8, target=arch)
    for compiled, meta in ((soft, soft_meta), (norm, norm_meta)):
        assert meta[".private_segment_fixed_size"] == 0 and scratch_instructions(compiled.asm["asm"]) == []
    assert "v_exp_f32" in soft.asm["asm"]  # exp through the hardware's exp2, no library call


@tilec.jit
def _exp2(x_ptr, out_ptr, BASE_E: tl.constexpr):
    offs = tl.arange(0, 64)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.exp(x) if BASE_E else tl.exp2(x))


@pytest.mark.parametrize("arch", ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"])
def test_exp2_is_tritons_bare_v_exp_f32_and_exp_keeps_subnormals(arch):
    # Triton's AMD exp2 (its default __HIP_FTZ) is llvm.amdgcn.exp2.f32: v_exp_f32 alone, which reads
    # subnormal inputs as 0 and flushes results under 2^-126; llvm.exp2.f32 would scale around it
    # (x < -126: exp2(x + 64) * 2^-64, a v_ldexp_f32), which tl.exp keeps, as Triton's does
    x = np.zeros(64, np.float32)
    two, _, _ = compile_amd(_exp2, x, x, BASE_E=False, num_warps=1, target=arch)
    assert "@llvm.amdgcn.exp2.f32" in two.asm["llir"] and "@llvm.exp2" not in two.asm["llir"]
    assert "v_exp_f32" in two.asm["asm"] and "v_ldexp_f32" not in two.asm["asm"]
    e, _, _ = compile_amd(_exp2, x, x, BASE_E=True, num_warps=1, target=arch)
    assert "@llvm.exp2.f32" in e.asm["llir"] and "@llvm.amdgcn.exp2" not in e.asm["llir"]
    assert "v_exp_f32" in e.asm["asm"] and "v_ldexp_f32" in e.asm["asm"]
    # f16 goes through the f32 instruction and rounds once
    h = np.zeros(64, np.float16)
    half, _, _ = compile_amd(_exp2, h, h, BASE_E=False, num_warps=1, target=arch)
    assert "@llvm.amdgcn.exp2.f32" in half.asm["llir"]


@tilec.jit
def _exact_math(x_ptr, n_ptr, out_ptr, FN: tl.constexpr):
    offs = tl.arange(0, 64)
    x, n = tl.load(x_ptr + offs), tl.load(n_ptr + offs)
    if FN == "copysign":
        y = tl.extra.libdevice.copysign(x, x - 1)
    elif FN == "ldexp" or FN == "scalbn":
        y = getattr(tl.extra.libdevice, FN)(x, n)
    else:
        y = getattr(tl.extra.libdevice, FN)(x)
    tl.store(out_ptr + offs, y)


# C's exact functions the AMDGPU target selects: (function, LLVM intrinsic, an instruction of it)
EXACT = [("rint", "llvm.rint", "v_rndne"), ("nearbyint", "llvm.nearbyint", "v_rndne"),
         ("trunc", "llvm.trunc", "v_trunc"), ("round", "llvm.round", "v_trunc"),
         ("copysign", "llvm.copysign", "v_bfi_b32"), ("ldexp", "llvm.ldexp", "v_ldexp"),
         ("scalbn", "llvm.ldexp", "v_ldexp")]


@pytest.mark.parametrize("arch", ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"])
def test_exact_c_functions_are_the_targets_own_instructions(arch):
    # no library call (none links on an AMD GPU): LLVM's intrinsics, exact as C's, selected on every arch
    for dtype, llvm_type in ((np.float32, "f32"), (np.float64, "f64")):
        x = np.zeros(64, dtype)
        for fn, intrinsic, instruction in EXACT:
            compiled, code, _ = compile_amd(_exact_math, x, np.zeros(64, np.int32), x, FN=fn, num_warps=1,
                                            target=arch)
            called = set(re.findall(r"call \S+ @(llvm\.(?!amdgcn)[\w.]+)\(", compiled.asm["llir"]))
            assert called == {f"{intrinsic}.{llvm_type}" + (".i32" if intrinsic == "llvm.ldexp" else "")}, called
            assert code.undefined == ()
            # a uniform f32 may round on the scalar unit (gfx1201: s_rndne_f32)
            assert re.search(rf"^\s+[vs]{instruction[1:]}", compiled.asm["asm"], re.M), (fn, llvm_type)


@tilec.jit
def _atomics(ptr, out_ptr):
    old = tl.atomic_add(ptr, 1.0, sem="relaxed", scope="gpu")
    tl.atomic_max(ptr + 1, 3, sem="acq_rel", scope="cta")
    tl.atomic_cas(ptr + 2, 0, 1, sem="acquire", scope="sys")
    tl.store(out_ptr, old)


# The global atomics each arch's code holds: f32 add and max on the hardware where the
# arch has them for any memory (else a compare-and-swap loop, as LLVM expands them:
# gfx90a's f32 add does not work on fine-grained memory), the CAS itself everywhere
ATOMIC_INSTRUCTIONS = {
    "gfx90a": {"global_atomic_cmpswap"},
    "gfx942": {"global_atomic_add_f32", "global_atomic_cmpswap"},
    "gfx950": {"global_atomic_add_f32", "global_atomic_cmpswap"},
    "gfx1100": {"global_atomic_cmpswap_b32"},
    "gfx1201": {"global_atomic_add_f32", "global_atomic_max_num_f32", "global_atomic_cmpswap_b32"},
}


@pytest.mark.parametrize("arch", list(ATOMIC_INSTRUCTIONS))
def test_atomics_carry_amdgpu_syncscopes(arch):
    compiled, _, _ = compile_amd(_atomics, np.zeros(4, np.float32), np.zeros(1, np.float32), target=arch)
    llir = compiled.asm["llir"]
    assert re.search(r'atomicrmw fadd ptr addrspace\(1\) %\S+, float 1\.0+e\+00 syncscope\("agent"\) monotonic', llir)
    assert 'syncscope("workgroup")' in llir
    assert re.search(r"atomicrmw fmax ptr addrspace\(1\) %\S+, float 3\.0+e\+00 syncscope\(\"workgroup\"\)", llir)
    # sys: no syncscope, the whole system (1.0 as the float's bits)
    assert re.search(r"cmpxchg ptr addrspace\(1\) %\S+, i32 0, i32 1065353216 acquire acquire", llir)
    atomics = set(re.findall(r"^\s+((?:global|flat|buffer)_atomic\w*)", compiled.asm["asm"], re.M))
    assert atomics == ATOMIC_INSTRUCTIONS[arch]
