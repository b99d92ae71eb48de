"""The host backend: target ``"cpu"``, kernels compiled to machine code for
this process's CPU through llvmlite, loaded by MCJIT and run on every core.
It runs kernels launched on host arrays (numpy arrays, CPU torch tensors);
``TILEC_INTERPRET=1`` or ``@tilec.jit(interpret=True)`` sends them to the
reference interpreter (target ``"host"``) instead.

A program is one thread; its tiles are buffers on its stack or loops over
their elements, which LLVM vectorizes (``codegen.py``, ``tiles.py``).

Its rooms: ``target.py`` (the facts: the CPU level), ``stages.py`` (the
pipeline after ``optimize``: LLVM IR, assembly, object code),
``codegen.py``, ``tiles.py`` and the ``rules_*.py`` (tile IR -> LLVM IR),
``prefetch.py`` (the next program's loads), ``streaming.py`` (non-temporal
stores of large outputs), ``lowering.py`` (printing, assertions, the math
library), ``libcalls.py``
(routines LLVM calls that no library here has), ``grid.py`` (the grid
entry), ``launcher.py`` (MCJIT) and ``threads.py`` (the worker threads).

This package is what the registry imports: it loads none of those rooms (no
LLVM); each method imports what it needs.
"""
from __future__ import annotations

from typing import Any, Sequence

from tilec.targets.base import Target
from tilec.targets.registry import HOST_PLACE, Backend, Launcher, Stage

#: The host backend's target: this process's CPU.
TARGET = "cpu"
#: The same CPU, for launches whose arrays exceed the last-level cache: its
#: variants have the streaming paths (``streaming.py``, ``prefetch.py``),
#: which ``TARGET``'s leave out.
STREAMING_TARGET = "cpu-streaming"
#: The targets it cross-compiles for (``target.CROSS_TRIPLES``; object code, run only on their CPU).
CROSS_TARGETS = ("aarch64",)


class HostBackend(Backend):
    """The host CPU: compiles for ``"cpu"``, ``"cpu-streaming"`` (and
    ``CROSS_TARGETS``) and runs host arrays."""

    targets = (TARGET, STREAMING_TARGET, *CROSS_TARGETS)
    default_target = TARGET
    places = (HOST_PLACE,)
    default_stage = "asm"

    @property
    def stages(self) -> Sequence[Stage]:
        from tilec.backends.host.stages import STAGES

        return STAGES

    def compile(self, compiled: Any) -> None:
        from tilec.backends.host.stages import compile_for_cpu

        compile_for_cpu(compiled)

    def language_target(self, name: str) -> tuple[str, Any, int]:
        """As the interpreter's (``"cpu"`` for its names): no GPU backend, warps
        of 32 threads in what a kernel computes from them (``num_threads``),
        so a kernel means the same compiled or interpreted; a cross target is
        backend ``"cpu"`` of its own arch."""
        return (TARGET, name, 32)

    def launcher(self) -> Launcher:
        """``launcher.py``: runs ``cpu`` variants on host arrays."""
        from tilec.backends.host import launcher

        return launcher

    def target(self, name: str) -> Target:
        from tilec.backends.host.target import target_facts

        return target_facts(name)

    def toolchain(self, target: str) -> tuple:
        """LLVM (llvmlite's version), the triple and the CPU level the code is made for."""
        import llvmlite

        facts = self.target(target)
        return (llvmlite.__version__, facts.triple, facts.cpu)


BACKEND = HostBackend()
