"""How the grid runs on the host: ``<kernel>_grid``, the entry the launcher calls.

The kernel (``codegen.py``) takes its arguments, then the program's id
along each axis and the grid's size along each (i32, ``GRID_PARAMS``).
``grid_entry`` makes ``<kernel>_grid(arguments..., streaming, gx, gy, gz,
first, last)``, which runs programs ``first`` to ``last - 1`` of the grid,
in order, x fastest (program ``i`` is ``(i % gx, i / gx % gy, i / (gx *
gy))``), in the calling thread, then fences (``streaming``, nonzero where
the stores may be non-temporal: ``streaming.py``).  The launcher splits a grid into such
ranges and runs them on its threads, so one call runs many programs
whatever the grid's size.  The entry takes every scalar as the integer of
its bits (a float is bitcast inside), so ctypes can pass any type, 16-bit
floats included.
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec.ir.core import Function
from tilec.ir.types import PointerType, ScalarType, Type
from tilec.codegen_llvm.kernel import I32, I64, param_type
from tilec.codegen_llvm.scalar_base import counted_loop
from tilec.targets.base import Target
from tilec.backends.host.bounds import stop_if_failed
from tilec.backends.host.codegen import STREAM_PARAM, kernel_params

#: What ``grid_entry`` appends to the kernel's name.
GRID_SUFFIX = "_grid"


def entry_type(t: Type) -> llir.Type:
    """How ``<kernel>_grid`` takes an argument of IR type ``t``: a pointer as the
    kernel does, a scalar as the integer of its bits."""
    if isinstance(t, PointerType):
        return param_type(t)
    return llir.IntType(8 if t.is_bool else t.bits)


def grid_entry(fn: Function, target: Target, debug: bool = False) -> str:
    """LLVM IR text of a module defining ``<kernel>_grid`` (module docstring)
    and declaring the kernel ``fn`` as ``codegen.lower`` made it.  Under
    ``debug`` both take the bounds table after the arguments, and the
    entry stops at the first program that fails a check (``bounds.py``)."""
    module = llir.Module(fn.name + GRID_SUFFIX)
    module.triple, module.data_layout = target.triple, target.data_layout
    params = kernel_params(fn, debug)
    kernel = llir.Function(module, llir.FunctionType(llir.VoidType(), params), fn.name)
    own = [entry_type(a.type) for a in fn.args] + [llir.PointerType()] * debug + [llir.IntType(8)]
    entry = llir.Function(module, llir.FunctionType(llir.VoidType(), own + [I32] * 3 + [I64] * 2),
                          fn.name + GRID_SUFFIX)
    names = [fn.arg_names[a.index] if a.index < len(fn.arg_names) else f"arg{a.index}" for a in fn.args]
    for p, name in zip(entry.args, names + ["bounds"] * debug + [STREAM_PARAM, "gx", "gy", "gz", "first", "last"]):
        p.name = name
    b = llir.IRBuilder(entry.append_basic_block("entry"))
    args = [_from_bits(b, p, k, a.type) for p, k, a in zip(entry.args, params, fn.args)]
    args += entry.args[len(fn.args):len(own)]  # the bounds table, the streaming flag
    grid = list(entry.args[len(own):len(own) + 3])
    first, last = entry.args[-2:]
    gx, gy = (b.zext(g, I64) for g in grid[:2])

    def program(k: llir.Value) -> None:
        i = b.add(first, k)
        rest = b.udiv(i, gx)
        ids = [b.trunc(v, I32) for v in (b.urem(i, gx), b.urem(rest, gy), b.udiv(rest, gy))]
        b.call(kernel, args + ids + grid)
        if debug:
            stop_if_failed(b, entry.args[len(fn.args)])
    counted_loop(b, b.sub(last, first), program)
    _store_fence(b, module, target)
    b.ret_void()
    return str(module)


def _store_fence(b: llir.IRBuilder, module: llir.Module, target: Target) -> None:
    """Make the programs' stores, non-temporal ones included (``streaming.py``),
    visible before anything the caller does next: x86's ``sfence`` (LLVM
    makes a ``seq_cst`` fence a locked add there, which non-temporal stores
    may pass), elsewhere a ``seq_cst`` fence."""
    if target.triple.startswith("x86_64"):
        b.call(llir.Function(module, llir.FunctionType(llir.VoidType(), []), "llvm.x86.sse.sfence"), [])
    else:
        b.fence("seq_cst")


def _from_bits(b: llir.IRBuilder, arg: llir.Value, kernel_type: llir.Type, t: Type) -> llir.Value:
    """The kernel's argument from the entry's: a float from the integer of its bits."""
    return b.bitcast(arg, kernel_type) if isinstance(t, ScalarType) and t.is_float else arg
