"""Dead code elimination: pure ops whose results nothing uses are removed.

One backward sweep finds every live op: an op is live if it has an effect
(not ``PURE``: stores, loops, terminators...) or a live op uses one of its
results.  Walking each block from its end, a live op marks its operands --
and the operands of the live ops in its regions -- before the ops that
define them are reached, so the sweep reaches the fixed point at once.

Loop-carried values of ``for`` that only feed themselves are removed first:
a carried value is kept if its result is used after the loop, or if its body
argument reaches an effect or a kept carried value (found to a fixed point);
the others leave ``inits``, the body arguments and the yield, and the sweep
then deletes the ops that computed them.
"""
from __future__ import annotations

from typing import Optional

from tilec.ir import ops
from tilec.ir.core import Block, Function, Op, Value, clone_op, map_block, walk
from tilec.opt.rewrite import rebuild


def eliminate_dead_code(fn: Function) -> Function:
    """``fn`` without its unused pure ops and self-feeding ``for`` carried values."""
    fn = _drop_unused_carried(fn)
    live_values: set[Value] = set()
    dead: set[Op] = set()
    _sweep(fn.body, live_values, dead)
    return rebuild(fn, lambda op, vmap: [] if op in dead else None)


def _sweep(block: Block, live: set[Value], dead: set[Op]) -> None:
    """Mark the ops of ``block`` dead or live, last to first."""
    for op in reversed(block.ops):
        if op.PURE and not any(r in live for r in op.results):
            dead.add(op)
            continue
        for region in reversed(op.regions):
            _sweep(region, live, dead)
        live.update(op.operands)


# --------------------------------------------------------------------------- #
# Self-feeding loop-carried values
# --------------------------------------------------------------------------- #

def _drop_unused_carried(fn: Function) -> Function:
    """Drop ``for`` carried values used by nothing but their own yield slot."""
    uses = _use_counts(fn.body)
    return rebuild(fn, lambda op, vmap: _rewrite_for(op, vmap, uses))


def _use_counts(block: Block) -> dict[Value, int]:
    counts: dict[Value, int] = {}
    for op in walk(block):
        for v in op.operands:
            counts[v] = counts.get(v, 0) + 1
    return counts


def _live_slots(loop: ops.For, uses: dict[Value, int]) -> list[int]:
    """The carried values that matter: those whose result is used, and, to a
    fixed point, those whose body argument feeds a live slot or an effect."""
    live = {i for i, r in enumerate(loop.results) if uses.get(r, 0)}
    body = Block(ops=loop.body.ops[:-1])
    while True:
        live_values = {loop.body.terminator.values[i] for i in live}
        _sweep(body, live_values, set())
        grown = live | {i for i, a in enumerate(loop.body.args[1:]) if a in live_values}
        if grown == live:
            return sorted(live)
        live = grown


def _shrink_for(loop: ops.For, vmap: dict, uses: dict[Value, int]) -> Optional[list[Op]]:
    keep = _live_slots(loop, uses)
    if len(keep) == len(loop.inits):
        return None
    body = _shrunk_body(loop, keep, vmap, uses)
    new = clone_op(loop, vmap, inits=[vmap.get(loop.inits[i], loop.inits[i]) for i in keep], body=body)
    new.results = [Value(loop.results[i].type, new, j, loop.results[i].name) for j, i in enumerate(keep)]
    vmap.update((loop.results[i], r) for i, r in zip(keep, new.results))
    return [new]


def _shrunk_body(loop: ops.For, keep: list[int], vmap: dict, uses: dict[Value, int]) -> Block:
    """``loop``'s body with only the carried values ``keep`` (as arguments and yielded)."""
    body = Block()
    for arg in [loop.body.args[0]] + [loop.body.args[i + 1] for i in keep]:
        vmap[arg] = body.add_arg(arg.type, arg.name)
    inner = map_block(Block(ops=loop.body.ops), lambda op, m: _rewrite_for(op, m, uses), vmap)
    term = inner.ops[-1]
    body.ops = inner.ops[:-1] + [clone_op(term, {}, values=[term.values[i] for i in keep])]
    return body


def _rewrite_for(op: Op, vmap: dict, uses: dict[Value, int]) -> Optional[list[Op]]:
    return _shrink_for(op, vmap, uses) if isinstance(op, ops.For) else None
