"""What the backends' software pipeliners share: which ops of a ``for`` loop
feeding a dot run in which stage (``analyze_loop``), and the pieces of the
rewrite every pipeliner emits the same way (``StageEmitter``).

A backend pipelines a K loop by loading the dot operands of a later
iteration while this one computes: NVIDIA with asynchronous copies into a
multi-slot buffer (``tilec/backends/nvidia/pipeline.py``), AMD with global
loads into registers stored to the other half of an LDS double buffer after
the dot (``tilec/backends/amd/stream_pipeline.py``).  Loops that feed no dot
load their tiles one iteration ahead into registers
(``tilec/opt/register_prefetch.py``).  All split the body the same way.

*Stages.*  The candidates are the body's ``load``s of 2-D pointer tiles that
the backend's ``candidate(op, users)`` accepts: it returns the ops the
pipeliner replaces (NVIDIA: each load's converts to a dot operand layout,
which become reads of the buffer; AMD: none, the load's value itself
becomes one), or None for a load that is not a candidate.  Stage 0 is the
candidates and their backward slice in the body: the pointer, mask and
``other`` computations, following a loop-carried value into the ``yield``'s
value for it (so ``a_ptrs += BK * stride`` is stage 0).  Every other op of
the body is the last stage.

*Bail-outs* (the loop stays as it is; ``analyze_loop`` raises
``NotPipelinable`` saying which):

* the body holds control flow (``if``, nested loops; reductions and scans,
  whose regions only combine scalars, are fine);
* the step is not a positive constant (the prologue's iterations are
  ``lower + p*step`` and "valid" is ``iv < upper``);
* no candidate load;
* a candidate's ``other`` is not a constant +0 (masked-off copies give 0;
  ``zero_other=False`` lifts this for loads into registers);
* an op of stage 0 other than the candidate loads is not pure (it would run
  iterations early), or reads a candidate's value;
* a value of stage 0 (a result or a stage-0 loop-carried value; the
  induction variable and loop invariants are fine; a candidate's own value,
  which the pipeliner replaces by a read of the buffer, too) is used by the
  last stage: it belongs to another iteration there.  Pure stage-0 ops
  computed from the induction variable and invariants alone are exempt: the
  last stage computes again those it uses (``k + offs_k`` for a mask, say);
* a stage-0 loop-carried value is used after the loop (it ends iterations ahead).
"""
from __future__ import annotations

import math
from collections import ChainMap
from dataclasses import dataclass, field
from typing import Callable, Optional

from tilec import ir
from tilec.ir.builder import Builder
from tilec.ir.core import Block, Function, Op, Value, clone_op
from tilec.ir.types import TileType, i1, i32, with_elem
from tilec.opt.rewrite import NOT_CONSTANT, constant_value, rebuild

# ``candidate(op, users)``: the ops a candidate load's pipelining replaces, or None (module docstring)
Candidate = Callable[[Op, dict], Optional[list[Op]]]


class NotPipelinable(Exception):
    """Why a loop is left as it is (the module docstring lists the reasons)."""


def rewrite_loops(fn: Function, rewrite_loop: Callable[[ir.For, dict, dict], list[Op]]) -> Function:
    """``fn`` with each ``for`` replaced by the ops ``rewrite_loop(loop,
    users, vmap)`` emits (``users``: every value's users in ``fn``;
    ``vmap``: the values already replaced), or kept as it is where that
    raises ``NotPipelinable``."""
    users = users_of(fn.body)

    def rewrite(op: Op, vmap: dict) -> Optional[list[Op]]:
        if not isinstance(op, ir.For):
            return None
        try:
            return rewrite_loop(op, users, vmap)
        except NotPipelinable:
            return None

    return rebuild(fn, rewrite)


def users_of(block: Block) -> dict[Value, list[Op]]:
    """Every value's users, at any depth."""
    out: dict[Value, list[Op]] = {}
    for op in ir.walk(block):
        for v in op.operands:
            out.setdefault(v, []).append(op)
    return out


@dataclass
class LoopStages:
    """How ``loop`` splits: ``stage0`` and ``last`` ops in body order,
    ``carried0`` the indices (into the carried values) of stage-0 ones,
    ``converts`` the ops each candidate load's pipelining replaces."""

    loop: ir.For
    step: int
    loads: list[ir.Load]
    stage0: list[Op]
    last: list[Op]
    carried0: set[int]
    converts: dict[ir.Load, list[Op]] = field(default_factory=dict)


def analyze_loop(loop: ir.For, users: dict[Value, list[Op]], candidate: Candidate,
                 zero_other: bool = True) -> LoopStages:
    """The stages of ``loop``, or ``NotPipelinable`` saying why it cannot be
    pipelined; ``zero_other``: a candidate's ``other`` must be a constant +0
    (a copy into shared memory fills masked-off elements with zeros)."""
    body = loop.body
    if any(op.regions and not isinstance(op, (ir.Reduce, ir.Scan)) for op in body.ops):
        raise NotPipelinable("the body holds control flow (`if`, nested loops)")
    step = constant_value(loop.step)
    if step is NOT_CONSTANT or isinstance(step, bool) or step <= 0:
        raise NotPipelinable("the step is not a positive constant")
    converts = {op: replaced for op in body.ops if is_tile_load(op)
                for replaced in [candidate(op, users)] if replaced is not None}
    if not converts:
        raise NotPipelinable("no load to pipeline (a dot operand's, for the shared-memory pipeliners)")
    for load in converts if zero_other else ():
        if load.other is not None and not _is_plus_zero(load.other):
            raise NotPipelinable("a load's `other` is not a constant 0")
    in_stage0, carried0 = _backward_slice(body, list(converts))
    stage0 = [op for op in body.ops if op in in_stage0]
    _check_stage0(stage0, converts)
    replaced = {c for cs in converts.values() for c in cs}
    late = [op for op in body.ops[:-1] if op not in in_stage0 and op not in replaced]
    again = _recomputed(loop, late, _of_iv_alone(body, stage0, converts, carried0), carried0)
    _check_last_stage(loop, late, in_stage0 - again, carried0, users, converts)
    last = [op for op in body.ops[:-1] if op in again or op in late]
    return LoopStages(loop, step, list(converts), stage0, last, carried0, converts)


def is_tile_load(op: Op) -> bool:
    """A plain (not volatile) load of a 2-D tile of pointers."""
    return (isinstance(op, ir.Load) and not op.volatile and isinstance(op.ptr.type, TileType)
            and len(op.ptr.type.shape) == 2)


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


def _check_last_stage(loop: ir.For, last: list[Op], in_stage0: set, carried0: set, users: dict,
                      converts: dict) -> None:
    args = loop.body.args
    early = {args[k + 1] for k in carried0} | {r for op in in_stage0 if op not in converts for r in op.results}
    yielded = loop.body.terminator.values
    late_uses = [(op, v) for op in last for v in op.operands]
    late_uses += [(loop.body.terminator, v) for k, v in enumerate(yielded) if k not in carried0]
    for op, v in late_uses:
        if v in early:
            raise NotPipelinable(f"`{op.NAME}` (last stage) uses a value of the first stage")
    for k in carried0:
        if users.get(loop.results[k]):
            raise NotPipelinable("a value carried for the loads is used after the loop")


class StageEmitter:
    """What every pipeliner's rewrite of one loop does the same way: it emits
    into the enclosing block (``self.out``), reads outer values through
    ``vmap``, makes its constants once before the loop, and runs stage 0 for
    a given iteration with each candidate load handed to ``issue``."""

    def __init__(self, stages: LoopStages, vmap: dict):
        self.s, self.vmap = stages, vmap
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

    def stage0(self, b: Builder, iv: Value, carried: list[Value], issue: Callable) -> list[Value]:
        """Stage 0 at ``iv`` on ``carried`` values, appended to ``b``: its ops,
        and each candidate load as ``issue(b, load, vmap, valid)``: the
        values of stage 0 at ``iv`` and whether ``iv < upper`` (``masked``
        limits the load to it).  Returns the carried values after it
        (stage-0 ones advanced, others as given)."""
        loop = self.s.loop
        args = loop.body.args
        vmap = ChainMap({args[0]: iv}, {args[k + 1]: carried[k] for k in self.s.carried0}, self.vmap)
        valid = b.value(ir.Compare, lhs=iv, rhs=self.upper, pred="lt")
        for op in self.s.stage0:
            if op in self.s.converts:
                issue(b, op, vmap, valid)
            else:
                b.block.ops.append(clone_op(op, vmap))
        yielded = loop.body.terminator.values
        return [vmap.get(yielded[k], yielded[k]) if k in self.s.carried0 else c for k, c in enumerate(carried)]

    def load_into_registers(self, b: Builder, load: ir.Load, vmap, valid: Value, loaded: dict) -> None:
        """``load`` as a load into registers, masked by ``valid`` too (``masked``);
        its value recorded in ``loaded``: an ``issue`` for ``stage0``."""
        ptr, mask = self.masked(b, load, vmap, valid)
        new = clone_op(load, vmap, ptr=ptr, mask=mask)
        b.block.ops.append(new)
        loaded[load] = new.result

    @staticmethod
    def masked(b: Builder, load: ir.Load, vmap, valid: Value) -> tuple[Value, Value]:
        """``load``'s pointers and its mask and ``valid``: the mask is
        ``mask & splat(valid)``, constant along every dim like the splat, so
        the axis analysis keeps the access's vectors."""
        ptr = vmap.get(load.ptr, load.ptr)
        mask = b.value(ir.Splat, src=valid, shape=ptr.type.shape)
        mask.type = with_elem(ptr.type, i1)  # in the pointers' layout: a splat may take any
        if load.mask is not None:
            mask = b.value(ir.And, lhs=vmap.get(load.mask, load.mask), rhs=mask)
        return ptr, mask


def next_slot(b: Builder, slot: Value, zero: Value, one: Value, slots: Value) -> Value:
    """``slot + 1``, back to ``zero`` at ``slots`` (compare + select, no division)."""
    nxt = b.value(ir.Add, lhs=slot, rhs=one)
    wrap = b.value(ir.Compare, lhs=nxt, rhs=slots, pred="eq")
    return b.value(ir.Select, cond=wrap, a=zero, b=nxt)
