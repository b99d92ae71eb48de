"""The facts of the ``cpu`` target: this process's CPU family at its baseline.

The triple is the one this process runs under (``x86_64-unknown-linux-gnu``
here), so that MCJIT can load the code into it.  The CPU is that family's
baseline (``x86-64``: SSE2 and nothing more), never the machine's own
(``llvm.get_host_cpu_name()``): a result must not depend on the machine that
compiled it.  On a CPU with AVX512-BF16, say, LLVM would round f32 -> bf16
with ``vcvtneps2bf16``, which flushes subnormals (1e-40 -> 0) where numpy and
the interpreter keep them.

One thread runs a whole program (``warp_size`` 1, one thread per block) and
holds every element of each of its tiles (``layouts.py``).  What a GPU
block keeps in shared memory (a dot's staged operands, a reshape's elements)
a program keeps in a scratch buffer on the calling thread's stack
(``grid.py``), at most ``SCRATCH_BYTES``; each load or store moves one
element (``max_vector_bytes`` 1: tiles are lists of scalars, vectors come
with the CPU backend's growth).  Registers are the CPU's business: no
register check runs for this target.

Importing this module does not load llvmlite; ``host_target()`` does.
"""
from __future__ import annotations

import functools

from tilec.targets.base import Target, llvm_data_layout

#: The baseline LLVM CPU of each architecture (the triple's first part); any
#: other architecture gets LLVM's ``generic`` CPU, its own baseline.
BASELINE_CPUS = {"x86_64": "x86-64"}
BASELINE_FEATURES = ""
#: A program's scratch memory at most: well inside a thread's stack (8 MiB
#: for Python's main thread), the size of a GPU's shared memory and more.
SCRATCH_BYTES = 1 << 20


@functools.cache
def host_target() -> Target:
    """The ``cpu`` target's facts (module docstring)."""
    import llvmlite.binding as llvm

    triple = llvm.get_process_triple()
    arch = triple.split("-", 1)[0]
    cpu = BASELINE_CPUS.get(arch, "generic")
    return Target(
        name=f"{arch}-{cpu}",
        triple=triple,
        data_layout=llvm_data_layout(triple, cpu, BASELINE_FEATURES),
        cpu=cpu,
        features=BASELINE_FEATURES,
        warp_size=1,
        default_shared_bytes=SCRATCH_BYTES,
        max_shared_bytes=SCRATCH_BYTES,
        max_vector_bytes=1,
        max_threads_per_block=1,
    )
