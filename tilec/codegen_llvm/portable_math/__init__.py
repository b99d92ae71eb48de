"""tilec's own math library, written as LLVM IR: ``PORTABLE_MATH``.

A backend whose target has no math library of its own (or whose library
is a call per element, as the C library is) takes this one
(``math = PORTABLE_MATH`` on its ``TargetLowering``).  Each function is
defined in the kernel's module on first use as an internal ``alwaysinline``
function of selects, bit casts, integer ops, loads from constant tables and
the intrinsics ``llvm.fma``, ``llvm.fabs``, ``llvm.copysign`` and
``llvm.sqrt``: no branch and no call
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

    function   f32 ulps   f64 ulps
    exp          0.98       1.01
    exp2         0.84       0.87
    exp10        0.93       1.09
    expm1        0.90       1.04
    log          0.76       0.80
    log2         0.85       0.83
    log10        0.82       0.81
    log1p        0.80       0.79
    sin          0.78       0.75
    cos          0.76       0.77
    tan          1.09       1.02
    atan         0.83       0.74
    atan2        1.38       1.45
    asin         1.17       1.12
    acos         0.77       0.76
    sinh         1.54       1.49
    cosh         1.40       1.37
    tanh         1.33       1.39
    pow          1.22       1.03
    cbrt         0.75       0.67
    erf          0.97       0.90
    erfc         2.62       2.45
    fmod    0 (exact)  0 (exact)

``sin``, ``cos`` and ``tan`` hold these bounds for every argument: below
``TRIG_BOUNDS`` (6.5e6 for f32, 1.75e15 for f64) they reduce by Cody and
Waite's method with pi/2 in three floats, beyond by Payne and Hanek's with
the bits of 2/pi from a table (``reduction.py``), the reduced argument
carried as a pair either way.

``erfc`` is the one above 2 ulps (a product of exp's parts, a polynomial
and a quotient); ``fmod`` is exact (long division in a fixed number of
steps, ``fmod.py``).  Every other function of the table stays within 2 ulps
on every input we have tried, which is what the tests hold it to.

Functions of ``math_call`` not here keep the C library (or the backend's
library) by their ``MathLibrary.symbol``:
acosh, asinh, atanh, copysign, cospi, cyl_bessel_i0, cyl_bessel_i1, erfcinv,
erfcx, erfinv, fast_fdivide, fdim, hypot, ilogb, j0, j1, jn, ldexp, lgamma,
llrint, llround, logb, nearbyint, nextafter, norm3d, norm4d, normcdf,
normcdfinv, powi, rcbrt, remainder, rhypot, rint, rnorm3d, rnorm4d, round,
scalbn, sinpi, tgamma, trunc, y0, y1, yn.
"""
from __future__ import annotations


from llvmlite import ir as llir

from tilec.codegen_llvm.portable_math import error_function, exp_log, fmod, hyperbolic, power, trig  # noqa: F401  (they fill BODIES)
from tilec.codegen_llvm.portable_math.emitter import BODIES, FORMATS, Emitter, Format, Num
from tilec.codegen_llvm.portable_math.trig import TRIG_BOUNDS
from tilec.codegen_llvm.scalar_base import MathFn, MathLibrary, ScalarContext
from tilec.codegen_llvm.scalar_math import library
from tilec.ir import ops as ir




def function_name(name: str, fmt: Format) -> str:
    """The symbol of the portable ``name`` on ``fmt``: ``tilec.math.exp.f32``."""
    return f"tilec.math.{name}.{fmt.kind}"


class PortableMath(MathLibrary):
    """The C math functions of ``BODIES`` defined in the module (module
    docstring); the rest the C library's.  ``exp`` and ``exp2`` are its own
    too, not ``llvm.exp2`` (which x86-64 lowers to a C library call).
    ``native_scale``: the target scales by a power of two in one instruction
    (``llvm.ldexp``: AVX-512's ``vscalef``, AMD GPUs' ``v_ldexp``), which the
    bodies then use (``Emitter.scale``; the same bits either way)."""

    def __init__(self, native_scale: bool = False):
        self.native_scale = native_scale

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
        e = Emitter(builder, fmt, lambda callee, *args: self._call(e, callee, *args), self.native_scale)
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
