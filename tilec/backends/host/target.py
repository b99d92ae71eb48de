"""The facts of the ``cpu`` target: this process's CPU family at a named level.

The triple is the one this process runs under (``x86_64-unknown-linux-gnu``
here), so that MCJIT can load the code into it.  The CPU is a named level of
that family chosen from the features this CPU reports (``cpu_level``), never
the machine's own model (``llvm.get_host_cpu_name()``), so that a result does
not depend on the model that compiled it and no instruction that changes a
result is ever chosen: on x86-64, ``x86-64-v4`` (AVX-512 F/BW/CD/DQ/VL) where
all of it is present, else ``x86-64-v3`` (AVX2, FMA), else the ``x86-64``
baseline (SSE2).  None of these levels holds AVX512-BF16, whose f32 -> bf16
conversion flushes subnormals (1e-40 -> 0) where numpy and the interpreter
keep them.  On AArch64 the level is ``generic`` (NEON is part of the
architecture); any other architecture gets LLVM's ``generic`` CPU.  The
level is part of the compiled code's cache key (``HostBackend.toolchain``).

Besides ``"cpu"`` the backend compiles for ``CROSS_TRIPLES``' targets
(``"aarch64"``: AArch64 Linux, ``generic``) on any machine: the test suite
compiles every kernel for AArch64 this way (``tests/gpu_compile_check.py``).
Such a variant runs only in a process of its triple; elsewhere the launcher
refuses it.

The code is position-independent with the small code model: a constant
is an operand 32 bits from the instruction (``vfmadd231ps
.LCPI0_9(%rip){1to16}``), where LLVM's model for a JIT (the large one on
x86-64) loads each constant's 64-bit address into a register first; in a
loop of many constants (the portable ``exp``) that took registers the loop
needed, and softmax ran 7-8% slower.  The launcher loads the object into
one block of memory (llvmlite's memory manager), so those 32 bits reach.

A program is one thread (``warp_size`` 1, one thread per block): its tiles
are buffers in its stack memory or loops over their elements
(``codegen.py``), vectorized by LLVM at the level's vector width.  Registers
are the CPU's business: no register check runs for this target.

Importing this module does not load llvmlite; ``host_target()`` does.
"""
from __future__ import annotations

import functools

from tilec.targets.base import Target, llvm_data_layout

#: The x86-64 levels, best first, with the features each needs (LLVM's names).
X86_LEVELS = (
    ("x86-64-v4", ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx2", "fma", "bmi2")),
    ("x86-64-v3", ("avx2", "fma", "bmi", "bmi2", "f16c", "lzcnt", "movbe")),
)
#: What a level's code is tuned with beyond LLVM's defaults for it.  x86-64-v4
#: drops LLVM's preference for 256-bit vectors: a loop of many operations per
#: element (the portable exp) runs one 512-bit op where it ran two 256-bit
#: ones, and Zen 4, which splits the 512-bit op, issues half the ops.
LEVEL_FEATURES = {"x86-64-v4": "-prefer-256-bit"}
#: The levels with an instruction that scales by a power of two, which LLVM
#: makes of ``llvm.ldexp`` (AVX-512F's ``vscalefps``): the portable math
#: library uses it there (``lowering.HostLowering``).  Elsewhere ``llvm.ldexp``
#: may be a C library call (baseline x86-64), so the library builds the power.
NATIVE_SCALE_LEVELS = frozenset({"x86-64-v4"})
#: Every level's fallback, by architecture (the triple's first part).
BASELINE_CPUS = {"x86_64": "x86-64"}
#: The targets besides ``"cpu"`` that the backend compiles for, whatever this
#: process runs on, with their triples: object code at the baseline level,
#: which runs only in a process of that triple.
CROSS_TRIPLES = {"aarch64": "aarch64-unknown-linux-gnu"}
#: The most stack memory one program's buffers may take (``OutOfResources``
#: beyond): the launcher's threads have stacks of ``STACK_BYTES``.
STACK_BYTES = 64 << 20
MAX_PROGRAM_BYTES = 48 << 20


def cpu_level(arch: str, features: dict[str, bool]) -> str:
    """The named CPU level code for ``arch`` is made for on a CPU with ``features``."""
    if arch == "x86_64":
        for name, needs in X86_LEVELS:
            if all(features.get(f, False) for f in needs):
                return name
    return BASELINE_CPUS.get(arch, "generic")


@functools.cache
def host_target() -> Target:
    """The ``cpu`` target's facts (module docstring)."""
    import llvmlite.binding as llvm

    try:
        features = dict(llvm.get_host_cpu_features())
    except RuntimeError:  # LLVM knows no features of this CPU: its baseline
        features = {}
    return cpu_target(llvm.get_process_triple(), features)


@functools.cache
def cross_target(name: str) -> Target:
    """The facts of cross target ``name`` (``CROSS_TRIPLES``): its baseline level."""
    return cpu_target(CROSS_TRIPLES[name], {})


def target_facts(name: str) -> Target:
    """The facts of the host backend's target ``name``: a cross target's, else
    this process's CPU (``"cpu"`` and ``"cpu-streaming"``: the same facts)."""
    return cross_target(name) if name in CROSS_TRIPLES else host_target()


def cpu_target(triple: str, features: dict[str, bool]) -> Target:
    """The facts of code for ``triple`` on a CPU with ``features``."""
    arch = triple.split("-", 1)[0]
    cpu = cpu_level(arch, features)
    return Target(
        name=f"{arch}-{cpu}",
        triple=triple,
        data_layout=llvm_data_layout(triple, cpu, ""),
        cpu=cpu,
        features=LEVEL_FEATURES.get(cpu, ""),
        warp_size=1,
        default_shared_bytes=MAX_PROGRAM_BYTES,
        max_shared_bytes=MAX_PROGRAM_BYTES,
        max_vector_bytes=64,
        max_threads_per_block=1,
        code_model="small",
        relocation="pic",
    )
