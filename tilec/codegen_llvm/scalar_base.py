"""What every per-element LLVM emitter shares: IR element types as LLVM types,
the context an emitter works in (with the backend's math library), the
lowering table, and small builders for constants and intrinsic calls.

The emitters (``scalar_ops``, ``scalar_math``, ``scalar_casts``) register
themselves in ``LOWER`` with ``@lowers(OpClass)``; ``scalar_ops.emit_scalar``
looks an op up there.  Each emitter gets one LLVM value per operand of one
element and returns the result's LLVM value for that element.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from llvmlite import ir as llir
from llvmlite.ir.types import _BaseFloatType

from tilec.errors import TilecError
from tilec.ir.core import Op
from tilec.ir.types import PointerType, ScalarType, elem_type
from tilec.rules import registry


class BFloatType(_BaseFloatType):
    """LLVM's ``bfloat``, which llvmlite 0.50 lacks.  Constants print as
    ``0xRxxxx`` (the bf16 bits, rounded to nearest even), the only form LLVM
    reads for every bfloat value."""

    null = "0xR0000"
    intrinsic_name = "bf16"

    def __str__(self):
        return "bfloat"

    def format_constant(self, value):
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        if value != value:  # NaN: keep it quiet and do not round its payload into the sign
            return f"0xR{(bits | 0x400000) >> 16:04X}"
        return f"0xR{(bits + 0x7FFF + ((bits >> 16) & 1)) >> 16:04X}"


BFloatType._create_instance()

_FLOATS = {"f16": llir.HalfType(), "bf16": BFloatType(), "f32": llir.FloatType(), "f64": llir.DoubleType()}


def llvm_type(t: ScalarType | PointerType) -> llir.Type:
    """The LLVM register type of IR element type ``t`` (signedness is the op's
    business; an fp8 value is its bit pattern, an ``i8``)."""
    if isinstance(t, PointerType):
        return llir.PointerType(addrspace=t.space)
    return _FLOATS[t.name] if t.name in _FLOATS else llir.IntType(t.bits)


def memory_type(t: ScalarType | PointerType) -> llir.Type:
    """The LLVM type of ``t`` in memory: ``i1`` is a byte (as the interpreter's memory form)."""
    if isinstance(t, ScalarType) and t.is_bool:
        return llir.IntType(8)
    return llvm_type(t)


@dataclass(frozen=True)
class MathFn:
    """How one math op is computed in f32 (f16/bf16 widen to it) and in f64:
    ``fn(ctx, *args) -> value``."""

    f32: Callable[["ScalarContext", llir.Value], llir.Value]
    f64: Callable[["ScalarContext", llir.Value], llir.Value]


class MathLibrary:
    """Where the math functions LLVM has no portable intrinsic for come from
    (``scalar_math``).  This base is the C math library (``sinf``, ``fmod``...)
    and portable formulas, as the host JIT links them; a backend with a library
    of its own overrides ``symbol`` (its names) and ``recipes`` (its own way
    to compute some ops, by op class), or ``callee`` to define functions in
    the kernel's module itself (``portable_math``)."""

    recipes: Mapping[type, MathFn] = {}

    def symbol(self, name: str, t: llir.Type) -> str:
        """The function computing C's ``name`` (``sin``...) on ``t`` (f32 or f64): ``sinf``, ``sin``."""
        return name + ("f" if t == llir.FloatType() else "")

    def callee(self, ctx: "ScalarContext", name: str, t: llir.Type, signature: llir.FunctionType) -> llir.Function:
        """The function of ``ctx.module`` computing C's ``name`` on float type ``t``
        (f32 or f64; ``signature`` its LLVM type): here the library's ``symbol``,
        declared on first use."""
        return declare(ctx, self.symbol(name, t), signature.return_type, list(signature.args))


C_MATH = MathLibrary()


@dataclass
class ScalarContext:
    """Where an emitter writes: ``math`` is the backend's math library (the C
    one by default, which host-JIT tests link against).  ``float_flags`` are
    the fast-math flags of float arithmetic: ``("contract",)`` lets LLVM fuse
    ``a * b + c`` into one fma (``Options.enable_fp_fusion``)."""

    builder: llir.IRBuilder
    module: llir.Module
    math: MathLibrary = C_MATH
    float_flags: tuple[str, ...] = ()


LOWER, lowers = registry("Register the decorated emitter ``fn(ctx, op, args) -> value`` for the given op classes.")


def operand_type(op: Op, index: int = 0) -> ScalarType | PointerType:
    """The element type of ``op``'s ``index``-th operand."""
    return elem_type(op.operands[index].type)


def result_type(op: Op) -> ScalarType | PointerType:
    return elem_type(op.results[0].type)


def const(t: llir.Type, value) -> llir.Constant:
    return llir.Constant(t, value)


def declare(ctx: ScalarContext, name: str, ret: llir.Type, params: list[llir.Type]) -> llir.Function:
    """The function ``name`` of the module, declared on first use."""
    fn = ctx.module.globals.get(name)
    if fn is None:
        fn = llir.Function(ctx.module, llir.FunctionType(ret, params), name)
    return fn


def call(ctx: ScalarContext, name: str, args: list, ret: Optional[llir.Type] = None) -> llir.Value:
    """Call ``name`` (an intrinsic or a library function) on ``args``; returns
    the first argument's type unless ``ret`` says otherwise."""
    ret = args[0].type if ret is None else ret
    return ctx.builder.call(declare(ctx, name, ret, [a.type for a in args]), args)


def counted_loop(b: llir.IRBuilder, count: llir.Value, body: Callable[[llir.Value], None]) -> None:
    """Emit ``body(i)`` for ``i`` = 0, 1, ... ``count`` - 1 (``count`` an
    integer value read as unsigned, ``i`` of its type); nothing when ``count``
    is 0.  The builder is left after the loop; ``body`` may add blocks."""
    start = b.block
    loop, done = b.function.append_basic_block("loop"), b.function.append_basic_block("loop.done")
    zero = count.type(0)
    b.cbranch(b.icmp_unsigned("==", count, zero), done, loop)
    b.position_at_end(loop)
    i = b.phi(count.type, name="i")
    i.add_incoming(zero, start)
    body(i)
    following = b.add(i, count.type(1))
    i.add_incoming(following, b.block)
    b.cbranch(b.icmp_unsigned("==", following, count), done, loop)
    b.position_at_end(done)


_FLOAT_BITS = {"half": 16, "bfloat": 16, "float": 32, "double": 64}


def bit_width(t: llir.Type) -> int:
    """How many bits a value of LLVM type ``t`` holds: an int's width, a
    float's, a pointer's 64, a vector's elements' together."""
    if isinstance(t, llir.VectorType):
        return t.count * bit_width(t.element)
    if isinstance(t, llir.IntType):
        return t.width
    if isinstance(t, llir.PointerType):
        return 64
    return _FLOAT_BITS[str(t)]


def overloaded(base: str, *types: llir.Type) -> str:
    """An overloaded intrinsic's name: ``overloaded("llvm.fma", f32)`` is ``llvm.fma.f32``."""
    return ".".join([base] + [t.intrinsic_name for t in types])


def resize_int(ctx: ScalarContext, x: llir.Value, src: ScalarType, bits: int) -> llir.Value:
    """Integer ``x`` of type ``src`` as ``bits`` wide: sign- or zero-extended by
    ``src``'s signedness (``i1`` zero-extends), truncated (wrapping) when narrower."""
    if src.bits == bits:
        return x
    to = llir.IntType(bits)
    if src.bits > bits:
        return ctx.builder.trunc(x, to)
    return ctx.builder.sext(x, to) if src.kind == "int" else ctx.builder.zext(x, to)


def no_lowering(what: str) -> TilecError:
    return TilecError(f"codegen has no per-element lowering for {what}")
