"""Tile IR -> LLVM IR for the host CPU: the rule driver of the ``cpu`` target.

The GPU codegen (``tilec.codegen_llvm``) spreads a tile over threads and
holds each thread's elements as LLVM values; a CPU program is one thread, so
here a tile is a ``tiles.Tile``: a buffer in the program's stack memory, or a
lazy function of its operands' elements that the op needing the elements
expands inside one loop nest (``tiles.for_each``), which LLVM vectorizes.
A scalar is one LLVM value, as on the GPU.  Per element, every op computes
what the GPU's does: the same emitters (``codegen_llvm.scalar_ops``,
``scalar_casts``, ``scalar_math``) give the element's LLVM code.

``lower(fn, target, lowering, fp_fusion, debug)`` makes a module holding the
kernel ``fn`` as a function taking its arguments, under ``debug`` the table
its bounds checks read (``bounds.py``), then the program's ids and the
grid's size (``GRID_PARAMS``, i32 each).  Each op class has a rule in
``RULES`` (``@host_rule(OpClass)``, in ``rules_*.py``); an op without one is
a CompilationError at its line.

When a tile becomes a buffer (``HostCtx.bind``): when more than one op uses
it, or one inside a loop or branch below its definition, and recomputing it
is not cheap (``tiles.CHEAP``); and when it was loaded from global memory
and the kernel may write memory before its last use, or its last user
writes memory its loads read from (``keep_loaded``): a load means the
memory as it was at the load, whatever the program stores afterwards.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llvmlite import ir as llir

from tilec import ir
from tilec.errors import CompilationError, LocatedError
from tilec.ir.core import Block, Function, Op, Value
from tilec.ir.types import ScalarType
from tilec.rules import registry
from tilec.targets.base import Target
from tilec.codegen_llvm.kernel import _located, param_type
from tilec.codegen_llvm.scalar_base import ScalarContext, declare, memory_type
from tilec.opt.axis_info import analyze_axes
from tilec.opt.written_pointers import UNTRACED, WRITES, pointer_origins
from tilec.backends.host import prefetch
from tilec.backends.host.bounds import Checks
from tilec.backends.host.tiles import CHEAP, Buffer, Lazy, Tile, numel, write

#: The i8 parameter the kernel takes after its arguments (and the bounds
#: table): nonzero where the launch's stores may stream (``streaming.py``).
STREAM_PARAM = "streaming"
#: The i32 parameters the kernel takes last.
GRID_PARAMS = ("program_id_x", "program_id_y", "program_id_z",
               "num_programs_x", "num_programs_y", "num_programs_z")
#: Buffers start at this alignment (a cache line, the widest vector).
BUFFER_ALIGN = 64

RULES, host_rule = registry("Register the decorated ``rule(ctx, op)`` of the host codegen for the given op classes.")


class NeedsLoop(Exception):
    """Raised by ``HostCtx.materialize`` while ``prefetch.next_pointers``
    lowers pointers again: they would take a loop of their own."""


@dataclass(frozen=True)
class HostKernel:
    """A lowered kernel: the module's text and how many bytes of stack one
    program's buffers take."""

    name: str
    llir: str
    stack_bytes: int


class HostCtx:
    """What a rule works with: the builder ``b``, the values so far (``env``:
    an LLVM value per scalar, a ``Tile`` per tile), the backend's hooks
    (``lowering``: program ids, printing, the math library) and the uses of
    every value, which decide when a tile is made a buffer."""

    def __init__(self, fn: Function, target: Target, lowering: Any, module: llir.Module,
                 kernel: llir.Function, float_flags: tuple[str, ...], debug: bool = False, streams: bool = True):
        self.fn, self.target, self.lowering, self.module = fn, target, lowering, module
        self.kernel = kernel
        self._allocas = kernel.append_basic_block("allocas")
        self.b = llir.IRBuilder(kernel.append_basic_block("entry"))
        self.scalar = ScalarContext(self.b, module, lowering.math, float_flags)
        self.env: dict[Value, Any] = {}
        self.stack_bytes = 0
        self.grid = list(kernel.args[len(kernel.args) - len(GRID_PARAMS):])
        self._order, self._last_use, self._nested_use, self._count = _uses(fn)
        self._loaded: set[Value] = set()  # tiles bound lazily that read global memory
        self._origins = None  # the pointer arguments each pointer may come from, when first asked
        self.checks = Checks(fn, kernel.args[len(fn.args)]) if debug else None  # bounds.py
        self._top = set(fn.body.ops)  # the kernel's own block: its loops run once a program
        self._current: Op | None = None  # the op being lowered
        self.relowering = False  # prefetch.next_pointers at work
        self._prefetches = prefetch.prefetchable_loads(fn) if streams else []  # prefetch.py: still to place, once
        self._axes = None  # opt.axis_info's facts, when first asked
        self.may_stream = streams and not any(isinstance(op, (ir.AtomicRMW, ir.AtomicCAS)) or isinstance(op, ir.Load)
                                              and op.volatile for op in ir.walk(fn.body))  # streaming.py
        with self.in_prologue():
            flag = kernel.args[len(fn.args) + debug]
            self.streaming = self.b.icmp_unsigned("!=", flag, flag.type(0))

    # --- values -----------------------------------------------------------------
    def __getitem__(self, v: Value) -> Any:
        return self.env[v]

    def bind(self, v: Value, value: Any) -> None:
        """``v`` is ``value``: an LLVM value (a scalar) or a Tile, made a buffer
        when the rules of the module docstring say so."""
        if isinstance(value, Lazy):
            nested, reused = self._nested_use.get(v, False), self._count.get(v, 0) > 1
            if nested and value.reads or (nested or reused) and value.cost > CHEAP:
                value = self.materialize(value)
            elif value.reads:
                self._loaded.add(v)
        self.env[v] = value

    def materialize(self, tile: Tile) -> Buffer:
        """``tile`` as a buffer (itself when it is one)."""
        if isinstance(tile, Buffer):
            return tile
        if self.relowering:
            raise NeedsLoop
        buf = self.buffer(tile.shape, tile.elem)
        if not (self._prefetches and self._current in self._top and not tile.reads
                and tile.cost >= prefetch.PREFETCH_COST and self._write_prefetching(tile, buf)):
            write(self, tile, buf)
        return buf

    def _write_prefetching(self, tile: Tile, buf: Buffer) -> bool:
        """``tile`` written into ``buf`` by a loop that prefetches the next
        program's loads where the launch streams, as before where it does
        not (``prefetch.py``); False where it cannot."""
        if not prefetch.line_chunk(tile):
            return False
        pointers = prefetch.next_pointers(self, self._prefetches)
        if not pointers:
            return False
        with self.b.if_else(self.streaming) as (streams, stays):
            with streams:
                prefetch.write_prefetching(self, tile, buf, pointers)
            with stays:
                write(self, tile, buf)
        self._prefetches = []
        return True

    def buffer(self, shape: tuple, elem) -> Buffer:
        """A new buffer of ``shape`` in the program's stack memory."""
        t = memory_type(elem)
        ptr = self._alloca(llir.ArrayType(t, max(1, numel(shape))))
        ptr.align = BUFFER_ALIGN
        self.stack_bytes += -(-numel(shape) * _bytes(t) // BUFFER_ALIGN) * BUFFER_ALIGN
        return Buffer(tuple(shape), elem, ptr=ptr)

    def slot(self, elem) -> llir.Value:
        """A stack slot for one scalar of IR type ``elem`` (its memory form)."""
        return self._alloca(memory_type(elem))

    def slot_of(self, t: llir.Type) -> llir.Value:
        """A stack slot for one value of LLVM type ``t``."""
        return self._alloca(t)

    def _alloca(self, t: llir.Type) -> llir.Instruction:
        """Stack memory for a ``t`` in the kernel's first block (once per
        call, however often the code using it runs), as an opaque pointer."""
        with self.in_prologue():
            ptr = self.b.alloca(t)
        ptr.type = llir.PointerType()  # llvmlite types it; LLVM 22 pointers are opaque
        return ptr

    def in_prologue(self):
        """Position the builder, for a ``with`` block, in the kernel's first block
        (code that runs once per program, before any other)."""
        return self.b.goto_block(self._allocas)

    def check_access(self, op: Op, p: llir.Value) -> None:
        """Under ``debug``, check ``op``'s access at ``p`` (``bounds.py``); else nothing."""
        if self.checks is not None:
            self.checks.check(self, op, p)

    def keep_loaded(self, op: Op) -> None:
        """Before ``op``, which may write memory: make a buffer of every loaded
        tile still to be used after it, and of those ``op`` itself uses whose
        loads may read where it writes (its loop over the elements could
        otherwise store an element before reading one loaded from there:
        ``z + load(row 0)[None, :]`` stored over row 0)."""
        at = self._order[op]
        for v in list(self._loaded):
            last = self._last_use.get(v, -1)
            if last > at or last == at and self._may_overwrite(op, v):
                self.env[v] = self.materialize(self.env[v])
        self._loaded.clear()

    def _may_overwrite(self, op: Op, v: Value) -> bool:
        """Whether ``op`` may write through a pointer argument (or an untraced
        pointer) that a load ``v`` is computed from reads through."""
        if self._origins is None:
            self._origins = pointer_origins(self.fn)
        anywhere = frozenset([UNTRACED])
        written = frozenset().union(*(self._origins.get(getattr(w, WRITES[type(w)]), anywhere)
                                      for w in [op, *(i for r in op.regions for i in ir.walk(r))]
                                      if type(w) in WRITES))
        read = frozenset().union(*(self._origins.get(load.ptr, anywhere) for load in _loads_feeding(v)))
        return UNTRACED in written or UNTRACED in read or bool(written & read)

    def axes(self) -> dict:
        """The axis analysis of the kernel's values (``opt.axis_info``)."""
        if self._axes is None:
            self._axes = analyze_axes(self.fn)
        return self._axes

    def declare(self, name: str, ret: llir.Type, params: list) -> llir.Function:
        return declare(self.scalar, name, ret, params)

    # --- blocks -----------------------------------------------------------------
    def lower_block(self, block: Block) -> None:
        for op in block.ops:
            self.lower_op(op)

    def lower_op(self, op: Op) -> None:
        rule = RULES.get(type(op))
        if rule is None:
            raise CompilationError(op.loc.file, op.loc.line, op.loc.col,
                                   f"the cpu target cannot compile `{op.NAME}`: {UNSUPPORTED.get(op.NAME, 'no rule')}",
                                   self.fn.name)
        if self._loaded and may_write(op):
            self.keep_loaded(op)
        outer, self._current = self._current, op
        try:
            rule(self, op)
        except (LocatedError, NeedsLoop):
            raise
        except Exception as e:
            raise _located(e, op, self.fn.name) from e
        finally:
            self._current = outer



#: Why an op has no host rule, by name.
UNSUPPORTED = {
    "inline_asm": "its assembly is written for a GPU; run this kernel on a GPU or through the interpreter",
}


def _loads_feeding(v: Value) -> list[ir.Load]:
    """The loads whose results ``v`` is computed from, through any ops."""
    loads, seen, stack = [], set(), [v]
    while stack:
        owner = stack.pop().owner
        if not isinstance(owner, Op) or owner in seen:
            continue  # a block argument, or an op already visited
        seen.add(owner)
        if isinstance(owner, ir.Load):
            loads.append(owner)
        else:
            stack.extend(owner.operands)
    return loads


def may_write(op: Op) -> bool:
    """Whether ``op`` (or an op in its regions) may write global memory."""
    if isinstance(op, (ir.Store, ir.AtomicRMW, ir.AtomicCAS)):
        return True
    return any(may_write(inner) for region in op.regions for inner in region.ops)


def _bytes(t: llir.Type) -> int:
    from tilec.codegen_llvm.scalar_base import bit_width
    return max(1, bit_width(t) // 8)


def _uses(fn: Function) -> tuple[dict, dict, dict, dict]:
    """Each op's place in a pre-order walk; per value, its last user's place
    (a user inside a region counts at its own place, after the region's op),
    whether a user sits in a region below the value's own block, and how
    many ops use it (an op naming it twice, ``x * x``, evaluates it once
    per element: LLVM merges the two copies of its code)."""
    order, last, nested, count = {}, {}, {}, {}
    home: dict[Value, Block] = {}

    def visit(block: Block) -> None:
        for a in block.args:
            home[a] = block
            nested.setdefault(a, False)
        for op in block.ops:
            order[op] = len(order)
            for v in set(op.operands):  # x * x computes x once per element: one use
                last[v] = order[op]
                count[v] = count.get(v, 0) + 1
                nested[v] = nested.get(v, False) or home.get(v) is not block
            for r in op.regions:
                visit(r)
            for v in op.results:
                home[v] = block
    visit(fn.body)
    return order, last, nested, count


def kernel_params(fn: Function, debug: bool) -> list[llir.Type]:
    """The kernel's parameters: its arguments, under ``debug`` the bounds table
    (``bounds.py``), ``STREAM_PARAM``, then ``GRID_PARAMS``."""
    return ([param_type(a.type) for a in fn.args] + [llir.PointerType()] * debug + [llir.IntType(8)]
            + [llir.IntType(32)] * len(GRID_PARAMS))


def lower(fn: Function, target: Target, lowering: Any, fp_fusion: bool = True, debug: bool = False,
          streams: bool = True) -> HostKernel:
    """The LLVM module of kernel ``fn`` for the host ``target`` (module
    docstring), checking every access under ``debug`` (``bounds.py``), with
    the streaming paths (``streaming.py``, ``prefetch.py``) where ``streams``."""
    from tilec.backends.host import rules_control, rules_dot, rules_memory, rules_reduce, rules_values  # noqa: F401 (rules)

    module = llir.Module(fn.name)
    module.triple, module.data_layout = target.triple, target.data_layout
    kernel = llir.Function(module, llir.FunctionType(llir.VoidType(), kernel_params(fn, debug)), fn.name)
    for a in kernel.args[:len(fn.args)]:
        a.add_attribute("noundef")
    ctx = HostCtx(fn, target, lowering, module, kernel, ("contract",) if fp_fusion else (), debug, streams)
    for a, p in zip(fn.args, kernel.args):
        p.name = fn.arg_names[a.index] if a.index < len(fn.arg_names) else f"arg{a.index}"
        is_bool = isinstance(a.type, ScalarType) and a.type.is_bool
        ctx.env[a] = ctx.b.icmp_unsigned("!=", p, p.type(0)) if is_bool else p
    for p, name in zip(ctx.grid, GRID_PARAMS):
        p.name = name
    kernel.args[len(fn.args) + debug].name = STREAM_PARAM
    ctx.lower_block(fn.body)
    ctx.b.ret_void()
    with ctx.b.goto_block(ctx._allocas):
        ctx.b.branch(kernel.blocks[1])
    return HostKernel(fn.name, str(module), ctx.stack_bytes)

