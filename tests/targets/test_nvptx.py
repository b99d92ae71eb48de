"""The NVPTX target description and PTX emission through llvmlite."""
from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from tilec.targets import Target
from tilec.backends.nvidia.target import emit_ptx, launch_bounds_attrs, nvptx_target
from tilec.backends.nvidia.target import ARCHS, PTX_FEATURES

llvm = pytest.importorskip("llvmlite.binding")

# Each thread stores its thread index, as a float, at p[tid.x].
KERNEL = """
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

define ptx_kernel void @k(ptr addrspace(1) %p) {ATTRS} {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %i = zext i32 %tid to i64
  %q = getelementptr float, ptr addrspace(1) %p, i64 %i
  %v = uitofp i32 %tid to float
  store float %v, ptr addrspace(1) %q, align 4
  ret void
}
"""


def kernel_ir(attrs: dict[str, str] | None = None) -> str:
    rendered = " ".join(f'"{k}"="{v}"' for k, v in (attrs or {}).items())
    return KERNEL.replace("{ATTRS}", rendered)


@pytest.mark.parametrize("arch", ARCHS)
def test_emits_ptx_for_every_arch(arch):
    ptx = emit_ptx(kernel_ir(), arch)
    assert ".visible .entry k(" in ptx
    assert f".target {arch}\n" in ptx
    assert ".version 8.5\n" in ptx
    assert ".address_size 64" in ptx
    assert "%tid.x" in ptx
    assert "st.global" in ptx


def test_second_emission_of_the_same_text_works():
    # Emission mutates the module; each call must parse a fresh one.
    first = emit_ptx(kernel_ir(), "sm_90")
    assert emit_ptx(kernel_ir(), "sm_90") == first


def test_unknown_arch_names_the_accepted_ones():
    with pytest.raises(ValueError, match="sm_75") as info:
        nvptx_target("sm_75")
    for arch in ARCHS:
        assert arch in str(info.value)
    with pytest.raises(ValueError):
        emit_ptx(kernel_ir(), "sm_100")


def test_bad_ir_raises_instead_of_aborting():
    with pytest.raises(RuntimeError, match="parsing error"):
        emit_ptx("define ptx_kernel void @k( {", "sm_80")
    with pytest.raises(RuntimeError):  # parses, fails the verifier: no terminator
        emit_ptx("define ptx_kernel void @k() {\n  %x = add i32 1, 2\n}", "sm_80")


def test_launch_bounds_reach_the_ptx():
    attrs = launch_bounds_attrs(4)
    assert attrs == {"nvvm.maxntid": "128"}
    assert ".maxntid 128" in emit_ptx(kernel_ir(attrs), "sm_80")


@pytest.mark.parametrize("num_warps", [0, -1, 33])
def test_launch_bounds_reject_impossible_blocks(num_warps):
    with pytest.raises(ValueError, match="warps"):
        launch_bounds_attrs(num_warps)


def test_launch_bounds_reject_non_int():
    with pytest.raises(TypeError):
        launch_bounds_attrs(4.0)


def test_data_layout_is_what_llvm_reports():
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    for arch in ARCHS:
        target = nvptx_target(arch)
        machine = llvm.Target.from_triple(target.triple).create_target_machine(
            cpu=arch, features=PTX_FEATURES
        )
        assert target.data_layout == str(machine.target_data)
    if llvm.llvm_version_info[0] == 22:  # pin what we checked by hand
        assert nvptx_target("sm_90").data_layout == (
            "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
        )


def test_target_facts():
    hopper = nvptx_target("sm_90a")
    assert (hopper.triple, hopper.cpu, hopper.warp_size) == ("nvptx64-nvidia-cuda", "sm_90a", 32)
    assert hopper.default_shared_bytes == 48 * 1024
    limits = {arch: nvptx_target(arch).max_shared_bytes for arch in ARCHS}
    assert limits == {
        "sm_80": 166912,
        "sm_86": 101376,
        "sm_89": 101376,
        "sm_90": 232448,
        "sm_90a": 232448,
    }
    assert len({nvptx_target(arch).name for arch in ARCHS}) == len(ARCHS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        hopper.warp_size = 64
    assert isinstance(hopper, Target) and hash(hopper) == hash(nvptx_target("sm_90a"))


def test_importing_tilec_does_not_load_llvmlite():
    code = "import sys, tilec, tilec.targets; assert 'llvmlite' not in sys.modules, 'loaded'"
    subprocess.run([sys.executable, "-c", code], check=True)
