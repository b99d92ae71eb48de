"""Tile IR with layouts -> one LLVM module holding one kernel.

A tile is held as a Python list of LLVM values, one per register of its
layout (``tilec.ir.layouts`` defines the order); a scalar is a list of one
value that every thread holds (inside a ``map_elementwise`` body: the
thread's own element).  Each op class has a lowering rule in ``LOWER``
(``@lowers(OpClass)``), one file per op family: ``elementwise``,
``memory``, ``reduce``, ``shuffle`` (moves through shared memory), ``dot``,
``control``, ``debug``, ``maps`` (``map_elementwise``, ``inline_asm``).  A rule reads its operands' lists from ``ctx`` and
binds its results' lists.  The backend's ``TargetLowering`` answers what
only the hardware knows (thread ids, barriers, shuffles, printing) and
brings rules of its own, which win over these.

Shared memory is one dynamic buffer (``@tilec_smem``).  Buffers the IR
allocates (``local_alloc``) sit where the shared-memory plan
(``Analyses.shared``) put them; an op that needs scratch space uses it
between two barriers, above the buffers live at that op.
``LLVMKernel.shared_bytes`` is the high-water mark.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Protocol

from llvmlite import ir as llir

from tilec import ir
from tilec.errors import CompilationError, LocatedError, TilecError
from tilec.ir.core import Block, Function, Op, Value
from tilec.ir.layouts import Layout, ThreadBit, exact_log2, is_shared, num_registers, register_offsets, replicating, thread_bits
from tilec.ir.types import ScalarType, TileType
from tilec.rules import registry
from tilec.targets.base import Target
from tilec.codegen_llvm.scalar_base import ScalarContext, call, declare, llvm_type
from tilec.codegen_llvm.target_lowering import TargetLowering

I32 = llir.IntType(32)
I64 = llir.IntType(64)


@dataclass(frozen=True)
class LLVMKernel:
    """A lowered kernel: ``llir`` is the module's text, ``shared_bytes`` the
    dynamic shared memory each program needs."""

    name: str
    llir: str
    shared_bytes: int


class AxisFacts(Protocol):
    """What the axis analysis knows of a value, per dim: runs of ``contiguity``
    consecutive elements, whose first is a multiple of ``divisibility`` (bytes,
    for pointers), inside runs of ``constancy`` equal elements."""

    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]


class SharedPlan(Protocol):
    """Where the shared-memory plan put each ``local_alloc`` (``offsets``, in
    bytes) and the end of the buffers live at an op (``live_top(op)``)."""

    offsets: Mapping[Op, int]

    def live_top(self, op: Op) -> int: ...


@dataclass(frozen=True)
class Analyses:
    """What codegen reads of the passes' analyses of the kernel it lowers,
    computed by the backend's stage (once per compile): every value's
    ``axes`` facts, which size vector accesses, and the ``shared`` plan."""

    axes: Mapping[Value, AxisFacts]
    shared: SharedPlan


Rule = Callable[["Ctx", Op], None]
LOWER, lowers = registry("Register the decorated ``rule(ctx, op)`` for the given op classes.")


class Ctx:
    """Everything a lowering rule needs: the builder, the values so far, the
    thread's ids, the backend's hooks (``lowering``), the analyses, and the
    shared-memory high-water mark."""

    def __init__(self, fn: Function, target: Target, lowering: TargetLowering, analyses: Analyses,
                 num_warps: int, module: llir.Module, builder: llir.IRBuilder, float_flags: tuple[str, ...] = ()):
        self.fn, self.target, self.lowering, self.num_warps = fn, target, lowering, num_warps
        self.rules = {**LOWER, **lowering.rules}
        self.module, self.b = module, builder
        self.scalar = ScalarContext(builder, module, lowering.math, float_flags)
        self.env: dict[Value, list] = {}
        self.axes, self.plan = analyses.axes, analyses.shared
        self.shared_bytes = 0
        self.scratch_start = 0  # where the op being lowered may put scratch data
        self.deferred: dict[Value, object] = {}
        self.extra_params: dict[str, llir.Argument] = {}  # TargetLowering.extra_parameters, by name
        self.users = _users(fn)  # value -> [(user op, its block)]
        tid = lowering.thread_id(self)
        self.tid = tid
        self.lane = builder.and_(tid, I32(target.warp_size - 1), name="lane")
        self.warp = builder.lshr(tid, I32(int(math.log2(target.warp_size))), name="warp")

    # --- values -----------------------------------------------------------------
    def __getitem__(self, v: Value) -> list:
        if v not in self.env and v in self.deferred:
            self.env[v] = self.deferred.pop(v).registers()
        return self.env[v]

    def defer(self, v: Value, reader) -> None:
        """Leave ``v``'s registers to be read by its one user (``reader.registers()``
        or the user's own piecewise reads), not here."""
        self.deferred[v] = reader

    def flush_deferred(self) -> None:
        """Read every deferred value now: the op about to be lowered may
        change the memory they come from."""
        for v in list(self.deferred):
            self[v]

    def bind(self, values: list[Value], lists: list[list]) -> None:
        for v, regs in zip(values, lists):
            expected = registers_of(v)
            if len(regs) != expected:
                raise AssertionError(f"{v} bound to {len(regs)} registers, its layout has {expected}")
            self.env[v] = regs

    def call(self, name: str, args: list, ret=None) -> llir.Value:
        return call(self.scalar, name, args, ret)

    def declare(self, name: str, ret: llir.Type, params: list) -> llir.Function:
        return declare(self.scalar, name, ret, params)

    # --- shared memory ------------------------------------------------------------
    def smem(self, nbytes: int) -> llir.Value:
        """The current op's scratch space (``nbytes``), as a shared-memory pointer."""
        return self.shared_at(self.scratch_start, nbytes)

    def shared_at(self, offset: int, nbytes: int) -> llir.Value:
        """A pointer ``offset`` bytes into shared memory, where ``nbytes`` are used."""
        self.shared_bytes = max(self.shared_bytes, offset + nbytes)
        return byte_offset(self.b, self._smem_base(), offset) if offset else self._smem_base()

    def _smem_base(self) -> llir.Value:
        """Where shared memory starts: the backend's (``TargetLowering.shared_memory``),
        else the module's ``@tilec_smem``."""
        given = self.lowering.shared_memory(self)
        if given is not None:
            return given
        g = self.module.globals.get("tilec_smem")
        if g is None:
            space = self.lowering.shared_address_space
            g = llir.GlobalVariable(self.module, llir.ArrayType(llir.IntType(8), 0), "tilec_smem", addrspace=space)
            g.linkage = "external"
            g.align = 16
            g.type = llir.PointerType(addrspace=space)  # llvmlite types globals with typed pointers; LLVM 22 has opaque ones only
        return g

    def barrier(self) -> None:
        """Every thread of the block waits here (``TargetLowering.barrier``)."""
        self.lowering.barrier(self)

    # --- blocks -----------------------------------------------------------------
    def lower_block(self, block: Block) -> None:
        for op in block.ops:
            self.lower_op(op)

    def lower_op(self, op: Op) -> None:
        rule = self.rules.get(type(op))
        if rule is None:
            raise CompilationError(op.loc.file, op.loc.line, op.loc.col,
                                   f"the {self.lowering.name} backend cannot compile `{op.NAME}` yet", self.fn.name)
        self.scratch_start = self.plan.live_top(op)
        if self.deferred and may_write_shared(op):
            self.flush_deferred()
        try:
            rule(self, op)
        except LocatedError:
            raise
        except Exception as e:
            raise _located(e, op, self.fn.name) from e


def _located(error: Exception, op: Op, kernel: str) -> CompilationError:
    """``error``, raised by ``op``'s rule, as an error at ``op``'s line: a
    TilecError says what it says, anything else is a bug of the compiler."""
    if isinstance(error, TilecError):
        message = str(error)
    else:
        message = (f"internal compiler error while lowering `{op.NAME}`: {type(error).__name__}: {error}; "
                   "please report it with the kernel")
    return CompilationError(op.loc.file, op.loc.line, op.loc.col, message, kernel)


# Ops that may write shared memory a deferred read comes from.
FLUSHING_OPS = ("async_copy", "async_wait", "tma_copy", "tma_wait", "local_alloc", "local_store", "barrier")
# Ops whose regions hold control flow (a reduction's combine region is scalar code).
CONTROL_FLOW = (ir.For, ir.If, ir.While)


def may_write_shared(op: Op) -> bool:
    """Whether ``op`` (a flushing op, or control flow around one) may change
    the shared memory a deferred read comes from.  Scratch for conversions and
    reductions lies above every live buffer, so those never do."""
    return op.NAME in FLUSHING_OPS or isinstance(op, CONTROL_FLOW) and any(
        may_write_shared(inner) for region in op.regions for inner in region.ops)


def _users(fn: Function) -> dict[Value, list[tuple[Op, Block]]]:
    """Every value's users: (op, the block it is in)."""
    out: dict[Value, list[tuple[Op, Block]]] = {}

    def visit(block: Block) -> None:
        for op in block.ops:
            for v in op.operands:
                out.setdefault(v, []).append((op, block))
            for region in op.regions:
                visit(region)
    visit(fn.body)
    return out


def registers_of(v: Value) -> int:
    """How many LLVM values hold ``v`` in each thread."""
    t = v.type
    if not isinstance(t, TileType) or is_shared(t.layout):
        return 1  # a scalar, or a shared-memory tile's base pointer
    return num_registers(t.layout, t.shape)


def param_type(t) -> llir.Type:
    """The kernel parameter type for an argument of IR type ``t`` (an ``i1`` travels as a byte)."""
    if isinstance(t, ScalarType) and t.is_bool:
        return llir.IntType(8)
    return llvm_type(t)


def lower(fn: Function, target: Target, lowering: TargetLowering, analyses: Analyses, num_warps: int,
          fp_fusion: bool = True) -> LLVMKernel:
    """The LLVM module of kernel ``fn`` (layouts assigned) for ``target``,
    with the backend's ``lowering`` and the ``analyses`` of ``fn``: float
    add, sub and mul may fuse into fmas when ``fp_fusion``."""
    from tilec.codegen_llvm import addresses, control, debug, dot, elementwise, indexing, memory, reduce, shuffle  # noqa: F401 (rules)
    from tilec.codegen_llvm import shared_buffers  # noqa: F401 (rules: local_alloc, local_store, local_load)
    from tilec.codegen_llvm import maps  # noqa: F401 (rules: map_elementwise, inline_asm)

    module = llir.Module(fn.name)
    module.triple, module.data_layout = target.triple, target.data_layout
    extra = lowering.extra_parameters(fn)
    params = [param_type(a.type) for a in fn.args] + [t for _, t, _ in extra]
    kernel = llir.Function(module, llir.FunctionType(llir.VoidType(), params), fn.name)
    kernel.calling_convention = lowering.calling_convention
    builder = llir.IRBuilder(kernel.append_basic_block("entry"))
    ctx = Ctx(fn, target, lowering, analyses, num_warps, module, builder, ("contract",) if fp_fusion else ())
    for a, p in zip(fn.args, kernel.args):
        p.name = fn.arg_names[a.index] if a.index < len(fn.arg_names) else f"arg{a.index}"
        is_bool = isinstance(a.type, ScalarType) and a.type.is_bool
        ctx.env[a] = [builder.icmp_unsigned("!=", p, p.type(0)) if is_bool else p]
    for (name, _, _), p in zip(extra, kernel.args[len(fn.args):]):
        p.name = name
        ctx.extra_params[name] = p
    ctx.lower_block(fn.body)
    builder.ret_void()
    text = _with_kernel_attrs(str(module), kernel, lowering.kernel_attributes(num_warps))
    return LLVMKernel(fn.name, _with_param_attrs(text, kernel, {name: attrs for name, _, attrs in extra}),
                      ctx.shared_bytes)


def _with_kernel_attrs(text: str, kernel: llir.Function, attrs: dict[str, str]) -> str:
    """Add string attributes (``"name"="value"``) to the ``define`` of ``kernel``
    in module text ``text``, which llvmlite's attribute sets cannot express."""
    if not attrs:
        return text
    convention = f"{kernel.calling_convention} " if kernel.calling_convention else ""
    start = text.index(f'define {convention}void @"{kernel.name}"(')
    brace = text.index("\n{", start)
    rendered = " ".join(f'"{k}"="{v}"' for k, v in attrs.items())
    return text[:brace] + " " + rendered + text[brace:]


def _with_param_attrs(text: str, kernel: llir.Function, attrs: dict[str, str]) -> str:
    """Give parameters of ``kernel`` (by name) LLVM attributes llvmlite cannot
    express (``byval(<type>)``, string attributes) in module text ``text``."""
    if not attrs:
        return text
    start = text.index(f'@"{kernel.name}"(')
    end = text.index("\n", start)
    line = text[start:end]
    for name, rendered in attrs.items():
        line = line.replace(f' %"{name}"', f' {rendered} %"{name}"', 1)
    return text[:start] + line + text[end:]


# --------------------------------------------------------------------------- #
# Where a thread's registers sit
# --------------------------------------------------------------------------- #

def thread_layout_bits(ctx: Ctx, layout: Layout, shape: tuple) -> list[ThreadBit]:
    """The lane and warp id bits of ``layout`` (``ir.layouts.thread_bits``)."""
    return thread_bits(layout, shape, ctx.num_warps, ctx.target.warp_size)


def thread_bit(ctx: Ctx, bit: ThreadBit) -> llir.Value:
    """The thread's ``bit`` (0 or 1, i32)."""
    b = ctx.b
    return b.and_(b.lshr(ctx.warp if bit.warp else ctx.lane, I32(bit.bit)), I32(1))


def thread_bases(ctx: Ctx, layout: Layout, shape: tuple) -> list[llir.Value]:
    """Per dim of the tile, the thread's first coordinate: the sum of what its
    set lane and warp bits add along that dim (``ThreadBit``); bits worth
    the dim's size or more wrap to nothing.  Runs of bits worth 1, 2, 4...
    times a unit are read as one field."""
    bits = thread_layout_bits(ctx, layout, shape)
    b, out = ctx.b, []
    for d, size in enumerate(shape):
        base = None
        for warp, first, count, unit in _fields([t for t in bits if t.dim == d and t.value < size]):
            src = ctx.warp if warp else ctx.lane
            field = b.and_(b.lshr(src, I32(first)), I32((1 << count) - 1))
            term = b.shl(field, I32(exact_log2(unit))) if unit > 1 else field
            base = term if base is None else b.add(base, term)
        out.append(base if base is not None else I32(0))
    return out


def _fields(bits: list[ThreadBit]) -> list[tuple[bool, int, int, int]]:
    """``(warp, first bit, bit count, unit)`` runs of consecutive id bits whose
    values double from ``unit``."""
    out = []
    for t in sorted(bits, key=lambda t: (t.warp, t.bit)):
        if out:
            warp, first, count, unit = out[-1]
            if warp == t.warp and first + count == t.bit and unit << count == t.value:
                out[-1] = (warp, first, count + 1, unit)
                continue
        out.append((t.warp, t.bit, 1, t.value))
    return out


def coordinates(ctx: Ctx, v: Value) -> list[tuple]:
    """For each register of tile ``v``, its coordinates (LLVM i32 values)."""
    t = v.type
    return layout_coordinates(ctx, t.layout, t.shape)


def layout_coordinates(ctx: Ctx, layout: Layout, shape: tuple) -> list[tuple]:
    """For each register of a tile of ``shape`` in ``layout``, its coordinates."""
    bases = thread_bases(ctx, layout, shape)
    return [tuple(ctx.b.add(base, I32(o)) if o else base for base, o in zip(bases, offs))
            for offs in register_offsets(layout, shape)]


def owner_predicate(ctx: Ctx, layout: Layout, shape: tuple):
    """An i1 that is true in exactly one thread holding each element (replicated
    layouts give several threads the same element: those differing only in
    bits that add nothing, ``replicating``), or None when no element is
    replicated."""
    b, conds = ctx.b, []
    for warp in (False, True):
        mask = sum(1 << t.bit for t in thread_layout_bits(ctx, layout, shape)
                   if t.warp == warp and replicating(t, shape))
        if mask:
            src = ctx.warp if warp else ctx.lane
            conds.append(b.icmp_unsigned("==", b.and_(src, I32(mask)), I32(0)))
    return all_of(b, conds)


def first_thread(ctx: Ctx):
    """An i1 true in thread 0 only (for effects a scalar value must have once)."""
    return ctx.b.icmp_unsigned("==", ctx.tid, I32(0))


def all_of(b: llir.IRBuilder, conds: list):
    """The and of i1 ``conds``; None for none."""
    if not conds:
        return None
    out = conds[0]
    for c in conds[1:]:
        out = b.and_(out, c)
    return out


def linear_index(ctx: Ctx, coords: tuple, shape: tuple) -> llir.Value:
    """The row-major index of ``coords`` in a tile of ``shape`` (i32)."""
    b = ctx.b
    index, stride = I32(0), 1
    for c, n in zip(reversed(coords), reversed(shape)):
        index = b.add(index, b.mul(c, I32(stride)) if stride != 1 else c)
        stride *= n
    return index


def byte_offset(b: llir.IRBuilder, base: llir.Value, offset) -> llir.Value:
    """``base`` (an opaque pointer) moved by ``offset`` bytes (an int or i32 value)."""
    return b.gep(base, [I32(offset) if isinstance(offset, int) else offset], inbounds=True,
                 source_etype=llir.IntType(8))


def element_address(b: llir.IRBuilder, base: llir.Value, index: llir.Value, size: int,
                    start: int = 0) -> llir.Value:
    """The address of element ``index`` (i32) of ``size``-byte elements laid out
    from ``start`` bytes past ``base``."""
    offset = b.mul(index, I32(size))
    return byte_offset(b, base, b.add(I32(start), offset) if start else offset)


