"""Host rule of ``dot``: a register-blocked micro-kernel over packed operands.

The operands are first packed: ``a`` and ``b`` written once into buffers of
the type the products are summed in (``wide``: f32 for f32/f16/bf16 inputs,
f64 when an operand is f64, the accumulator's integer type for integers),
with f32 inputs rounded to tf32 there when ``input_precision`` is
``"tf32"`` (the interpreter's meaning, hoisted out of the product loop).

The product then runs block by block (``Blocking``): ``rows`` rows of the
result by ``vectors`` vectors of ``lanes`` columns, held in registers
across the whole ``k`` loop.  Each step of ``k`` loads ``vectors`` vectors
of a row of ``b`` and multiplies each by one broadcast element of ``a`` per
row: ``rows * vectors`` multiply-adds (fused where fp fusion is on) for
``rows + vectors`` loads.  The block's size comes from the CPU level's
vector registers (``REGISTERS``): accumulators, ``b``'s vectors and the
broadcast all stay in registers.  The sum starts at zero and the
accumulator is added at the end, as the interpreter computes ``a @ b +
acc``.  Rows and columns the blocks do not cover (a tile narrower than a
vector) run as scalar loops (``_scalar_product``).  Integers multiply and
add exactly, wrapping in the accumulator's type; a float sum is rounded to
the accumulator's type at the end.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.types import ScalarType, elem_type, f32, f64, shape_of
from tilec.codegen_llvm.dot import round_tf32
from tilec.codegen_llvm.memory import _to_memory
from tilec.codegen_llvm.scalar_base import counted_loop, memory_type
from tilec.codegen_llvm.scalar_casts import convert
from tilec.backends.host.codegen import HostCtx, host_rule
from tilec.backends.host.rules_values import element
from tilec.backends.host.tiles import I64, Buffer, Tile, element_pointer, for_each, lazy


@dataclass(frozen=True)
class VectorRegisters:
    """The vector registers code for a CPU level uses: bytes each, how many."""

    width: int
    count: int


#: By CPU level (``target.cpu_level``).  x86-64-v4 has 32 registers of 64
#: bytes, but LLVM's x86 tuning prefers 32-byte vectors and Zen 4 runs a
#: 64-byte op as two 32-byte halves: 32 of 32 bytes.
REGISTERS = {
    "x86-64-v4": VectorRegisters(32, 32),
    "x86-64-v3": VectorRegisters(32, 16),
    "x86-64": VectorRegisters(16, 16),
}
#: Any other level (AArch64's NEON: 32 registers of 16 bytes).
OTHER_REGISTERS = VectorRegisters(16, 32)
#: The most vectors of ``b`` a block spans (more leaves too few rows to hide
#: the latency of a multiply-add).
MAX_VECTORS = 4


@dataclass(frozen=True)
class Blocking:
    """One register block of the result: ``rows`` x ``vectors * lanes``."""

    rows: int
    vectors: int
    lanes: int

    @property
    def cols(self) -> int:
        return self.vectors * self.lanes


def blocking(regs: VectorRegisters, elem_bits: int, m: int, n: int) -> Optional[Blocking]:
    """The block for an ``m x n`` result of ``elem_bits``-bit sums, or None when
    ``n`` is narrower than one vector.  ``rows * vectors`` accumulators, the
    ``vectors`` of ``b`` and one broadcast fit the registers; rows and vectors
    are powers of two, so they divide a tile's power-of-two dims."""
    lanes = regs.width * 8 // elem_bits
    if n < lanes:
        return None
    vectors = _power_of_two_at_most(min(MAX_VECTORS, n // lanes, regs.count // 8))
    rows = _power_of_two_at_most(min(m, (regs.count - vectors - 1) // vectors))
    return Blocking(rows, vectors, lanes)


def _power_of_two_at_most(x: int) -> int:
    return 1 << (max(1, x).bit_length() - 1)


def _sum_type(t_in: ScalarType, t_acc: ScalarType) -> ScalarType:
    """What products are summed in (module docstring)."""
    if t_in.is_float:
        return f64 if f64 in (t_in, t_acc) else f32
    return t_acc


def pack(ctx: HostCtx, tile: Tile, t_in: ScalarType, wide: ScalarType, precision: str) -> Buffer:
    """``tile`` (of ``t_in``) as a buffer of ``wide``, f32 rounded to tf32 when
    ``precision`` says so; a buffer already in that form is used as it is."""
    tf32 = precision == "tf32" and t_in == f32
    if t_in == wide and not tf32:
        return ctx.materialize(tile)

    def one(c: HostCtx, coords):
        x = tile.at(c, coords)
        x = convert(c.scalar, x, t_in, wide, "rtne") if t_in != wide else x
        return round_tf32(c, x) if tf32 else x
    return ctx.materialize(lazy(tile.shape, wide, one, [tile]))


class _Product:
    """``a @ b`` added into ``out`` (buffers of the sum type, ``a`` ``[..., m, k]``,
    ``b`` ``[..., k, n]``, ``out`` ``[..., m, n]`` holding the accumulator)."""

    def __init__(self, ctx: HostCtx, a: Buffer, b: Buffer, out: Buffer):
        self.ctx, self.a, self.b, self.out = ctx, a, b, out
        self.m, self.k = a.shape[-2:]
        self.n = b.shape[-1]
        self.t = memory_type(out.elem)
        self.is_float = out.elem.is_float

    def multiply_add(self, x: llir.Value, y: llir.Value, acc: llir.Value) -> llir.Value:
        b, flags = self.ctx.b, self.ctx.scalar.float_flags
        if self.is_float:
            return b.fadd(acc, b.fmul(x, y, flags=flags), flags=flags)
        return b.add(acc, b.mul(x, y))

    def add(self, x: llir.Value, y: llir.Value) -> llir.Value:
        return self.ctx.b.fadd(x, y) if self.is_float else self.ctx.b.add(x, y)

    def run(self, lead: tuple, blk: Optional[Blocking]) -> None:
        """The whole product for batch coordinates ``lead``: blocks where they
        fit, scalar loops on the rest."""
        mm = self.m - self.m % blk.rows if blk else 0
        nn = self.n - self.n % blk.cols if blk else 0
        if mm and nn:
            _loop(self.ctx, 0, nn // blk.cols, lambda j: _loop(
                self.ctx, 0, mm // blk.rows, lambda i: self.block(
                    lead, blk, self.ctx.b.mul(i, I64(blk.rows)), self.ctx.b.mul(j, I64(blk.cols)))))
        self.scalar(lead, (0, mm), (nn, self.n))
        self.scalar(lead, (mm, self.m), (0, self.n))

    def block(self, lead: tuple, blk: Blocking, i0: llir.Value, j0: llir.Value) -> None:
        """Rows ``i0 ..`` and columns ``j0 ..`` of one block (module docstring)."""
        ctx, b = self.ctx, self.ctx.b
        vt = llir.VectorType(self.t, blk.lanes)
        sums = [[ctx.slot_of(vt) for _ in range(blk.vectors)] for _ in range(blk.rows)]
        zero = llir.Constant(vt, [self.t(0)] * blk.lanes)
        for slot in (s for row in sums for s in row):
            b.store(zero, slot)
        columns = [b.add(j0, I64(v * blk.lanes)) for v in range(blk.vectors)]
        rows = [b.add(i0, I64(r)) for r in range(blk.rows)]

        def step(kk: llir.Value) -> None:
            bs = [b.load(self._pointer(self.b, lead + (kk, j)), typ=vt) for j in columns]
            for i, row in zip(rows, sums):
                av = _splat(b, self.a.at(ctx, lead + (i, kk)), vt)
                for slot, bv in zip(row, bs):
                    b.store(self.multiply_add(av, bv, b.load(slot, typ=vt)), slot)
        counted_loop(b, I64(self.k), step)
        for i, row in zip(rows, sums):
            for j, slot in zip(columns, row):
                p = self._pointer(self.out, lead + (i, j))
                b.store(self.add(b.load(p, typ=vt), b.load(slot, typ=vt)), p)

    def scalar(self, lead: tuple, rows: tuple[int, int], cols: tuple[int, int]) -> None:
        """Rows ``rows[0] .. rows[1] - 1`` times columns ``cols[0] .. cols[1] - 1``, one element at a time."""
        ctx, b = self.ctx, self.ctx.b
        if rows[0] >= rows[1] or cols[0] >= cols[1]:
            return

        def column(i, kk, j) -> None:
            p = self._pointer(self.out, lead + (i, j))
            b.store(self.multiply_add(self.a.at(ctx, lead + (i, kk)), self.b.at(ctx, lead + (kk, j)),
                                      b.load(p, typ=self.t)), p)
        _loop(ctx, *rows, lambda i: _loop(ctx, 0, self.k, lambda kk: _loop(ctx, *cols, lambda j: column(i, kk, j))))

    def _pointer(self, buf: Buffer, coords: tuple) -> llir.Value:
        return element_pointer(self.ctx, buf, coords)


def _loop(ctx: HostCtx, start: int, stop: int, body) -> None:
    """``body(i)`` for i64 ``i`` from ``start`` to ``stop - 1``."""
    b = ctx.b
    counted_loop(b, I64(stop - start), lambda i: body(b.add(i, I64(start)) if start else i))


def _splat(b: llir.IRBuilder, x: llir.Value, vt: llir.VectorType) -> llir.Value:
    """A vector of type ``vt`` with ``x`` in every lane."""
    one = b.insert_element(llir.Constant(vt, None), x, llir.IntType(32)(0))
    return b.shuffle_vector(one, llir.Constant(vt, None), llir.Constant(llir.VectorType(llir.IntType(32), vt.count),
                                                                         [0] * vt.count))


@host_rule(ir.Dot)
def _dot(ctx: HostCtx, op: ir.Dot) -> None:
    t_in, t_acc = elem_type(op.a.type), elem_type(op.acc.type)
    wide = _sum_type(t_in, t_acc)
    a, bm = (pack(ctx, ctx[v], t_in, wide, op.input_precision) for v in (op.a, op.b))
    shape = shape_of(op.acc.type)
    acc = ctx[op.acc]
    out = ctx.buffer(shape, wide)
    b = ctx.b

    def init(c) -> None:
        x = element(ctx, acc, c)
        b.store(convert(ctx.scalar, x, t_acc, wide, "rtne") if t_acc != wide else x, element_pointer(ctx, out, c))
    for_each(ctx, shape, init)
    regs = REGISTERS.get(ctx.target.cpu, OTHER_REGISTERS)
    blk = blocking(regs, wide.bits, shape[-2], shape[-1])
    product = _Product(ctx, a, bm, out)
    for_each(ctx, shape[:-2], lambda lead: product.run(lead, blk))
    if wide != t_acc:
        result = ctx.buffer(shape, t_acc)
        for_each(ctx, shape, lambda c: b.store(_to_memory(ctx, convert(ctx.scalar, out.at(ctx, c), wide, t_acc, "rtne"),
                                                          t_acc), element_pointer(ctx, result, c)))
        out = result
    ctx.bind(op.result, out)
