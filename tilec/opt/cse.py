"""Common subexpression elimination of pure ops.

Two ops are the same computation when they have the same class, the same
(already deduplicated) operands, equal attributes and the same result types.
The second one is dropped and its results map to the first one's.

Scoping follows the IR: an op seen inside a region is remembered only while
that region is being rebuilt, so a value defined in a loop body is never
reused after the loop.  Ops with regions (``reduce``, ``scan``) are not
merged: comparing their bodies is not worth it yet.
"""
from __future__ import annotations

from collections import ChainMap
from typing import Hashable, Optional

from tilec.ir.core import Function, Op, clone_op, map_block
from tilec.ir.printer import format_attr
from tilec.opt.rewrite import rebuild, replace_results


def eliminate_common_subexpressions(fn: Function) -> Function:
    """``fn`` with each repeated pure computation done once."""
    return rebuild(fn, _Scope(ChainMap()).rewrite_op)


def computation_key(op: Op) -> Hashable:
    """What makes two pure, region-free ops interchangeable.

    Attributes are compared by their printed form, which tells ``1`` from
    ``1.0`` and ``True``, and ``0.0`` from ``-0.0`` (``==`` would not).
    """
    attrs = tuple((k, format_attr(v)) for k, v in op.attributes.items())
    return type(op), tuple(id(v) for v in op.operands), attrs, tuple(r.type for r in op.results)


class _Scope:
    """The computations visible at one nesting level (a child sees its parents')."""

    def __init__(self, seen: ChainMap):
        self.seen = seen

    def child(self) -> "_Scope":
        """A scope for one region of an op: sees ours, adds to its own."""
        return _Scope(self.seen.new_child())

    def rewrite_op(self, op: Op, vmap: dict) -> Optional[list[Op]]:
        if op.regions:
            regions = {f.name: map_block(getattr(op, f.name), self.child().rewrite_op, vmap)
                       for f in op.fields_of_kind("region")}
            return [clone_op(op, vmap, **regions)]
        new = clone_op(op, vmap)
        if not op.PURE:
            return [new]
        key = computation_key(new)
        earlier = self.seen.get(key)
        if earlier is None:
            self.seen[key] = new
            return [new]
        replace_results(vmap, op, earlier.results)
        return []
