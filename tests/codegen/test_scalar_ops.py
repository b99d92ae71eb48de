"""The per-element LLVM emitters against the interpreter, which defines every op.

Each case (op class x element types, from ``scalar_cases``) becomes a small
LLVM loop, JIT-compiled for this x86 host (the C math library: target-independent IR)
and run on the interpreter's memory form of special values (every pair, for
two operands) and on hypothesis-drawn arrays.  Integers, casts, comparisons
and exact float ops must match bit for bit; math functions are compared in
ulps (the host computes them with libm where the GPU uses approximate
instructions or libdevice: the GPU side is checked to compile below).

Every case is also compiled for sm_80 and sm_90 through ``link_libdevice``,
``emit_ptx`` and ptxas, in a subprocess (a backend failure aborts the process).
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llvmlite import ir as llir

from codegen import host_jit
from codegen.scalar_cases import (
    all_cases, arithmetic_cases, case_id, cast_cases, compare_cases, pointer_cases, ternary_cases,
)
from tilec.codegen_llvm.scalar_base import BFloatType
from tilec.codegen_llvm.scalar_ops import LOWER, ScalarContext, emit_scalar, llvm_type, memory_type
from tilec.errors import TilecError
from tilec.ir import ops as ir
from tilec.ir.core import Value
from tilec.ir.interp_dtypes import bf16_bits, cast, from_memory, round_bf16, to_memory
from tilec.ir.interp_ops import evaluate_pure
from tilec.ir.types import PointerType, ScalarType, elem_type, f32, f64, i1, i32

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# --------------------------------------------------------------------------- #
# Values
# --------------------------------------------------------------------------- #

_FLOAT_SPECIALS = [
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 1 / 3, -0.1, 7.0, 100.0, -100.0, 88.7, -104.0,
    1e-3, 65504.0, 65520.0, 7e4, 2.0**24 + 1, 2.0**31, -2.0**31, 2.0**63, 2.0**64, 1e10, -1e20,
    3.3895e38, 3.4e38, 1e300, 1e-300, 1e-40, 6e-8, 5e-324, math.nan, -math.nan, math.inf, -math.inf,
]
_INT_SPECIALS = [0, 1, -1, 2, 3, 7, -7, 8, 15, 16, 31, 32, 33, 63, 64, 100, -100, 255, 1 << 15,
                 (1 << 24) + 1, (1 << 31) - 1, 1 << 31, (1 << 53) + 1, (1 << 63) - 1, 1 << 63, -(1 << 63)]
_ADDRESSES = [0, 8, 4096, 1 << 40, (1 << 47) - 16]


def wrap_ints(values, t: ScalarType) -> np.ndarray:
    """Python ints wrapped to ``t`` (two's complement), in its compute form."""
    bits = np.array([v % (1 << t.bits) for v in values], np.dtype(f"u{max(t.bytes, 1)}"))
    return bits.view(np.dtype(("i" if t.kind == "int" else "u") + str(t.bytes)))


def specials(t) -> np.ndarray:
    """Interesting values of element type ``t`` (compute form), boundaries of its range included."""
    if isinstance(t, PointerType):
        return np.array(_ADDRESSES, np.int64)
    if t.is_bool:
        return np.array([False, True])
    if t.is_int:
        top = (1 << (t.bits - 1)) if t.kind == "int" else (1 << t.bits)
        return wrap_ints(_INT_SPECIALS + [top - 1, top - 2, -top], t)
    return cast(np.array(_FLOAT_SPECIALS, np.float64), f64, t)


def value_strategy(t):
    """Hypothesis values of ``t`` in compute form (bf16 as rounded float32)."""
    if isinstance(t, PointerType):
        return st.integers(0, 1 << 47)
    if t.is_bool:
        return st.booleans()
    if t.is_int:
        signed = t.kind == "int"
        return st.integers(-(1 << (t.bits - 1)) if signed else 0, (1 << (t.bits - 1 if signed else t.bits)) - 1)
    return st.floats(width=32 if t.name == "bf16" else t.bits)


def compute_array(values: list, t) -> np.ndarray:
    """Drawn Python values as ``t``'s compute form."""
    if isinstance(t, PointerType):
        return np.array(values, np.int64)
    if t.is_bool:
        return np.array(values, bool)
    if t.is_int:
        return wrap_ints(values, t)
    return cast(np.array(values, np.float64), f64, t)


# --------------------------------------------------------------------------- #
# Running and comparing
# --------------------------------------------------------------------------- #

def operand_types(op):
    return [elem_type(v.type) for v in op.operands]


def run_both(op, inputs: list[np.ndarray]):
    """(host result, interpreter result), both in compute form."""
    missing = host_jit.missing_libcalls(op)
    if missing:
        pytest.skip(f"this process lacks {missing} (libgcc_s 12+), needed for f16 on x86")
    out_t = elem_type(op.results[0].type)
    got = from_memory(host_jit.run(op, *[to_memory(x, t) for x, t in zip(inputs, operand_types(op))]), out_t)
    with np.errstate(all="ignore"):
        want = evaluate_pure(op, inputs)[0]
    return got, np.broadcast_to(want, got.shape)


def float_bits(x: np.ndarray, t: ScalarType) -> np.ndarray:
    """The bits of float ``t`` values (compute form), as signed ints of their width, in int64."""
    if t.name == "bf16":
        return bf16_bits(x).view(np.int16).astype(np.int64)
    return x.view(f"i{t.bytes}").astype(np.int64)


def ulp_distance(a: np.ndarray, b: np.ndarray, t: ScalarType) -> np.ndarray:
    """How many floats of ``t`` lie between ``a`` and ``b`` (-0.0 and +0.0 are 0 apart)."""
    def ordered(bits):
        magnitude = bits & ((1 << (t.bits - 1)) - 1)
        return np.where(bits < 0, -magnitude, magnitude)
    return np.abs(ordered(float_bits(a, t)) - ordered(float_bits(b, t)))


def ulps_allowed(op, t: ScalarType, inputs) -> np.ndarray | int:
    """How far the host may be from the interpreter, per element, in ulps of ``t``."""
    cls = type(op)
    if cls is ir.Exp and t == f32:
        return 2 + np.abs(inputs[0]).astype(np.float64).clip(0, 200)  # exp2(x * log2e): x*log2e is rounded
    if cls in (ir.Exp, ir.Exp2, ir.Log, ir.Log2, ir.Rsqrt, ir.Sin, ir.Cos, ir.Erf):
        return 3 if t == f32 else 1  # libm, and f32 results rounded to f16/bf16 once more
    if cls is ir.Fma and t.bits == 16:
        return 1  # x86 computes f16/bf16 fma in f32, then rounds again (NVPTX has fma.rn.f16/bf16)
    return 0


def exact_fma_f64(a, b, c) -> np.ndarray:
    """``a*b + c`` rounded once (the interpreter rounds f64 fma twice: no wider type)."""
    out = []
    for x, y, z in zip(a.tolist(), b.tolist(), c.tolist()):
        if not all(map(math.isfinite, (x, y, z))):  # a finite product is exact: only z counts
            out.append(z if math.isfinite(x * 0 + y * 0) else x * y + z)
            continue
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        try:
            out.append(float(exact) if exact != 0 else x * y + z)
        except OverflowError:
            out.append(math.inf if exact > 0 else -math.inf)
    return np.array(out, np.float64)


def int_to_float_toward_zero(values: np.ndarray, t: ScalarType) -> np.ndarray:
    """Ints rounded toward zero to f32/f64.  The interpreter rounds these to
    nearest (its ``_int_to_float`` rounds before ``round_float_rtz`` looks)."""
    def one(v: int):
        f = float(v)
        f = math.nextafter(f, 0.0) if abs(int(f)) > abs(v) else f
        g = np.float32(f) if t == f32 else np.float64(f)
        return np.nextafter(g, g.dtype.type(0)) if abs(float(g)) > abs(f) else g
    return np.array([one(v) for v in values.tolist()], f"f{t.bytes}")


def reference(op, inputs: list[np.ndarray]) -> np.ndarray | None:
    """Where the interpreter is not the reference: f64 fma and int -> f32/f64 ``rtz``."""
    t = elem_type(op.results[0].type)
    if type(op) is ir.Fma and t == f64:
        return exact_fma_f64(*inputs)
    src = operand_types(op)[0]
    if type(op) is ir.Cast and op.rounding == "rtz" and src.is_int and not src.is_bool and t in (f32, f64):
        return int_to_float_toward_zero(inputs[0], t)
    return None


def assert_matches(op, inputs):
    got, want = run_both(op, inputs)
    t = elem_type(op.results[0].type)
    corrected = reference(op, inputs)
    want = want if corrected is None else corrected
    if not (isinstance(t, ScalarType) and t.is_float):
        bad = got != want
    else:  # NaNs match any NaN; otherwise bits must match (the sign of zero too) or be within the ulps allowed
        nan_got, nan_want = np.isnan(got), np.isnan(want)
        allowed = ulps_allowed(op, t, inputs)
        close = (float_bits(got, t) == float_bits(want, t)) | (ulp_distance(got, want, t) <= allowed) & (allowed > 0)
        bad = (nan_got != nan_want) | (~nan_got & ~close)
    if bad.any():
        rows = [f"  {[x[k] for x in inputs]} -> got {got[k]!r}, want {want[k]!r}" for k in np.flatnonzero(bad)[:8]]
        pytest.fail(f"{case_id(op)}: {bad.sum()} of {bad.size} differ:\n" + "\n".join(rows))


def all_pairs(op) -> list[np.ndarray]:
    """Every combination of the operand types' special values (the first operand varies slowest)."""
    grids = np.meshgrid(*[np.arange(len(specials(t))) for t in operand_types(op)], indexing="ij")
    return [specials(t)[g.ravel()] for t, g in zip(operand_types(op), grids)]


# --------------------------------------------------------------------------- #
# Tests
# --------------------------------------------------------------------------- #

def _params(cases):
    cases = list(cases)
    return pytest.mark.parametrize("op", cases, ids=[case_id(op) for op in cases])


@_params(arithmetic_cases())
def test_arithmetic_special_values(op):
    assert_matches(op, all_pairs(op))


@_params(compare_cases())
def test_compare_special_values(op):
    assert_matches(op, all_pairs(op))


@_params(cast_cases())
def test_cast_special_values(op):
    assert_matches(op, all_pairs(op))


@_params(ternary_cases())
def test_fma_select_special_values(op):
    inputs = all_pairs(op) if isinstance(op, ir.Select) else _sampled_triples(op)
    assert_matches(op, inputs)


def _sampled_triples(op, n=4000):
    """fma on a seeded sample of special triples (all of them would be 60 000)."""
    pick = np.random.default_rng(0).integers
    return [specials(t)[pick(0, len(specials(t)), n)] for t in operand_types(op)]


@_params(pointer_cases())
def test_addptr_assume_special_values(op):
    assert_matches(op, all_pairs(op))


def _random_case(cases):
    cases = list(cases)

    @settings(max_examples=60)
    @given(st.data())
    def check(data):
        op = data.draw(st.sampled_from(cases), label="op")
        n = data.draw(st.integers(1, 40), label="n")
        inputs = [compute_array(data.draw(st.lists(value_strategy(t), min_size=n, max_size=n)), t)
                  for t in operand_types(op)]
        assert_matches(op, inputs)
    return check


test_arithmetic_random = _random_case(arithmetic_cases())
test_compare_and_ternary_random = _random_case([*compare_cases(), *ternary_cases()])
test_cast_random = _random_case(cast_cases())


def test_every_elementwise_op_has_a_lowering():
    elementwise = {c for c in ir.all_op_classes().values() if issubclass(c, (ir.UnaryOp, ir.BinaryOp))}
    others = {ir.Fma, ir.Select, ir.Cast, ir.Bitcast, ir.AddPtr, ir.Assume}
    assert elementwise | others <= set(LOWER)
    assert {type(op) for op in all_cases()} == elementwise | others


def test_an_op_without_lowering_is_a_clear_error():
    module = llir.Module()
    fn = llir.Function(module, llir.FunctionType(llir.VoidType(), []), "f")
    ctx = ScalarContext(llir.IRBuilder(fn.append_basic_block()), module)
    op = ir.ProgramId(axis=0).make_results()
    with pytest.raises(TilecError, match="program_id"):
        emit_scalar(ctx, op, [])


def test_llvm_and_memory_types():
    names = {t: str(llvm_type(ScalarType(t))) for t in ("i1", "u8", "i64", "f16", "bf16", "f32", "f64")}
    assert names == {"i1": "i1", "u8": "i8", "i64": "i64", "f16": "half", "bf16": "bfloat",
                     "f32": "float", "f64": "double"}
    assert str(memory_type(i1)) == "i8" and str(memory_type(i32)) == "i32"
    assert str(llvm_type(PointerType(f32, 3))) == "ptr addrspace(3)"


@pytest.mark.parametrize("value, text", [(1.0, "0xR3F80"), (-2.5, "0xRC020"), (1 / 3, "0xR3EAB"),
                                         (math.inf, "0xR7F80"), (math.nan, "0xR7FC0")])
def test_bfloat_constants_round_to_nearest_even(value, text):
    assert llir.Constant(BFloatType(), value).get_reference() == text


# --------------------------------------------------------------------------- #
# Every case compiles for the GPU
# --------------------------------------------------------------------------- #

@pytest.fixture(scope="module")
def ptx_by_arch():
    """(PTX, stderr, exit code) of every case for sm_80 and sm_90, compiled and
    assembled in two subprocesses at once."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = {arch: subprocess.Popen([sys.executable, str(HERE / "scalar_cases.py"), arch], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for arch in ("sm_80", "sm_90")}
    return {arch: (*p.communicate(), p.returncode) for arch, p in procs.items()}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_case_compiles_and_assembles_for_the_gpu(ptx_by_arch, arch):
    """No "Cannot select", no libdevice call left unlinked, ptxas accepts it (when present)."""
    ptx, err, code = ptx_by_arch[arch]
    assert code == 0, f"compiling for {arch} failed (exit {code}):\n{err[-3000:]}"
    assert ".entry k0(" in ptx
    assert "__nvvm_reflect" not in ptx and ".extern" not in ptx
