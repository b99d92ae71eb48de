"""Software pipelining of K loops through an LDS double buffer (AMD's
"stream pipelining", after layout assignment): AMD GPUs have no
asynchronous global -> LDS copies that tilec uses, so the loads of the next
iteration go to registers while this iteration's dot runs on the matrix
unit, and are stored to the other half of the buffer after it.

*Stages* and *bail-outs*: ``tilec/opt/pipelining.py`` (shared with
NVIDIA's pipeliner).  The candidates are loads whose every use is operand
``a`` (every one) or ``b`` (every one) of a ``dot`` the layout pass put on
MFMA/WMMA (``matrix.planned``); their value becomes a ``local_load`` of the
buffer, which the dot reads a lane's fragment at a time
(``matrix._local_load``).

*Rewrite* (``_StreamPipeliner``)::

    %buf = local_alloc [2, *tile]           one per candidate, stored along k, swizzled
    barrier                                  the buffers may reuse memory just read
    stage 0 at iv = lower, loads masked by iv < upper; local_store into slot 0
    for iv ... carrying (the loop's values, stage-0 ones one iteration
            ahead; read slot):
        barrier
        stage 0 at iv + step: its loads, masked by it < upper, into registers
        local_load the read slot (each candidate's value)
        the last stage (the dot)
        local_store the loaded registers into the other slot
        yield, slot flipped
    barrier                                  no late store lands in reused memory

One barrier an iteration: the slot written in iteration ``i`` is the one
read in ``i - 1``, which every thread finished before this iteration's
barrier, and the one read in ``i + 1`` is written before the next.  The
global loads are issued before the dot, so their latency hides behind the
matrix instructions; the stores wait for them after it.  A load's mask is
``mask & splat(valid)``: the last iteration's loads read nothing (their
stores fill a slot nobody reads).

When two slots do not fit in LDS beside the operands the loop's dots stage
there themselves (``lds_slots``), one slot does: a second barrier before
the stores lets every thread finish reading it; when one does not fit
either, the loop stays as it is.

``num_stages`` >= 2 pipelines with two slots (loads one iteration ahead);
more stages would hold more iterations' tiles in registers, which the
benchmark kernels cannot spare.  The prologue's ``lower`` and the body's
``iv + step`` may wrap for loops ending within ``step`` of the bound type's
maximum (as Triton's pipeliners).
"""
from __future__ import annotations

from collections import ChainMap
from functools import partial
from typing import Optional

from tilec import ir
from tilec.ir.builder import Builder
from tilec.ir.core import Function, Op, Value, clone_op
from tilec.ir.types import TileType, i32
from tilec.opt.pipelining import LoopStages, NotPipelinable, StageEmitter, analyze_loop, next_slot, rewrite_loops
from tilec.targets.base import Target
from tilec.backends.amd.matrix import lds_layout, planned


def stream_pipeline(fn: Function, num_stages: int, target: Target, num_warps: int) -> Function:
    """``fn`` with every loop that qualifies pipelined through LDS double
    buffers (``num_stages < 2``: unchanged)."""
    if num_stages < 2:
        return fn
    candidate = partial(dot_operand_load, target=target, num_warps=num_warps)

    def rewrite(loop: ir.For, users: dict, vmap: dict) -> list[Op]:
        stages = analyze_loop(loop, users, candidate)
        return _StreamPipeliner(stages, lds_slots(stages, target, num_warps), vmap, users, target, num_warps).emit()

    return rewrite_loops(fn, rewrite)


def dot_operand_load(op: Op, users: dict, target: Target, num_warps: int) -> Optional[list[Op]]:
    """``[]`` (nothing to replace but the value itself) for a load whose every
    use is the same operand of a dot on the matrix unit, else None."""
    uses = users.get(op.result, [])
    if not uses or not all(isinstance(u, ir.Dot) and planned(u, target, num_warps) for u in uses):
        return None
    sides = {_operand(u, op.result) for u in uses}
    return [] if sides in ({0}, {1}) else None


def lds_slots(stages: LoopStages, target: Target, num_warps: int) -> int:
    """2 when the loop's double buffers fit in LDS beside the operands its
    dots stage there themselves (those not loaded by a candidate), else 1;
    ``NotPipelinable`` when even one slot does not fit."""
    loaded = {load.result for load in stages.loads}
    buffers = sum(_bytes(load.result) for load in stages.loads)
    staged = sum(_bytes(v) for op in stages.last if isinstance(op, ir.Dot) and planned(op, target, num_warps)
                 for v in (op.a, op.b) if v not in loaded)
    for slots in (2, 1):
        if slots * buffers + staged <= target.max_shared_bytes:
            return slots
    raise NotPipelinable(f"the buffers need {buffers + staged} bytes of LDS, over {target.max_shared_bytes}")


def _bytes(v: Value) -> int:
    return v.type.numel * v.type.elem.bytes


def _operand(dot: ir.Dot, v: Value) -> Optional[int]:
    """0 when ``v`` is only ``dot``'s ``a``, 1 when only its ``b``, else None."""
    place = [v is dot.a, v is dot.b, v is dot.acc]
    return place.index(True) if place.count(True) == 1 and not place[2] else None


class _StreamPipeliner(StageEmitter):
    """Emits the pipelined form of one loop (module docstring)."""

    def __init__(self, stages: LoopStages, slots: int, vmap: dict, users: dict, target: Target, num_warps: int):
        super().__init__(stages, vmap)
        self.slots, self.users, self.target, self.num_warps = slots, users, target, num_warps

    def emit(self) -> list[Op]:
        loop, out = self.s.loop, self.out
        self.bufs = {load: self.alloc(load) for load in self.s.loads}
        out.create(ir.Barrier)
        loaded: dict[ir.Load, Value] = {}
        carried = [self.outer(v) for v in loop.inits]
        carried = self.stage0(out, self.lower, carried, partial(self.load_into_registers, loaded=loaded))
        self.store(out, loaded, self.const(0))
        new_loop = self.main_loop(carried)
        out.create(ir.Barrier)
        self.vmap.update(zip(loop.results, new_loop.results))
        return out.block.ops

    def alloc(self, load: ir.Load) -> Value:
        """A buffer of ``slots`` slots for ``load``'s tile, in the layout its dot reads (``matrix.lds_layout``)."""
        t = load.ptr.type
        name = f"{load.result.name}_lds" if load.result.name else None
        dot = self.users[load.result][0]
        layout = lds_layout(planned(dot, self.target, self.num_warps), _operand(dot, load.result), t.shape,
                            t.elem.elem)
        return self.out.value(ir.LocalAlloc, name=name, shape=(self.slots,) + t.shape, elem=t.elem.elem, layout=layout)

    def store(self, b: Builder, loaded: dict, slot: Value) -> None:
        for load, value in loaded.items():
            with b.located(load.loc):
                b.create(ir.LocalStore, buf=self.bufs[load], slot=slot, value=value)

    def main_loop(self, carried: list[Value]) -> ir.For:
        """The loop over the original range, its body in a fresh block."""
        loop = self.s.loop
        step = self.outer(loop.step)
        zero, one, slots = self.const(0), self.const(1), self.const(self.slots)
        new = ir.For(lower=self.lower, upper=self.upper, step=step, inits=carried + [zero], loc=loop.loc)
        iv = new.body.add_arg(self.bound_type, loop.body.args[0].name)
        args = [new.body.add_arg(a.type, a.name) for a in loop.body.args[1:]]
        read = new.body.add_arg(i32, "read_slot")
        b = Builder(new.body, loop.loc)
        b.create(ir.Barrier)
        loaded: dict[ir.Load, Value] = {}
        ahead = self.stage0(b, b.value(ir.Add, lhs=iv, rhs=step), args, partial(self.load_into_registers, loaded=loaded))
        vmap = ChainMap(dict(zip(loop.body.args, [iv] + args)), self.vmap)
        for load in self.s.loads:
            t = load.result.type
            with b.located(load.loc):
                x = b.value(ir.LocalLoad, name=load.result.name, buf=self.bufs[load], slot=read)
            x.type = TileType(t.shape, t.elem, t.layout)
            vmap[load.result] = x
        for op in self.s.last:
            new.body.ops.append(clone_op(op, vmap))
        write = next_slot(b, read, zero, one, slots)
        if self.slots == 1:  # the one slot: every thread has read it
            b.create(ir.Barrier)
        self.store(b, loaded, write)
        late = [vmap.get(v, v) for v in loop.body.terminator.values]
        values = [ahead[k] if k in self.s.carried0 else late[k] for k in range(len(args))]
        b.create(ir.Yield, values=values + [write])
        new.make_results([r.name for r in loop.results] + ["read_slot"])
        self.out.block.ops.append(new)
        return new
