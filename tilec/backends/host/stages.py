"""The host compile pipeline: optimized tile IR -> LLVM IR -> assembly and
object code for the ``cpu`` target (``target.py``).

``STAGES`` holds them as ``targets.registry.Stage``s; each ``run(previous,
build)`` takes the previous stage's output and the shared ``Build`` and
returns its own, which ``launch.compiler.run_stages`` keeps in
``CompiledKernel.asm[name]``:

* ``llir``: ``codegen.lower`` (tiles as buffers and loop nests), the grid
  entry ``<kernel>_grid`` (``grid.py``) and the bf16 roundings LLVM calls
  (``libcalls.py``) linked in, the kernel internal
  (inlined into it), O3 at the target's CPU level, which vectorizes the
  loops over the tiles;
* ``asm``: the assembly LLVM's code generator makes of it;
* ``obj``: the relocatable object (bytes) of the same module, which the
  launcher loads with MCJIT: the loader places it and resolves its calls
  (the C library's) in the process that runs it, so the disk cache keeps it
  as data like any other stage.

``metadata.shared_bytes`` is the stack memory one program's buffers take
(``OutOfResources`` beyond ``target.MAX_PROGRAM_BYTES``).
"""
from __future__ import annotations

from dataclasses import dataclass

from tilec.errors import OutOfResources
from tilec.ir.core import Function
from tilec.launch.compiler import CompiledKernel, KernelMetadata, Options, run_stages
from tilec.targets.base import Target, optimize, target_machine
from tilec.targets.registry import Stage
from tilec.backends.host.target import target_facts



@dataclass
class Build:
    """What every stage of one compilation shares."""

    target: Target
    options: Options
    metadata: KernelMetadata
    llir: str = ""  # the optimized LLVM IR, which the object code is made from


def lower_to_llvm(fn: Function, build: Build) -> str:
    """LLVM IR of the kernel and its grid entry, optimized at O3 for the target's CPU level."""
    from tilec.backends.host.codegen import lower
    from tilec.backends.host import libcalls
    from tilec.backends.host.grid import grid_entry
    from tilec.backends.host.lowering import HostLowering
    from tilec.opt.legalize_dots import widen_fp8_dots

    target = build.target
    debug = build.options.debug
    kernel = lower(widen_fp8_dots(fn, target), target, HostLowering(), build.options.enable_fp_fusion, debug)
    check_stack(fn.name, kernel.stack_bytes, target)
    build.metadata.shared_bytes = kernel.stack_bytes
    module = target.parse(kernel.llir)
    module.link_in(target.parse(grid_entry(fn, target, debug)))
    module.link_in(target.parse(libcalls.module(target)))
    module.get_function(fn.name).linkage = "internal"
    optimize(module, target)
    module.verify()
    build.llir = str(module)
    return build.llir


def check_stack(kernel: str, nbytes: int, target: Target) -> None:
    """OutOfResources when a program's buffers need more stack memory than the target allows."""
    if nbytes > target.max_shared_bytes:
        raise OutOfResources(kernel, "stack memory", nbytes, target.max_shared_bytes,
                             f"{nbytes} bytes of stack memory per program for its tiles", "use smaller tiles")


def emit_assembly(llir: str, build: Build) -> str:
    """The target's assembly text of the optimized module."""
    return build.target.emit_assembly(llir)


def emit_object(asm: str, build: Build) -> bytes:
    """The relocatable object of the optimized module (``build.llir``: this
    stage follows the assembly, made from the same IR)."""
    return target_machine(build.target).emit_object(build.target.parse(build.llir))


#: The stages in order, with the extension of each one's file.
STAGES: list[Stage] = [
    Stage("llir", "ll", lower_to_llvm),
    Stage("asm", "s", emit_assembly),
    Stage("obj", "o", emit_object, binary=True),
]


def compile_for_cpu(compiled: CompiledKernel, assembly: bool = True) -> None:
    """Run every stage on ``compiled.fn`` for its target (``cpu``, or a cross
    target: ``target.target_facts``), filling ``compiled.asm``; without
    ``assembly``, all but the assembly text (LLVM's code generator runs once,
    for the object: what a compile check needs)."""
    stages = STAGES if assembly else [s for s in STAGES if s.name != "asm"]
    run_stages(compiled, stages, Build(target_facts(compiled.target), compiled.options, compiled.metadata))
