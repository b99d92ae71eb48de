"""Per-element emitters of ``cast`` and ``bitcast``, by the interpreter's rules
(``tilec.ir.interp_dtypes.cast``).

Every float result is rounded once, even where LLVM would round twice:
LLVM's NVIDIA backend turns ``sitofp i32 -> bfloat`` on Ampere into
``cvt.rn.f32.s32`` then ``cvt.rn.bf16.f32``.  So ints bound for bf16 go
through f32 rounded to odd, whose one further rounding is correct (LLVM's
own ``fptrunc double -> bfloat`` already rounds through odd on Ampere).
Rounding toward zero has no LLVM intrinsic that GPU backends select, so
round-toward-zero is round-to-nearest stepped back one ulp where it rounded
away from zero.
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec.ir import ops as ir
from tilec.ir.types import PointerType, ScalarType, bf16, f32, f64

from tilec.codegen_llvm.scalar_base import call, const, llvm_type, lowers, no_lowering, operand_type, overloaded, resize_int
from tilec.codegen_llvm.scalar_fp8 import float_to_fp8, fp8_to_float, fp8_to_fp8

I64 = llir.IntType(64)
_FLOAT_BITS = {"half": 16, "bfloat": 16, "float": 32, "double": 64}


def _class(t) -> str:
    """``bool``, ``int`` (either signedness), ``float``, ``fp8`` or ``ptr``: what picks the cast rule."""
    if isinstance(t, PointerType):
        return "ptr"
    if t.is_fp8:
        return "fp8"
    return "int" if t.kind == "uint" else t.kind


def _nonzero(ctx, x, src, dst, rounding):
    """Anything -> ``i1`` is ``x != 0`` (NaN included, as Triton)."""
    if _class(src) == "float":
        return ctx.builder.fcmp_unordered("!=", x, const(x.type, 0.0))
    return ctx.builder.icmp_unsigned("!=", x, const(x.type, None if _class(src) == "ptr" else 0))


def _int_to_int(ctx, x, src, dst, rounding):
    return resize_int(ctx, x, src, dst.bits)


def _float_to_int(ctx, x, src, dst, rounding):
    """Truncate, saturating, NaN -> 0 (``llvm.fpto[su]i.sat``, one ``cvt.rzi`` on NVIDIA GPUs);
    f16/bf16 widen to f32 first (exact), so only f32/f64 sources reach LLVM."""
    if src.bits == 16:
        x = ctx.builder.fpext(x, llvm_type(f32))
    base = "llvm.fptosi.sat" if dst.kind == "int" else "llvm.fptoui.sat"
    to = llvm_type(dst)
    return call(ctx, overloaded(base, to, x.type), [x], ret=to)


# --------------------------------------------------------------------------- #
# Rounding: to nearest even once, or toward zero
# --------------------------------------------------------------------------- #

def _toward_zero_or_odd(ctx, y, away, inexact, rounding):
    """Float ``y``, rounded to nearest, made ``rounding``'s result: one ulp toward
    zero where it rounded ``away`` from zero, and for ``rtne`` (round to odd)
    its lowest bit set where ``inexact``.  ``y`` is nonzero where ``away``, so
    decrementing its bits never crosses zero; an overflowed infinity steps to
    the largest finite value."""
    bld = ctx.builder
    bits_type = llir.IntType(_FLOAT_BITS[str(y.type)])
    bits = bld.bitcast(y, bits_type)
    bits = bld.select(away, bld.sub(bits, const(bits_type, 1)), bits)
    if rounding == "rtne":
        bits = bld.or_(bits, bld.zext(inexact, bits_type))
    return bld.bitcast(bits, y.type)


def _step_toward_zero(ctx, y, exact):
    """``y`` one ulp toward zero where ``|y| > |exact|`` (``exact`` as wide as ``y`` or wider)."""
    bld = ctx.builder
    y_wide = y if y.type == exact.type else bld.fpext(y, exact.type)
    fabs = overloaded("llvm.fabs", exact.type)
    away = bld.fcmp_ordered(">", call(ctx, fabs, [y_wide]), call(ctx, fabs, [exact]))
    return _toward_zero_or_odd(ctx, y, away, None, "rtz")


def _float_to_float(ctx, x, src, dst, rounding):
    """Widening is exact (``fpext``); a narrowing rounds once to nearest even,
    f16 <-> bf16 through f32 (where both are exact), then steps toward zero for ``rtz``."""
    bld = ctx.builder
    if src == dst:
        return x
    if dst.bits > src.bits:
        return bld.fpext(x, llvm_type(dst))
    source = bld.fpext(x, llvm_type(f32)) if src.bits == dst.bits else x
    y = bld.fptrunc(source, llvm_type(dst))
    if rounding == "rtz":
        y = _step_toward_zero(ctx, y, source)
    return y


_EXACT_INT_BITS = {32: 24, 64: 53}  # float width -> widest int it holds exactly


def _int_in_float(ctx, x, src, wide, rounding):
    """Int ``x`` as float type ``wide`` (f32 or f64), rounded toward zero
    (``rtz``) or to odd (``rtne``: the sticky bit makes one later rounding to
    a narrower type exact); exact when ``wide`` holds every value of ``src``."""
    bld, signed = ctx.builder, src.kind == "int"
    d = (bld.sitofp if signed else bld.uitofp)(x, llvm_type(wide))
    if src.bits <= _EXACT_INT_BITS[wide.bits]:
        return d
    back = _float_to_int(ctx, d, wide, src, rounding)
    past_range = bld.fcmp_ordered(">=", d, const(d.type, 2.0 ** (src.bits - 1 if signed else src.bits)))
    away = bld.or_(past_range, _overshoots(ctx, back, x, signed))
    inexact = bld.or_(past_range, bld.icmp_unsigned("!=", back, x))
    return _toward_zero_or_odd(ctx, d, away, inexact, rounding)


def _overshoots(ctx, back, x, signed):
    """Whether ``back`` (the rounded ``x`` converted back) is farther from zero than ``x``."""
    icmp = ctx.builder.icmp_signed if signed else ctx.builder.icmp_unsigned
    positive = icmp(">=", x, const(x.type, 0))
    return ctx.builder.select(positive, icmp(">", back, x), icmp("<", back, x))


def _int_to_float(ctx, x, src, dst, rounding):
    """To nearest: ``[su]itofp``, one rounding, except for bf16, which LLVM's
    NVIDIA backend reaches through f32 with two (f16 is safe: ints that f32 rounds overflow
    f16 anyway).  bf16 and ``rtz`` go through ``_int_in_float`` and one more
    float rounding.  (The odd rounding is in integer bits so that LLVM cannot
    fold it back into a direct ``sitofp``, as it does with an exact f64 step.)"""
    bld = ctx.builder
    if rounding == "rtne" and dst != bf16:
        return (bld.sitofp if src.kind == "int" else bld.uitofp)(x, llvm_type(dst))
    wide = f64 if dst == f64 else f32
    return _float_to_float(ctx, _int_in_float(ctx, x, src, wide, rounding), wide, dst, rounding)


# --------------------------------------------------------------------------- #
# Pointers
# --------------------------------------------------------------------------- #

def _ptr_to_int(ctx, x, src, dst, rounding):
    """The address, truncated (wrapping) to a narrower int."""
    return ctx.builder.ptrtoint(x, llvm_type(dst))


def _int_to_ptr(ctx, x, src, dst, rounding):
    """The int extended to 64 bits by its signedness (``inttoptr`` alone zero-extends)."""
    return ctx.builder.inttoptr(resize_int(ctx, x, src, 64), llvm_type(dst))


def _ptr_to_ptr(ctx, x, src, dst, rounding):
    """The same address in ``dst``'s space.  GPUs cast only to and from the
    generic space (0), so a cast between two others goes through it."""
    if src.space == dst.space:
        return x
    bld = ctx.builder
    if 0 not in (src.space, dst.space):
        x = bld.addrspacecast(x, llir.PointerType(addrspace=0))
    return bld.addrspacecast(x, llvm_type(dst))


_CASTS = {  # (source class, destination class) -> emitter(ctx, x, src, dst, rounding)
    ("int", "int"): _int_to_int, ("bool", "int"): _int_to_int,
    ("int", "float"): _int_to_float, ("bool", "float"): _int_to_float,
    ("float", "int"): _float_to_int,
    ("float", "float"): _float_to_float,
    ("ptr", "int"): _ptr_to_int,
    ("int", "ptr"): _int_to_ptr, ("bool", "ptr"): _int_to_ptr,
    ("ptr", "ptr"): _ptr_to_ptr,
    ("fp8", "float"): fp8_to_float, ("float", "fp8"): float_to_fp8, ("fp8", "fp8"): fp8_to_fp8,
}


@lowers(ir.Cast)
def _cast(ctx, op, args):
    return convert(ctx, args[0], operand_type(op), op.to, op.rounding)


def convert(ctx, x: llir.Value, src, dst, rounding: str) -> llir.Value:
    """Value ``x`` of IR type ``src`` as ``dst`` (``ir.Cast``'s meaning, its ``rounding``)."""
    if isinstance(dst, ScalarType) and dst.is_bool:
        return x if src == dst else _nonzero(ctx, x, src, dst, rounding)
    emitter = _CASTS.get((_class(src), _class(dst)))
    if emitter is None:
        raise no_lowering(f"a cast from {src} to {dst}")
    return emitter(ctx, x, src, dst, rounding)


@lowers(ir.Bitcast)
def _bitcast(ctx, op, args):
    """The same bits as ``op.to``; pointers go through ``i64`` (LLVM does not
    bitcast pointers to non-pointers)."""
    src, dst, (x,) = operand_type(op), op.to, args
    bld, to = ctx.builder, llvm_type(dst)
    if isinstance(src, PointerType):
        x = bld.ptrtoint(x, I64)
    if isinstance(dst, PointerType):
        return bld.inttoptr(bld.bitcast(x, I64) if x.type != I64 else x, to)
    return x if x.type == to else bld.bitcast(x, to)
