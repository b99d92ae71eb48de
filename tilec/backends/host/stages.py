"""The host compile pipeline: optimized tile IR -> scalar layouts -> LLVM IR
-> x86 assembly and object code, for the ``cpu`` target (``target.py``).

``STAGES`` holds them as ``targets.registry.Stage``s; each ``run(previous,
build)`` takes the previous stage's output and the shared ``Build`` and
returns its own, which ``launch.compiler.run_stages`` keeps in
``CompiledKernel.asm[name]``:

* ``tir-host``: the tile IR with a layout on every tile (``layouts.py``) and
  the grid arguments (``grid.py``), both passes run through ``PassManager``;
* ``llir``: ``codegen_llvm.lower`` with ``HostLowering``, the grid entry
  ``<kernel>_grid`` linked in, the kernel internal (inlined into it), O3;
* ``asm``: the assembly LLVM's code generator makes of it;
* ``obj``: the relocatable object (bytes) of the same module, which the
  launcher loads with MCJIT: the loader places it and resolves its calls
  (the C library's) in the process that runs it, so the disk cache keeps it
  as data like any other stage.

A program holds one LLVM value per element of each tile and each masked
access branches on its own (the generic rules), so compile time grows
faster than the tile: the vector-add kernel takes 0.06 s at
``BLOCK_SIZE=16``, 0.7 s at 128 and 10 s at 1024 (O3 3.5 s, then the
assembly and the object 3 s each, most of it LLVM's register allocator
over ~3000 branches), against 0.1 s for a GPU, whose threads hold 8
elements each.  Vectors and
loops over the tile, the CPU backend's next steps, remove that; tests keep
tiles small.
"""
from __future__ import annotations

from dataclasses import dataclass

from tilec.environment import check_enabled
from tilec.errors import OutOfResources
from tilec.ir.core import Function
from tilec.launch.compiler import CompiledKernel, KernelMetadata, Options, check_ir, run_stages
from tilec.targets.base import Target, target_machine
from tilec.targets.registry import Stage
from tilec.backends.host.target import host_target

O3 = 3


@dataclass
class Build:
    """What every stage of one compilation shares."""

    target: Target
    options: Options
    metadata: KernelMetadata
    llir: str = ""  # the optimized LLVM IR, which the object code is made from


def lower_tile_ir(fn: Function, build: Build) -> Function:
    """Tile IR with scalar-per-program layouts and the grid arguments; under
    ``TILEC_CHECK=1`` each pass's output is verified, and the result survives its text form."""
    from tilec.opt import PassManager
    from tilec.backends.host.grid import add_grid_arguments
    from tilec.backends.host.layouts import assign_scalar_layouts

    lowered = PassManager([assign_scalar_layouts, add_grid_arguments], verify=check_enabled()).run(fn)
    check_ir(lowered)
    return lowered


def lower_to_llvm(fn: Function, build: Build) -> str:
    """LLVM IR of the kernel and its grid entry, optimized at O3 for the baseline CPU."""
    import llvmlite.binding as llvm

    from tilec.codegen_llvm import Analyses, lower
    from tilec.opt.axis_info import analyze_axes
    from tilec.opt.shared_memory import plan_shared
    from tilec.backends.host.grid import grid_entry
    from tilec.backends.host.lowering import HostLowering

    target, options = build.target, build.options
    kernel = lower(fn, target, HostLowering(), Analyses(axes=analyze_axes(fn), shared=plan_shared(fn)), 1,
                   options.enable_fp_fusion)
    module = _parse(kernel.llir, target)
    check_scratch(fn.name, kernel.shared_bytes, target)
    module.link_in(_parse(grid_entry(fn, target, kernel.shared_bytes), target))
    module.get_function(fn.name).linkage = "internal"
    tuning = llvm.create_pipeline_tuning_options(speed_level=O3)
    builder = llvm.create_pass_builder(target_machine(target), tuning)
    builder.getModulePassManager().run(module, builder)
    module.verify()
    build.llir = str(module)
    return build.llir


def check_scratch(kernel: str, nbytes: int, target: Target) -> None:
    """OutOfResources when a program needs more scratch memory than the
    target's limit (it lives on the calling thread's stack)."""
    if nbytes > target.max_shared_bytes:
        raise OutOfResources(kernel, "scratch memory", nbytes, target.max_shared_bytes,
                             f"{nbytes} bytes of scratch memory per program (a dot's operands, a reshape's "
                             "elements)", "use smaller tiles")


def emit_assembly(llir: str, build: Build) -> str:
    """The target's assembly text of the optimized module."""
    return build.target.emit_assembly(llir)


def emit_object(asm: str, build: Build) -> bytes:
    """The relocatable object of the optimized module (``build.llir``: this
    stage follows the assembly, made from the same IR)."""
    return target_machine(build.target).emit_object(_parse(build.llir, build.target))


def _parse(text: str, target: Target):
    """``text`` parsed and verified, with ``target``'s triple and data layout."""
    import llvmlite.binding as llvm

    module = llvm.parse_assembly(text)
    module.triple, module.data_layout = target.triple, target.data_layout
    module.verify()
    return module


#: The stages in order, with the extension of each one's file.
STAGES: list[Stage] = [
    Stage("tir-host", "host.tir", lower_tile_ir),
    Stage("llir", "ll", lower_to_llvm),
    Stage("asm", "s", emit_assembly),
    Stage("obj", "o", emit_object, binary=True),
]


def compile_for_cpu(compiled: CompiledKernel) -> None:
    """Run every stage on ``compiled.fn`` for the ``cpu`` target, filling ``compiled.asm``."""
    run_stages(compiled, STAGES, Build(host_target(), compiled.options, compiled.metadata))
