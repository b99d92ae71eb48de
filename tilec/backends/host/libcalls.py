"""Functions LLVM's x86-64 code calls that no library of this process has.

Without AVX512-BF16 (never chosen: ``target.py``), LLVM rounds f32 and f64
to bf16 by calling ``__truncsfbf2`` and ``__truncdfbf2``, which GCC's
runtime library has only in recent versions and Python loads nowhere.
``module()`` defines both, in LLVM IR, in a module the stage links into
every kernel that holds a bf16 value (``needed``, ``stages.lower_to_llvm``;
parsed, optimized and compiled in the others, they took 5 ms a kernel):
to nearest even, NaN kept quiet
with its sign, as the interpreter rounds.  f64 goes to f32 rounding to odd
first, which then rounds to bf16 as f64 would directly (f32 has more than
twice bf16's precision plus two bits).
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec.codegen_llvm.scalar_base import BFloatType, ScalarContext, call, overloaded
from tilec.codegen_llvm.scalar_casts import _toward_zero_or_odd
from tilec.targets.base import Target

F32, F64, I32, I16 = llir.FloatType(), llir.DoubleType(), llir.IntType(32), llir.IntType(16)
BF16 = BFloatType()
#: bf16's quiet bit, in the upper half of an f32's bits.
QUIET = 0x40


def module(target: Target) -> str:
    """LLVM IR text of a module defining ``__truncsfbf2`` and ``__truncdfbf2``."""
    m = llir.Module("tilec_libcalls")
    m.triple, m.data_layout = target.triple, target.data_layout
    from_f32 = llir.Function(m, llir.FunctionType(BF16, [F32]), "__truncsfbf2")
    b = llir.IRBuilder(from_f32.append_basic_block())
    b.ret(_f32_to_bf16(b, from_f32.args[0]))
    from_f64 = llir.Function(m, llir.FunctionType(BF16, [F64]), "__truncdfbf2")
    b = llir.IRBuilder(from_f64.append_basic_block())
    b.ret(_f32_to_bf16(b, _f64_to_f32_odd(ScalarContext(b, m), from_f64.args[0])))
    return str(m)


def needed(kernel_llir: str) -> bool:
    """Whether the kernel of LLVM IR text ``kernel_llir`` may call the
    routines: where it holds a bf16 value (LLVM's ``bfloat``)."""
    return "bfloat" in kernel_llir


def _f32_to_bf16(b: llir.IRBuilder, x: llir.Value) -> llir.Value:
    bits = b.bitcast(x, I32)
    odd = b.and_(b.lshr(bits, I32(16)), I32(1))
    rounded = b.lshr(b.add(bits, b.add(I32(0x7FFF), odd)), I32(16))
    quiet = b.or_(b.lshr(bits, I32(16)), I32(QUIET))
    upper = b.select(b.fcmp_unordered("uno", x, x), quiet, rounded)
    return b.bitcast(b.trunc(upper, I16), BF16)


def _f64_to_f32_odd(ctx: ScalarContext, x: llir.Value) -> llir.Value:
    """``x`` as f32, rounded to odd (where inexact, the result's lowest bit set)."""
    b = ctx.builder
    y = b.fptrunc(x, F32)
    back = b.fpext(y, F64)
    fabs = overloaded("llvm.fabs", F64)
    away = b.fcmp_ordered(">", call(ctx, fabs, [back]), call(ctx, fabs, [x]))
    inexact = b.fcmp_ordered("!=", back, x)
    return _toward_zero_or_odd(ctx, y, away, inexact, "rtne")
