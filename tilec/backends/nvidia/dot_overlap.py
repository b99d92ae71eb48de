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

*Which dot*: one at the top of the ``for`` body that fits the warpgroups
(``layouts.fits_warpgroups``, accumulator ``Mma((num_warps, 1))``), whose
``b`` the pipeliner reads from a matrix a descriptor describes, whose
``acc`` is a carried value and whose one user is the ``yield`` passing it
on in the same place.  Any other dot waits for itself.
"""
from __future__ import annotations

from typing import Callable, Optional

from tilec import ir
from tilec.ir.layouts import Shared
from tilec.ir.layouts_nvidia import Mma
from tilec.ir.types import elem_type
from tilec.targets.base import Target
from tilec.backends.nvidia.layouts import fits_warpgroups
from tilec.backends.nvidia.wgmma import descriptor_for


def overlapped_dot(loop: ir.For, users: dict, shared_layout: Callable[[ir.Value], Optional[Shared]],
                   num_warps: int, target: Target) -> Optional[tuple[int, ir.Dot]]:
    """``(carried index, dot)`` of ``loop``'s dot that may keep running, or
    None; ``users`` maps each value to its users (the pipeliner's), and
    ``shared_layout(v)`` is the layout of the shared matrix the pipeliner
    will read dot operand ``v`` from (None: not from one)."""
    if not target.group_matrix_instructions:
        return None
    body = loop.body
    terminator = body.terminator
    for op in body.ops:
        if not isinstance(op, ir.Dot) or users.get(op.result) != [terminator]:
            continue
        place = terminator.values.index(op.result)
        if op.acc is not body.args[1 + place] or op.result.type.layout != Mma((num_warps, 1)):
            continue
        layout = shared_layout(op.b)
        if layout is not None and fits_warpgroups(op, num_warps, target) and \
                descriptor_for(layout, (1,) + op.b.type.shape, elem_type(op.b.type), is_a=False) is not None:
            return place, op
    return None
