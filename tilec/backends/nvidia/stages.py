"""The NVIDIA compile pipeline: optimized tile IR -> layouts -> LLVM IR -> PTX -> cubin.

A target is data (``target.nvptx_target(arch)``) plus an ordered list of
stages, as in Triton's backends.  ``STAGES`` holds them as
``targets.registry.Stage``s: each ``run(previous, build)`` takes the previous
stage's output and the shared ``Build`` (target, options, metadata to fill)
and returns its own output, which ``launch.compiler.run_stages`` keeps in
``CompiledKernel.asm[name]`` (IR as text, the cubin as bytes).

Nothing here needs a GPU or a driver: ``kernel.compile(..., target="sm_90")``
runs everywhere.  The cubin stage needs ``ptxas`` (the ``nvidia-cuda-nvcc``
wheel); without it the pipeline stops at PTX, which the driver compiles at
load time, and the register check waits for the load (``cuda.py``).

``TILEC_DUMP`` naming a stage (``TILEC_DUMP=tir-gpu,llir,ptx``) writes that
stage's output to a file as it is made (``launch/dump.py``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Optional

from tilec.environment import check_enabled
from tilec.errors import OutOfResources, TilecError
from tilec.ir.core import Function
from tilec.targets.base import Target
from tilec.targets.registry import Stage
from tilec.backends.nvidia.target import REGISTERS_PER_BLOCK
from tilec.launch.compiler import CompiledKernel, KernelMetadata, Options, check_ir, run_stages


@dataclass
class Build:
    """What every stage of one compilation shares."""

    target: Target
    options: Options
    metadata: KernelMetadata
    static_shared: int = 0  # bytes of static shared memory ptxas reported (codegen uses dynamic only)

    @property
    def threads(self) -> int:
        return self.options.num_warps * self.target.warp_size

    @property
    def arch(self) -> str:
        return self.target.cpu


def assign_gpu_layouts(fn: Function, build: Build) -> Function:
    """Tile IR with a layout on every tile (coalesced global accesses, tensor
    cores for dots, fp8 dots the arch cannot multiply widened first), its
    dot-feeding loop loads software-pipelined over ``num_stages``
    shared-memory slots (warpgroup dots left running across iterations),
    other loops' tile loads issued one iteration ahead.
    The passes run through the
    ``PassManager``, bound to the build's options and target: ``TILEC_DUMP=ir``
    shows the IR after each, and under ``TILEC_CHECK=1`` each is verified and
    the result survives its text form (as in ``optimize``)."""
    from tilec.backends.nvidia.layouts import assign_layouts
    from tilec.backends.nvidia.pipeline import pipeline_loops
    from tilec.backends.nvidia.shared_operands import stage_invariant_operands
    from tilec.backends.nvidia.tma_stores import store_blocks_in_bulk
    from tilec.opt import PassManager, eliminate_common_subexpressions, hoist_loop_invariants
    from tilec.opt.legalize_dots import widen_fp8_dots
    from tilec.opt.register_prefetch import prefetch_loops

    options = build.options
    passes = [
        partial(widen_fp8_dots, instructions=build.target.every_matrix_instruction),
        partial(assign_layouts, num_warps=options.num_warps, target=build.target),
        # conversions of loop-invariant values (a dot operand loaded before the loop)
        # leave it, and one value converted the same way twice (q for each of two
        # loops, an arange made again in one layout) is converted once
        hoist_loop_invariants,
        eliminate_common_subexpressions,
        partial(pipeline_loops, num_stages=options.num_stages, target=build.target, num_warps=options.num_warps),
        # loops that feed no dot load their tiles one iteration ahead, into registers
        partial(prefetch_loops, num_stages=options.num_stages, threads=build.threads),
        # a loop-invariant `a` (attention's q) read by wgmma from shared memory instead of registers
        partial(stage_invariant_operands, target=build.target, num_warps=options.num_warps),
        # a host descriptor's block stored by the tensor memory accelerator from shared memory
        partial(store_blocks_in_bulk, target=build.target),
    ]
    lowered = PassManager(passes, verify=check_enabled()).run(fn)
    check_ir(lowered)
    return lowered


def lower_to_llvm(fn: Function, build: Build) -> str:
    """LLVM IR of the kernel (the analyses codegen reads computed here, once),
    libdevice linked where it calls it, O3-optimized."""
    from tilec.codegen_llvm import Analyses, lower
    from tilec.opt.axis_info import analyze_axes
    from tilec.opt.shared_memory import plan_shared
    from tilec.backends.nvidia.libdevice import link_libdevice
    from tilec.backends.nvidia.lowering import NvidiaLowering
    from tilec.backends.nvidia.tma import tensor_maps

    options = build.options
    analyses = Analyses(axes=analyze_axes(fn), shared=plan_shared(fn))
    kernel = lower(fn, build.target, NvidiaLowering(options.maxnreg), analyses, options.num_warps,
                   options.enable_fp_fusion)
    build.metadata.shared = kernel.shared_bytes
    build.metadata.tensor_maps = [m.to_json() for m in tensor_maps(fn)]
    return link_libdevice(kernel.llir, build.target)


def emit_ptx(llir: str, build: Build) -> str:
    """PTX text from LLVM's NVPTX backend, every loop in it entered through
    its header only (``check_reducible``)."""
    ptx = build.target.emit_assembly(llir)
    check_reducible(ptx)
    return ptx


def check_reducible(ptx: str) -> None:
    """Raise TilecError if a function in ``ptx`` has a loop with a second
    entry: ptxas does not reconverge warps there, so the loop's barriers and
    shuffles could hang the GPU (``ptx_cfg.py``)."""
    from tilec.backends.nvidia.ptx_cfg import control_flow_graphs, irreducible_entries

    for graph in control_flow_graphs(ptx):
        entries = irreducible_entries(graph)
        if entries:
            where = ", ".join(f"{dst} from {src}" for src, dst in entries)
            raise TilecError(
                f"internal compiler error: the PTX of `{graph.function}` has a loop entered past its header "
                f"(at {where}); ptxas would not reconverge warps there and the kernel could hang. "
                "Please report it with the kernel and TILEC_DUMP=llir,ptx."
            )


def assemble_cubin(ptx: str, build: Build) -> Optional[bytes]:
    """The cubin from ``ptxas -v``, recording its resource use in the metadata;
    None (and the pipeline ends at PTX) when no ptxas is installed."""
    from tilec.backends.nvidia.ptxas import assemble, find_ptxas

    if find_ptxas() is None:
        return None
    result = assemble(ptx, build.arch)
    m = build.metadata
    m.registers, m.spill_stores, m.spill_loads = result.registers, result.spill_stores, result.spill_loads
    build.static_shared = result.shared_bytes
    return result.cubin


#: The stages in order, with the extension of each one's file.
STAGES: list[Stage] = [
    Stage("tir-gpu", "gpu.tir", assign_gpu_layouts),
    Stage("llir", "ll", lower_to_llvm),
    Stage("ptx", "ptx", emit_ptx),
    Stage("cubin", "cubin", assemble_cubin, binary=True),
]


def compile_for_gpu(compiled: CompiledKernel) -> None:
    """Run every stage on ``compiled.fn`` for ``compiled.target`` (an arch),
    filling ``compiled.asm`` and ``compiled.metadata``, then check the kernel fits."""
    from tilec.backends.nvidia.target import nvptx_target

    build = Build(nvptx_target(compiled.target), compiled.options, compiled.metadata)
    run_stages(compiled, STAGES, build)
    check_resources(build)


# --- resource checks (registers: at load time in cuda.py when ptxas was missing) ---
def check_resources(build: Build) -> None:
    """OutOfResources when the kernel cannot launch on ``build.target``."""
    m = build.metadata
    check_shared(m.name, m.shared + build.static_shared, build.target)
    if m.registers is not None:
        check_registers(m.name, m.registers, build.threads)


def check_shared(kernel: str, nbytes: int, target: Target) -> None:
    """OutOfResources when a block needs more shared memory than ``target`` has."""
    if nbytes > target.max_shared_bytes:
        raise OutOfResources(kernel, "shared memory", nbytes, target.max_shared_bytes,
                             f"{nbytes} bytes of shared memory per block on {target.cpu}",
                             "use smaller blocks or fewer num_stages")


def check_registers(kernel: str, registers: int, threads: int) -> None:
    """OutOfResources when ``threads`` threads of ``registers`` each overflow a block's register file."""
    needed = registers * threads
    if needed > REGISTERS_PER_BLOCK:
        raise OutOfResources(kernel, "registers", needed, REGISTERS_PER_BLOCK,
                             f"{registers} registers per thread x {threads} threads = {needed} registers "
                             "per block", "use fewer num_warps or smaller blocks")
