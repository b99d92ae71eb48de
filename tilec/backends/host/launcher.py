"""Runs a kernel compiled for the ``cpu`` target on host arrays, through
llvmlite's MCJIT: ``launch``, as ``registry.Launcher`` has it.  The rest of
that protocol (which target a launch picks, the fast path, the device's
name) comes when the backend gets a place in the registry (``places``); until
then ``launch/jit.py`` never asks it, and callers compile for ``"cpu"`` by name.

The first launch of a ``CompiledKernel`` loads its object code (``asm["obj"]``)
into an MCJIT engine of its own, kept in ``compiled.runtime`` for the
variant's life (never in the disk cache, which holds data), and makes a
ctypes function of its grid entry (``grid.py``).  A launch is then one call:
arrays pass their data's address, scalars the integer of their bits, and
the grid runs inside the call, in this thread.  ctypes lets go of the GIL
for the call.  A launch is synchronous: a ``stream=`` has nothing to order.

Nothing checks the accesses (the interpreter does): an index out of bounds
reads or writes whatever memory is there, as on a GPU.  An array the kernel
may write must be writable (``opt/written_pointers.py``), or the launch is
refused before anything runs.

Before loading, every symbol the object needs from outside (the C library's
functions, LLVM's runtime routines: the baseline x86-64 CPU converts f16
through libgcc's ``__extendhfsf2``/``__truncsfhf2``, bf16 through
``__truncsfbf2``) must resolve in this process: MCJIT stops the whole
process on one that does not, so a TilecError naming it comes first.
"""
from __future__ import annotations

import ctypes
import functools
import struct
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from tilec.errors import TilecError
from tilec.ir.types import PointerType, Type
from tilec.launch.args import KernelArg
from tilec.launch.compiler import CompiledKernel
from tilec.targets.base import CODEGEN_OPT_LEVEL
from tilec.backends.host import TARGET
from tilec.backends.host.grid import GRID_SUFFIX
from tilec.backends.host.target import host_target

#: Where LLVM's runtime routines for 16-bit floats live (GCC's runtime library).
RUNTIME_LIBRARY = "libgcc_s.so.1"


@dataclass(frozen=True)
class LoadedKernel:
    """A variant's code in this process: ``entry`` (its ``<kernel>_grid``, a
    ctypes function) is valid while ``engine``, the MCJIT engine holding it, lives."""

    engine: Any
    entry: Callable[..., None]


def launch(compiled: CompiledKernel, grid: tuple[int, int, int], args: Sequence[KernelArg],
           device: Optional[int] = None, stream: Any = None) -> None:
    """Run ``compiled`` over ``grid`` (three ints >= 0) on host arrays, writing
    them in place (``device`` and ``stream`` mean nothing on the host)."""
    refuse_read_only(compiled, args)
    if 0 in grid:
        return  # an empty grid launches no program
    loaded = compiled.runtime.get(TARGET) or load(compiled)
    values = compiled.runtime_args(args)
    loaded.entry(*(_entry_value(a.type, v) for a, v in zip(compiled.fn.args, values)), *grid)


def _entry_value(t: Type, value: Any) -> int:
    """What the grid entry takes for ``value`` of IR type ``t``: an array's data
    address, a scalar's bits as an unsigned integer."""
    if isinstance(t, PointerType):
        return value.__array_interface__["data"][0]
    bits = np.asarray(value)
    return int(bits.view(f"u{bits.itemsize}"))


def _entry_ctype(t: Type) -> type:
    if isinstance(t, PointerType):
        return ctypes.c_void_p
    return {8: ctypes.c_uint8, 16: ctypes.c_uint16, 32: ctypes.c_uint32, 64: ctypes.c_uint64}[max(8, t.bits)]


def load(compiled: CompiledKernel) -> LoadedKernel:
    """Load ``compiled``'s object code into a new MCJIT engine and keep it in ``compiled.runtime``."""
    import llvmlite.binding as llvm

    obj = compiled.asm["obj"]
    check_symbols(compiled.name, obj)
    facts = host_target()
    machine = llvm.Target.from_triple(facts.triple).create_target_machine(  # the engine owns (and frees) it
        cpu=facts.cpu, features=facts.features, opt=CODEGEN_OPT_LEVEL)
    empty = llvm.parse_assembly("")
    empty.triple = facts.triple
    engine = llvm.create_mcjit_compiler(empty, machine)
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    signature = ctypes.CFUNCTYPE(None, *[_entry_ctype(a.type) for a in compiled.fn.args], *[ctypes.c_int32] * 3)
    loaded = LoadedKernel(engine, signature(engine.get_function_address(compiled.name + GRID_SUFFIX)))
    compiled.runtime[TARGET] = loaded
    return loaded


def check_symbols(kernel: str, obj: bytes) -> None:
    """A TilecError naming the symbols object ``obj`` needs that this process lacks."""
    missing = missing_symbols(obj)
    if missing:
        raise TilecError(f"kernel `{kernel}` compiled for the cpu target calls {', '.join(missing)}, which this "
                         f"process does not have (16-bit float conversions come from {RUNTIME_LIBRARY}; "
                         "the bf16 ones LLVM calls are in no library Python loads); nothing ran")


def missing_symbols(obj: bytes) -> list[str]:
    """The symbols object ``obj`` needs from outside that this process does not have."""
    import llvmlite.binding as llvm

    _load_runtime_library()
    return [name for name in undefined_symbols(obj) if llvm.address_of_symbol(name) is None]


@functools.cache
def _load_runtime_library() -> None:
    """Make ``RUNTIME_LIBRARY``'s routines visible to MCJIT (once; where it is missing, ``check_symbols`` says what lacks)."""
    import llvmlite.binding as llvm

    try:
        llvm.load_library_permanently(RUNTIME_LIBRARY)
    except RuntimeError:
        pass


def undefined_symbols(obj: bytes) -> list[str]:
    """The names an ELF object uses without defining them (its symbol table's
    entries in no section); an object of another format lists none."""
    import llvmlite.binding as llvm

    sections = {s.name(): s.data() for s in llvm.ObjectFileRef.from_data(obj).sections()}
    table, names = sections.get(b".symtab"), sections.get(b".strtab")
    if table is None or names is None:
        return []
    return [names[at:names.index(b"\0", at)].decode()
            for at, _info, _other, section, _value, _size in struct.iter_unpack("<IBBHQQ", table)
            if section == 0 and at]


def refuse_read_only(compiled: CompiledKernel, args: Sequence[KernelArg]) -> None:
    """A ValueError naming the first read-only array the kernel may write."""
    from tilec.opt.written_pointers import written_arguments

    written = written_arguments(compiled.fn)
    for a in args:
        if a.name in written and isinstance(a.value, np.ndarray) and not a.value.flags.writeable:
            raise ValueError(f"kernel `{compiled.name}` may store through `{a.name}`, but the array passed as "
                             f"`{a.name}` is read-only; nothing ran. Pass a writable array, e.g. a copy: np.array(...)")
