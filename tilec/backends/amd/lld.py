"""ld.lld, which turns LLVM's AMDGPU object into an HSA code object.

Found, in order: ``$TILEC_LLD``; the ``ziglang`` wheel's (``python -m
ziglang ld.lld``, LLD 22; the ``amd`` extra installs it); ROCm's
(``$ROCM_PATH``/``/opt/rocm``, ``llvm/bin/ld.lld``).  Linking takes a
fraction of a second and needs no GPU.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
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
    try:
        import ziglang
    except ImportError:
        return None
    return (sys.executable, "-m", "ziglang", "ld.lld") if ziglang.__file__ else None


def lld_file() -> Optional[Path]:
    """The file whose identity keys the cache: ld.lld's path or the ziglang package's."""
    command = find_lld()
    if command is None:
        return None
    if command[0] == sys.executable:
        import ziglang

        return Path(ziglang.__file__)
    return Path(command[0])


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
