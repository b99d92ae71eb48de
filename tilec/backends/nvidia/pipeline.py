"""Software pipelining of ``for`` loops that feed the tensor cores (the NVIDIA
backend's target lowering, after layout assignment), on targets with
asynchronous copies (``Target.async_copies``: ``cp.async``).

A K loop loads tiles and converts them to ``DotOperand`` layouts for a
``dot``.  With ``num_stages = S`` the loads of iteration ``i + S - 1`` are
issued as asynchronous copies into shared memory while iteration ``i``
computes, so the memory latency of S - 1 iterations hides behind the math.

*Stages* and *bail-outs*: ``tilec/opt/pipelining.py`` (shared with AMD's
stream pipeliner); the candidates here are loads whose every use is a
``convert_layout`` to a ``DotOperand`` layout, and the converts are what the
rewrite replaces.

*Rewrite* (``_Pipeliner``)::

    %buf = local_alloc [S, *tile]           one per candidate, swizzled
    barrier                                  the buffers may reuse memory just read
    prologue p = 0 .. S-2: stage 0 at iv = lower + p*step, copies masked by
        iv < upper into slot p; async_commit
    for iv ... carrying (the loop's values, stage-0 ones S-1 iterations
            ahead; read slot; write slot):
        async_wait {pending = S-2}; barrier
        local_load the read slot in each convert's DotOperand layout
        the last stage
        stage 0 at iv + (S-1)*step, copies masked by it < upper into the
            write slot; async_commit
        yield, slots advanced (compare + select, no division)
    async_wait {pending = 0}; barrier        no copy lands in reused memory

The slot written in iteration ``i`` is the one read in ``i - 1``, which
every thread finished before this iteration's barrier.  The copies go after
the math: right after the barrier the tensor cores wait only for their
first ``ldmatrix``, and the copies issue while the instructions run.  A copy's mask is
``mask & splat(valid)`` (``StageEmitter.masked``), so the copy keeps its 16-byte vectors.

The prologue's ``lower + p*step`` and the body's ``iv + (S-1)*step`` may wrap
for loops ending within ``(S-1)*step`` of the bound type's maximum (as
Triton's pipeliner).
"""
from __future__ import annotations

import dataclasses
from collections import ChainMap
from functools import partial
from typing import Optional

from tilec import ir
from tilec.ir.builder import Builder
from tilec.ir.core import Function, Op, Value, clone_op
from tilec.ir.layouts import Blocked, Shared
from tilec.ir.layouts_nvidia import DotOperand, swizzled_layout
from tilec.ir.types import TileType, i32
from tilec.opt import pipelining
from tilec.opt.pipelining import LoopStages, StageEmitter, next_slot, rewrite_loops
from tilec.targets.base import Target
from tilec.backends.nvidia.dot_overlap import Overlap, overlapped_dot
from tilec.backends.nvidia.tma import tensor_map_for


def pipeline_loops(fn: Function, num_stages: int, target: Target, num_warps: int) -> Function:
    """``fn`` with every loop that qualifies pipelined over ``num_stages``
    stages (``num_stages < 2``, or a target without asynchronous copies:
    unchanged); a dot on ``target``'s warpgroup instructions with
    ``num_warps`` warps may be left running (``dot_overlap.py``)."""
    if num_stages < 2 or not target.async_copies:
        return fn

    def rewrite(loop: ir.For, users: dict, vmap: dict) -> list[Op]:
        stages = analyze_loop(loop, users)
        overlap = overlapped_dot(loop, users, partial(_operand_buffer_layout, stages), num_warps, target)
        if overlap is not None and overlap.deferred and not _waitable_in_last_stage(stages, overlap):
            overlap = None
        return _Pipeliner(stages, num_stages, vmap, overlap, target.bulk_tensor_copies).emit()

    return rewrite_loops(fn, rewrite)


def _waitable_in_last_stage(stages: LoopStages, overlap: Overlap) -> bool:
    """Whether a deferred dot's carried value is read by the last stage only
    (its wait goes before the first reader there; stage 0 runs ahead)."""
    carried = stages.loop.body.args[1 + overlap.place]
    return overlap.place not in stages.carried0 and not any(_reads(op, carried) for op in stages.stage0)


def _reads(op: Op, value: Value) -> bool:
    """Whether ``op`` or an op of its regions takes ``value``."""
    return value in op.operands or any(_reads(inner, value) for region in op.regions for inner in region.ops)


def analyze_loop(loop: ir.For, users: dict[Value, list[Op]]) -> LoopStages:
    """The stages of ``loop`` (``pipelining.analyze_loop`` with this backend's
    candidates), or ``NotPipelinable`` saying why it cannot be pipelined."""
    return pipelining.analyze_loop(loop, users, _dot_operand_converts)


def _dot_operand_converts(op: Op, users: dict) -> Optional[list[Op]]:
    """The uses of a load's value when every one is a convert to a dot operand
    layout, or every one a transpose into one (``tl.dot(a, b.T)``), else None."""
    uses = users.get(op.result, [])
    ok = bool(uses) and (all(isinstance(u, ir.ConvertLayout) and isinstance(u.layout, DotOperand) for u in uses)
                         or all(_transposes_to_dot_operand(u) for u in uses))
    return uses if ok else None


def _transposes_to_dot_operand(op: Op) -> bool:
    """A matrix transposed straight into a dot operand layout."""
    return (isinstance(op, ir.Permute) and tuple(op.order) == (1, 0)
            and isinstance(op.result.type.layout, DotOperand))


def transposed(stages: LoopStages, load: ir.Load) -> bool:
    """Whether ``load``'s tile reaches its dots transposed: its buffer holds the transpose."""
    return isinstance(stages.converts[load][0], ir.Permute)


# --------------------------------------------------------------------------- #
# Rewrite
# --------------------------------------------------------------------------- #

class _Pipeliner(StageEmitter):
    """Emits the pipelined form of one loop (module docstring) into the
    enclosing block (``self.out``), reading outer values through ``vmap``."""

    def __init__(self, stages: LoopStages, num_stages: int, vmap: dict, overlap: Optional[Overlap],
                 bulk_copies: bool):
        super().__init__(stages, vmap)
        self.n, self.overlap = num_stages, overlap
        # a dot left running still reads the slot of the iteration before: one more slot
        self.slots = num_stages + (overlap is not None)
        self.tma = {load for load in stages.loads
                    if bulk_copies and _bulk_copyable(load, self.slots, transposed(stages, load))}
        self.cp_async = [load for load in stages.loads if load not in self.tma]

    def emit(self) -> list[Op]:
        loop, out = self.s.loop, self.out
        self.bufs = {load: self.alloc(load) for load in self.s.loads}
        out.create(ir.Barrier)
        carried = [self.outer(v) for v in loop.inits]
        for p in range(self.n - 1):
            step = self.const(p * self.s.step, self.bound_type)
            iv = self.lower if p == 0 else out.value(ir.Add, lhs=self.lower, rhs=step)
            carried = self.copies(out, iv, carried, self.const(p))
        new_loop = self.main_loop(carried)
        if self.cp_async:
            out.create(ir.AsyncWait, pending=0)
        out.create(ir.Barrier)
        if self.tma:  # every copy landed and was waited for: the mbarriers' bytes may be reused
            for load in self.s.loads:
                if load in self.tma:
                    out.create(ir.TmaRelease, buf=self.bufs[load])
            out.create(ir.Barrier)
        self.vmap.update(zip(loop.results, new_loop.results))
        if self.overlap is not None:
            place = self.overlap.place
            result = loop.results[place]
            done = out.value(ir.DotWait, name=result.name, value=new_loop.results[place], pending=0)
            self.vmap[result] = done
        return out.block.ops

    def alloc(self, load: ir.Load) -> Value:
        """A buffer of ``slots`` slots for ``load``'s tile, or its transpose (``buffer_type``)."""
        t = buffer_type(load, self.slots, transposed(self.s, load))
        name = f"{load.result.name}_smem" if load.result.name else None
        return self.out.value(ir.LocalAlloc, name=name, shape=t.shape, elem=t.elem, layout=t.layout,
                              mbarriers=load in self.tma)

    def copies(self, b: Builder, iv: Value, carried: list[Value], slot: Value) -> list[Value]:
        """Stage 0 at ``iv`` with its loads as copies into ``slot``, the
        ``cp.async`` ones one group (``StageEmitter.stage0``)."""
        carried = self.stage0(b, iv, carried, partial(self.copy, slot=slot))
        if self.cp_async:
            b.create(ir.AsyncCommit)
        return carried

    def copy(self, b: Builder, load: ir.Load, vmap, valid: Value, slot: Value) -> None:
        """``load`` as a copy into ``slot``, masked by ``valid`` too: a ``tma_copy``
        of its descriptor's block where it can be one, else an ``async_copy``."""
        ptr, mask = self.masked(b, load, vmap, valid)
        transpose = transposed(self.s, load)
        with b.located(load.loc):
            if load in self.tma:
                b.create(ir.TmaCopy, buf=self.bufs[load], slot=slot, ptr=ptr, mask=mask, pred=valid,
                         coords=[vmap.get(c, c) for c in load.coords], descriptor=load.descriptor,
                         transpose=transpose)
            else:
                b.create(ir.AsyncCopy, buf=self.bufs[load], slot=slot, ptr=ptr, mask=mask, transpose=transpose)

    def main_loop(self, carried: list[Value]) -> ir.For:
        """The loop over the original range, its body in a fresh block."""
        loop, n = self.s.loop, self.n
        ahead, slot_consts = self.const((n - 1) * self.s.step, self.bound_type), self.slot_consts()
        inits = carried + [self.const(0), self.const(n - 1)] + [self.const(0)] * bool(self.tma)
        new = ir.For(lower=self.lower, upper=self.upper, step=self.outer(loop.step), inits=inits, loc=loop.loc)
        iv = new.body.add_arg(self.bound_type, loop.body.args[0].name)
        args = [new.body.add_arg(a.type, a.name) for a in loop.body.args[1:]]
        read, write = new.body.add_arg(i32, "read_slot"), new.body.add_arg(i32, "write_slot")
        phase = new.body.add_arg(i32, "read_phase") if self.tma else None
        b = Builder(new.body, loop.loc)
        if self.cp_async:
            b.create(ir.AsyncWait, pending=n - 2)
        for load in self.s.loads:
            if load in self.tma:
                b.create(ir.TmaWait, buf=self.bufs[load], slot=read, phase=phase)
        b.create(ir.Barrier)
        vmap = ChainMap(dict(zip(loop.body.args, [iv] + args)), self.vmap)
        self.local_loads(b, vmap, read)
        overlap = self.overlap
        unwaited = loop.body.args[1 + overlap.place] if overlap is not None and overlap.deferred else None
        for op in self.s.last:
            if unwaited is not None and _reads(op, unwaited):  # the iteration before's deferred dot
                vmap[unwaited] = b.value(ir.DotWait, name=unwaited.name, value=vmap[unwaited], pending=0)
                unwaited = None
            new.body.ops.append(clone_op(op, vmap))
            if overlap is not None and not overlap.deferred and op is overlap.dot:
                vmap[op.result] = b.value(ir.DotWait, name=op.result.name, value=vmap[op.result], pending=1)
        ahead_values = self.copies(b, b.value(ir.Add, lhs=iv, rhs=ahead), args, write)
        late = [vmap.get(v, v) for v in loop.body.terminator.values]
        values = [ahead_values[k] if k in self.s.carried0 else late[k] for k in range(len(args))]
        next_read = next_slot(b, read, *slot_consts)
        slots = [next_read, next_slot(b, write, *slot_consts)]
        if phase is not None:  # the read slot's use count flips parity each time it wraps to 0
            wrapped = b.value(ir.Compare, lhs=next_read, rhs=slot_consts[0], pred="eq")
            slots.append(b.value(ir.Select, cond=wrapped, a=b.value(ir.Xor, lhs=phase, rhs=slot_consts[1]), b=phase))
        b.create(ir.Yield, values=values + slots)
        new.make_results([r.name for r in loop.results] + ["read_slot", "write_slot", "read_phase"][:len(slots)])
        self.out.block.ops.append(new)
        return new

    def slot_consts(self) -> tuple[Value, Value, Value]:
        return self.const(0), self.const(1), self.const(self.slots)

    def local_loads(self, b: Builder, vmap, slot: Value) -> None:
        """Each candidate's converts (or transposes) become reads of ``slot`` in their layouts."""
        for load, converts in self.s.converts.items():
            for conv in converts:
                with b.located(conv.loc):
                    x = b.value(ir.LocalLoad, name=conv.result.name, buf=self.bufs[load], slot=slot)
                x.type = conv.result.type
                vmap[conv.result] = x


def _bulk_copyable(load: ir.Load, slots: int, transpose: bool) -> bool:
    """Whether ``load`` reads a host descriptor's block the tensor memory
    accelerator can write into its buffer (``tma.tensor_map_for``)."""
    if not load.descriptor:
        return False
    return tensor_map_for(buffer_type(load, slots, transpose), load.descriptor, transpose) is not None


def buffer_type(load: ir.Load, slots: int, transpose: bool) -> TileType:
    """``load``'s buffer of ``slots`` slots: swizzled along the dim the load's
    layout holds contiguous (``swizzled_buffer_layout``), each slot the tile
    or, with ``transpose``, its transpose (still stored along that dim)."""
    t = load.ptr.type
    layout = swizzled_buffer_layout(t.shape, t.layout, t.elem.elem.bytes, slots)
    if not transpose:
        return TileType((slots,) + t.shape, t.elem.elem, layout)
    order = tuple(3 - d if d else 0 for d in layout.order)  # matrix dims 1 and 2 swap
    return TileType((slots,) + t.shape[::-1], t.elem.elem, dataclasses.replace(layout, order=order))


def swizzled_buffer_layout(shape: tuple, layout, elem_bytes: int, slots: int) -> Shared:
    """A buffer of ``slots`` tiles of ``shape`` held in registers in ``layout``:
    swizzled along the dim a blocked layout holds contiguous (row-major without one)."""
    order = layout.order if isinstance(layout, Blocked) else tuple(reversed(range(len(shape))))
    return swizzled_layout((slots,) + tuple(shape), tuple(d + 1 for d in order) + (0,), elem_bytes)


def _operand_buffer_layout(stages: LoopStages, v: Value) -> Optional[Shared]:
    """The layout of the buffer a dot operand ``v`` will be read from (a
    candidate's convert), or None."""
    for load, converts in stages.converts.items():
        if any(c.result is v for c in converts):
            return buffer_type(load, 2, transposed(stages, load)).layout
    return None
