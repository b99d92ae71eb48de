"""Shared by the codegen tests: one tile-IR op per (op class, element types),
and an LLVM function that applies ``emit_scalar`` to every element of arrays.

``build_host_loop`` makes ``void name(i64 n, ptr in0, ..., ptr out)`` computing
``out[i] = op(in0[i], ...)`` for the host JIT (the C math library);
``build_gpu_kernel`` the same element code as a ``ptx_kernel`` for one element
per thread, with the NVIDIA backend's math library.  Arrays hold the interpreter's memory
form (``i1`` as bytes, bf16 as bits), so results compare with it directly.

Run as ``python scalar_cases.py ARCH`` it compiles every case for ARCH
(``link_libdevice``, ``emit_ptx``, ptxas when there is one) and prints the
PTX: the NVPTX tests run it in a subprocess, because a backend failure
aborts the process, and one per arch at once.
"""
from __future__ import annotations

import itertools
import sys

from llvmlite import ir as llir

from tilec.codegen_llvm.scalar_base import C_MATH, MathLibrary, counted_loop
from tilec.codegen_llvm.scalar_ops import ScalarContext, emit_scalar, memory_type
from tilec.ir import ops as ir
from tilec.ir.core import Value
from tilec.ir.types import SCALAR_TYPES, PointerType, elem_type, f32, i1, i8

SCALARS = [t for t in SCALAR_TYPES.values() if not t.is_fp8]  # fp8 has no IR arithmetic: tests/test_fp8.py
FLOATS = [t for t in SCALARS if t.is_float]
POINTERS = [PointerType(f32, space) for space in (0, 1, 3, 4)]
ROUNDINGS = ("rtne", "rtz")


def unary(cls, t):
    return cls(src=Value(t)).make_results()


def binary(cls, t, **attrs):
    return cls(lhs=Value(t), rhs=Value(t), **attrs).make_results()


def accepts(cls, t) -> bool:
    return {"number": True, "int": t.is_int, "float": t.is_float}[cls.ACCEPTS]


def elementwise_classes(base: type) -> list[type]:
    """Every concrete op class derived from ``base`` (``UnaryOp``/``BinaryOp``), Compare excepted."""
    found = [c for c in ir.all_op_classes().values() if issubclass(c, base) and c is not ir.Compare]
    return sorted(found, key=lambda c: c.NAME)


def arithmetic_cases():
    """Every unary/binary op (both NaN rules of max/min) on every type it accepts."""
    for cls in elementwise_classes(ir.UnaryOp):
        yield from (unary(cls, t) for t in SCALARS if accepts(cls, t))
    for cls in elementwise_classes(ir.BinaryOp):
        attrs = [{"propagate_nan": p} for p in (False, True)] if cls in (ir.Maximum, ir.Minimum) else [{}]
        yield from (binary(cls, t, **a) for t in SCALARS if accepts(cls, t) for a in attrs)


def compare_cases():
    for t, pred in itertools.product(SCALARS + POINTERS[:2], ir.Compare.PREDICATES):
        yield binary(ir.Compare, t, pred=pred)


def ternary_cases():
    yield from (ir.Fma(a=Value(t), b=Value(t), c=Value(t)).make_results() for t in FLOATS)
    yield from (ir.Select(cond=Value(i1), a=Value(t), b=Value(t)).make_results() for t in SCALARS + POINTERS[:1])


def cast_cases():
    """Every scalar pair (both roundings), ints <-> pointers, pointers across spaces."""
    for src, dst in itertools.product(SCALARS, SCALARS):
        yield from (ir.Cast(src=Value(src), to=dst, rounding=r).make_results() for r in ROUNDINGS)
        if src.bits == dst.bits:
            yield ir.Bitcast(src=Value(src), to=dst).make_results()
    ints = [t for t in SCALARS if t.is_int]
    for t, p in itertools.product(ints, POINTERS[:2]):
        yield ir.Cast(src=Value(t), to=p).make_results()
        yield ir.Cast(src=Value(p), to=t).make_results()
    for src, dst in itertools.product(POINTERS, POINTERS):
        yield ir.Cast(src=Value(src), to=PointerType(i8, dst.space)).make_results()
        yield ir.Bitcast(src=Value(src), to=PointerType(i8, dst.space)).make_results()
    for t in (SCALAR_TYPES["i64"], SCALAR_TYPES["f64"]):
        yield ir.Bitcast(src=Value(t), to=POINTERS[1]).make_results()
        yield ir.Bitcast(src=Value(POINTERS[1]), to=t).make_results()


def pointer_cases():
    ints = [t for t in SCALARS if t.is_int]
    yield from (ir.AddPtr(ptr=Value(PointerType(e)), offset=Value(t)).make_results()
                for e in SCALARS for t in (ints if e == f32 else ints[:1]))
    yield from (ir.Assume(src=Value(t), kind="multiple_of", values=(16,)).make_results() for t in SCALARS)


def all_cases():
    return [*arithmetic_cases(), *compare_cases(), *ternary_cases(), *cast_cases(), *pointer_cases()]


def case_id(op) -> str:
    """A readable test id: ``add.f32``, ``cast.i32.f16.rtz``, ``cmp.lt.u8``."""
    types = ".".join(str(elem_type(v.type)) for v in op.operands)
    attrs = [str(v) for k, v in op.attributes.items() if k in ("pred", "to", "rounding")]
    attrs += ["nan"] if op.attributes.get("propagate_nan") else []
    return ".".join([op.NAME, types, *attrs]).replace(" ", "").replace("<", "(").replace(">", ")")


# --------------------------------------------------------------------------- #
# The element loop
# --------------------------------------------------------------------------- #

I64 = llir.IntType(64)
GENERIC = llir.PointerType()


def _load(bld, ptr, t):
    x = bld.load(ptr, typ=memory_type(t))
    return bld.icmp_unsigned("!=", x, llir.Constant(x.type, 0)) if getattr(t, "is_bool", False) else x


def _store(bld, value, ptr, t):
    bld.store(bld.zext(value, memory_type(t)) if getattr(t, "is_bool", False) else value, ptr)


def _apply(bld, module, fn, op, math: MathLibrary, i) -> None:
    """``out[i] = op(in0[i], ...)`` through ``fn``'s pointer arguments, with the math library ``math``."""
    ins, out = [elem_type(v.type) for v in op.operands], elem_type(op.results[0].type)
    args = [_load(bld, bld.gep(p, [i], source_etype=memory_type(t)), t) for p, t in zip(fn.args[1:], ins)]
    result = emit_scalar(ScalarContext(bld, module, math), op, args)
    _store(bld, result, bld.gep(fn.args[-1], [i], source_etype=memory_type(out)), out)


def _declare(module, name, op):
    """``void name(i64 n, ptr in0, ..., ptr out)``."""
    fnty = llir.FunctionType(llir.VoidType(), [I64] + [GENERIC] * (len(op.operands) + 1))
    return llir.Function(module, fnty, name)


def build_host_loop(module: llir.Module, name: str, op, math: MathLibrary = C_MATH) -> None:
    """``name`` applying ``op`` to elements ``0 .. n-1``, for the host JIT (the C math library
    unless ``math`` says otherwise)."""
    fn = _declare(module, name, op)
    bld = llir.IRBuilder(fn.append_basic_block("entry"))
    counted_loop(bld, fn.args[0], lambda i: _apply(bld, module, fn, op, math, i))
    bld.ret_void()


def build_gpu_kernel(module: llir.Module, name: str, op) -> None:
    """A ``ptx_kernel`` applying ``op`` to element ``threadIdx.x`` (straight-line,
    as the tile codegen's per-register code is; ``n`` is unused)."""
    from tilec.backends.nvidia.lowering import NvidiaMath

    fn = _declare(module, name, op)
    fn.calling_convention = "ptx_kernel"
    bld = llir.IRBuilder(fn.append_basic_block("entry"))
    tid = bld.call(declare_tid(module), [])
    _apply(bld, module, fn, op, NvidiaMath(), bld.zext(tid, I64))
    bld.ret_void()


def declare_tid(module):
    name = "llvm.nvvm.read.ptx.sreg.tid.x"
    return module.globals.get(name) or llir.Function(module, llir.FunctionType(llir.IntType(32), []), name)


def nvptx_module() -> str:
    """One kernel per case, as LLVM IR text for any NVIDIA arch."""
    module = llir.Module()
    for k, op in enumerate(all_cases()):
        build_gpu_kernel(module, f"k{k}", op)
    return str(module)


def compile_for(arch: str) -> str:
    """The PTX of every case for ``arch``, assembled by ptxas when one is found."""
    from tilec.backends.nvidia.libdevice import link_libdevice
    from tilec.backends.nvidia.target import emit_ptx, nvptx_target
    from tilec.backends.nvidia.ptxas import assemble, find_ptxas

    ptx = emit_ptx(link_libdevice(nvptx_module(), nvptx_target(arch)), arch)
    if find_ptxas() is not None:
        assemble(ptx, arch)
    return ptx


if __name__ == "__main__":
    sys.stdout.write(compile_for(sys.argv[1]))
