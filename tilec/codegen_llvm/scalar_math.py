"""Per-element emitters of the float math functions (exp, log, sin, ...) and float ``%``.

As Triton: f16 and bf16 are widened to f32, computed, and rounded back once;
f32 takes the fast hardware paths where Triton does (``exp(x)`` is
``ex2.approx(x * log2(e))``, ``rsqrt`` is ``rsqrt.approx``, ``sqrt`` is
the correctly rounded ``sqrt.rn``); everything else (log, log2, sin, cos,
erf, fmod, and all f64 math but ``sqrt``) calls libdevice's ``__nv_*``
functions, which ``libdevice.py`` links in.  ``lg2.approx`` is not used: its
error is absolute (2^-22.6), so near ``x = 1`` the relative error of
``log2`` reaches several ulps (seen on the H100: 7 ulps at 1.125); libdevice
keeps ``log`` within an ulp.  NVPTX cannot select ``llvm.log2.f32`` (it
aborts: no libcall).

With no GPU arch (host-JIT tests) the same formulas use target-independent
``llvm.*`` intrinsics and the C math library's ``sinf``, ``erf``, ``fmod``...
in place of libdevice, so tests on the host check the formulas and guards.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from llvmlite import ir as llir

from tilec.ir import ops as ir
from tilec.ir.types import ScalarType, f32

from tilec.codegen_llvm.scalar_base import ScalarContext, call, const, llvm_type, lowers, operand_type, overloaded

F32 = llir.FloatType()


def libm(ctx: ScalarContext, name: str, *args: llir.Value) -> llir.Value:
    """The C math function ``name`` (``sin``, ``fmod``...) on f32 or f64 ``args``:
    libdevice's ``__nv_sinf``/``__nv_sin`` on the GPU, libm's ``sinf``/``sin`` on the host."""
    suffix = "f" if args[0].type == F32 else ""
    prefix = "__nv_" if ctx.on_gpu else ""
    return call(ctx, f"{prefix}{name}{suffix}", list(args))


def _intrinsic(name: str) -> Callable:
    """``x -> llvm.<name>.<type>(x)`` (target-independent, selectable on NVPTX)."""
    return lambda ctx, x: call(ctx, overloaded(f"llvm.{name}", x.type), [x])


def _named(name: str) -> Callable:
    """``x -> name(x)``, e.g. an ``llvm.nvvm.*`` intrinsic of one type."""
    return lambda ctx, x: call(ctx, name, [x])


def _gpu_or_host(gpu: Callable, host: Callable) -> Callable:
    """``gpu(ctx, x)`` on the GPU, ``host(ctx, x)`` for host-JIT tests."""
    return lambda ctx, x: gpu(ctx, x) if ctx.on_gpu else host(ctx, x)


def _scaled(fn: Callable, before: float) -> Callable:
    """``fn(x * before)``, the constant rounded to ``x``'s type."""
    return lambda ctx, x: fn(ctx, ctx.builder.fmul(x, const(x.type, before)))


def _reciprocal_sqrt(ctx, x):
    return ctx.builder.fdiv(const(x.type, 1.0), call(ctx, overloaded("llvm.sqrt", x.type), [x]))


def _libm_fn(name: str) -> Callable:
    return lambda ctx, *xs: libm(ctx, name, *xs)


_exp2 = _intrinsic("exp2")  # NVPTX: ex2.approx.f32


@dataclass(frozen=True)
class MathFn:
    """How one math op is computed in f32 (f16/bf16 widen to it) and in f64."""

    f32: Callable[[ScalarContext, llir.Value], llir.Value]
    f64: Callable[[ScalarContext, llir.Value], llir.Value]


MATH: dict[type, MathFn] = {
    ir.Exp: MathFn(_scaled(_exp2, math.log2(math.e)), _libm_fn("exp")),
    ir.Exp2: MathFn(_exp2, _libm_fn("exp2")),
    ir.Log: MathFn(_libm_fn("log"), _libm_fn("log")),
    ir.Log2: MathFn(_libm_fn("log2"), _libm_fn("log2")),
    ir.Sqrt: MathFn(_intrinsic("sqrt"), _intrinsic("sqrt")),
    ir.Rsqrt: MathFn(_gpu_or_host(_named("llvm.nvvm.rsqrt.approx.f"), _reciprocal_sqrt),
                     _gpu_or_host(_libm_fn("rsqrt"), _reciprocal_sqrt)),
    ir.Sin: MathFn(_libm_fn("sin"), _libm_fn("sin")),
    ir.Cos: MathFn(_libm_fn("cos"), _libm_fn("cos")),
    ir.Erf: MathFn(_libm_fn("erf"), _libm_fn("erf")),
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
    return compute(ctx, operand_type(op), MATH[type(op)], *args)


# C ``fmod``, exact.  Not LLVM's ``frem``: NVPTX expands that to
# ``a - trunc(a / b) * b``, which is wrong when the quotient is large.
FMOD = MathFn(_libm_fn("fmod"), _libm_fn("fmod"))
