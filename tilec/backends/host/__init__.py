"""The host backend: target ``"cpu"``, kernels compiled to machine code for
this process's CPU (at its baseline) through llvmlite and run by MCJIT.

A first cut, the seed of the native CPU path: one thread runs each program
and holds every element of its tiles as scalars (no vectors, no threads
yet); elementwise code, reductions, scans, shape ops, ``dot``, gathers,
loops, branches and atomics compile (``layouts.HOST_OPS``; any other op is a
CompilationError at its line).  It runs nothing by itself:
``places`` is empty, so ``kernel[grid](numpy arrays)`` still goes to the
interpreter (target ``"host"``).  Compile with ``kernel.compile(...,
target="cpu")`` and launch through ``launcher().launch(compiled, grid, args)``,
``args`` classified as a launch classifies them (``kernel.plan(args, kwargs).args``).

Its rooms: ``target.py`` (the facts), ``stages.py`` (the pipeline after
``optimize``: scalar layouts, LLVM IR, assembly, object code),
``layouts.py`` and ``grid.py`` (its passes over tile IR: the layouts, the
program ids as arguments; and the grid entry in LLVM), ``lowering.py`` (its
``TargetLowering``) and ``launcher.py`` (MCJIT).

This package is what the registry imports: it loads none of those rooms (no
LLVM); each method imports what it needs.
"""
from __future__ import annotations

from typing import Any, Sequence

from tilec.targets.base import Target
from tilec.targets.registry import Backend, Launcher, Stage

#: The host backend's one target.
TARGET = "cpu"


class HostBackend(Backend):
    """The host CPU: compiles for ``"cpu"``, launches only when asked by name (no ``places`` yet)."""

    targets = (TARGET,)
    default_target = TARGET
    places = ()
    default_stage = "asm"

    @property
    def stages(self) -> Sequence[Stage]:
        from tilec.backends.host.stages import STAGES

        return STAGES

    def compile(self, compiled: Any) -> None:
        from tilec.backends.host.stages import compile_for_cpu

        compile_for_cpu(compiled)

    def launcher(self) -> Launcher:
        """``launcher.py``: its ``launch`` runs a ``cpu`` variant on host arrays (the
        rest of ``Launcher`` comes with a place, ``launch/jit.py`` asks none of it yet)."""
        from tilec.backends.host import launcher

        return launcher

    def target(self, name: str) -> Target:
        from tilec.backends.host.target import host_target

        return host_target()

    def toolchain(self, target: str) -> tuple:
        """LLVM (llvmlite's version) and the triple the code is made for (this process's)."""
        import llvmlite

        return (llvmlite.__version__, self.target(target).triple)


BACKEND = HostBackend()
