"""Loop-invariant code motion: pure ops of a loop body that use nothing the
loop defines are computed once, before the loop.

Only ops directly in a ``for`` body or a ``while``'s regions move (not ops
nested in an ``if`` inside the loop).  Moving them is safe even when the loop
runs zero times because pure ops never trap (integer division by zero has a
defined, if unspecified, value).  An op with regions (``reduce``) moves if
everything its regions use from outside it is invariant.  ``load`` is not
pure and never moves.  Invariant chains move together; ops of an inner loop
hoisted into an outer body move on in the next round of ``optimize``.
"""
from __future__ import annotations

from typing import Optional, Union

from tilec.ir import ops
from tilec.ir.core import Block, Function, Op, Value, clone_op, map_block, walk
from tilec.opt.rewrite import rebuild

Loop = Union[ops.For, ops.While]


def hoist_loop_invariants(fn: Function) -> Function:
    """``fn`` with the invariant pure ops of every loop moved before it."""
    return rebuild(fn, _rewrite_op)


def _rewrite_op(op: Op, vmap: dict) -> Optional[list[Op]]:
    return _hoist_from(op, vmap) if isinstance(op, (ops.For, ops.While)) else None


def _hoist_from(loop: Loop, vmap: dict) -> list[Op]:
    """The ops hoisted out of ``loop``, then the rebuilt loop."""
    inside = defined_within(loop)
    top_level = {op for region in loop.regions for op in region.ops}
    hoisted: list[Op] = []

    def visit(op: Op, m: dict) -> Optional[list[Op]]:
        if op in top_level and op.PURE and not free_values(op) & inside:
            hoisted.append(clone_op(op, m))
            inside.difference_update(op.results)
            return []
        return _rewrite_op(op, m)

    regions = {f.name: map_block(getattr(loop, f.name), visit, vmap) for f in loop.fields_of_kind("region")}
    return hoisted + [clone_op(loop, vmap, **regions)]


def defined_within(op: Op) -> set[Value]:
    """Every value defined inside ``op``'s regions: block arguments and results."""
    out: set[Value] = set()
    for region in op.regions:
        out.update(_defined_in_block(region))
    return out


def _defined_in_block(block: Block) -> set[Value]:
    out = set(block.args)
    for op in walk(block):
        out.update(op.results)
        for region in op.regions:
            out.update(region.args)
    return out


def free_values(op: Op) -> set[Value]:
    """The values ``op`` (its regions included) uses but does not define."""
    used = set(op.operands)
    for region in op.regions:
        for inner in walk(region):
            used.update(inner.operands)
    return used - defined_within(op)
