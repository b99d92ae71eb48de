"""tilec's own math library, written as LLVM IR: ``PORTABLE_MATH``.

A backend whose target has no math library of its own (or whose library
is a call per element, as the C library is) takes this one
(``math = PORTABLE_MATH`` on its ``TargetLowering``).  Each function is
defined in the kernel's module on first use as an internal ``alwaysinline``
function of selects, bit casts, integer ops and the intrinsics ``llvm.fma``,
``llvm.fabs``, ``llvm.copysign`` and ``llvm.sqrt``: no branch and no call
survives inlining, so LLVM's loop vectorizer vectorizes a loop that calls
them, and every backend computes the same bits (``llvm.fma`` is exact
everywhere; a target without fused multiply-add, as baseline x86-64, calls
the C library's ``fma`` for it and is slow).

Results are C's (and numpy's) at the edges: NaN in gives NaN, signed zeros
and infinities as C99's Annex F, overflow to infinity, gradual underflow
through the subnormals, domain errors NaN.  Accuracy, measured against the
correctly rounded result on random and edge inputs
(``benchmarks/portable_math_accuracy.py``; the table with notes is in
``docs/internals.md``, "Portable math"), in ulps:

ACCURACY_TABLE

``sin``, ``cos`` and ``tan`` reduce by Cody and Waite's method with pi/2 in
three parts: f32 keeps its bound for ``|x| <= 1e5`` and drifts beyond (the
reduction's error grows with ``|x|``); past ``|x| = 2^22 pi/2`` (f32) and
``2^50`` (f64) the result is not the function's value but stays finite in
``[-1, 1]`` (no Payne and Hanek reduction).

Functions of ``math_call`` not here keep the C library (or the backend's
library) by their ``MathLibrary.symbol``: NOT_HERE.
"""
from __future__ import annotations


from llvmlite import ir as llir

from tilec.codegen_llvm.portable_math import error_function, exp_log, fmod, hyperbolic, power, trig  # noqa: F401  (they fill BODIES)
from tilec.codegen_llvm.portable_math.emitter import BODIES, FORMATS, Emitter, Format, Num
from tilec.codegen_llvm.scalar_base import MathFn, MathLibrary, ScalarContext
from tilec.codegen_llvm.scalar_math import library
from tilec.ir import ops as ir


#: Where sin, cos and tan keep their stated accuracy (module docstring).
TRIG_BOUNDS = {"f32": 1e5, "f64": 1e9}


def function_name(name: str, fmt: Format) -> str:
    """The symbol of the portable ``name`` on ``fmt``: ``tilec.math.exp.f32``."""
    return f"tilec.math.{name}.{fmt.kind}"


class PortableMath(MathLibrary):
    """The C math functions of ``BODIES`` defined in the module (module
    docstring); the rest the C library's.  ``exp`` and ``exp2`` are its own
    too, not ``llvm.exp2`` (which x86-64 lowers to a C library call)."""

    recipes = {ir.Exp: MathFn(library("exp"), library("exp")),
               ir.Exp2: MathFn(library("exp2"), library("exp2"))}

    def callee(self, ctx: ScalarContext, name: str, t: llir.Type, signature: llir.FunctionType) -> llir.Function:
        fmt, body = FORMATS.get(str(t)), BODIES.get(name)
        if fmt is None or body is None or signature != _signature(fmt, _arity(body)):
            return super().callee(ctx, name, t, signature)
        return self.define(ctx.module, name, fmt)

    def define(self, module: llir.Module, name: str, fmt: Format) -> llir.Function:
        """The portable ``name`` on ``fmt`` in ``module``, defined on first use."""
        symbol = function_name(name, fmt)
        fn = module.globals.get(symbol)
        if fn is not None:
            return fn
        body = BODIES[name]
        fn = llir.Function(module, _signature(fmt, _arity(body)), symbol)
        fn.linkage = "internal"
        for attribute in ("alwaysinline", "nounwind", "readnone"):
            fn.attributes.add(attribute)
        builder = llir.IRBuilder(fn.append_basic_block("entry"))
        e = Emitter(builder, fmt, lambda callee, *args: self._call(e, callee, *args))
        builder.ret(body(e, *(Num(e, a) for a in fn.args)).v)
        return fn

    def _call(self, e: Emitter, name: str, *args: Num) -> Num:
        return Num(e, e.b.call(self.define(e.b.module, name, e.fmt), [e.num(a).v for a in args]))


def _arity(body) -> int:
    return body.__code__.co_argcount - 1


def _signature(fmt: Format, arity: int) -> llir.FunctionType:
    return llir.FunctionType(fmt.float_type, [fmt.float_type] * arity)


PORTABLE_MATH = PortableMath()

__all__ = ["PORTABLE_MATH", "TRIG_BOUNDS", "PortableMath", "function_name"]
