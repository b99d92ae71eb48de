"""The host backend's target lowering of tile IR: scalar per program.

One thread runs a whole program, so it holds every element of every tile:
each tile gets ``scalar_layout(shape)``, a blocked layout whose one thread
holds the whole shape (``spt`` the shape, one thread per warp and one warp),
row-major.  Tiles of one shape then share one layout and no op ever needs a
``convert_layout``; in codegen a tile is a Python list of one scalar LLVM
value per element.

The ops lowered so far (``HOST_OPS``), each by its generic rule:
elementwise arithmetic, comparisons, casts, math, pointers,
``load``/``store``, program ids, ``print``/``assert``; reductions and
scans (inside the thread); ``expand_dims``, broadcasts and the shape ops;
``dot`` (on the FMA path); ``gather`` and ``histogram``; ``for``,
``while`` and ``if``; atomics.  What a GPU block stages in shared memory
goes through the program's scratch buffer (``grid.py``); with one thread a
program, nothing is left to an owner thread, so an atomic's old value needs
no sharing (``memory._owner``).  Any
other op (``map_elementwise``, the GPU's special registers) is a
CompilationError at the user's line, saying so.
"""
from __future__ import annotations

from tilec import ir
from tilec.errors import CompilationError
from tilec.ir.core import Block, Function, Op, Value, clone_block
from tilec.ir.layouts import Blocked
from tilec.ir.types import TileType

#: The ops the ``cpu`` target compiles, by class (and their subclasses).
HOST_OPS = (
    ir.Constant, ir.ProgramId, ir.NumPrograms, ir.Arange, ir.Splat,
    ir.UnaryOp, ir.BinaryOp, ir.Fma, ir.MathCall, ir.Select, ir.Cast, ir.Bitcast, ir.AddPtr, ir.Assume,
    ir.Load, ir.Store, ir.Print, ir.Assert, ir.Barrier,
    ir.Reduce, ir.Scan, ir.ExpandDims, ir.Broadcast, ir.AtomicRMW, ir.AtomicCAS,
    ir.For, ir.While, ir.If, ir.Yield, ir.Condition,
    ir.Dot, ir.Reshape, ir.Permute, ir.Join, ir.Split, ir.Gather, ir.Histogram,
)


def scalar_layout(shape: tuple[int, ...]) -> Blocked:
    """The layout in which one thread holds a whole tile of ``shape``, row-major."""
    ones = (1,) * len(shape)
    return Blocked(tuple(shape), ones, ones, tuple(reversed(range(len(shape)))))


def assign_scalar_layouts(fn: Function) -> Function:
    """A copy of ``fn`` with ``scalar_layout`` on every tile type; a
    CompilationError at the first op the ``cpu`` target cannot compile yet."""
    for op in ir.walk(fn.body):
        check_supported(fn, op)
    body = clone_block(fn.body, {})
    _lay_out(body)
    return Function(fn.name, body, list(fn.arg_names), [dict(a) for a in fn.arg_attrs], fn.loc)


def _lay_out(block: Block) -> None:
    """Put ``scalar_layout`` on the tiles of ``block`` (a fresh copy): its
    arguments, every op's results, every region's arguments (a loop's
    carried values)."""
    for v in block.args:
        _with_layout(v)
    for op in ir.walk(block):
        for v in op.results + [a for region in op.regions for a in region.args]:
            _with_layout(v)


def _with_layout(v: Value) -> None:
    if isinstance(v.type, TileType):
        v.type = TileType(v.type.shape, v.type.elem, scalar_layout(v.type.shape))


def check_supported(fn: Function, op: Op) -> None:
    """A CompilationError at ``op``'s line unless it is one of ``HOST_OPS``."""
    if not isinstance(op, HOST_OPS):
        raise CompilationError(op.loc.file, op.loc.line, op.loc.col,
                               f"the cpu target cannot compile `{op.NAME}` yet: it compiles elementwise code, "
                               "reductions, scans, shape ops, dots, gathers, loops, branches and atomics so far; "
                               "run this kernel on numpy arrays (the interpreter) or on a GPU", fn.name)
