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

from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

from tilec.backends.interpreter import TARGET
from tilec.errors import InterpreterError
from tilec.ir.kernel_params import DescriptorParam
from tilec.launch.args import KernelArg
from tilec.launch.compiler import CompiledKernel

if TYPE_CHECKING:
    from tilec.opt.written_pointers import WriteSite


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
    """A ValueError naming the first read-only host array the kernel may write
    (the analysis is remembered per variant: a launch pays a lookup and a loop)."""
    from tilec.opt.written_pointers import written_arguments

    written = written_arguments(compiled.fn)
    for a in args:
        array = _host_array(a)
        if a.name in written and array is not None and not array.flags.writeable:
            raise ValueError(_read_only_message(compiled.name, a.name, written[a.name]))


def _host_array(a: KernelArg) -> Optional[np.ndarray]:
    """The numpy array an argument passes (a host tensor descriptor's base among them), or None."""
    value = a.value[0] if isinstance(a.type, DescriptorParam) else a.value
    return value if isinstance(value, np.ndarray) else None


def _read_only_message(kernel: str, name: str, site: "WriteSite") -> str:
    # an op built without a source location (line 0) is named by its op alone
    where = site.op if site.loc.line <= 0 else f"{site.op} at {site.loc.file}:{site.loc.line}"
    how = (f"stores through `{name}` ({where})" if site.traced else
           f"stores through a pointer tilec cannot trace to one argument ({where}: loaded from memory or "
           f"made from an integer), so it may write any array, `{name}` too")
    return (f"kernel `{kernel}` {how}, but the array passed as `{name}` is read-only (np.frombuffer over "
            "bytes, a read-only mmap, setflags(write=False)...); nothing ran. Pass a writable array, "
            f"e.g. a copy: np.array(...)")
