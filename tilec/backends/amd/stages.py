"""The AMD compile pipeline: optimized tile IR -> layouts -> LLVM IR ->
AMDGPU assembly and object -> HSA code object (``ld.lld``).

``STAGES`` holds them as ``targets.registry.Stage``s; each ``run(previous,
build)`` takes the previous stage's output and the shared ``Build``:

* ``tir-gpu``: the shared GPU layout pass (``tilec.opt.layouts``) for waves
  of the arch's size, with MFMA or WMMA as the matrix unit (``matrix.py``),
  then K loops pipelined through LDS double buffers (``stream_pipeline.py``);
* ``llir``: ``codegen_llvm.lower`` with ``AmdLowering``; the LDS the kernel
  uses becomes a static LDS array of its size (so the code object's
  ``.group_segment_fixed_size`` says it and nothing is requested at launch),
  the code object version is pinned (v5), O3;
* ``asm``: LLVM's AMDGPU assembly (the metadata in it as YAML);
* ``obj``: the relocatable object.  Each emission parses a fresh module: one
  module emitted twice aborted the process inside LLVM;
* ``hsaco``: the HSA code object ``ld.lld -shared`` links (``lld.py``),
  checked (``check_code_object``): an ELF for AMDGPU, HSA OS ABI, code
  object v5, this arch, no undefined symbol (a math call the generic
  library left to a libm the GPU does not have is a TilecError here, not a
  load failure), its kernel in the metadata note; the LDS, registers and
  spills recorded.  Without ld.lld the pipeline ends at ``obj``.

Nothing here needs a GPU.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Optional

from tilec.environment import check_enabled
from tilec.errors import OutOfResources, TilecError
from tilec.ir.core import Function
from tilec.launch.compiler import CompiledKernel, KernelMetadata, Options, check_ir, run_stages
from tilec.targets.base import Target, optimize, target_machine
from tilec.targets.registry import Stage
from tilec.backends.amd.target import CODE_OBJECT_VERSION, amdgpu_target, arch_facts

LDS_GLOBAL = "tilec_smem"
COV_NODE = 1_000_000


@dataclass
class Build:
    """What every stage of one compilation shares."""

    target: Target
    options: Options
    metadata: KernelMetadata
    llir: str = ""  # the optimized LLVM IR both emissions parse afresh
    kernel: dict[str, Any] = field(default_factory=dict)  # the code object's metadata of the kernel

    @property
    def arch(self) -> str:
        return self.target.cpu


# The tile IR with layouts of each kernel (by identity) for each ``layout_facts``:
# archs that agree on those (gfx90a, gfx942 and gfx950 for a kernel without a
# dot) share one run of the layout pass and its checks.
_LAID_OUT: "weakref.WeakKeyDictionary[Function, dict]" = weakref.WeakKeyDictionary()


def assign_gpu_layouts(fn: Function, build: Build) -> Function:
    """Tile IR with a layout on every tile (``tilec.opt.layouts`` with the
    arch's matrix unit), through the ``PassManager``; made once per kernel
    and ``layout_facts``."""
    made = _LAID_OUT.setdefault(fn, {})
    key = layout_facts(fn, build)
    if key not in made:
        made[key] = _lay_out(fn, build)
    return made[key]


def layout_facts(fn: Function, build: Build) -> tuple:
    """What the layout and pipelining passes read of a compile: the warps,
    the target's wave size and widest access, and, when ``fn`` has a dot,
    its matrix instructions, the preferred instruction size and whether
    ``num_stages`` pipelines."""
    from tilec import ir

    t = build.target
    has_dot = any(isinstance(op, ir.Dot) for op in ir.walk(fn.body))
    options = build.options
    dots = ((t.matrix_instructions, options.matrix_instr_nonkdim, options.num_stages >= 2, arch_facts(build.arch).family)
            if has_dot else None)
    return (options.num_warps, t.warp_size, t.max_vector_bytes, dots)


def _lay_out(fn: Function, build: Build) -> Function:
    from tilec.opt import PassManager, eliminate_common_subexpressions, hoist_loop_invariants
    from tilec.opt.layouts import assign_layouts
    from tilec.opt.legalize_dots import widen_fp8_dots
    from tilec.backends.amd.matrix import matrix_unit
    from tilec.backends.amd.lds_operands import invariant_operands_in_lds
    from tilec.backends.amd.stream_pipeline import stream_pipeline

    options = build.options
    unit = matrix_unit(build.target, options.matrix_instr_nonkdim)
    # RDNA has no load from global memory into LDS, and its 256 VGPRs a lane
    # cannot also hold the next iteration's tiles: pipelined, 9 of gfx1100's
    # 19 benchmark configurations spill, 4 of gfx1201's (docs/amd.md)
    stages = options.num_stages if arch_facts(build.arch).family == "cdna" else 1
    passes = [partial(widen_fp8_dots, instructions=build.target.every_matrix_instruction),
              partial(assign_layouts, num_warps=options.num_warps, target=build.target, unit=unit),
              hoist_loop_invariants, eliminate_common_subexpressions,
              partial(stream_pipeline, num_stages=stages, target=build.target, num_warps=options.num_warps),
              partial(invariant_operands_in_lds, target=build.target, num_warps=options.num_warps)]
    lowered = PassManager(passes, verify=check_enabled()).run(fn)
    check_ir(lowered)
    return lowered


def lower_to_llvm(fn: Function, build: Build) -> str:
    """LLVM IR of the kernel with its LDS sized and the code object version pinned, O3-optimized."""
    from tilec.codegen_llvm import Analyses, lower
    from tilec.opt.axis_info import analyze_axes
    from tilec.opt.shared_memory import plan_shared
    from tilec.backends.amd.lowering import AmdLowering

    target, options = build.target, build.options
    analyses = Analyses(axes=analyze_axes(fn), shared=plan_shared(fn))
    lowering = AmdLowering(target.warp_size, options.waves_per_eu)
    kernel = lower(fn, target, lowering, analyses, options.num_warps, options.enable_fp_fusion)
    build.metadata.shared = kernel.shared_bytes
    check_lds(build.metadata.name, kernel.shared_bytes, target)
    module = target.parse(with_code_object_version(static_lds(kernel.llir, kernel.shared_bytes)))
    optimize(module, target)
    module.verify()
    build.llir = str(module)
    return build.llir


def static_lds(llir: str, nbytes: int) -> str:
    """``llir`` with the kernel's LDS (codegen's external ``@tilec_smem``) a
    workgroup array of ``nbytes``: LLVM allocates it, the code object says it."""
    declared = f"@\"{LDS_GLOBAL}\" = external addrspace(3) global [0 x i8], align 16"
    if declared not in llir:
        return llir
    return llir.replace(declared, f"@\"{LDS_GLOBAL}\" = internal addrspace(3) global [{nbytes} x i8] undef, align 16")


def with_code_object_version(llir: str) -> str:
    """``llir`` with the module flag that pins the HSA code object version (v5)."""
    if "!llvm.module.flags" in llir:
        raise TilecError("internal compiler error: the kernel's LLVM module has module flags of its own")
    # a metadata number codegen's modules never reach (numbers need not be consecutive)
    return llir + (f"\n!llvm.module.flags = !{{!{COV_NODE}}}\n"
                   f"!{COV_NODE} = !{{i32 1, !\"amdhsa_code_object_version\", i32 {CODE_OBJECT_VERSION}}}\n")


def check_lds(kernel: str, nbytes: int, target: Target) -> None:
    """OutOfResources when a workgroup needs more LDS than ``target`` has
    (checked before LLVM sees the array: its own check would end the process)."""
    if nbytes > target.max_shared_bytes:
        raise OutOfResources(kernel, "shared memory", nbytes, target.max_shared_bytes,
                             f"{nbytes} bytes of LDS per workgroup on {target.cpu}",
                             "use smaller blocks or fewer num_stages")


def emit_assembly(llir: str, build: Build) -> str:
    """AMDGPU assembly of the optimized module (a fresh parse of ``build.llir``)."""
    return target_machine(build.target).emit_assembly(build.target.parse(build.llir))


def emit_object(asm: str, build: Build) -> bytes:
    """The relocatable object of the optimized module (another fresh parse)."""
    return target_machine(build.target).emit_object(build.target.parse(build.llir))


def link_code_object(obj: bytes, build: Build) -> Optional[bytes]:
    """The HSA code object (``ld.lld -shared``), checked (``check_code_object``);
    None when no ld.lld is installed."""
    from tilec.backends.amd import lld

    if lld.find_lld() is None:
        return None
    code = lld.link(obj, build.metadata.name)
    build.kernel = check_code_object(code, build.metadata.name, build.arch)
    m = build.metadata
    m.registers = build.kernel.get(".vgpr_count")
    m.spill_stores = m.spill_loads = build.kernel.get(".vgpr_spill_count")
    return code


def check_code_object(code: bytes, kernel: str, arch: str) -> dict[str, Any]:
    """The metadata of ``kernel`` in code object ``code``, after checking that
    it is one for ``arch`` that a HIP runtime can load: a TilecError otherwise."""
    from tilec.backends.amd.elf import ELFABIVERSION_AMDGPU_HSA_V5, ELFOSABI_AMDGPU_HSA, EM_AMDGPU, MACH, read_code_object

    co = read_code_object(code)
    wrong = [f"{what} is {got}, not {want}" for what, got, want in (
        ("e_machine", co.machine, EM_AMDGPU), ("the OS ABI", co.os_abi, ELFOSABI_AMDGPU_HSA),
        ("the ABI version", co.abi_version, ELFABIVERSION_AMDGPU_HSA_V5), ("the arch", co.mach, MACH[arch]))
        if got != want]
    if wrong:
        raise TilecError(f"internal compiler error: the code object of `{kernel}` is not one for {arch}: "
                         f"{'; '.join(wrong)}")
    if co.undefined:
        raise TilecError(f"the AMD code object of `{kernel}` calls {', '.join(co.undefined)}, which nothing on an "
                         f"AMD GPU defines (the generic math library leaves these to a C library; tilec links no "
                         "device math library for AMD yet): the kernel cannot run there")
    try:
        return co.kernel(kernel)
    except KeyError as e:
        raise TilecError(f"internal compiler error: {e.args[0]}") from None


#: The stages in order, with the extension of each one's file.
STAGES: list[Stage] = [
    Stage("tir-gpu", "gpu.tir", assign_gpu_layouts),
    Stage("llir", "ll", lower_to_llvm),
    Stage("asm", "s", emit_assembly),
    Stage("obj", "o", emit_object, binary=True),
    Stage("hsaco", "hsaco", link_code_object, binary=True),
]


def compile_for_amd(compiled: CompiledKernel, skip: tuple[str, ...] = ()) -> None:
    """Run every stage on ``compiled.fn`` for ``compiled.target`` (an arch),
    filling ``compiled.asm``; the stages named in ``skip`` (only ``"asm"``, which
    nothing after it reads) are left out: a check that needs only the code
    object saves LLVM's second code generation."""
    if set(skip) - {"asm"}:
        raise ValueError(f"only the asm stage may be skipped, not {sorted(set(skip) - {'asm'})}")
    stages = [s for s in STAGES if s.name not in skip]
    run_stages(compiled, stages, Build(amdgpu_target(compiled.target), compiled.options, compiled.metadata))
