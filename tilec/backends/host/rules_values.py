"""Host rules of the ops that compute values element by element: constants,
the program's ids, ``arange``, every per-element op of ``codegen_llvm``'s
scalar emitters, and the shape ops (``splat``, ``broadcast``,
``expand_dims``, ``reshape``, ``permute``, ``join``, ``split``, ``gather``),
which only say where an element comes from: each makes a ``Lazy`` whose
element reads an operand's element at other coordinates.
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.types import TileType, elem_type, shape_of
from tilec.codegen_llvm import scalar_casts, scalar_fp8, scalar_math  # noqa: F401  (fill the emitters' table)
from tilec.codegen_llvm.elementwise import constant
from tilec.codegen_llvm.memory import _to_memory
from tilec.codegen_llvm.scalar_base import LOWER as SCALAR_LOWER, ScalarContext, bit_width, counted_loop, operand_type
from tilec.codegen_llvm.scalar_ops import emit_scalar
from tilec.codegen_llvm.control import run_region
from tilec.backends.host.codegen import HostCtx, host_rule
from tilec.backends.host.tiles import CHEAP, I64, Tile, coords_of, element_pointer, lazy, linear_index, numel

#: What one element of these ops costs, roughly, in instructions (others: 1;
#: constants, splats and the shape ops that only move elements: 0, so that
#: address and mask arithmetic stays lazy however many of them it goes through).
FREE = 0
MATH_COST = 20
DIVISION_COST = 8
_DIVISIONS = (ir.Div, ir.Rem)


def element(ctx: HostCtx, value, coords) -> llir.Value:
    """An operand's element at ``coords``: a tile's, or the scalar itself."""
    return value.at(ctx, coords) if isinstance(value, Tile) else value


def _cost(op: ir.Op) -> int:
    if isinstance(op, ir.MathCall) or type(op) in scalar_math.MATH:
        return MATH_COST
    if isinstance(op, _DIVISIONS):
        return DIVISION_COST
    return 1


def _elementwise(ctx: HostCtx, op: ir.Op) -> None:
    """Any per-element op: its scalar emitter (the host's own, ``HOST_EMITTERS``,
    else ``codegen_llvm``'s), on scalars now or on each element where the tile is used."""
    operands = [ctx[v] for v in op.operands]
    result = op.results[0]
    emit = HOST_EMITTERS.get(type(op), emit_scalar)
    if not isinstance(result.type, TileType):
        ctx.bind(result, emit(ctx.scalar, op, operands))
        return
    fn = lambda c, coords: emit(c.scalar, op, [element(c, x, coords) for x in operands])  # noqa: E731
    ctx.bind(result, lazy(shape_of(result.type), elem_type(result.type), fn, operands, _cost(op)))


def _extremum_number(ctx: ScalarContext, op: ir.Op, args: list) -> llir.Value:
    """``maximum``/``minimum`` of floats that return the operand that is not NaN
    (IEEE 754-2019 maximumNumber, -0.0 below +0.0) by compares and a select.
    LLVM 22's ``llvm.maximumnum``/``minimumnum`` on x86-64-v4 (AVX-512's
    ``vfpclass`` path) gives NaN where one operand is known never NaN and the
    other is NaN (``max(float(i), x)`` with ``x`` NaN); the interpreter gives
    the other operand, and so does this.  Other extrema: the shared emitter."""
    if op.propagate_nan or not operand_type(op).is_float:
        return emit_scalar(ctx, op, args)
    b, (x, y) = ctx.builder, args
    larger = isinstance(op, ir.Maximum)
    beats = b.fcmp_ordered(">" if larger else "<", x, y)
    tie = b.and_(b.fcmp_ordered("==", x, y), _sign_bit(b, y if larger else x))  # +-0: max takes +0, min -0
    keep_x = b.or_(b.fcmp_unordered("uno", y, y), b.or_(beats, tie))
    return b.select(keep_x, x, y)


def _sign_bit(b: llir.IRBuilder, x: llir.Value) -> llir.Value:
    """Whether float ``x``'s sign bit is set."""
    bits = b.bitcast(x, llir.IntType(bit_width(x.type)))
    return b.icmp_signed("<", bits, bits.type(0))


#: The host's per-element emitters, over ``codegen_llvm``'s, by op class.
HOST_EMITTERS = {ir.Maximum: _extremum_number, ir.Minimum: _extremum_number}

for _cls in SCALAR_LOWER:
    host_rule(_cls)(_elementwise)


@host_rule(ir.Constant)
def _constant(ctx: HostCtx, op: ir.Constant) -> None:
    t = op.result.type
    value = constant(elem_type(t), op.value)
    ctx.bind(op.result, lazy(t.shape, t.elem, lambda c, coords: value, cost=FREE) if isinstance(t, TileType) else value)


@host_rule(ir.ProgramId)
def _program_id(ctx: HostCtx, op: ir.ProgramId) -> None:
    ctx.bind(op.result, ctx.grid[op.axis])


@host_rule(ir.NumPrograms)
def _num_programs(ctx: HostCtx, op: ir.NumPrograms) -> None:
    ctx.bind(op.result, ctx.grid[3 + op.axis])


@host_rule(ir.Arange)
def _arange(ctx: HostCtx, op: ir.Arange) -> None:
    i32 = llir.IntType(32)

    def fn(c: HostCtx, coords):
        i = c.b.trunc(coords[0], i32)
        return c.b.add(i, i32(op.start)) if op.start else i
    ctx.bind(op.result, lazy(op.result.type.shape, op.result.type.elem, fn))


@host_rule(ir.Splat)
def _splat(ctx: HostCtx, op: ir.Splat) -> None:
    value = ctx[op.src]
    ctx.bind(op.result, lazy(op.result.type.shape, op.result.type.elem, lambda c, coords: value, cost=FREE))


def _remap(ctx: HostCtx, op: ir.Op, src, where, cost: int = FREE) -> None:
    """Bind ``op``'s result to the element of ``src`` at ``where(ctx, coords)``
    (``cost``: of finding where)."""
    t = op.result.type
    if not isinstance(src, Tile):
        ctx.bind(op.result, lazy(shape_of(t), elem_type(t), lambda c, coords: src, cost=FREE)
                 if isinstance(t, TileType) else src)
        return
    if not isinstance(t, TileType):  # to a scalar: the one element
        ctx.bind(op.result, src.at(ctx, tuple(I64(0) for _ in src.shape)))
        return
    ctx.bind(op.result, lazy(t.shape, t.elem, lambda c, coords: src.at(c, where(c, coords)), [src], cost))


@host_rule(ir.Broadcast)
def _broadcast(ctx: HostCtx, op: ir.Broadcast) -> None:
    """Each element reads the source at 0 along the dims it spreads (the
    source made a buffer first when an element of it is not cheap)."""
    src = ctx[op.src]
    if isinstance(src, Tile) and src.cost > CHEAP:
        src = ctx.materialize(src)
    shape = shape_of(op.src.type)
    lead = len(op.shape) - len(shape)
    _remap(ctx, op, src, lambda c, coords: tuple(x if n > 1 else I64(0) for x, n in zip(coords[lead:], shape)))


@host_rule(ir.ExpandDims)
def _expand_dims(ctx: HostCtx, op: ir.ExpandDims) -> None:
    _remap(ctx, op, ctx[op.src], lambda c, coords: coords[:op.axis] + coords[op.axis + 1:])


@host_rule(ir.Reshape)
def _reshape(ctx: HostCtx, op: ir.Reshape) -> None:
    """Row-major order is kept: the element at the same row-major index."""
    src_shape, out_shape = shape_of(op.src.type), tuple(op.shape)
    _remap(ctx, op, ctx[op.src],
           lambda c, coords: coords_of(c, linear_index(c, coords, out_shape), src_shape), cost=1)


@host_rule(ir.Permute)
def _permute(ctx: HostCtx, op: ir.Permute) -> None:
    """Result dim ``i`` is source dim ``order[i]``."""
    def where(c, coords):
        out = [None] * len(coords)
        for i, d in enumerate(op.order):
            out[d] = coords[i]
        return tuple(out)
    _remap(ctx, op, ctx[op.src], where)


@host_rule(ir.Join)
def _join(ctx: HostCtx, op: ir.Join) -> None:
    """A new last dim of 2: ``lhs`` at 0, ``rhs`` at 1."""
    lhs, rhs = ctx[op.lhs], ctx[op.rhs]
    t = op.result.type

    def fn(c: HostCtx, coords):
        inner = coords[:-1]
        second = c.b.icmp_unsigned("!=", coords[-1], I64(0))
        return c.b.select(second, element(c, rhs, inner), element(c, lhs, inner))
    ctx.bind(op.result, lazy(t.shape, t.elem, fn, [lhs, rhs]))


@host_rule(ir.Split)
def _split(ctx: HostCtx, op: ir.Split) -> None:
    """The last dim (of 2) taken apart."""
    src = ctx[op.src]
    for k, result in enumerate(op.results):
        t = result.type
        if isinstance(t, TileType):
            ctx.bind(result, lazy(t.shape, t.elem, lambda c, coords, k=k: src.at(c, coords + (I64(k),)), [src],
                                  FREE))
        else:
            ctx.bind(result, src.at(ctx, (I64(k),)))


@host_rule(ir.Gather)
def _gather(ctx: HostCtx, op: ir.Gather) -> None:
    """``src`` at ``index`` along ``axis`` (its low bits: the tile's length
    is a power of two), the source made a buffer first."""
    src, index = ctx.materialize(ctx[op.src]), ctx[op.index]
    n = shape_of(op.src.type)[op.axis]
    t = op.result.type

    def fn(c: HostCtx, coords):
        i = index.at(c, coords)
        i = c.b.zext(i, I64) if i.type.width < 64 else i
        at = c.b.and_(i, I64(n - 1))
        return src.at(c, coords[:op.axis] + (at,) + coords[op.axis + 1:])
    ctx.bind(op.result, lazy(t.shape, t.elem, fn, [index], cost=2))


@host_rule(ir.ProcessorId)
def _processor_id(ctx: HostCtx, op: ir.ProcessorId) -> None:
    """The CPU the program's thread runs on now (C's ``sched_getcpu``)."""
    i32 = llir.IntType(32)
    ctx.bind(op.result, ctx.b.call(ctx.declare("sched_getcpu", i32, []), []))


#: ``clock_gettime``'s clock of the time since the epoch (Linux's number).
CLOCK_REALTIME = 0


@host_rule(ir.GlobalTimer)
def _global_timer(ctx: HostCtx, op: ir.GlobalTimer) -> None:
    """Nanoseconds since the epoch, as the interpreter reads them (C's ``clock_gettime``)."""
    b, i32 = ctx.b, llir.IntType(32)
    spec = ctx.slot_of(llir.ArrayType(I64, 2))
    ctx.b.call(ctx.declare("clock_gettime", i32, [i32, llir.PointerType()]), [i32(CLOCK_REALTIME), spec])
    seconds, nanoseconds = (b.load(b.gep(spec, [I64(0), llir.IntType(32)(k)], source_etype=llir.ArrayType(I64, 2)),
                                   typ=I64) for k in (0, 1))
    ctx.bind(op.result, b.add(b.mul(seconds, I64(1_000_000_000)), nanoseconds))


@host_rule(ir.MapElementwise)
def _map_elementwise(ctx: HostCtx, op: ir.MapElementwise) -> None:
    """The body on ``pack`` consecutive elements (row-major) at a time, the
    results into buffers; a last group short of ``pack`` repeats the tile's
    last element and drops the extra results, as on a GPU."""
    srcs, pack, b = [ctx[v] for v in op.srcs], op.pack, ctx.b
    shape = shape_of(op.srcs[0].type)
    count = numel(shape)
    outs = [ctx.buffer(shape, elem_type(v.type)) for v in op.results]

    def group(g) -> None:
        indices = []
        for j in range(pack):
            i = b.add(b.mul(g, I64(pack)), I64(j))
            indices.append(b.select(b.icmp_unsigned("<", i, I64(count)), i, I64(count - 1)) if count % pack else i)
        places = [coords_of(ctx, i, shape) for i in indices]
        yielded = run_region(ctx, op.body, [element(ctx, s, c) for s in srcs for c in places])
        for r, out in enumerate(outs):
            for j, (i, c) in enumerate(zip(indices, places)):
                if count % pack:
                    real = b.icmp_unsigned("<", b.add(b.mul(g, I64(pack)), I64(j)), I64(count))
                    with b.if_then(real):
                        _store(ctx, out, c, yielded[r * pack + j])
                else:
                    _store(ctx, out, c, yielded[r * pack + j])
    counted_loop(b, I64(-(-count // pack)), group)
    for v, out in zip(op.results, outs):
        ctx.bind(v, out)


def _store(ctx: HostCtx, buf, coords, value) -> None:
    ctx.b.store(_to_memory(ctx, value, buf.elem), element_pointer(ctx, buf, coords))
