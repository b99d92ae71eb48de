"""Warpgroup dots left running across loop iterations (after software
pipelining, on targets with warpgroup instructions: ``wgmma.py``).

A K loop's ``acc = dot(a, b, acc)`` whose result only feeds the next
iteration need not wait for its instructions: the next iteration's
instructions accumulate into the same registers, which the hardware allows
while they are in flight.  Waiting for all but the newest group (``dot_wait
{pending = 1}``) lets iteration ``i``'s instructions run while iteration
``i + 1`` waits for its copies and issues its own::

    for ... {
      ...
      %acc2 = dot %a, %b, %acc           # issued, not waited for
      %acc3 = dot_wait %acc2 {pending = 1}   # iteration i-1's are done
      barrier                            # ... in every warpgroup
      async_copy ...                     # may now overwrite what i-1 read
      yield %acc3 ...
    }
    %r = dot_wait %result {pending = 0}  # before anything reads it

The barrier matters with more than one warpgroup: the copies after it
overwrite the slot iteration ``i - 1`` read, and each warpgroup only knows
its own instructions are done.

*Which dots*: a ``dot`` at the top of a ``for`` body that fits the
warpgroups (``layouts.fits_warpgroups``, accumulator ``Mma((num_warps,
1))``), whose ``b`` is a pipelined ``local_load`` a descriptor can describe,
whose ``acc`` is a carried value and whose one user is the ``yield``
passing it on in the same place.  Any other dot waits for itself.
"""
from __future__ import annotations

from typing import Optional

from tilec import ir
from tilec.ir.core import Function, Op, clone_op, map_block
from tilec.ir.layouts_nvidia import Mma
from tilec.ir.types import elem_type
from tilec.opt.rewrite import make_op, rebuild
from tilec.targets.base import Target
from tilec.backends.nvidia.layouts import fits_warpgroups
from tilec.backends.nvidia.wgmma import descriptor_for


def overlap_warpgroup_dots(fn: Function, num_warps: int, target: Target) -> Function:
    """``fn`` with every qualifying loop dot left running (module docstring)."""
    if not target.group_matrix_instructions:
        return fn

    def rewrite(op: Op, vmap: dict) -> Optional[list[Op]]:
        if not isinstance(op, ir.For):
            return None
        found = overlappable_dot(op, num_warps, target)
        if found is None:
            return None
        place, dot = found

        def in_body(inner: Op, vm: dict) -> Optional[list[Op]]:
            if inner is not dot:
                return rewrite(inner, vm)
            issued = clone_op(inner, vm)
            wait = make_op(ir.DotWait, inner, value=issued.result, pending=1)
            vm[inner.result] = wait.result
            return [issued, wait, ir.Barrier(loc=inner.loc).make_results()]

        loop = clone_op(op, vmap, body=map_block(op.body, in_body, vmap))
        done = ir.DotWait(loc=op.loc, value=loop.results[place], pending=0).make_results(
            [op.results[place].name])
        vmap[op.results[place]] = done.result
        return [loop, done]

    return rebuild(fn, rewrite)


def overlappable_dot(loop: ir.For, num_warps: int, target: Target) -> Optional[tuple[int, ir.Dot]]:
    """``(carried index, dot)`` of ``loop``'s dot that may keep running, or None."""
    body = loop.body
    terminator = body.ops[-1]
    uses: dict = {}
    for op in ir.walk(body):
        for v in op.operands:
            uses[v] = uses.get(v, 0) + 1
    for op in body.ops:
        if not isinstance(op, ir.Dot) or uses.get(op.result) != 1 or op.result not in terminator.values:
            continue
        place = terminator.values.index(op.result)
        if op.acc is not body.args[1 + place] or op.result.type.layout != Mma((num_warps, 1)):
            continue
        if fits_warpgroups(op, num_warps, target) and _described_in_shared(op.b):
            return place, op
    return None


def _described_in_shared(b: ir.Value) -> bool:
    """True for a ``local_load`` of a matrix the tensor cores read by descriptor."""
    load = b.owner
    if not isinstance(load, ir.LocalLoad):
        return False
    buf = load.buf.type
    return descriptor_for(buf.layout, buf.shape, elem_type(b.type), is_a=False) is not None
