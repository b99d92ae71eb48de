"""ld.lld, which turns LLVM's AMDGPU object into an HSA code object.

Found, in order: ``$TILEC_LLD``; the ``ziglang`` wheel's (its ``zig`` binary
run as ``zig ld.lld``, what ``python -m ziglang ld.lld`` runs without a
Python start-up; LLD 22; the ``amd`` extra installs it); ROCm's
(``$ROCM_PATH``/``/opt/rocm``, ``llvm/bin/ld.lld``).  Linking takes a
fraction of a second and needs no GPU.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from tilec.environment import toolchain_file
from tilec.errors import TilecError

INSTALL_LLD = "install tilec's `amd` extra (pip install 'tilec[amd]', which brings ld.lld in the ziglang wheel)"
ROCM_LLDS = ("/opt/rocm/llvm/bin/ld.lld",)
LINK_TIMEOUT_S = 120


@functools.cache
def find_lld() -> Optional[tuple[str, ...]]:
    """The command that runs ld.lld (a path, or the ziglang module's), None if there is none."""
    env = toolchain_file("TILEC_LLD")
    if env is not None:
        return (str(env),)
    zig = _ziglang_lld()
    if zig is not None:
        return zig
    rocm = os.environ.get("ROCM_PATH")
    for path in ([f"{rocm}/llvm/bin/ld.lld"] if rocm else []) + list(ROCM_LLDS):
        if Path(path).is_file():
            return (path,)
    return None


def _ziglang_lld() -> Optional[tuple[str, ...]]:
    spec = importlib.util.find_spec("ziglang")
    if spec is None or not spec.submodule_search_locations:
        return None
    zig = Path(next(iter(spec.submodule_search_locations)), "zig")
    return (str(zig), "ld.lld") if zig.is_file() else None


def lld_file() -> Optional[Path]:
    """The file whose identity keys the cache: ld.lld's (or zig's) path."""
    command = find_lld()
    return None if command is None else Path(command[0])


def link(obj: bytes, kernel: str) -> bytes:
    """The HSA code object ``ld.lld -shared`` makes of AMDGPU object ``obj``."""
    command = find_lld()
    if command is None:
        raise TilecError(f"linking the AMD code object of `{kernel}` needs ld.lld, which was not found: "
                         f"{INSTALL_LLD}, or set TILEC_LLD to an ld.lld binary")
    with tempfile.TemporaryDirectory(prefix="tilec-lld-") as tmp:
        src, out = Path(tmp, "kernel.o"), Path(tmp, "kernel.hsaco")
        src.write_bytes(obj)
        done = subprocess.run([*command, "-shared", "-o", str(out), str(src)], capture_output=True, text=True,
                              timeout=LINK_TIMEOUT_S)
        if done.returncode != 0:
            raise TilecError(f"ld.lld failed to link the AMD code object of `{kernel}` "
                             f"({' '.join(command)}):\n{done.stderr.strip()}")
        return out.read_bytes()


def toolchain_report() -> list[tuple[str, str]]:
    """``python -m tilec info`` lines: which ld.lld links AMD code objects."""
    command = find_lld()
    return [("ld.lld", " ".join(command) if command else f"not found ({INSTALL_LLD}, or set TILEC_LLD); "
             "AMD compiles stop at the object")]
