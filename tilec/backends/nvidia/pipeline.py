"""Software pipelining of ``for`` loops that feed the tensor cores (the NVIDIA
backend's target lowering, after layout assignment), on targets with
asynchronous copies (``Target.async_copies``: ``cp.async``).

A K loop loads tiles and converts them to ``DotOperand`` layouts for a
``dot``.  With ``num_stages = S`` the loads of iteration ``i + S - 1`` are
issued as asynchronous copies into shared memory while iteration ``i``
computes, so the memory latency of S - 1 iterations hides behind the math.

*Stages.*  The candidates are the body's ``load``s of 2-D pointer tiles
whose every use is a ``convert_layout`` to a ``DotOperand`` layout.  Stage 0
is the candidates and their backward slice in the body: the pointer, mask
and ``other`` computations, following a loop-carried value into the
``yield``'s value for it (so ``a_ptrs += BK * stride`` is stage 0).  Every
other op of the body is the last stage.

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
``mask & splat(valid)``: a splat is constant along every dim, so the axis
analysis keeps the mask's constancy and the copy its 16-byte vectors.

*Bail-outs* (the loop stays as it is; ``analyze_loop`` raises
``NotPipelinable`` saying which):

* the body holds control flow (``if``, nested loops; reductions and scans,
  whose regions only combine scalars, are fine);
* the step is not a positive constant (the prologue's iterations are
  ``lower + p*step`` and "valid" is ``iv < upper``);
* no candidate load;
* a candidate's ``other`` is not a constant +0 (masked-off copies give 0);
* an op of stage 0 other than the candidate loads is not pure (it would run
  S - 1 iterations early), or reads a candidate's value;
* a value of stage 0 (a result or a stage-0 loop-carried value; the
  induction variable and loop invariants are fine) is used by the last
  stage: it belongs to another iteration there.  Pure stage-0 ops computed
  from the induction variable and invariants alone are exempt: the last
  stage computes again those it uses (``k + offs_k`` for a mask, say);
* a stage-0 loop-carried value is used after the loop (it ends S - 1
  iterations ahead).

The prologue's ``lower + p*step`` and the body's ``iv + (S-1)*step`` may wrap
for loops ending within ``(S-1)*step`` of the bound type's maximum (as
Triton's pipeliner).
"""
from __future__ import annotations

import math
from collections import ChainMap
from functools import partial
from dataclasses import dataclass, field
from typing import Optional

from tilec import ir
from tilec.ir.builder import Builder
from tilec.ir.core import Block, Function, Op, Value, clone_op
from tilec.ir.layouts import Blocked, Shared
from tilec.ir.layouts_nvidia import DotOperand, swizzled_layout
from tilec.ir.types import TileType, i1, i32, with_elem
from tilec.opt.rewrite import NOT_CONSTANT, constant_value, rebuild
from tilec.targets.base import Target
from tilec.backends.nvidia.dot_overlap import overlapped_dot


class NotPipelinable(Exception):
    """Why a loop is left as it is (the module docstring lists the reasons)."""


def pipeline_loops(fn: Function, num_stages: int, target: Target, num_warps: int) -> Function:
    """``fn`` with every loop that qualifies pipelined over ``num_stages``
    stages (``num_stages < 2``, or a target without asynchronous copies:
    unchanged); a dot on ``target``'s warpgroup instructions with
    ``num_warps`` warps may be left running (``dot_overlap.py``)."""
    if num_stages < 2 or not target.async_copies:
        return fn
    users = _users(fn.body)

    def rewrite(op: Op, vmap: dict) -> Optional[list[Op]]:
        if not isinstance(op, ir.For):
            return None
        try:
            stages = analyze_loop(op, users)
        except NotPipelinable:
            return None
        overlap = overlapped_dot(op, users, partial(_operand_buffer_layout, stages), num_warps, target)
        return _Pipeliner(stages, num_stages, vmap, overlap).emit()

    return rebuild(fn, rewrite)


def _users(block: Block) -> dict[Value, list[Op]]:
    """Every value's users, at any depth."""
    out: dict[Value, list[Op]] = {}
    for op in ir.walk(block):
        for v in op.operands:
            out.setdefault(v, []).append(op)
    return out


# --------------------------------------------------------------------------- #
# Analysis: which op runs in which stage
# --------------------------------------------------------------------------- #

@dataclass
class LoopStages:
    """How ``loop`` splits: ``stage0`` and ``last`` ops in body order,
    ``carried0`` the indices (into the carried values) of stage-0 ones,
    ``converts`` each candidate's converts (they become ``local_load``s)."""

    loop: ir.For
    step: int
    loads: list[ir.Load]
    stage0: list[Op]
    last: list[Op]
    carried0: set[int]
    converts: dict[ir.Load, list[ir.ConvertLayout]] = field(default_factory=dict)


def analyze_loop(loop: ir.For, users: dict[Value, list[Op]]) -> LoopStages:
    """The stages of ``loop``, or ``NotPipelinable`` saying why it cannot be pipelined."""
    body = loop.body
    if any(op.regions and not isinstance(op, (ir.Reduce, ir.Scan)) for op in body.ops):
        raise NotPipelinable("the body holds control flow (`if`, nested loops)")
    step = constant_value(loop.step)
    if step is NOT_CONSTANT or isinstance(step, bool) or step <= 0:
        raise NotPipelinable("the step is not a positive constant")
    converts = {op: users[op.result] for op in body.ops if _is_candidate(op, users)}
    if not converts:
        raise NotPipelinable("no load feeds a dot operand")
    for load in converts:
        if load.other is not None and not _is_plus_zero(load.other):
            raise NotPipelinable("a load's `other` is not a constant 0")
    in_stage0, carried0 = _backward_slice(body, list(converts))
    stage0 = [op for op in body.ops if op in in_stage0]
    _check_stage0(stage0, converts)
    replaced = {c for cs in converts.values() for c in cs}
    late = [op for op in body.ops[:-1] if op not in in_stage0 and op not in replaced]
    again = _recomputed(loop, late, _of_iv_alone(body, stage0, converts, carried0), carried0)
    _check_last_stage(loop, late, in_stage0 - again, carried0, users)
    last = [op for op in body.ops[:-1] if op in again or op in late]
    return LoopStages(loop, step, list(converts), stage0, last, carried0, converts)


def _of_iv_alone(body: Block, stage0: list[Op], loads: dict, carried0: set) -> set[Op]:
    """The pure stage-0 ops computed from the induction variable and loop invariants alone."""
    early = {body.args[k + 1] for k in carried0} | {r for op in stage0 for r in op.results}
    out: set[Op] = set()
    for op in stage0:
        if op not in loads and all(v not in early or v.owner in out for v in op.operands):
            out.add(op)
    return out


def _recomputed(loop: ir.For, late: list[Op], of_iv: set[Op], carried0: set) -> set[Op]:
    """The ops of ``of_iv`` the last stage needs: it computes them again, for its own iteration."""
    args = set(loop.body.args)
    yielded = [v for k, v in enumerate(loop.body.terminator.values) if k not in carried0]
    work = [v for op in late for v in op.operands] + yielded
    out: set[Op] = set()
    while work:
        v = work.pop()
        if v not in args and v.owner in of_iv and v.owner not in out:
            out.add(v.owner)
            work.extend(v.owner.operands)
    return out


def _is_candidate(op: Op, users: dict) -> bool:
    """A plain load of a 2-D tile of pointers used only by converts to a dot operand layout."""
    if not isinstance(op, ir.Load) or op.volatile or not isinstance(op.ptr.type, TileType):
        return False
    uses = users.get(op.result, [])
    return len(op.ptr.type.shape) == 2 and bool(uses) and all(
        isinstance(u, ir.ConvertLayout) and isinstance(u.layout, DotOperand) for u in uses)


def _is_plus_zero(v: Value) -> bool:
    c = constant_value(v)
    return c is not NOT_CONSTANT and c == 0 and math.copysign(1.0, c) > 0


def _backward_slice(body: Block, loads: list[Op]) -> tuple[set[Op], set[int]]:
    """The body ops ``loads`` depend on (loads included), and the carried
    values they read, followed into the ``yield``."""
    mine = set(body.ops)
    ops: set[Op] = set(loads)
    carried: set[int] = set()
    work = [v for op in loads for v in op.operands]
    while work:
        v = work.pop()
        if v.owner in mine and v.owner not in ops:
            ops.add(v.owner)
            work.extend(v.owner.operands)
        elif v.owner is body and v.index > 0 and v.index - 1 not in carried:
            carried.add(v.index - 1)
            work.append(body.terminator.values[v.index - 1])
    return ops, carried


def _check_stage0(stage0: list[Op], converts: dict) -> None:
    loaded = {load.result for load in converts}
    for op in stage0:
        if op in converts:
            continue
        if not op.PURE:
            raise NotPipelinable(f"`{op.NAME}` computes a load's address or mask but is not pure")
        if loaded & set(op.operands):
            raise NotPipelinable(f"`{op.NAME}` computes a load's address or mask from a pipelined load")


def _check_last_stage(loop: ir.For, last: list[Op], in_stage0: set, carried0: set, users: dict) -> None:
    args = loop.body.args
    early = {args[k + 1] for k in carried0} | {r for op in in_stage0 for r in op.results}
    yielded = loop.body.terminator.values
    late_uses = [(op, v) for op in last for v in op.operands]
    late_uses += [(loop.body.terminator, v) for k, v in enumerate(yielded) if k not in carried0]
    for op, v in late_uses:
        if v in early:
            raise NotPipelinable(f"`{op.NAME}` (last stage) uses a value of the first stage")
    for k in carried0:
        if users.get(loop.results[k]):
            raise NotPipelinable("a value carried for the loads is used after the loop")


# --------------------------------------------------------------------------- #
# Rewrite
# --------------------------------------------------------------------------- #

class _Pipeliner:
    """Emits the pipelined form of one loop (module docstring) into the
    enclosing block (``self.out``), reading outer values through ``vmap``."""

    def __init__(self, stages: LoopStages, num_stages: int, vmap: dict, overlap: Optional[tuple[int, ir.Dot]]):
        self.s, self.n, self.vmap, self.overlap = stages, num_stages, vmap, overlap
        # a dot left running still reads the slot of the iteration before: one more slot
        self.slots = num_stages + (overlap is not None)
        loop = stages.loop
        self.out = Builder(Block(), loop.loc)
        self.consts: dict[tuple, Value] = {}
        self.bound_type = loop.lower.type
        self.lower, self.upper = self.outer(loop.lower), self.outer(loop.upper)

    def outer(self, v: Value) -> Value:
        return self.vmap.get(v, v)

    def const(self, value: int, type_=i32) -> Value:
        """A constant made once, before the loop."""
        key = (value, type_)
        if key not in self.consts:
            self.consts[key] = self.out.value(ir.Constant, value=value, type=type_)
        return self.consts[key]

    def emit(self) -> list[Op]:
        loop, out = self.s.loop, self.out
        self.bufs = {load: self.alloc(load) for load in self.s.loads}
        out.create(ir.Barrier)
        carried = [self.outer(v) for v in loop.inits]
        for p in range(self.n - 1):
            step = self.const(p * self.s.step, self.bound_type)
            iv = self.lower if p == 0 else out.value(ir.Add, lhs=self.lower, rhs=step)
            carried = self.stage0(out, iv, carried, self.const(p))
        new_loop = self.main_loop(carried)
        out.create(ir.AsyncWait, pending=0)
        out.create(ir.Barrier)
        self.vmap.update(zip(loop.results, new_loop.results))
        if self.overlap is not None:
            place = self.overlap[0]
            result = loop.results[place]
            done = out.value(ir.DotWait, name=result.name, value=new_loop.results[place], pending=0)
            self.vmap[result] = done
        return out.block.ops

    def alloc(self, load: ir.Load) -> Value:
        """A buffer of ``slots`` slots for ``load``'s tile (``buffer_layout``)."""
        t = load.ptr.type
        shape = (self.slots,) + t.shape
        name = f"{load.result.name}_smem" if load.result.name else None
        return self.out.value(ir.LocalAlloc, name=name, shape=shape, elem=t.elem.elem,
                              layout=buffer_layout(load, self.slots))

    def stage0(self, b: Builder, iv: Value, carried: list[Value], slot: Value) -> list[Value]:
        """Stage 0 at ``iv`` on ``carried`` values, appended to ``b``: its ops,
        and its loads as copies into ``slot`` where ``iv < upper``.  Returns
        the carried values after it (stage-0 ones advanced, others as given)."""
        loop = self.s.loop
        args = loop.body.args
        vmap = ChainMap({args[0]: iv}, {args[k + 1]: carried[k] for k in self.s.carried0}, self.vmap)
        valid = b.value(ir.Compare, lhs=iv, rhs=self.upper, pred="lt")
        for op in self.s.stage0:
            if op in self.bufs:
                self.copy(b, op, vmap, valid, slot)
            else:
                b.block.ops.append(clone_op(op, vmap))
        b.create(ir.AsyncCommit)
        yielded = loop.body.terminator.values
        return [vmap.get(yielded[k], yielded[k]) if k in self.s.carried0 else c for k, c in enumerate(carried)]

    def copy(self, b: Builder, load: ir.Load, vmap, valid: Value, slot: Value) -> None:
        """``load`` as an ``async_copy`` into ``slot``, masked by ``valid`` too."""
        ptr = vmap.get(load.ptr, load.ptr)
        mask = b.value(ir.Splat, src=valid, shape=ptr.type.shape)
        mask.type = with_elem(ptr.type, i1)  # in the pointers' layout: a splat may take any
        if load.mask is not None:
            mask = b.value(ir.And, lhs=vmap.get(load.mask, load.mask), rhs=mask)
        with b.located(load.loc):
            b.create(ir.AsyncCopy, buf=self.bufs[load], slot=slot, ptr=ptr, mask=mask)

    def main_loop(self, carried: list[Value]) -> ir.For:
        """The loop over the original range, its body in a fresh block."""
        loop, n = self.s.loop, self.n
        ahead, slot_consts = self.const((n - 1) * self.s.step, self.bound_type), self.slot_consts()
        inits = carried + [self.const(0), self.const(n - 1)]
        new = ir.For(lower=self.lower, upper=self.upper, step=self.outer(loop.step), inits=inits, loc=loop.loc)
        iv = new.body.add_arg(self.bound_type, loop.body.args[0].name)
        args = [new.body.add_arg(a.type, a.name) for a in loop.body.args[1:]]
        read, write = new.body.add_arg(i32, "read_slot"), new.body.add_arg(i32, "write_slot")
        b = Builder(new.body, loop.loc)
        b.create(ir.AsyncWait, pending=n - 2)
        b.create(ir.Barrier)
        vmap = ChainMap(dict(zip(loop.body.args, [iv] + args)), self.vmap)
        self.local_loads(b, vmap, read)
        for op in self.s.last:
            new.body.ops.append(clone_op(op, vmap))
            if self.overlap is not None and op is self.overlap[1]:
                vmap[op.result] = b.value(ir.DotWait, name=op.result.name, value=vmap[op.result], pending=1)
        ahead_values = self.stage0(b, b.value(ir.Add, lhs=iv, rhs=ahead), args, write)
        late = [vmap.get(v, v) for v in loop.body.terminator.values]
        values = [ahead_values[k] if k in self.s.carried0 else late[k] for k in range(len(args))]
        b.create(ir.Yield, values=values + [next_slot(b, read, *slot_consts), next_slot(b, write, *slot_consts)])
        new.make_results([r.name for r in loop.results] + ["read_slot", "write_slot"])
        self.out.block.ops.append(new)
        return new

    def slot_consts(self) -> tuple[Value, Value, Value]:
        return self.const(0), self.const(1), self.const(self.slots)

    def local_loads(self, b: Builder, vmap, slot: Value) -> None:
        """Each candidate's converts become reads of ``slot`` in their layouts."""
        for load, converts in self.s.converts.items():
            for conv in converts:
                t = conv.result.type
                with b.located(conv.loc):
                    x = b.value(ir.LocalLoad, name=conv.result.name, buf=self.bufs[load], slot=slot)
                x.type = TileType(t.shape, t.elem, conv.layout)
                vmap[conv.result] = x


def buffer_layout(load: ir.Load, slots: int) -> Shared:
    """The layout of ``load``'s buffer of ``slots`` slots: swizzled along the
    dim its blocked layout holds contiguous (row-major without one)."""
    t = load.ptr.type
    order = t.layout.order if isinstance(t.layout, Blocked) else tuple(reversed(range(len(t.shape))))
    return swizzled_layout((slots,) + t.shape, tuple(d + 1 for d in order) + (0,), t.elem.elem.bytes)


def _operand_buffer_layout(stages: LoopStages, v: Value) -> Optional[Shared]:
    """The layout of the buffer a dot operand ``v`` will be read from (a
    candidate's convert), or None."""
    for load, converts in stages.converts.items():
        if any(c.result is v for c in converts):
            return buffer_layout(load, 2)
    return None


def next_slot(b: Builder, slot: Value, zero: Value, one: Value, slots: Value) -> Value:
    """``slot + 1``, back to ``zero`` at ``slots``."""
    nxt = b.value(ir.Add, lhs=slot, rhs=one)
    wrap = b.value(ir.Compare, lhs=nxt, rhs=slots, pred="eq")
    return b.value(ir.Select, cond=wrap, a=zero, b=nxt)
