"""Which warpgroup dot of a software-pipelined K loop may keep running
across iterations (``pipeline.py`` asks; ``wgmma.py`` lowers what it makes).

A K loop's ``acc = dot(a, b, acc)`` whose result only feeds the next
iteration need not wait for its instructions: the next iteration's
instructions accumulate into the same registers, which the hardware allows
while they are in flight.  Waiting for all but the newest group (``dot_wait
{pending = 1}``) lets iteration ``i``'s instructions run while iteration
``i + 1`` waits for its copies and issues its own::

    for ... {
      async_wait; barrier
      %acc2 = dot %a, %b, %acc               # issued, not waited for
      %acc3 = dot_wait %acc2 {pending = 1}   # iteration i-1's are done
      async_copy ... into the write slot     # the slot iteration i-2 read
      yield %acc3 ...
    }
    %r = dot_wait %result {pending = 0}      # before anything reads it

Iteration ``i - 1``'s instructions may still read their slot until this
iteration's wait, in another warpgroup until it passes the next barrier:
the pipeliner gives such a loop one more slot than stages, so the copies
of iteration ``i`` go to the slot iteration ``i - 2`` read, which every
warpgroup finished before the barrier at the top of iteration ``i`` (as
Triton's pipeliner does).

*Deferred*: a dot whose accumulator is computed in the body (attention's
``acc = dot(p, v, acc * alpha)``) cannot take the next iteration's
instructions into the same registers; its result goes to the ``yield``
unwaited and the next iteration waits for it (``pending = 0``) just before
the first op that reads the carried value, so iteration ``i``'s
instructions run while iteration ``i + 1`` waits for its copies and issues
its first dot (Triton's pipeliner leaves attention's second dot running the
same way)::

    for ... {
      async_wait; barrier
      %s = dot %q, %k, %zeros                 # waits for itself
      ...softmax...
      %acc1 = dot_wait %acc {pending = 0}     # iteration i-1's dot is done
      %acc2 = dot %p, %v, (%acc1 * %alpha)    # issued, not waited for
      async_copy ... into the write slot
      yield %acc2 ...
    }

The extra slot covers it as above: every warpgroup waited for iteration
``i - 2``'s dot before the barrier of iteration ``i``.

*Which dot*: one whose one user is the ``yield`` passing it on, that fits
the warpgroups (``layouts.fits_warpgroups``, accumulator ``Mma((num_warps,
1))``) and whose ``b`` the pipeliner reads from a matrix a descriptor
describes: chained when its ``acc`` is the carried value and nothing else
reads that, else deferred.  Any other dot waits for itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from tilec import ir
from tilec.ir.layouts import Shared
from tilec.ir.layouts_nvidia import Mma
from tilec.ir.types import elem_type
from tilec.targets.base import Target
from tilec.backends.nvidia.layouts import fits_warpgroups
from tilec.backends.nvidia.wgmma import descriptor_for


@dataclass(frozen=True)
class Overlap:
    """The dot of a loop left running: its place among the carried values,
    and whether its wait goes to the next iteration (``deferred``) or right
    after it with ``pending = 1`` (chained)."""

    place: int
    dot: ir.Dot
    deferred: bool


def overlapped_dot(loop: ir.For, users: dict, shared_layout: Callable[[ir.Value], Optional[Shared]],
                   num_warps: int, target: Target) -> Optional[Overlap]:
    """The dot of ``loop`` that may keep running, or None; ``users`` maps
    each value to its users (the pipeliner's), and ``shared_layout(v)`` is
    the layout of the shared matrix the pipeliner will read dot operand
    ``v`` from (None: not from one)."""
    if not target.group_matrix_instructions:
        return None
    body = loop.body
    terminator = body.terminator
    for op in body.ops:
        if not isinstance(op, ir.Dot) or users.get(op.result) != [terminator]:
            continue
        place = terminator.values.index(op.result)
        if op.result.type.layout != Mma((num_warps, 1)):
            continue
        layout = shared_layout(op.b)
        if layout is not None and fits_warpgroups(op, num_warps, target) and \
                descriptor_for(layout, (1,) + op.b.type.shape, elem_type(op.b.type), is_a=False) is not None:
            carried = body.args[1 + place]
            return Overlap(place, op, deferred=op.acc is not carried or users.get(carried) != [op])
    return None
