"""What every target is: a frozen record of facts about the machine, plus the one
step every LLVM target shares, LLVM IR text -> assembly text.

llvmlite is imported only inside the functions that need it, so importing
tilec (for the interpreter, say) never loads LLVM.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

# LLVM's codegen optimization level (0-3) for every target machine we make.
CODEGEN_OPT_LEVEL = 3


@dataclass(frozen=True)
class MatrixInstruction:
    """A matrix multiply-accumulate a warp issues as one instruction:
    ``acc[m, n] += a[m, k] @ b[k, n]``, ``a`` and ``b`` of element type
    ``operand``, ``acc`` of ``accumulator`` (type names, as ``"f16"``)."""

    operand: str
    accumulator: str
    m: int
    n: int
    k: int


@dataclass(frozen=True)
class Target:
    """One compilation target. Data only: code that needs a different value per
    target reads a field here instead of testing the target's name."""

    name: str  # unique across backends, e.g. "<llvm target>-<arch>"; part of cache keys
    triple: str  # LLVM target triple
    data_layout: str  # LLVM data layout string, as LLVM itself reports it
    cpu: str  # LLVM CPU name (a GPU's arch, "x86-64"...)
    features: str  # LLVM feature string, e.g. "+avx2" (a GPU backend's: its ISA version)
    warp_size: int  # threads that execute in lockstep (32 NVIDIA, 64 AMD CDNA)
    default_shared_bytes: int  # shared memory per block without opting in
    max_shared_bytes: int  # shared memory per block after opting in
    max_vector_bytes: int = 16  # widest load or store one thread issues
    max_threads_per_block: int = 1024
    registers_per_block: int = 64 * 1024  # 32-bit registers a block may use in all
    # the warp-wide matrix instructions a dot may run on (none: every dot on the FMA units)
    matrix_instructions: tuple[MatrixInstruction, ...] = ()
    # the matrix instructions a group of four warps issues together, operands
    # read from shared memory by the matrix unit itself; ``n`` is the widest form
    group_matrix_instructions: tuple[MatrixInstruction, ...] = ()
    # whether a thread can start copies from global to shared memory and wait
    # for them later (``ir.gpu_ops``): software pipelining needs them
    async_copies: bool = False
    # whether one thread can copy a whole block of a described tensor to shared
    # memory and every thread wait on a barrier for it (``tma_copy``, ``tma_wait``)
    bulk_tensor_copies: bool = False
    # LLVM's code model and relocation model for the machine code (llvmlite's
    # names); the defaults are LLVM's for a JIT (on x86-64 the large model:
    # each constant's address a 64-bit immediate, taking a register)
    code_model: str = "jitdefault"
    relocation: str = "default"

    @property
    def every_matrix_instruction(self) -> tuple[MatrixInstruction, ...]:
        """The warp-wide and the group matrix instructions together."""
        return self.matrix_instructions + self.group_matrix_instructions

    def emit_assembly(self, llvm_ir: str) -> str:
        """Assembly text (a GPU's virtual ISA, a CPU's assembly) for the module in `llvm_ir`.

        Raises RuntimeError when the text does not parse or verify. A fresh
        module is parsed on every call because emission mutates the module.
        """
        return target_machine(self).emit_assembly(self.parse(llvm_ir))

    def parse(self, llvm_ir: str):
        """A fresh llvmlite module of `llvm_ir` with this target's triple and
        data layout, verified (RuntimeError when it does not parse or verify)."""
        module = _llvm().parse_assembly(llvm_ir)
        module.triple = self.triple
        module.data_layout = self.data_layout
        module.verify()
        return module


def _llvm():
    """llvmlite.binding with every target and asm printer registered (once)."""
    import llvmlite.binding as llvm

    _register_llvm_targets(llvm)
    return llvm


@functools.cache
def _register_llvm_targets(llvm) -> None:
    # llvmlite 0.50 deprecates llvm.initialize() (it raises), but targets and
    # asm printers still have to be registered by hand.
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


@functools.cache
def _machine(triple: str, cpu: str, features: str, code_model: str = "jitdefault", relocation: str = "default"):
    llvm = _llvm()
    return llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=CODEGEN_OPT_LEVEL, codemodel=code_model, reloc=relocation
    )


#: LLVM's optimization level of the module pipeline every backend runs.
OPT_LEVEL = 3


def optimize(module, target: "Target") -> None:
    """Run LLVM's O3 module pipeline on llvmlite ``module`` for ``target``'s machine."""
    llvm = _llvm()
    tuning = llvm.create_pipeline_tuning_options(speed_level=OPT_LEVEL)
    builder = llvm.create_pass_builder(target_machine(target), tuning)
    builder.getModulePassManager().run(module, builder)


def target_machine(target: Target):
    """The llvmlite TargetMachine for `target`, made once and reused (emission
    mutates modules, not the machine)."""
    return _machine(target.triple, target.cpu, target.features, target.code_model, target.relocation)


def llvm_data_layout(triple: str, cpu: str, features: str) -> str:
    """The data layout LLVM uses for this triple/cpu/features."""
    return str(_machine(triple, cpu, features).target_data)
