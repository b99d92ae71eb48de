"""``kernel.compile(..., target=...)`` and the NVIDIA pipeline (``backends/nvidia/stages.py``):
every stage's output, metadata from ptxas, target choice and errors.  Needs no
GPU and no driver: this runs on CI (ptxas from the nvidia-cuda-nvcc wheel)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from launch.kernels import add_kernel, fresh, scalars_kernel, transpose_kernel
from tilec.errors import OutOfResources
from tilec.backends.nvidia import cuda, stages as nvidia
from tilec.backends.nvidia import ptxas
from tilec.backends.nvidia.target import ARCHS
from tilec.targets import registry


def vectors(n=4096):
    x = np.zeros(n, np.float32)
    return x, x.copy(), x.copy(), n


@pytest.fixture(scope="module")
def compiled_sm90():
    return fresh(add_kernel).compile(*vectors(), target="sm_90")


def test_every_stage_is_kept(compiled_sm90):
    k = compiled_sm90
    assert list(k.asm) == ["tir", "tir-opt", "tir-gpu", "llir", "ptx", "cubin"]
    assert [s.name for s in nvidia.STAGES] == ["tir-gpu", "llir", "ptx", "cubin"]
    assert registry.backend_for("sm_90").stages is nvidia.STAGES
    assert "blocked<" in k.asm["tir-gpu"] and "blocked<" not in k.asm["tir-opt"]
    assert "define ptx_kernel void @add_kernel(" in k.asm["llir"]
    assert ".visible .entry add_kernel(" in k.asm["ptx"] and ".target sm_90" in k.asm["ptx"]
    assert "ld.global.v4" in k.asm["ptx"]  # 16-byte-aligned, contiguous: vectorized
    assert k.asm["cubin"][:4] == b"\x7fELF"


def test_metadata_from_ptxas(compiled_sm90):
    m = compiled_sm90.metadata
    assert (m.name, m.target, m.num_warps, m.num_stages, m.shared) == ("add_kernel", "sm_90", 4, 3, 0)
    assert 0 < m.registers <= 255 and m.spill_stores == 0 and m.spill_loads == 0


@pytest.mark.parametrize("arch", ARCHS)
def test_every_arch(arch):
    k = fresh(add_kernel).compile(*vectors(), target=arch, num_warps=8)
    assert re.search(rf"^\.target {arch}$", k.asm["ptx"], re.M) and ".maxntid 256" in k.asm["ptx"]
    assert k.asm["cubin"][:4] == b"\x7fELF" and k.metadata.target == arch


def test_scalar_parameters():
    k = fresh(scalars_kernel).compile(np.zeros(1, np.int64), 7, 2**40, 0.5, True, target="sm_80")
    params = re.search(r"\.entry scalars_kernel\((.*?)\)", k.asm["ptx"], re.S).group(1)
    assert [p.split()[1] for p in params.strip().split(",\n")] == [".u64", ".u32", ".u64", ".f32", ".u8"]


def test_unknown_target_lists_the_valid_ones():
    with pytest.raises(ValueError, match=re.escape("unknown target 'sm_75'; tilec compiles for host, sm_80, sm_86, "
                                                   "sm_89, sm_90, sm_90a, cpu, cpu-streaming, aarch64, gfx90a")):
        fresh(add_kernel).compile(*vectors(), target="sm_75")
    assert registry.target_names()[:len(ARCHS) + 2] == ("host",) + ARCHS + ("cpu",)


def test_host_arrays_compile_for_the_host_unless_told():
    k = fresh(add_kernel)
    host = k.compile(*vectors())
    assert host.target == "host" and list(host.asm) == ["tir", "tir-opt"] and host.metadata.registers is None
    assert k.compile(*vectors(), target="host") is host


def test_variants_are_cached_per_target():
    k = fresh(add_kernel)
    a = k.compile(*vectors(), target="sm_80")
    assert k.compile(*vectors(), target="sm_80") is a
    assert k.compile(*vectors(), target="sm_90") is not a and len(k.cache) == 2


class FakeCudaArray:
    def __init__(self):
        self.__cuda_array_interface__ = {"shape": (8,), "typestr": "<f4", "data": (0x7F0000000000, False),
                                         "version": 3}


def test_cuda_arrays_without_a_gpu_compile_for_sm_90(monkeypatch):
    monkeypatch.setattr(cuda, "available", lambda: False)
    assert fresh(add_kernel).compile(FakeCudaArray(), FakeCudaArray(), FakeCudaArray(), 64).target == "sm_90"


def test_without_ptxas_the_pipeline_stops_at_ptx(monkeypatch):
    monkeypatch.setattr(ptxas, "find_ptxas", lambda: None)
    k = fresh(add_kernel).compile(*vectors(), target="sm_90")
    assert "cubin" not in k.asm and ".visible .entry add_kernel(" in k.asm["ptx"]
    assert k.metadata.registers is None and k.metadata.spill_stores is None


def test_shared_memory_is_measured_and_bounded():
    x = np.zeros(256 * 256, np.float32)
    k = fresh(transpose_kernel).compile(x, x, N=128, target="sm_90", num_warps=8)
    assert k.metadata.shared == 128 * 128 * 4
    with pytest.raises(OutOfResources, match=re.escape(
            "kernel `transpose_kernel` needs 262144 bytes of shared memory per block on sm_90, over the limit of "
            "232448; use smaller blocks or fewer num_stages")) as e:
        fresh(transpose_kernel).compile(x, x, N=256, target="sm_90", num_warps=32)
    assert (e.value.resource, e.value.needed, e.value.limit) == ("shared memory", 262144, 232448)
    fresh(transpose_kernel).compile(x, x, N=128, target="sm_86", num_warps=8)  # 64 KB fits in 99 KB


def test_registers_are_bounded(monkeypatch):
    real = ptxas.assemble

    def greedy(ptx, arch):
        result = real(ptx, arch)
        return ptxas.PtxasResult(result.cubin, 255, 0, 0, 0, result.log)

    monkeypatch.setattr(ptxas, "assemble", greedy)
    assert fresh(add_kernel).compile(*vectors(), target="sm_90", num_warps=8).metadata.registers == 255
    with pytest.raises(OutOfResources, match=re.escape(
            "kernel `add_kernel` needs 255 registers per thread x 512 threads = 130560 registers per block, "
            "over the limit of 65536; use fewer num_warps or smaller blocks")):
        fresh(add_kernel).compile(*vectors(), target="sm_90", num_warps=16)
