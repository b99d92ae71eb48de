"""Every kernel the test suite compiles is also compiled for GPUs and AArch64.

``conftest.py`` installs ``check_every_compile``: each host variant the tests
compile also runs the stages of every arch in ``TILEC_GPU_COMPILE_CHECK``
(default ``sm_80,sm_90a,gfx90a,gfx942,gfx950,gfx1100,gfx1201,aarch64``;
empty turns it off):
for NVIDIA archs layouts, LLVM, PTX and ``ptxas`` (``sm_90a``: the H100's
variant, dots on warpgroup instructions); for AMD archs layouts, LLVM, the
object, ld.lld's code object and the backend's checks of it (machine, OS
ABI, code object v5, the arch, no undefined symbol, the kernel in the
metadata note), then ``check_amd_kernel``'s: the wave size, workgroup size,
LDS, registers and kernel arguments the metadata gives, and for a kernel
whose dot the layout pass put on the matrix unit, MFMA or WMMA instructions
in its assembly (only such kernels are emitted as assembly: it costs a
second run of LLVM's code generator); for ``aarch64`` (the host backend's
cross target, ``CPU_ARCHS``) the host codegen, O3 and LLVM's AArch64 object
code, which nothing runs here.  A kernel that LLVM cannot select, ptxas
rejects or ld.lld cannot link fails the test that made it, on a machine
with no GPU.  What tilec refuses on GPUs on purpose is allowed: a
``CompilationError`` (non-power-of-two tiles; on AMD also ``device_print``,
inline PTX, math functions no AMD library has yet) or ``OutOfResources``,
and on AMD a code object calling a function nothing defines (``UNRESOLVED``,
the link stage's backstop).  Anything else is a bug.  Each distinct kernel
is checked once for a GPU arch; for a sampled arch (``SAMPLED_ARCHS``), a
kernel is checked when its IR holds a line (an op with its attributes and
types, numbers and names erased) that no kernel checked before held, and
for gfx950 and gfx1201 also when it has a dot (``is_new``): every op of
every type the suite compiles reaches the arch's instruction selection, at
a fraction of the compiles (AArch64: a sixth; all of them would add about
9 minutes to CI; gfx950 and gfx1201, whose kernels without a dot lower as
gfx942's and gfx1100's do, all of them about 4-6 minutes more on CI's two
workers, the sample about a third of that, docs/amd.md).  A family
that refuses a kernel skips its other archs (logged as refused for the same
reason).  ``TILEC_GPU_COMPILE_LOG`` names a file each check appends
``arch<TAB>outcome<TAB>reason<TAB>seconds`` to (outcomes: ``ok``,
``refused``), for counting what compiled and what it cost.
"""
from __future__ import annotations

import dataclasses
import os
import re
import sys
import time

DEFAULT_ARCHS = "sm_80,sm_90a,gfx90a,gfx942,gfx950,gfx1100,gfx1201,aarch64"
#: The archs of the host backend's cross targets: object code for another CPU.
CPU_ARCHS = ("aarch64",)
#: The archs checked on a sample of the kernels (``is_new``): each new op line, and on the GPUs each dot.
SAMPLED_ARCHS = CPU_ARCHS + ("gfx950", "gfx1201")
#: A number in tile IR's text that is not part of a name or type (``i32``).
NUMBER = re.compile(r"(?<![\w.])-?\d+(\.\d*)?(e[-+]?\d+)?")
#: A value's name in tile IR's text (``%offs``, ``%12``).
NAME = re.compile(r"%[\w.#]+")
# The AMD backend's refusal of a code object with an undefined symbol (stages.check_code_object).
UNRESOLVED = "which nothing on an AMD GPU defines"
# The most VGPRs a lane of a wave may have (CDNA: 256 + 256 accumulation; RDNA3 wave32: 256) and SGPRs a wave.
MAX_VGPRS = {64: 512, 32: 256}
MAX_SGPRS = 112


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
        refused: dict = {}  # backend -> why it refused this kernel (its other archs are not tried)
        for arch in targets:
            backend = backend_for(arch)
            if not is_new(arch, compiled.asm["tir-opt"], options, seen):
                continue
            if backend in refused:
                _log(arch, "refused", refused[backend], 0.0)
                continue
            gpu = dataclasses.replace(compiled, target=arch, asm=dict(compiled.asm), runtime={},
                                      metadata=dataclasses.replace(compiled.metadata, target=arch))
            start = time.perf_counter()
            reason = _refusal(backend, gpu)
            if reason is not None:
                refused[backend] = reason
            _log(arch, "ok" if reason is None else "refused", reason or "", time.perf_counter() - start)
        return compiled

    jit.compile_variant = compile_and_check


def is_new(arch: str, ir_text: str, options, seen: set) -> bool:
    """Whether ``arch`` has a kernel of optimized IR ``ir_text`` still to check
    (noted in ``seen`` as checked): for an arch checked in full, any IR it
    has not had; for a sampled one (``SAMPLED_ARCHS``), IR with a line (an op
    with its attributes and types) that no IR it had holds, value names and
    numbers erased, or on a GPU any IR with a dot it has not had."""
    if arch not in SAMPLED_ARCHS or (arch not in CPU_ARCHS and " = dot " in ir_text):
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
        elif gpu.target.startswith("gfx"):
            compile_amd_and_check(gpu)
        else:
            backend.compile(gpu)
    except (CompilationError, OutOfResources) as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0]}"
    except TilecError as e:
        if UNRESOLVED not in str(e):
            raise
        return f"unresolved: {str(e).split(' calls ', 1)[1].split(', which')[0]}"
    return None


def compile_amd_and_check(gpu) -> None:
    """The AMD stages for ``gpu`` (the assembly only when it has a dot), then ``check_amd_kernel``."""
    from tilec.backends.amd.stages import compile_for_amd

    compile_for_amd(gpu, skip=() if " = dot " in gpu.asm["tir-opt"] else ("asm",))
    if "hsaco" in gpu.asm:  # no ld.lld: the pipeline ended at the object
        check_amd_kernel(gpu)


def check_amd_kernel(gpu) -> None:
    """An AssertionError naming what the code object's metadata (or the
    assembly) of AMD kernel ``gpu`` says that the compile did not ask for."""
    from tilec.backends.amd.elf import read_code_object
    from tilec.backends.amd.target import arch_facts

    meta = read_code_object(gpu.asm["hsaco"]).kernel(gpu.metadata.name)
    wave = arch_facts(gpu.target).wave_size
    explicit = [a for a in meta[".args"] if not a[".value_kind"].startswith("hidden_")]
    wrong = [f"{key} is {meta.get(key)}, expected {want}" for key, want in (
        (".wavefront_size", wave), (".max_flat_workgroup_size", gpu.options.num_warps * wave),
        (".symbol", f"{gpu.metadata.name}.kd"), ("explicit arguments", len(gpu.fn.args)))
        if (len(explicit) if key == "explicit arguments" else meta.get(key)) != want]
    if explicit and meta[".kernarg_segment_size"] < explicit[-1][".offset"] + explicit[-1][".size"]:
        wrong.append(f".kernarg_segment_size {meta['.kernarg_segment_size']} ends inside the arguments")
    if meta[".group_segment_fixed_size"] > gpu.metadata.shared:
        wrong.append(f"LDS {meta['.group_segment_fixed_size']} B, more than the {gpu.metadata.shared} B planned")
    # within what a wave has (a kernel that computes nothing may need none)
    if not (0 <= meta[".vgpr_count"] <= MAX_VGPRS[wave] and 0 <= meta[".sgpr_count"] <= MAX_SGPRS):
        wrong.append(f"registers: {meta['.vgpr_count']} VGPRs, {meta['.sgpr_count']} SGPRs")
    if _matrix_dots(gpu) and not re.search(r"^\s+v_(?:mfma|wmma)_", gpu.asm["asm"], re.M):
        wrong.append("a dot on the matrix unit, but no MFMA/WMMA instruction in the assembly")
    assert not wrong, f"the {gpu.target} code object of `{gpu.metadata.name}`: {'; '.join(wrong)}"


def _matrix_dots(gpu) -> int:
    """How many of ``gpu``'s dots the layout pass put on the AMD matrix unit."""
    from tilec import ir
    from tilec.backends.amd.matrix import planned
    from tilec.backends.amd.target import amdgpu_target
    from tilec.ir.parser import parse_function

    if " = dot " not in gpu.asm["tir-gpu"]:
        return 0
    target, fn = amdgpu_target(gpu.target), parse_function(gpu.asm["tir-gpu"])
    return sum(planned(op, target, gpu.options.num_warps) is not None
               for op in ir.walk(fn.body) if isinstance(op, ir.Dot))


def _log(arch: str, outcome: str, reason: str, seconds: float) -> None:
    path = os.environ.get("TILEC_GPU_COMPILE_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{arch}\t{outcome}\t{reason}\t{seconds:.3f}\n")
