"""Addresses of pointer tiles (``addptr``): one per-thread base pointer plus a
constant byte offset per register.

Offsets built from ``arange`` are a per-thread value plus a constant per
register (``thread base + register offset``, then sums and constant
scalings).  Emitted as ``gep T, %ptr, ext(offset)`` per register, LLVM's
NVIDIA backend (Straight-Line Strength Reduction) takes time quadratic in the
registers a thread holds: 30 s for a ragged 2**16 vector add, against 1 s as
``gep i8, %base, k`` (docs/internals.md, "Compile time of large tiles").
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.types import ScalarType, elem_type
from tilec.codegen_llvm.kernel import I64, Ctx, lowers
from tilec.codegen_llvm.scalar_base import ScalarContext, memory_type, resize_int

I8 = llir.IntType(8)
# How deep ``ConstantParts`` reads an offset's arithmetic (a long chain of adds,
# from a ``static_range`` loop, say, is cut there: below it stays one value).
MAX_SPLIT_DEPTH = 64


@lowers(ir.AddPtr)
def _addptr(ctx: Ctx, op: ir.AddPtr) -> None:
    """``ptr + offset`` per register as ``base + k`` bytes: ``base`` the
    thread's pointer moved by the offset's non-constant part (one ``gep``
    shared by every register with that part), ``k`` its constant part.

    The parts are summed in 64 bits (``ConstantParts``), so the address is
    ``ptr + offset`` wherever the offset's int arithmetic does not overflow
    (then the interpreter's offset is the exact one); where it does, it may
    be the unwrapped offset's address, as 64-bit offsets would give.  The
    registers' offsets themselves (which masks read) keep their type and
    wrap as before."""
    ctx.bind(op.results, [addresses(ctx.scalar, ctx[op.ptr], ctx[op.offset], elem_type(op.offset.type),
                                    elem_type(op.ptr.type).elem)])


def addresses(sc: ScalarContext, ptrs: list, offsets: list, offset_type: ScalarType, pointee) -> list:
    """Each register's address ``ptrs[i] + offsets[i]`` (in ``pointee`` elements)
    as a shared base plus constant bytes (``_addptr``)."""
    split = ConstantParts(sc, offset_type)
    size = max(1, pointee.bits // 8)
    bases: dict[tuple[int, int], llir.Value] = {}
    out = []
    for p, o in zip(ptrs, offsets):
        p_base, p_bytes = _pointer_parts(p)
        rest, k = split(o)
        key = (id(p_base), id(rest))
        if key not in bases:
            bases[key] = p_base if rest is None else sc.builder.gep(p_base, [rest], source_etype=memory_type(pointee))
        out.append(_plus_bytes(sc.builder, bases[key], p_bytes + k * size))
    return out


class ConstantParts:
    """Integer LLVM values of type ``t`` as ``(rest, k)``, ``value == rest + k``
    where the value's own arithmetic does not overflow: ``k`` (an int in
    ``t``'s range) what the constants under its adds, subtracts and
    multiplies by a constant come to, ``rest`` the same arithmetic on the
    other operands (extended by ``t``'s signedness) in i64, each distinct
    rest built once (None for 0).
    ``arange`` gives ``thread base + register offset``, so its sums and
    scalings split into one rest per thread and a constant per register.
    Unsigned offsets, whose wrapping is everyday arithmetic, are not split."""

    def __init__(self, sc: ScalarContext, t: ScalarType):
        self.sc, self.t = sc, t
        self.parts: dict[int, tuple] = {}
        self.built: dict[tuple, llir.Value] = {}

    def __call__(self, v: llir.Value, depth: int = 0) -> tuple[Optional[llir.Value], int]:
        if id(v) not in self.parts:
            splits = self.t.kind == "int" and depth < MAX_SPLIT_DEPTH
            self.parts[id(v)] = self._split(v, depth) if splits else (self._wide(v), 0)
        return self.parts[id(v)]

    def _split(self, v: llir.Value, depth: int) -> tuple[Optional[llir.Value], int]:
        if isinstance(v, llir.Constant) and isinstance(v.constant, int):
            return None, self._signed(v.constant)
        name = getattr(v, "opname", None)
        if name not in ("add", "sub", "mul"):
            return self._wide(v), 0
        x, y = self(v.operands[0], depth + 1), self(v.operands[1], depth + 1)
        if name == "mul":
            return self._scaled(v, *((x, y) if y[0] is None else (y, x)))
        k = x[1] + y[1] if name == "add" else x[1] - y[1]
        if self._signed(k) != k:
            return self._wide(v), 0
        return self._build(name, x[0], y[0], v if x[1] == y[1] == 0 else None), k

    def _scaled(self, v: llir.Value, x: tuple, factor: tuple) -> tuple[Optional[llir.Value], int]:
        """``v = x * factor``: ``(r + k) * c`` is ``r * c + k * c`` when the factor is a constant."""
        (r, k), (not_constant, c) = x, factor
        if not_constant is not None or self._signed(k * c) != k * c:
            return self._wide(v), 0
        return self._build("mul", r, None if r is None else I64(c), v if k == 0 else None), k * c

    def _build(self, name: str, x, y, same: Optional[llir.Value]) -> Optional[llir.Value]:
        """``x <name> y`` in i64 (``add``, ``sub`` or ``mul``; None standing for 0),
        built once; as ``same`` (the op in ``t``, where nothing was split off
        its operands) extended, which is equal unless ``same`` overflows."""
        if x is None and name != "sub":
            return y if name == "add" else None
        if y is None:
            return x
        key = (name, id(x), y.constant if isinstance(y, llir.Constant) else id(y))
        if key not in self.built:
            self.built[key] = (self._wide(same) if same is not None else
                               getattr(self.sc.builder, name)(I64(0) if x is None else x, y))
        return self.built[key]

    def _wide(self, v: llir.Value) -> llir.Value:
        """``v`` extended to i64 by ``t``'s signedness, once."""
        key = ("wide", id(v), None)
        if key not in self.built:
            self.built[key] = resize_int(self.sc, v, self.t, 64)
        return self.built[key]

    def _signed(self, k: int) -> int:
        """``k`` as a value of signed ``t``: in ``[-2**(bits-1), 2**(bits-1))``."""
        half = 1 << (self.t.bits - 1)
        return (k + half) % (2 * half) - half


def _pointer_parts(p: llir.Value) -> tuple[llir.Value, int]:
    """Pointer ``p`` as ``(base, bytes)``: a constant byte offset is taken back off."""
    if (isinstance(p, llir.GEPInstr) and p.source_etype == I8 and len(p.indices) == 1
            and isinstance(p.indices[0], llir.Constant)):
        return p.pointer, p.indices[0].constant
    return p, 0


def _plus_bytes(b: llir.IRBuilder, p: llir.Value, k: int) -> llir.Value:
    """``p`` moved by ``k`` bytes; addresses wrap (no ``inbounds``)."""
    k = (k + 2**63) % 2**64 - 2**63
    return b.gep(p, [I64(k)], source_etype=I8) if k else p
