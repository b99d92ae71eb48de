"""The host compile pipeline: optimized tile IR -> LLVM IR -> assembly and
object code for the ``cpu`` target (``target.py``).

``STAGES`` holds them as ``targets.registry.Stage``s; each ``run(previous,
build)`` takes the previous stage's output and the shared ``Build`` and
returns its own, which ``launch.compiler.run_stages`` keeps in
``CompiledKernel.asm[name]``:

* ``llir``: ``codegen.lower`` (tiles as buffers and loop nests), the grid
  entry ``<kernel>_grid`` (``grid.py``) and, in a kernel with bf16 values,
  the bf16 roundings LLVM calls (``libcalls.py``) linked in, the kernel internal
  (inlined into it), O3 at the target's CPU level, which vectorizes the
  loops over the tiles;
* ``asm``: the assembly LLVM's code generator makes of it;
* ``obj``: the relocatable object (bytes), which the launcher loads with
  MCJIT: the loader places it and resolves its calls (the C library's) in
  the process that runs it, so the disk cache keeps it as data like any
  other stage.  It is the ``asm`` text assembled (LLVM's assembler, reached
  through a module of nothing but module-level assembly: milliseconds),
  not a second run of the code generator on the module, which cost as much
  as the first (0.1-0.4 s a kernel); so the assembly shown is the code that
  runs.  Only this process's architecture has its assembler loaded
  (llvmlite registers the native one alone), so a cross target's object,
  and a compile without the text (``compile_for_cpu(assembly=False)``),
  comes from the module.

``metadata.shared_bytes`` is the stack memory one program's buffers take
(``OutOfResources`` beyond ``target.MAX_PROGRAM_BYTES``).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from tilec.errors import OutOfResources
from tilec.ir.core import Function
from tilec.launch.compiler import CompiledKernel, KernelMetadata, Options, run_stages
from tilec.targets.base import Target, optimize, target_machine
from tilec.targets.registry import Stage
from tilec.backends.host import TARGET
from tilec.backends.host.target import host_target, target_facts



@dataclass
class Build:
    """What every stage of one compilation shares."""

    target: Target
    options: Options
    metadata: KernelMetadata
    llir: str = ""  # the optimized LLVM IR (a cross target's object code is made from it)
    #: whether the code has the streaming paths: ``STREAMING_TARGET``'s and the
    #: cross targets' (the object CI checks: all the code), not ``TARGET``'s
    streams: bool = True


def lower_to_llvm(fn: Function, build: Build) -> str:
    """LLVM IR of the kernel and its grid entry, optimized at O3 for the target's CPU level."""
    from tilec.backends.host.codegen import lower
    from tilec.backends.host import libcalls
    from tilec.backends.host.grid import grid_entry
    from tilec.backends.host.lowering import HostLowering
    from tilec.opt.legalize_dots import widen_fp8_dots

    target = build.target
    debug = build.options.debug
    legal = widen_fp8_dots(fn, target.every_matrix_instruction)
    kernel = lower(legal, target, HostLowering(target), build.options.enable_fp_fusion, debug, build.streams)
    check_stack(fn.name, kernel.stack_bytes, target)
    build.metadata.shared_bytes = kernel.stack_bytes
    module = target.parse(kernel.llir)
    module.link_in(target.parse(grid_entry(fn, target, debug)))
    if libcalls.needed(kernel.llir):
        module.link_in(target.parse(libcalls.module(target)))
    kernel_fn = module.get_function(fn.name)
    kernel_fn.linkage = "internal"
    # inlined into the grid entry by O3's first pass, so that its function passes simplify the kernel once:
    # inlined by the call-graph passes, it was simplified alone first and then again in the grid entry
    kernel_fn.add_function_attribute("alwaysinline")
    optimize(module, target)
    calls_outside_through_the_got(module, target)
    module.verify()
    build.llir = str(module)
    return build.llir


#: The module flag that makes LLVM's own library calls (``memset``, the f16
#: conversions) go through the global offset table, as ``-fno-plt`` does.
RTLIB_USE_GOT = '!llvm.module.flags = !{!0}\n!0 = !{i32 7, !"RtLibUseGOT", i32 1}\n'


def calls_outside_through_the_got(module, target: Target) -> None:
    """Every call to a function outside the object (the C library's, LLVM's
    runtime routines) made through a GOT entry (``call *expf@GOTPCREL(%rip)``),
    not a PLT stub: MCJIT's loader counts the GOT entries when it reserves the
    object's memory in one block (which the small code model needs,
    ``target.py``), but not those its PLT stubs take, and the launcher's
    memory manager stops the process on memory it did not reserve."""
    module.link_in(target.parse(RTLIB_USE_GOT))
    for f in module.functions:
        if f.is_declaration and not f.name.startswith("llvm."):
            f.add_function_attribute("nonlazybind")


def check_stack(kernel: str, nbytes: int, target: Target) -> None:
    """OutOfResources when a program's buffers need more stack memory than the target allows."""
    if nbytes > target.max_shared_bytes:
        raise OutOfResources(kernel, "stack memory", nbytes, target.max_shared_bytes,
                             f"{nbytes} bytes of stack memory per program for its tiles", "use smaller tiles")


def emit_assembly(llir: str, build: Build) -> str:
    """The target's assembly text of the optimized module."""
    return build.target.emit_assembly(llir)


def emit_object(asm: str, build: Build) -> bytes:
    """The relocatable object: ``asm`` assembled where this process has the
    target's assembler, else the optimized module's code (``module_object``)."""
    if build.target.triple != host_target().triple:
        return module_object(asm, build)
    return target_machine(build.target).emit_object(assembly_module(asm, build.target))


def module_object(_previous: str, build: Build) -> bytes:
    """The relocatable object LLVM's code generator makes of the optimized module (``build.llir``)."""
    return target_machine(build.target).emit_object(build.target.parse(build.llir))


def assembly_module(asm: str, target: Target):
    """An llvmlite module holding assembly text ``asm`` as module-level
    assembly, which LLVM's code generator passes to the assembler as it is."""
    import llvmlite.binding as llvm

    _native_assembler()
    lines = "".join(f'module asm "{line}"\n' for line in _escaped(asm).splitlines())
    module = llvm.parse_assembly(f'target triple = "{target.triple}"\n{lines}')
    module.data_layout = target.data_layout
    return module


@functools.cache
def _native_assembler() -> None:
    import llvmlite.binding as llvm

    llvm.initialize_native_asmparser()


#: What an LLVM IR string cannot hold as it is: a quote, a backslash, a byte
#: outside printable ASCII (a tab); line ends stay, to split the text on.
_UNPRINTABLE = re.compile(r'[^\x20\x21\x23-\x5b\x5d-\x7e\n]')


def _escaped(text: str) -> str:
    """``text`` with ``\\XX`` for each byte of what ``_UNPRINTABLE`` matches."""
    return _UNPRINTABLE.sub(lambda m: "".join(f"\\{b:02X}" for b in m.group().encode()), text)


#: The stages in order, with the extension of each one's file.
STAGES: list[Stage] = [
    Stage("llir", "ll", lower_to_llvm),
    Stage("asm", "s", emit_assembly),
    Stage("obj", "o", emit_object, binary=True),
]
#: The stages of a compile without the assembly text: the object from the module.
OBJECT_STAGES: list[Stage] = [STAGES[0], Stage("obj", "o", module_object, binary=True)]


def compile_for_cpu(compiled: CompiledKernel, assembly: bool = True) -> None:
    """Run every stage on ``compiled.fn`` for its target (``cpu``, or a cross
    target: ``target.target_facts``), filling ``compiled.asm``; without
    ``assembly``, all but the assembly text (LLVM's code generator runs once,
    for the object: what a compile check needs)."""
    build = Build(target_facts(compiled.target), compiled.options, compiled.metadata,
                  streams=compiled.target != TARGET)
    run_stages(compiled, STAGES if assembly else OBJECT_STAGES, build)

