"""``map_elementwise`` and ``inline_asm`` (``map_ops``) in the interpreter.

``map_elementwise`` runs its scalar body once for the whole chunk, with the
*elements* as the batch: every group of ``pack`` elements of every program
becomes one row of a frame of its own, so the body's scalar ops run as
numpy ops over all elements at once, and its ``if``/``for``/``while`` split
that batch where elements disagree, exactly as they split programs
(``interpret``).  The frame is a sub-frame of the programs' one whose rows
are the elements, so a scalar the body reads from outside (a constant the
passes shared) reaches each element from its program.  Groups are
consecutive elements in row-major order.

``inline_asm`` is text in some target's assembly; nothing here can run it.
"""
from __future__ import annotations

import math

import numpy as np

from tilec.ir import map_ops
from tilec.ir.interpret import Frame, run_block, runs
from tilec.ir.types import shape_of


@runs(map_ops.MapElementwise)
def _map_elementwise(op, frame):
    shape, pack = shape_of(op.srcs[0].type), op.pack
    groups = math.prod(shape) // pack
    srcs = [np.broadcast_to(frame[v], (frame.size,) + shape).reshape(frame.size * groups, pack) for v in op.srcs]
    programs = np.repeat(np.arange(frame.size), groups)  # each element's program: what it reads of outer scalars
    elements = Frame(frame.launch, frame.pids[programs], frame, programs)
    yielded = run_block(op.body, elements, [src[:, j] for src in srcs for j in range(pack)])
    rows = frame.size * groups
    columns = [np.broadcast_to(v, (rows,)) for v in yielded]
    frame.bind(op.results, [np.stack(columns[k:k + pack], axis=1).reshape((frame.size,) + shape)
                            for k in range(0, len(columns), pack)])


@runs(map_ops.InlineAsm)
def _inline_asm(op, frame):
    frame.launch.raise_at(op, "`inline_asm_elementwise` runs the target's assembly, which the interpreter cannot "
                              "run: this kernel needs a GPU target (launch it on a CUDA device, or compile it "
                              "with kernel.compile(..., target=\"<arch>\"))")
