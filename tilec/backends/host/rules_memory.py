"""Host rules of global memory: ``load``, ``store``, the atomics and ``histogram``.

A tile's load is lazy: each element is read where the tile is used, under
its mask (a branch LLVM's vectorizer turns into a masked vector load), so a
load, the arithmetic on it and the store of the result run in one loop.
The codegen driver makes a buffer of a loaded tile before any op that may
write memory while the tile is still to be used (``HostCtx.keep_loaded``).
A volatile load is an atomic (monotonic) load: LLVM neither merges it nor
hoists it out of a loop, so a spin on a flag another program sets ends.

Stores and atomics run where they are, one element after the other in
row-major order; an atomic's old values land in a buffer (0 where masked
off, as the interpreter gives).  A program is one thread, and programs run
on several threads at once, so atomics are LLVM's ``atomicrmw``/``cmpxchg``
at the op's ordering (system scope: every CPU thread).
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.types import ScalarType, TileType, elem_type, shape_of
from tilec.codegen_llvm.elementwise import constant
from tilec.codegen_llvm.memory import _FAILURE, _ORDERING, _from_memory, _guarded, _rmw_name, _to_memory
from tilec.codegen_llvm.scalar_base import bit_width, memory_type
from tilec.backends.host.codegen import HostCtx, host_rule
from tilec.backends.host.rules_values import element
from tilec.backends.host.streaming import store_streaming, streamable
from tilec.backends.host.tiles import I64, Tile, element_pointer, for_each, lazy

#: What loading one element costs, roughly (a tile read twice is worth a buffer).
LOAD_COST = 4


def _read(ctx: HostCtx, op: ir.Load, p: llir.Value, elem) -> llir.Value:
    """The element at ``p``; a volatile read is an atomic one (module docstring)."""
    ctx.check_access(op, p)
    t = memory_type(elem)
    if op.volatile:
        value = ctx.b.load_atomic(p, "monotonic", bit_width(t) // 8, typ=t)
    else:
        value = ctx.b.load(p, typ=t)
    return _from_memory(ctx, value, elem)


@host_rule(ir.Load)
def _load(ctx: HostCtx, op: ir.Load) -> None:
    ptr = ctx[op.ptr]
    mask = ctx[op.mask] if op.mask is not None else None
    other = ctx[op.other] if op.other is not None else None
    elem = elem_type(op.result.type)
    zero = constant(elem, 0)

    def one(c: HostCtx, coords) -> llir.Value:
        p = element(c, ptr, coords)
        m = element(c, mask, coords) if mask is not None else None
        fallback = element(c, other, coords) if other is not None else zero
        return _guarded(c, m, lambda: _read(c, op, p, elem), fallback)
    t = op.result.type
    if isinstance(t, TileType):
        tile = lazy(t.shape, elem, one, [ptr, mask, other], LOAD_COST)
        tile.reads = True
        ctx.bind(op.result, tile)
    else:
        ctx.bind(op.result, one(ctx, ()))


@host_rule(ir.Store)
def _store(ctx: HostCtx, op: ir.Store) -> None:
    ptr, value = ctx[op.ptr], ctx[op.value]
    mask = ctx[op.mask] if op.mask is not None else None
    elem = elem_type(op.value.type)

    def one(coords) -> None:
        p = element(ctx, ptr, coords)

        def write() -> None:
            ctx.check_access(op, p)
            ctx.b.store(_to_memory(ctx, element(ctx, value, coords), elem), p)
        _guarded(ctx, element(ctx, mask, coords) if mask is not None else None, write, None)
    if not streamable(ctx, op):
        _each(ctx, op.ptr, one)
        return
    with ctx.b.if_else(ctx.streaming) as (streams, stays):
        with streams:
            store_streaming(ctx, ptr, value, mask, elem)
        with stays:
            _each(ctx, op.ptr, one)


def _each(ctx: HostCtx, shaped: ir.Value, body) -> None:
    """``body(coords)`` for every element of ``shaped`` (once for a scalar)."""
    if isinstance(shaped.type, TileType):
        for_each(ctx, shaped.type.shape, body)
    else:
        body(())


def _atomic(ctx: HostCtx, op: ir.Op, mask, one) -> None:
    """``one(coords)`` (emitting the atomic, giving the old value) for every
    element where ``mask`` holds; the old values (0 elsewhere) are the result."""
    elem = elem_type(op.result.type)
    zero = constant(elem, 0)
    if not isinstance(op.result.type, TileType):
        m = mask if mask is None or not isinstance(mask, Tile) else mask.at(ctx, ())
        ctx.bind(op.result, _guarded(ctx, m, lambda: one(()), zero))
        return
    out = ctx.buffer(op.result.type.shape, elem)

    def body(coords) -> None:
        m = element(ctx, mask, coords) if mask is not None else None
        old = _guarded(ctx, m, lambda: one(coords), zero)
        ctx.b.store(_to_memory(ctx, old, elem), element_pointer(ctx, out, coords))
    for_each(ctx, op.result.type.shape, body)
    ctx.bind(op.result, out)


@host_rule(ir.AtomicRMW)
def _atomic_rmw(ctx: HostCtx, op: ir.AtomicRMW) -> None:
    ptr, val = ctx[op.ptr], ctx[op.val]
    elem = elem_type(op.result.type)
    name, ordering = _rmw_name(op.kind, elem), _ORDERING[op.sem]

    def one(coords) -> llir.Value:
        p, v = element(ctx, ptr, coords), _to_memory(ctx, element(ctx, val, coords), elem)
        ctx.check_access(op, p)
        return _from_memory(ctx, ctx.b.atomic_rmw(name, p, v, ordering), elem)
    _atomic(ctx, op, ctx[op.mask] if op.mask is not None else None, one)


@host_rule(ir.AtomicCAS)
def _atomic_cas(ctx: HostCtx, op: ir.AtomicCAS) -> None:
    ptr, cmp, val = ctx[op.ptr], ctx[op.cmp], ctx[op.val]
    elem = elem_type(op.result.type)
    ordering = _ORDERING[op.sem]
    as_int = llir.IntType(max(8, elem.bits)) if isinstance(elem, ScalarType) and elem.is_float else None

    def one(coords) -> llir.Value:
        b, p = ctx.b, element(ctx, ptr, coords)
        ctx.check_access(op, p)
        c, v = (_to_memory(ctx, element(ctx, x, coords), elem) for x in (cmp, val))
        if as_int is not None:
            c, v = b.bitcast(c, as_int), b.bitcast(v, as_int)
        old = b.extract_value(b.cmpxchg(p, c, v, ordering, _FAILURE[ordering]), 0)
        return _from_memory(ctx, b.bitcast(old, memory_type(elem)) if as_int is not None else old, elem)
    _atomic(ctx, op, None, one)


@host_rule(ir.Histogram)
def _histogram(ctx: HostCtx, op: ir.Histogram) -> None:
    """Counts in a zeroed buffer, one element of ``src`` after the other."""
    src = ctx[op.src]
    mask = ctx[op.mask] if op.mask is not None else None
    i32, b = llir.IntType(32), ctx.b
    bins = ctx.buffer((op.num_bins,), elem_type(op.result.type))
    for_each(ctx, bins.shape, lambda coords: b.store(i32(0), element_pointer(ctx, bins, coords)))
    t = elem_type(op.src.type)

    def count(coords) -> None:
        v = src.at(ctx, coords)
        wide = b.sext(v, I64) if t.kind == "int" and t.bits < 64 else b.zext(v, I64) if t.bits < 64 else v
        inside = b.icmp_unsigned("<", wide, I64(op.num_bins))  # negative values are huge unsigned
        if mask is not None:
            inside = b.and_(inside, mask.at(ctx, coords))
        with b.if_then(inside):
            p = element_pointer(ctx, bins, (wide,))
            b.store(b.add(b.load(p, typ=i32), i32(1)), p)
    for_each(ctx, shape_of(op.src.type), count)
    ctx.bind(op.result, bins)
