"""Runs kernels compiled for the ``cpu`` target on host arrays (numpy arrays,
CPU torch tensors), through llvmlite's MCJIT: ``registry.Launcher`` for the
host place (the reference interpreter runs it instead under
``TILEC_INTERPRET`` or ``@jit(interpret=True)``).

The first launch of a ``CompiledKernel`` loads its object code (``asm["obj"]``)
into an MCJIT engine of its own, kept in ``compiled.runtime`` for the
variant's life (never in the disk cache, which holds data), and makes a
ctypes function of its grid entry (``grid.py``).  A launch is then one call:
arrays pass their data's address, scalars the integer of their bits, a
flag says whether the arrays together exceed the last-level cache (stores
of large outputs then stream past it: ``streaming.py``), and the programs
run on this process's threads (``threads.py``); ctypes lets go of the GIL
for the call.  A launch is synchronous: a ``stream=`` has nothing
to order.  A launch whose arrays exceed the last-level cache runs the
variant of target ``cpu-streaming`` (``target``), whose large stores
stream and which prefetches the next program's loads; any other runs
``cpu``'s, which has neither.  Later launches of a variant on numpy arrays
(and CPU tensors) take ``jit.py``'s
fast path (``fast_launch``): the same ``run`` on the values the generated
specializer hands over, without binding and classifying them again.

Under ``debug=True`` (``@jit(debug=True)`` or the launch's keyword) every
access is checked against the arrays passed, whose spans the launch hands
the code in a table (``bounds.py``), and a bad one raises
``InterpreterError`` naming the line, the argument and the offset after
the launch; the bad access is never made.  Otherwise nothing checks the accesses
(the interpreter does, ``TILEC_INTERPRET=1``): an index out of bounds reads
or writes whatever memory is there, as on a GPU, and may stop the process
with a segmentation fault.  It never stops it silently: the first load
turns on Python's ``faulthandler`` (unless the program has already), which
prints every thread's Python stack, the ``kernel[grid](...)`` line
included, before the process ends.  An array the kernel
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
import faulthandler
import functools
import struct
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from tilec import environment
from tilec.errors import TilecError
from tilec.ir.types import PointerType, Type
from tilec.launch.args import KernelArg, NotFast, host_array
from tilec.launch.compiler import CompiledKernel
from tilec.targets.base import CODEGEN_OPT_LEVEL
from tilec.backends.host import STREAMING_TARGET, TARGET
from tilec.backends.host.bounds import Table
from tilec.backends.host.grid import GRID_SUFFIX
from tilec.backends.host.target import host_target, target_facts
from tilec.backends.host.threads import run_programs

#: The libraries whose routines compiled code calls: LLVM's for 16-bit floats
#: (GCC's runtime library) and the C math library's (``expf``...).
RUNTIME_LIBRARIES = ("libgcc_s.so.1", "libm.so.6")


@dataclass(frozen=True)
class LoadedKernel:
    """A variant's code in this process: ``entry`` (its ``<kernel>_grid``, a
    ctypes function) is valid while ``engine``, the MCJIT engine holding it,
    lives; ``converters`` turn each IR argument's launch value into what
    ``entry`` takes (``entry_converter``)."""

    engine: Any
    entry: Callable[..., None]
    converters: tuple[Callable[[Any], int], ...]


def streaming(nbytes: int) -> bool:
    """Whether a launch over arrays of ``nbytes`` together lets its stores
    stream (``streaming.py``): what it writes leaves the last-level cache
    before it ends, so nothing gains from the write allocating there."""
    return nbytes > (STREAM_BYTES if STREAM_BYTES is not None else last_level_cache_bytes())


#: The arrays' size from which stores stream; None: the last-level cache's.
STREAM_BYTES: Optional[int] = None
#: The last-level cache's size where the system does not say.
DEFAULT_CACHE_BYTES = 32 << 20


@functools.cache
def last_level_cache_bytes() -> int:
    """The size of the CPU's outermost cache as Linux's sysfs gives it (for
    the first CPU), else ``DEFAULT_CACHE_BYTES``."""
    from pathlib import Path

    sizes = {}
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            level, size = (index / "level").read_text().strip(), (index / "size").read_text().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        if level.isdigit() and size.rstrip("KMG").isdigit():
            sizes[int(level)] = int(size.rstrip("KMG")) * scale
    return sizes[max(sizes)] if sizes else DEFAULT_CACHE_BYTES


def target(args: Sequence[KernelArg], device: Optional[int]) -> str:
    """Host arrays run code compiled for this CPU (``target.py``): where they
    stream (``streaming``), the variant with the streaming paths."""
    arrays = [array for array in map(host_array, args) if array is not None]
    return STREAMING_TARGET if streaming(array_bytes(arrays)) else TARGET


def array_bytes(values: Sequence[Any]) -> int:
    """The bytes of the numpy arrays among a launch's ``values``."""
    return sum(v.nbytes for v in values if isinstance(v, np.ndarray))


default_target = target  # what kernel.compile picks for host arrays: the same


def device_name(args: Sequence[KernelArg], device: Optional[int]) -> None:
    """None: there is one host, its tuning results are kept under the target alone."""
    return None


def fast_launch(compiled: CompiledKernel, args: Sequence[KernelArg],
                device: Optional[int]) -> Optional[Callable[..., None]]:
    """What ``jit.py``'s fast path calls for later launches of ``compiled`` on
    arrays like ``args``: ``run`` on the values of the kernel's IR arguments,
    picked from the launch's by position.  It declines (``NotFast``) once
    ``TILEC_INTERPRET`` is on, which sends the launch to the interpreter, and
    where the arrays stream and the variant's do not or the other way round
    (``target``: the general path takes the other variant).  None under
    ``debug``: each launch makes its table of spans (``bounds.py``)."""
    if compiled.options.debug:
        return None
    position = {a.name: i for i, a in enumerate(args)}
    picks = [position[name] for name in compiled.fn.arg_names]
    streams = compiled.target == STREAMING_TARGET

    def launch_fast(grid: tuple[int, int, int], values: Sequence[Any], stream: Any) -> None:
        arrays = [values[i] for i in picks]
        if environment.interpret() or streaming(array_bytes(arrays)) != streams:
            raise NotFast
        run(compiled, grid, arrays)
    return launch_fast


def launch(compiled: CompiledKernel, grid: tuple[int, int, int], args: Sequence[KernelArg],
           device: Optional[int] = None, stream: Any = None) -> None:
    """Run ``compiled`` over ``grid`` (three ints >= 0) on host arrays, writing
    them in place (``device`` and ``stream`` mean nothing on the host)."""
    run(compiled, grid, compiled.runtime_args(args))


def run(compiled: CompiledKernel, grid: tuple[int, int, int], arrays: list) -> None:
    """Run ``compiled`` over ``grid`` on the launch values of its IR arguments, in order."""
    refuse_read_only(compiled, arrays)
    total = grid[0] * grid[1] * grid[2]
    if total == 0:
        return  # an empty grid launches no program
    loaded = compiled.runtime.get(TARGET) or load(compiled)
    values = [convert(v) for convert, v in zip(loaded.converters, arrays)]
    table = Table(compiled.fn, arrays) if compiled.options.debug else None
    hidden = [table.address] if table is not None else []
    hidden.append(streaming(array_bytes(arrays)))
    run_programs(lambda first, last: loaded.entry(*values, *hidden, *grid, first, last), total,
                 compiled.metadata.shared if compiled.metadata else 0)
    if table is not None:
        table.raise_bad_access(grid)


def entry_converter(t: Type) -> Callable[[Any], int]:
    """What turns a launch value of IR type ``t`` into what the grid entry
    takes: an array's data address, a scalar's bits as an unsigned integer
    (made once per variant: a launch pays a call per argument)."""
    if isinstance(t, PointerType):
        return lambda array: array.__array_interface__["data"][0]
    if not t.is_float:  # two's complement in the type's width (a bool: 0 or 1)
        mask = (1 << t.bits) - 1
        return lambda value: int(value) & mask
    as_float, as_bits = _IEEE[t.name]  # a scalar argument has a type of numpy's own: no bf16, no fp8
    return lambda value: as_bits.unpack(as_float.pack(value))[0]


#: The IEEE types struct packs: the float's format and that of the same bits as an unsigned integer.
_IEEE = {"f16": (struct.Struct("<e"), struct.Struct("<H")), "f32": (struct.Struct("<f"), struct.Struct("<I")),
         "f64": (struct.Struct("<d"), struct.Struct("<Q"))}


def _entry_ctype(t: Type) -> type:
    if isinstance(t, PointerType):
        return ctypes.c_void_p
    return {8: ctypes.c_uint8, 16: ctypes.c_uint16, 32: ctypes.c_uint32, 64: ctypes.c_uint64}[max(8, t.bits)]


def load(compiled: CompiledKernel) -> LoadedKernel:
    """Load ``compiled``'s object code into a new MCJIT engine and keep it in ``compiled.runtime``."""
    import llvmlite.binding as llvm

    obj = compiled.asm["obj"]
    facts = host_target()
    check_runs_here(compiled, facts)
    check_symbols(compiled.name, obj)
    if not faulthandler.is_enabled():
        faulthandler.enable()
    machine = llvm.Target.from_triple(facts.triple).create_target_machine(  # the engine owns (and frees) it
        cpu=facts.cpu, features=facts.features, opt=CODEGEN_OPT_LEVEL)
    empty = llvm.parse_assembly("")
    empty.triple = facts.triple
    # llvmlite's memory manager puts the object's sections in one block: the code's 32-bit offsets reach its data
    engine = llvm.create_mcjit_compiler(empty, machine, use_lmm=True)
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    hidden = [ctypes.c_void_p] * compiled.options.debug + [ctypes.c_uint8]  # the bounds table, streaming
    signature = ctypes.CFUNCTYPE(None, *[_entry_ctype(a.type) for a in compiled.fn.args], *hidden,
                                 *[ctypes.c_int32] * 3, ctypes.c_int64, ctypes.c_int64)
    loaded = LoadedKernel(engine, signature(engine.get_function_address(compiled.name + GRID_SUFFIX)),
                          tuple(entry_converter(a.type) for a in compiled.fn.args))
    compiled.runtime[TARGET] = loaded
    return loaded


def check_runs_here(compiled: CompiledKernel, facts) -> None:
    """A TilecError when ``compiled`` was made for another CPU (a cross target) than this process's."""
    made_for = target_facts(compiled.target)
    if made_for.triple != facts.triple:
        raise TilecError(f"kernel `{compiled.name}` was compiled for target `{compiled.target}` "
                         f"({made_for.triple}); this process runs {facts.triple}, where only variants "
                         f"compiled for `{TARGET}` run; nothing ran")


def check_symbols(kernel: str, obj: bytes) -> None:
    """A TilecError naming the symbols object ``obj`` needs that this process lacks."""
    missing = missing_symbols(obj)
    if missing:
        raise TilecError(f"kernel `{kernel}` compiled for the cpu target calls {', '.join(missing)}, which this "
                         f"process does not have (tilec loads {', '.join(RUNTIME_LIBRARIES)} for the code it "
                         "compiles); nothing ran")


def missing_symbols(obj: bytes) -> list[str]:
    """The symbols object ``obj`` needs from outside that this process does not have."""
    import llvmlite.binding as llvm

    _load_runtime_library()
    return [name for name in undefined_symbols(obj) if llvm.address_of_symbol(name) is None]


@functools.cache
def _load_runtime_library() -> None:
    """Make ``RUNTIME_LIBRARIES``' routines visible to MCJIT (once; where one is
    missing, ``check_symbols`` says what lacks)."""
    import llvmlite.binding as llvm

    for name in RUNTIME_LIBRARIES:
        try:
            llvm.load_library_permanently(name)
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


def refuse_read_only(compiled: CompiledKernel, arrays: Sequence[Any]) -> None:
    """A ValueError naming the first read-only host array the kernel may
    write, among ``arrays``, the launch values of its IR arguments."""
    from tilec.opt.written_pointers import refuse_read_only_arrays

    if all(not isinstance(a, np.ndarray) or a.flags.writeable for a in arrays):
        return  # the usual case, at the cost of a flag an array
    refuse_read_only_arrays(compiled.name, compiled.fn, [(name, a if isinstance(a, np.ndarray) else None)
                                                         for name, a in zip(compiled.fn.arg_names, arrays)])
