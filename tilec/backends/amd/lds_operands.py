"""Loop-invariant dot operands written to LDS once, before their loops.

A dot on MFMA/WMMA reads its operands from LDS (``matrix.py``): one the
layout pass leaves in registers is written there by the dot itself, every
time it runs.  An operand made before the loops its dots are in (attention's
``q``, which both of the causal kernel's loops read) was so written every
iteration, and its registers stayed live through every loop.
``invariant_operands_in_lds`` writes it to a buffer once, where it is made::

    %q = ...
    %q_lds = local_alloc [1, *q's shape]        in the layout its dots read (matrix.lds_layout)
    barrier                                      the buffer may reuse memory just read
    local_store %q_lds[0], %q
    barrier
    for ... {
        %q_1 = local_load %q_lds[0]              left to the dot, which reads it in place
        ... dot %q_1, ...
    }

A value qualifies when it is a 2-D tile whose every use is the same operand
(``a`` or ``b``) of a dot on the matrix unit inside a loop that does not
make the value.  The buffer lives until its last use (``opt/shared_memory``);
whatever writes LDS later waits at a barrier first (scratch writers all do).
Nothing is rewritten when the LDS would not fit (``lds_bytes``).  It runs
after the stream pipeliner (a loop's ``q`` is not one of its buffered loads:
it is loaded before the loop).
"""
from __future__ import annotations

from typing import Optional

from tilec import ir
from tilec.ir.core import Block, Function, Op, Value, clone_op
from tilec.ir.types import TileType, i32
from tilec.opt.pipelining import users_of
from tilec.opt.rewrite import rebuild
from tilec.targets.base import Target
from tilec.backends.amd.matrix import lds_layout, planned


def invariant_operands_in_lds(fn: Function, target: Target, num_warps: int) -> Function:
    """``fn`` with its loop-invariant dot operands written to LDS once (module docstring)."""
    picks = invariant_operands(fn, target, num_warps)
    if not picks or lds_bytes(fn, picks, num_warps) > target.max_shared_bytes:
        return fn
    bufs: dict[Value, Value] = {}
    zero: list[Value] = []

    def rewrite(op: Op, vmap: dict) -> Optional[list[Op]]:
        if isinstance(op, ir.Dot) and any(v in picks for v in (op.a, op.b)):
            ops, changes = [], {}
            for name, v in (("a", op.a), ("b", op.b)):
                if v in picks:
                    load = ir.LocalLoad(loc=op.loc, buf=bufs[v], slot=zero[0]).make_results()
                    load.result.type = v.type  # its registers' layout, should anything read them so
                    load.result.name = v.name
                    ops.append(load)
                    changes[name] = load.result
            return ops + [clone_op(op, vmap, **changes)]
        made = [v for v in op.results if v in picks]
        if not made:
            return None
        out = [clone_op(op, vmap)]
        if not zero:
            out.append(ir.Constant(loc=op.loc, value=0, type=i32).make_results())
            zero.append(out[-1].result)
        for v in made:
            side, dot = picks[v]
            t = v.type
            alloc = ir.LocalAlloc(loc=op.loc, shape=(1,) + t.shape, elem=t.elem,
                                  layout=lds_layout(planned(dot, target, num_warps), side, t.shape, t.elem))
            alloc.make_results()
            alloc.result.name = f"{v.name}_lds" if v.name else None
            bufs[v] = alloc.result
            out += [alloc, ir.Barrier(loc=op.loc).make_results(),
                    ir.LocalStore(loc=op.loc, buf=alloc.result, slot=zero[0], value=vmap[v]).make_results(),
                    ir.Barrier(loc=op.loc).make_results()]
        return out

    return rebuild(fn, rewrite)


def invariant_operands(fn: Function, target: Target, num_warps: int) -> dict[Value, tuple]:
    """The values that qualify (module docstring): value -> (operand index, one dot that reads it)."""
    users = users_of(fn.body)
    loops_of: dict[Op, list[Op]] = {}
    made_in: dict[Value, list[Op]] = {}

    def visit(block: Block, loops: list[Op]) -> None:
        for a in block.args:
            made_in[a] = loops
        for op in block.ops:
            loops_of[op] = loops
            for r in op.results:
                made_in[r] = loops
            for region in op.regions:
                visit(region, loops + [op] if isinstance(op, ir.For) else loops)

    visit(fn.body, [])
    picks: dict[Value, tuple] = {}
    for dot in loops_of:
        if not isinstance(dot, ir.Dot) or not planned(dot, target, num_warps):
            continue
        for side, v in enumerate((dot.a, dot.b)):
            if v in picks or v not in made_in or not isinstance(v.type, TileType) or len(v.type.shape) != 2:
                continue
            uses = users.get(v, [])
            if all(isinstance(u, ir.Dot) and _side(u, v) == side and planned(u, target, num_warps)
                   and len(loops_of[u]) > len(made_in[v]) and loops_of[u][:len(made_in[v])] == made_in[v]
                   for u in uses):
                picks[v] = (side, dot)
    return picks


def lds_bytes(fn: Function, picks: dict, num_warps: int) -> int:
    """At most what ``fn`` needs of LDS with ``picks`` in buffers: those, its
    other buffers, and the most one op writes there for itself: a dot the
    operands it stages, a reduction, scan or histogram its result once a
    wave, an op moving a tile between threads (layout conversions, reshapes,
    gathers, atomics sharing their old values) that tile."""
    buffers, scratch = sum(_tile_bytes(v) for v in picks), 0
    for op in ir.walk(fn.body):
        if isinstance(op, ir.LocalAlloc):
            buffers += _tile_bytes(op.result)
        elif isinstance(op, ir.Dot):
            scratch = max(scratch, sum(_tile_bytes(v) for v in (op.a, op.b) if v not in picks))
        elif isinstance(op, (ir.Reduce, ir.Scan, ir.Histogram)):
            scratch = max(scratch, sum(_tile_bytes(r) + 16 for r in op.results) * num_warps)
        elif isinstance(op, _MOVES):
            scratch = max(scratch, sum(map(_tile_bytes, op.operands)), sum(map(_tile_bytes, op.results)))
    return buffers + scratch


_MOVES = (ir.ConvertLayout, ir.Reshape, ir.Permute, ir.Join, ir.Split, ir.Gather, ir.AtomicRMW, ir.AtomicCAS)


def _side(dot: ir.Dot, v: Value) -> Optional[int]:
    """0 when ``v`` is only ``dot``'s ``a``, 1 when only its ``b``, else None."""
    place = [v is dot.a, v is dot.b, v is dot.acc]
    return place.index(True) if place.count(True) == 1 and not place[2] else None


def _tile_bytes(v: Value) -> int:
    t = v.type
    return t.numel * t.elem.bytes if isinstance(t, TileType) else 0
