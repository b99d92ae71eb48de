"""Per-element emitters of the float math functions (exp, log, sin, ...) and float ``%``.

As Triton: f16 and bf16 are widened to f32, computed, and rounded back once.
``exp(x)`` is ``exp2(x * log2(e))`` and ``sqrt`` and ``floor``/``ceil`` are
LLVM's target-independent intrinsics (a GPU selects its hardware paths for
them); everything else (log, log2, sin, cos, erf, fmod, and all f64 math but
``sqrt``) calls the backend's math library (``MathLibrary.callee``): C's
``sinf``/``sin`` declared by default, or a body the library defines in the
module (``portable_math``).  A backend may compute some ops its own way
(``MathLibrary.recipes``: the NVIDIA backend's fast f32 ``rsqrt``); the
default ``rsqrt`` is ``1 / sqrt(x)``.

With the default library (host-JIT tests) every formula is
target-independent LLVM plus the C math library, so tests on the host check
the formulas and guards.

``math_call`` (the libdevice functions, ``ir.math_functions``) calls the
library by the function's ``library`` name the same way (f16/bf16 widened to
f32 and rounded back once), or builds it from LLVM instructions
(``FORMULAS``: the predicates, ``saturatef`` and the bit functions).
"""
from __future__ import annotations

import math
from typing import Callable

from llvmlite import ir as llir

from tilec.ir import ops as ir
from tilec.ir.math_functions import SAME, VALUE
from tilec.ir.types import ScalarType, f32

from tilec.codegen_llvm.scalar_base import MathFn, ScalarContext, call, const, llvm_type, lowers, operand_type, overloaded, result_type

F32 = llir.FloatType()
I32 = llir.IntType(32)


def libm(ctx: ScalarContext, name: str, *args: llir.Value) -> llir.Value:
    """The C math function ``name`` (``sin``, ``fmod``...) on f32 or f64 ``args``,
    from the backend's math library (``sinf``/``sin`` by default)."""
    return _call_library(ctx, name, args[0].type, list(args), args[0].type)


def _call_library(ctx: ScalarContext, name: str, t: llir.Type, args: list[llir.Value], ret: llir.Type) -> llir.Value:
    """The math library's ``name`` on float type ``t``, called on ``args``, returning ``ret``."""
    signature = llir.FunctionType(ret, [a.type for a in args])
    return ctx.builder.call(ctx.math.callee(ctx, name, t, signature), args)


def _intrinsic(name: str) -> Callable:
    """``x -> llvm.<name>.<type>(x)`` (target-independent; every backend selects it)."""
    return lambda ctx, x: call(ctx, overloaded(f"llvm.{name}", x.type), [x])


def _scaled(fn: Callable, before: float) -> Callable:
    """``fn(x * before)``, the constant rounded to ``x``'s type."""
    return lambda ctx, x: fn(ctx, ctx.builder.fmul(x, const(x.type, before)))


def _reciprocal_sqrt(ctx, x):
    return ctx.builder.fdiv(const(x.type, 1.0), call(ctx, overloaded("llvm.sqrt", x.type), [x]))


def library(name: str) -> Callable:
    """A recipe calling the math library's ``name`` (``libm``)."""
    return lambda ctx, *xs: libm(ctx, name, *xs)


_exp2 = _intrinsic("exp2")


MATH: dict[type, MathFn] = {
    ir.Exp: MathFn(_scaled(_exp2, math.log2(math.e)), library("exp")),
    ir.Exp2: MathFn(_exp2, library("exp2")),
    ir.Log: MathFn(library("log"), library("log")),
    ir.Log2: MathFn(library("log2"), library("log2")),
    ir.Sqrt: MathFn(_intrinsic("sqrt"), _intrinsic("sqrt")),
    ir.Rsqrt: MathFn(_reciprocal_sqrt, _reciprocal_sqrt),
    ir.Sin: MathFn(library("sin"), library("sin")),
    ir.Cos: MathFn(library("cos"), library("cos")),
    ir.Erf: MathFn(library("erf"), library("erf")),
    ir.Floor: MathFn(_intrinsic("floor"), _intrinsic("floor")),
    ir.Ceil: MathFn(_intrinsic("ceil"), _intrinsic("ceil")),
}


def compute(ctx: ScalarContext, t: ScalarType, recipe: MathFn, *args: llir.Value) -> llir.Value:
    """``recipe`` on ``args`` of float type ``t``: f16/bf16 widen to f32 and
    round back to nearest even once."""
    if t.bits == 64:
        return recipe.f64(ctx, *args)
    if t == f32:
        return recipe.f32(ctx, *args)
    bld = ctx.builder
    wide = recipe.f32(ctx, *(bld.fpext(a, F32) for a in args))
    return bld.fptrunc(wide, llvm_type(t))


@lowers(*MATH)
def _math(ctx, op, args):
    """The backend's recipe for ``op`` where it has one, else ``MATH``'s."""
    recipe = ctx.math.recipes.get(type(op)) or MATH[type(op)]
    return compute(ctx, operand_type(op), recipe, *args)


# C ``fmod``, exact.  Not LLVM's ``frem``: LLVM's NVIDIA backend expands that to
# ``a - trunc(a / b) * b``, which is wrong when the quotient is large.
FMOD = MathFn(library("fmod"), library("fmod"))


# --------------------------------------------------------------------------- #
# math_call: the named functions of ir.math_functions
# --------------------------------------------------------------------------- #

def _widened(ctx: ScalarContext, t: ScalarType, x: llir.Value) -> llir.Value:
    """A float operand as the library computes it: f16/bf16 widened to f32."""
    return ctx.builder.fpext(x, F32) if t.bits < 32 else x


def _library_call(ctx: ScalarContext, op: ir.MathCall, args: list[llir.Value]) -> llir.Value:
    """The math library's function: float operands of type T widened as ``compute``
    widens them, the result rounded back once when it is of type T."""
    f, t = op.function, op.value_type
    wide = [_widened(ctx, t, a) if p == VALUE else a for p, a in zip(f.params, args)]
    float_type = next(w.type for p, w in zip(f.params, wide) if p == VALUE)
    out = result_type(op)
    ret = float_type if f.result == SAME else llvm_type(out)
    value = _call_library(ctx, f.library, float_type, wide, ret)
    return ctx.builder.fptrunc(value, llvm_type(out)) if f.result == SAME and t.bits < 32 else value


def _as_i32(ctx: ScalarContext, x: llir.Value) -> llir.Value:
    """An integer result (or an ``i1``, zero-extended) as an i32."""
    bits = x.type.width
    if bits == 32:
        return x
    return ctx.builder.trunc(x, I32) if bits > 32 else ctx.builder.zext(x, I32)


def _fabs(ctx, x):
    return call(ctx, overloaded("llvm.fabs", x.type), [x])


def _isinf(ctx, t, x):
    return ctx.builder.fcmp_ordered("==", _fabs(ctx, x), const(x.type, math.inf))


def _finite(ctx, t, x):
    return _as_i32(ctx, ctx.builder.fcmp_ordered("<", _fabs(ctx, x), const(x.type, math.inf)))


def _signbit(ctx, t, x):
    bits = ctx.builder.bitcast(x, llir.IntType(t.bits))
    return _as_i32(ctx, ctx.builder.icmp_signed("<", bits, const(bits.type, 0)))


def _saturate(ctx, t, x):
    """min(max(x, 0), 1): ``maxnum`` returns 0 for NaN, as libdevice's saturate."""
    w = _widened(ctx, t, x)
    low = call(ctx, overloaded("llvm.maxnum", w.type), [w, const(w.type, 0.0)])
    clamped = call(ctx, overloaded("llvm.minnum", w.type), [low, const(w.type, 1.0)])
    return ctx.builder.fptrunc(clamped, x.type) if t.bits < 32 else clamped


def _count(intrinsic: str, *flag: int) -> Callable:
    """``llvm.<intrinsic>`` (ctlz, ctpop) on the int as an i32."""
    return lambda ctx, t, x: _as_i32(ctx, call(ctx, overloaded(intrinsic, x.type),
                                               [x, *(const(llir.IntType(1), v) for v in flag)]))


def _ffs(ctx, t, x):
    """1 + the number of trailing zeros, 0 for 0."""
    bld = ctx.builder
    low = _as_i32(ctx, call(ctx, overloaded("llvm.cttz", x.type), [x, const(llir.IntType(1), 1)]))
    return bld.select(bld.icmp_unsigned("==", x, const(x.type, 0)), I32(0), bld.add(low, I32(1)))


def _widen_int(ctx, t, x, bits: int):
    to = llir.IntType(bits)
    return ctx.builder.sext(x, to) if t.kind == "int" else ctx.builder.zext(x, to)


def _shift_right(ctx, t, x, n: int):
    return ctx.builder.ashr(x, const(x.type, n)) if t.kind == "int" else ctx.builder.lshr(x, const(x.type, n))


def _mulhi(ctx, t, a, b):
    """The high half of the double-width product (signed or unsigned by T)."""
    wide = ctx.builder.mul(_widen_int(ctx, t, a, 2 * t.bits), _widen_int(ctx, t, b, 2 * t.bits))
    return ctx.builder.trunc(_shift_right(ctx, t, wide, t.bits), a.type)


def _mul24(ctx, t, a, b):
    """The product of the low 24 bits, sign-extended from bit 23 for int32."""
    def low24(x):
        if t.kind == "int":
            return ctx.builder.ashr(ctx.builder.shl(x, I32(8)), I32(8))
        return ctx.builder.and_(x, I32(0xFFFFFF))
    return ctx.builder.mul(low24(a), low24(b))


def _halving_add(rounding: int) -> Callable:
    """``(a + b + rounding) >> 1`` in 64 bits, so the sum cannot overflow."""
    def emit(ctx, t, a, b):
        bld = ctx.builder
        total = bld.add(_widen_int(ctx, t, a, 64), _widen_int(ctx, t, b, 64))
        if rounding:
            total = bld.add(total, const(total.type, rounding))
        return bld.trunc(_shift_right(ctx, t, total, 1), a.type)
    return emit


def _byte_perm(ctx, t, x, y, s):
    """Byte ``i`` of the result is byte ``(s >> 4i) & 7`` of the eight bytes ``y:x``."""
    bld, i64 = ctx.builder, llir.IntType(64)
    wide = bld.or_(bld.shl(bld.zext(y, i64), const(i64, 32)), bld.zext(x, i64))
    out = I32(0)
    for i in range(4):
        sel = bld.and_(bld.lshr(s, I32(4 * i)), I32(7))
        byte = bld.trunc(bld.lshr(wide, bld.zext(bld.mul(sel, I32(8)), i64)), I32)
        out = bld.or_(out, bld.shl(bld.and_(byte, I32(0xFF)), I32(8 * i)))
    return out


# The functions codegen builds itself (``library`` None): fn(ctx, T, *args) -> value.
FORMULAS: dict[str, Callable] = {
    "isnan": lambda ctx, t, x: ctx.builder.fcmp_unordered("uno", x, x),
    "isinf": _isinf, "finite": _finite, "signbit": _signbit, "saturatef": _saturate,
    "clz": _count("llvm.ctlz", 0), "popc": _count("llvm.ctpop"), "ffs": _ffs,
    "brev": lambda ctx, t, x: call(ctx, overloaded("llvm.bitreverse", x.type), [x]),
    "mulhi": _mulhi, "mul24": _mul24, "hadd": _halving_add(0), "rhadd": _halving_add(1), "byte_perm": _byte_perm,
}


@lowers(ir.MathCall)
def _math_call(ctx, op, args):
    """A formula of ``FORMULAS`` where the function has one, else the math library's."""
    formula = FORMULAS.get(op.fn)
    if formula is not None:
        return formula(ctx, op.value_type, *args)
    return _library_call(ctx, op, args)
