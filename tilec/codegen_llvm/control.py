"""Structured control flow -> LLVM basic blocks with one phi per register.

The conditions of ``if`` and ``while`` and the bounds of ``for`` are scalars,
the same in every thread of a program, so no thread diverges from its warp;
except inside a ``map_elementwise`` body (``maps.py``), scalar code run per
element, where each thread branches on its own elements (the body holds no
barrier or lane exchange, so LLVM's reconvergence is all it needs).
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.core import Block
from tilec.codegen_llvm.kernel import Ctx, lowers


def _phis(ctx: Ctx, inits: list[list], incoming_block) -> list[list]:
    """One phi per register of each list in ``inits``, fed from ``incoming_block``."""
    out = []
    for regs in inits:
        row = []
        for v in regs:
            phi = ctx.b.phi(v.type)
            phi.add_incoming(v, incoming_block)
            row.append(phi)
        out.append(row)
    return out


def _add_incoming(phis: list[list], values: list[list], block) -> None:
    for row, regs in zip(phis, values):
        for phi, v in zip(row, regs):
            phi.add_incoming(v, block)


def run_region(ctx: Ctx, block: Block, args: list[list]) -> list[list]:
    """Lower ``block`` with its arguments bound to ``args``; what its terminator passes on."""
    for a, regs in zip(block.args, args):
        ctx.env[a] = regs
    for op in block.ops[:-1]:
        ctx.lower_op(op)
    term = block.terminator
    return [ctx[v] for v in term.values]


def _enter_loop(ctx: Ctx, kind: str, inner: str):
    """Branch from the current block to a new loop header and stay there;
    returns (the entry block, the header, the loop's inner block, the exit block)."""
    b = ctx.b
    entry = b.block
    header, inner_block, done = (b.append_basic_block(f"{kind}.{part}") for part in ("header", inner, "done"))
    b.branch(header)
    b.position_at_end(header)
    return entry, header, inner_block, done


@lowers(ir.For)
def _for(ctx: Ctx, op: ir.For) -> None:
    b = ctx.b
    lower, upper, step = ctx[op.lower][0], ctx[op.upper][0], ctx[op.step][0]
    signed = op.lower.type.kind == "int"
    entry, header, body, done = _enter_loop(ctx, "for", "body")
    iv = b.phi(lower.type)
    iv.add_incoming(lower, entry)
    carried = _phis(ctx, [ctx[v] for v in op.inits], entry)
    b.cbranch(_keeps_going(ctx, iv, upper, step, signed), body, done)
    b.position_at_end(body)
    nxt = run_region(ctx, op.body, [[iv]] + carried)
    latch = b.block
    iv.add_incoming(b.add(iv, step), latch)
    _add_incoming(carried, nxt, latch)
    b.branch(header)
    b.position_at_end(done)
    ctx.bind(op.results, carried)


def _keeps_going(ctx: Ctx, iv, upper, step, signed: bool):
    """``iv < upper`` for a positive step, ``iv > upper`` for a negative one."""
    b = ctx.b
    cmp = b.icmp_signed if signed else b.icmp_unsigned
    if isinstance(step, llir.Constant):
        return cmp("<" if step.constant > 0 or not signed else ">", iv, upper)
    up = cmp("<", iv, upper)
    if not signed:
        return up
    return b.select(b.icmp_signed(">", step, step.type(0)), up, cmp(">", iv, upper))


@lowers(ir.If)
def _if(ctx: Ctx, op: ir.If) -> None:
    b = ctx.b
    then_block = b.append_basic_block("if.then")
    else_block = b.append_basic_block("if.else")
    done = b.append_basic_block("if.done")
    b.cbranch(ctx[op.cond][0], then_block, else_block)
    ends = []
    for region, block in ((op.then_body, then_block), (op.else_body, else_block)):
        b.position_at_end(block)
        values = run_region(ctx, region, [])
        ends.append((values, b.block))
        b.branch(done)
    b.position_at_end(done)
    results = []
    for k in range(len(op.results)):
        row = []
        for i, v in enumerate(ends[0][0][k]):
            phi = b.phi(v.type)
            for values, block in ends:
                phi.add_incoming(values[k][i], block)
            row.append(phi)
        results.append(row)
    ctx.bind(op.results, results)


@lowers(ir.While)
def _while(ctx: Ctx, op: ir.While) -> None:
    b = ctx.b
    entry, header, after, done = _enter_loop(ctx, "while", "after")
    carried = _phis(ctx, [ctx[v] for v in op.inits], entry)
    forwarded = run_region(ctx, op.before, carried)
    cond = ctx[op.before.terminator.cond][0]
    b.cbranch(cond, after, done)
    b.position_at_end(after)
    nxt = run_region(ctx, op.after, forwarded)
    _add_incoming(carried, nxt, b.block)
    b.branch(header)
    b.position_at_end(done)
    ctx.bind(op.results, forwarded)
