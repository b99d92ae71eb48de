"""Find NVIDIA's `ptxas` and `libdevice.10.bc`, and assemble PTX into a cubin.

Both come from the wheels tilec's `cuda` extra depends on (`cuda12` for CUDA
12 drivers), so `pip install 'tilec[cuda]'` runs every kernel, math included.
Checked with the `nvidia-cuda-nvcc` 13.5.37 wheel (x86-64 Linux), which ships
`nvidia/cu13/bin/ptxas` and pulls in `nvidia-nvvm`, which ships
`nvidia/cu13/nvvm/libdevice/libdevice.10.bc`; `nvidia-cuda-nvcc-cu12` 12.9.86
ships both under `nvidia/cuda_nvcc/` (`WHEEL_DIRS`).
"""
from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tilec.environment import toolchain_file
from tilec.errors import TilecError

# What to install for ptxas and libdevice; every "not found" message says it.
INSTALL_CUDA_TOOLS = ("`pip install 'tilec[cuda]'` (it brings the nvidia-cuda-nvcc wheel; "
                      "`'tilec[cuda12]'` for a CUDA 12 driver)")
_HOW_TO_GET = f"{INSTALL_CUDA_TOOLS}, or set TILEC_PTXAS to a ptxas binary"

# The CUDA 13 and CUDA 12 wheels' folders under the `nvidia` namespace package.
WHEEL_DIRS = ("cu13", "cuda_nvcc")


class PtxasError(TilecError):
    """ptxas is missing, or it rejected the PTX (its stderr is in the message)."""

    def __init__(self, message: str, arch: str | None = None, log: str = ""):
        self.arch, self.log = arch, log
        super().__init__(message)


@dataclass(frozen=True)
class PtxasResult:
    """A cubin and the resources ptxas reported for it (`-v`). With several
    kernels in one module, registers and shared_bytes are the largest of any
    kernel and the spill counts are summed."""

    cubin: bytes
    registers: int
    spill_stores: int  # bytes
    spill_loads: int  # bytes
    shared_bytes: int  # static shared memory
    log: str


def _namespace_dirs(package: str) -> list[Path]:
    """The directories of a (namespace) package, without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    if spec is None or spec.submodule_search_locations is None:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


def _triton_dirs() -> list[Path]:
    """The installed Triton package's directories, found by its distribution's
    metadata as well as by the import system: where ``triton`` resolves to an
    alias of tilec (drop-in mode, Triton's own tests run on tilec), the import
    system finds the alias, not the installed package and its bundled tools."""
    dirs = _namespace_dirs("triton")
    try:
        installed = Path(str(importlib.metadata.distribution("triton").locate_file("triton")))
    except importlib.metadata.PackageNotFoundError:
        return dirs
    return dirs + [installed] if installed not in dirs else dirs


def _wheel_files(relative: str) -> list[Path]:
    """Where the CUDA tool wheels would install ``relative`` (``bin/ptxas``, ...)."""
    return [d / sub / relative for d in _namespace_dirs("nvidia") for sub in WHEEL_DIRS]


def _first_file(candidates) -> Path | None:
    for path in candidates:
        if path.is_file():
            return path
    return None


@functools.cache
def find_ptxas() -> Path | None:
    """ptxas from, in order: $TILEC_PTXAS, the nvidia-cuda-nvcc wheel, Triton's
    bundled copy, PATH. None when there is none."""
    env = toolchain_file("TILEC_PTXAS")
    if env is not None:
        return env
    triton = [d / "backends" / "nvidia" / "bin" / "ptxas" for d in _triton_dirs()]
    found = _first_file(_wheel_files("bin/ptxas") + triton)
    if found is not None:
        return found
    on_path = shutil.which("ptxas")
    return Path(on_path) if on_path else None


@functools.cache
def find_libdevice() -> Path | None:
    """libdevice.10.bc from, in order: $TILEC_LIBDEVICE, the nvidia-nvvm wheel
    (CUDA 13) or nvidia-cuda-nvcc wheel (CUDA 12), Triton's bundled copy."""
    env = toolchain_file("TILEC_LIBDEVICE")
    if env is not None:
        return env
    triton = [d / "backends" / "nvidia" / "lib" / "libdevice.10.bc" for d in _triton_dirs()]
    return _first_file(_wheel_files("nvvm/libdevice/libdevice.10.bc") + triton)


_REGISTERS = re.compile(r"Used (\d+) registers")
_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_SHARED = re.compile(r"(\d+) bytes smem")


def parse_ptxas_log(log: str) -> tuple[int, int, int, int]:
    """(registers, spill_stores, spill_loads, shared_bytes) from `ptxas -v` text."""
    registers = max((int(m) for m in _REGISTERS.findall(log)), default=0)
    spills = _SPILLS.findall(log)
    stores = sum(int(s) for s, _ in spills)
    loads = sum(int(l) for _, l in spills)
    shared = max((int(m) for m in _SHARED.findall(log)), default=0)
    return registers, stores, loads, shared


def assemble(ptx: str, arch: str) -> PtxasResult:
    """Assemble PTX text for `arch` ("sm_80" ... "sm_90a") with `ptxas -v`.

    Raises PtxasError when no ptxas is found or when ptxas fails.
    """
    ptxas = find_ptxas()
    if ptxas is None:
        raise PtxasError(f"no ptxas found to assemble PTX for {arch}: {_HOW_TO_GET}", arch)
    with tempfile.TemporaryDirectory(prefix="tilec-ptxas-") as tmp:
        src, out = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        src.write_text(ptx)
        cmd = [str(ptxas), f"-arch={arch}", "-v", "-o", str(out), str(src)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as exc:
            raise PtxasError(f"cannot run ptxas at {ptxas}: {exc}; {_HOW_TO_GET}", arch) from exc
        log = proc.stdout + proc.stderr
        if proc.returncode != 0 or not out.is_file():
            raise PtxasError(
                f"ptxas ({ptxas}) failed for {arch} with exit code {proc.returncode}:\n{log.strip()}",
                arch,
                log,
            )
        cubin = out.read_bytes()
    registers, stores, loads, shared = parse_ptxas_log(log)
    return PtxasResult(cubin, registers, stores, loads, shared, log)


def ptxas_version(path: Path) -> str:
    """``release 12.8`` from ``ptxas --version``, or what went wrong."""
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return f"cannot run it: {e}"
    release = [line for line in out.splitlines() if "release" in line]
    return release[0].split(",")[1].strip() if release and "," in release[0] else "version unknown"


def toolchain_report() -> list[tuple[str, str]]:
    """``python -m tilec info``'s lines for ptxas and libdevice: where each is, or what to install."""
    ptxas, libdevice = find_ptxas(), find_libdevice()
    return [
        ("ptxas", f"{ptxas} ({ptxas_version(ptxas)})" if ptxas else
         f"not found ({INSTALL_CUDA_TOOLS}, or set TILEC_PTXAS); GPU compiles stop at PTX"),
        ("libdevice", str(libdevice) if libdevice else
         f"not found ({INSTALL_CUDA_TOOLS}, or set TILEC_LIBDEVICE); kernels calling it cannot compile "
         "for GPUs"),
    ]
