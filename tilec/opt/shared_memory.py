"""Where each shared-memory buffer lives: ``plan_shared(fn) -> SharedPlan``.

Every ``local_alloc`` gets a byte offset in the kernel's one dynamic
shared-memory block, 128-byte aligned (1024 for a swizzled matrix: NVIDIA's
warpgroup instructions and bulk copies apply the swizzle to address bits,
so its pattern must start on a 1024-byte boundary), and buffers that are never live at
the same time share bytes.

*Program points.*  Ops are numbered in program order (a pre-order walk);
an op with regions spans from its own number to its last nested op's.

*Live ranges.*  A buffer lives from its ``local_alloc`` to its last use.  A
use inside a loop (``for``/``while``) that does not contain the alloc
extends the range to the end of the outermost such loop: the next iteration
uses the buffer again.  (A buffer is only ever used as its alloc's own
result: ``gpu_ops`` guarantees it.)

*Placement.*  Buffers in order of their allocs, each at the lowest aligned
offset that overlaps no already-placed buffer whose range meets its own
(first fit).

``live_top(op)`` is the end of the highest buffer live while ``op`` runs:
the codegen puts an op's transient scratch (a layout conversion, a
reduction across warps) above it.  ``size`` is the most any op needs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tilec import ir
from tilec.ir.core import Block, Function, Op
from tilec.ir.layouts import Shared

ALIGN = 128
SWIZZLED_ALIGN = 1024
LOOPS = (ir.For, ir.While)


@dataclass
class SharedPlan:
    """``offsets[alloc]``: byte offset of each ``local_alloc``; ``sizes[alloc]``
    its bytes; ``ranges[alloc]`` its live ``(first, last)`` program points."""

    offsets: dict[Op, int] = field(default_factory=dict)
    sizes: dict[Op, int] = field(default_factory=dict)
    ranges: dict[Op, tuple[int, int]] = field(default_factory=dict)
    points: dict[Op, int] = field(default_factory=dict)

    def live_top(self, op: Op) -> int:
        """The end of the highest buffer live at ``op`` (0 when none is)."""
        at = self.points[op]
        return max((self.offsets[a] + self.sizes[a] for a, (lo, hi) in self.ranges.items() if lo <= at <= hi),
                   default=0)

    @property
    def size(self) -> int:
        """Bytes the kernel needs for its buffers (the most ``live_top`` of any op)."""
        return max((self.offsets[a] + self.sizes[a] for a in self.offsets), default=0)


def plan_shared(fn: Function) -> SharedPlan:
    """Offsets for every ``local_alloc`` of ``fn`` (module docstring)."""
    plan = SharedPlan()
    spans, loops_of = _number(fn.body, plan.points)
    for op in plan.points:
        if isinstance(op, ir.LocalAlloc):
            plan.sizes[op] = op.nbytes
            plan.ranges[op] = _live_range(op, plan.points, spans, loops_of)
    for alloc in plan.ranges:  # dicts keep program order
        plan.offsets[alloc] = _first_fit(plan, alloc)
    return plan


def _number(body: Block, points: dict) -> tuple[dict[Op, int], dict[Op, list[Op]]]:
    """Fill ``points`` (op -> number, pre-order); return each op's span end
    and the loops around each op, outermost first."""
    spans: dict[Op, int] = {}
    loops_of: dict[Op, list[Op]] = {}

    def visit(block: Block, loops: list[Op]) -> None:
        for op in block.ops:
            points[op] = len(points)
            loops_of[op] = loops
            inner = loops + [op] if isinstance(op, LOOPS) else loops
            for region in op.regions:
                visit(region, inner)
            spans[op] = len(points) - 1

    visit(body, [])
    return spans, loops_of


def _live_range(alloc: Op, points: dict, spans: dict, loops_of: dict) -> tuple[int, int]:
    start = points[alloc]
    end = start
    for user in _users(alloc, points):
        end = max(end, points[user])
        outside = [loop for loop in loops_of[user] if not points[loop] < start <= spans[loop]]
        if outside:
            end = max(end, spans[outside[0]])
    return start, end


def _users(alloc: Op, points: dict) -> list[Op]:
    return [op for op in points if alloc.result in op.operands]


def _first_fit(plan: SharedPlan, alloc: Op) -> int:
    """The lowest aligned offset where ``alloc`` overlaps no placed buffer live with it."""
    lo, hi = plan.ranges[alloc]
    taken = sorted((plan.offsets[o], plan.offsets[o] + plan.sizes[o]) for o in plan.offsets
                   if plan.ranges[o][0] <= hi and lo <= plan.ranges[o][1])
    offset = 0
    for begin, end in taken:
        if offset + plan.sizes[alloc] <= begin:
            break
        offset = max(offset, _align(end, _alignment(alloc)))
    return offset


def _alignment(alloc: Op) -> int:
    layout = alloc.results[0].type.layout
    return SWIZZLED_ALIGN if isinstance(layout, Shared) and layout.max_phase > 1 else ALIGN


def _align(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment
