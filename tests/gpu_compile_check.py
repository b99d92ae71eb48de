"""Every kernel the test suite compiles is also compiled for NVIDIA GPUs.

``conftest.py`` installs ``check_every_compile``: each host variant the tests
compile also runs the NVIDIA stages (layouts, LLVM, PTX, ``ptxas``) for every
arch in ``TILEC_GPU_COMPILE_CHECK`` (default ``sm_80,sm_90``; empty turns it
off), so a kernel that LLVM cannot select or ptxas rejects fails the test that
made it, on a machine with no GPU.  What tilec refuses on GPUs on purpose
(a ``CompilationError`` -- non-power-of-two tiles -- or ``OutOfResources``)
is allowed; anything else is a bug.  Each distinct kernel is checked once.
"""
from __future__ import annotations

import dataclasses
import os
import sys

DEFAULT_ARCHS = "sm_80,sm_90"


def archs() -> list[str]:
    return [a for a in os.environ.get("TILEC_GPU_COMPILE_CHECK", DEFAULT_ARCHS).split(",") if a]


def check_every_compile() -> None:
    """Wrap the launch layer's ``compile_variant`` (see the module docstring)."""
    targets = archs()
    if not targets:
        return
    from tilec.errors import CompilationError, OutOfResources
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
        for arch in targets:
            gpu = dataclasses.replace(compiled, target=arch, asm=dict(compiled.asm), runtime={},
                                      metadata=dataclasses.replace(compiled.metadata, target=arch))
            try:
                backend_for(arch).compile(gpu)
            except (CompilationError, OutOfResources):
                break
        return compiled

    jit.compile_variant = compile_and_check
