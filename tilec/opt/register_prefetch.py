"""Software pipelining in registers of loops that load tiles but feed no dot
(after layout assignment): each iteration issues the next iteration's loads
before it computes on the tiles the previous iteration loaded.

A loop such as the layer-norm backward's dw/db reduction

    for i in range(0, M, BLOCK_M):
        dw += tl.load(DW + offs(i), mask=mask(i), other=0.)

loads a 32x128 tile an iteration and adds it.  Left as it is, the GPU's
assembler keeps only two or three of a thread's sixteen 16-byte loads in
flight (it reuses their registers for the adds), so an iteration costs
several memory latencies.  Loaded one iteration ahead, the tiles are
loop-carried values: every load of an iteration is in flight at once, and
they overlap the adds of the iteration before (H100, docs/internals.md: the dw/db kernel 2.1x
faster at 1024 columns).

*Stages* and *bail-outs*: ``tilec/opt/pipelining.py`` (the candidates here
are every plain 2-D tile load, whatever its ``other``), and three more:

* the loop holds a ``dot`` (its loads belong to the shared-memory
  pipeliners, which ran before);
* an op of the last stage writes memory or synchronizes (a store, an atomic,
  a barrier): the next iteration's loads would pass it, and read what it
  has not yet written;
* the prefetched tiles take more than ``max_words`` 32-bit registers a
  thread: they are live across the whole iteration beside its own.

*Rewrite* (``_Prefetcher``)::

    stage 0 at iv = lower: its loads, masked by iv < upper
    for iv ... carrying (the loop's values, stage-0 ones one iteration
            ahead; the loaded tiles):
        stage 0 at iv + step: its loads, masked by iv + step < upper
        the last stage, on the carried tiles
        yield (..., the tiles just loaded)

The last iteration's loads read nothing (their mask is false) and give
``other``.  ``iv + step`` may wrap for loops ending within ``step`` of the
bound type's maximum (as the other pipeliners).
"""
from __future__ import annotations

from collections import ChainMap
from functools import partial

from tilec import ir
from tilec.ir.builder import Builder
from tilec.ir.core import Function, Op, Value, clone_op
from tilec.opt.pipelining import LoopStages, NotPipelinable, StageEmitter, analyze_loop, rewrite_loops

#: registers a thread may hold for the next iteration's tiles
MAX_WORDS = 64


def prefetch_loops(fn: Function, num_stages: int, threads: int, max_words: int = MAX_WORDS) -> Function:
    """``fn`` with every loop that qualifies loading one iteration ahead
    (``num_stages < 2``: unchanged); ``threads`` run a program."""
    if num_stages < 2:
        return fn
    return rewrite_loops(fn, lambda loop, users, vmap: _Prefetcher(prefetch_stages(loop, users, threads, max_words),
                                                                  vmap).emit())


def prefetch_stages(loop: ir.For, users: dict, threads: int, max_words: int = MAX_WORDS) -> LoopStages:
    """The stages of ``loop``, or ``NotPipelinable`` saying why it is left alone (module docstring)."""
    if any(isinstance(op, ir.Dot) for op in ir.walk(loop.body)):
        raise NotPipelinable("the loop holds a dot")
    stages = analyze_loop(loop, users, _any_load, zero_other=False)
    for op in stages.last:
        if not (op.PURE or isinstance(op, ir.Load)):
            raise NotPipelinable(f"`{op.NAME}` (last stage) writes memory or synchronizes")
    words = sum(load.result.type.numel * load.result.type.elem.bytes for load in stages.loads) / (4 * threads)
    if words > max_words:
        raise NotPipelinable(f"the prefetched tiles take {words:g} registers a thread, over {max_words}")
    return stages


def _any_load(op: Op, users: dict) -> list[Op]:
    """Every tile load is a candidate; its value itself is what the rewrite replaces."""
    return []


class _Prefetcher(StageEmitter):
    """Emits the prefetching form of one loop (module docstring)."""

    def emit(self) -> list[Op]:
        loop = self.s.loop
        loaded: dict[ir.Load, Value] = {}
        carried = self.stage0(self.out, self.lower, [self.outer(v) for v in loop.inits],
                              partial(self.load_into_registers, loaded=loaded))
        new_loop = self.main_loop(carried, [loaded[load] for load in self.s.loads])
        self.vmap.update(zip(loop.results, new_loop.results))
        return self.out.block.ops

    def main_loop(self, carried: list[Value], tiles: list[Value]) -> ir.For:
        """The loop over the original range carrying the loaded tiles too, its body in a fresh block."""
        loop, loads = self.s.loop, self.s.loads
        step = self.outer(loop.step)
        new = ir.For(lower=self.lower, upper=self.upper, step=step, inits=carried + tiles, loc=loop.loc)
        iv = new.body.add_arg(self.bound_type, loop.body.args[0].name)
        args = [new.body.add_arg(a.type, a.name) for a in loop.body.args[1:]]
        current = [new.body.add_arg(load.result.type, load.result.name) for load in loads]
        b = Builder(new.body, loop.loc)
        loaded: dict[ir.Load, Value] = {}
        ahead = self.stage0(b, b.value(ir.Add, lhs=iv, rhs=step), args, partial(self.load_into_registers, loaded=loaded))
        vmap = ChainMap(dict(zip(loop.body.args, [iv] + args)), dict(zip((l.result for l in loads), current)),
                        self.vmap)
        for op in self.s.last:
            new.body.ops.append(clone_op(op, vmap))
        late = [vmap.get(v, v) for v in loop.body.terminator.values]
        values = [ahead[k] if k in self.s.carried0 else late[k] for k in range(len(args))]
        b.create(ir.Yield, values=values + [loaded[load] for load in loads])
        new.make_results([r.name for r in loop.results] + [f"{load.result.name or 'tile'}_next" for load in loads])
        self.out.block.ops.append(new)
        return new
