"""Per-element LLVM emitters for every elementwise op of the tile IR.

The tile codegen calls ``emit_scalar(ctx, op, args)`` once per register
element, with ``args`` the LLVM values of ``op.operands`` for that element.
What each op computes is defined by the interpreter (``tilec.ir.interp_ops``);
where GPUs leave a result open (integer division by zero, ``MIN / -1``, shift
counts of the bit width or more) the emitters guard so that the GPU gives the
interpreter's answer.  Float arithmetic on f16/bf16 is emitted in the type
itself: add, sub, mul, div, sqrt and fma rounded once in f16/bf16 equal the
f32 result rounded (f32 has more than twice their precision plus two bits),
so LLVM may promote or not.  Math functions are in ``scalar_math``, casts in
``scalar_casts``.
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec.ir import ops as ir
from tilec.ir.core import Op
from tilec.ir.types import PointerType

from tilec.codegen_llvm import scalar_casts, scalar_math  # noqa: F401  (they register their lowerings)
from tilec.codegen_llvm.scalar_base import LOWER, ScalarContext, call, const, lowers, memory_type, no_lowering, operand_type, overloaded, resize_int
from tilec.codegen_llvm.scalar_base import llvm_type  # noqa: F401  (part of this module's interface)

__all__ = ["ScalarContext", "emit_scalar", "llvm_type", "memory_type", "LOWER"]


def emit_scalar(ctx: ScalarContext, op: Op, args: list[llir.Value]) -> llir.Value:
    """The LLVM value of ``op``'s result for one element whose operands are ``args``."""
    emitter = LOWER.get(type(op))
    if emitter is None:
        raise no_lowering(f"`{op.NAME}`")
    return emitter(ctx, op, args)


def _by_kind(float_fn, int_fn):
    """An emitter applying ``float_fn`` (with the context's fast-math flags) or
    ``int_fn`` (``(builder, a, b)``) by operand type."""
    def emit(ctx, op, args):
        if operand_type(op).is_float:
            return float_fn(ctx.builder, *args, flags=ctx.float_flags)
        return int_fn(ctx.builder, *args)
    return emit


for _cls, _float, _int in [
    (ir.Add, llir.IRBuilder.fadd, llir.IRBuilder.add),
    (ir.Sub, llir.IRBuilder.fsub, llir.IRBuilder.sub),
    (ir.Mul, llir.IRBuilder.fmul, llir.IRBuilder.mul),
    (ir.Neg, llir.IRBuilder.fneg, llir.IRBuilder.neg),
    (ir.And, None, llir.IRBuilder.and_),
    (ir.Or, None, llir.IRBuilder.or_),
    (ir.Xor, None, llir.IRBuilder.xor),
    (ir.Not, None, llir.IRBuilder.not_),
]:
    lowers(_cls)(_by_kind(_float, _int))


@lowers(ir.Abs)
def _abs(ctx, op, args):
    """``|x|``: ``fabs`` for floats, wrapping ``abs`` for signed ints, ``x`` for unsigned and ``i1``."""
    t, (x,) = operand_type(op), args
    if t.is_float:
        return call(ctx, overloaded("llvm.fabs", x.type), [x])
    if t.kind != "int":
        return x
    return call(ctx, overloaded("llvm.abs", x.type), [x, const(llir.IntType(1), 0)])


# --------------------------------------------------------------------------- #
# Integer division: never trap, and give the interpreter's answers
# --------------------------------------------------------------------------- #

def _safe_divisor(ctx, t, a, b):
    """``b``, or 1 where it is 0 or where ``a / b`` overflows (``MIN / -1``):
    the hardware result there is undefined (or a trap), and dividing by 1
    gives what the interpreter wants for the overflow (``MIN`` and 0)."""
    bld = ctx.builder
    bad = bld.icmp_unsigned("==", b, const(b.type, 0))
    if t.kind == "int":
        minimum = const(a.type, -(1 << (t.bits - 1)))
        overflow = bld.and_(bld.icmp_signed("==", a, minimum), bld.icmp_signed("==", b, const(b.type, -1)))
        bad = bld.or_(bad, overflow)
    return bld.select(bad, const(b.type, 1), b)


def _int_quotient(ctx, t, a, b):
    """C division (truncating); ``x / 0`` is all bits set."""
    bld = ctx.builder
    divide = bld.sdiv if t.kind == "int" else bld.udiv
    q = divide(a, _safe_divisor(ctx, t, a, b))
    return bld.select(bld.icmp_unsigned("==", b, const(b.type, 0)), const(a.type, -1), q)


def _int_remainder(ctx, t, a, b):
    """C remainder (sign of the dividend); ``x % 0`` is ``x``."""
    bld = ctx.builder
    remainder = bld.srem if t.kind == "int" else bld.urem
    r = remainder(a, _safe_divisor(ctx, t, a, b))
    return bld.select(bld.icmp_unsigned("==", b, const(b.type, 0)), a, r)


@lowers(ir.Div)
def _div(ctx, op, args):
    """Float: LLVM's correctly rounded ``fdiv``, or the backend's faster
    division where the op allows one (``ir.Div``) and the math library has it."""
    t = operand_type(op)
    if not t.is_float:
        return _int_quotient(ctx, t, *args)
    fast = None if op.rounding else ctx.math.recipes.get(ir.Div)
    return scalar_math.compute(ctx, t, fast, *args) if fast else ctx.builder.fdiv(*args)


@lowers(ir.Rem)
def _rem(ctx, op, args):
    t = operand_type(op)
    return scalar_math.compute(ctx, t, scalar_math.FMOD, *args) if t.is_float else _int_remainder(ctx, t, *args)


# --------------------------------------------------------------------------- #
# Shifts and the high product
# --------------------------------------------------------------------------- #

def _count_too_big(ctx, t, b):
    """Whether shift count ``b`` (read unsigned) is the bit width or more (for
    ``i1`` a count of 1, which shifts the bit out: 0, as in the interpreter)."""
    return ctx.builder.icmp_unsigned(">=", b, const(b.type, t.bits))


def _saturated_count(ctx, t, b):
    """``b`` read unsigned and capped at the bit width: the same shift, and a count that
    survives truncation.  LLVM's NVIDIA backend turns ``select(count >= width, 0, shl)``
    into one shift instruction, which clamps big counts itself but reads only the count's low 32 bits, so
    an i64 count of ``2**32 + 63`` would shift by 63."""
    return call(ctx, overloaded("llvm.umin", b.type), [b, const(b.type, t.bits)])


@lowers(ir.Shl)
def _shl(ctx, op, args):
    """``a << b``; LLVM's shift is poison for big counts, which ``select`` never picks."""
    t, (a, b) = operand_type(op), args
    b = _saturated_count(ctx, t, b)
    return ctx.builder.select(_count_too_big(ctx, t, b), const(a.type, 0), ctx.builder.shl(a, b))


@lowers(ir.Shr)
def _shr(ctx, op, args):
    """Arithmetic for signed types (a big count clamps to width-1: the sign fill),
    logical for the rest (a big count gives 0)."""
    t, (a, b) = operand_type(op), args
    bld = ctx.builder
    if t.kind == "int":
        clamped = call(ctx, overloaded("llvm.umin", b.type), [b, const(b.type, t.bits - 1)])
        return bld.ashr(a, clamped)
    b = _saturated_count(ctx, t, b)
    return bld.select(_count_too_big(ctx, t, b), const(a.type, 0), bld.lshr(a, b))


@lowers(ir.UMulHi)
def _umulhi(ctx, op, args):
    """The high half of the double-width unsigned product (operands read unsigned)."""
    bld, (a, b) = ctx.builder, args
    bits = a.type.width
    wide = llir.IntType(2 * bits)
    product = bld.mul(bld.zext(a, wide), bld.zext(b, wide))
    return bld.trunc(bld.lshr(product, const(wide, bits)), a.type)


# --------------------------------------------------------------------------- #
# Maximum / minimum, comparisons, selection, fma
# --------------------------------------------------------------------------- #

_EXTREMA = {  # op class -> (float with NaN propagation, float returning the non-NaN, signed int, unsigned int)
    ir.Maximum: ("llvm.maximum", "llvm.maximumnum", "llvm.smax", "llvm.umax"),
    ir.Minimum: ("llvm.minimum", "llvm.minimumnum", "llvm.smin", "llvm.umin"),
}


@lowers(ir.Maximum, ir.Minimum)
def _extremum(ctx, op, args):
    """Both LLVM float families order -0.0 below +0.0 (IEEE 754-2019 maximum and
    maximumNumber); NVIDIA GPUs have one instruction for each (``max.NaN``, ``max``)."""
    t = operand_type(op)
    propagating, numeric, signed, unsigned = _EXTREMA[type(op)]
    if t.is_float:
        name = propagating if op.propagate_nan else numeric
    else:
        name = signed if t.kind == "int" else unsigned
    return call(ctx, overloaded(name, args[0].type), args)


_PREDICATES = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


@lowers(ir.Compare)
def _compare(ctx, op, args):
    """Signed or unsigned by the operand type (``i1`` and pointers unsigned);
    floats ordered, except ``ne`` which is true when either is NaN."""
    t, bld = operand_type(op), ctx.builder
    kind = "ptr" if isinstance(t, PointerType) else t.kind
    if kind == "float":
        compare = bld.fcmp_unordered if op.pred == "ne" else bld.fcmp_ordered
    else:
        compare = bld.icmp_signed if kind == "int" else bld.icmp_unsigned
    return compare(_PREDICATES[op.pred], *args)


@lowers(ir.Select)
def _select(ctx, op, args):
    return ctx.builder.select(*args)


@lowers(ir.Fma)
def _fma(ctx, op, args):
    """``a * b + c`` rounded once (``fma.rn`` on the GPU, every float type)."""
    return call(ctx, overloaded("llvm.fma", args[0].type), args)


@lowers(ir.Assume)
def _assume(ctx, op, args):
    return args[0]


@lowers(ir.AddPtr)
def _addptr(ctx, op, args):
    """``ptr + offset`` elements of the pointee's memory type; the offset is
    widened to 64 bits by its signedness and the address wraps (no ``inbounds``)."""
    ptr, offset = args
    pointee = operand_type(op).elem
    wide = resize_int(ctx, offset, operand_type(op, 1), 64)
    return ctx.builder.gep(ptr, [wide], source_etype=memory_type(pointee))
