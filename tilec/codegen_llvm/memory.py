"""Global memory: ``load``, ``store`` and the atomics.

Loads and stores move each thread's registers in vectors: registers run along
the layout's fastest dim first, so ``vec`` consecutive registers are
``vec`` consecutive elements whenever the axis analysis proves the
addresses contiguous and ``vec * size`` aligned, and the mask constant over
them (``access_width``), up to the target's widest access
(``Target.max_vector_bytes``).  One ``<vec x T>`` access then moves them
(on NVIDIA GPUs 16 bytes are one ``ld.global.v4.b32``).  A masked access
branches around the instruction; masked-off lanes never touch memory.  An
access with cache hints is the backend's own instruction where it has one
(``TargetLowering.load``/``store``).

Atomics go element by element; where a layout gives several threads the
same element, only one of them (``owner_predicate``) applies it, and a
scalar atomic is applied by thread 0 and its old value shared through
shared memory.  A backend may give an atomic as its own instruction
(``TargetLowering.atomic_rmw``/``atomic_cas``); the others are LLVM's
``atomicrmw``/``cmpxchg`` with the backend's syncscopes
(``TargetLowering.syncscope``).
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.layouts import register_counts, root_blocked
from tilec.ir.types import ScalarType, TileType, elem_type, shape_of
from tilec.codegen_llvm.elementwise import constant
from tilec.codegen_llvm.kernel import I32, Ctx, all_of, first_thread, lowers, owner_predicate, registers_of
from tilec.codegen_llvm.scalar_base import memory_type


def access_width(ctx: Ctx, op: ir.Op) -> int:
    """How many consecutive registers one vector access of ``op`` may move:
    elements contiguous along the layout's fastest dim, the first aligned to
    the whole vector, the mask constant over them (``Analyses.axes``), and
    no wider than the target's widest access."""
    t = op.ptr.type
    if not isinstance(t, TileType):
        return 1
    layout = root_blocked(t.layout)
    fast = layout.order[0]
    if fast >= len(t.shape):
        return 1
    elem = elem_type(t).elem
    ptr = ctx.axes[op.ptr]
    width = min(register_counts(t.layout, t.shape)[fast], layout.spt[fast],
                ptr.vector_width(fast, elem.bytes, ctx.target.max_vector_bytes))
    if op.mask is not None:
        width = min(width, ctx.axes[op.mask].constancy[fast])
    return max(1, width)


def _groups(n: int, width: int) -> list[range]:
    return [range(i, i + width) for i in range(0, n, width)]


def _to_memory(ctx: Ctx, v: llir.Value, t) -> llir.Value:
    """A register value as it is stored (``i1`` as a byte)."""
    if isinstance(t, ScalarType) and t.is_bool:
        return ctx.b.zext(v, llir.IntType(8))
    return v


def _from_memory(ctx: Ctx, v: llir.Value, t) -> llir.Value:
    if isinstance(t, ScalarType) and t.is_bool:
        return ctx.b.icmp_unsigned("!=", v, v.type(0))
    return v


def _guarded(ctx: Ctx, cond: Optional[llir.Value], emit, fallback):
    """``emit()`` where ``cond`` holds (always when it is None); where it does
    not, ``fallback`` (the values the skipped path yields, or None)."""
    if cond is None:
        return emit()
    b = ctx.b
    start = b.block
    with b.if_then(cond) as _:
        got = emit()
        then_end = b.block
    if got is None:
        return None
    if isinstance(got, list):
        return [_phi(b, g, then_end, f, start) for g, f in zip(got, fallback)]
    return _phi(b, got, then_end, fallback, start)


def _phi(b, got, then_end, fallback, start):
    phi = b.phi(got.type)
    phi.add_incoming(got, then_end)
    phi.add_incoming(fallback, start)
    return phi


# --------------------------------------------------------------------------- #
# load / store
# --------------------------------------------------------------------------- #

@lowers(ir.Load)
def _load(ctx: Ctx, op: ir.Load) -> None:
    elem = elem_type(op.result.type)
    mem, width = memory_type(elem), access_width(ctx, op)
    ptrs, n = ctx[op.ptr], registers_of(op.result)
    masks = ctx[op.mask] if op.mask is not None else None
    others = ctx[op.other] if op.other is not None else [constant(elem, 0)] * n
    out = []
    for g in _groups(n, width):
        vtype = mem if width == 1 else llir.VectorType(mem, width)

        def emit(p=ptrs[g[0]], vtype=vtype):
            hinted = ctx.lowering.load(ctx, p, vtype, op.cache, op.eviction, op.volatile)
            return hinted if hinted is not None else ctx.b.load(p, typ=vtype, align=width * elem.bytes)
        cond = masks[g[0]] if masks is not None else None
        fallback = None if cond is None else _pack(ctx, [_to_memory(ctx, others[i], elem) for i in g])
        raw = _guarded(ctx, cond, emit, fallback)
        values = [raw] if width == 1 else [ctx.b.extract_element(raw, I32(i)) for i in range(width)]
        out.extend(_from_memory(ctx, v, elem) for v in values)
    ctx.bind(op.results, [out])


def _pack(ctx: Ctx, values: list) -> llir.Value:
    """One value as it is, several as a vector."""
    if len(values) == 1:
        return values[0]
    vec = llir.Constant(llir.VectorType(values[0].type, len(values)), None)
    for j, v in enumerate(values):
        vec = ctx.b.insert_element(vec, v, I32(j))
    return vec


@lowers(ir.Store)
def _store(ctx: Ctx, op: ir.Store) -> None:
    elem = elem_type(op.value.type)
    width = access_width(ctx, op)
    ptrs, values, n = ctx[op.ptr], ctx[op.value], registers_of(op.value)
    masks = ctx[op.mask] if op.mask is not None else None
    owner = _owner(ctx, op.ptr)
    for g in _groups(n, width):
        data = _pack(ctx, [_to_memory(ctx, values[i], elem) for i in g])

        def emit(p=ptrs[g[0]], d=data):
            if not ctx.lowering.store(ctx, p, d, op.cache, op.eviction):
                ctx.b.store(d, p, align=width * elem.bytes)
        _guarded(ctx, all_of(ctx.b, [c for c in (owner, masks and masks[g[0]]) if c is not None]), emit, None)


def _owner(ctx: Ctx, ptr: ir.Value):
    """Who performs a side effect on each element: thread 0 for a scalar, the
    owning thread of a replicated tile element, else every thread (None, as
    for a block of one thread, which holds and owns every element)."""
    t = ptr.type
    if ctx.num_warps * ctx.target.warp_size == 1:
        return None
    if not isinstance(t, TileType):
        return first_thread(ctx)
    return owner_predicate(ctx, t.layout, t.shape)


# --------------------------------------------------------------------------- #
# atomics
# --------------------------------------------------------------------------- #

_ORDERING = {"relaxed": "monotonic", "acquire": "acquire", "release": "release", "acq_rel": "acq_rel"}
_FLOAT_RMW = {"add": "fadd", "max": "fmax", "min": "fmin", "xchg": "xchg"}
_SIGNED_RMW = {"add": "add", "max": "max", "min": "min", "and": "and", "or": "or", "xor": "xor", "xchg": "xchg"}
_UNSIGNED_RMW = dict(_SIGNED_RMW, max="umax", min="umin")


def _rmw_name(kind: str, t: ScalarType) -> str:
    if t.is_float:
        return _FLOAT_RMW[kind]
    return (_SIGNED_RMW if t.kind == "int" else _UNSIGNED_RMW)[kind]


@lowers(ir.AtomicRMW)
def _atomic_rmw(ctx: Ctx, op: ir.AtomicRMW) -> None:
    elem = elem_type(op.result.type)
    masks = ctx[op.mask] if op.mask is not None else None
    name = _rmw_name(op.kind, elem)

    def one(i, p, v):
        v = _to_memory(ctx, v, elem)
        old = ctx.lowering.atomic_rmw(ctx, name, p, v, op.sem, op.scope)
        if old is None:
            old = _fenced(ctx, op, lambda relaxed: ctx.b.atomic_rmw(name, p, v, relaxed))
        return _from_memory(ctx, old, elem)
    _atomic(ctx, op, masks, one, [ctx[op.ptr], ctx[op.val]])


# LLVM 22's NVIDIA backend drops the ordering of some read-modify-writes
# (``atomicrmw xchg acq_rel`` becomes a relaxed exchange): a relaxed atomic
# between fences orders them in every case (a lock's release really
# releases).  ``cmpxchg`` keeps its ordering and scope there (every ordering,
# scope and width checked), so a CAS is one instruction, as in Triton.  (Two
# fences per try of a spin lock had the layer-norm backward's dx kernel at
# 0.88x Triton at N = 1024 on the H100; one acq_rel CAS, 0.99x.)
_RELEASING = ("release", "acq_rel", "seq_cst")
_ACQUIRING = ("acquire", "acq_rel", "seq_cst")


def _fenced(ctx: Ctx, op: ir.Op, relaxed_atomic):
    """``relaxed_atomic(ordering)`` (emitting an atomic of that LLVM ordering,
    a relaxed one at ``op``'s scope) between the fences that give it
    ``op``'s ordering at that scope; its value."""
    ordering, scope = _ORDERING[op.sem], ctx.lowering.syncscope(op.scope)
    if ordering in _RELEASING:
        ctx.b.fence(ordering, scope)
    old = relaxed_atomic(scoped("monotonic", scope))
    if ordering in _ACQUIRING:
        ctx.b.fence(ordering, scope)
    return old


def scoped(ordering: str, scope) -> str:
    """An atomic's LLVM ordering text with its syncscope: llvmlite's atomics
    take no syncscope argument, and the ordering text is where LLVM's syntax has it."""
    return ordering if scope is None else f'syncscope("{scope}") {ordering}'


# A failed compare-exchange only reads: it acquires at most.
_FAILURE = {"monotonic": "monotonic", "acquire": "acquire", "release": "monotonic", "acq_rel": "acquire"}


@lowers(ir.AtomicCAS)
def _atomic_cas(ctx: Ctx, op: ir.AtomicCAS) -> None:
    elem = elem_type(op.result.type)
    ordering, scope = _ORDERING[op.sem], ctx.lowering.syncscope(op.scope)
    as_int = llir.IntType(max(8, elem.bits)) if isinstance(elem, ScalarType) and elem.is_float else None

    def one(i, p, cmp, val):
        b = ctx.b
        cmp, val = _to_memory(ctx, cmp, elem), _to_memory(ctx, val, elem)
        old = ctx.lowering.atomic_cas(ctx, p, cmp, val, op.sem, op.scope)
        if old is not None:
            return _from_memory(ctx, old, elem)
        if as_int is not None:
            cmp, val = b.bitcast(cmp, as_int), b.bitcast(val, as_int)
        old = b.extract_value(b.cmpxchg(p, cmp, val, scoped(ordering, scope), _FAILURE[ordering]), 0)
        return _from_memory(ctx, b.bitcast(old, memory_type(elem)) if as_int is not None else old, elem)
    _atomic(ctx, op, None, one, [ctx[op.ptr], ctx[op.cmp], ctx[op.val]])


def _atomic(ctx: Ctx, op: ir.Op, masks, one, operand_lists: list) -> None:
    """Apply ``one(i, *operands_i)`` per register where this thread owns the
    element and the mask holds; give every holder the old value."""
    elem = elem_type(op.result.type)
    owner = _owner(ctx, op.ptr)
    n = registers_of(op.result)
    old = []
    for i in range(n):
        cond = all_of(ctx.b, [c for c in (owner, masks[i] if masks else None) if c is not None])
        args = [regs[i] for regs in operand_lists]
        old.append(_guarded(ctx, cond, lambda: one(i, *args), constant(elem, 0)))
    if owner is not None:
        old = _share_owners_values(ctx, op.result, old, owner)
    ctx.bind(op.results, [old])


def _share_owners_values(ctx: Ctx, result: ir.Value, old: list, owner) -> list:
    """The old values the owners got, read back by every thread holding the element."""
    from tilec.codegen_llvm.shuffle import exchange, row_major

    index = row_major(ctx, shape_of(result.type))
    return exchange(ctx, [(old, result.type, index)], [(result.type, index)], pred=owner)[0]
