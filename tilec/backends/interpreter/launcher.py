"""Runs a compiled kernel on the host through the numpy reference interpreter.

This is how every kernel runs until the CPU backend exists: slow, but it
checks every access and defines what each op means.  A host launch is
synchronous, so a ``stream=`` has nothing to order and is ignored.

The interpreter writes memory through its address, as a GPU would, so
numpy's read-only flag would not stop it: an array the kernel may write
(``opt/written_pointers.py``) must be writable, or the launch is refused
before anything runs.  A read-only array passed where the kernel only reads
(``np.frombuffer(bytes)``, a read-only ``np.memmap``) is fine.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from tilec.backends.interpreter import TARGET
from tilec.errors import InterpreterError
from tilec.launch.args import KernelArg, host_array
from tilec.launch.compiler import CompiledKernel


def target(args: Sequence[KernelArg], device: Optional[int]) -> str:
    """Host arrays run the host variant (the optimized tile IR)."""
    return TARGET


default_target = target  # what kernel.compile picks for host arrays: the same


def device_name(args: Sequence[KernelArg], device: Optional[int]) -> None:
    """None: there is one host, its results are kept under the target alone."""
    return None


def fast_launch(compiled: CompiledKernel, args: Sequence[KernelArg], device: Optional[int]) -> None:
    """None: host launches take the general path, the only one that makes the
    arrays the interpreter reads (and the interpreter dwarfs its cost)."""
    return None


def launch(compiled: CompiledKernel, grid: tuple[int, int, int], args: Sequence[KernelArg],
           device: Optional[int] = None, stream: Any = None) -> None:
    """Run ``compiled`` over ``grid`` (three ints >= 0) on host arrays, writing them in place."""
    refuse_read_only(compiled, args)
    if 0 in grid:
        return  # an empty grid launches no program, as on a GPU
    from tilec.ir.interpret import interpret  # numpy-heavy: loaded on the first host launch

    try:
        interpret(compiled.fn, grid, compiled.runtime_args(args))
    except InterpreterError as e:  # it names and quotes the user's line: the interpreter's frames would bury it
        raise e.with_traceback(None)


def refuse_read_only(compiled: CompiledKernel, args: Sequence[KernelArg]) -> None:
    """A ValueError naming the first read-only host array the kernel may write."""
    from tilec.opt.written_pointers import refuse_read_only_arrays

    refuse_read_only_arrays(compiled.name, compiled.fn, [(a.name, host_array(a)) for a in args])
