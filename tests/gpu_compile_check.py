"""Every kernel the test suite compiles is also compiled for GPUs and AArch64.

``conftest.py`` installs ``check_every_compile``: each host variant the tests
compile also runs the stages of every arch in ``TILEC_GPU_COMPILE_CHECK``
(default ``sm_80,sm_90,gfx942,aarch64``; empty turns it off): for NVIDIA archs
layouts, LLVM, PTX and ``ptxas``; for AMD archs layouts, LLVM, the object,
ld.lld's code object and its checks; for ``aarch64`` (the host backend's
cross target, ``CPU_ARCHS``) the host codegen, O3 and LLVM's AArch64
assembly and object code, which nothing runs here.  A kernel that LLVM cannot select,
ptxas rejects or ld.lld cannot link fails the test that made it, on a
machine with no GPU.  What tilec refuses on GPUs on purpose is allowed: a
``CompilationError`` (non-power-of-two tiles; on AMD also ``device_print``,
inline PTX) or ``OutOfResources``, and on AMD a code object calling a math
function no AMD library defines yet (``UNRESOLVED``).  Anything else is a
bug.  Each distinct kernel is checked once for a GPU arch; for a CPU arch,
a kernel is checked when its IR holds a line (an op with its attributes and
types, numbers and names erased) that no kernel checked before held
(``is_new``): every op of every type the suite compiles reaches AArch64's
instruction selection, at a sixth of the compiles (all of them would add
about 9 minutes to CI).  A family that refuses a kernel skips its other
archs.  ``TILEC_GPU_COMPILE_LOG`` names a file each check appends ``arch<TAB>outcome<TAB>reason<TAB>seconds`` to (outcomes: ``ok``,
``refused``), for counting what compiled and what it cost.
"""
from __future__ import annotations

import dataclasses
import os
import re
import sys
import time

DEFAULT_ARCHS = "sm_80,sm_90,gfx942,aarch64"
#: The archs of the host backend's cross targets: object code for another CPU.
CPU_ARCHS = ("aarch64",)
#: A number in tile IR's text that is not part of a name or type (``i32``).
NUMBER = re.compile(r"(?<![\w.])-?\d+(\.\d*)?(e[-+]?\d+)?")
#: A value's name in tile IR's text (``%offs``, ``%12``).
NAME = re.compile(r"%[\w.#]+")
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
        if target != "host":
            return compiled
        refused: set = set()
        for arch in targets:
            backend = backend_for(arch)
            if backend in refused or not is_new(arch, compiled.asm["tir-opt"], options, seen):
                continue
            gpu = dataclasses.replace(compiled, target=arch, asm=dict(compiled.asm), runtime={},
                                      metadata=dataclasses.replace(compiled.metadata, target=arch))
            start = time.perf_counter()
            reason = _refusal(backend, gpu)
            if reason is not None:
                refused.add(backend)
            _log(arch, "ok" if reason is None else "refused", reason or "", time.perf_counter() - start)
        return compiled

    jit.compile_variant = compile_and_check


def is_new(arch: str, ir_text: str, options, seen: set) -> bool:
    """Whether ``arch`` has a kernel of optimized IR ``ir_text`` still to check
    (noted in ``seen`` as checked): for a GPU arch, any IR it has not had; for
    a CPU arch, IR with a line (an op with its attributes and types) that no
    IR it had holds, value names and numbers erased."""
    if arch not in CPU_ARCHS:
        keys = {(arch, ir_text, options)}
    else:
        body = ir_text.splitlines()[1:]  # the signature's types are the ops' too
        keys = {(arch, NAME.sub("%", NUMBER.sub("#", line.strip())), options) for line in body}
    new = not keys <= seen
    seen |= keys
    return new


def _refusal(backend, gpu):
    """None when ``gpu`` compiles; the reason when tilec refuses it on purpose; raises otherwise."""
    from tilec.errors import CompilationError, OutOfResources, TilecError

    try:
        if gpu.target in CPU_ARCHS:  # the object alone: its assembly text would run LLVM's code generator again
            from tilec.backends.host.stages import compile_for_cpu

            compile_for_cpu(gpu, assembly=False)
        else:
            backend.compile(gpu)
    except (CompilationError, OutOfResources) as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0]}"
    except TilecError as e:
        if UNRESOLVED not in str(e):
            raise
        return f"unresolved: {str(e).split(' calls ', 1)[1].split(', which')[0]}"
    return None


def _log(arch: str, outcome: str, reason: str, seconds: float) -> None:
    path = os.environ.get("TILEC_GPU_COMPILE_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{arch}\t{outcome}\t{reason}\t{seconds:.3f}\n")
