"""Run ``scalar_cases.build_host_loop`` functions on this x86 host with MCJIT, so the
emitters' target-independent IR is checked against the interpreter on values.

The code is compiled for the baseline x86-64 CPU (``BASELINE_CPU``, SSE2 and
nothing more), never for the CPU running the tests, so a result cannot depend
on the machine: for the host's own CPU, one with AVX512-BF16 gets
``vcvtneps2bf16`` for f32 -> bf16, which flushes subnormals (1e-40 -> 0).

The baseline has no bf16 or f16 instructions: LLVM calls ``__truncsfbf2``/
``__truncdfbf2`` to round to bf16, which this process lacks (libgcc 12 has only
the f16 ones), so ``LIBCALLS`` defines them here in LLVM IR (round to nearest
even; f64 goes through f32 rounded to odd).  f16 conversions call libgcc_s's
``F16_LIBCALLS``; where libgcc_s lacks them, f16 cases skip (``missing_libcalls``).
"""
from __future__ import annotations

import ctypes
import functools

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir as llir

from tilec.ir.interp_dtypes import memory_dtype
from tilec.ir.types import elem_type

from codegen.scalar_cases import build_host_loop, case_id

LIBCALLS = """
define bfloat @__truncsfbf2(float %x) {
  %bits = bitcast float %x to i32
  %nan = fcmp uno float %x, %x
  %quiet = or i32 %bits, 4194304
  %lsb = lshr i32 %bits, 16
  %odd = and i32 %lsb, 1
  %bias = add i32 %odd, 32767
  %rounded = add i32 %bits, %bias
  %pick = select i1 %nan, i32 %quiet, i32 %rounded
  %high = lshr i32 %pick, 16
  %half = trunc i32 %high to i16
  %r = bitcast i16 %half to bfloat
  ret bfloat %r
}

define bfloat @__truncdfbf2(double %x) {
  %f = fptrunc double %x to float
  %back = fpext float %f to double
  %ax = call double @llvm.fabs.f64(double %x)
  %ab = call double @llvm.fabs.f64(double %back)
  %away = fcmp ogt double %ab, %ax
  %inexact = fcmp one double %back, %x
  %bits = bitcast float %f to i32
  %less = sub i32 %bits, 1
  %toward_zero = select i1 %away, i32 %less, i32 %bits
  %sticky = zext i1 %inexact to i32
  %odd = or i32 %toward_zero, %sticky
  %g = bitcast i32 %odd to float
  %r = call bfloat @__truncsfbf2(float %g)
  ret bfloat %r
}

declare double @llvm.fabs.f64(double)
"""

F16_LIBCALLS = ("__truncdfhf2", "__truncsfhf2", "__extendhfsf2")

# Every x86-64 CPU runs this code and computes the same results with it.
BASELINE_CPU = "x86-64"
BASELINE_FEATURES = ""


def target_machine():
    """A machine for this process's triple and the baseline x86-64 CPU: the
    host's CPU name and features are never asked (see the module docstring)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        cpu=BASELINE_CPU, features=BASELINE_FEATURES)


@functools.cache
def _engine():
    try:
        llvm.load_library_permanently("libgcc_s.so.1")
    except RuntimeError:
        pass  # missing_libcalls() reports what that costs
    helpers = llvm.parse_assembly(LIBCALLS)
    helpers.verify()
    return llvm.create_mcjit_compiler(helpers, target_machine())


def missing_libcalls(op) -> list[str]:
    """The libgcc functions an f16 case needs that this process lacks (an unresolved
    call would crash, not fail)."""
    _engine()
    uses_f16 = any(str(elem_type(v.type)) == "f16" for v in op.operands + op.results)
    return [n for n in F16_LIBCALLS if uses_f16 and llvm.address_of_symbol(n) is None]


def native_function(module: llir.Module, name: str, fnty):
    """Function ``name`` of ``module``, compiled for the baseline x86-64 CPU, as a ctypes ``fnty``."""
    parsed = llvm.parse_assembly(str(module))
    parsed.verify()
    engine = _engine()
    engine.add_module(parsed)
    engine.finalize_object()
    return fnty(engine.get_function_address(name))


_COMPILED: dict[str, object] = {}


def _compile(op):
    """The host function for ``op``'s signature (compiled once per ``case_id``;
    each gets its own symbol, as every module lives in one engine)."""
    key = case_id(op)
    if key not in _COMPILED:
        name = f"k{len(_COMPILED)}"
        module = llir.Module()
        build_host_loop(module, name, op)
        arity = len(op.operands) + 1
        _COMPILED[key] = native_function(module, name, ctypes.CFUNCTYPE(None, ctypes.c_int64,
                                                                          *[ctypes.c_void_p] * arity))
    return _COMPILED[key]


def run(op, *memory_arrays: np.ndarray) -> np.ndarray:
    """``op`` applied elementwise on the host to arrays in the interpreter's memory
    form (all of one length); the result in memory form."""
    fn = _compile(op)
    arrays = [np.ascontiguousarray(a) for a in memory_arrays]
    n = len(arrays[0])
    out = np.zeros(n, memory_dtype(elem_type(op.results[0].type)))
    fn(n, *[a.ctypes.data for a in arrays], out.ctypes.data)
    return out
