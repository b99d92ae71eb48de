"""Host rules of structured control flow and debugging: ``for``, ``while``,
``if``, ``print``, ``assert``, ``barrier``.

A loop's carried scalar is a phi, as on the GPU.  A carried tile lives in
two buffers used in turn: an iteration reads the one the last iteration
wrote and writes the other (``_Carried``), so a yield that swaps two
carried tiles, or computes one from another, reads nothing it has already
overwritten; the phi of the pointer says which buffer holds the current
value.  A ``for``'s tile that only its own next value reads, element by
element (``acc += x``: ``updated_in_place``), lives in one buffer that the
iteration overwrites as it reads it: half the stack, and no pointer phi
that makes LLVM check the two buffers for overlap before every loop; where
its first value is a constant (``tl.zeros``), the buffer is not written
before the loop: the first iteration (and a loop of none's result) reads
the constant, chosen by a flag the first iteration clears.  An ``if`` writes each tile it yields into one buffer, from
whichever branch runs; a ``while``'s ``condition`` writes the values it
forwards into one buffer each, read by the body and after the loop.
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.types import TileType, elem_type
from tilec.codegen_llvm.control import _enter_loop, _keeps_going, run_region
from tilec.codegen_llvm.debug import _printf_arg
from tilec.backends.host.codegen import HostCtx, host_rule
from tilec.backends.host.tiles import Buffer, Lazy, Tile, for_each, lazy, write


class _Carried:
    """One value a loop carries: a scalar's phi, or a tile's pair of buffers
    and the phi of the one holding it.  Made before the loop's header (a
    tile's first value is written into the first buffer there); ``enter``
    makes the phi in the header."""

    def __init__(self, ctx: HostCtx, v: ir.Value, init, in_place: bool = False):
        self.ctx, self.pair, self.constant, self.fresh = ctx, None, None, None
        if isinstance(v.type, TileType):
            first = ctx.buffer(v.type.shape, elem_type(v.type))
            self.pair = [first, first if in_place else ctx.buffer(v.type.shape, elem_type(v.type))]
            if in_place and isinstance(init, Lazy) and init.cost == 0 and not init.reads:
                self.constant = init  # tl.zeros: read until the first iteration has written the buffer
            else:
                write(ctx, init, first)
            init = first.ptr
        self.init = init

    def enter(self, entry: llir.Block) -> None:
        b = self.ctx.b
        self.phi = b.phi(self.init.type)
        self.phi.add_incoming(self.init, entry)
        if self.constant is not None:  # true until an iteration has written the buffer
            self.fresh = b.phi(llir.IntType(1))
            self.fresh.add_incoming(llir.IntType(1)(1), entry)

    def close(self, latch: llir.Block, value: llir.Value) -> None:
        """The back edge from ``latch``, where the next iteration starts from ``value`` (``next``'s)."""
        self.phi.add_incoming(value, latch)
        if self.fresh is not None:
            self.fresh.add_incoming(llir.IntType(1)(0), latch)

    @property
    def current(self):
        if self.pair is None:
            return self.phi
        if self.constant is None:
            return self._at(self.phi)
        buf, constant, fresh = self._at(self.phi), self.constant, self.fresh
        return lazy(buf.shape, buf.elem, lambda c, coords: c.b.select(fresh, constant.at(c, coords), buf.at(c, coords)),
                    [buf])

    def _at(self, ptr: llir.Value) -> Buffer:
        return Buffer(self.pair[0].shape, self.pair[0].elem, ptr=ptr)

    def next(self, value) -> llir.Value:
        """What the next iteration starts from: for a tile, ``value`` written into
        the buffer the current one is not, and its pointer."""
        if self.pair is None:
            return value
        b = self.ctx.b
        first, second = self.pair[0].ptr, self.pair[1].ptr
        other = first if first is second else b.select(b.icmp_unsigned("==", self.phi, first), second, first)
        write(self.ctx, value, self._at(other))
        return other


#: Ops whose result's element reads only the same element of each operand.
ELEMENTWISE = (ir.UnaryOp, ir.BinaryOp, ir.Select, ir.Fma, ir.Cast, ir.Bitcast)


def updated_in_place(body: ir.Block, k: int) -> bool:
    """Whether carried value ``k`` of a loop whose ``body`` takes ``(iv,
    *carried)`` may be overwritten by its next value as that is computed:
    only elementwise ops of the body's own block read it (or read what they
    made of it), and only the yield's ``k``-th value takes any of that."""
    reached = {body.args[k + 1]}
    for op in body.ops:
        reads = [v for v in op.operands if v in reached]
        if not reads:
            continue
        if op is body.terminator:
            return all(v is op.values[k] for v in reads) and op.values.count(op.values[k]) == 1
        if not isinstance(op, ELEMENTWISE) or op.regions:
            return False
        reached.update(op.results)
    return True


@host_rule(ir.For)
def _for(ctx: HostCtx, op: ir.For) -> None:
    b = ctx.b
    lower, upper, step = ctx[op.lower], ctx[op.upper], ctx[op.step]
    carried = [_Carried(ctx, v, ctx[v], updated_in_place(op.body, k)) for k, v in enumerate(op.inits)]
    entry, header, body, done = _enter_loop(ctx, "for", "body")
    iv = b.phi(lower.type)
    iv.add_incoming(lower, entry)
    for c in carried:
        c.enter(entry)
    b.cbranch(_keeps_going(ctx, iv, upper, step, op.lower.type.kind == "int"), body, done)
    b.position_at_end(body)
    yielded = run_region(ctx, op.body, [iv] + [c.current for c in carried])
    nexts = [c.next(v) for c, v in zip(carried, yielded)]
    latch = b.block
    iv.add_incoming(b.add(iv, step), latch)
    for c, v in zip(carried, nexts):
        c.close(latch, v)
    b.branch(header)
    b.position_at_end(done)
    for v, c in zip(op.results, carried):
        ctx.bind(v, c.current)


@host_rule(ir.While)
def _while(ctx: HostCtx, op: ir.While) -> None:
    b = ctx.b
    carried = [_Carried(ctx, v, ctx[v]) for v in op.inits]
    entry, header, after, done = _enter_loop(ctx, "while", "after")
    for c in carried:
        c.enter(entry)
    forwarded = _forward(ctx, op, run_region(ctx, op.before, [c.current for c in carried]))
    b.cbranch(ctx[op.before.terminator.cond], after, done)
    b.position_at_end(after)
    nexts = [c.next(v) for c, v in zip(carried, run_region(ctx, op.after, forwarded))]
    for c, v in zip(carried, nexts):
        c.close(b.block, v)
    b.branch(header)
    b.position_at_end(done)
    for v, value in zip(op.results, forwarded):
        ctx.bind(v, value)


def _forward(ctx: HostCtx, op: ir.While, values: list) -> list:
    """The ``condition``'s values as the body and the loop's results read them:
    tiles written into a buffer each."""
    out = []
    for v, value in zip(op.results, values):
        if isinstance(value, Tile):
            buf = ctx.buffer(value.shape, value.elem)
            write(ctx, value, buf)
            value = buf
        out.append(value)
    return out


@host_rule(ir.If)
def _if(ctx: HostCtx, op: ir.If) -> None:
    b = ctx.b
    then_block, else_block, done = (b.append_basic_block(f"if.{part}") for part in ("then", "else", "done"))
    b.cbranch(ctx[op.cond], then_block, else_block)
    bufs = [ctx.buffer(v.type.shape, elem_type(v.type)) if isinstance(v.type, TileType) else None
            for v in op.results]
    ends = []
    for region, block in ((op.then_body, then_block), (op.else_body, else_block)):
        b.position_at_end(block)
        values = run_region(ctx, region, [])
        for buf, value in zip(bufs, values):
            if buf is not None:
                write(ctx, value, buf)
        ends.append((values, b.block))
        b.branch(done)
    b.position_at_end(done)
    for k, (v, buf) in enumerate(zip(op.results, bufs)):
        if buf is not None:
            ctx.bind(v, buf)
            continue
        phi = b.phi(ends[0][0][k].type)
        for values, block in ends:
            phi.add_incoming(values[k], block)
        ctx.bind(v, phi)


@host_rule(ir.Print)
def _print(ctx: HostCtx, op: ir.Print) -> None:
    """One line per element (per program for scalars), as the GPU prints them."""
    pids = ctx.grid[:3]
    values = [ctx[v] for v in op.values]
    shape = next((v.type.shape for v in op.values if isinstance(v.type, TileType)), None)
    prefix = op.prefix.replace("%", "%%")

    def line(coords) -> None:
        args = [_printf_arg(ctx, x.at(ctx, coords) if isinstance(x, Tile) else x, elem_type(v.type), op.hex)
                for v, x in zip(op.values, values)]
        idx = f" idx ({', '.join(['%d'] * len(coords))})" if coords else ""
        fmt = f"pid (%d, %d, %d){idx} {prefix}: " + " ".join(f for f, _ in args) + "\n"
        where = [ctx.b.trunc(c, llir.IntType(32)) for c in coords]
        ctx.lowering.printf(ctx, fmt, pids + where + [a for _, a in args])
    if shape is None:
        line(())
    else:
        for_each(ctx, shape, line)


@host_rule(ir.Assert)
def _assert(ctx: HostCtx, op: ir.Assert) -> None:
    cond = ctx[op.cond]
    b = ctx.b

    def check(coords) -> None:
        with b.if_then(b.not_(cond.at(ctx, coords) if isinstance(cond, Tile) else cond)):
            ctx.lowering.assert_fail(ctx, f"device_assert failed: {op.msg}", op.loc.file, op.loc.line, ctx.fn.name)
    if isinstance(cond, Tile):
        for_each(ctx, cond.shape, check)
    else:
        check(())


@host_rule(ir.Barrier)
def _barrier(ctx: HostCtx, op: ir.Barrier) -> None:
    """Nothing: a program is one thread."""

