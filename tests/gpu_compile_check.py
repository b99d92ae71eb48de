"""Every kernel the test suite compiles is also compiled for GPUs.

``conftest.py`` installs ``check_every_compile``: each host variant the tests
compile also runs the GPU stages for every arch in ``TILEC_GPU_COMPILE_CHECK``
(default ``sm_80,sm_90,gfx942``; empty turns it off): for NVIDIA archs
layouts, LLVM, PTX and ``ptxas``; for AMD archs layouts, LLVM, the object,
ld.lld's code object and its checks.  A kernel that LLVM cannot select,
ptxas rejects or ld.lld cannot link fails the test that made it, on a
machine with no GPU.  What tilec refuses on GPUs on purpose is allowed: a
``CompilationError`` (non-power-of-two tiles; on AMD also ``device_print``,
inline PTX) or ``OutOfResources``, and on AMD a code object calling a math
function no AMD library defines yet (``UNRESOLVED``).  Anything else is a
bug.  Each distinct kernel is checked once; a family that refuses a kernel
skips its other archs.  ``TILEC_GPU_COMPILE_LOG`` names a file each check
appends ``arch<TAB>outcome<TAB>reason`` to (outcomes: ``ok``, ``refused``),
for counting what compiled.
"""
from __future__ import annotations

import dataclasses
import os
import sys

DEFAULT_ARCHS = "sm_80,sm_90,gfx942"
# The AMD backend's refusal of a code object with an undefined symbol (stages.check_code_object).
UNRESOLVED = "which nothing on an AMD GPU defines"


def archs() -> list[str]:
    return [a for a in os.environ.get("TILEC_GPU_COMPILE_CHECK", DEFAULT_ARCHS).split(",") if a]


def check_every_compile() -> None:
    """Wrap the launch layer's ``compile_variant`` (see the module docstring)."""
    targets = archs()
    if not targets:
        return
    from tilec.targets.registry import backend_for

    jit = sys.modules["tilec.launch.jit"]
    host_compile = jit.compile_variant
    seen: set = set()

    def compile_and_check(pyfn, args, options, target):
        compiled = host_compile(pyfn, args, options, target)
        key = (compiled.asm["tir-opt"], options)
        if target != "host" or key in seen:
            return compiled
        seen.add(key)
        refused: set = set()
        for arch in targets:
            backend = backend_for(arch)
            if backend in refused:
                continue
            gpu = dataclasses.replace(compiled, target=arch, asm=dict(compiled.asm), runtime={},
                                      metadata=dataclasses.replace(compiled.metadata, target=arch))
            reason = _refusal(backend, gpu)
            if reason is not None:
                refused.add(backend)
            _log(arch, "ok" if reason is None else "refused", reason or "")
        return compiled

    jit.compile_variant = compile_and_check


def _refusal(backend, gpu):
    """None when ``gpu`` compiles; the reason when tilec refuses it on purpose; raises otherwise."""
    from tilec.errors import CompilationError, OutOfResources, TilecError

    try:
        backend.compile(gpu)
    except (CompilationError, OutOfResources) as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0]}"
    except TilecError as e:
        if UNRESOLVED not in str(e):
            raise
        return f"unresolved: {str(e).split(' calls ', 1)[1].split(', which')[0]}"
    return None


def _log(arch: str, outcome: str, reason: str) -> None:
    path = os.environ.get("TILEC_GPU_COMPILE_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{arch}\t{outcome}\t{reason}\n")
