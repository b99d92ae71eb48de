"""The host backend's target lowering of tile IR: scalar per program.

One thread runs a whole program, so it holds every element of every tile:
each tile gets ``scalar_layout(shape)``, a blocked layout whose one thread
holds the whole shape (``spt`` the shape, one thread per warp and one warp),
row-major.  Tiles of one shape then share one layout and no op ever needs a
``convert_layout``; in codegen a tile is a Python list of one scalar LLVM
value per element.

Only ops that compute each element on its own are lowered yet
(``ELEMENTWISE_OPS``: arithmetic, comparisons, casts, math, pointers,
``load``/``store``, program ids, ``print``/``assert``); any other op
(a reduction, ``dot``, a shape change, control flow, atomics) is a
CompilationError at the user's line, saying so.
"""
from __future__ import annotations

from tilec import ir
from tilec.errors import CompilationError
from tilec.ir.core import Function, Op, clone_op, map_block
from tilec.ir.layouts import Blocked
from tilec.ir.types import TileType

#: The ops the ``cpu`` target compiles, by class (and their subclasses).
ELEMENTWISE_OPS = (
    ir.Constant, ir.ProgramId, ir.NumPrograms, ir.Arange, ir.Splat,
    ir.UnaryOp, ir.BinaryOp, ir.Fma, ir.MathCall, ir.Select, ir.Cast, ir.Bitcast, ir.AddPtr, ir.Assume,
    ir.Load, ir.Store, ir.Print, ir.Assert, ir.Barrier,
)


def scalar_layout(shape: tuple[int, ...]) -> Blocked:
    """The layout in which one thread holds a whole tile of ``shape``, row-major."""
    ones = (1,) * len(shape)
    return Blocked(tuple(shape), ones, ones, tuple(reversed(range(len(shape)))))


def assign_scalar_layouts(fn: Function) -> Function:
    """A copy of ``fn`` with ``scalar_layout`` on every tile type; a
    CompilationError at the first op the ``cpu`` target cannot compile yet."""
    for op in ir.walk(fn.body):
        check_elementwise(fn, op)
    body = map_block(fn.body, _with_layouts, {})
    return Function(fn.name, body, list(fn.arg_names), [dict(a) for a in fn.arg_attrs], fn.loc)


def _with_layouts(op: Op, vmap: dict) -> list[Op]:
    new = clone_op(op, vmap)
    for r in new.results:
        if isinstance(r.type, TileType):
            r.type = TileType(r.type.shape, r.type.elem, scalar_layout(r.type.shape))
    return [new]


def check_elementwise(fn: Function, op: Op) -> None:
    """A CompilationError at ``op``'s line unless it is one of ``ELEMENTWISE_OPS``."""
    if not isinstance(op, ELEMENTWISE_OPS):
        raise CompilationError(op.loc.file, op.loc.line, op.loc.col,
                               f"the cpu target cannot compile `{op.NAME}` yet: it compiles only elementwise "
                               "kernels (loads, stores and per-element arithmetic) so far; run this kernel on "
                               "numpy arrays (the interpreter) or on a GPU", fn.name)
