"""Runs a compiled kernel on the host through the numpy reference interpreter.

This is how every kernel runs until the CPU backend exists: slow, but it
checks every access and defines what each op means.  A host launch is
synchronous, so a ``stream=`` has nothing to order and is ignored.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from .args import KernelArg
from .compiler import HOST, CompiledKernel


def target(args: Sequence[KernelArg], device: Optional[int]) -> str:
    """Host arrays run the host variant (the optimized tile IR)."""
    return HOST


default_target = target  # what kernel.compile picks for host arrays: the same


def fast_launch(compiled: CompiledKernel, args: Sequence[KernelArg], device: Optional[int]) -> None:
    """None: host launches take the general path, the only one that makes the
    arrays the interpreter reads (and the interpreter dwarfs its cost)."""
    return None


def launch(compiled: CompiledKernel, grid: tuple[int, int, int], args: Sequence[KernelArg],
           device: Optional[int] = None, stream: Any = None) -> None:
    """Run ``compiled`` over ``grid`` (three ints >= 0) on host arrays, writing them in place."""
    if 0 in grid:
        return  # an empty grid launches no program, as on a GPU
    from ..ir.interpret import interpret  # numpy-heavy: loaded on the first host launch

    interpret(compiled.fn, grid, compiled.runtime_args(args))
