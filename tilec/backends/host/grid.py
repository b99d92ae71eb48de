"""How a host kernel learns where it is in the grid, and how the grid runs.

A CPU has no registers holding a program's ids, so the kernel takes them as
arguments: ``add_grid_arguments`` (a tile-IR pass) gives the kernel seven
more arguments after its own, ``HOST_ARGUMENTS``: the program's id along
each axis, then the grid's size along each (i32), then ``scratch``, the
program's scratch memory (what a GPU block's shared memory holds: a dot's
staged operands, a reshape's elements).  ``HostLowering.program_id``,
``num_programs`` and ``shared_memory`` read them.

The grid runs in LLVM: ``grid_entry`` makes ``<kernel>_grid(arguments...,
gx, gy, gz)``, which calls the kernel once per program, x fastest (program
``i`` is ``(i % gx, i / gx % gy, i / (gx * gy))``), in one thread, every
call with the same scratch buffer on its stack (a thread's own, so threads
running programs later will each have theirs).  It is
what the launcher calls, so a launch is one call from Python however large
the grid.  The entry takes every scalar as the integer of its bits (a float
is bitcast inside), so ctypes can pass any type, 16-bit floats included.
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec.ir.core import Function, clone_block
from tilec.ir.types import PointerType, ScalarType, Type, i8, i32
from tilec.codegen_llvm.kernel import I32, I64, param_type
from tilec.codegen_llvm.scalar_base import counted_loop
from tilec.targets.base import Target

#: Where the program is, the i32 arguments ``add_grid_arguments`` appends first.
GRID_ARGUMENTS = ("program_id_x", "program_id_y", "program_id_z",
                  "num_programs_x", "num_programs_y", "num_programs_z")
#: The scratch memory's argument, appended last.
SCRATCH = "scratch"
#: Every argument ``add_grid_arguments`` appends, in order.
HOST_ARGUMENTS = GRID_ARGUMENTS + (SCRATCH,)
SCRATCH_TYPE = PointerType(i8, space=0)
#: The scratch buffer's alignment: the widest vector any target moves.
SCRATCH_ALIGN = 16
#: What ``grid_entry`` appends to the kernel's name.
GRID_SUFFIX = "_grid"


def add_grid_arguments(fn: Function) -> Function:
    """A copy of ``fn`` taking the ``HOST_ARGUMENTS`` after its own."""
    body = clone_block(fn.body, {})
    for name in GRID_ARGUMENTS:
        body.add_arg(i32, name)
    body.add_arg(SCRATCH_TYPE, SCRATCH)
    attrs = [dict(a) for a in fn.arg_attrs] + [{} for _ in HOST_ARGUMENTS] if fn.arg_attrs else []
    return Function(fn.name, body, list(fn.arg_names) + list(HOST_ARGUMENTS), attrs, fn.loc)


def grid_argument(fn: Function, name: str):
    """The IR argument ``name`` (one of ``HOST_ARGUMENTS``) of a kernel ``add_grid_arguments`` made."""
    return fn.args[len(fn.args) - len(HOST_ARGUMENTS) + HOST_ARGUMENTS.index(name)]


def entry_type(t: Type) -> llir.Type:
    """How ``<kernel>_grid`` takes an argument of IR type ``t``: a pointer as the
    kernel does (its address space is the CPU's one, whatever its number), a
    scalar as the integer of its bits."""
    if isinstance(t, PointerType):
        return param_type(t)
    return llir.IntType(8 if t.is_bool else t.bits)


def grid_entry(fn: Function, target: Target, scratch_bytes: int) -> str:
    """LLVM IR text of a module defining ``<kernel>_grid`` (module docstring)
    and declaring the kernel, ``fn`` as ``add_grid_arguments`` made it, whose
    programs use ``scratch_bytes`` of scratch memory."""
    own = fn.args[:len(fn.args) - len(HOST_ARGUMENTS)]
    module = llir.Module(fn.name + GRID_SUFFIX)
    module.triple, module.data_layout = target.triple, target.data_layout
    kernel_params = [param_type(a.type) for a in fn.args]
    kernel = llir.Function(module, llir.FunctionType(llir.VoidType(), kernel_params), fn.name)
    entry = llir.Function(module, llir.FunctionType(llir.VoidType(), [entry_type(a.type) for a in own] + [I32] * 3),
                          fn.name + GRID_SUFFIX)
    for p, name in zip(entry.args, fn.arg_names[:len(own)] + ["gx", "gy", "gz"]):
        p.name = name
    b = llir.IRBuilder(entry.append_basic_block("entry"))
    args = [_from_bits(b, p, k, a.type) for p, k, a in zip(entry.args, kernel_params, own)]
    grid = list(entry.args[-3:])
    scratch = b.alloca(llir.ArrayType(llir.IntType(8), max(1, scratch_bytes)), name=SCRATCH)
    scratch.align = SCRATCH_ALIGN
    _each_program(b, entry, grid, lambda ids: b.call(kernel, args + ids + grid + [scratch]))
    return str(module)


def _from_bits(b: llir.IRBuilder, arg: llir.Value, kernel_type: llir.Type, t: Type) -> llir.Value:
    """The kernel's argument from the entry's: a float from the integer of its bits."""
    return b.bitcast(arg, kernel_type) if isinstance(t, ScalarType) and t.is_float else arg


def _each_program(b: llir.IRBuilder, entry: llir.Function, grid: list, body) -> None:
    """Emit ``body([x, y, z])`` for every program of the ``grid`` (three i32), then return."""
    gx, gy, gz = (b.zext(g, I64) for g in grid)

    def program(i: llir.Value) -> None:
        rest = b.udiv(i, gx)
        body([b.trunc(v, I32) for v in (b.urem(i, gx), b.urem(rest, gy), b.udiv(rest, gy))])
    counted_loop(b, b.mul(b.mul(gx, gy), gz), program)
    b.ret_void()
