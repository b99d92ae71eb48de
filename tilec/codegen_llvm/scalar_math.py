"""Per-element emitters of the float math functions (exp, log, sin, ...) and float ``%``.

As Triton: f16 and bf16 are widened to f32, computed, and rounded back once.
``exp(x)`` is ``exp2(x * log2(e))`` and ``sqrt`` and ``floor``/``ceil`` are
LLVM's target-independent intrinsics (a GPU selects its hardware paths for
them); everything else (log, log2, sin, cos, erf, fmod, and all f64 math but
``sqrt``) calls the backend's math library (``MathLibrary``), by C's names
by default.  A backend may compute some ops its own way
(``MathLibrary.recipes``: the NVIDIA backend's fast f32 ``rsqrt``); the
default ``rsqrt`` is ``1 / sqrt(x)``.

With the default library (host-JIT tests) every formula is
target-independent LLVM plus the C math library, so tests on the host check
the formulas and guards.
"""
from __future__ import annotations

import math
from typing import Callable

from llvmlite import ir as llir

from tilec.ir import ops as ir
from tilec.ir.types import ScalarType, f32

from tilec.codegen_llvm.scalar_base import MathFn, ScalarContext, call, const, llvm_type, lowers, operand_type, overloaded

F32 = llir.FloatType()


def libm(ctx: ScalarContext, name: str, *args: llir.Value) -> llir.Value:
    """The C math function ``name`` (``sin``, ``fmod``...) on f32 or f64 ``args``,
    from the backend's math library (``sinf``/``sin`` by default)."""
    return call(ctx, ctx.math.symbol(name, args[0].type), list(args))


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
