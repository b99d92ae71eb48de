"""The NVIDIA backend: NVIDIA GPUs through LLVM's NVPTX target, ``ptxas`` and
the CUDA driver, for the archs of ``target.ARCHS`` (``sm_80`` ... ``sm_90a``).

Its rooms: ``target.py`` (the facts of each arch), ``stages.py`` (the pipeline
after ``optimize``: layouts, LLVM IR, PTX, cubin; the resource checks),
``layouts.py`` and ``pipeline.py`` (the passes only it needs), ``mma.py``,
``async_copy.py``, ``special_registers.py`` and ``libdevice.py`` (its
codegen rules), ``ptxas.py`` and ``ptx_cfg.py`` (its toolchain and the PTX
checks), ``cuda.py``, ``cuda_driver.py`` and ``libcuda.py`` (its launcher,
for arrays on CUDA devices) and ``runtime_driver.py``
(``tilec.runtime.driver.active`` on a GPU).

This package is what the registry imports: it loads none of those rooms but
``target.py`` (no LLVM, no cuda-python); each method imports what it needs.
"""
from __future__ import annotations

from typing import Any, Sequence

from tilec.backends.nvidia.target import ARCHS, DEFAULT_ARCH, capability, nvptx_target
from tilec.targets.base import Target
from tilec.targets.registry import Backend, Launcher, Stage, file_identity


class NvidiaBackend(Backend):
    """NVIDIA GPUs: compiles for every arch of ``ARCHS``, launches arrays on CUDA devices."""

    targets = ARCHS
    default_target = DEFAULT_ARCH
    places = ("cuda",)
    default_stage = "ptx"

    @property
    def stages(self) -> Sequence[Stage]:
        from tilec.backends.nvidia.stages import STAGES

        return STAGES

    def compile(self, compiled: Any) -> None:
        from tilec.backends.nvidia.stages import compile_for_gpu

        compile_for_gpu(compiled)

    def launcher(self) -> Launcher:
        from tilec.backends.nvidia import cuda

        return cuda

    def target(self, name: str) -> Target:
        return nvptx_target(name)

    def language_target(self, name: str) -> tuple[str, Any, int]:
        """CUDA with the compute capability as an int (``sm_90a`` -> 90), as Triton's driver says."""
        return ("cuda", capability(name), self.target(name).warp_size)

    def toolchain(self, target: str) -> tuple:
        """LLVM (llvmlite's version) and the ptxas and libdevice files found (no
        subprocess), so installing ptxas, say, is not answered with a cached
        kernel that has no cubin."""
        import llvmlite

        from tilec.backends.nvidia import ptxas

        return (llvmlite.__version__, file_identity(ptxas.find_ptxas()), file_identity(ptxas.find_libdevice()))

    def driver(self) -> Any:
        from tilec.backends.nvidia import cuda
        from tilec.backends.nvidia.runtime_driver import CudaDriver

        cuda.check_available()
        return CudaDriver()

    def report(self) -> list[tuple[str, str]]:
        from tilec.backends.nvidia import cuda_driver, ptxas

        return cuda_driver.device_report() + ptxas.toolchain_report()

    def why_missing(self, stage: str) -> str:
        """Only the cubin can be missing: it needs ptxas."""
        from tilec.backends.nvidia.ptxas import INSTALL_CUDA_TOOLS

        return f"no ptxas was found: {INSTALL_CUDA_TOOLS}, or set TILEC_PTXAS"


BACKEND = NvidiaBackend()
