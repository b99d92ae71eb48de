"""The AMD backend: AMD GPUs through LLVM's AMDGPU target and ld.lld, for the
archs of ``target.ARCHS`` (CDNA ``gfx90a``, ``gfx942``, ``gfx950``; RDNA3
``gfx1100``, RDNA4 ``gfx1201``).

Its rooms: ``target.py`` (the facts of each arch), ``stages.py`` (the
pipeline after ``optimize``: layouts, LLVM IR, assembly, object, code object;
its checks), ``lowering.py`` (its ``TargetLowering``), ``matrix.py`` (dots
on MFMA and WMMA), ``lld.py`` (the linker), ``elf.py`` and ``msgpack.py``
(reading a code object and its metadata), ``kernargs.py`` (the kernel
argument buffer) and ``hip.py`` (its launcher, through hip-python, for arrays
on ROCm devices).

Compiling needs no GPU; nothing of it has run on an AMD GPU yet (docs/amd.md
says what was checked and how).  This package is what the registry imports:
it loads none of those rooms but ``target.py`` (no LLVM, no hip-python).
"""
from __future__ import annotations

from typing import Any, Sequence

from tilec.backends.amd.target import ARCHS, DEFAULT_ARCH, amdgpu_target, arch_facts
from tilec.errors import TilecError
from tilec.targets.base import Target
from tilec.targets.registry import Backend, Launcher, Stage, file_identity


class AmdBackend(Backend):
    """AMD GPUs: compiles for every arch of ``ARCHS``, launches arrays on ROCm devices."""

    targets = ARCHS
    default_target = DEFAULT_ARCH
    places = ("rocm",)
    default_stage = "asm"

    @property
    def stages(self) -> Sequence[Stage]:
        from tilec.backends.amd.stages import STAGES

        return STAGES

    def compile(self, compiled: Any) -> None:
        from tilec.backends.amd.stages import compile_for_amd

        compile_for_amd(compiled)

    def launcher(self) -> Launcher:
        from tilec.backends.amd import hip

        return hip

    def target(self, name: str) -> Target:
        return amdgpu_target(name)

    def language_target(self, name: str) -> tuple[str, Any, int]:
        """HIP with the arch's name, as Triton's driver says on ROCm."""
        return ("hip", name, arch_facts(name).wave_size)

    def toolchain(self, target: str) -> tuple:
        """LLVM (llvmlite's version) and the ld.lld found (no subprocess)."""
        import llvmlite

        from tilec.backends.amd import lld

        return (llvmlite.__version__, file_identity(lld.lld_file()))

    def driver(self) -> Any:
        """No ``tilec.runtime.driver`` for AMD GPUs yet: why kernels cannot run
        on one here, or that launching goes through ``kernel[grid]`` only."""
        from tilec.backends.amd import hip

        hip.check_available()
        raise TilecError("tilec.runtime.driver has no AMD driver yet: launch kernels on ROCm arrays with kernel[grid]")

    def report(self) -> list[tuple[str, str]]:
        from tilec.backends.amd import hip, lld

        return hip.device_report() + lld.toolchain_report()

    def why_missing(self, stage: str) -> str:
        """Only the code object can be missing: it needs ld.lld."""
        from tilec.backends.amd.lld import INSTALL_LLD

        return f"no ld.lld was found: {INSTALL_LLD}, or set TILEC_LLD"


BACKEND = AmdBackend()
