"""The AMD backend (``tilec/backends/amd``): kernels compile for CDNA and RDNA
archs to HSA code objects that ld.lld links, and the code object says what
a HIP runtime needs (machine, OS ABI, code object v5, the arch, the kernel's
name, arguments, LDS, registers, wave size); what cannot run on an AMD GPU
is a clear error at compile time.  No AMD GPU is needed (or used)."""
from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl
from backends.amd.amd_helpers import ARCHS_CHECKED, compile_amd, needs_lld, scratch_instructions
from kernels.vector_add import add_kernel
from tilec.backends.amd import msgpack
from tilec.backends.amd.elf import ELFABIVERSION_AMDGPU_HSA_V5, ELFOSABI_AMDGPU_HSA, EM_AMDGPU, MACH
from tilec.backends.amd.target import ARCHS, amdgpu_target, kernel_attributes
from tilec.errors import TilecError

pytestmark = needs_lld
N = 98432  # a multiple of 16: the accesses may be 16-byte vectors


def vectors(n=N):
    x = np.zeros(n, np.float32)
    return x, x.copy(), x.copy(), n


def test_the_archs_have_llvms_data_layout_and_their_wave_size():
    for arch in ARCHS:
        t = amdgpu_target(arch)
        assert t.triple == "amdgcn-amd-amdhsa" and t.cpu == arch
        assert t.data_layout.startswith("e-m:e-p:64:64-p1:64:64") and "-p3:32:32" in t.data_layout
        assert t.warp_size == (32 if arch.startswith("gfx1") else 64)
    assert amdgpu_target("gfx950").max_shared_bytes == 160 * 1024
    assert amdgpu_target("gfx942").max_shared_bytes == 64 * 1024
    with pytest.raises(ValueError, match="unknown AMD arch 'gfx908'"):
        amdgpu_target("gfx908")


def test_kernel_attributes_give_the_workgroup_size():
    assert kernel_attributes(4, 64) == {"amdgpu-flat-work-group-size": "1,256", "uniform-work-group-size": "true"}
    assert kernel_attributes(4, 32)["amdgpu-flat-work-group-size"] == "1,128"
    with pytest.raises(ValueError, match="allow 1 to 16 waves"):
        kernel_attributes(32, 64)
    assert "amdgpu-waves-per-eu" not in kernel_attributes(4, 64)
    assert kernel_attributes(4, 64, 2)["amdgpu-waves-per-eu"] == "2"
    assert kernel_attributes(4, 32, 16)["amdgpu-waves-per-eu"] == "16"
    with pytest.raises(ValueError, match="waves_per_eu=9: a SIMD of 64-lane waves holds at most 8"):
        kernel_attributes(4, 64, 9)


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_waves_per_eu_reaches_the_kernel(arch):
    plain = add_kernel.compile(*vectors(), BLOCK_SIZE=1024, num_warps=4, target=arch)
    asked = add_kernel.compile(*vectors(), BLOCK_SIZE=1024, num_warps=4, waves_per_eu=4, target=arch)
    assert '"amdgpu-waves-per-eu"' not in plain.asm["llir"]
    assert '"amdgpu-waves-per-eu"="4"' in asked.asm["llir"] and asked.metadata.waves_per_eu == 4


@pytest.mark.parametrize("arch", ARCHS_CHECKED)
def test_vector_add_links_into_a_code_object_for_the_arch(arch):
    compiled, code, meta = compile_amd(add_kernel, *vectors(), BLOCK_SIZE=1024, num_warps=4, target=arch)
    assert list(compiled.asm)[-5:] == ["tir-gpu", "llir", "asm", "obj", "hsaco"]
    assert (code.machine, code.os_abi, code.abi_version) == (EM_AMDGPU, ELFOSABI_AMDGPU_HSA,
                                                              ELFABIVERSION_AMDGPU_HSA_V5)
    assert code.mach == MACH[arch] and code.undefined == ()
    # xnack and sramecc "any" on CDNA (EF_AMDGPU_FEATURE_*_ANY_V4): it loads whatever the GPU's
    # setting (gcnArchName gfx942:sramecc+:xnack-, xnack+...); RDNA has neither feature
    assert code.flags & 0xF00 == (0x100 | 0x400 if arch in ("gfx90a", "gfx942", "gfx950") else 0)
    assert meta[".name"] == "add_kernel" and meta[".symbol"] == "add_kernel.kd"
    wave = 32 if arch.startswith("gfx1") else 64
    assert meta[".wavefront_size"] == wave and meta[".max_flat_workgroup_size"] == 4 * wave
    assert meta[".group_segment_fixed_size"] == 0 and meta[".private_segment_fixed_size"] == 0
    assert meta[".vgpr_count"] > 0 and meta[".sgpr_count"] > 0
    explicit = [a for a in meta[".args"] if not a[".value_kind"].startswith("hidden_")]
    assert [(a[".offset"], a[".size"], a[".value_kind"]) for a in explicit] == [
        (0, 8, "global_buffer"), (8, 8, "global_buffer"), (16, 8, "global_buffer"), (24, 4, "by_value")]
    assert compiled.metadata.registers == meta[".vgpr_count"]


@pytest.mark.parametrize("arch", ARCHS_CHECKED)
def test_aligned_accesses_are_16_byte_global_loads_and_stores(arch):
    compiled, _, _ = compile_amd(add_kernel, *vectors(), BLOCK_SIZE=1024, num_warps=4, target=arch)
    asm = compiled.asm["asm"]
    load, store = ("global_load_b128", "global_store_b128") if arch.startswith("gfx1") else (
        "global_load_dwordx4", "global_store_dwordx4")
    # 1024 f32 over 4 waves: each lane moves 4 (wave 64) or 8 (wave 32) of x and y in 16-byte pieces
    pieces = 1024 // (4 * (32 if arch.startswith("gfx1") else 64) * 4)
    assert asm.count(load) == 2 * pieces and asm.count(store) == pieces
    assert scratch_instructions(asm) == [] and "flat_load" not in asm


@tilec.jit
def _grid_size(out_ptr):
    tl.store(out_ptr + tl.program_id(0), tl.num_programs(0) + tl.num_programs(2))


def test_the_grid_size_is_read_from_the_implicit_kernel_arguments():
    compiled, _, meta = compile_amd(_grid_size, np.zeros(4, np.int32), target="gfx942")
    assert "llvm.amdgcn.implicitarg.ptr" in compiled.asm["llir"]
    hidden = {a[".value_kind"]: a[".offset"] for a in meta[".args"] if a[".value_kind"].startswith("hidden_")}
    assert hidden["hidden_block_count_x"] == 8 and hidden["hidden_block_count_z"] == 16


@tilec.jit
def _log_gamma(x_ptr, y_ptr, BLOCK: tl.constexpr):  # a function the portable math library lacks
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.extra.libdevice.lgamma(tl.load(x_ptr + offs)))


def test_a_math_function_no_amd_library_has_is_a_compilation_error_at_its_line():
    x = np.zeros(64, np.float32)
    with pytest.raises(tilec.CompilationError, match=r"test_amd_backend.py:\d+: the AMD backend cannot compute "
                                                     r"`lgammaf` \(C's lgamma on float\) yet"):
        _log_gamma.compile(x, x, BLOCK=64, target="gfx942")


def test_a_code_object_is_checked_for_its_arch_and_kernel():
    from tilec.backends.amd.stages import check_code_object

    hsaco = add_kernel.compile(*vectors(), BLOCK_SIZE=1024, target="gfx942").asm["hsaco"]
    with pytest.raises(TilecError, match=r"not one for gfx90a: the arch is 76, not 63"):
        check_code_object(hsaco, "add_kernel", "gfx90a")
    with pytest.raises(TilecError, match=r"no kernel 'other' in the code object \(it has \['add_kernel'\]\)"):
        check_code_object(hsaco, "other", "gfx942")


@tilec.jit
def _prints(x_ptr):
    tl.device_print("x", tl.load(x_ptr))


def test_device_print_is_a_compilation_error_at_its_line():
    with pytest.raises(tilec.CompilationError, match=r"test_amd_backend.py:\d+.*cannot compile `device_print` yet"):
        _prints.compile(np.zeros(4, np.float32), target="gfx942")


@tilec.jit
def _asserts(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 64))
    tl.device_assert(x > 0, "x must be positive")
    tl.store(x_ptr + tl.arange(0, 64), x + 1)


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_a_failed_device_assert_traps(arch):
    compiled, code, _ = compile_amd(_asserts, np.zeros(64, np.float32), target=arch)
    assert "call void @llvm.trap()" in compiled.asm["llir"] and "s_trap" in compiled.asm["asm"]
    assert code.undefined == ()  # no __assert_fail: the message stays on the host side


@tilec.jit
def _inline_asm(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 64))
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(x_ptr + tl.arange(0, 64), y)


@tilec.jit
def _special(out_ptr, WHICH: tl.constexpr):
    if WHICH == "smid":
        tl.store(out_ptr, tl.extra.cuda.smid())
    else:
        tl.store(out_ptr, tl.extra.cuda.globaltimer())


def test_inline_assembly_and_nvidias_special_registers_are_compilation_errors_at_their_line():
    with pytest.raises(tilec.CompilationError, match=r"test_amd_backend.py:\d+: .*cannot run inline assembly"):
        _inline_asm.compile(np.zeros(64, np.int32), target="gfx942")
    for which, register in (("smid", "processor_id"), ("globaltimer", "global_timer")):
        with pytest.raises(tilec.CompilationError, match=rf"test_amd_backend.py:\d+: the AMD backend cannot compile "
                                                         rf"`{register}` yet"):
            _special.compile(np.zeros(1, np.int64), WHICH=which, target="gfx1100")


def test_msgpack_reads_every_kind_of_value():
    data = bytes([0x84, 0xA1, 0x61, 0x93, 0x01, 0xFF, 0xCC, 0xC8, 0xA1, 0x62, 0xC3,
                  0xD9, 0x01, 0x63, 0xCB]) + np.float64(0.5).byteswap().tobytes() + bytes(
                  [0xA1, 0x64, 0xDC, 0x00, 0x02, 0xC0, 0xD1, 0xFF, 0x00])
    assert msgpack.unpack(data) == {"a": [1, -1, 200], "b": True, "c": 0.5, "d": [None, -256]}
    with pytest.raises(ValueError, match="ends inside"):
        msgpack.unpack(bytes([0x92, 0x01]))
    with pytest.raises(ValueError, match="ends at byte 1 of 2"):
        msgpack.unpack(bytes([0x01, 0x02]))
